"""`hybrid`: the lexical and the dense arm over the same chunks, fused, then ranked once.

Each arm returns its raw candidates (BM25 scores before any ranking signal; exact cosines); the
fusion (retrieval.fusion.score_fusion) weighs them by how far each arm can be trusted for this
query; then the lexical ranking signals (path priors, file-name agreement, definers of a report's
symbols, one chunk per file first) apply once, to the fused score.

Both arms live in this retriever's own store directory (lexical/ and dense/), under one manifest,
so one commit makes both current together. The chunk source is the lexical arm's: the line chunker
(see `lexical_arm` for why not the syntax-aware chunks).
"""
from __future__ import annotations

import os
import queue
import threading
from typing import Iterable

from ..confidence import assess, query_evidence
from ..fusion import TrustConfig, lexical_trust, score_fusion
from ..query import split_keyword
from ..ranking import RankingConfig, rank_candidates, spells_file_name
from ..records import Chunk, Document, SearchHit, SourceFile
from .base import NOT_INDEXED, check_documents, check_search_args
from .dense import DenseRetriever
from .lexical import LexicalRetriever, _definers, _defining, doc_docid, phrase_factors, reading_snapshot, scope_factors

LEXICAL, DENSE = "lexical", "dense"
DENSE_DEPTH = 100  # dense candidates fused per query


def lexical_arm() -> LexicalRetriever:
    """The lexical arm: `lexical` over line chunks, whose chunks both arms index. Measured against
    the `treesitter` retriever's syntax-aware chunks as the arm (same fusion, same ranking):
    semble-dev, all 38 repositories, 0.8954 against 0.8974 (+0.002, 95% interval -0.006 to +0.012:
    56 queries up, 48 down); CoSQA dev MRR 53.1 against 52.0. No gain either way worth a parse
    of every file and an index that changes with what is installed."""
    return LexicalRetriever()


