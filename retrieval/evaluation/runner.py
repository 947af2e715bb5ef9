"""Run a dataset against retrievers on one tree and collect per-query and summary numbers.

Each retriever's index is refreshed once (timed: the build time when it builds), opened once, and
queried in-process with `search_detailed`, so the latencies are those of the search itself, not
of process start-up. The first query after opening is reported apart (cold: it pays for loading
the index lazily); the median of the rest is the warm latency.
"""
from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from ..notes import first_line
from . import metrics as m
from .datasets import EvalQuery, Target
from .stats import bootstrap_interval, mean_interval

# Metric families. `ndcg` is the span-level code-search metric (semble); `files` the file-level
# localisation metric (SWE-bench); `map` the TREC-style document metric (CACM).
METRIC_SETS = {
    "ndcg": ("ndcg", "recall", "mrr"),
    "files": ("acc@1", "acc@3", "acc@5", "file_mrr"),
    "map": ("map", "p@30"),
}
# Categories that mark a prose collection of whole documents, where MAP and P@30 are the
# customary numbers; `auto` adds the `map` family when every query carries one of them.
PROSE_CATEGORIES = frozenset({"prose", "cacm", "trec"})
FILES_DEPTH = 50  # chunks asked for by the `files` family ...
MIN_FILES = 5  # ... widened until they cover this many distinct files (Acc@5 needs five)
MAP_FILES = 30  # the `map` family's list covers this many files, as P@30 needs (and MAP does not
# then move with -k or with the other families asked for)
MAX_DEPTH = 1600

Progress = Callable[[str], None]


def _quiet(_msg: str) -> None:
    pass


def choose_metrics(queries: Sequence[EvalQuery], requested: Sequence[str] = ()) -> tuple[str, ...]:
    if requested:
        unknown = [r for r in requested if r not in METRIC_SETS]
        if unknown:
            from difflib import get_close_matches

            close = get_close_matches(unknown[0], list(METRIC_SETS), n=1)
            guess = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"unknown metric family {unknown[0]!r}{guess} (one of: {', '.join(METRIC_SETS)}, "
                             "comma separated; or auto alone)")
        return tuple(dict.fromkeys(requested))
    if queries and all(q.category.lower() in PROSE_CATEGORIES for q in queries):
        return ("ndcg", "map")
    return ("ndcg",)


class TreePaths:
    """The files under a root, for deciding which targets exist there (suffix on a `/` boundary).

    Paths are anchored at the root's absolute path, and hits are anchored the same way before
    matching, because annotations name files relative to the repository while the indexed root
    may be a subdirectory of it (semble: `aiohttp/client.py` with the root at `aiohttp/`, but
    `Readers/Markdown.hs` with the root at `src/Text/Pandoc/`); the suffix rule then serves both.
    Every file counts, indexed or not: a relevant file the retriever chose not to index is a
    miss, not an excuse."""

    SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".retrieval"})

    def __init__(self, paths: Sequence[str], anchor: str = ""):
        self.anchor = anchor  # prefix that turns a root-relative path into the matched form
        self._suffixes: dict[str, set[str]] = {}  # suffix -> the full paths ending with it
        self._stems: dict[str, set[str]] = {}
        self._line_counts: dict[str, int | None] = {}
        for path in paths:
            full = anchor + path
            stem = os.path.splitext(full)[0]
            for suffix in _suffixes(full):
                self._suffixes.setdefault(suffix, set()).add(full)
            for suffix in _suffixes(stem):
                self._stems.setdefault(suffix, set()).add(full)

    @classmethod
    def walk(cls, root: str) -> "TreePaths":
        paths = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d not in cls.SKIP_DIRS]
            rel = os.path.relpath(dirpath, root).replace(os.sep, "/")
            prefix = "" if rel == "." else rel + "/"
            paths.extend(prefix + name for name in filenames)
        return cls(sorted(paths), anchor=os.path.abspath(root).replace(os.sep, "/").rstrip("/") + "/")

    def anchored(self, hits: Sequence[m.Hit]) -> list[m.Hit]:
        return [(self.anchor + path, start, end) for path, start, end in hits]

    def exists(self, path: str) -> bool:
        return path in self._suffixes

    def resolve(self, target: Target) -> Target | None:
        """The target as it exists in the tree, or None. A path naming a file at the root itself
        (`cli.py` beside `evaluation/cli.py`) is that file only; one naming a single file by its
        suffix is that file (so two spellings of it are one target). A plain document id
        ('CACM-0042') that names exactly one file once its extension is dropped resolves to that
        file. A span starting past the end of its file cannot be found: None, as a missing file."""
        files = self._suffixes.get(target.path)
        if not files:
            files = self._stems.get(target.path)
            if not files or len(files) > 1:
                return None
        exact = self.anchor + target.path
        if exact in files or len(files) == 1:
            full = exact if exact in files else next(iter(files))
            count = self._lines(full) if target.start_line is not None else None
            if count is not None and target.start_line > count:
                return None
            return Target(full, target.start_line, target.end_line)
        return target  # several files end so: any of them matches (the benchmark's suffix rule)

    def _lines(self, full: str) -> int | None:
        if full not in self._line_counts:
            try:
                with open(full, "rb") as fh:
                    data = fh.read()
                self._line_counts[full] = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
            except OSError:
                self._line_counts[full] = None
        return self._line_counts[full]


