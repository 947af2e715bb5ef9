"""Ranking metrics, exactly as the benchmarks define them (see ../shared/bench/README.md).

A hit is a `(path, start_line, end_line)` tuple in rank order; a span of None means the whole file.

Span level (semble NDCG@k): a target matches a hit when the hit's path ends with the target's path
on a `/` boundary (or equals it) and, when the target has a span, the spans overlap. A target's
rank is the 1-based position of its first matching hit within the top k. Gains are binary:
DCG = sum of 1/log2(rank + 1) over found targets, IDCG = DCG of min(k, n) perfect hits, where n
counts the targets that exist in the indexed tree (targets the tree lacks cannot be found by
anyone, so they do not lower the ideal).

File level (SWE-bench, TREC-style prose collections): hits are collapsed to distinct files in
order of first appearance, and gold files are ranked in that list.
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

Hit = tuple  # (path, start_line | None, end_line | None)


def path_matches(hit_path: str, target_path: str) -> bool:
    """Equal, or a suffix on a `/` boundary: 'a/b/x.py' matches 'b/x.py', 'ab/x.py' does not."""
    return hit_path == target_path or hit_path.endswith("/" + target_path)


def spans_overlap(hit_start, hit_end, target_start, target_end) -> bool:
    if target_start is None or hit_start is None:
        return True  # a target without a span is the whole file; so is a hit without one
    return hit_start <= target_end and target_start <= hit_end


def hit_matches(hit: Hit, target) -> bool:
    path, start, end = hit
    return path_matches(path, target.path) and spans_overlap(start, end, target.start_line, target.end_line)


def target_ranks(hits: Sequence[Hit], targets: Iterable, k: int) -> list[int | None]:
    """For each target, the rank of its first matching hit within the top k; None when not found."""
    top = hits[:k]
    ranks = []
    for target in targets:
        ranks.append(next((i for i, hit in enumerate(top, start=1) if hit_matches(hit, target)), None))
    return ranks


def dcg(ranks: Iterable[int | None]) -> float:
    return sum(1.0 / math.log2(r + 1) for r in ranks if r is not None)


def ideal_dcg(n: int, k: int) -> float:
    return sum(1.0 / math.log2(r + 1) for r in range(1, min(k, n) + 1))


def ndcg(ranks: Sequence[int | None], n: int, k: int) -> float | None:
    """NDCG@k for the ranks of the targets that exist; None when no target exists (no ideal)."""
    if n <= 0:
        return None
    return dcg(ranks) / ideal_dcg(n, k)


def recall(ranks: Sequence[int | None], n: int) -> float | None:
    if n <= 0:
        return None
    return sum(1 for r in ranks if r is not None) / n


def reciprocal_rank(ranks: Iterable[int | None]) -> float:
    found = [r for r in ranks if r is not None]
    return 1.0 / min(found) if found else 0.0


def span_scores(hits: Sequence[Hit], targets: Sequence, k: int) -> dict:
    """NDCG@k, recall@k and MRR@k of one query. `targets` are those that exist in the tree."""
    ranks = target_ranks(hits, targets, k)
    n = len(targets)
    return {
        "ndcg": ndcg(ranks, n, k),
        "recall": recall(ranks, n),
        "mrr": reciprocal_rank(ranks) if n else None,
        "ranks": ranks,
    }


# -- file level ---------------------------------------------------------------------------------


def distinct_files(hits: Iterable[Hit]) -> list[str]:
    """Hit paths in rank order, each file once (at its best rank)."""
    seen: set[str] = set()
    files = []
    for hit in hits:
        path = hit[0]
        if path not in seen:
            seen.add(path)
            files.append(path)
    return files


def file_ranks(files: Sequence[str], gold: Iterable[str]) -> list[int | None]:
    """For each gold path, the 1-based position of the first file matching it; None if absent."""
    return [next((i for i, f in enumerate(files, start=1) if path_matches(f, g)), None) for g in gold]


def accuracy_at_k(files: Sequence[str], gold: Sequence[str], k: int) -> float:
    """1.0 when every gold file is among the top k distinct files (SWE-bench localisation Acc@k)."""
    if not gold:
        raise ValueError("accuracy_at_k needs at least one gold file")
    return 1.0 if all(r is not None and r <= k for r in file_ranks(files, gold)) else 0.0


def file_mrr(files: Sequence[str], gold: Sequence[str]) -> float:
    """1/rank of the first gold file in the list (0 when none is there)."""
    return reciprocal_rank(file_ranks(files, gold))


def average_precision(files: Sequence[str], relevant: Sequence[str]) -> float:
    """Binary AP as trec_eval computes it: mean over all relevant documents of the precision at
    each one's rank (a relevant document not retrieved contributes 0)."""
    if not relevant:
        raise ValueError("average_precision needs at least one relevant document")
    ranks = sorted(r for r in file_ranks(files, relevant) if r is not None)
    return sum(found / rank for found, rank in enumerate(ranks, start=1)) / len(relevant)


def precision_at_k(files: Sequence[str], relevant: Sequence[str], k: int) -> float:
    """Relevant documents among the top k, over k (trec_eval's P_k: a short list is not excused)."""
    return sum(1 for r in file_ranks(files[:k], relevant) if r is not None) / k
