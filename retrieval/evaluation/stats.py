"""How sure a benchmark figure is: bootstrap intervals and the sign test (standard library only).

A dev set is a sample; the acceptance set is another one. A difference smaller than what resampling
the dev set moves is not evidence of anything, so the benchmark scripts print these beside each figure.
"""
from __future__ import annotations

import math
import random

RESAMPLES = 2000


def bootstrap_interval(pairs: list[list[tuple[float, float]]], resamples: int = RESAMPLES,
                       seed: int = 0) -> tuple[float, float] | None:
    """95% interval of the difference (after - before) of the mean over groups (repositories) of the
    mean over their queries, from `pairs`: per group, each query's (before, after) score. Groups are
    drawn with replacement, then each drawn group's queries: the set a target is accepted on has other
    repositories as well as other queries. Seeded, so the same scores always give the same interval.
    None when nothing is scored (no interval, rather than NaN, which JSON cannot carry)."""
    deltas = [[y - x for x, y in repo] for repo in pairs if repo]  # a group with no scored query has no mean
    if not deltas:
        return None
    rng = random.Random(seed)
    means = []
    for _ in range(resamples):
        total = 0.0
        for repo in rng.choices(deltas, k=len(deltas)):
            total += sum(rng.choices(repo, k=len(repo))) / len(repo)
        means.append(total / len(deltas))
    means.sort()
    return (means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1])


def sign_test(up: int, down: int) -> float:
    """Two-sided exact binomial p-value of `up` rises against `down` falls under no effect."""
    n = up + down
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(up, down) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def mean_interval(values: list[float], resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, float] | None:
    """95% interval of the mean of `values` (queries drawn with replacement), seeded; None without values."""
    return bootstrap_interval([[(0.0, v) for v in values]], resamples, seed)
