"""`--retriever all` and `eval` over several retrievers: one retriever that cannot run (its
embedding model gone, its Java broken) is skipped with its reason; the others still answer."""
from __future__ import annotations

import json

from click.testing import CliRunner

from retrieval import multi, service
from retrieval.retrievers import base
from retrieval.cli import main
from retrieval.extras import SetupError

FILES = {"hooks.py": "def dispatch_hook(key, hooks):\n    return hooks.get(key)\n",
         "api.py": "def request(method, url):\n    return method, url\n"}
GONE = "embedding model '/models/gone' is neither a local directory nor in the local Hugging Face cache"


def _turbovec_fails(monkeypatch):
    opened = service.open_index

    def open_index(root, name, **kwargs):
        if name == "turbovec":
            raise SetupError(GONE)
        return opened(root, name, **kwargs)

    monkeypatch.setattr(service, "open_index", open_index)


def _turbovec_refresh_fails(monkeypatch):
    refresh = service.refresh

    def failing(root, name="lexical", **kwargs):
        if name == "turbovec":
            raise SetupError(GONE)
        return refresh(root, name, **kwargs)

    monkeypatch.setattr(service, "refresh", failing)


def test_query_all_answers_from_the_others_and_names_the_one_that_failed(make_tree, monkeypatch):
    root = make_tree(FILES)
    monkeypatch.setattr(multi, "participants", lambda root: (["lexical", "turbovec"], []))
    _turbovec_fails(monkeypatch)
    result = CliRunner().invoke(main, ["query", "dispatch hook", "--root", str(root), "--retriever", "all", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["results"][0]["path"] == "hooks.py"
    assert f"turbovec: skipped ({GONE})" in result.stderr


def test_the_base_of_all_failing_is_the_error(make_tree, monkeypatch):
    root = make_tree(FILES)
    monkeypatch.setattr(multi, "participants", lambda root: (["lexical"], []))
    monkeypatch.setattr(service, "open_index", lambda root, name, **kw: (_ for _ in ()).throw(SetupError("broken")))
    result = CliRunner().invoke(main, ["query", "dispatch hook", "--root", str(root), "--retriever", "all"])
    assert result.exit_code == 1 and "broken" in result.output


def test_eval_of_several_retrievers_skips_one_that_fails_and_says_why(make_tree, monkeypatch):
    import pytest

    from retrieval.evaluation.datasets import EvalQuery, Target
    from retrieval.evaluation.runner import evaluate
    from retrieval.retrievers import base

    root = make_tree(FILES)
    queries = [EvalQuery("dispatch hook", (Target("hooks.py"),), "semantic", "q1")]
    spec = base.get_spec

    class Available:  # turbovec counts as installed here, so that it is run and fails
        def __init__(self, name):
            self.inner = spec(name) if name != "turbovec" else None

        def unavailable_reason(self):
            return self.inner.unavailable_reason() if self.inner else ""

        def __getattr__(self, name):
            return getattr(self.inner, name)

    monkeypatch.setattr(base, "get_spec", Available)
    _turbovec_refresh_fails(monkeypatch)
    result = evaluate(str(root), queries, ["lexical", "turbovec", "all"])
    assert [run.retriever for run in result.runs] == ["lexical", "all"]
    assert result.skipped == {"turbovec": GONE}
    with pytest.raises(SetupError):  # asked for alone, its failure is the answer
        evaluate(str(root), queries, ["turbovec"])


def test_index_all_builds_the_others_when_one_fails_and_exits_1(make_tree, monkeypatch):
    """A retriever that failed is not one skipped for a missing extra: the others are built, the
    failure is named, and the exit status says so (a script cannot read stderr's prose)."""
    root = make_tree(FILES)
    monkeypatch.setattr(service, "available_retrievers", lambda: [("lexical", ""), ("turbovec", "")])
    _turbovec_refresh_fails(monkeypatch)
    result = CliRunner().invoke(main, ["index", "--root", str(root), "--retriever", "all"])
    assert result.exit_code == 1, result.output
    assert "lexical: indexed" in result.stdout
    assert f"turbovec: failed ({GONE})" in result.stderr
    assert result.stderr.splitlines()[-1] == "error: not built: turbovec (see above); the others are up to date"
    query = CliRunner().invoke(main, ["query", "dispatch hook", "--root", str(root), "--json"])
    assert query.exit_code == 0 and json.loads(query.stdout)["results"][0]["path"] == "hooks.py"


def test_index_all_skipping_a_retriever_that_cannot_run_still_succeeds(make_tree, monkeypatch):
    root = make_tree(FILES)
    monkeypatch.setattr(service, "available_retrievers", lambda: [("lexical", ""), ("pi-serini", "no Java here")])
    monkeypatch.setattr(base, "missing_modules", lambda extra: [])  # installed, but cannot run
    result = CliRunner().invoke(main, ["index", "--root", str(root), "--retriever", "all"])
    assert result.exit_code == 0, result.output
    assert "pi-serini: skipped (no Java here)" in result.stderr
    assert result.stdout.startswith("lexical: indexed") and "pi-serini" not in result.stdout  # what was built


def test_index_all_names_the_retrievers_not_installed_in_one_line_with_one_install_command(make_tree, monkeypatch):
    """A core-only installation printed four long install commands, one per extra, on every `index`."""
    root = make_tree(FILES)
    monkeypatch.setattr(base, "missing_modules", lambda extra: [f"{extra}_module"])  # every extra absent
    result = CliRunner().invoke(main, ["index", "--root", str(root), "--retriever", "all"])
    assert result.exit_code == 0, result.output
    skipped = [line for line in result.stderr.splitlines() if "skipped" in line]
    assert len(skipped) == 1 and skipped[0].startswith("hybrid, pi-serini, treesitter, turbovec: skipped (not installed here: ")
    assert "[local,pyserini,treesitter,turbovec]" in skipped[0] and skipped[0].count("torch==") == 1
    assert result.stdout.startswith("lexical: indexed")


def test_a_participant_failing_mid_query_with_a_long_message_is_named_in_one_line_each_time(make_tree, monkeypatch):
    """The note on its repair printed the error's second line as a line of its own."""
    from retrieval.retrievers.contextual import ContextualRetriever

    from retrieval import service

    root = make_tree(FILES)
    service.refresh(str(root), "lexical+ctx")  # (built: a first build would say its contexts are offline ones)
    monkeypatch.setattr(multi, "participants", lambda root: (["lexical", "lexical+ctx"], []))

    def failing(self, query, top_k=10, *, allow=None):
        raise RuntimeError("the reader failed\n  at org.apache.lucene.Reader.read")

    monkeypatch.setattr(ContextualRetriever, "search_detailed", failing)
    result = CliRunner().invoke(main, ["query", "dispatch hook", "--root", str(root), "--retriever", "all", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["results"][0]["path"] == "hooks.py"
    assert result.stderr.splitlines() == [
        "note: the lexical+ctx index is damaged (the reader failed); rebuilding it",
        "note: lexical+ctx: skipped (the lexical+ctx index cannot be searched (RuntimeError: the reader failed))"]
