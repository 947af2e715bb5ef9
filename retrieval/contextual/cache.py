"""Generated contexts, kept in the store so nothing paid for is ever asked for twice.

One small JSON file per (model, prompt version, file content): {"start-end": context}. The key holds
everything the answer depends on, so an edited file misses (its new content hashes elsewhere) while
every other file still hits, and a changed prompt or model starts afresh. Each answer is written as
it arrives (atomically, through store/atomic.py): an interrupted run loses at most the requests in
flight.
"""
from __future__ import annotations

import json
import os
import re
import threading

from ..store.atomic import write_json

DIRNAME = "contexts"


def span_key(start_line: int, end_line: int) -> str:
    return f"{start_line}-{end_line}"


class ContextCache:
    def __init__(self, directory: str):
        self.directory = os.path.join(directory, DIRNAME)
        self._lock = threading.Lock()

    def _path(self, model: str, prompt_version: int, digest: str) -> str:
        safe_model = re.sub(r"[^\w.-]", "_", model)
        return os.path.join(self.directory, safe_model, f"p{prompt_version}", digest[:2], f"{digest}.json")

    def get(self, model: str, prompt_version: int, digest: str) -> dict[str, str]:
        """{span key: context} cached for this file content ({} when none, or unreadable)."""
        try:
            with open(self._path(model, prompt_version, digest), "rb") as fh:
                data = json.loads(fh.read())
        except (OSError, ValueError):
            return {}
        return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}

    def put(self, model: str, prompt_version: int, digest: str, span: str, context: str) -> None:
        """Add one context, durably, before returning (threads may call this concurrently)."""
        path = self._path(model, prompt_version, digest)
        with self._lock:
            entries = self.get(model, prompt_version, digest)
            entries[span] = context
            os.makedirs(os.path.dirname(path), exist_ok=True)
            write_json(path, entries, durable=True)