def _suffixes(path: str):
    yield path
    start = path.find("/")
    while start != -1:
        yield path[start + 1:]
        start = path.find("/", start + 1)


@dataclass
class QueryRow:
    id: str
    query: str
    category: str
    n_targets: int
    n_existing: int  # targets found in the tree: the n of IDCG and recall
    scores: dict  # metric name -> value; None when undefined (span and file metrics: n_existing == 0)
    ranks: dict  # "span": rank per existing target; "files": rank per gold file
    hits: list[str]
    seconds: float
    # per hit of the top k: the retriever's confidence, and whether it matches an existing target
    confidence: list[str] = field(default_factory=list)
    matched: list[bool] = field(default_factory=list)
    # per hit of the top k: how many lines it spans (None: a whole file), what an agent reads. A
    # longer span matches more targets, so the metrics alone would reward long hits.
    lines: list[int | None] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"id": self.id, "query": self.query, "category": self.category, "n_targets": self.n_targets,
                "n_existing": self.n_existing, "scores": self.scores, "ranks": self.ranks,
                "hits": self.hits, "confidence": self.confidence, "matched": self.matched,
                "lines": self.lines, "seconds": round(self.seconds, 6)}


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


@dataclass
class RetrieverRun:
    retriever: str
    k: int
    metrics: tuple[str, ...]
    index_status: str  # the refresh's status: "indexed" (built or updated now) | "up to date"
    build_seconds: float  # time of the refresh: the build time when it indexed
    open_seconds: float
    rows: list[QueryRow] = field(default_factory=list)
    index: dict = field(default_factory=dict)  # the retriever's index statistics, when it reports them

    @property
    def metric_names(self) -> list[str]:
        return [name for family in self.metrics for name in METRIC_SETS[family]]

    @property
    def cold_seconds(self) -> float | None:
        return self.rows[0].seconds if self.rows else None

    @property
    def warm_p50_seconds(self) -> float | None:
        warm = [r.seconds for r in self.rows[1:]]
        return statistics.median(warm) if warm else None

    def summary(self, rows: Sequence[QueryRow] | None = None) -> dict:
        """Each metric's mean over the queries it is defined for (not for a query without an
        existing target, except MAP and P@30, which count every judged query as trec_eval does)."""
        rows = self.rows if rows is None else rows
        out: dict = {name: _mean(r.scores.get(name) for r in rows) for name in self.metric_names}
        # By their targets, not their scores: MAP's 0 for a query with none in the tree counted it
        # as scored, while every other metric's mean left it out.
        scored = sum(1 for r in rows if r.n_existing)
        out["queries"] = scored
        out["unscored"] = len(rows) - scored
        return out

    def hit_lines(self) -> dict:
        return hit_lines(row.lines for row in self.rows)

    def interval(self, name: str | None = None) -> tuple[float, float] | None:
        """95% bootstrap interval of a metric's mean (the first, the headline, by default): how much
        another draw of queries like these would move it."""
        name = name or self.metric_names[0]
        return mean_interval([r.scores[name] for r in self.rows if r.scores.get(name) is not None])

    def paired_interval(self, baseline: "RetrieverRun", name: str | None = None) -> tuple[float, float] | None:
        """95% bootstrap interval of this run's metric minus the baseline's, drawing the same queries
        for both (the runs of one evaluation score the same queries in the same order)."""
        name = name or self.metric_names[0]
        pairs = [(b.scores[name], r.scores[name]) for r, b in zip(self.rows, baseline.rows)
                 if r.scores.get(name) is not None and b.scores.get(name) is not None]
        return bootstrap_interval([pairs])

    def calibration(self) -> dict[str, dict]:
        """Per confidence level: the top-k hits of scored queries given it, and the share of them
        that match a target (a calibrated retriever's shares fall from high to low)."""
        return calibration(self.rows)

    def by_category(self) -> dict[str, dict]:
        groups: dict[str, list[QueryRow]] = {}
        for row in self.rows:
            groups.setdefault(row.category or "-", []).append(row)
        return {cat: self.summary(rows) for cat, rows in sorted(groups.items())}

    def to_json(self, per_query: bool = False) -> dict:
        out = {
            "retriever": self.retriever, "k": self.k, "metrics": list(self.metrics),
            "index_status": self.index_status, "build_seconds": round(self.build_seconds, 4),
            "open_seconds": round(self.open_seconds, 4),
            "cold_query_seconds": self.cold_seconds, "warm_query_p50_seconds": self.warm_p50_seconds,
            "summary": self.summary(), "by_category": self.by_category(), "index": self.index,
            "calibration": self.calibration(), "hit_lines": self.hit_lines(),
        }
        if self.metric_names:
            low, high = self.interval() or (None, None)
            out["interval"] = {"metric": self.metric_names[0], "low": low, "high": high}
        if per_query:
            out["queries"] = [r.to_json() for r in self.rows]
        return out


