"""One bounded-cache policy for the whole package.

A `Memo` is a dict with a size limit: storing into a full one first drops its oldest quarter
(insertion order), so a long-lived process (a server, an evaluation over many repositories) holds
at most `limit` entries per cache and keeps its newest ones (threads filling one at once may
overfill it by one entry each, for a moment: the next `put` makes room again). Lookups are plain
dict lookups (hot loops read memos from C); `recall` also marks an entry as recently used, for
small caches where least-recently-used order matters (open indexes). Every memo registers itself,
so `clear_all()` resets them together when a setting that shapes their values changes (stemming,
say).
"""
from __future__ import annotations

import weakref
from itertools import islice

_ALL: list = []  # weak references to every memo (a dict compares by content: no WeakSet)


class Memo(dict):
    __slots__ = ("limit", "__weakref__")

    def __init__(self, limit: int):
        super().__init__()
        self.limit = max(1, limit)
        _ALL[:] = [r for r in _ALL if r() is not None]
        _ALL.append(weakref.ref(self))

    def put(self, key, value):
        """Store and return value, making room first when full."""
        if key not in self and len(self) >= self.limit:
            self.make_room(1)
        self[key] = value
        return value

    def make_room(self, n: int) -> None:
        """Drop the oldest entries so that n more fit, at least a quarter of the memo when full."""
        excess = len(self) + n - self.limit
        if excess <= 0:
            return
        drop = max(excess, self.limit // 4)
        while True:
            try:
                oldest = list(islice(iter(self), drop))
                break
            except RuntimeError:  # another thread changed the memo while its oldest keys were read
                continue
        for key in oldest:
            try:
                del self[key]
            except KeyError:  # another thread making room dropped it first
                pass

    def recall(self, key, default=None):
        """The value for key (default when absent), now the most recently used entry."""
        # Single dict steps, each atomic: a host's threads share a memo (service._OPEN), and
        # another may drop or replace the entry between any two of them.
        try:
            value = self.pop(key)
        except KeyError:
            return default
        # A newer value another thread stored meanwhile stays (and is the answer).
        return self.setdefault(key, value)


def clear_all() -> None:
    for ref in list(_ALL):
        memo = ref()
        if memo is not None:
            memo.clear()
