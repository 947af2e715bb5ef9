"""`lexical`: BM25 over code-aware terms. Standard library only."""
from __future__ import annotations

from collections import Counter
from typing import Iterable

from ..lexical.bm25 import BM25Params, SegmentView, best_hits, score
from ..lexical.index import LexicalIndex, empty_state
from ..lexical.segment import MemorySegment, SegmentBuilder
from ..lexical.features import DEF, chunk_terms
from ..ranking import RankingConfig, is_symbol_query, path_prior, query_words, rank_files
from ..parallel import ordered_map
from ..records import Chunk, Document, SearchHit, SourceFile, chunk_docid
from ..text import tokenize
from .base import NOT_INDEXED


class LexicalRetriever:
    name = "lexical"

    def __init__(self, k1: float = 1.2, b: float = 0.75, ranking: RankingConfig | None = None):
        self.params = BM25Params(k1=k1, b=b)
        self.ranking = ranking or RankingConfig()
        self._views: list[SegmentView] | None = None
        self._n_docs = 0
        self._avgdl = 0.0
        self._contexts: dict[str, str] = {}

    def fingerprint(self) -> dict:
        # What the stored postings depend on; query-time ranking settings are not part of it.
        return {"k1": self.params.k1, "b": self.params.b, "terms": 2, "path_weight": self.ranking.path_weight}

    def _terms(self, path: str, text: str, context: str) -> Counter:
        return chunk_terms(path, text, context, self.ranking.path_weight)

    # -- the in-memory API -----------------------------------------------------------------

    def index(self, documents: Iterable[Document]) -> None:
        builder = SegmentBuilder()
        contexts = {}
        for doc in documents:
            counts = self._terms(doc.source_path or doc.docid, doc.text, doc.context)
            builder.add(
                doc.source_path or doc.docid, doc.language, doc.kind,
                doc.start_line or 0, doc.end_line or 0, counts, docid=doc.docid,
            )
            if doc.context:
                contexts[doc.docid] = doc.context
        segment = MemorySegment(builder)
        self._views = [SegmentView(segment)]
        self._n_docs = segment.n_docs
        self._avgdl = (sum(segment.lens) / segment.n_docs) if segment.n_docs else 0.0
        self._contexts = contexts

    def search(self, query: str, top_k: int = 10) -> list[str]:
        return [hit.docid for hit in self.search_detailed(query, top_k)]

    def search_detailed(self, query: str, top_k: int = 10, *, allow=None) -> list[SearchHit]:
        """Ranked hits. `allow(path, language, kind) -> bool` filters before ranking."""
        if self._views is None:
            raise RuntimeError(NOT_INDEXED)
        views = self._views
        config = self.ranking
        words = query_words(query)
        weights = Counter(tokenize(query))
        def_weight = config.symbol_definition_weight if is_symbol_query(query) else config.definition_weight
        if def_weight:
            for word in dict.fromkeys(w.lower() for w in words):
                weights[DEF + word] += def_weight
        depth = max(config.candidates, top_k)
        # A filter decides later which documents count, so the k best cannot be known while
        # scoring: prune only unfiltered queries.
        scores = score(views, weights, self.params, self._n_docs, self._avgdl, k=depth if allow is None else 0)
        allowed = None
        if allow is not None:
            allowed = [_AllowedDocs(v.segment, allow) for v in views]
        first = best_hits(views, scores, depth, allowed)
        lowered = {w.lower() for w in words}
        scored = []
        for value, i, d in first:
            seg = views[i].segment
            path, _language, kind = seg.files[seg.doc_file[d]]
            scored.append((value * path_prior(path, kind, lowered, config), path, (i, d)))
        hits = []
        for rank, (value, (i, d)) in enumerate(rank_files(scored, config)[:top_k], start=1):
            seg = views[i].segment
            path = seg.files[seg.doc_file[d]][0]
            start, end = seg.starts[d] or None, seg.ends[d] or None
            docid = seg.docids[d] if seg.docids is not None else chunk_docid(path, start, end)
            hits.append(SearchHit(docid, path, start, end, rank, value, self._contexts.get(docid, "")))
        return hits

    # -- the persistent index (used by the service) ----------------------------------------

    def open_store(self, directory: str, state: dict) -> "LexicalRetriever":
        index = LexicalIndex(directory, state)
        self._views = index.views()
        self._n_docs = index.n_docs
        self._avgdl = index.avgdl
        self._contexts = {}
        return self

    def update_store(
        self, directory: str, state: dict | None, removed_paths, added: Iterable[tuple[SourceFile, list[Chunk]]]
    ) -> dict:
        """Remove removed_paths; each (file, chunks) of `added` replaces that file's documents (no
        chunks: they just go). `added` is consumed lazily, one file at a time."""
        index = LexicalIndex(directory, state or empty_state(directory))
        weight = self.ranking.path_weight
        files = (
            (f.path, f.language, f.kind, [(c.start_line, c.end_line, c.text, c.context) for c in chunks], weight)
            for f, chunks in added
        )
        # Term extraction is most of the work of a build: spread it over worker processes.
        return index.apply(removed_paths, ordered_map(_file_documents, files))

    def check_store(self, directory: str, state: dict) -> None:
        """Raise when a segment the state names is missing or torn (sizes are checked on open)."""
        LexicalIndex(directory, state).views()

    def collect_garbage(self, directory: str, state: dict) -> None:
        LexicalIndex(directory, state).collect_garbage(state)


def _file_documents(item):
    """(path, language, kind, chunk spans and texts, path weight) -> what LexicalIndex.apply takes."""
    path, language, kind, chunks, path_weight = item
    return path, language, kind, [
        (start, end, chunk_terms(path, text, context, path_weight)) for start, end, text, context in chunks
    ]


class _AllowedDocs:
    """A lazy `doc in allowed` test: the filter runs once per file, not once per document."""

    def __init__(self, segment, allow):
        self._segment = segment
        self._allow = allow
        self._verdicts: dict[int, bool] = {}

    def __contains__(self, d: int) -> bool:
        fid = self._segment.doc_file[d]
        verdict = self._verdicts.get(fid)
        if verdict is None:
            path, language, kind = self._segment.files[fid]
            verdict = self._verdicts[fid] = bool(self._allow(path, language, kind))
        return verdict
