"""BM25 scoring, checked against the formula computed by hand, and its deterministic ranking."""
from __future__ import annotations

import math
from collections import Counter

import pytest

from retrieval.lexical.bm25 import BM25Params, SegmentView, best_hits, idf, score
from retrieval.lexical.segment import MemorySegment, SegmentBuilder
from retrieval.records import Document
from retrieval.retrievers.lexical import LexicalRetriever, _AllowedDocs
from retrieval.text import term_counts

# Three tiny documents made of words that the tokenizer keeps as they are.
DOCS = [
    ("a", "cat dog"),  # cat 1, dog 1                 dl 2
    ("b", "cat cat bird fish"),  # cat 2, bird 1, fish 1  dl 4
    ("c", "dog bird"),  # dog 1, bird 1                dl 2
]
N = 3
AVGDL = (2 + 4 + 2) / 3


def by_hand(tf: int, df: int, dl: int, k1: float = 1.2, b: float = 0.75, n: int = N, avgdl: float = AVGDL) -> float:
    idf_ = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return idf_ * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))


def segment_of(docs) -> tuple[list[SegmentView], MemorySegment]:
    builder = SegmentBuilder()
    for i, (path, body) in enumerate(docs):
        builder.add(path, "", "", 1, 1, term_counts(body), docid=path)
    segment = MemorySegment(builder)
    return [SegmentView(segment)], segment


def scores_by_path(docs, terms, params=BM25Params()) -> dict[str, float]:
    views, segment = segment_of(docs)
    avgdl = sum(segment.lens) / segment.n_docs
    (acc,) = score(views, terms, params, segment.n_docs, avgdl)
    return {segment.files[segment.doc_file[d]][0]: s for d, s in acc.items()}


def test_the_example_documents_tokenize_as_the_hand_computation_assumes():
    assert term_counts("cat dog") == Counter({"cat": 1, "dog": 1})
    assert term_counts("cat cat bird fish") == Counter({"cat": 2, "bird": 1, "fish": 1})
    assert term_counts("dog bird") == Counter({"dog": 1, "bird": 1})


def test_idf_is_lucenes_always_positive_variant():
    assert idf(3, 2) == pytest.approx(math.log(1.6))
    assert idf(3, 3) > 0
    assert idf(100, 1) > idf(100, 50)


def test_a_single_term_query_scores_each_document_by_the_formula():
    got = scores_by_path(DOCS, ["cat"])
    assert set(got) == {"a", "b"}
    assert got["a"] == pytest.approx(by_hand(tf=1, df=2, dl=2))
    assert got["b"] == pytest.approx(by_hand(tf=2, df=2, dl=4))


def test_a_multi_term_query_sums_the_per_term_scores():
    got = scores_by_path(DOCS, ["cat", "bird"])
    assert got["a"] == pytest.approx(by_hand(1, 2, 2))
    assert got["b"] == pytest.approx(by_hand(2, 2, 4) + by_hand(1, 2, 4))
    assert got["c"] == pytest.approx(by_hand(1, 2, 2))


def test_a_term_in_one_document_weighs_more_than_a_term_in_two():
    got = scores_by_path(DOCS, ["fish"])
    assert got == {"b": pytest.approx(by_hand(1, 1, 4))}
    assert by_hand(1, 1, 4) > by_hand(1, 2, 4)


def test_unknown_terms_and_empty_queries_score_nothing():
    assert scores_by_path(DOCS, ["zebra"]) == {}
    assert scores_by_path(DOCS, []) == {}


def test_deleted_documents_score_nothing_and_leave_the_statistics_as_a_clean_build_has_them():
    """An incrementally refreshed index keeps a changed file's old chunks as deleted documents: they
    are neither hits nor counted in a term's document frequency."""
    views, segment = segment_of(DOCS + [("old", "cat fish fish")])
    deleted = frozenset(d for d in range(segment.n_docs) if segment.files[segment.doc_file[d]][0] == "old")
    view = SegmentView(segment, deleted)
    (acc,) = score([view], ["cat", "fish"], BM25Params(), N, AVGDL)
    got = {segment.files[segment.doc_file[d]][0]: s for d, s in acc.items()}
    assert got == pytest.approx(scores_by_path(DOCS, ["cat", "fish"]))
    assert got["b"] == pytest.approx(by_hand(2, 2, 4) + by_hand(1, 1, 4))


