"""Generated contexts, kept so nothing paid for is ever asked for twice.

One small JSON file per (model, prompt version, file content): {"start-end": context}. The key holds
everything the answer depends on, so an edited file misses (its new content hashes elsewhere) while
every other file still hits, and a changed prompt or model starts afresh. Each answer is written as
it arrives (atomically, through store/atomic.py): an interrupted run loses at most the requests in
flight.

Every answer is written twice: in the index's store, and in a cache shared by every index on this
machine, which `clean` (removing the store) leaves alone, so paid contexts outlive the index and
serve a clone or another checkout of the same files. The key needs nothing of the repository.

    RETRIEVAL_CONTEXT_CACHE   the shared directory (default $XDG_CACHE_HOME/retrieval/contexts);
                              "off" keeps contexts in the store only
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import threading

from ..store.atomic import write_json
from ..store.layout import machine_cache

DIRNAME = "contexts"
ENV_SHARED = "RETRIEVAL_CONTEXT_CACHE"


def shared_dir() -> str | None:
    """The machine-wide context cache, or None when it is off."""
    return machine_cache("contexts", ENV_SHARED)


def span_key(start_line: int, end_line: int) -> str:
    return f"{start_line}-{end_line}"


class ContextCache:
    def __init__(self, directory: str, shared: str | None = ""):
        """`directory`: the retriever's store directory. `shared`: the machine-wide cache ("": the
        configured one, None: none)."""
        self.directory = os.path.join(directory, DIRNAME)
        self.shared = shared_dir() if shared == "" else shared
        self._lock = threading.Lock()

    @staticmethod
    def _path(base: str, model: str, prompt_version: int, digest: str) -> str:
        safe_model = re.sub(r"[^\w.-]", "_", model)
        return os.path.join(base, safe_model, f"p{prompt_version}", digest[:2], f"{digest}.json")

    def _bases(self) -> list[str]:
        return [self.directory] + ([self.shared] if self.shared else [])

    def get(self, model: str, prompt_version: int, digest: str, *, keep: bool = False) -> dict[str, str]:
        """{span key: context} cached for this file content, in the store or the shared cache ({}
        when none, or unreadable). With `keep` (the caller holds the writer lock), contexts found in
        the shared cache only are copied into the store: an index built from the shared cache alone
        otherwise lost every paid context at its next rebuild once that cache was emptied or off."""
        own_path = self._path(self.directory, model, prompt_version, digest)
        own = _read(own_path)
        if not self.shared:
            return own
        found = {**_read(self._path(self.shared, model, prompt_version, digest)), **own}  # the store's win
        if keep and len(found) > len(own):
            with self._lock:
                try:
                    os.makedirs(os.path.dirname(own_path), exist_ok=True)
                    # Not durable: until it reaches the disk the shared copy still holds them.
                    write_json(own_path, found)
                except OSError:
                    pass  # the index still takes them from the shared cache
        return found

    def put(self, model: str, prompt_version: int, digest: str, span: str, context: str) -> None:
        """Add one context, durably, before returning (threads may call this concurrently). The
        store's copy must be written; the shared one is a convenience (a read-only or full cache
        directory costs only the reuse)."""
        with self._lock:
            for base in self._bases():
                path = self._path(base, model, prompt_version, digest)
                try:
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    # The shared cache has other writers (other indexes' runs): read, add and write
                    # under a lock of the file, or two runs adding to one file keep one's additions.
                    with _file_lock(path + ".lock") if base != self.directory else _NO_LOCK:
                        entries = _read(path)
                        entries[span] = context
                        write_json(path, entries, durable=True)
                except OSError:
                    if base == self.directory:
                        raise


_NO_LOCK = contextlib.nullcontext()


@contextlib.contextmanager
def _file_lock(path: str):
    """An exclusive flock on `path` (created), for as long as the block runs; none where there is
    no flock (Windows): the shared cache is a convenience, and each write of it is atomic."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _read(path: str) -> dict[str, str]:
    try:
        with open(path, "rb") as fh:
            data = json.loads(fh.read())
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}
