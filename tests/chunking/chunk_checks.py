"""Checks shared by the chunker tests."""
from __future__ import annotations

from retrieval.read import split_lines


def assert_verbatim(text, chunks):
    """Every chunk is exactly its lines of the source; chunks are in order and disjoint."""
    lines = split_lines(text)
    last = 0
    for c in chunks:
        assert c.text == "".join(lines[c.start_line - 1 : c.end_line])
        assert last < c.start_line <= c.end_line
        last = c.end_line
