"""`turbovec`: chunks embedded by a local sentence-transformers model, searched in a quantized
turbovec index and re-scored exactly with the float vectors (extras `local` and `turbovec`).

Implements the persistent protocol of retrieval/retrievers/lexical.py for the service; the model is
loaded once per process (retrieval.embed.get_embedder), so a long-lived process keeps it warm.
"""
from __future__ import annotations

from typing import Iterable

from ..embed import MAX_TOKENS, get_embedder, model_from_environment
from ..generated import VERSION as GENERATED_VERSION
from ..query import plan_query, split_keyword
from ..ranking import RankingConfig, rank_candidates
from ..records import Chunk, Document, SearchHit, SourceFile, chunk_docid
from ..settings import env_choice
from .base import NOT_INDEXED, check_documents, check_search_args, marked_paths

DEFAULT_BITS = 4
ENV_BITS = "RETRIEVAL_TURBOVEC_BITS"
TEXT_FORMAT = 1  # bump when retrieval.vectors.texts.embed_text or worth_embedding change


def _bits() -> int:
    return int(env_choice(ENV_BITS, str(DEFAULT_BITS), ("2", "4")))


class DenseRetriever:
    name = "turbovec"

    def __init__(self, model: str | None = None, bits: int | None = None, max_tokens: int = MAX_TOKENS,
                 ranking: RankingConfig | None = None):
        if bits is not None and bits not in (2, 4):
            raise ValueError("turbovec bit width must be 2 or 4")
        self.model = model or model_from_environment()
        self.bits = bits or _bits()
        self.max_tokens = max_tokens
        # Dense scores are cosines of one chunk each: no per-file evidence sum, just one chunk per
        # file first and the path priors.
        self.ranking = ranking or RankingConfig(file_evidence=0.0)
        self._index = None
        self._documents: list[Document] | None = None  # the in-memory index's, one per row
        self._embedder = None
        self._chunker = None

    @property
    def embedder(self):
        if self._embedder is None:
            self._embedder = get_embedder(self.model, self.max_tokens)
        return self._embedder

    def use_profile(self, profile: str) -> None:
        """Any profile: a model reads prose as it reads code (the prose profile's one chunk per file
        comes from the index options)."""

    def _chunk_source(self):
        if self._chunker is None:
            from .hybrid import lexical_arm

            self._chunker = lexical_arm()
        return self._chunker

    def chunk_file(self, text: str, f: SourceFile, options) -> list[Chunk]:
        # The hybrid's chunks (its lexical arm's): the two share embeddings.
        own = getattr(self._chunk_source(), "chunk_file", None)
        return own(text, f, options) if own is not None else options.chunk(text, f)

    def fingerprint(self) -> dict:
        return {"model": self.embedder.identity, "max_tokens": self.max_tokens, "bits": self.bits,
                "text": TEXT_FORMAT, "chunks": self._chunk_source().name, "generated": GENERATED_VERSION,
                # New cuts are new chunks: a store of the old ones must not be refreshed file by file.
                "chunking": self._chunk_source().chunking()}

    # -- the in-memory API -----------------------------------------------------------------

    def index(self, documents: Iterable[Document]) -> None:
        """Embed the documents (as the store embeds chunks: path, context, text) and keep them in
        memory, searched exactly. Those the store leaves to the lexical index (vendored, generated,
        translated files) are left out here too: `hybrid` finds them by its lexical arm. In docid
        order, so the same documents in any order embed and tie alike."""
        import numpy as np

        from ..vectors.search import MemoryIndex
        from ..vectors.texts import embed_text, worth_embedding

        documents = check_documents(documents)
        generated = marked_paths(documents)
        kept = sorted(((d.source_path or d.docid, d) for d in documents), key=lambda pd: pd[1].docid)
        kept = [(path, d) for path, d in kept if worth_embedding(path, d.kind, path in generated)]
        texts = [embed_text(path, d.text, d.context) for path, d in kept]
        vectors = self.embedder.embed(texts) if texts else np.zeros((0, 1), dtype=np.float32)
        rows = [(path, d.language, d.kind, d.start_line or 0, d.end_line or 0) for path, d in kept]
        # Each row's own document: several of one file without lines (an FAQ's entries) were one key,
        # the last of them returned for all (and the hits of vendored files took a made-up docid).
        self._documents = [d for _path, d in kept]
        self._index = MemoryIndex(vectors, rows)

    def docid(self, path: str, start: int, end: int) -> str:
        """The store's docid of a chunk: `path:start-end`."""
        return chunk_docid(path, start or None, end or None)

    def document(self, candidate) -> Document | None:
        """The in-memory document a candidate is (None for the store's)."""
        return self._documents[candidate.row] if self._documents is not None else None

    def candidate_docid(self, candidate) -> str:
        """A candidate's docid: its in-memory document's, else the store's."""
        own = self.document(candidate)
        return own.docid if own is not None else self.docid(candidate.path, candidate.start_line, candidate.end_line)

    # -- the persistent index ------------------------------------------------------------

    def update_store(self, directory: str, state: dict | None, removed_paths,
                     added: Iterable[tuple[SourceFile, list[Chunk]]], *, purge: bool = False) -> dict:
        # Every refresh writes a whole new generation, so nothing of a removed file survives: `purge`
        # needs no extra work.
        from ..vectors.build import update

        return update(directory, state, removed_paths, added, embedder=self.embedder, bits=self.bits,
                      label=self.name)

    def check_store(self, directory: str, state: dict) -> None:
        from ..vectors.store import Generation

        Generation(directory, state["generation"])

    def collect_garbage(self, directory: str, state: dict, *, keep_resumable: bool = False) -> None:
        from ..vectors.store import collect_garbage

        collect_garbage(directory, state, keep_checkpoints=keep_resumable)

    def open_store(self, directory: str, state: dict) -> "DenseRetriever":
        from ..vectors.search import DenseIndex

        self._index = DenseIndex(directory, state)
        self._documents = None
        return self

    # -- searching -------------------------------------------------------------------------

    def candidates(self, query: str, depth: int, allow=None):
        """Exact-cosine candidates, best first, before any ranking signal."""
        if self._index is None:
            raise RuntimeError(NOT_INDEXED)
        if not len(self._index) or not any(ch.isalnum() for ch in query):
            # A blank query has no hits, as lexical answers it: the embedding of nothing (or of a
            # zero-width space, a NUL) ranked every chunk in an arbitrary order.
            return []
        return self._index.candidates(self.embedder.embed_query(query), depth, allow)

    def search(self, query: str, top_k: int = 10) -> list[str]:
        return [h.docid for h in self.search_detailed(query, top_k)]

    def search_detailed(self, query: str, top_k: int = 10, *, allow=None) -> list[SearchHit]:
        check_search_args(query, top_k)
        keyword, query = split_keyword(query)
        config = self.ranking
        plan = plan_query(query, config, keyword)
        # A depth that does not follow top_k for the usual k: the files the first hits come from
        # (one per file first) must not change with how many hits are asked for.
        found = self.candidates(query, max(top_k * 3, config.candidates), allow)
        ranked = rank_candidates([(c.score, c.path, c.kind, c) for c in found], plan, config,
                                 languages={c.path: c.language for c in found})
        hits = []
        for rank, (value, c) in enumerate(ranked[:top_k], start=1):
            d = self.document(c)
            if d is None:
                hits.append(SearchHit(self.docid(c.path, c.start_line, c.end_line), c.path, c.start_line or None,
                                      c.end_line or None, rank, value, language=c.language, kind=c.kind))
            else:  # what the document says of itself, as lexical's hits of it say it
                hits.append(SearchHit(d.docid, c.path, d.start_line, d.end_line, rank, value, d.context,
                                      language=d.language, kind=d.chunk_kind or d.kind, symbol=d.symbol, scope=d.scope))
        return hits


def probe() -> str:
    """'' when the default model's weights check out (or another model is chosen), else why not."""
    if model_from_environment():
        return ""
    try:
        from ..embed import resolve_model

        resolve_model(None)
    except RuntimeError as exc:
        return str(exc)
    return ""
