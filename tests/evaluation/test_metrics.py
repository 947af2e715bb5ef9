"""The metrics pinned on hand-computed cases (the definitions are in ../shared/bench/README.md)."""
from __future__ import annotations

import math

import pytest

from retrieval.evaluation import metrics as m
from retrieval.evaluation.datasets import EvalQuery, Target
from retrieval.evaluation.runner import TreePaths, score_query


def test_path_matches_on_a_slash_boundary_only():
    assert m.path_matches("b/x.py", "b/x.py")
    assert m.path_matches("a/b/x.py", "b/x.py")
    assert m.path_matches("a/b/x.py", "x.py")
    assert not m.path_matches("ab/x.py", "b/x.py")
    assert not m.path_matches("a/bx.py", "x.py")
    assert not m.path_matches("b/x.py", "a/b/x.py")  # the target must be the suffix, not the hit


@pytest.mark.parametrize(
    "hit, target, expected",
    [
        ((10, 20), (20, 30), True),  # sharing one line is an overlap
        ((10, 20), (21, 30), False),
        ((25, 26), (20, 30), True),  # hit inside the target
        ((1, 100), (20, 30), True),  # target inside the hit
        ((31, 40), (20, 30), False),
        ((None, None), (20, 30), True),  # a hit without a span is the whole file
        ((10, 20), (None, None), True),  # a target without a span is the whole file
    ],
)
def test_span_overlap(hit, target, expected):
    assert m.hit_matches(("a.py", *hit), Target("a.py", *target)) is expected


def test_rank_is_the_first_matching_hit_within_k():
    hits = [("x.py", 1, 9), ("a.py", 1, 9), ("a.py", 20, 30), ("b.py", 1, 5)]
    targets = [Target("a.py", 25, 26), Target("a.py"), Target("b.py")]
    assert m.target_ranks(hits, targets, k=10) == [3, 2, 4]
    assert m.target_ranks(hits, targets, k=3) == [3, 2, None]


def test_ndcg_hand_computed():
    # Two targets, found at ranks 1 and 3: DCG = 1 + 1/log2(4) = 1.5; IDCG = 1 + 1/log2(3).
    hits = [("a.py", 1, 5), ("x.py", 1, 5), ("b.py", 1, 5)]
    scores = m.span_scores(hits, [Target("a.py"), Target("b.py")], k=10)
    assert scores["ndcg"] == pytest.approx(1.5 / (1 + 1 / math.log2(3)))
    assert scores["recall"] == 1.0
    assert scores["mrr"] == 1.0


def test_ndcg_one_target_found_late():
    hits = [("x.py", 1, 5)] * 4 + [("a.py", 1, 5)]
    scores = m.span_scores(hits, [Target("a.py"), Target("b.py")], k=10)
    assert scores["ndcg"] == pytest.approx((1 / math.log2(6)) / (1 + 1 / math.log2(3)))
    assert scores["recall"] == 0.5
    assert scores["mrr"] == pytest.approx(1 / 5)


def test_idcg_counts_at_most_k_perfect_hits():
    assert m.ideal_dcg(n=3, k=1) == 1.0
    assert m.ndcg([1, None, None], n=3, k=1) == 1.0
    assert m.ndcg([2], n=1, k=10) == pytest.approx(1 / math.log2(3))
    assert m.ndcg([], n=0, k=10) is None


def test_targets_missing_from_the_tree_do_not_count_in_the_ideal():
    tree = TreePaths(["pkg/a.py", "pkg/b.py"], anchor="/r/")
    query = EvalQuery("q", (Target("pkg/a.py"), Target("pkg/gone.py"), Target("b.py")))
    row = score_query(query, [("pkg/x.py", 1, 2), ("pkg/b.py", 1, 2)], tree, k=10, families=("ndcg",))
    assert row.n_targets == 3 and row.n_existing == 2
    # b.py found at rank 2, a.py not found; n = 2 (the missing target is left out).
    assert row.scores["ndcg"] == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    assert row.scores["recall"] == 0.5
    assert row.scores["mrr"] == 0.5


def test_targets_relative_to_a_parent_of_the_root_match_by_suffix():
    # semble: the root is <checkout>/aiohttp, the annotation says aiohttp/client.py.
    tree = TreePaths(["client.py", "web.py"], anchor="/co/aiohttp/")
    query = EvalQuery("q", (Target("aiohttp/client.py"), Target("web.py")))
    row = score_query(query, [("client.py", 1, 9), ("web.py", 1, 9)], tree, k=10, families=("ndcg",))
    assert row.n_existing == 2
    assert row.scores["ndcg"] == pytest.approx(1.0)


def test_a_query_without_existing_targets_is_not_scored():
    tree = TreePaths(["a.py"], anchor="/r/")
    row = score_query(EvalQuery("q", (Target("gone.py"),)), [("a.py", 1, 2)], tree, 10, ("ndcg", "files"))
    assert row.n_existing == 0
    assert all(v is None for v in row.scores.values())


