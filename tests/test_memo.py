"""One bounded-cache policy: every memo keeps at most its limit, newest entries first to stay."""
from __future__ import annotations

from collections import Counter

from retrieval import ranking, service, stem, text
from retrieval.memo import Memo, clear_all


def test_a_full_memo_drops_its_oldest_entries_and_keeps_the_newest():
    memo = Memo(8)
    for i in range(100):
        memo.put(i, i * i)
        assert len(memo) <= 8
    assert 99 in memo and memo[99] == 99 * 99
    assert 0 not in memo


def test_recall_keeps_an_entry_in_use_from_being_dropped():
    memo = Memo(4)
    for i in range(4):
        memo.put(i, i)
    for i in range(4, 20):
        assert memo.recall(0) == 0
        memo.put(i, i)
    assert 0 in memo and 1 not in memo
    assert memo.recall("absent", "default") == "default"


def test_every_cache_of_the_package_is_a_bounded_memo():
    for cache in (text._MEMO, stem._MEMO, stem._MEMO_ANY, ranking._PATH_CLASSES, ranking._NAME_WORDS,
                  service._OPEN):
        assert isinstance(cache, Memo) and cache.limit <= 500_000
    from retrieval import prose

    assert isinstance(prose._MEMO, Memo)


def test_switching_stemming_drops_derived_words_everywhere():
    try:
        assert ranking.file_name_words("src/handlers.py")[1] == {"handler"}
        text.set_stemming(False)
        assert ranking.file_name_words("src/handlers.py")[1] == {"handlers"}  # not a stale stemmed memo
        assert text.tokenize("handlers") == ["handlers"]
    finally:
        text.set_stemming(True)
    assert ranking.file_name_words("src/handlers.py")[1] == {"handler"}
    clear_all()
    assert len(ranking._NAME_WORDS) == 0


class _NoWalk(Memo):
    __slots__ = ()

    def __iter__(self):
        raise AssertionError("the memo was walked whole")


def test_counting_terms_looks_words_up_and_never_walks_the_whole_memo(monkeypatch):
    memo = _NoWalk(1000)
    monkeypatch.setattr(text, "_MEMO", memo)
    for i in range(50):
        memo.put(f"filler{i}", (f"filler{i}",))
    counts = text.term_counts("parse_config parse_config value")
    assert counts["parse_config"] == 2 and counts == Counter(text.tokenize("parse_config parse_config value"))
