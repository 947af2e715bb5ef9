"""One bounded-cache policy: every memo keeps at most its limit, newest entries first to stay."""
from __future__ import annotations

import time
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


def test_threads_sharing_a_memo_never_see_an_entry_vanish_mid_lookup():
    # service._OPEN is recalled and filled by every thread of a host that searches from several
    # (an agent framework's tool calls): a lookup racing another thread's eviction raised KeyError
    # out of service.search.
    import sys
    import threading

    memo = Memo(8)
    errors: list[BaseException] = []
    stop = time.monotonic() + 2.0

    def use(offset: int) -> None:
        try:
            i = 0
            while time.monotonic() < stop and not errors:
                key = (i * 7 + offset) % 11  # more keys than room: entries are dropped all the time
                if memo.recall(key) is None:
                    memo.put(key, i)
                i += 1
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads between almost any two steps
    try:
        threads = [threading.Thread(target=use, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    finally:
        sys.setswitchinterval(interval)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    memo.put("after", 0)
    assert len(memo) <= 8 and memo.recall("after") == 0
