"""`lexical+ctx`: BM25 over each chunk plus a context that situates it in its file.

The context is the model's (cached by `contextual.generate`, when one was generated for this exact
file content, model and prompt) followed by the offline contextualizer's; chunks without a cached
context get the offline one alone. Building or refreshing this index never calls a model: a query
that refreshes a stale index spends nothing. The contexts are kept beside the segments so hits
report them.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import replace
from typing import Callable, Iterable

from ..contextual import configured_model
from ..contextual.cache import ContextCache, span_key
from ..contextual.heuristic import PARTS, HeuristicContextualizer
from ..contextual.prompt import PROMPT_VERSION
from ..read import content_digest
from ..records import Chunk, SourceFile
from ..store.atomic import dumps, remove_tree, write_bytes
from .lexical import LexicalRetriever

CONTEXTS_PREFIX = "ctx-"


def text_digest(text: str) -> str:
    """The cache key of a file's content (its text as read and decoded)."""
    return content_digest(text.encode("utf-8", "surrogatepass"))


class ContextualRetriever(LexicalRetriever):
    name = "lexical+ctx"

    def __init__(self, *, model: str | None = None, parts: tuple[str, ...] = PARTS,
                 chunker: Callable | None = None, **kwargs):
        super().__init__(**kwargs)
        self.model = model or configured_model()
        self.heuristic = HeuristicContextualizer(parts)
        # chunker(text, file, options) -> chunks, e.g. a tree-sitter chunker whose Chunk.context is a
        # breadcrumb (the heuristic then uses it); default: the index options' line chunker.
        self._chunker = chunker
        self._cache: ContextCache | None = None
        self._stored: dict[str, dict] | None = None
        self._stored_path = ""
        self._open: tuple[str, dict] | None = None

    def fingerprint(self) -> dict:
        fp = dict(super().fingerprint())
        fp["context"] = {"offline": self.heuristic.fingerprint(), "model": self.model, "prompt": PROMPT_VERSION,
                         "chunker": getattr(self._chunker, "__qualname__", "lines")}
        return fp

    # -- chunking: the service calls this for every changed file ----------------------------

    def base_chunks(self, text: str, source_file: SourceFile, options) -> list[Chunk]:
        if self._chunker is not None:
            return self._chunker(text, source_file, options)
        return options.chunk(text, source_file)

    def chunk_file(self, text: str, source_file: SourceFile, options) -> list[Chunk]:
        chunks = self.base_chunks(text, source_file, options)
        offline = self.heuristic.contexts(text, source_file.path, chunks, source_file.language)
        generated = self.cached_contexts(text) if self._cache is not None else {}
        out = []
        for chunk, local in zip(chunks, offline):
            model_text = generated.get(span_key(chunk.start_line, chunk.end_line), "")
            context = "\n".join(p for p in (model_text, local) if p)
            out.append(replace(chunk, context=context))
        return out

    def use_cache(self, directory: str) -> None:
        self._cache = ContextCache(directory)

    def cached_contexts(self, text: str) -> dict[str, str]:
        # Only update_store sets the cache, under the writer lock: the store may keep a copy.
        return self._cache.get(self.model, PROMPT_VERSION, text_digest(text), keep=True)

    # -- the persistent index: the lexical one, plus the contexts hits report ---------------

    def update_store(self, directory: str, state: dict | None, removed_paths, added: Iterable, *,
                     purge: bool = False) -> dict:
        self.use_cache(directory)  # chunk_file runs while `added` is consumed below
        table = dict(self._load_contexts(directory, state)) if state else {}
        for path in removed_paths:
            table.pop(path, None)

        def recorded():
            for f, chunks in added:
                if chunks:
                    table[f.path] = [[c.start_line, c.end_line, c.context] for c in chunks]
                else:
                    table.pop(f.path, None)
                yield f, chunks

        new_state = super().update_store(directory, state, removed_paths, recorded(), purge=purge)
        data = dumps(table)
        # Named by content: a rebuild never overwrites a file the committed manifest names.
        name = f"{CONTEXTS_PREFIX}{hashlib.blake2b(data, digest_size=10).hexdigest()}.json"
        path = os.path.join(directory, name)
        if os.path.isdir(path) and not os.path.islink(path):
            # Damage in the way of the name (the rebuild that found it writes that very name).
            remove_tree(path, ignore_errors=True)
        write_bytes(path, data, durable=True)
        return {**new_state, "contexts": name}

    def _load_contexts(self, directory: str, state: dict) -> dict:
        name = state.get("contexts")
        if not name:
            return {}
        path = os.path.join(directory, name)
        if self._stored is None or self._stored_path != path:
            with open(path, "rb") as fh:
                raw = fh.read()
            # Named by its content's digest: a file that no longer matches it was changed on disk.
            if name != f"{CONTEXTS_PREFIX}{hashlib.blake2b(raw, digest_size=10).hexdigest()}.json":
                raise ValueError(f"{name} does not match its digest")
            data = json.loads(raw)
            if not isinstance(data, dict):
                raise ValueError(f"{name} is not a table of contexts")
            self._stored, self._stored_path = data, path
        return self._stored

    def check_store(self, directory: str, state: dict) -> None:
        super().check_store(directory, state)
        if not state.get("contexts") or not os.path.isfile(os.path.join(directory, state["contexts"])):
            raise RuntimeError("the contexts file is missing")

    def collect_garbage(self, directory: str, state: dict, *, keep_resumable: bool = False) -> None:
        super().collect_garbage(directory, state, keep_resumable=keep_resumable)
        live = state.get("contexts") if state is not None else None
        try:
            names = os.listdir(directory)
        except OSError:
            return
        for name in names:
            if name.startswith(CONTEXTS_PREFIX) and name.endswith(".json") and name != live:
                try:
                    os.unlink(os.path.join(directory, name))
                except OSError:
                    pass

    def open_store(self, directory: str, state: dict) -> "ContextualRetriever":
        super().open_store(directory, state)
        self._stored, self._stored_path = None, ""
        self._open = (directory, state)
        return self

    def _hits(self, views, ranked, levels, symbol_query: str = ""):
        hits = super()._hits(views, ranked, levels, symbol_query)
        opened = self._open
        if opened is None or not hits:
            return hits  # the in-memory index keeps its contexts itself
        table = self._load_contexts(*opened)  # read on the first query that has hits
        out = []
        for h in hits:
            spans = table.get(h.source_path, ())
            context = next((c for s, e, c in spans if s == h.start_line and e == h.end_line), h.context)
            out.append(replace(h, context=context))
        return out
