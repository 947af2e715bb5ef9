"""The writer lock: one `index` (or refreshing `query`) writes a store at a time.

An advisory lock on a file in the store, held by an open descriptor: the kernel drops it when the
process dies, so a killed writer never leaves the store locked.
"""
from __future__ import annotations

import os
import time

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None


class LockBusy(RuntimeError):
    pass


class WriterLock:
    def __init__(self, path: str):
        self.path = path
        self._fd: int | None = None

    def acquire(self, timeout: float | None = None) -> None:
        """Block until the lock is ours; timeout=0 tries once; raises LockBusy on timeout."""
        # O_NOFOLLOW: a planted symbolic link must not make us create a file outside the store.
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        if fcntl is None:  # pragma: no cover
            self._fd = fd
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._fd = fd
                return
            except BlockingIOError:
                if deadline is not None and time.monotonic() >= deadline:
                    os.close(fd)
                    raise LockBusy(f"another process is writing the index ({self.path})")
                time.sleep(0.05)

    def release(self) -> None:
        if self._fd is not None:
            if fcntl is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()
