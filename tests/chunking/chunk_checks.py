"""Checks shared by the chunker tests."""
from __future__ import annotations

from retrieval.read import split_lines


def assert_verbatim(text, chunks):
    """Every chunk is exactly its lines of the source; chunks are in order and disjoint; every line
    with text is in a chunk (nothing the index should hold is left out)."""
    lines = split_lines(text)
    last = 0
    covered = set()
    for c in chunks:
        assert c.text == "".join(lines[c.start_line - 1 : c.end_line])
        assert last < c.start_line <= c.end_line
        last = c.end_line
        covered.update(range(c.start_line, c.end_line + 1))
    missing = [n for n, line in enumerate(lines, start=1) if line.strip() and n not in covered]
    assert not missing, f"lines in no chunk: {missing[:10]}"
