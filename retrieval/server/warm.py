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

    def freshen(self) -> None:
        """Make every open index of the root current and vouched for, as of now."""
        from .. import service

        changed = self.watcher.changed() or self.dirty
        self.dirty = False
        for name in self.open_names():
            if changed:
                service.VOUCHED.pop((self.store, name), None)
            if (self.store, name) not in service.VOUCHED:
                self._validate(name)

    def _validate(self, name: str) -> None:
        from .. import service

        for _attempt in range(3):
            notes: list[str] = []
            try:
                # Not vouched for: stats every file, refreshes. Without waiting for another writer:
                # the command itself waits (once) and says so.
                service.open_index(self.root, name, notes=notes, wait_until=time.monotonic())
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