def hit_lines(per_query: Iterable[Sequence[int | None]]) -> dict:
    """Mean lines of the first hit and of every top-k hit (one list per query), over the hits
    with a span."""
    per_query = list(per_query)
    first = [lines[0] for lines in per_query if lines and lines[0] is not None]
    every = [n for lines in per_query for n in lines if n is not None]
    return {"first": _mean(first), "top_k": _mean(every), "hits": len(every)}


def calibration(rows: Sequence[QueryRow]) -> dict[str, dict]:
    """{level: {hits, matched, precision}} over the rows' hits, levels in ascending order. Queries
    without a target in the tree are left out (every hit would count as a miss)."""
    from ..confidence import LEVELS

    counts: dict[str, list[int]] = {}
    for row in rows:
        if not row.n_existing:
            continue
        for level, matched in zip(row.confidence, row.matched):
            entry = counts.setdefault(level, [0, 0])
            entry[0] += 1
            entry[1] += matched
    order = [lv for lv in LEVELS if lv in counts] + sorted(lv for lv in counts if lv not in LEVELS)
    return {lv: {"hits": counts[lv][0], "matched": counts[lv][1], "precision": counts[lv][1] / counts[lv][0]}
            for lv in order}


@dataclass
class Evaluation:
    root: str
    k: int
    metrics: tuple[str, ...]
    runs: list[RetrieverRun]
    skipped: dict[str, str]  # retriever -> why it did not run
    missing_targets: int  # targets (over all queries) that the tree does not have

    def to_json(self, per_query: bool = False) -> dict:
        return {"root": self.root, "k": self.k, "metrics": list(self.metrics),
                "missing_targets": self.missing_targets, "skipped": self.skipped,
                "runs": [run.to_json(per_query) for run in self.runs]}


def score_query(query: EvalQuery, hits: Sequence[m.Hit], tree: TreePaths, k: int,
                families: Sequence[str], seconds: float = 0.0, confidence: Sequence[str] = ()) -> QueryRow:
    """Score one ranked list of root-relative hits. `hits` may be longer than k: the file-level
    families use all of them. `confidence`, when given, holds each hit's level."""
    # Resolved, two spellings of one target (`stats.py`, `evaluation/stats.py`) are one.
    existing = list(dict.fromkeys(t for t in (tree.resolve(t) for t in query.targets) if t is not None))
    scores: dict = {}
    ranks: dict = {}
    gold = list(dict.fromkeys(t.path for t in existing))
    anchored = tree.anchored(hits)
    files = m.distinct_files(anchored) if ("files" in families or "map" in families) else []
    if "ndcg" in families:
        span = m.span_scores(anchored, existing, k)
        ranks["span"] = span.pop("ranks")
        scores.update(span)
    if "files" in families:
        ranks["files"] = m.file_ranks(files, gold)
        for depth in (1, 3, 5):
            scores[f"acc@{depth}"] = m.accuracy_at_k(files, gold, depth) if gold else None
        scores["file_mrr"] = m.file_mrr(files, gold) if gold else None
    if "map" in families:
        # As trec_eval: every judged relevant document is in the denominator, in the tree or not.
        judged = list(dict.fromkeys((tree.resolve(t) or t).path for t in query.targets))
        ranks.setdefault("files", m.file_ranks(files, judged))
        scores["map"] = m.average_precision(files, judged) if judged else None
        scores["p@30"] = m.precision_at_k(files, judged, 30) if judged else None
    shown = [f"{p}:{s}-{e}" if s is not None else p for p, s, e in hits[: max(k, 10)]]
    levels = list(confidence[:k])
    matched = [any(m.hit_matches(hit, t) for t in existing) for hit in anchored[: len(levels)]]
    lines = [end - start + 1 if start is not None and end is not None else None for _p, start, end in hits[:k]]
    return QueryRow(query.id, query.query, query.category, len(query.targets), len(existing),
                    scores, ranks, shown, seconds, levels, matched, lines)