def test_words_below_the_minimum_idf_are_skipped_unless_every_word_found_is():
    # cat is in two of the three documents (idf 0.47), fish in one (idf 0.98)
    views, segment = segment_of(DOCS)
    (acc,) = score(views, ["cat", "fish"], BM25Params(), N, AVGDL, min_idf=0.7)
    assert {segment.files[segment.doc_file[d]][0]: s for d, s in acc.items()} == {"b": pytest.approx(by_hand(1, 1, 4))}
    # Only common words: they are all the query has, and score as without the minimum.
    (acc,) = score(views, ["cat"], BM25Params(), N, AVGDL, min_idf=0.7)
    assert {segment.files[segment.doc_file[d]][0]: s for d, s in acc.items()} == pytest.approx(scores_by_path(DOCS, ["cat"]))


def test_custom_k1_and_b_change_the_scores_as_the_formula_says():
    params = BM25Params(k1=2.0, b=0.0)
    got = scores_by_path(DOCS, ["cat"], params)
    assert got["a"] == pytest.approx(by_hand(1, 2, 2, k1=2.0, b=0.0))
    assert got["b"] == pytest.approx(by_hand(2, 2, 4, k1=2.0, b=0.0))
    default = scores_by_path(DOCS, ["cat"])
    assert got["b"] != pytest.approx(default["b"])
    # b = 0 ignores document length entirely.
    long_and_short = [("x", "cat"), ("y", "cat bird fish dog")]
    flat = scores_by_path(long_and_short, ["cat"], BM25Params(k1=1.2, b=0.0))
    assert flat["x"] == pytest.approx(flat["y"])
    normalised = scores_by_path(long_and_short, ["cat"], BM25Params(k1=1.2, b=1.0))
    assert normalised["x"] > normalised["y"]


def test_the_lexical_retriever_scores_plain_documents_with_bm25():
    retriever = LexicalRetriever()
    retriever.index([Document(docid=path, text=body, source_path=path) for path, body in DOCS])
    hits = retriever.search_detailed("cat bird")
    assert [h.docid for h in hits] == ["b", "a", "c"]
    assert hits[0].score == pytest.approx(by_hand(2, 2, 4) + by_hand(1, 2, 4))
    assert hits[1].score == pytest.approx(by_hand(1, 2, 2))
    assert hits[2].score == pytest.approx(by_hand(1, 2, 2))


def test_the_lexical_retriever_takes_custom_k1_and_b():
    retriever = LexicalRetriever(k1=2.0, b=0.0)
    retriever.index([Document(docid=path, text=body, source_path=path) for path, body in DOCS])
    (first, second) = retriever.search_detailed("cat")
    assert (first.docid, second.docid) == ("b", "a")
    assert first.score == pytest.approx(by_hand(2, 2, 4, k1=2.0, b=0.0))
    assert second.score == pytest.approx(by_hand(1, 2, 2, k1=2.0, b=0.0))


# -- deterministic ranking ----------------------------------------------------------------------


def tied_segment():
    builder = SegmentBuilder()
    for path, start in [("b.txt", 1), ("a.txt", 7), ("c.txt", 1), ("a.txt", 1)]:
        builder.add(path, "", "", start, start + 2, term_counts("same words here"))
    segment = MemorySegment(builder)
    return [SegmentView(segment)], segment


def test_identical_documents_rank_by_path_then_start_line():
    views, segment = tied_segment()
    scores = score(views, ["same"], BM25Params(), segment.n_docs, sum(segment.lens) / segment.n_docs)
    ranked = best_hits(views, scores, 10)
    order = [(segment.files[segment.doc_file[d]][0], segment.starts[d]) for _s, _i, d in ranked]
    assert order == [("a.txt", 1), ("a.txt", 7), ("b.txt", 1), ("c.txt", 1)]


def test_the_best_hits_come_best_score_first():
    views, segment = segment_of(DOCS)
    scores = score(views, ["fish", "bird"], BM25Params(), N, AVGDL)
    ranked = best_hits(views, scores, 2)
    assert [segment.files[segment.doc_file[d]][0] for _s, _i, d in ranked] == ["b", "c"]
    assert ranked[0][0] > ranked[1][0]


