"""The record types that flow through the pipeline: one per concept.

Spans always live in fields; a docid string is an identifier, never parsed back into a span.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class SourceFile:
    """A file that discovery accepted: where it is and what it is, before it is read."""

    path: str  # relative to the root, POSIX separators
    abspath: str
    size: int
    mtime_ns: int
    language: str
    kind: str  # code | docs | config
    ctime_ns: int = 0  # changes with any write or rename, even one that keeps size and mtime
    generated: bool = False  # not the project's own code: marked below, else its header says a tool wrote it
    # What the repository's .gitattributes say: linguist-generated or -vendored set (True), generated
    # unset (False: whatever the header says), None when they say nothing. Known before it is read.
    marked: bool | None = None

    @property
    def token_estimate(self) -> int:
        # About four bytes per token for source and prose alike; good enough for budgets.
        return (self.size + 3) // 4


@dataclass(frozen=True)
class Chunk:
    """A span of verbatim source lines: 1-based, inclusive."""

    path: str
    start_line: int
    end_line: int
    text: str
    language: str = ""
    kind: str = ""
    context: str = ""
    # What a syntax-aware chunker knows (empty from the line chunker): the name the chunk defines,
    # what it is (function, method, class, section, module, ...), the lines of its enclosing scope
    # (for `--expand scope`), and the names it defines (None: unknown, found by patterns instead).
    symbol: str = ""
    chunk_kind: str = ""
    scope: tuple[int, int] | None = None
    definitions: tuple[str, ...] | None = None
    # The other definitions named in the chunk, (name, scope path, kind, first line, last line) each:
    # a chunk of merged siblings is labelled by one, and a query naming another, or whose words are
    # in another's lines, is told that one's label instead (lines (0, 0): inside the label or around it).
    members: tuple[tuple[str, str, str, int, int], ...] = ()

    @property
    def docid(self) -> str:
        return chunk_docid(self.path, self.start_line, self.end_line)


@dataclass(frozen=True)
class Unchunked:
    """A file's text, handed to a retriever that cuts it into chunks where it extracts their terms
    (in its worker processes: a retriever with `chunks_in_workers`), with the index options that say
    how. `chunked(n)` is called in this process, in file order, with the number of chunks the file
    got; it answers whether the file goes on to the index (one with no chunks, and none before, not)."""

    text: str
    options: object
    chunked: Callable[[int], bool]


@dataclass(frozen=True)
class Document:
    """The unit a retriever indexes: a whole file or a chunk of one."""

    docid: str
    text: str
    url: str = ""
    source_path: str = ""
    start_line: int | None = None
    end_line: int | None = None
    context: str = ""
    language: str = ""
    kind: str = ""
    symbol: str = ""
    chunk_kind: str = ""
    scope: tuple[int, int] | None = None
    definitions: tuple[str, ...] | None = None
    members: tuple[tuple[str, str, str, int, int], ...] = ()

    @classmethod
    def from_chunk(cls, chunk: Chunk) -> "Document":
        return cls(
            docid=chunk.docid,
            text=chunk.text,
            source_path=chunk.path,
            start_line=chunk.start_line,
            end_line=chunk.end_line,
            context=chunk.context,
            language=chunk.language,
            kind=chunk.kind,
            symbol=chunk.symbol,
            chunk_kind=chunk.chunk_kind,
            scope=chunk.scope,
            definitions=chunk.definitions,
            members=chunk.members,
        )


@dataclass(frozen=True)
class SearchHit:
    """One ranked result. `rank` is 1-based."""

    docid: str
    source_path: str
    start_line: int | None
    end_line: int | None
    rank: int
    score: float
    context: str = ""
    confidence: str = ""  # high | medium | low (retrieval.confidence); "" when the retriever has none
    extra: dict = field(default_factory=dict, compare=False)
    language: str = ""
    kind: str = ""  # the chunk's kind when known (function, method, class, section, ...), else the file's
    symbol: str = ""  # the name the chunk defines (syntax-aware chunkers only)
    scope: tuple[int, int] | None = None  # lines of the enclosing scope, when known
    # The chunk's other definitions beside its label, as Chunk.members: the query's words may name
    # one of them the hit's label (retrieval.labels). Not printed.
    members: tuple = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class Snippet:
    """Verbatim lines of a hit's file, read at query time: 1-based, inclusive; both None when
    there is nothing to show (the file is gone, or now shorter than the span). A line longer than
    retrieval.snippets.MAX_LINE_CHARS is shortened, saying how much was left out (`cut_lines`)."""

    start_line: int | None
    end_line: int | None
    text: str
    stale: bool = False  # the file changed since it was indexed: these are its current lines
    cut_lines: int = 0  # lines shortened (a minified or generated line would flood the reader)
    missing: bool = False  # the file is not read now (deleted, unreadable, not a file, too large)


def member_shaped(m) -> bool:
    """Whether m has a member's shape (Chunk.members): name, scope path and kind, then its first
    and last line or none (written before members had lines)."""
    return (isinstance(m, (tuple, list)) and len(m) in (3, 5) and all(isinstance(x, str) for x in m[:3])
            and all(type(x) is int and x >= 0 for x in m[3:]))


def chunk_docid(path: str, start_line: int, end_line: int) -> str:
    return f"{path}:{start_line}-{end_line}"
