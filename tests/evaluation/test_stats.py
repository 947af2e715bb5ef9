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
    assert bootstrap_interval([]) is None and mean_interval([]) is None  # no data, no interval (not NaN)


def _run(name: str, ndcgs: list) -> "RetrieverRun":
    from retrieval.evaluation.runner import QueryRow, RetrieverRun

    rows = [QueryRow(str(i), f"q{i}", "semantic", 1, 1 if v is not None else 0,
                     {"ndcg": v, "recall": v, "mrr": v}, {}, [], 0.001) for i, v in enumerate(ndcgs)]
    return RetrieverRun(name, 10, ("ndcg",), "up to date", 0.0, 0.0, rows)


def test_retrieval_eval_shows_each_retrievers_interval_and_its_difference_from_the_first():
    from retrieval.evaluation.report import interval_text

    lexical = _run("lexical", [1.0, 0.0, 0.5, 1.0, 0.0, None] * 4)
    same_but_one = _run("hybrid", [1.0, 0.0, 0.5, 1.0, 0.0, None] * 3 + [1.0, 1.0, 0.5, 1.0, 0.0, None])
    low, high = lexical.interval()
    assert low < lexical.summary()["ndcg"] < high
    d_low, d_high = same_but_one.paired_interval(lexical)
    assert d_low == 0.0 < d_high  # one query of 20 rose: the same queries are drawn for both runs
    lines = interval_text([lexical, same_but_one], "NDCG@10").splitlines()
    assert lines[0].split() == ["retriever", "NDCG@10", "95%", "interval", "minus", "lexical", "its", "95%", "interval"]
    assert lines[2].split() == ["lexical", f"{low:.3f}-{high:.3f}"]
    assert lines[3].split()[2:] == ["+0.050", "+0.000", "to", f"{d_high:+.3f}"]
