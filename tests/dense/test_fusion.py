"""Fusion and consolidation are pure functions: hand-made rankings in, a fused ranking out."""
from __future__ import annotations

import pytest

from retrieval.fusion import (
    Span,
    TrustConfig,
    MERGE_GROWTH,
    consolidate,
    lexical_trust,
    margin,
    rank_bonus,
    reciprocal_rank_fusion,
    score_fusion,
)


def test_reciprocal_rank_fusion_rewards_agreement_over_one_arms_top():
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["b", "c", "d"]], k=60)
    order = sorted(fused, key=lambda x: -fused[x])
    assert order[0] == "b"  # second and first beats first and absent
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["d"] == pytest.approx(1 / 63)


def test_rrf_weights_scale_each_arm():
    fused = reciprocal_rank_fusion([["a"], ["b"]], weights=[2.0, 1.0], k=0)
    assert fused == {"a": 2.0, "b": 1.0}


def test_score_fusion_moves_from_lexical_to_dense_order_with_the_share():
    lexical = {"a": 10.0, "b": 5.0, "c": 1.0}
    dense = {"a": 0.30, "b": 0.70, "c": 0.50}
    all_lexical = score_fusion(lexical, dense, 1.0)
    all_dense = score_fusion(lexical, dense, 0.0)
    assert max(all_lexical, key=all_lexical.get) == "a"
    assert max(all_dense, key=all_dense.get) == "b"
    assert all_lexical["a"] == pytest.approx(1.0) and all_dense["b"] == pytest.approx(1.0)
    assert all_dense["a"] == pytest.approx(0.0)  # the lowest dense candidate is the floor


def test_fused_items_come_in_the_arms_order_so_ties_rank_the_same_in_every_process():
    # Items the ranking cannot tell apart (identical chunks of one file) keep the order they are
    # given in; a set's order changes with the process's string hashing.
    lexical = {f"l{i:02d}": 5.0 for i in range(20)}
    dense = {f"d{i:02d}": 0.5 for i in range(20)} | {"l03": 0.5}
    fused = score_fusion(lexical, dense, 0.5, rank_weight=0.25)
    assert list(fused) == list(lexical) + [key for key in dense if key not in lexical]


def test_an_item_one_arm_missed_gets_nothing_from_it():
    fused = score_fusion({"a": 4.0}, {"a": 0.5, "z": 0.9, "y": 0.1}, 0.5)
    assert fused["z"] == pytest.approx(0.5)  # the dense best, absent from the lexical candidates
    assert fused["a"] == pytest.approx(0.5 + 0.5 * 0.5)
    imputed = score_fusion({"a": 4.0, "b": 2.0}, {"a": 0.5, "z": 0.9, "y": 0.1}, 0.5, impute=True)
    assert imputed["z"] == pytest.approx(0.5 * 0.5 + 0.5)  # as good lexically as the deepest candidate


def test_rank_bonus_gives_an_arm_s_first_candidate_the_whole_weight_and_half_at_rank_k_plus_2():
    bonus = rank_bonus({"a": 0.9, "b": 0.7, "c": 0.7, "d": 0.1}, 0.25, 2)
    assert bonus["a"] == pytest.approx(0.25)
    assert bonus["b"] == pytest.approx(0.25 * 3 / 4) and bonus["c"] == pytest.approx(0.25 * 3 / 5)  # a tie goes by name
    assert bonus["d"] == pytest.approx(0.25 / 2)
    assert rank_bonus({}, 0.25, 5) == {}


