"""Discover -> read -> chunk, as plain functions over a root (the in-memory API)."""
from __future__ import annotations

import os

from .chunking import ChunkingPolicy, chunk_lines
from .chunking.lines import check_policy
from .discover import DEFAULT_MAX_BYTES, discover_files
from .notebook import with_headings
from .read import read_source
from .records import Chunk, Document


def _read_all(root: str, **discover_kw):
    max_bytes = discover_kw.get("max_bytes", DEFAULT_MAX_BYTES)
    for file in discover_files(root, **discover_kw):
        content = read_source(file, max_bytes)
        if content.text is not None:
            yield content.file, content.text


def load_documents(root: str | os.PathLike[str], **discover_kw) -> list[Document]:
    """One Document per eligible, readable text file; docid is the relative path."""
    return [
        Document(docid=f.path, text=text, source_path=f.path, language=f.language, kind=f.kind)
        for f, text in _read_all(root, **discover_kw)
    ]


def load_chunks(root: str | os.PathLike[str], *, policy: ChunkingPolicy | None = None, **discover_kw) -> list[Chunk]:
    """The line chunks of every eligible, readable text file, in path order (discover_kw as
    discover_files takes them)."""
    check_policy(policy)
    chunks: list[Chunk] = []
    for f, text in _read_all(root, **discover_kw):
        chunks.extend(with_headings(chunk_lines(text, f.path, language=f.language, kind=f.kind, policy=policy), text))
    return chunks


def load_chunk_documents(root: str | os.PathLike[str], *, policy: ChunkingPolicy | None = None, **discover_kw) -> list[Document]:
    """One Document per chunk, docid "{relpath}:{start}-{end}"."""
    return [Document.from_chunk(c) for c in load_chunks(root, policy=policy, **discover_kw)]


def load_ast_chunk_documents(root: str | os.PathLike[str], *, policy: ChunkingPolicy | None = None, **discover_kw) -> list[Document]:
    """As load_chunk_documents, with chunks at syntax-node boundaries (tree-sitter) that carry their
    scope path, kind, symbol and definitions; files without a grammar fall back to lines. Needs the
    `treesitter` extra (RuntimeError naming the install command otherwise)."""
    from .extras import install_hint, missing_modules

    check_policy(policy)
    missing = missing_modules("treesitter")
    if missing:
        raise RuntimeError(f"AST chunking needs {', '.join(missing)}: {install_hint('treesitter')}")
    from .chunking.ast import chunk_source

    return [
        Document.from_chunk(c)
        for f, text in _read_all(root, **discover_kw)
        for c in chunk_source(text, f.path, language=f.language, kind=f.kind, policy=policy)
    ]
