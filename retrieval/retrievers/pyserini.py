"""`pi-serini`: BM25 computed by Lucene (Anserini's jar, from the pyserini package), then the same
ranking signals as `lexical`.

Two analyzers. `code` (the default): our code-aware terms (`chunk_terms`: identifiers whole and
split, stems, path words, definition markers) handed to Lucene pre-tokenized, and the query planned
as `lexical` plans it (weighted terms, definition terms), so Lucene scores exactly the terms lexical
scores. `english`: Anserini's default English analyzer over the chunk text and its path words, the
query analysed the same way. Either way, Lucene's first stage is followed by the shared signals
(path_prior, name_prior, rank_files) and confidence levels. The `prose` profile is plain Lucene BM25
with the English analyzer (k1=0.9, b=0.4), nothing after it: Anserini's own ranking.
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import weakref
from collections import defaultdict
from typing import Iterable

from .. import prose
from ..chunking import lines
from ..confidence import assess, query_evidence
from ..generated import VERSION as GENERATED_VERSION
from ..lexical.bm25 import idf
from ..lexical.features import DEF, PAIR, chunk_terms, exact_def_term, path_terms
from ..lucene import index as lucene_index
from ..lucene import jvm
from ..parallel import ordered_map
from ..query import plan_query, split_keyword
from ..ranking import RankingConfig, mention_evidence, paths_by_name, rank_candidates
from ..records import Chunk, Document, SearchHit, SourceFile
from ..settings import env_choice
from ..store.layout import ENV_INDEX_DIR, StoreError
from .base import NOT_INDEXED, Released, check_bm25, check_documents, check_search_args, marked_paths, term_versions

CODE, PROSE = "code", "prose"
PROFILES = (CODE, PROSE)
ANALYZERS = ("code", "english")
ANALYZER_ENV = "RETRIEVAL_PYSERINI_ANALYZER"


def problem() -> str:
    """The registry's probe: '' when Lucene can run here, else what is missing and how to install it."""
    return jvm.problem()


RELEASED = "this pi-serini index was released (a newer snapshot replaced it): open it again"
_NO_LABEL = ("", "", "", None)