def test_with_a_rank_weight_each_arm_s_order_adds_to_the_scaled_scores():
    lexical = {"a": 10.0, "b": 9.5, "c": 2.0}
    # Flat cosines: the dense arm's twentieth candidate scales to 0.86 of its best.
    dense = {"c": 0.52, **{f"f{i:02d}": 0.515 - i * 0.001 for i in range(18)}, "d": 0.49, "e": 0.30}
    plain = score_fusion(lexical, dense, 0.4)
    ranked = score_fusion(lexical, dense, 0.4, rank_weight=0.25, rank_k=5)
    for item in plain:
        expected = plain[item] + rank_bonus(lexical, 0.25, 5).get(item, 0.0) + rank_bonus(dense, 0.25, 5).get(item, 0.0)
        assert ranked[item] == pytest.approx(expected)
    # The lexical arm's first candidate, which the dense arm never returned, passes the dense arm's
    # twentieth, which min-max scaling made look nearly as good as its best.
    assert plain["d"] > plain["a"] and ranked["a"] > ranked["d"]


@pytest.mark.extra("local", "turbovec")
def test_hybrid_gives_the_rank_bonus_to_sentences_and_reports_not_to_bare_identifiers(sample_repo, monkeypatch):
    from retrieval import service
    from retrieval.fusion import TrustConfig
    from retrieval.retrievers import hybrid

    seen = []
    real = hybrid.score_fusion

    def spy(lexical, dense, share, **options):
        seen.append(options.get("rank_weight", 0.0))
        return real(lexical, dense, share, **options)

    monkeypatch.setattr(hybrid, "score_fusion", spy)
    service.search(sample_repo, "drop the least recently used item", retriever="hybrid")
    service.search(sample_repo, "getHTTPResponse", retriever="hybrid")
    report = ("When the cache is full and a new entry arrives the least recently used item should be dropped, "
              "but after upgrading we see the newest entry evicted instead. Steps: create a cache of size two, "
              "add three keys, read the first one, then add a fourth key and list what is left in it.")
    assert len(report.split()) >= 40  # a pasted report (RankingConfig.long_query_words)
    service.search(sample_repo, report, retriever="hybrid")
    assert seen == [TrustConfig().rank_weight, 0.0, TrustConfig().rank_weight]


def test_a_lone_dense_candidate_counts_as_the_dense_arm_s_best_not_its_floor():
    # One chunk left to the dense arm (a filter, a tiny repository): min-max scaling has no range.
    fused = score_fusion({"a": 2.0, "b": 1.0}, {"c": 0.6}, 0.5)
    assert fused["c"] == pytest.approx(0.5) == fused["a"]
    assert fused["c"] > fused["b"]


def test_without_dense_candidates_the_ranking_is_the_lexical_arm_s():
    config = TrustConfig()
    lexical = {"a": 3.0, "b": 2.0, "c": 1.0}
    share = lexical_trust("sentence", list(lexical.values()), [], config)
    assert share == 1.0
    fused = score_fusion(lexical, {}, share)
    assert sorted(fused, key=lambda key: -fused[key]) == ["a", "b", "c"]


def test_a_lone_lexical_candidate_stands_out_and_takes_the_highest_share():
    config = TrustConfig()
    assert margin([4.0]) == 1.0
    assert lexical_trust("sentence", [4.0], [0.5, 0.49, 0.48], config) == config.highest


@pytest.mark.extra("local", "turbovec")
def test_hybrid_gives_a_sentence_naming_its_lexical_best_file_at_least_the_named_file_share(sample_repo, monkeypatch):
    from retrieval import service
    from retrieval.fusion import TrustConfig
    from retrieval.retrievers import hybrid

    shares = []
    real = hybrid.score_fusion

    def spy(lexical, dense, share, **options):
        shares.append(share)
        return real(lexical, dense, share, **options)

    monkeypatch.setattr(hybrid, "score_fusion", spy)
    hits = service.search(sample_repo, "how config.py reads the settings file", retriever="hybrid", top_k=3).hits
    assert hits and len(shares) == 1 and shares[0] >= TrustConfig().named_file


@pytest.mark.extra("local", "turbovec")
def test_hybrid_hits_keep_to_the_path_filter_in_both_arms(sample_repo):
    from retrieval import service

    only = service.QueryFilter(paths=("src/app/config.py",))
    hits = service.search(sample_repo, "fetch a URL, retrying on failure", retriever="hybrid", top_k=10,
                          filters=only).hits
    assert hits and {h.source_path for h in hits} == {"src/app/config.py"}