def test_the_top_k_cut_inside_a_tie_keeps_the_stable_order():
    views, segment = tied_segment()
    scores = score(views, ["same"], BM25Params(), segment.n_docs, sum(segment.lens) / segment.n_docs)
    ranked = best_hits(views, scores, 2)
    assert [(segment.files[segment.doc_file[d]][0], segment.starts[d]) for _s, _i, d in ranked] == [
        ("a.txt", 1), ("a.txt", 7)
    ]
    assert best_hits(views, scores, 0) == []


def test_the_retriever_breaks_ties_by_path_then_start_line_whatever_the_index_order():
    docs = [
        Document(docid="c", text="same words here", source_path="c", start_line=1, end_line=1),
        Document(docid="a:9", text="same words here", source_path="a", start_line=9, end_line=9),
        Document(docid="b", text="same words here", source_path="b", start_line=1, end_line=1),
        Document(docid="a:2", text="same words here", source_path="a", start_line=2, end_line=2),
    ]
    for ordering in (docs, list(reversed(docs))):
        retriever = LexicalRetriever()
        retriever.index(ordering)
        ranked = retriever.search("same words")
        # Best chunk of each file first (a, b, c), then the remaining chunk of file a.
        assert ranked == ["a:2", "b", "c", "a:9"]


# -- pruning ------------------------------------------------------------------------------------


def random_views(rng, n_docs, n_segments, vocabulary, twins=False):
    """Segments of random documents (a skewed vocabulary, so some words are in most documents),
    some with deleted documents, as an incrementally refreshed index has. With `twins`, every
    document has a copy in another file (ties everywhere, at the k-th place too)."""
    views = []
    for s in range(n_segments):
        builder = SegmentBuilder()
        words: list[str] = []
        for d in range(n_docs):
            if not (twins and d % 2):  # a twin repeats the document before it
                words = [vocabulary[int(len(vocabulary) * rng.random() ** 3)] for _ in range(rng.randint(1, 30))]
            builder.add(f"s{s}/f{d // 3}.py", "", "", d, d, Counter(words))
        deleted = frozenset(d for d in range(n_docs) if rng.random() < 0.2) if s else frozenset()
        views.append(SegmentView(MemorySegment(builder), deleted))
    return views


@pytest.mark.parametrize("seed", range(12))
def test_pruned_scoring_keeps_exactly_the_k_best_and_their_ties(seed):
    import random

    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(40)]
    views = random_views(rng, n_docs=rng.choice((30, 200)), n_segments=rng.randint(1, 3), vocabulary=vocabulary)
    live = [v.segment.n_docs - len(v.deleted) for v in views]
    lens = [v.segment.lens[d] for v in views for d in range(v.segment.n_docs) if d not in v.deleted]
    avgdl = sum(lens) / len(lens)
    for _ in range(10):
        query = [rng.choice(vocabulary) for _ in range(rng.randint(1, 6))] + ["absent"]
        for k in (1, 5, 20, 10_000):
            full = score(views, query, BM25Params(), sum(live), avgdl)
            pruned = score(views, query, BM25Params(), sum(live), avgdl, k=k)
            assert best_hits(views, pruned, k) == best_hits(views, full, k)
            for acc_full, acc_pruned in zip(full, pruned):
                assert set(acc_pruned) <= set(acc_full)
                assert all(acc_pruned[d] == acc_full[d] for d in acc_pruned)  # exact, not approximate


def test_pruning_drops_documents_that_cannot_reach_the_k_best():
    # One rare word picks a few documents; a common word alone cannot lift the others past them.
    builder = SegmentBuilder()
    for d in range(200):
        builder.add(f"f{d}.py", "", "", 1, 1, Counter({"common": 1, **({"rare": 3} if d < 3 else {})}))
    views = [SegmentView(MemorySegment(builder))]
    avgdl = sum(builder.lens) / builder.n_docs
    (pruned,) = score(views, ["rare", "common"], BM25Params(), 200, avgdl, k=2)
    assert set(pruned) == {0, 1, 2}


def only_allowed(views, scores, allow):
    """The scores of the documents `allow` permits: the filter applied after scoring."""
    return [{d: s for d, s in acc.items() if allow(*v.segment.files[v.segment.doc_file[d]])}
            for v, acc in zip(views, scores)]


def filtered_without_pruning(views, query, n_docs, avgdl, k, allow, min_idf=0.0):
    """The k best allowed documents found the plain way: every document scored, then filtered."""
    full = score(views, query, BM25Params(), n_docs, avgdl, min_idf)
    return best_hits(views, only_allowed(views, full, allow), k)


