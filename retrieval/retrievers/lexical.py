"""`lexical`: BM25 over code-aware terms. Standard library only."""
from __future__ import annotations

import contextlib
import os
from array import array
from collections import Counter
from dataclasses import replace
from functools import partial
from itertools import compress, groupby
from typing import Iterable

from .. import prose, stem
from ..confidence import assess, in_postings, query_evidence
from ..lexical.bm25 import BM25Params, SegmentView, best_hits, idf, in_order, live_count, score
from ..lexical.index import LexicalIndex, empty_state
from ..lexical.segment import CorruptSegment, MemorySegment, SegmentBuilder
from ..lexical import features
from ..lexical.features import chunk_terms, exact_def_term, member_owners
from ..chunking import lines
from ..generated import VERSION as GENERATED_VERSION
from ..query import QueryPlan, plan_query, split_keyword
from ..text import tokenize
from ..ranking import (RankingConfig, frame_spots, frame_weight, is_test_path, member_named, mention_evidence,
                       paths_by_name, qualified_name, rank_candidates, scope_agrees, test_words)
from ..parallel import ordered_map
from ..records import Chunk, Document, SearchHit, SourceFile, chunk_docid
from .base import NOT_INDEXED, Released, check_bm25, check_documents, check_search_args, marked_paths, term_versions

CODE, PROSE = "code", "prose"
PROFILES = (CODE, PROSE)
KEPT_FILTERS = 8  # filters whose per-file verdicts an open index keeps (_allowed): 1.3 MB each at 19,000 files


def doc_docid(seg, d: int, path: str) -> str:
    """A segment document's docid: the in-memory Document's own, else the store's `path:start-end`."""
    return seg.docids[d] if seg.docids is not None else chunk_docid(path, seg.starts[d] or None, seg.ends[d] or None)


@contextlib.contextmanager
def reading_snapshot(name: str):
    """Segments' files are read as a query needs them: an engine kept open (the Python API) while
    refreshes went on finds its snapshot's segments collected. Said as Released (the service opens
    the newer snapshot and searches again), not as a missing post.bin."""
    try:
        yield
    except FileNotFoundError as exc:
        gone = os.path.dirname(exc.filename or "")
        if gone and os.path.basename(gone).startswith("seg-") and not os.path.isdir(gone):
            raise Released(f"this {name} index was replaced by a newer snapshot (its segment "
                           f"{os.path.basename(gone)} was collected): open it again") from None
        raise


# How much more often than the index's files the files holding a test word must be tests for the
# word to ask for tests, as a share of the way to all of them (LexicalRetriever._words_of_the_code)
TEST_WORD_MARGIN = 0.2
TEST_WORD_SAMPLE = 2_000