def test_margin_tells_a_standout_from_flat_scores():
    assert margin([10, 1, 1, 1]) == pytest.approx(0.9)
    assert margin([5, 5, 5, 5]) == 0.0
    assert margin([]) == 0.0


def test_trust_follows_the_query_kind_and_the_margins():
    config = TrustConfig()
    assert lexical_trust("symbol", [1.0], [0.5], config) == config.symbol
    assert lexical_trust("long", [1.0], [0.5], config) == config.long
    standout = lexical_trust("sentence", [10, 1, 1, 1], [0.5, 0.49, 0.48], config)
    flat = lexical_trust("sentence", [3, 3, 3, 3], [0.9, 0.3, 0.3], config)
    assert standout > config.base > flat
    assert config.lowest <= flat and standout <= config.highest
    assert lexical_trust("sentence", [], [0.5], config) == 0.0


def test_a_query_naming_the_lexical_best_file_gives_the_lexical_arm_at_least_its_floor():
    config = TrustConfig()
    flat = ([3, 3, 3, 3], [0.9, 0.3, 0.3])
    assert lexical_trust("sentence", *flat, config) < config.named_file
    assert lexical_trust("sentence", *flat, config, names_file=True) == config.named_file
    standout = ([10, 1, 1, 1], [0.5, 0.49, 0.48])
    assert lexical_trust("sentence", *standout, config, names_file=True) >= config.named_file
    assert lexical_trust("symbol", *flat, config, names_file=True) == config.symbol  # not lowered


def test_consolidation_merges_overlapping_and_adjacent_spans_with_provenance():
    rankings = {
        "lexical": [Span("a.py", 10, 20, 9.0), Span("b.py", 1, 5, 8.0)],
        "turbovec": [Span("a.py", 21, 30, 0.9), Span("c.py", 1, 9, 0.8)],
        "hybrid": [Span("a.py", 15, 25, 1.0), Span("b.py", 40, 50, 0.7)],
    }
    merged = consolidate(rankings)
    top = merged[0]
    assert (top.path, top.start_line, top.end_line) == ("a.py", 10, 30)
    assert sorted(top.provenance) == ["hybrid", "lexical", "turbovec"] and top.agreement == 3
    assert top.ranks == {"lexical": 1, "turbovec": 1, "hybrid": 1}
    b_spans = sorted((s.start_line, s.end_line) for s in merged if s.path == "b.py")
    assert b_spans == [(1, 5), (40, 50)]  # far apart in one file: two hits
    assert all(s.agreement == 1 for s in merged[1:])


def test_consolidation_joins_a_span_that_bridges_two_others():
    rankings = {"x": [Span("f.py", 1, 10, 1.0), Span("f.py", 20, 30, 1.0)], "y": [Span("f.py", 8, 22, 1.0)]}
    merged = consolidate(rankings)
    assert [(s.start_line, s.end_line, s.agreement) for s in merged] == [(1, 30, 2)]
    assert merged[0].ranks == {"x": 1, "y": 1}  # a retriever counts once, at its best rank


def test_a_chain_of_touching_spans_stops_growing_at_twice_its_longest_member():
    # Four retrievers' 40-line chunks, each touching the next: merging them all would hand an
    # agent one 160-line hit for four retrievers' worth of 40-line answers.
    rankings = {name: [Span("f.py", 1 + 40 * i, 40 * (i + 1), 1.0)] for i, name in enumerate("abcd")}
    merged = consolidate(rankings)
    spans = sorted((s.start_line, s.end_line) for s in merged)
    assert spans == [(1, 80), (81, 160)]
    assert all(s.lines <= MERGE_GROWTH * 40 for s in merged)
    assert sorted(sorted(s.provenance) for s in merged) == [["a", "b"], ["c", "d"]]