def test_document_ids_resolve_to_the_one_file_with_that_stem():
    tree = TreePaths(["docs/CACM-0001.txt", "docs/CACM-0002.txt"], anchor="/r/")
    assert tree.resolve(Target("CACM-0002")) == Target("/r/docs/CACM-0002.txt")
    assert tree.resolve(Target("CACM-0003")) is None
    ambiguous = TreePaths(["a/x.py", "a/x.txt"], anchor="/r/")
    assert ambiguous.resolve(Target("a/x")) is None


def test_distinct_files_keep_the_best_rank():
    hits = [("a.py", 1, 2), ("b.py", 1, 2), ("a.py", 5, 9), ("c.py", None, None)]
    assert m.distinct_files(hits) == ["a.py", "b.py", "c.py"]


def test_accuracy_at_k_needs_every_gold_file():
    files = ["x.py", "a.py", "y.py", "b.py", "z.py"]
    assert m.accuracy_at_k(files, ["a.py"], 1) == 0.0
    assert m.accuracy_at_k(files, ["a.py"], 2) == 1.0
    assert m.accuracy_at_k(files, ["a.py", "b.py"], 3) == 0.0
    assert m.accuracy_at_k(files, ["a.py", "b.py"], 5) == 1.0
    assert m.accuracy_at_k(files, ["a.py", "gone.py"], 5) == 0.0
    assert m.file_mrr(files, ["b.py", "a.py"]) == 0.5
    assert m.file_mrr(files, ["gone.py"]) == 0.0


def test_average_precision_and_precision_at_k():
    # Relevant a and c at ranks 1 and 3: AP = (1/1 + 2/3) / 2.
    assert m.average_precision(["a", "b", "c"], ["a", "c"]) == pytest.approx((1 + 2 / 3) / 2)
    # An unretrieved relevant document counts as precision 0.
    assert m.average_precision(["a"], ["a", "z"]) == 0.5
    assert m.average_precision(["b"], ["a"]) == 0.0
    assert m.precision_at_k(["a", "b", "c"], ["a", "c"], 2) == 0.5
    assert m.precision_at_k(["a"], ["a"], 30) == pytest.approx(1 / 30)  # a short list is not excused


def test_file_families_through_score_query():
    tree = TreePaths(["a.py", "b.py", "c.py"], anchor="/r/")
    hits = [("c.py", 1, 2), ("c.py", 3, 4), ("a.py", 1, 2), ("b.py", 1, 2)]
    row = score_query(EvalQuery("q", (Target("a.py"), Target("b.py"))), hits, tree, 10, ("files", "map"))
    assert row.ranks["files"] == [2, 3]
    assert row.scores["acc@1"] == 0.0 and row.scores["acc@3"] == 1.0 and row.scores["acc@5"] == 1.0
    assert row.scores["file_mrr"] == 0.5
    assert row.scores["map"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert row.scores["p@30"] == pytest.approx(2 / 30)


def test_map_counts_judged_documents_missing_from_the_tree():
    # trec_eval semantics: R is every judged relevant document, whether the tree has it or not.
    tree = TreePaths(["CACM-0001.txt", "CACM-0002.txt"], anchor="/r/")
    query = EvalQuery("q", (Target("CACM-0001"), Target("CACM-115")), "cacm")
    row = score_query(query, [("CACM-0001.txt", 1, 3), ("CACM-0002.txt", 1, 3)], tree, 1000, ("ndcg", "map"))
    assert row.scores["map"] == 0.5
    assert row.scores["ndcg"] == 1.0  # NDCG's n counts only the target that exists


def test_two_spellings_of_one_file_are_one_target_and_ndcg_stays_within_one():
    tree = TreePaths(["evaluation/stats.py", "other.py"], anchor="/r/")
    query = EvalQuery("q", (Target("stats.py"), Target("evaluation/stats.py")))
    row = score_query(query, [("evaluation/stats.py", 1, 9)], tree, k=1, families=("ndcg",))
    assert row.n_existing == 1 and row.scores["ndcg"] == 1.0


def test_a_file_at_the_root_is_that_file_not_a_namesake_deeper_down():
    tree = TreePaths(["cli.py", "evaluation/cli.py"], anchor="/r/")
    row = score_query(EvalQuery("q", (Target("cli.py"),)), [("evaluation/cli.py", 1, 9), ("cli.py", 1, 9)],
                      tree, k=10, families=("ndcg",))
    assert row.ranks["span"] == [2]
    # A suffix naming several files, none at the root, keeps the benchmark's rule: any of them.
    deeper = TreePaths(["a/cli.py", "b/cli.py"], anchor="/r/")
    assert score_query(EvalQuery("q", (Target("cli.py"),)), [("b/cli.py", 1, 2)], deeper, 10, ("ndcg",)).ranks["span"] == [1]


def test_a_span_starting_past_the_end_of_its_file_is_a_missing_target(tmp_path):
    (tmp_path / "stats.py").write_text("".join(f"line {n}\n" for n in range(46)))
    tree = TreePaths.walk(str(tmp_path))
    assert tree.resolve(Target("stats.py", 46, 50)) is not None
    assert tree.resolve(Target("stats.py", 500, 600)) is None