class PyseriniRetriever:
    name = "pi-serini"

    def __init__(self, k1: float | None = None, b: float | None = None, analyzer: str | None = None,
                 ranking: RankingConfig | None = None, profile: str = CODE):
        # The environment picks the analyzer of indexes the service builds (the CLI passes no
        # arguments); the index's fingerprint records it, so changing it rebuilds the index.
        # A value it cannot use is named on stderr and the default taken, as every RETRIEVAL_* is.
        analyzer = analyzer or env_choice(ANALYZER_ENV, "code", ANALYZERS)
        if analyzer not in ANALYZERS:
            raise ValueError(f"unknown analyzer {analyzer!r}; choose one of: {', '.join(ANALYZERS)}")
        self.analyzer = analyzer
        check_bm25(k1, b, none_is_default=True)  # None: the analyzer's default (see k1, b)
        self._k1, self._b = k1, b
        self.ranking = ranking or RankingConfig()
        self.profile = CODE
        self._searcher = None
        self._reader = None
        self._fs = None
        self._opener = None  # the pid that opened them: only it can close them (see release)
        # A host's threads share an engine (service keeps one per index), and a newer snapshot
        # releases it while another thread may be searching it: the Lucene readers were closed under
        # that search, and a search after the release answered no hits. A released engine says so.
        self._released = False
        self._records: dict[str, tuple] = {}
        self._generated: frozenset[str] = frozenset()  # paths of the files marked generated
        self._labels: dict[str, tuple] = {}
        self._names = None  # (records, paths_by_name of their files), for the paths queries write out
        self._n_docs = 0
        self._opened = False
        self._scratch = None  # the directory of the in-memory API's index
        self._drop_scratch = None  # removes it: when called, or when this retriever is collected
        if profile != CODE:
            self.use_profile(profile)

    # -- configuration -----------------------------------------------------------------------

    def use_profile(self, profile: str) -> None:
        """`prose`: Anserini's English analyzer and plain BM25 (k1=0.9, b=0.4 unless given)."""
        if profile not in PROFILES:
            raise ValueError(f"unknown profile {profile!r}; choose one of: {', '.join(PROFILES)}")
        if profile == PROSE:
            self.analyzer = "english"
        self.profile = profile

    @property
    def k1(self) -> float:
        return self._k1 if self._k1 is not None else (1.2 if self.analyzer == "code" else 0.9)

    @property
    def b(self) -> float:
        return self._b if self._b is not None else (0.75 if self.analyzer == "code" else 0.4)

    def _lucene_analyzer(self) -> str:
        return "whitespace" if self.analyzer == "code" else "english"

    def fingerprint(self) -> dict:
        # What the stored index depends on. k1 and b are not part of it: Lucene applies them when
        # it searches (its norms do not depend on them).
        fp = {"profile": self.profile, "analyzer": self.analyzer, "contents": 1,
              "path_weight": self.ranking.path_weight}
        if self.profile != PROSE:  # a prose index holds whole files, analysed and ranked by Lucene alone
            fp["chunks"] = {"lines": lines.VERSION}
            # Our terms: all of a code document's, the path words of an English one.
            fp["terms"] = term_versions()
            fp["generated"] = GENERATED_VERSION  # the marks the shared ranking reads
        return fp

    def contents(self, path: str, text: str, context: str = "", language: str = "") -> str:
        """The `contents` of a document's Pyserini JSON."""
        return document_contents(self._layout(), path, text, context, language)

    def _layout(self) -> tuple[str, str, int]:
        return (self.profile, self.analyzer, self.ranking.path_weight)

    # -- the in-memory API -------------------------------------------------------------------

    def index(self, documents: Iterable[Document]) -> None:
        by_path: dict[str, list] = defaultdict(list)
        meta: dict[str, tuple[str, str]] = {}
        labels = {}  # docid -> (context, chunk kind, symbol, scope): a syntax chunk's label, as lexical keeps it
        documents = check_documents(documents)
        for doc in documents:
            path = doc.source_path or doc.docid
            meta.setdefault(path, (doc.language, doc.kind))
            by_path[path].append((doc.docid, doc.start_line or 0, doc.end_line or 0,
                                  self.contents(path, doc.text, doc.context, doc.language)))
            if doc.context or doc.chunk_kind or doc.symbol or doc.scope:
                labels[doc.docid] = (doc.context, doc.chunk_kind, doc.symbol, doc.scope)
        generated = marked_paths(documents)  # ranked as the store ranks them
        previous = self._drop_scratch
        directory = self._scratch = _scratch_dir()
        # Removed with this retriever, not only when the process ends: a long-lived program making
        # many in-memory indexes filled its temporary directory (and a kill left them all there).
        self._drop_scratch = weakref.finalize(self, _remove_scratch_dir, directory)
        with jvm.CALLS:
            state = lucene_index.update(
                directory, None, self._lucene_analyzer(), [],
                ((path, *meta[path], docs, path in generated) for path, docs in by_path.items()),
            )
            self.open_store(directory, state)
        self._labels = labels
        if previous is not None:  # the index this one replaces (its open files stay readable until closed)
            previous()

    def search(self, query: str, top_k: int = 10) -> list[str]:
        return [hit.docid for hit in self.search_detailed(query, top_k)]

    def search_detailed(self, query: str, top_k: int = 10, *, allow=None) -> list[SearchHit]:
        """Ranked hits. `allow(path, language, kind) -> bool` filters before ranking."""
        check_search_args(query, top_k)
        if not self._opened:
            raise RuntimeError(NOT_INDEXED)
        with jvm.CALLS:
            if self._released:  # the service opens the index again on this RuntimeError
                raise Released(RELEASED)
            if self._searcher is None or top_k <= 0:
                return []
            # A Lucene file damaged where its size does not show fails only when a search reads it:
            # the RuntimeError the service takes for damage (and rebuilds), not a Java traceback.
            with jvm.java_errors("Lucene could not search the index"):
                keyword, text = split_keyword(query)
                return self._search(text, top_k, allow, keyword)

    def _search(self, query: str, top_k: int, allow, keyword: str = "") -> list[SearchHit]:
        if self.profile == PROSE:
            # One more than asked: the runner-up's score is a confidence signal.
            ranked = self._first_stage(query, top_k + 1, allow)
            words = [((t,), False) for t in dict.fromkeys(prose.analyze(query))]
            return self._hits(ranked, words, (), top_k)
        config = self.ranking
        plan = plan_query(query, config, keyword)
        # Lucene's documents hold no pair terms: its BM25 is the reference's, over words.
        weights = {t: w for t, w in plan.weights.items() if not t.startswith(PAIR)}
        if self.analyzer == "code":
            if plan.long and config.long_query_min_idf:
                n = max(self._n_docs, 1)
                df = {t: self._df(t) for t in weights}
                # A term no document holds scores nothing: out of Lucene's query (a pasted page has thousands).
                found = {t: w for t, w in weights.items() if df[t]}
                # Unless every word found is that common (as the lexical retriever's score does).
                weights = {t: w for t, w in found.items()
                           if t.startswith(DEF) or idf(n, df[t]) >= config.long_query_min_idf} or found
            lucene_query = self._term_query(weights)
        else:
            lucene_query = query
        first = self._first_stage(lucene_query, max(config.candidates, top_k), allow)
        definers = self._definers(plan.named) if plan.named and config.long_query_definer_boost else {}
        candidates = []
        languages = {}
        for value, docid in first:
            path, languages[path], kind, _start, _end = self._records[docid]
            candidates.append((value, path, kind, docid))
        defining = frozenset(self._definers((exact_def_term(plan.symbol),))) if plan.keyword else None
        ranked = rank_candidates(candidates, plan, config, definers, self._mentioned(plan), self._generated,
                                 languages, defining)
        if self.analyzer == "code":
            forms, defined = query_evidence(query, plan.symbol is not None)
        else:
            forms = [((t,), False) for t in dict.fromkeys(prose.analyze(query))]
            defined = []
        return self._hits(ranked, forms, defined, top_k)

    # -- Lucene ------------------------------------------------------------------------------

    def _term_query(self, weights: dict):
        """A boolean OR of the weighted terms: Lucene scores it as the sum of weight * BM25."""
        j = jvm.start()
        builder = j.autoclass("org.apache.lucene.search.BooleanQuery$Builder")()
        should = j.autoclass("org.apache.lucene.search.BooleanClause$Occur").SHOULD
        term, term_query = j.autoclass("org.apache.lucene.index.Term"), j.autoclass("org.apache.lucene.search.TermQuery")
        boost = j.autoclass("org.apache.lucene.search.BoostQuery")
        # Every term, as lexical scores them all (Lucene's limit of 1024 clauses is lifted at start).
        for t, w in sorted(weights.items(), key=lambda kv: -kv[1]):
            if w <= 0:
                continue
            q = term_query(term("contents", t))
            builder.add(q if w == 1 else boost(q, float(w)), should)
        return builder.build()

    def _first_stage(self, lucene_query, depth: int, allow) -> list[tuple[float, str]]:
        """[(score, docid)] best first, at most `depth` of the documents `allow` accepts."""
        k = depth
        while True:
            got = self._searcher.search(lucene_query, min(k, max(self._n_docs, 1)))
            out = []
            for hit in got:
                record = self._records.get(hit.docid)
                if record is None:
                    continue
                if allow is not None and not allow(record[0], record[1], record[2]):
                    continue
                out.append((float(hit.score), hit.docid))
            # A filter may reject most of the best: look deeper until enough pass or none are left.
            if len(out) >= depth or len(got) < k or k >= self._n_docs:
                return out[:depth]
            k *= 4

    def _df(self, term: str) -> int:
        j = jvm.start()
        return self._reader.docFreq(j.autoclass("org.apache.lucene.index.Term")("contents", term))

    def _matching(self, term: str, id_filter, n: int) -> set[str]:
        """The docids among those `id_filter` matches (n of them) that contain `term`."""
        j = jvm.start()
        occur = j.autoclass("org.apache.lucene.search.BooleanClause$Occur")
        query = j.autoclass("org.apache.lucene.search.BooleanQuery$Builder")()
        query.add(j.autoclass("org.apache.lucene.search.TermQuery")(
            j.autoclass("org.apache.lucene.index.Term")("contents", term)), occur.FILTER)
        query.add(id_filter, occur.FILTER)
        return {hit.docid for hit in self._searcher.search(query.build(), n)}

    def _mentioned(self, plan) -> dict[str, float]:
        """{path: evidence that the query names the file} (as `lexical`)."""
        if not plan.mentions:
            return {}
        if self._names is None or self._names[0] is not self._records:
            self._names = (self._records, paths_by_name(r[0] for r in self._records.values()))
        return mention_evidence(plan.mentions, self._names[1])

    def _definers(self, def_terms) -> dict[str, float]:
        """{path: evidence that the file defines the symbols a report names} (as `lexical`)."""
        evidence: dict[str, float] = {}
        for term in def_terms:
            df = self._df(term)
            if not df:
                continue
            got = self._searcher.search(self._term_query({term: 1.0}), df)
            files = {self._records[h.docid][0] for h in got if h.docid in self._records}
            for path in files:
                evidence[path] = evidence.get(path, 0.0) + 1.0 / len(files)
        return evidence

    def _hits(self, ranked, words, defined, top_k: int) -> list[SearchHit]:
        """SearchHits for ranked [(score, docid)], with `lexical`'s confidence levels."""
        top = [docid for _, docid in ranked[: top_k + 1]]
        view = _LuceneView(self, top)
        levels = assess([view], self._n_docs, words, defined,
                        [(value, (0, i)) for i, (value, _) in enumerate(ranked[: top_k + 1])], top_k)
        hits = []
        for rank, ((value, docid), confidence) in enumerate(zip(ranked, levels), start=1):
            path, language, kind, start, end = self._records[docid]
            context, chunk_kind, symbol, scope = self._labels.get(docid, _NO_LABEL)
            hits.append(SearchHit(docid, path, start or None, end or None, rank, value, context, confidence,
                                  language=language, kind=chunk_kind or kind, symbol=symbol, scope=scope))
        return hits

    def statistics(self) -> dict:
        """Documents, distinct terms and term occurrences of the open index, as Lucene counts them."""
        if not self._opened:
            raise RuntimeError(NOT_INDEXED)
        with jvm.CALLS:
            if self._released:
                raise Released(RELEASED)
            if self._reader is None:
                return {"documents": 0, "unique_terms": 0, "total_terms": 0}
            j = jvm.start()
            terms = j.autoclass("org.apache.lucene.index.MultiTerms").getTerms(
                j.cast("org.apache.lucene.index.IndexReader", self._reader), "contents")
            unique = 0
            if terms is not None:
                it = terms.iterator()
                while it.next() is not None:
                    unique += 1
            return {"documents": self._reader.numDocs(), "unique_terms": unique,
                    "total_terms": self._reader.getSumTotalTermFreq("contents")}

    # -- the persistent index (used by the service) -----------------------------------------

    def open_store(self, directory: str, state: dict) -> "PyseriniRetriever":
        _text_path(directory)
        with jvm.CALLS:
            self.release()
            self._records, self._generated, self._labels, self._n_docs = {}, frozenset(), {}, 0
            name = state.get("index")
            if not name:
                lucene_index.check(directory, state)  # an empty index, or a state that lost its version
            else:
                with jvm.java_errors("Lucene could not open the index"):
                    self._open_version(directory, name)
            self._opened, self._released = True, False
        return self

    def _open_version(self, directory: str, name: str) -> None:
        j = jvm.start()
        path = os.path.join(directory, name)
        self._records, self._generated = lucene_index.records(path)
        self._n_docs = len(self._records)
        self._searcher = j.autoclass("io.anserini.search.SimpleSearcher")(path)
        self._searcher.set_bm25(float(self.k1), float(self.b))
        self._fs = j.autoclass("org.apache.lucene.store.FSDirectory").open(j.autoclass("java.nio.file.Paths").get(path))
        self._reader = j.autoclass("org.apache.lucene.index.DirectoryReader").open(self._fs)
        self._opener = os.getpid()

    def release(self) -> None:
        """Close what Lucene holds for this snapshot: its memory maps and files live until closed, not
        until Python drops the objects (a server refreshing after each edit gained 28 maps of deleted
        segment files per refresh, towards the kernel's limit of 65,530)."""
        # Only in the process that opened them: a forked worker (an evaluation's pool) inherits
        # the objects but not the JVM's threads, and a call into Java there never returns.
        mine = self._opener == os.getpid()
        with jvm.CALLS:  # after the search under way, if any
            for held in (self._searcher, self._reader, self._fs):
                if held is not None and mine:
                    try:
                        held.close()
                    except Exception:  # noqa: BLE001 - already closed, or the JVM going down: nothing to free
                        pass
            self._searcher = self._reader = self._fs = None
            self._released = self._opened

    def update_store(self, directory: str, state: dict | None, removed_paths,
                     added: Iterable[tuple[SourceFile, list[Chunk]]], *, purge: bool = False) -> dict:
        _text_path(directory)
        layout = self._layout()
        files = (
            (layout, f.path, f.language, f.kind, [(c.docid, c.start_line, c.end_line, c.text, c.context) for c in chunks],
             f.generated)
            for f, chunks in added
        )
        # Computing the terms is most of the work of a build (as for lexical): worker processes.
        # `purge` needs nothing more: Lucene's deleted documents are always merged away.
        with jvm.CALLS:
            return lucene_index.update(directory, state, self._lucene_analyzer(), removed_paths,
                                       ordered_map(_file_documents, files))

    def check_store(self, directory: str, state: dict) -> None:
        lucene_index.check(directory, state)

    def collect_garbage(self, directory: str, state: dict, *, keep_resumable: bool = False) -> None:
        lucene_index.collect_garbage(directory, state)