def test_a_span_that_cannot_merge_keeps_only_the_lines_no_other_hit_covers():
    rankings = {"lead": [Span("f.py", 1, 30, 1.0)], "other": [Span("f.py", 20, 100, 1.0)],
                "third": [Span("f.py", 25, 28, 1.0)]}
    merged = consolidate(rankings)
    spans = sorted((s.start_line, s.end_line, tuple(s.provenance)) for s in merged)
    # A long span over a short one: the union (1-100) is within twice the longer (81 lines), so one hit.
    assert spans == [(1, 100, ("lead", "other", "third"))]
    rankings = {"lead": [Span("f.py", 1, 30, 1.0)], "other": [Span("f.py", 25, 64, 1.0)],
                "third": [Span("f.py", 60, 90, 1.0)]}
    merged = consolidate(rankings)
    spans = sorted((s.start_line, s.end_line, tuple(s.provenance)) for s in merged)
    # lead + other = 1-64 (64 <= 2 * 40); third would make 1-90 (> 80): it keeps 65-90 alone.
    assert spans == [(1, 64, ("lead", "other")), (65, 90, ("third",))]
    for a, b in zip(spans, spans[1:]):
        assert a[1] < b[0]  # hits of one file never overlap


def test_of_two_overlapping_hits_that_cannot_merge_the_lower_scored_gives_up_the_shared_lines():
    """requests' `rebuild_auth` (282-300, treesitter) merged into the best place and then lost its
    last lines to a deeper line chunk beginning inside it (297-331): shown as 237-296."""
    lines = [Span("s.py", 262, 295, 1.0), Span("s.py", 237, 260, 0.9), Span("s.py", 297, 331, 0.8)]
    rankings = {"lexical": lines, "hybrid": lines,
                "treesitter": [Span("s.py", 282, 300, 1.0, kind="method", context="Mixin.rebuild_auth",
                                    symbol="rebuild_auth", scope=(282, 300))]}
    merged = consolidate(rankings)
    top = merged[0]
    assert (top.start_line, top.end_line, top.context) == (237, 300, "Mixin.rebuild_auth")
    assert [(s.start_line, s.end_line) for s in merged[1:]] == [(301, 331)]
    assert sorted(merged[1].provenance) == ["hybrid", "lexical"]


def test_a_span_that_gives_up_a_retriever_s_lines_gives_its_credit_to_the_hit_that_shows_them():
    """lexical's 28-33 joined treesitter's 5-25, then gave its lines up to the lead's better hit
    26-47: the hit 5-25 said `found by lexical` (and kept lexical's score), 26-47 did not."""
    rankings = {"lexical": [Span("a.py", 28, 33, 1.0)], "hybrid": [Span("a.py", 37, 47, 1.0)],
                "treesitter": [Span("a.py", 5, 25, 1.0), Span("a.py", 26, 46, 1.0)]}
    merged = consolidate(rankings, weights={"hybrid": 100.0})
    assert [(s.start_line, s.end_line, s.ranks) for s in merged] == [
        (26, 47, {"hybrid": 1, "treesitter": 2, "lexical": 1}), (5, 25, {"treesitter": 1})]
    assert merged[1].provenance == ["treesitter"] and merged[1].score == 1 / 2


def test_a_whole_file_hit_still_absorbs_every_span_of_its_file():
    rankings = {"x": [Span("f.py", None, None, 1.0)], "y": [Span("f.py", 1, 40, 1.0), Span("f.py", 200, 260, 1.0)]}
    merged = consolidate(rankings)
    assert [(s.start_line, s.end_line, s.agreement) for s in merged] == [(None, None, 2)]


def test_a_line_chunk_merged_with_a_syntax_aware_one_takes_its_scope_widened_to_the_merged_span():
    rankings = {
        "hybrid": [Span("a.py", 90, 120, 1.0)],  # line chunks know no scope
        "treesitter": [Span("a.py", 96, 130, 0.5, kind="function", context="prompt", symbol="prompt",
                            scope=(83, 125))],
    }
    (top,) = consolidate(rankings, weights={"hybrid": 100.0})
    assert (top.start_line, top.end_line) == (90, 130)
    assert (top.context, top.symbol, top.kind) == ("prompt", "prompt", "function")
    assert top.scope == (83, 130)  # the function's lines, and all of the merged span


