"""The benchmark statistics: intervals that say whether a figure or a difference is measurable."""
from __future__ import annotations

from retrieval.evaluation.stats import bootstrap_interval, mean_interval, sign_test


def test_the_sign_test_of_moved_queries_is_the_two_sided_exact_binomial():
    assert sign_test(10, 0) == sign_test(0, 10) == 2 / 1024
    assert abs(sign_test(42, 31) - 0.2419) < 1e-3
    assert sign_test(5, 5) == 1.0 and sign_test(0, 0) == 1.0


def test_a_mean_interval_holds_the_mean_and_narrows_as_questions_are_added():
    values = [1.0, 0.0, 0.5, 0.25] * 5
    low, high = mean_interval(values)
    assert low < sum(values) / len(values) < high
    wide = high - low
    low, high = mean_interval(values * 20)
    assert high - low < wide / 2  # 20 times the questions: about a fifth of the width
    assert mean_interval([0.3] * 7) == (0.3, 0.3)


def test_the_interval_of_a_difference_draws_whole_repositories_too():
    # Two repositories that moved in opposite directions, each uniformly: drawing queries alone could
    # never give an interval this wide; drawing repositories does.
    pairs = [[(0.5, 0.9)] * 30, [(0.5, 0.1)] * 30]
    low, high = bootstrap_interval(pairs)
    assert low <= -0.3 and high >= 0.3
    assert bootstrap_interval(pairs) == (low, high)  # seeded
    assert bootstrap_interval(pairs + [[]]) == (low, high)  # a repository with no scored query counts in no mean
    assert bootstrap_interval([]) != bootstrap_interval([])  # nan: no data, no interval
