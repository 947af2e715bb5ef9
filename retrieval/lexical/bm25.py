"""BM25 over one or more segments, with exact collection statistics.

Segments may carry deleted documents (files changed since they were written). Document
frequencies are counted over live postings only, and N and the average length come from live
documents, so an incrementally refreshed index scores exactly like a clean build.
"""
from __future__ import annotations

import heapq
import math
from collections import Counter
from dataclasses import dataclass
from itertools import compress, repeat
from operator import add, not_, truediv


@dataclass(frozen=True)
class BM25Params:
    k1: float = 1.2
    b: float = 0.75


def idf(n_docs: int, df: int) -> float:
    """Lucene's BM25 idf: always positive."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


@dataclass
class SegmentView:
    segment: object  # MemorySegment | DiskSegment
    deleted: frozenset = frozenset()


def live_count(view, docs) -> int:
    """How many of `docs` (a posting list's ids) the view (anything with `deleted`) has not deleted."""
    return len(docs) - (sum(1 for d in docs if d in view.deleted) if view.deleted else 0)


def score(
    views: list[SegmentView],
    query_terms,
    params: BM25Params,
    n_docs: int,
    avgdl: float,
    min_idf: float = 0.0,
    k: int = 0,
    allowed: list | None = None,
) -> list[dict[int, float]]:
    """Per view, {local doc id: BM25 score} for the documents that match any query term.

    `query_terms` is a list (a repeated term counts again, as Lucene sums repeated clauses) or a
    mapping {term: weight}. Terms whose idf is below `min_idf` (words in most documents) are skipped,
    unless every term found is.

    With k > 0 only documents that may still rank among the k best are kept (MaxScore-style): terms
    are added rarest first, and once the terms left could not lift a document to the k-th best
    partial score, they only update the documents already in hand, and documents that cannot reach
    it are dropped. Every document scoring at least the final k-th best score is kept, with its
    exact score, so the top k (ties included) are the same as without k; on a big corpus this
    skips most of the per-posting work for common words.

    `allowed`, when given, holds per view a function from a list of doc ids to their verdicts (true:
    the document may rank): only those documents are scored, so with k the k best allowed ones
    (ties included) keep their exact scores. Collection statistics still count every live document.
    """
    results: list[dict[int, float]] = [{} for _ in views]
    if n_docs <= 0 or not query_terms:
        return results
    k1, b = params.k1, params.b
    c1 = k1 * (1.0 - b)
    c2 = k1 * b / (avgdl or 1.0)
    weights = query_terms if isinstance(query_terms, dict) else Counter(query_terms)
    plan = []
    common = []  # the terms below min_idf
    for term, qtf in weights.items():
        found = []
        df = 0
        for i, view in enumerate(views):
            plist = view.segment.postings(term)
            if plist is None:
                continue
            docs, tfs = plist
            if view.deleted:
                live = list(map(not_, map(view.deleted.__contains__, docs)))
                docs, tfs = list(compress(docs, live)), list(compress(tfs, live))
            df += len(docs)
            found.append((i, docs, tfs))
        if df:
            (plan if idf(n_docs, df) >= min_idf else common).append((qtf * idf(n_docs, df) * (k1 + 1.0), found))
    if not plan:  # every word is in most documents (a report in the project's own words): they are all it has
        plan = common
    # Highest weight first: the sum order is fixed by the query and the collection statistics,
    # so a refreshed index and a clean one add the same numbers in the same order.
    plan.sort(key=lambda entry: -entry[0])
    # A term adds less than its weight to any document (tf / (tf + K) < 1), so the weights of the
    # terms not yet added bound what they can still give; the bound is padded against rounding.
    floor = None  # a lower bound of the final k-th best score, once pruning starts
    added = 0.0
    # What the terms after t can still add, at most (suffix sums of the weights).
    remaining = [0.0] * (len(plan) + 1)
    for t in range(len(plan) - 1, -1, -1):
        remaining[t] = remaining[t + 1] + plan[t][0]
    every = max(1, len(plan) // KTH_CHECKS)
    checked = -every
    for t, (weight, found) in enumerate(plan):
        added += weight
        for i, docs, tfs in found:
            acc = results[i]
            if floor is not None:
                # Pruning: only documents already in hand (allowed ones) can still make the k best.
                inside = list(map(acc.__contains__, docs))
                docs, tfs = list(compress(docs, inside)), list(compress(tfs, inside))
            elif allowed is not None:
                keep = allowed[i](docs)
                docs, tfs = list(compress(docs, keep)), list(compress(tfs, keep))
            _accumulate(acc, weight, docs, tfs, views[i].segment.lens, c1, c2)
        bound = remaining[t + 1] * (1 + 1e-9) + 1e-12
        # No partial score exceeds `added`: pruning cannot start while the bound is at least that.
        # The k-th best partial score only grows, so one computed a few terms ago is still a valid
        # (lower) floor; recomputing it after every term of a long query costs more than it saves,
        # while a short query recomputes it after every term, to start pruning early.
        if k > 0 and bound < added and t - checked >= every:
            checked = t
            kth = _kth_best(results, k)
            if kth is not None and bound < kth:
                floor = kth
                keep = (floor - bound).__le__
                results = [dict(compress(acc.items(), map(keep, acc.values()))) for acc in results]
    return results


KTH_CHECKS = 16  # at most about this many computations of the k-th best partial score per query


def _accumulate(acc: dict, weight: float, docs, tfs, lens, c1: float, c2: float) -> None:
    """acc[d] += weight * tf / (tf + c1 + c2 * lens[d]) for every (d, tf), evaluated with the very
    same float operations, but by the interpreter's C loops (map, zip, dict.update) rather than a
    Python loop per posting: common words have postings in most documents."""
    scores = map(
        truediv,
        map(weight.__mul__, tfs),
        map(add, map(add, tfs, repeat(c1)), map(c2.__mul__, map(lens.__getitem__, docs))),
    )
    # Each d occurs once in docs, so acc.get(d) still reads the value from before this term.
    acc.update(zip(docs, map(add, map(acc.get, docs, repeat(0.0)), scores)))


def _kth_best(results: list[dict[int, float]], k: int) -> float | None:
    total = sum(len(acc) for acc in results)
    if total < k:
        return None
    if len(results) == 1:
        values = results[0].values()
    else:
        values = [s for acc in results for s in acc.values()]
    return heapq.nlargest(k, values)[-1]


def best_hits(
    views: list[SegmentView],
    scores: list[dict[int, float]],
    k: int,
) -> list[tuple[float, int, int]]:
    """The k best (score, view index, doc) with ties broken by (path, start line). A filter has
    applied already, while scoring (`score(allowed=...)`)."""
    if k <= 0:
        return []
    candidates: list[tuple[float, int, int]] = []
    for i, acc in enumerate(scores):
        candidates.extend((s, i, d) for d, s in acc.items())
    if not candidates:
        return []
    best = heapq.nlargest(k, candidates, key=lambda c: c[0])
    threshold = best[-1][0]
    # Everything tied with the k-th score competes on the stable key, so ranks never depend on
    # internal doc ids (which differ between a refreshed and a clean index).
    return in_order(views, [c for c in candidates if c[0] >= threshold])[:k]


def in_order(views: list[SegmentView], hits: list[tuple[float, int, int]]) -> list[tuple[float, int, int]]:
    """(score, view index, doc) best first, ties by (path, start line, end line)."""
    def stable_key(c):
        seg = views[c[1]].segment
        d = c[2]
        return (-c[0], seg.files[seg.doc_file[d]][0], seg.starts[d], seg.ends[d])

    return sorted(hits, key=stable_key)
