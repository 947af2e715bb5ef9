"""Without the dense extras: a clear error with the install command, and all-mode skips them."""
from __future__ import annotations

import pytest

from retrieval.extras import install_hint
from retrieval.retrievers import base


@pytest.fixture
def without_dense_extras(monkeypatch):
    real = base.missing_modules

    def missing(extra):
        return ["turbovec"] if extra == "turbovec" else real(extra)

    monkeypatch.setattr(base, "missing_modules", missing)


@pytest.mark.parametrize("name", ["turbovec", "hybrid"])
def test_building_a_dense_retriever_without_its_extras_says_what_to_install(without_dense_extras, name):
    with pytest.raises(RuntimeError) as info:
        base.build_retriever(name)
    assert install_hint("local", "turbovec") in str(info.value)


def test_index_all_and_query_all_skip_them_and_say_why(without_dense_extras, sample_repo, run):
    result = run("index", "--root", sample_repo)
    assert result.exit_code == 0, result.output
    # One line names every retriever not installed (those of the other extras too, in the core's run).
    (line,) = [line for line in result.output.splitlines() if ": skipped (not installed here: " in line]
    assert {"hybrid", "turbovec"} <= set(line.split(":")[0].split(", ")) and "turbovec" in line.split("[")[1]
    result = run("query", "--root", sample_repo, "--retriever", "all", "--json", "parse config")
    assert result.exit_code == 0, result.output
    assert "turbovec: skipped" in result.stderr
    import json

    rows = json.loads(result.stdout)["results"]
    assert rows and all("lexical" in row["provenance"] for row in rows)  # and other installed ones
    assert not any({"turbovec", "hybrid"} & set(row["provenance"]) for row in rows)


def test_query_with_a_missing_dense_retriever_fails_with_the_hint(without_dense_extras, sample_repo, run):
    result = run("query", "--root", sample_repo, "--retriever", "turbovec", "parse config")
    assert result.exit_code == 1 and install_hint("local", "turbovec") in result.output