def _text_path(directory: str) -> None:
    """Java takes paths as text: a directory whose name is not UTF-8 (`caf\\xe9/`) cannot be handed
    to Lucene. Said as what it is, not taken for a damaged index to rebuild (and fail again)."""
    try:
        directory.encode("utf-8")
    except UnicodeEncodeError:
        raise StoreError(f"Lucene cannot keep an index under a path that is not UTF-8 ({directory!r}); "
                         f"set {ENV_INDEX_DIR}=/a/directory to keep indexes elsewhere") from None


def document_contents(layout: tuple[str, str, int], path: str, text: str, context: str, language: str) -> str:
    """What Lucene analyses for a chunk, given (profile, analyzer, path weight)."""
    profile, analyzer, path_weight = layout
    if profile == PROSE:
        return f"{context}\n{text}" if context else text
    if analyzer == "english":
        body = f"{context}\n{text}" if context else text
        return body + "\n" + " ".join(path_terms(path))
    counts = chunk_terms(path, text, context, path_weight, language, pairs=False)
    return " ".join(" ".join([term] * n) for term, n in counts.items())


def _file_documents(item):
    """(layout, path, language, kind, chunks, generated) -> what lucene.index.update takes (in a worker)."""
    layout, path, language, kind, chunks, generated = item
    return path, language, kind, [
        (docid, start, end, document_contents(layout, path, text, context, language))
        for docid, start, end, text, context in chunks
    ], generated


