"""The line chunker: verbatim runs of source lines cut at the most natural boundary in reach.

A chunk grows line by line until the next line would pass its kind's character budget; it is then
cut at the best boundary in its second half (a blank line before an unindented line beats a blank
line, which beats a dedent; in prose a heading beats them all), so definitions, paragraphs and
sections tend to stay whole. A single line longer than the budget becomes a chunk of its own:
spans are whole lines.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..languages import CODE, CONFIG, DOCS
from ..notebook import is_notebook
from ..read import split_lines
from ..records import Chunk

VERSION = 4  # bump when the cuts change: indexes of line chunks are rebuilt, not left half old (3: notebooks'
# line cap; 4: a notebook's headings as its chunks' context, notebook.with_headings)


NOTEBOOK_LINES = 4


@dataclass(frozen=True)
class ChunkingPolicy:
    """Character budgets per kind of file, and a line cap that keeps spans readable."""

    code: int = 1500
    prose: int = 1200
    config: int = 1000
    default: int = 1200
    max_lines: int = 120

    def __post_init__(self):
        # `max_lines="3"` failed at the first file chunked, as a comparison of str and int.
        for name in ("code", "prose", "config", "default", "max_lines"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"ChunkingPolicy.{name} must be an int, not {type(value).__name__}")
            if value < 1:
                raise ValueError(f"ChunkingPolicy.{name} must be at least 1, not {value}")

    def budget(self, kind: str) -> int:
        if kind == CODE:
            return self.code
        if kind == DOCS:
            return self.prose
        if kind == CONFIG:
            return self.config
        return self.default

    def line_cap(self, path: str) -> int:
        """max_lines for a file; a notebook's four times it: its outputs and JSON are blank lines in
        the script view (notebook.script_view), and 120 of them held a cell or two."""
        return self.max_lines * NOTEBOOK_LINES if is_notebook(path) else self.max_lines

    def fingerprint(self) -> dict:
        return {"code": self.code, "prose": self.prose, "config": self.config,
                "default": self.default, "max_lines": self.max_lines}


# A title's underline (a line with or without its ending): Markdown's setext `===` or `---`; in
# reST any punctuation character of 7-bit ASCII (docutils), overlining too. The heading chunker
# (markdown.py) reads titles with these as well.
SETEXT_UNDERLINE = re.compile(r" {0,3}(=+|-+)[ \t]*\r?\n?$")
RST_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1{2,}[ \t]*\r?\n?$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _boundary_score(lines: list[str], j: int, prose: bool, underline: re.Pattern | None = None) -> float:
    """How good a cut is just before lines[j]."""
    line = lines[j]
    prev = lines[j - 1]
    blank_before = not prev.strip()
    stripped = line.strip()
    if not stripped:
        return 0.5 if not blank_before else 0.0
    if prose and stripped.startswith("#"):
        return 4.0
    if underline and blank_before and _titled(lines, j, underline):
        return 4.0  # an underlined title starts a section as a `#` heading does
    indent = _indent(line)
    closing = stripped[0] in ")]}"
    if blank_before and indent == 0 and not closing:
        return 3.0
    if blank_before:
        return 2.0
    if indent == 0 and not closing:
        return 1.5
    if prev.strip() and indent < _indent(prev):
        return 0.25
    return 0.0


def _titled(lines: list[str], j: int, underline: re.Pattern) -> bool:
    """lines[j] is a title's text over its underline, or a reST overline over the title."""
    if j + 1 >= len(lines) or not lines[j + 1].strip():
        return False
    if underline.match(lines[j]):
        return underline is RST_ADORNMENT and j + 2 < len(lines) and lines[j + 2].rstrip() == lines[j].rstrip()
    return bool(underline.match(lines[j + 1]))


def _emit(path: str, lines: list[str], a: int, b: int, language: str, kind: str, out: list[Chunk]) -> None:
    """Lines a..b-1, trimmed of blank edge lines."""
    while a < b and not lines[a].strip():
        a += 1
    while b > a and not lines[b - 1].strip():
        b -= 1
    if a < b:
        out.append(Chunk(path, a + 1, b, "".join(lines[a:b]), language, kind))


def chunk_lines(
    text: str, path: str, *, language: str = "", kind: str = "", policy: ChunkingPolicy | None = None
) -> list[Chunk]:
    """text (the file at path) as chunks of whole lines within policy's budget ([] for no lines),
    verbatim, its lines split at `\n` only: give the text as `retrieval.read.read_source` reads a
    file (a byte-order mark dropped, lone-CR line endings made LF) for the numbers load_chunks
    gives. A TypeError names an argument of the wrong type: `None` was no chunks, and bytes a
    message the wrong way round."""
    for name, value in (("text", text), ("path", path), ("language", language), ("kind", kind)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    check_policy(policy)
    return chunk_rows(split_lines(text), path, language=language, kind=kind, policy=policy)


def check_policy(policy) -> None:
    """A TypeError unless policy is a ChunkingPolicy or None."""
    if policy is not None and not isinstance(policy, ChunkingPolicy):
        raise TypeError(f"policy must be a ChunkingPolicy, not {type(policy).__name__}")


def chunk_rows(
    lines: list[str], path: str, *, language: str = "", kind: str = "", policy: ChunkingPolicy | None = None
) -> list[Chunk]:
    """chunk_lines of text already split into its lines (split_lines): a caller holding them (the
    heading chunker, for each section) does not join and split them again."""
    policy = policy or ChunkingPolicy()
    if not lines:
        return []
    budget = policy.budget(kind)
    max_lines = policy.line_cap(path)
    prose = kind == DOCS
    underline = (RST_ADORNMENT if language == "rst" else SETEXT_UNDERLINE) if prose else None
    out: list[Chunk] = []
    n = len(lines)
    if n <= max_lines and sum(map(len, lines)) <= budget:  # all of it fits: no cut (most sections of a page)
        _emit(path, lines, 0, n, language, kind, out)
        return out
    start, size = 0, 0
    i = 0
    while i < n:
        length = len(lines[i])
        if i > start and (size + length > budget or i - start >= max_lines):
            # Cut in the second half of the current chunk, at the best boundary (latest on ties).
            best_j, best_score = i, _boundary_score(lines, i, prose, underline)
            lo = start + max(1, (i - start) // 2)
            for j in range(i - 1, lo - 1, -1):
                score = _boundary_score(lines, j, prose, underline)
                if score > best_score:
                    best_j, best_score = j, score
            _emit(path, lines, start, best_j, language, kind, out)
            start = best_j
            size = sum(len(line) for line in lines[start:i])
            continue
        size += length
        i += 1
    _emit(path, lines, start, n, language, kind, out)
    return out


def whole_file(text: str, path: str, *, language: str = "", kind: str = "") -> list[Chunk]:
    """The file as one chunk (blank edge lines trimmed): for collections where a file is a document."""
    lines = split_lines(text)
    out: list[Chunk] = []
    _emit(path, lines, 0, len(lines), language, kind, out)
    return out