def test_a_merged_span_keeps_what_its_best_placed_retriever_said_of_it():
    rankings = {
        "treesitter": [Span("a.py", 10, 20, 9.0, language="python", kind="method", context="Router.add_route",
                            symbol="add_route")],
        "turbovec": [Span("x.py", 1, 2, 0.9), Span("a.py", 18, 30, 0.5, language="python", kind="code")],
    }
    top = next(s for s in consolidate(rankings) if s.path == "a.py")
    assert (top.start_line, top.end_line) == (10, 30)
    assert (top.language, top.kind, top.context, top.symbol) == ("python", "method", "Router.add_route", "add_route")


def test_of_two_retrievers_that_say_what_a_merged_span_is_the_better_placed_one_names_it():
    rankings = {
        "treesitter": [Span("a.py", 10, 20, 9.0, kind="method", context="Router.add_route", symbol="add_route",
                            scope=(10, 20))],
        "pi-serini": [Span("x.py", 1, 2, 0.9), Span("a.py", 18, 30, 0.5, kind="class", context="Router",
                                                     symbol="Router", scope=(1, 40))],
    }
    top = next(s for s in consolidate(rankings) if s.path == "a.py")
    assert (top.start_line, top.end_line) == (10, 30)
    assert (top.kind, top.context, top.symbol) == ("method", "Router.add_route", "add_route")


def test_spans_more_than_two_lines_apart_stay_two_hits_whichever_was_found_first():
    near, far = Span("f.py", 1, 10, 1.0), Span("f.py", 15, 20, 1.0)  # lines 11-14 between them
    for rankings in ({"x": [near], "y": [far]}, {"x": [far], "y": [near]}):
        merged = consolidate(rankings)
        assert sorted((s.start_line, s.end_line) for s in merged) == [(1, 10), (15, 20)]


def test_a_deeper_span_cut_by_a_hit_above_keeps_its_longest_free_run():
    from retrieval.fusion import append_below

    out = append_below([Span("f.py", 40, 45, 1.0)], [Span("f.py", 1, 100, 0.5)])
    assert [(s.start_line, s.end_line) for s in out] == [(40, 45), (46, 100)]


def test_deeper_spans_score_below_those_above_them_in_their_own_order():
    from retrieval.fusion import append_below

    out = append_below([Span("a.py", 1, 5, 2.0), Span("b.py", 1, 5, 0.05)],
                       [Span("c.py", 1, 5, 4.5), Span("d.py", 1, 5, 3.0)])
    scores = [s.score for s in out]
    assert scores[:2] == [2.0, 0.05] and scores == sorted(scores, reverse=True)
    assert scores[2] == pytest.approx(0.05) and scores[3] == pytest.approx(0.05 * 3.0 / 4.5)


class _Fixed:
    """An engine that answers every query with the same hits."""

    def __init__(self, *spans):
        from retrieval.records import SearchHit

        self.hits = [SearchHit(f"{p}:{a}-{b}", p, a, b, n, 1.0 / n, language="python", kind="code")
                     for n, (p, a, b) in enumerate(spans, start=1)]

    def search_detailed(self, query, top_k=10, *, allow=None):
        return self.hits[:top_k]


def test_all_follows_the_lead_retriever_and_counts_the_others_agreement():
    from retrieval.multi import AllEngine

    engines = {
        "lexical": _Fixed(("b.py", 1, 10), ("c.py", 1, 10), ("a.py", 1, 10)),
        "turbovec": _Fixed(("b.py", 1, 10), ("d.py", 1, 10)),
        "hybrid": _Fixed(("a.py", 1, 10), ("b.py", 1, 10)),
    }
    hits = AllEngine(engines).search_detailed("q", 4)
    assert [h.source_path for h in hits[:2]] == ["a.py", "b.py"]  # hybrid's order, not the majority's
    assert hits[1].extra["agreement"] == 3 and hits[0].extra["agreement"] == 2
    assert {h.source_path for h in hits[2:]} == {"c.py", "d.py"}  # found by the others only: after
    without = AllEngine({k: v for k, v in engines.items() if k != "hybrid"}).search_detailed("q", 4)
    assert [h.source_path for h in without[:3]] == ["b.py", "c.py", "a.py"]  # lexical leads then