class HybridRetriever:
    name = "hybrid"

    def __init__(self, ranking: RankingConfig | None = None, trust: TrustConfig | None = None,
                 lexical: LexicalRetriever | None = None, **dense_options):
        self.lexical = lexical or lexical_arm()
        if ranking is not None:
            self.lexical.ranking = ranking
        self.ranking = self.lexical.ranking
        self.trust = trust or TrustConfig()
        self.dense = DenseRetriever(**dense_options)
        # The lexical arm extracts terms in-process (see update_store). Said to the arm itself, not
        # through RETRIEVAL_JOBS: two refreshes in two threads restored each other's value.
        self.lexical.jobs = 1
        self._lex_views = None

    def use_profile(self, profile: str) -> None:
        """The lexical arm's profile (prose: Lucene's analyzer and BM25 defaults); the dense arm reads
        prose as it reads code."""
        self.lexical.use_profile(profile)
        self.dense.use_profile(profile)

    def chunk_file(self, text: str, f: SourceFile, options) -> list[Chunk]:
        own = getattr(self.lexical, "chunk_file", None)
        return own(text, f, options) if own is not None else options.chunk(text, f)

    def fingerprint(self) -> dict:
        return {LEXICAL: dict(self.lexical.fingerprint(), arm=self.lexical.name), DENSE: self.dense.fingerprint()}

    # -- the in-memory API -----------------------------------------------------------------

    def index(self, documents: Iterable[Document]) -> None:
        """Both arms over the same documents, in memory (the dense arm searched exactly)."""
        documents = check_documents(documents)
        self.lexical.index(documents)
        self.dense.index(documents)
        self._lex_views = self.lexical._views

    # -- the persistent index -------------------------------------------------------------

    def _dirs(self, directory: str) -> tuple[str, str]:
        lex, den = os.path.join(directory, LEXICAL), os.path.join(directory, DENSE)
        for arm in (lex, den):
            if os.path.islink(arm) or (os.path.lexists(arm) and not os.path.isdir(arm)):
                # Something put in an arm's place inside our store (a file, a link): every refresh,
                # rebuilds included, failed on it with "File exists". Removed, never followed.
                os.unlink(arm)
            os.makedirs(arm, exist_ok=True)
        return lex, den

    def update_store(self, directory: str, state: dict | None, removed_paths,
                     added: Iterable[tuple[SourceFile, list[Chunk]]], *, purge: bool = False) -> dict:
        """Both arms from one pass over the changed files: the dense arm embeds in this thread
        (torch leaves the interpreter while it computes) and hands each file to the lexical arm
        in a second thread. No worker processes: forking beside a running model is unsafe."""
        from ..vectors.build import update

        lex_dir, dense_dir = self._dirs(directory)
        removed_paths = list(removed_paths)
        state = state or {}
        handoff: queue.Queue = queue.Queue(maxsize=64)
        done = object()
        result: dict = {}
        ended = threading.Event()  # the lexical side has taken `done`: nothing more will come

        def files():
            while not ended.is_set():
                item = handoff.get()
                if item is done:
                    ended.set()
                    return
                yield item

        def lexical_side():
            try:
                result[LEXICAL] = self.lexical.update_store(lex_dir, state.get(LEXICAL), removed_paths, files(),
                                                            purge=purge)
            except BaseException as exc:  # raised in the caller's thread below
                result["error"] = exc
                # Keep draining so the producer never blocks, unless the input had already ended (a
                # failure while writing, such as a full disk): then waiting for more would hang.
                for _ in files():
                    pass

        def tee():
            for item in added:
                handoff.put(item)
                yield item

        worker = threading.Thread(target=lexical_side, name="hybrid-lexical", daemon=True)
        worker.start()
        try:
            dense_state = update(dense_dir, state.get(DENSE), removed_paths, tee(), embedder=self.dense.embedder,
                                 bits=self.dense.bits, label=self.name)
        finally:
            handoff.put(done)
            worker.join()
        if "error" in result:
            raise result["error"]
        return {LEXICAL: result[LEXICAL], DENSE: dense_state}

    def check_store(self, directory: str, state: dict) -> None:
        # Read only (`status` calls it without the lock): _dirs removed and created arms, so a
        # status rewrote the store. An arm that is not a directory is damage; the rebuild fixes it.
        lex_dir, dense_dir = os.path.join(directory, LEXICAL), os.path.join(directory, DENSE)
        for arm in (lex_dir, dense_dir):
            if os.path.islink(arm) or not os.path.isdir(arm):
                raise ValueError(f"{os.path.basename(arm)} is not a directory")
        self.lexical.check_store(lex_dir, state[LEXICAL])
        self.dense.check_store(dense_dir, state[DENSE])

    def collect_garbage(self, directory: str, state: dict, *, keep_resumable: bool = False) -> None:
        lex_dir, dense_dir = self._dirs(directory)
        self.lexical.collect_garbage(lex_dir, state[LEXICAL] if state is not None else None, keep_resumable=keep_resumable)
        self.dense.collect_garbage(dense_dir, state[DENSE] if state is not None else None, keep_resumable=keep_resumable)

    def open_store(self, directory: str, state: dict) -> "HybridRetriever":
        lex_dir, dense_dir = os.path.join(directory, LEXICAL), os.path.join(directory, DENSE)
        self.lexical.open_store(lex_dir, state[LEXICAL])
        self.dense.open_store(dense_dir, state[DENSE])
        self._lex_views = self.lexical._views
        return self

    # -- searching -------------------------------------------------------------------------

    def search(self, query: str, top_k: int = 10) -> list[str]:
        return [h.docid for h in self.search_detailed(query, top_k)]

    def search_detailed(self, query: str, top_k: int = 10, *, allow=None) -> list[SearchHit]:
        check_search_args(query, top_k)
        if self._lex_views is None:
            raise RuntimeError(NOT_INDEXED)
        with reading_snapshot(self.name):
            keyword, text = split_keyword(query)
            return self._search_detailed(text, top_k, allow, keyword)

    def _search_detailed(self, query: str, top_k: int, allow, keyword: str = "") -> list[SearchHit]:
        config = self.ranking
        views = self._lex_views
        plan, first = self.lexical.first_stage(query, max(config.candidates, top_k), allow, keyword)
        dense = self.dense.candidates(query, max(DENSE_DEPTH, top_k), allow)
        lex_scores: dict[tuple, float] = {}
        docs: dict[tuple, tuple] = {}
        generated = set()  # the dense arm embeds no generated file, so the lexical arm knows them all
        for value, i, d in first:
            seg = views[i].segment
            fid = seg.doc_file[d]
            path, language, kind = seg.files[fid]
            if fid in seg.generated:
                generated.add(path)
            # Keyed by docid too: in memory several documents of one file may share a span (none).
            key = (path, seg.starts[d], seg.ends[d], doc_docid(seg, d, path))
            lex_scores[key] = value
            docs[key] = (kind, (i, d), language)
        dense_scores: dict[tuple, float] = {}
        for c in dense:
            key = (c.path, c.start_line, c.end_line, self.dense.candidate_docid(c))
            dense_scores[key] = c.score
            docs.setdefault(key, (c.kind, None, c.language))
        kind = "symbol" if plan.symbol is not None else "long" if plan.long else "sentence"
        best = max(lex_scores.items(), key=lambda item: (item[1], item[0]), default=None)
        share = lexical_trust(kind, list(lex_scores.values()), list(dense_scores.values()), self.trust,
                              names_file=best is not None and spells_file_name(query, best[0][0]))
        rank_weight = self.trust.rank_weight if kind != "symbol" else 0.0
        fused = score_fusion(lex_scores, dense_scores, share, rank_weight=rank_weight, rank_k=self.trust.rank_k)
        definers = _definers(views, plan.named) if plan.named and config.long_query_definer_boost else {}
        scoped = scope_factors(views, query, first, config)
        quoted = phrase_factors(views, plan, first, config)
        framed, vouched = self.lexical.frame_evidence(plan, ((key, *key[:3], docs[key][1]) for key in fused))
        mentioned = self.lexical.mentioned(plan)
        defining = _defining(views, plan)

        def ranked_by(scores: dict) -> list:
            return rank_candidates([(value * scoped.get(docs[key][1], 1.0) * quoted.get(docs[key][1], 1.0)
                                     * framed.get(key, 1.0), key[0], docs[key][0],
                                     key) for key, value in scores.items()], plan, config, definers, mentioned,
                                   frozenset(generated), {key[0]: docs[key][2] for key in scores}, defining)

        ranked = ranked_by(fused)
        return self._hits(query, plan, ranked, ranked_by(lex_scores), docs, top_k,
                          {docs[key][1] for key in vouched if docs[key][1] is not None})

    def _hits(self, query, plan, ranked, lexical_order, docs, top_k, vouched=frozenset()) -> list[SearchHit]:
        """SearchHits of the fused ranking, each graded as the lexical ranking of the same
        candidates grades it (`lexical_order`): confidence comes from a hit's lexical evidence (a
        dense-only hit has none to show). Graded by its place in the fused list, the embedding's
        favourite, a near-duplicate message the lexical arm put far behind, was `high` at rank 1 and
        the exact match it overturned `low`."""
        forms, defined = query_evidence(query, plan.symbol is not None)
        shown = {key for _value, key in ranked[:top_k]}
        # Every candidate down to the last shown, not only the top_k: the runner-up a level weighs
        # must not depend on how many hits were asked for (with -k 1 there was none, and the first
        # hit read as clearly ahead).
        depth = max((n for n, (_value, key) in enumerate(lexical_order, start=1) if key in shown), default=0)
        lexical_ranked = [(value, docs[key][1]) for value, key in lexical_order]
        levels = assess(self._lex_views, self.lexical._n_docs, forms, defined, lexical_ranked, max(depth, 1), vouched)
        level_of = {docs_key: level for (_v, docs_key), level in zip(lexical_ranked, levels)}
        hits = []
        for rank, (value, key) in enumerate(ranked[:top_k], start=1):
            path, start, end, docid = key
            start, end = start or None, end or None
            kind, lexical_doc, language = docs[key]
            hits.append(SearchHit(docid, path, start, end, rank, value,
                                  confidence=level_of.get(lexical_doc, "low") if lexical_doc else "low",
                                  language=language, kind=kind))
        return hits
