"""Regular expressions compiled on first use, not at import.

A cold `query` pays for every pattern its modules compile at import, and most of them (the
definition finder, the prose tokenizer, the walker's deny-list) serve only indexing or another
profile. A LazyPattern stands in for the compiled pattern and compiles itself when first used.
"""
from __future__ import annotations

import re


class LazyPattern:
    __slots__ = ("_source", "_flags", "_compiled")

    def __init__(self, source, flags: int = 0):
        self._source = source  # a string, or a function returning one (built on first use too)
        self._flags = flags
        self._compiled: re.Pattern | None = None

    def compiled(self) -> re.Pattern:
        if self._compiled is None:
            source = self._source() if callable(self._source) else self._source
            self._compiled = re.compile(source, self._flags)
        return self._compiled

    def __getattr__(self, name):  # search, finditer, fullmatch, pattern, ...
        return getattr(self.compiled(), name)