def test_all_gives_the_same_first_hits_with_the_same_spans_whatever_top_k():
    from retrieval.multi import MERGE_DEPTH, AllEngine

    filler = [(f"f{i}.py", 1, 10) for i in range(MERGE_DEPTH + 10)]
    # a.py:1-30's neighbour a.py:31-50 comes only from deep down each list (what -k 30 fetches).
    engines = {
        "lexical": _Fixed(("a.py", 1, 30), *filler[:MERGE_DEPTH + 3], ("a.py", 31, 50)),
        "hybrid": _Fixed(("a.py", 1, 30), *filler[1:MERGE_DEPTH + 2], ("a.py", 31, 50)),
    }
    spans = {k: [(h.source_path, h.start_line, h.end_line) for h in AllEngine(engines).search_detailed("q", k)]
             for k in (3, 10, 30)}
    assert spans[3][0] == ("a.py", 1, 30)
    assert spans[10][:3] == spans[3] and spans[30][:10] == spans[10]
    assert ("a.py", 31, 50) in spans[30]  # still a hit of its own, below


class _Deepening(_Fixed):
    """An engine whose first hits change with how many are asked for, as hybrid's do (its dense
    arm fetches max(100, top_k) candidates): deeper than 100, b.py comes first."""

    def search_detailed(self, query, top_k=10, *, allow=None):
        hits = self.hits if top_k <= 100 else [self.hits[1], self.hits[0], *self.hits[2:]]
        return hits[:top_k]


def test_all_gives_the_same_first_hits_whatever_top_k_when_a_retriever_s_order_depends_on_its_depth():
    """-k 500 (each retriever asked for 1,000) reordered the first hits that -k 10 gave."""
    from retrieval.multi import AllEngine

    filler = [(f"f{i}.py", 1, 10) for i in range(300)]
    engines = {"lexical": _Fixed(*filler), "hybrid": _Deepening(("a.py", 1, 10), ("b.py", 1, 10), *filler)}
    shallow = [h.docid for h in AllEngine(engines).search_detailed("q", 10)]
    assert shallow[:2] == ["a.py:1-10", "b.py:1-10"]
    assert [h.docid for h in AllEngine(engines).search_detailed("q", 500)][:10] == shallow


def test_spans_that_tie_are_ordered_by_path_whatever_order_their_retrievers_were_added_in():
    """1/2 + 1/3 + 1/6 summed in that order is 1.0, in another 0.9999999999999999: b.py came first."""
    def spans(*paths):
        return [Span(path, 1, 5, 1.0) for path in paths]

    rankings = {"pi-serini": spans("a.py", "f1.py", "f2.py", "f3.py", "b.py"),  # a.py: ranks 1, 2 and 5
                "treesitter": spans("b.py", "a.py", "f4.py", "f5.py", "f6.py"),  # b.py: ranks 5, 1 and 2
                "turbovec": spans("f7.py", "b.py", "f8.py", "f9.py", "a.py")}
    for order in (rankings, dict(reversed(rankings.items()))):  # a.py is met first in one, b.py in the other
        tied = [s for s in consolidate(order) if s.path in ("a.py", "b.py")]
        assert [s.path for s in tied] == ["a.py", "b.py"] and tied[0].score == tied[1].score


def test_deeper_candidates_are_appended_without_overlapping_the_hits_above():
    from retrieval.fusion import append_below

    first = [Span("a.py", 10, 20, 1.0), Span("b.py", 1, 5, 0.9)]
    more = [Span("a.py", 15, 30, 0.5), Span("a.py", 12, 18, 0.4), Span("c.py", 1, 9, 0.3)]
    out = append_below(first, more)
    assert [(s.path, s.start_line, s.end_line) for s in out] == [
        ("a.py", 10, 20), ("b.py", 1, 5), ("a.py", 21, 30), ("c.py", 1, 9)]  # a.py:12-18 is covered: gone