def _search(engine, text: str, depth: int, min_files: int) -> tuple[list[m.Hit], list[str]]:
    """Ask for `depth` hits; when file-level metrics need `min_files` distinct files and a full
    list covers fewer, ask again for more (the time of every attempt counts). Returns the hits
    and their confidence levels."""
    while True:
        found = engine.search_detailed(text, top_k=depth)
        hits = [(h.source_path, h.start_line, h.end_line) for h in found]
        levels = [h.confidence for h in found]
        if not min_files or len(hits) < depth or depth >= MAX_DEPTH:
            return hits, levels
        if len(m.distinct_files(hits)) >= min_files:
            return hits, levels
        depth *= 2


def evaluate(
    root: str,
    queries: Sequence[EvalQuery],
    retrievers: Sequence[str],
    k: int = 10,
    *,
    metrics: Sequence[str] = (),
    depth: int | None = None,
    force: bool = False,
    profile: str | None = None,
    progress: Progress = _quiet,
) -> Evaluation:
    """Evaluate each named retriever on the tree at root. Retrievers whose extras are not
    installed are skipped (with the reason); unknown names raise ValueError. `profile` indexes
    with that profile first (remembered, like `retrieval index --profile`)."""
    from dataclasses import replace

    from .. import service
    from ..index_options import IndexOptions
    from ..retrievers.base import get_spec

    root = os.path.abspath(root)
    families = choose_metrics(queries, metrics)
    # Hits asked for: at least k (what is scored); the file families want enough to rank files.
    depth = max(depth or 0, k, FILES_DEPTH if "files" in families or "map" in families else 0)
    min_files = MAP_FILES if "map" in families else MIN_FILES if "files" in families else 0
    tree = TreePaths.walk(root)
    missing = sum(1 for q in queries for t in q.targets if tree.resolve(t) is None)
    runs, skipped = [], {}
    for name in retrievers:
        if name == "all":  # every indexed retriever, consolidated (retrieval.multi)
            from ..multi import open_all

            statuses, built = [], 0.0
            for part in ("lexical", "turbovec", "hybrid"):
                if not get_spec(part).unavailable_reason():  # a forced build once, if its own row did it
                    try:
                        report = service.refresh(root, part, force=force and part not in retrievers,
                                                 progress=progress)
                    except (RuntimeError, OSError) as exc:
                        if part == "lexical":
                            raise
                        skipped.setdefault(part, first_line(exc))  # all goes on without it
                        continue
                    statuses.append(report.status)
                    built += report.seconds
            started = time.perf_counter()
            engine = open_all(root, stale_ok=True)
            # What its parts' refreshes did here (a part its own row built earlier is up to date by now).
            status = "indexed" if "indexed" in statuses else "up to date"
            run = RetrieverRun(name, k, families, status, built, time.perf_counter() - started)
            run.index = {}
            _run_queries(run, engine, queries, tree, k, families, depth, min_files)
            runs.append(run)
            continue
        reason = get_spec(name).unavailable_reason()
        if reason:
            skipped[name] = reason
            continue
        options = None
        if profile:
            options = replace(service.remembered_options(root, name) or IndexOptions(), profile=profile)
        try:
            report = service.refresh(root, name, options=options, force=force, progress=progress)
            started = time.perf_counter()
            engine = service.open_index(root, name, stale_ok=True, progress=progress)
        except (RuntimeError, OSError) as exc:
            if len(retrievers) == 1:
                raise
            # One retriever that cannot run (its model gone) leaves the others' rows, as `index` does.
            skipped[name] = first_line(exc)
            continue
        run = RetrieverRun(name, k, families, report.status, report.seconds, time.perf_counter() - started)
        statistics = getattr(engine, "statistics", None)
        run.index = statistics() if statistics else {}
        _run_queries(run, engine, queries, tree, k, families, depth, min_files)
        progress(f"{name}: {len(queries)} queries")
        runs.append(run)
    return Evaluation(root, k, families, runs, skipped, missing)


def _run_queries(run, engine, queries, tree, k, families, depth, min_files) -> None:
    for query in queries:
        started = time.perf_counter()
        hits, levels = _search(engine, query.query, depth, min_files)
        seconds = time.perf_counter() - started
        run.rows.append(score_query(query, hits, tree, k, families, seconds, levels if any(levels) else ()))
