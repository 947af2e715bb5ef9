"""retrieval: offline-first code retrieval for coding agents and the people who drive them."""
from __future__ import annotations

__version__ = "0.1.0"

from .chunking import ChunkingPolicy, chunk_lines  # noqa: E402
from .discover import discover_files  # noqa: E402
from .loader import load_chunk_documents, load_chunks, load_documents  # noqa: E402
from .records import Chunk, Document, SearchHit, SourceFile  # noqa: E402
from .retrievers.base import REGISTRY, Retriever, build_retriever  # noqa: E402

__all__ = [
    "Chunk", "ChunkingPolicy", "Document", "REGISTRY", "Retriever", "SearchHit", "SourceFile",
    "build_retriever", "chunk_lines", "discover_files", "load_chunk_documents", "load_chunks",
    "load_documents", "__version__",
]
