"""A filter's per-file verdicts: worked out once per open index, never served stale."""
from __future__ import annotations

import pytest

from retrieval import ignore, service

FILES = {
    "alpha/cache.py": "def load_cache(token):\n    return token_cache_loader(token)\n",
    "alpha/queue.py": "def retry_queue(token):\n    return queue_retry(token)\n",
    "beta/cache.py": "def save_cache(token):\n    return token_cache_saver(token)\n",
    "beta/notes.md": "# Cache\n\nThe token cache keeps a token per session.\n",
}


@pytest.fixture
def judged(monkeypatch) -> list[str]:
    """The paths a `--path` filter's selector is asked about, in order."""
    asked: list[str] = []
    original = ignore.selector

    def counting(rules):
        select = original(rules)

        def spy(path):
            asked.append(path)
            return select(path)

        return spy

    monkeypatch.setattr(ignore, "selector", counting)
    return asked


def paths(result) -> list[str]:
    return [hit.source_path for hit in result.hits]


def test_a_filter_asked_again_of_an_open_index_judges_no_file_again(make_tree, judged):
    """A warm server asks the same `--path` many times: each file's verdict is worked out by the
    first query, and the next ones (a filter built anew, equal to it) give the same hits."""
    root = str(make_tree(FILES))
    first = service.search(root, "token cache", filters=service.QueryFilter(paths=("alpha/",)))
    assert judged and paths(first) == ["alpha/cache.py", "alpha/queue.py"]
    judged.clear()
    again = service.search(root, "token cache", filters=service.QueryFilter(paths=("alpha/",)))
    other_words = service.search(root, "retry queue", filters=service.QueryFilter(paths=("alpha/",)))
    assert judged == []
    assert paths(again) == paths(first) and [h.score for h in again.hits] == [h.score for h in first.hits]
    assert paths(other_words)[0] == "alpha/queue.py"


def test_another_filter_and_a_refreshed_index_are_judged_anew(make_tree, rewrite, judged):
    root = make_tree(FILES)
    assert paths(service.search(str(root), "token cache", filters=service.QueryFilter(paths=("alpha/",))))
    assert set(paths(service.search(str(root), "token cache", filters=service.QueryFilter(paths=("beta/",))))) == {
        "beta/cache.py", "beta/notes.md"}
    assert paths(service.search(str(root), "token cache", filters=service.QueryFilter(paths=("beta/",), kind="code"))) == [
        "beta/cache.py"]
    assert paths(service.search(str(root), "token cache", filters=service.QueryFilter(language="markdown"))) == [
        "beta/notes.md"]
    # A new file under the filter's directory: the refreshed index has it, and the filter lets it through.
    (root / "alpha" / "session.py").write_text("def token_cache_session(token):\n    return token\n")
    rewrite(root / "alpha" / "cache.py", "def nothing_here():\n    return 1\n")
    found = paths(service.search(str(root), "token cache", filters=service.QueryFilter(paths=("alpha/",))))
    assert "alpha/session.py" in found and all(p.startswith("alpha/") for p in found)


def test_a_filter_that_names_no_key_is_asked_every_query(make_tree):
    """`allow` given to the Python API is the caller's function: what it says now decides."""
    root = str(make_tree(FILES))
    engine = service.open_index(root)
    wanted = {"alpha/cache.py"}

    def allow(path, _language, _kind):
        return path in wanted

    assert [h.source_path for h in engine.search_detailed("token cache", 10, allow=allow)] == ["alpha/cache.py"]
    wanted = {"beta/cache.py"}
    assert [h.source_path for h in engine.search_detailed("token cache", 10, allow=allow)] == ["beta/cache.py"]