def test_a_whole_file_hit_takes_no_deeper_span_of_its_file_and_a_file_with_hits_takes_no_whole_file_one():
    """A whole-file hit (no lines) above met a deeper span of its file: TypeError in the clipping,
    or, for a deeper whole-file span, a second hit of one file."""
    from retrieval.fusion import append_below

    whole = [Span("a.md", None, None, 1.0)]
    assert append_below(whole, [Span("a.md", 5, 9, 0.5), Span("a.md", None, None, 0.4)]) == whole
    lines = [Span("b.md", 1, 9, 1.0)]
    assert append_below(lines, [Span("b.md", None, None, 0.5), Span("c.md", None, None, 0.4)]) == [
        *lines, Span("c.md", None, None, 0.4)]


def test_a_span_inside_a_merged_hit_is_credited_to_that_hit_not_to_a_neighbour_it_touches():
    rankings = {
        "lexical": [Span("a.js", 812, 879, 1.0), Span("a.js", 742, 810, 0.8)],  # one hit, 742-879
        "turbovec": [Span("a.js", 881, 918, 0.9)],  # its neighbour: adjacent, too long to join
        "hybrid": [Span("a.js", 812, 879, 1.0)],  # joins 742-879 (which moves behind 881-918)
        "pi-serini": [Span("a.js", 812, 879, 1.0)],  # the same chunk first: it agrees on that hit
    }
    merged = consolidate(rankings)
    holder = next(s for s in merged if s.start_line <= 812 and s.end_line >= 879)
    assert holder.ranks == {"lexical": 1, "hybrid": 1, "pi-serini": 1}
    assert all("pi-serini" not in s.provenance for s in merged if s is not holder)


def test_hits_from_deeper_candidates_carry_their_true_ranks():
    """They were consolidated apart and counted from 1: `lexical: 1` on lexical's 21st hit."""
    from retrieval.multi import MERGE_DEPTH, AllEngine

    filler = [(f"f{i}.py", 1, 10) for i in range(MERGE_DEPTH)]
    engines = {"lexical": _Fixed(*filler, ("deep.py", 1, 10)), "hybrid": _Fixed(*filler[:3])}
    hits = AllEngine(engines).search_detailed("q", MERGE_DEPTH + 1)
    deep = next(h for h in hits if h.source_path == "deep.py")
    assert deep.extra["ranks"] == {"lexical": MERGE_DEPTH + 1}
    assert deep.score <= min(h.score for h in hits if h.source_path != "deep.py")


def test_a_deeper_hit_credits_only_the_retrievers_that_found_its_lines_not_those_whose_span_is_a_hit_above():
    """lexical's 21st, a.py:1-40, merged with hybrid's a.py:41-60 and was clipped to 41-60 by the
    first hit: `found by lexical, hybrid` (ranks lexical 21) for lines lexical never returned."""
    from retrieval.multi import MERGE_DEPTH, AllEngine

    filler = [(f"f{i}.py", 1, 10) for i in range(2 * MERGE_DEPTH)]
    engines = {
        "lexical": _Fixed(*filler[:MERGE_DEPTH], ("a.py", 1, 40)),
        "hybrid": _Fixed(("a.py", 1, 40), *filler[MERGE_DEPTH:2 * MERGE_DEPTH - 1], ("a.py", 41, 60)),
    }
    hits = AllEngine(engines).search_detailed("q", 3 * MERGE_DEPTH)
    assert hits[0].docid == "a.py:1-40" and hits[0].extra["provenance"] == ["hybrid"]
    below = next(h for h in hits if h.source_path == "a.py" and h.start_line == 41)
    assert below.end_line == 60 and below.extra["provenance"] == ["hybrid"]
    assert below.extra["ranks"] == {"hybrid": MERGE_DEPTH + 1}