class _LuceneView:
    """What `confidence.assess` reads of an index (a segment's postings and deletions), answered by
    Lucene for the hits at hand: a term's posting list is its document frequency in length, holding
    the positions (in the hit list) of the hits that contain it. No posting list is materialised."""

    deleted = frozenset()

    def __init__(self, retriever: PyseriniRetriever, docids: list[str]):
        self.segment = self
        self._retriever = retriever
        self._docids = docids
        self._filter = None

    def postings(self, term: str):
        df = self._retriever._df(term)
        if not df:
            return None
        having = set()
        if self._docids:
            if self._filter is None:
                self._filter = lucene_index.id_query(jvm.start(), self._docids)
            having = self._retriever._matching(term, self._filter, len(self._docids))
        return _Padded([i for i, d in enumerate(self._docids) if d in having], df), None


class _Padded:
    """A sorted sequence of length `size` that starts with `found` and continues with numbers past
    every hit position, which bisection and membership tests read like a real posting list."""

    def __init__(self, found: list[int], size: int):
        self._found = found
        self._size = max(size, len(found))

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, i: int) -> int:
        if i < 0:
            i += self._size
        if not 0 <= i < self._size:
            raise IndexError(i)
        return self._found[i] if i < len(self._found) else (1 << 40) + i


_SCRATCH: list[str] = []


def _scratch_dir() -> str:
    """A directory for an in-memory index's Lucene files, removed when the process ends."""
    directory = tempfile.mkdtemp(prefix="retrieval-pi-serini-")
    _SCRATCH.append(directory)
    return directory


def _remove_scratch_dir(directory: str) -> None:
    shutil.rmtree(directory, ignore_errors=True)
    if directory in _SCRATCH:
        _SCRATCH.remove(directory)


@atexit.register
def _remove_scratch() -> None:
    for directory in list(_SCRATCH):
        _remove_scratch_dir(directory)