def _test_share(paths: list[str]) -> float:
    """The share of test files among paths, over at most TEST_WORD_SAMPLE of them, evenly spread."""
    step = max(1, -(-len(paths) // TEST_WORD_SAMPLE))
    sample = paths[::step]
    return sum(map(is_test_path, sample)) / max(len(sample), 1)


class LexicalRetriever:
    name = "lexical"

    jobs: int | None = None  # worker processes extracting terms in a build; None: parallel.default_jobs()
    # BM25 reads a chunk shorter than this many terms as this long (0: as long as it is).
    length_floor = 0

    def __init__(self, k1: float | None = None, b: float | None = None, ranking: RankingConfig | None = None,
                 profile: str = CODE):
        check_bm25(k1, b, none_is_default=True)
        self._bm25 = (k1, b)  # None: the profile's default (a prose profile overwrote a k1 given with it)
        self.ranking = ranking or RankingConfig()
        self.profile = CODE
        self.params = self._params()
        self._views: list[SegmentView] | None = None
        self._names = None  # (views, paths_by_name of their files), for the paths queries write out
        self._verdicts = None  # (views, {filter's verdict_key: [_AllowedDocs per view]}): see _allowed
        self._domain = None  # (views, {word: a word of the code?}, the share of test files): _words_of_the_code
        self._defined_names: tuple = (None, frozenset())  # (views, the names they define): spelt_like
        self._n_docs = 0
        self._total_len = 0
        self._avgdl = 0.0
        if profile != CODE:
            self.use_profile(profile)

    def use_profile(self, profile: str) -> None:
        """`code` (the default): code-aware terms and ranking. `prose`: Lucene's English analyzer
        and plain BM25 with Lucene's defaults (k1=0.9, b=0.4 unless given), no code-specific signal."""
        if profile not in PROFILES:
            raise ValueError(f"unknown profile {profile!r}; choose one of: {', '.join(PROFILES)}")
        self.profile = profile
        self.params = self._params()

    def _params(self) -> BM25Params:
        """BM25's k1 and b: those given, else the profile's (code 1.2 and 0.75, prose Lucene's 0.9 and 0.4)."""
        k1, b = self._bm25
        default = BM25Params(k1=0.9, b=0.4) if self.profile == PROSE else BM25Params()
        return BM25Params(k1=default.k1 if k1 is None else k1, b=default.b if b is None else b)

    def fingerprint(self) -> dict:
        # What the stored postings depend on; query-time ranking settings are not part of it.
        if self.profile == PROSE:
            return {"profile": PROSE, "terms": {"prose": prose.VERSION, "stem": stem.VERSION}}
        return {"k1": self.params.k1, "b": self.params.b, "path_weight": self.ranking.path_weight,
                "pairs": self._pairs(), "chunks": self.chunking(),
                "terms": term_versions(),
                "generated": GENERATED_VERSION}

    def chunking(self) -> dict:
        """What this retriever's chunk boundaries depend on (a dense index of its chunks says so too)."""
        return {"lines": lines.VERSION}

    def _terms(self, path: str, text: str, context: str, language: str = "", definitions=None,
               owners=None) -> Counter:
        if self.profile == PROSE:
            return prose.term_counts(text)
        return chunk_terms(path, text, context, self.ranking.path_weight, language, definitions, owners,
                           self._pairs())

    def _pairs(self) -> bool:
        """Whether chunks are indexed with their identifiers' pair terms: only when questions ask
        for them (with the weight 0 the index is exactly as it was without them)."""
        return bool(self.ranking.identifier_pair_weight)

    def _search_views(self, views: list[SegmentView]) -> list[SegmentView]:
        if self.profile == PROSE:
            length = lucene_length
        elif self.length_floor:
            length = partial(max, self.length_floor)
        else:
            return views
        return [SegmentView(_ReadLengths(v.segment, length), v.deleted) for v in views]

    # -- the in-memory API -----------------------------------------------------------------

    def index(self, documents: Iterable[Document]) -> None:
        builder = SegmentBuilder()
        # In file and line order whatever order they come in: a file's chunks are read together
        # (_owner_lists), and the same set of documents must rank the same way.
        documents = sorted(check_documents(documents),
                           key=lambda d: (d.source_path, d.start_line or 0, d.end_line or 0, d.docid))
        owners = _owner_lists(documents)
        generated = marked_paths(documents)  # ranked as the store ranks them
        for doc, owned in zip(documents, owners):
            context = self.indexed_context(doc, doc.source_path)
            counts = self._terms(doc.source_path or doc.docid, doc.text, context, doc.language, doc.definitions, owned)
            builder.add(
                doc.source_path or doc.docid, doc.language, doc.kind,
                doc.start_line or 0, doc.end_line or 0, counts, docid=doc.docid, meta=_meta(doc),
                generated=(doc.source_path or doc.docid) in generated,
            )
        segment = MemorySegment(builder)
        self._views = self._search_views([SegmentView(segment)])
        self._n_docs = segment.n_docs
        self._total_len = sum(segment.lens)
        self._avgdl = (self._total_len / segment.n_docs) if segment.n_docs else 0.0

    def search(self, query: str, top_k: int = 10) -> list[str]:
        return [hit.docid for hit in self.search_detailed(query, top_k)]

    def search_detailed(self, query: str, top_k: int = 10, *, allow=None) -> list[SearchHit]:
        """Ranked hits. `allow(path, language, kind) -> bool` filters before ranking."""
        check_search_args(query, top_k)
        if self._views is None:
            raise RuntimeError(NOT_INDEXED)
        with reading_snapshot(self.name):
            keyword, text = split_keyword(query)
            return self._search_detailed(text, top_k, allow, keyword)

    def _search_detailed(self, query: str, top_k: int, allow, keyword: str = "") -> list[SearchHit]:
        if self.profile == PROSE:
            return self._search_prose(query, top_k, allow)
        views = self._views
        config = self.ranking
        plan, first = self.first_stage(query, max(config.candidates, top_k), allow, keyword)
        definers = _definers(views, plan.named) if plan.named and config.long_query_definer_boost else {}
        scoped = scope_factors(views, query, first, config)
        quoted = phrase_factors(views, plan, first, config)
        framed, vouched = self.frame_evidence(plan, (((i, d), _path(views, i, d), views[i].segment.starts[d],
                                             views[i].segment.ends[d], (i, d)) for _, i, d in first))
        candidates = []
        generated = set()
        languages = {}
        for value, i, d in first:
            seg = views[i].segment
            fid = seg.doc_file[d]
            path, languages[path], kind = seg.files[fid]
            if fid in seg.generated:
                generated.add(path)
            candidates.append((value * scoped.get((i, d), 1.0) * quoted.get((i, d), 1.0) * framed.get((i, d), 1.0),
                               path, kind, (i, d)))
        ranked = rank_candidates(candidates, plan, config, definers, self.mentioned(plan), frozenset(generated),
                                 languages, _defining(views, plan))
        forms, defined = query_evidence(query, plan.symbol is not None)
        levels = assess(views, self._n_docs, forms, defined, ranked, top_k, vouched)
        return self._hits(views, ranked, levels, query if plan.symbol is not None else "")

    def _paths_by_name(self) -> dict[str, list[str]]:
        views = self._views
        if self._names is None or self._names[0] is not views:  # built once per opened index
            self._names = (views, paths_by_name(_live_paths(views)))
        return self._names[1]

    def _allowed(self, allow) -> list:
        """Per view, which of its documents `allow` lets through (_AllowedDocs.flags). The verdicts
        of a filter that names what they depend on (QueryFilter.compile's `verdict_key`) are kept
        while this index stays open: a warm server asked every file again each query (30 ms of
        a 50 ms query at 19,000 files)."""
        views = self._views
        key = getattr(allow, "verdict_key", None)
        if key is None:
            return [_AllowedDocs(v.segment, allow).flags for v in views]
        if self._verdicts is None or self._verdicts[0] is not views:
            self._verdicts = (views, {})
        kept = self._verdicts[1]
        docs = kept.get(key)
        if docs is None:
            if len(kept) >= KEPT_FILTERS:
                kept.clear()  # (a few filters come back; a long-lived server may see many)
            docs = kept[key] = [_AllowedDocs(v.segment, allow) for v in views]
        return [d.flags for d in docs]

    def mentioned(self, plan) -> dict[str, float]:
        """{path: evidence that the query names the file} for the paths it writes out."""
        return mention_evidence(plan.mentions, self._paths_by_name()) if plan.mentions else {}

    def frame_spots(self, plan) -> dict[str, list[tuple[int, str, int]]]:
        """{indexed path: [(line, function, depth)]} of the stack frames the query pastes."""
        return frame_spots(plan.frames, self._paths_by_name()) if plan.frames else {}

    def frame_evidence(self, plan, chunks) -> tuple[dict, set]:
        """({key: 1 + frame_boost * weight}, vouched keys) for the chunks (an iterable of (key, path,
        start, end, (view, doc) or None), read only when the query pastes a frame) where a pasted
        stack frame is: the chunk holding its line, or defining its function, in its file. Vouched
        for (confidence.assess): a chunk defining a frame's function in a file the frame names, or
        holding its line in the one file its path names, which defines its function. A line in
        one of rails's fourteen `base.rb`, or in click's `utils.py` of a trace through requests'
        (`in get_netrc_auth`), vouches for nothing."""
        spots = self.frame_spots(plan)
        if not spots:
            return {}, set()
        views = self._views
        defining = _function_definers(views)

        def defines(ids, function: str) -> bool:
            return ids is not None and defining(*ids, function)

        # The lines frames vouch for: of the one file a frame's path names, which defines the
        # frame's function (if it names one; in click, `utils.py` of a trace through requests' does not).
        sure_lines: dict[str, set[int]] = {}
        for frame_path, line, function, _trace in plan.frames:
            named = mention_evidence((frame_path,), self._paths_by_name())
            if len(named) == 1 and (not function or set(named) & set(_definers(views, (features.def_term(function),)))):
                sure_lines.setdefault(next(iter(named)), set()).add(line)

        def inside(ids, function: str) -> bool:
            # A chunk whose scope is the function (a syntax-aware chunk of a long function's body,
            # `Command.main`, its scope's lines known) holding the frame's line is the frame's as
            # surely as its head: the head came first on the tie. Line chunks know no scope (a
            # context written for them is prose): a chunk below the definition may be another
            # function's, where the line has moved (left at the tie).
            meta = views[ids[0]].segment.meta(ids[1]) if ids is not None else None
            return bool(meta) and meta[3] > 0 and scope_agrees(meta[0], (function,), exact=True)

        factors, vouched = {}, set()
        for key, path, start, end, ids in chunks:
            here = spots.get(path)
            if not here:
                continue
            weight = frame_weight(here, start or 0, end or 0, lambda function: defines(ids, function),
                                  lambda function: inside(ids, function))
            if weight:
                factors[key] = 1.0 + self.ranking.frame_boost * weight
                if any(function and defines(ids, function) for _line, function, _depth in here) or \
                        any((start or 0) <= line <= (end or 0) for line in sure_lines.get(path, ())):
                    vouched.add(key)
        return factors, vouched

    def first_stage(self, query: str, depth: int, allow=None, keyword: str = ""):
        """(query plan, [(BM25 score, view index, doc)] best first): the candidates before any
        ranking signal (a hybrid fuses these with another arm, then ranks once)."""
        views = self._views
        config = self.ranking
        if self.profile == PROSE:  # the prose analyzer's terms, no code-specific query plan
            plan = QueryPlan(dict(Counter(prose.analyze(query))), frozenset(), None, False)
        else:
            plan = plan_query(query, config, keyword)
            domain = self._words_of_the_code(test_words(plan.asked))
            if domain:
                plan = replace(plan, asked=plan.asked - domain)
        # The filter applies while scoring, so pruning keeps the best allowed documents and
        # filtered queries are no slower than unfiltered ones.
        allowed = None if allow is None else self._allowed(allow)

        def best(allowed) -> list:
            scores = score(views, plan.weights, self.params, self._n_docs, self._avgdl,
                           config.long_query_min_idf if plan.long else 0.0, k=depth, allowed=allowed)
            return best_hits(views, scores, depth)

        first = _spread(views, best, allowed, depth, max(config.file_candidates, depth // 4))
        return plan, self._with_frame_lines(plan, first, allowed) if plan.frames else first

    def _with_frame_lines(self, plan, first: list, allowed) -> list:
        """`first` with the chunk holding each pasted frame's line among the candidates, scored at
        least as the best candidate of its file, or as the last candidate if it has none
        (frame_evidence then lifts it): the other files holding the query's words filled the
        candidates, the line's chunk holding none of them (`gin.go:364` gave gin.go's first chunk, the
        line's nowhere in the first ten), or a short namesake out-scored it (treesitter's 13-line
        `Group.parse_args` above the `Command.parse_args` holding the frame's line). Of a frame naming
        a function the file defines, not a line above every definition of it: the line has moved
        since, and the chunk now holding it is another function's (click's `get_short_help_str` came
        above `make_context`, defined 70 lines lower). A line below a definition may be deep inside
        it (a long function's later chunks define nothing: `getValue`'s line 520, 100 lines in)."""
        spots = self.frame_spots(plan)
        if not spots:
            return first
        views = self._views
        best: dict[str, float] = {}
        for value, i, d in first:
            path = _path(views, i, d)
            best[path] = max(best.get(path, 0.0), value)
        last = first[-1][0] if first else 1.0  # (nothing matched: a score the frame boost can lift)
        wanted = {path: [(line, function) for line, function, _depth in spots[path] if line] for path in spots}
        at = {(i, d): n for n, (_, i, d) in enumerate(first)}
        raised = list(first)
        # Where the file defines each frame's function: a line above all of them has moved.
        defined_from = _first_definitions(views, spots, _function_definers(views))
        for i, view in enumerate(views):
            seg = view.segment
            for path, docs in _docs_of(seg, wanted):
                docs = [d for d in docs if d not in view.deleted
                        and any(seg.starts[d] <= line <= seg.ends[d] and line >= defined_from[path].get(function, 0)
                                for line, function in wanted[path])]
                if docs and allowed is not None:
                    docs = list(compress(docs, allowed[i](docs)))
                for d in docs:
                    value = best.get(path, last)
                    if (i, d) not in at:
                        raised.append((value, i, d))
                    elif raised[at[(i, d)]][0] < value:
                        raised[at[(i, d)]] = (value, i, d)
        return in_order(views, raised) if raised != first else first

    def _words_of_the_code(self, words) -> set[str]:
        """Of the words that ask for tests, those the project's tests do not write much more often
        than its other files (the share of tests among the files holding one is within
        TEST_WORD_MARGIN of the way from the index's share of tests to all): in a test runner
        (vitest) `test` and `mock` name what the code is about, and a question using them found
        test files first; `spec` is often an OpenAPI one. Shares are taken over at most
        TEST_WORD_SAMPLE paths, every n-th in the index's order (a 50,000-file index classified
        each path on a cold query)."""
        views = self._views
        if not words or not views:
            return set()
        if self._domain is None or self._domain[0] is not views:  # once per opened index
            paths = list(dict.fromkeys(seg.files[f][0] for seg in (v.segment for v in views)
                                       for f in dict.fromkeys(seg.doc_file)))
            self._domain = (views, {}, _test_share(paths))
        known, share = self._domain[1], self._domain[2]
        for word in words - known.keys():
            holding: dict[str, None] = {}
            for term in dict.fromkeys(tokenize(word)):
                for view in views:
                    plist = view.segment.postings(term)
                    if plist is not None:
                        seg = view.segment
                        holding.update((seg.files[seg.doc_file[d]][0], None) for d in plist[0] if d not in view.deleted)
            known[word] = bool(holding) and _test_share(list(holding)) <= share + TEST_WORD_MARGIN * (1 - share)
        return {word for word in words if known[word]}

    def _hits(self, views, ranked, levels, symbol_query: str = "") -> list[SearchHit]:
        """SearchHits for ranked [(score, (view index, doc))], as many as there are levels. A hit
        a symbol query finds among a chunk's other definitions is labelled by that definition."""
        hits = []
        for rank, ((value, (i, d)), confidence) in enumerate(zip(ranked, levels), start=1):
            seg = views[i].segment
            path, language, kind = seg.files[seg.doc_file[d]]
            start, end = seg.starts[d] or None, seg.ends[d] or None
            if start and end and start > end and not isinstance(seg, MemorySegment):
                # A span no chunker writes: the segment's bytes changed where its size does not show.
                raise CorruptSegment(f"segment {os.path.basename(seg.directory)} holds a span {start}-{end}")
            docid = doc_docid(seg, d, path)
            context, chunk_kind, symbol, scope_start, scope_end, members = seg.meta(d) or _NO_META
            named = member_named(symbol_query, context, symbol, members) if symbol_query else None
            if named is not None:
                symbol, context, chunk_kind = named
            # A symbol query's label is the definition it names, in its letter case (above); a
            # question's is chosen by where its words are (retrieval.labels, given the lines).
            beside = () if symbol_query else _with_lines(members)
            hits.append(SearchHit(docid, path, start, end, rank, value, context, confidence, language=language,
                                  kind=chunk_kind or kind, symbol=symbol,
                                  scope=_scope(scope_start, scope_end), members=beside))
        return hits

    def term_weights(self, terms) -> dict[str, float]:
        """Each of `terms` the open index holds, weighted by its idf over the live documents (what
        retrieval.labels weighs a query's words by)."""
        views = self._views
        if views is None:
            raise RuntimeError(NOT_INDEXED)
        n = max(self._n_docs, 1)
        weights = {}
        with reading_snapshot(self.name):
            for term in set(terms):
                df = 0
                for view in views:
                    plist = view.segment.postings(term)
                    if plist is not None:
                        df += live_count(view, plist[0])
                if df:
                    weights[term] = idf(n, df)
        return weights

    def spelt_like(self, word: str, limit: int = 3) -> list[str]:
        """Up to `limit` names the open index's live chunks define, spelt like `word` (a letter or two
        off, in any naming style): what a note offers for an identifier the index does not hold."""
        from ..spelling import spelt_like

        views = self._views
        if views is None:
            raise RuntimeError(NOT_INDEXED)
        prefix = exact_def_term("")
        with reading_snapshot(self.name):
            # Read once per snapshot (rails: 74,000 names, 0.35 s): a server asked again reuses them.
            names = self._defined_names if self._defined_names[0] is views else None
            if names is None:
                names = self._defined_names = (views, frozenset(
                    term[len(prefix):] for view in views for term in view.segment.terms_unordered()
                    if term.startswith(prefix)))
            found = spelt_like(word, names[1], limit=None)  # (ties go by name: any order)
        held = self.term_weights([exact_def_term(name) for name in found])  # defined by a live chunk
        return [name for name in found if exact_def_term(name) in held][:limit]

    def chunk_labels(self, paths) -> dict[str, list[tuple]]:
        """{path: [(start, end, context, kind, symbol, scope, members)]} of the open index's chunks of
        these files that carry a label (a syntax chunker's), in line order: what another retriever's
        span of the file is labelled by (`--retriever all`)."""
        views = self._views
        if views is None:
            raise RuntimeError(NOT_INDEXED)
        wanted = set(paths)
        out: dict[str, list[tuple]] = {}
        with reading_snapshot(self.name):
            for view in views:
                seg = view.segment
                spans = getattr(seg, "file_spans", None)
                if spans is None:
                    continue
                for path, first, count in spans():
                    if path not in wanted or first in view.deleted:
                        continue
                    for d in range(first, first + count):
                        meta = seg.meta(d)
                        if meta and seg.starts[d]:
                            context, kind, symbol, scope_start, scope_end, members = meta
                            out.setdefault(path, []).append((seg.starts[d], seg.ends[d], context, kind, symbol,
                                                             _scope(scope_start, scope_end), _with_lines(members)))
        for labels in out.values():
            labels.sort(key=lambda row: (row[0], row[1]))
        return out

    def statistics(self) -> dict:
        """Documents, distinct terms and term occurrences of the open index (with the code
        profile, path and definition terms are terms too). Reads the whole lexicon."""
        if self._views is None:
            raise RuntimeError(NOT_INDEXED)
        terms: set[str] = set()
        for view in self._views:
            for term in view.segment.terms():
                if term in terms:
                    continue
                if view.deleted and all(d in view.deleted for d in view.segment.postings(term)[0]):
                    continue
                terms.add(term)
        return {"documents": self._n_docs, "unique_terms": len(terms), "total_terms": self._total_len}

    def _search_prose(self, query: str, top_k: int, allow) -> list[SearchHit]:
        """Plain BM25 over the prose analyzer's terms: Lucene's ranking, ties by path."""
        views = self._views
        weights = Counter(prose.analyze(query))
        # One more than asked: the runner-up's score is a confidence signal.
        depth = top_k + 1
        allowed = None if allow is None else self._allowed(allow)
        scores = score(views, weights, self.params, self._n_docs, self._avgdl, k=depth, allowed=allowed)
        ranked = [(value, (i, d)) for value, i, d in best_hits(views, scores, depth)]
        levels = assess(views, self._n_docs, [((t,), False) for t in weights], (), ranked, top_k)
        return self._hits(views, ranked, levels)

    # -- the persistent index (used by the service) ----------------------------------------

    def open_store(self, directory: str, state: dict) -> "LexicalRetriever":
        index = LexicalIndex(directory, state)
        self._views = self._search_views(index.views())
        self._n_docs = index.n_docs
        self._total_len = state["total_len"]
        self._avgdl = index.avgdl
        return self

    def update_store(
        self, directory: str, state: dict | None, removed_paths, added: Iterable[tuple[SourceFile, list[Chunk]]],
        *, purge: bool = False,
    ) -> dict:
        """Remove removed_paths; each (file, chunks) of `added` replaces that file's documents (no
        chunks: they just go). `added` is consumed lazily, one file at a time."""
        index = LexicalIndex(directory, state or empty_state(directory))
        weight = self.ranking.path_weight
        pairs = self._pairs()
        files = (file_item(f.path, f.language, f.kind, chunks, self.indexed_context, weight, pairs, self.profile,
                           f.generated)
                 for f, chunks in added)
        # Term extraction is most of the work of a build: spread it over worker processes.
        return index.apply(removed_paths, ordered_map(_file_documents, files, jobs=self.jobs), purge=purge)

    def indexed_context(self, chunk, path: str) -> str:
        """The part of a chunk's (or document's) context indexed with its text (all of it here)."""
        return chunk.context

    def check_store(self, directory: str, state: dict) -> None:
        """Raise when a segment the state names is missing or torn (sizes are checked on open)."""
        LexicalIndex(directory, state).views()

    def collect_garbage(self, directory: str, state: dict, *, keep_resumable: bool = False) -> None:
        """Remove what `state` does not name (see service: after a commit, and before a rebuild;
        `keep_resumable` keeps what a killed build left for the next to resume from; None: nothing
        is committed)."""
        state = state if state is not None else {"segments": []}
        LexicalIndex(directory, state).collect_garbage(state)


def _defining(views, plan) -> frozenset[str] | None:
    """The paths defining the name a query asks for with a definition keyword (`def echo`) or as a
    qualified name's member (`Associations.has_many`): by its exact spelling. None for any other
    query."""
    return frozenset(_definers(views, (exact_def_term(plan.symbol),))) if plan.keyword or plan.owners else None


def _definers(views, def_terms) -> dict[str, float]:
    """{path: evidence that the file defines the symbols a report names}: each named symbol adds
    1 / (the number of files defining it), so a name defined once says more than `get`."""
    evidence: dict[str, float] = {}
    for term in def_terms:
        files = set()
        for view in views:
            plist = view.segment.postings(term)
            if plist is None:
                continue
            seg = view.segment
            files.update(seg.files[seg.doc_file[d]][0] for d in plist[0] if d not in view.deleted)
        for path in files:
            evidence[path] = evidence.get(path, 0.0) + 1.0 / len(files)
    return evidence


def _function_definers(views):
    """defines(view index, doc, function): whether that chunk defines the function (its definition
    term's postings read once per view and function)."""
    postings: dict[tuple[int, str], object] = {}

    def defines(i: int, d: int, function: str) -> bool:
        if (i, function) not in postings:
            plist = views[i].segment.postings(features.def_term(function))
            postings[(i, function)] = plist[0] if plist is not None else ()
        return in_postings(postings[(i, function)], d)

    return defines


def _first_definitions(views, spots, defines) -> dict[str, dict[str, int]]:
    """{path: {function: the first line of its first defining chunk in the file}} of the frames'
    named functions (absent: the file does not define it)."""
    found: dict[str, dict[str, int]] = {path: {} for path in spots}
    functions = {path: {function for _line, function, _depth in spots[path] if function} for path in spots}
    for i, view in enumerate(views):
        seg = view.segment
        for path, docs in _docs_of(seg, spots):
            for d in docs:
                if d in view.deleted:
                    continue
                for function in functions[path]:
                    if defines(i, d, function) and seg.starts[d] < found[path].get(function, 1 << 62):
                        found[path][function] = seg.starts[d]
    return found


def _docs_of(seg, paths) -> Iterable[tuple[str, Iterable[int]]]:
    """(path, its documents) of a segment's files among `paths`."""
    spans = getattr(seg, "file_spans", None)
    if spans is not None:
        for path, first, count in spans():
            if path in paths:
                yield path, range(first, first + count)
        return
    docs: dict[str, list[int]] = {}  # (a segment in memory: few documents)
    for d, fid in enumerate(seg.doc_file):
        path = seg.files[fid][0]
        if path in paths:
            docs.setdefault(path, []).append(d)
    yield from docs.items()


def _path(views, i: int, d: int) -> str:
    seg = views[i].segment
    return seg.files[seg.doc_file[d]][0]


def _live_paths(views):
    """The paths of the files with live documents."""
    for view in views:
        seg = view.segment
        spans = getattr(seg, "file_spans", None)
        if spans is None:  # built in memory: nothing is deleted
            yield from (f[0] for f in seg.files)
        else:
            yield from (path for path, first, _ in spans() if first not in view.deleted)


def file_item(path: str, language: str, kind: str, chunks, indexed_context, path_weight, pairs: bool,
              profile: str, generated: bool) -> tuple:
    """What _file_documents takes for a file's chunks (`indexed_context(chunk, path)`: the part of a
    chunk's context indexed with it). It pickles: it goes to a worker process."""
    return (path, language, kind,
            [(c.start_line, c.end_line, c.text, indexed_context(c, path), c.definitions, _meta(c)) for c in chunks],
            path_weight, pairs, profile, generated)


def _file_documents(item):
    """(path, language, kind, chunk spans and texts, path weight, pairs, profile, generated) -> what
    LexicalIndex.apply takes."""
    path, language, kind, chunks, path_weight, pairs, profile, generated = item
    if profile == PROSE:
        return path, language, kind, [(start, end, prose.term_counts(text), meta)
                                      for start, end, text, _, _, meta in chunks], generated
    owners = _owners([c[2] for c in chunks], language, kind, [c[4] for c in chunks])
    return path, language, kind, [
        (start, end, chunk_terms(path, text, context, path_weight, language, definitions, owned, pairs), meta)
        for (start, end, text, context, definitions, meta), owned in zip(chunks, owners)
    ], generated


def _spread(views, best, allowed, depth: int, cap: int) -> list:
    """best(allowed)'s candidates, a file holding more than `cap` of them keeping its best few,
    the others scored again without it: the pool was the first `depth` chunks by BM25 alone, and a
    big repetitive file (a 10,000-record JSON export) filled it whole, so no other file was ever
    ranked (a migration scoring 6.3 left out, the export's chunks down to 0.003 shown). A file's
    chunks after its first are ranked after every file's first (RankingConfig.diversify), so its
    best few leave its place as it was, and its others fill what room the other files leave. The
    crowding files together keep at most what leaves a share of the pool to the rest (three
    exports each keeping 100 filled it again)."""
    hits = best(allowed)
    crowded: dict[tuple, list] = {}  # (view, file) -> its candidates, best first
    left_out: list[set] = [set() for _ in views]
    for _ in range(10):  # each round drops at least one file; a few are the most seen
        counts = Counter((i, views[i].segment.doc_file[d]) for _, i, d in hits)
        crowding = {key for key, n in counts.items() if n > cap}
        if not crowding:
            break
        for hit in hits:  # best first
            key = (hit[1], views[hit[1]].segment.doc_file[hit[2]])
            if key in crowding:
                crowded.setdefault(key, []).append(hit)
        for i, fid in crowding:
            left_out[i].add(fid)
        hits = best([_Without(views[i].segment, left_out[i], allowed[i] if allowed else None)
                     for i in range(len(views))])
    if not crowded:
        return hits
    share = max(1, min(cap, depth // (len(crowded) + 1)))
    kept = [hit for found in crowded.values() for hit in found[:share]]
    spare = in_order(views, [hit for found in crowded.values() for hit in found[share:]])
    pool = kept + hits
    return in_order(views, pool + spare[: max(0, depth - len(pool))])[:depth]


class _Without:
    """A view's allowed documents (bm25.score's `allowed`) but those of the files left out."""

    def __init__(self, segment, files: set, allowed=None):
        self._doc_file = segment.doc_file
        self._files = files
        self._allowed = allowed

    def __call__(self, docs) -> list[bool]:
        flags = self._allowed(docs) if self._allowed is not None else [True] * len(docs)
        files = self._files
        return [flag and self._doc_file[d] not in files for flag, d in zip(flags, docs)]


def _owners(texts: list[str], language: str, kind: str, definitions: list) -> list:
    """Where the owner changes in each of a file's chunks (features.member_owners). Line chunks
    know nothing of their scope: the owners of their definitions come from the file's
    indentation. A syntax tree's chunks (their definitions given) carry their scope path as
    context instead."""
    if kind == CODE and all(d is None for d in definitions):
        return member_owners(texts, language)
    return [None] * len(texts)


def _owner_lists(documents: list) -> list:
    """_owners for in-memory documents, a file's chunks being consecutive documents."""
    out: list = []
    for path, docs in groupby(documents, key=lambda d: d.source_path):
        group = list(docs)
        first = group[0]
        out.extend(_owners([d.text for d in group], first.language, first.kind, [d.definitions for d in group])
                   if path else [None] * len(group))
    return out


_NO_META = ("", "", "", 0, 0, [])


def _meta(chunk) -> tuple | None:
    """What the store keeps of a chunk (Chunk or Document) beyond its span: None when there is nothing."""
    if not (chunk.context or chunk.symbol or chunk.chunk_kind or chunk.scope or chunk.members):
        return None
    scope = chunk.scope or (0, 0)
    return (chunk.context, chunk.chunk_kind, chunk.symbol, scope[0], scope[1], [list(m) for m in chunk.members])


class _AllowedDocs:
    """Which documents a filter allows, asked once per file, not once per document."""

    def __init__(self, segment, allow):
        self._segment = segment
        self._allow = allow
        self._verdicts: dict[int, bool] = {}

    def flags(self, docs) -> list[bool]:
        """[d in self for d in docs], with the per-document work in the interpreter's C loops
        (common words have postings in most documents)."""
        fids = list(map(self._segment.doc_file.__getitem__, docs))
        verdicts = self._verdicts
        for fid in set(fids).difference(verdicts):
            path, language, kind = self._segment.files[fid]
            verdicts[fid] = bool(self._allow(path, language, kind))
        return list(map(verdicts.__getitem__, fids))


def _scope(start: int, end: int) -> tuple[int, int] | None:
    """A stored scope's lines (0: none)."""
    return (start, end) if start else None


def _with_lines(members) -> tuple:
    """A chunk's stored members that have their lines (those written before members had lines are
    left out): what a label may be chosen among (SearchHit.members)."""
    return tuple(tuple(m) for m in members if len(m) == 5 and m[3])


def lucene_length(n: int) -> int:
    """A document length as Lucene stores it: exact below 24, above that 24 plus the excess
    kept to four significant bits (one byte per document, SmallFloat.intToByte4). Ranking with
    these lengths is what makes BM25 scores equal Lucene's, not merely close."""
    if n < 24:
        return n
    excess = n - 24
    shift = max(excess.bit_length() - 4, 0)
    return 24 + ((excess >> shift) << shift)


class _ReadLengths:
    """A segment whose document lengths read through `length` (Lucene's, or a floor); everything
    else passes through."""

    def __init__(self, segment, length):
        self._segment = segment
        self._length = length
        self._lens: array | None = None

    @property
    def lens(self) -> array:
        if self._lens is None:
            self._lens = array("I", map(self._length, self._segment.lens))
        return self._lens

    def __getattr__(self, name):
        # Private names are never the segment's: a copy or an unpickled instance has no
        # `_segment` yet, and looking it up through here would recurse.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._segment, name)


def phrase_factors(views, plan, first, config: RankingConfig) -> dict[tuple[int, int], float]:
    """{(view, doc): 1 + phrase_boost * share} for the first-stage candidates holding a run of at
    least `phrase_pairs` of the pair terms of the words the query writes next to each other, one
    after another, or all of them when there are fewer (`share`: the longest run's, of all of
    them); empty for a query with fewer than `phrase_whole_pairs`
    (`QueryPlan.phrase`). A run, not a count: identifiers' parts pair too (`SetTrustedProxies`,
    `ClientIP`), and a test naming several of a question's things held four of its pairs apart."""
    if not plan.phrase:
        return {}
    if plan.symbol is not None and _definers(views, (features.def_term(plan.symbol),)):
        # A name asked for as words in a row (`tokio-rt-worker`) that something defines
        # (`_bash-it-component-help`): its definition, not the strings saying it, comes first.
        return {}
    wanted = {(i, d) for _value, i, d in first}
    run: dict[tuple[int, int], int] = {}  # the run of pairs ending at the one before, by candidate
    longest: Counter = Counter()
    for term in plan.phrase:
        held = set()
        for i, view in enumerate(views):
            plist = view.segment.postings(term)
            if plist is not None:
                held.update((i, d) for d in plist[0] if (i, d) in wanted)
        run = {key: run.get(key, 0) + 1 for key in held}
        for key, n in run.items():
            longest[key] = max(longest[key], n)
    total = len(plan.phrase)
    needed = min(config.phrase_pairs, total)
    untested = config.phrase_test_share != 1.0 and not test_words(plan.asked)
    factors = {}
    for (i, d), n in longest.items():
        if n >= needed:
            share = config.phrase_test_share if untested and is_test_path(_path(views, i, d)) else 1.0
            factors[(i, d)] = 1.0 + config.phrase_boost * share * n / total
    return factors


def scope_factors(views, query: str, first, config: RankingConfig) -> dict[tuple[int, int], float]:
    """{(view, doc): config.scope_boost} for the first-stage candidates whose scope path, or one of
    the other definitions named in them (a chunk of merged siblings), is the qualified name the
    query asks for (`Router.add_route`); empty for any other query, and for chunks without a scope
    path (line chunks). Spelled with the query's letter case, only those agree
    (`RouterGroup.Handle` is not `RouterGroup.handle`); else any case does. When none agrees, a
    path with scopes between the name's parts does (`Ecto.Repo.__using__.insert`)."""
    parts = qualified_name(query) if config.scope_boost != 1.0 else ()
    if not parts:
        return {}
    for gaps in (False, True):
        agreeing = {}
        for _value, i, d in first:
            meta = views[i].segment.meta(d)
            if meta:
                paths = [p for p in (meta[0], *(m[1] for m in meta[5])) if scope_agrees(p, parts, gaps=gaps)]
                if paths:
                    agreeing[(i, d)] = paths
        if agreeing:
            break
    exact = [key for key, paths in agreeing.items()
             if any(scope_agrees(p, parts, exact=True, gaps=gaps) for p in paths)]
    return dict.fromkeys(exact or agreeing, config.scope_boost)
