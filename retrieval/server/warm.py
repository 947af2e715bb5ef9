"""Keep a root's indexes open and vouch for their freshness between queries.

The indexes stay open in service's cache (whatever service.open_index returns: segments now, models
later). Before each command, `freshen()` drains the watcher: when nothing under the root changed,
every open index is vouched for (service.VOUCHED) and open_index skips its stat of every file;
otherwise each is checked and refreshed as a cold query would, then vouched for again.
"""
from __future__ import annotations

import os
import sys
import time

from .client import store_dir
from .watch import directories, make_watcher


class Warm:
    def __init__(self, root: str):
        self.root = os.path.abspath(root)
        self.store = os.path.abspath(store_dir(self.root))
        inside = os.path.dirname(self.store) == self.root
        self.watcher = make_watcher(self.root, (os.path.basename(self.store),) if inside else ())
        self.dirty = False  # the watcher saw something since the last freshen
        self.behind = False  # an open index a change left unvouched (a command's freshen skipped it)
        self.trimmed = -TRIM_INTERVAL  # when freed memory was last handed back

    def open(self, names=None) -> None:
        """Open (building or refreshing as needed) lexical and every index the root already has."""
        from .. import service
        from ..store import layout

        if names is None:
            names = [n for n, reason in service.available_retrievers()
                     if not reason and (n == "lexical" or os.path.exists(layout.manifest_path(self.store, n)))]
        for name in names:
            try:
                # What it finds and repairs (a damaged index rebuilt) goes to the log, as a cold
                # query says it on stderr.
                service.open_index(self.root, name, progress=lambda message: print(
                    f"serve: {message}", file=sys.stderr, flush=True))
            except Exception as exc:  # noqa: BLE001 - one broken retriever must not stop the others
                if name == "lexical":
                    raise
                print(f"serve: {name}: {exc}", file=sys.stderr, flush=True)  # the log, never a reply
        self.freshen()

    def note_events(self) -> None:
        """The watcher's descriptor is readable: drain it (it would stay readable otherwise)."""
        self.dirty = self.watcher.changed() or self.dirty

    def open_names(self) -> list[str]:
        from .. import service

        return [name for store, name in list(service._OPEN) if store == self.store]

    def freshen(self, names=None, embedding: bool = True) -> None:
        """Make the open indexes of the root current and vouched for, as of now: those named (a
        command's, before it runs), or every one, those that embed text last (with `embedding`
        False, none of those: the server's own freshen between requests). Any other one a change
        left unvouched is checked by the command that opens it, as a cold one would check it, or
        by the next freshen of all (`behind`): after a branch switch a lexical query waited for
        hybrid to embed hundreds of chunks again, and a client that gave up on it found the store
        locked and answered from the old branch for minutes. Between requests, an embedding index
        is left to the command asking for it: re-embedding a batch of edits held the one request
        loop for minutes, and every lexical query in them waited 10 s and answered stale."""
        from .. import service

        changed = self.watcher.changed() or self.dirty
        self.dirty = False
        open_names = self.open_names()
        if changed:
            for name in open_names:
                service.VOUCHED.pop((self.store, name), None)
        wanted = [n for n in open_names if (names is None or n in names) and (embedding or not _embeds(n))]
        for name in sorted(wanted, key=_embeds):  # (stable: lexical first, as opened)
            if (self.store, name) not in service.VOUCHED:
                self._validate(name)
        # Only those this freshen passed over: one it tried and could not vouch for (a poll watcher
        # never does, another writer holds the store) waits for the next change, or the server's
        # loop would run without pause (15,000 freshens in 8 s).
        self.behind = names is not None and any((self.store, n) not in service.VOUCHED
                                                for n in open_names if n not in wanted and not _embeds(n))
        if changed and time.monotonic() - self.trimmed >= TRIM_INTERVAL:  # (a poll watcher's "changed" is every time)
            self.trimmed = time.monotonic()
            return_freed_memory()

    def _validate(self, name: str) -> None:
        from .. import service

        for _attempt in range(3):
            notes: list[str] = []
            try:
                # Not vouched for: stats every file, refreshes. Without waiting for another writer:
                # the command itself waits (once) and says so.
                # Thorough: a file edited in place into a script changes no directory, and the
                # watcher said something changed (a cold query's stat of them all is left out).
                service.open_index(self.root, name, notes=notes, wait_until=time.monotonic(), thorough=True)
            except Exception:  # noqa: BLE001 - the command itself meets and reports the same error
                return
            if notes:
                # It answered from the previous snapshot (another writer holds the store, the disk is
                # full): no voucher for that, or the command would answer stale without a note, and
                # go on doing so after the writer is done.
                return
            cached = service._OPEN.get((self.store, name))
            if cached is None:
                return
            if not self.watcher.watch_dirs(directories(self.root, cached[1].get("watch") or {})):
                if self.watcher.exact:
                    service.VOUCHED[(self.store, name)] = cached[0]
                return
            # Directories were not watched during that check: check again now that they are.

    def close(self) -> None:
        from .. import service

        for name in self.open_names():
            service.VOUCHED.pop((self.store, name), None)
        self.watcher.close()


TRIM_INTERVAL = 10.0  # seconds between two hand-backs of freed memory


def return_freed_memory() -> None:
    """Hand the heap a refresh freed back to the system (glibc's malloc_trim). glibc keeps it for
    later, per thread arena: a server's resident memory grew from 300 MB to 1.8 GB over a soak of
    edits with hybrid open, 1.3 GB of it freed memory (trimmed by hand, 650 MB)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        trim = getattr(ctypes.CDLL(None), "malloc_trim", None)  # (glibc's; musl has none)
        if trim is not None:
            trim(0)
    except (OSError, AttributeError):
        pass


def _embeds(name: str) -> bool:
    """Whether the retriever embeds text (its refresh after a large change takes minutes)."""
    from ..retrievers.base import REGISTRY

    spec = REGISTRY.get(name)
    return spec is not None and "turbovec" in spec.extras


def command_retrievers(words: list[str], env: dict) -> list[str] | None:
    """The retrievers whose indexes a command line opens: its `--retriever`, else the caller's
    RETRIEVAL_RETRIEVER, else lexical; None (all) for `all`; none for `status`, which only reads."""
    from .client import option_argument

    if not words or words[0] != "query":
        return []
    name = option_argument(words, "--retriever") or env.get("RETRIEVAL_RETRIEVER") or "lexical"
    if name == "all":
        return None
    return [name]
