"""Tree-sitter parsers: loaded on first use (this module imports without the extra), one parse at a
time in a process, each file's parses within a CPU-time allowance.

The grammars come from tree-sitter-language-pack 0.13, which ships them in its wheel (1.x downloads
them at run time: not on an air-gapped machine).
"""
from __future__ import annotations

import os
import threading
import time

# A file whose parses take more CPU time than this is chunked by lines. Real files parse in well
# under a second (the largest C file of the benchmark checkouts, 580 KB: 0.2 s), but a grammar can
# be slow on text made to hurt it: tree-sitter-bash reads many heredocs on one command in quadratic
# time (136 KB: 19 s; the 1 MB size cap: minutes). CPU time, not the clock's: on a machine busy with
# other processes a file must not lose its syntax chunks (same input, same chunks).
PARSE_SECONDS = 10.0

_PARSERS: dict[str, object] = {}

# One parse at a time in a process: a grammar's parser is shared, and its read callback lets another
# thread in mid-parse (a host's threads chunking at once crashed the process in tree-sitter).
_PARSING = threading.RLock()


def _fresh_parse_lock() -> None:
    global _PARSING
    _PARSING = threading.RLock()  # in a forked worker: the parent's threads that could hold it are gone


if hasattr(os, "register_at_fork"):  # POSIX only; Windows starts workers fresh (spawn), never forks
    os.register_at_fork(after_in_child=_fresh_parse_lock)


def parser_for(grammar: str):
    parser = _PARSERS.get(grammar)
    if parser is None:
        from tree_sitter_language_pack import get_parser

        parser = _PARSERS[grammar] = get_parser(grammar)
    return parser


# What the read callback hands over. Small: a node's `.text` in a tree parsed from a callback calls it
# again and copies a whole slice for every node, however short (64 KB slices: 40 us a node, 7 s for
# the 136,000 names of a generated 1 MB file of constants; 1 KB: 1.4 s, parses no slower).
READ_SLICE = 1 << 10


class Allowance:
    """The CPU time one file's parses may still take (PARSE_SECONDS from its first), checked from
    tree-sitter's progress callbacks. Only the parser's: QueryCursor.matches with a progress
    callback crashes the process (py-tree-sitter 0.26.1, segmentation fault on a 150-line file)."""

    def __init__(self) -> None:
        self.deadline = time.thread_time() + PARSE_SECONDS

    def exceeded(self, *_state) -> bool:
        return time.thread_time() > self.deadline


def parse(grammar: str, source: bytes, allowance: Allowance | None = None):
    """The tree of `source`, or None when the parser gave up or ran past its allowance.

    Parsing from a read callback is what lets tree-sitter report progress (it ignores the callback
    for a byte string); it calls it every few hundred bytes, so the clock is read cheaply."""
    parser = parser_for(grammar)
    allowance = allowance or Allowance()

    def read(offset: int, _point) -> bytes:
        return source[offset : offset + READ_SLICE]

    with _PARSING:  # the parse and any reset of the shared parser
        try:
            tree = parser.parse(read, progress_callback=allowance.exceeded)
        except ValueError:  # what a stopped parse raises (tree-sitter 0.26; older ones returned None)
            tree = None
        except BaseException as exc:
            # Ctrl-C (or SIGTERM's Terminated) in a callback: as it is, or as a SystemError caused by
            # it. Either way the parse stopped half done, and the next one (the next file's, in a
            # long-lived process) resumed it unless reset. Stop as interrupted (exit 130/143).
            parser.reset()
            if isinstance(exc, SystemError) and exc.__cause__ is not None:
                raise exc.__cause__ from None
            raise
        if tree is None:
            parser.reset()  # else its next parse (another file) resumes this one
    return tree
