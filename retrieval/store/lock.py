"""The writer lock: one `index` (or refreshing `query`) writes a store at a time.

An advisory lock on a file in the store, held by an open descriptor: the kernel drops it when the
process dies, so a killed writer never leaves the store locked.
"""
from __future__ import annotations

import errno
import os
import time
from typing import Callable

try:
    import fcntl
except ImportError:  # Windows: a lock of the file's first byte instead (msvcrt.locking)
    fcntl = None
try:
    import msvcrt
except ImportError:
    msvcrt = None


WAIT_NOTE_AFTER = 0.5  # seconds of waiting before saying so


class LockBusy(RuntimeError):
    pass


class LockDamaged(OSError):
    """The lock's path holds something else (a directory, a symbolic link): no writer can take it."""


def lock_holder(fd: int) -> int | None:
    """The pid holding a flock on fd's file, from /proc/locks (Linux); None when unknown."""
    try:
        st = os.fstat(fd)
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    for line in lines:
        # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" (waiters are marked "->")
        parts = line.split()
        if len(parts) < 6 or parts[1] != "FLOCK" or "->" in parts:
            continue
        try:
            if int(parts[5].rsplit(":", 1)[1]) == st.st_ino:
                return int(parts[4])
        except (ValueError, IndexError):
            continue
    return None


def _same_file(fd: int, path: str) -> bool:
    """Whether `path` still names the file open at fd (not removed, nor replaced by a new store's)."""
    try:
        st, held = os.stat(path), os.fstat(fd)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino)


def _stamp(fd: int, path: str) -> None:
    """Say when the lock was taken: in its file's modification time (by name where a descriptor's
    time cannot be set: Windows; the caller has just checked that the name is still this file)."""
    try:
        os.utime(fd if os.utime in os.supports_fd else path)
    except OSError:  # a file system that refuses: waiters wait their whole timeout, as before
        pass


def _taken_at(fd: int) -> float:
    """When the holder took the lock (wall clock); now when that cannot be read."""
    try:
        return os.fstat(fd).st_mtime
    except OSError:
        return time.time()


def writer(path: str) -> tuple[int | None, float] | None:
    """(pid or None when unknown, when the lock was taken) of the process writing through the lock
    at `path`, or None when none is: for `status`, which must not create the file nor take the
    lock a writer may be about to ask for (it only tries for a moment where /proc/locks is not)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        holder = lock_holder(fd)
        if holder is None:  # /proc names none: a shared lock tried once says whether one is held
            if fcntl is None:  # pragma: no cover
                return None
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return None  # free (closing the descriptor lets our shared lock go)
            except BlockingIOError:
                pass  # held, by a process /proc does not name
            except OSError:
                return None
        return holder, _taken_at(fd)
    finally:
        os.close(fd)


def _lock_now(fd: int) -> None:
    """Take the exclusive lock without waiting; BlockingIOError when another holds it."""
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    # Windows has no flock: its lock of a byte range (the first byte; a range past the end of a
    # file may be locked), also dropped by the system when the holder dies.
    os.lseek(fd, 0, os.SEEK_SET)
    try:
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    except PermissionError:  # EACCES: locked by another
        raise BlockingIOError(errno.EAGAIN, "locked") from None


def _try_lock(fd: int) -> bool:
    try:
        _lock_now(fd)
    except BlockingIOError:
        return False
    return True


def wait_note(holder: int | None, path: str) -> str:
    """What a writer (or a served query's client) says while another holds the lock at `path`."""
    # flock is per open file: another thread of this process can hold it too.
    who = ("another thread of this process" if holder == os.getpid()
           else f"process {holder}" if holder else "another process")
    return f"waiting for {who}, which is writing the index ({path})"


class StoreRemoved(OSError):
    """The store was removed (`clean`) while a writer waited for its lock: an explicit build
    says so; a query, which needs an index to answer, builds a new store."""


class WriterLock:
    def __init__(self, path: str):
        self.path = path
        self._fd: int | None = None

    def acquire(self, timeout: float | None = None, on_wait: Callable[[str], None] | None = None, *,
                since_taken: bool = False) -> None:
        """Block until the lock is ours; timeout=0 tries once; raises LockBusy on timeout.

        `on_wait` is told once, after a short while, that we are waiting and for which process: a
        writer blocked behind another must not look like a hang. With `since_taken` the timeout
        counts from when the holder took the lock (its holder stamps the file's time): a query
        waits for a quick refresh to end, but a writer already busy that long is a long build, and
        each query during it waited the whole timeout again."""
        # O_NOFOLLOW: a planted symbolic link must not make us create a file outside the store.
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EISDIR) or os.path.islink(self.path):
                what = "a symbolic link" if os.path.islink(self.path) else "a directory"
                raise LockDamaged(exc.errno, f"its lock file {self.path} is {what}, not a lock: remove it "
                                             "(`retrieval clean` removes the whole index)") from None
            raise
        if fcntl is None and msvcrt is None:  # pragma: no cover - neither flock nor Windows' locks
            self._fd = fd
            return
        started = time.monotonic()
        deadline = None if timeout is None else started + timeout
        held_checked = False
        while not _try_lock(fd):
            if since_taken and deadline is not None and not held_checked:
                held_checked = True
                deadline -= max(0.0, min(timeout, time.time() - _taken_at(fd)))
            now = time.monotonic()
            # Before the deadline's check: a wait past the note's delay is said even when one pause
            # of a loaded machine overshot both at once.
            if on_wait is not None and now - started >= WAIT_NOTE_AFTER:
                # Who holds it, then whether it still does: a holder that let go as it was looked
                # up is read as no one, and "another process" was said of nobody.
                holder = lock_holder(fd)
                if _try_lock(fd):
                    break
                on_wait(wait_note(holder, self.path))
                on_wait = None
            if deadline is not None and now >= deadline:
                os.close(fd)
                raise LockBusy(f"another process is writing the index ({self.path})")
            time.sleep(0.05)
        if _same_file(fd, self.path):
            self._fd = fd
            _stamp(fd, self.path)
            return
        # `clean` removed the store while we waited: writing on would recreate pieces of it.
        os.close(fd)
        raise StoreRemoved(errno.ENOENT, "the index was removed while this process waited to write it")

    def release(self) -> None:
        if self._fd is not None:
            if fcntl is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            elif msvcrt is not None:
                os.lseek(self._fd, 0, os.SEEK_SET)
                msvcrt.locking(self._fd, msvcrt.LK_UNLCK, 1)
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()
