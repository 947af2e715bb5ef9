"""Contextualizers: a short text per chunk that situates it in its file, indexed with the chunk.

Two implementations share one interface, `contexts(text, path, chunks, language) -> [str]`:
- `heuristic.HeuristicContextualizer` (standard library): scopes, the file's leading doc, imports used;
- `anthropic.AnthropicContextualizer` (extra `remote`): a Claude model writes 2-3 sentences and search
  terms per chunk, the whole file sent once as a cached prompt prefix. It only ever runs through
  `generate.run` (estimate, cost guard, cache, resume), never while a query refreshes an index.
"""
from __future__ import annotations

import os
from typing import Protocol

from ..records import Chunk

ENV_MODEL = "RETRIEVAL_CONTEXT_MODEL"
ENV_KEY = "ANTHROPIC_API_KEY"
DEFAULT_MODEL = "claude-haiku-5-5"  # the newest small model the anthropic SDK 2.x lists


class Contextualizer(Protocol):
    name: str

    def fingerprint(self) -> dict: ...

    def contexts(self, text: str, path: str, chunks: list[Chunk], language: str = "") -> list[str]: ...


def configured_model() -> str:
    return os.environ.get(ENV_MODEL, "").strip() or DEFAULT_MODEL


def remote_unavailable_reason() -> str:
    """'' when the Anthropic contextualizer can run here; else what to install or set."""
    from ..extras import install_hint, missing_modules

    missing = missing_modules("remote")
    if missing:
        return f"the Anthropic contextualizer needs {', '.join(missing)}: {install_hint('remote')}"
    if not os.environ.get(ENV_KEY, "").strip():
        return f"the Anthropic contextualizer needs an API key: set {ENV_KEY}"
    return ""
