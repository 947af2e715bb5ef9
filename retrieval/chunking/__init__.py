"""Chunkers: turn a file's text into spans of verbatim lines."""
from __future__ import annotations

from .lines import ChunkingPolicy, chunk_lines, whole_file

__all__ = ["ChunkingPolicy", "chunk_lines", "whole_file"]