def corpus_statistics(views):
    lens = [v.segment.lens[d] for v in views for d in range(v.segment.n_docs) if d not in v.deleted]
    return len(lens), sum(lens) / len(lens)


@pytest.mark.parametrize("seed", range(12))
def test_a_filter_applied_while_pruning_keeps_exactly_the_k_best_allowed_documents_and_their_ties(seed):
    import random

    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(40)]
    views = random_views(rng, n_docs=rng.choice((60, 300)), n_segments=rng.randint(1, 3), vocabulary=vocabulary,
                         twins=seed % 2 == 0)
    n_docs, avgdl = corpus_statistics(views)
    dropped = 0  # allowed matching documents pruning left out: it must actually prune
    for _ in range(8):
        query = [rng.choice(vocabulary) for _ in range(rng.randint(1, 6))] + ["absent"]
        k = rng.choice((1, 2, 5, 20))
        # The files of the k best unfiltered documents: a filter leaving them out must find the next ones.
        best_paths = {views[i].segment.files[views[i].segment.doc_file[d]][0]
                      for _s, i, d in best_hits(views, score(views, query, BM25Params(), n_docs, avgdl), k)}
        filters = {
            "not the best": lambda path, _l, _k: path not in best_paths,
            "half": lambda path, _l, _k: int(path.split("/f")[1].split(".")[0]) % 2 == 0,
            "one segment": lambda path, _l, _k: path.startswith("s0/"),
            "a few files": lambda path, _l, _k: path.endswith(("/f7.py", "/f30.py")),
            "nothing": lambda _p, _l, _k: False,
            "everything": lambda _p, _l, _k: True,
        }
        for name, allow in filters.items():
            expected = filtered_without_pruning(views, query, n_docs, avgdl, k, allow)
            pruned = score(views, query, BM25Params(), n_docs, avgdl, k=k,
                           allowed=[_AllowedDocs(v.segment, allow).flags for v in views])
            assert best_hits(views, pruned, k) == expected, name  # same documents, order and float scores
            full = score(views, query, BM25Params(), n_docs, avgdl)
            for view, acc_full, acc_pruned in zip(views, full, pruned):
                assert all(allow(*view.segment.files[view.segment.doc_file[d]]) for d in acc_pruned), name
                assert all(acc_pruned[d] == acc_full[d] for d in acc_pruned), name  # exact, not approximate
                dropped += sum(1 for d in acc_full if allow(*view.segment.files[view.segment.doc_file[d]])) - len(acc_pruned)
    assert dropped > 0


def test_a_filtered_query_prunes_the_allowed_documents_that_cannot_reach_the_k_best():
    """The filter does not switch pruning off: a common word alone cannot lift the other allowed
    documents past the allowed ones with the rare word, whatever the best excluded ones score."""
    builder = SegmentBuilder()
    for d in range(200):
        builder.add(f"f{d}.py", "", "", 1, 1, Counter({"common": 1, **({"rare": 3} if d < 6 else {})}))
    views = [SegmentView(MemorySegment(builder))]
    avgdl = sum(builder.lens) / builder.n_docs
    allow = lambda path, _l, _k: path not in ("f0.py", "f1.py", "f2.py")  # noqa: E731
    (pruned,) = score(views, ["rare", "common"], BM25Params(), 200, avgdl, k=2,
                      allowed=[_AllowedDocs(views[0].segment, allow).flags])
    assert set(pruned) == {3, 4, 5}
    assert best_hits(views, [pruned], 2) == filtered_without_pruning(views, ["rare", "common"], 200, avgdl, 2, allow)


def test_the_filter_leaves_the_collection_statistics_as_they_are():
    """A filtered query scores a document exactly as the unfiltered one does: idf and the average
    length count every live document, allowed or not."""
    views, segment = segment_of(DOCS)
    allow = lambda path, _l, _k: path == "b"  # noqa: E731
    (acc,) = score(views, ["cat", "fish"], BM25Params(), N, AVGDL, k=1,
                   allowed=[_AllowedDocs(segment, allow).flags])
    assert {segment.files[segment.doc_file[d]][0]: s for d, s in acc.items()} == {
        "b": scores_by_path(DOCS, ["cat", "fish"])["b"]}
