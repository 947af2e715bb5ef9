"""retrieval: offline-first code retrieval for coding agents and the people who drive them.

The public API is re-exported here but imported on first use, so `retrieval query` in a fresh
process pays only for the modules its query path needs.
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "Chunk": "records", "Document": "records", "SearchHit": "records", "SourceFile": "records",
    "ChunkingPolicy": "chunking", "chunk_lines": "chunking",
    "discover_files": "discover",
    "load_documents": "loader", "load_chunks": "loader", "load_chunk_documents": "loader",
    "load_ast_chunk_documents": "loader",
    "REGISTRY": "retrievers.base", "Retriever": "retrievers.base", "build_retriever": "retrievers.base",
}

__all__ = sorted(_EXPORTS) + ["__version__"]

# What the lazy exports are, for type checkers, which take any TYPE_CHECKING as true; at run time
# nothing is imported, not even typing (3 ms of a served query's client).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .chunking import ChunkingPolicy, chunk_lines
    from .discover import discover_files
    from .loader import load_ast_chunk_documents, load_chunk_documents, load_chunks, load_documents
    from .records import Chunk, Document, SearchHit, SourceFile
    from .retrievers.base import REGISTRY, Retriever, build_retriever


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'retrieval' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