def test_a_remnant_of_one_or_two_lines_is_not_a_hit():
    """What a deeper span kept of itself between two hits was their blank line 800, taking a slot."""
    from retrieval.fusion import append_below

    first = [Span("f.rb", 761, 799, 1.0), Span("f.rb", 801, 850, 0.9)]
    out = append_below(first, [Span("f.rb", 761, 804, 0.5), Span("f.rb", 700, 760, 0.4)])
    assert [(s.start_line, s.end_line) for s in out] == [(761, 799), (801, 850), (700, 760)]
    # Two lines left (800-801 between hits ending at 799 and starting at 802) are no hit either.
    first_apart = [Span("f.rb", 761, 799, 1.0), Span("f.rb", 802, 850, 0.9)]
    out = append_below(first_apart, [Span("f.rb", 761, 805, 0.5)])
    assert [(s.start_line, s.end_line) for s in out] == [(761, 799), (802, 850)]
    # A hit that is one line of its own is kept.
    assert [(s.start_line, s.end_line) for s in append_below(first, [Span("f.rb", 7, 7, 0.5)])][-1] == (7, 7)


def test_all_hits_carry_the_lead_retriever_s_confidence_for_the_spans_it_found():
    """`--retriever all` dropped every level: an agent lost the one calibrated signal, and
    `--min-confidence high` returned low hits."""
    from dataclasses import replace

    from retrieval.multi import AllEngine

    lexical = _Fixed(("a.py", 1, 10), ("b.py", 1, 10))
    lexical.hits = [replace(h, confidence=level) for h, level in zip(lexical.hits, ("high", "low"))]
    engines = {"lexical": lexical, "turbovec": _Fixed(("c.py", 1, 10), ("a.py", 5, 12))}
    hits = AllEngine(engines).search_detailed("q", 3)
    assert {h.source_path: h.confidence for h in hits} == {"a.py": "high", "b.py": "low", "c.py": ""}


def test_min_confidence_applies_to_all_with_the_lead_s_levels(make_tree):
    from retrieval.multi import search_all

    root = make_tree({"auth/tokens.py": "def refresh_oauth_token(session):\n    return session.renew()\n",
                      "misc/notes.py": "# the token is mentioned here once\nvalue = 1\n"})
    result = search_all(str(root), "refresh_oauth_token", min_confidence="high")
    assert [(h.source_path, h.confidence, h.rank) for h in result.hits] == [("auth/tokens.py", "high", 1)]
    assert not any("does not apply" in note for note in result.notes)


@pytest.mark.extra("local", "turbovec")
def test_hybrid_gives_both_arms_a_report_without_its_template_comments_and_version_listing(sample_repo, monkeypatch):
    from retrieval import service
    from retrieval.retrievers.dense import DenseRetriever
    from retrieval.retrievers.lexical import LexicalRetriever

    asked = {}
    real_dense, real_lexical = DenseRetriever.candidates, LexicalRetriever.first_stage

    def dense_spy(self, query, *args, **kwargs):
        asked["dense"] = query
        return real_dense(self, query, *args, **kwargs)

    def lexical_spy(self, query, *args, **kwargs):
        asked["lexical"] = query
        return real_lexical(self, query, *args, **kwargs)

    monkeypatch.setattr(DenseRetriever, "candidates", dense_spy)
    monkeypatch.setattr(LexicalRetriever, "first_stage", lexical_spy)
    report = ("Evicting from a full cache drops the newest entry\n<!-- Please describe the bug -->\n"
              "When the cache is full the least recently used item should be dropped.\n\n"
              "numpy: 1.19.1\npandas: 1.1.2\npytest: 6.0.1\nsetuptools: 49.6.0\n")
    service.search(sample_repo, report, retriever="hybrid")
    assert asked["dense"] == asked["lexical"]
    assert "Please describe" not in asked["dense"] and "numpy" not in asked["dense"]
    assert "least recently used item should be dropped" in asked["dense"]
