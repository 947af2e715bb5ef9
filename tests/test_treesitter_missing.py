"""Without the `treesitter` extra: a RuntimeError naming the install command, and `index` (all
retrievers) skips it and says why. Runs in the core environment; the extra is hidden here."""
from __future__ import annotations

import re

import pytest

from retrieval import extras

HINT = extras.install_hint("treesitter")


@pytest.fixture
def without_extra(monkeypatch):
    monkeypatch.setitem(extras.EXTRAS, "treesitter", ("retrieval_test_no_such_module",))


def test_build_retriever_raises_runtime_error_with_the_install_command(without_extra):
    from retrieval import build_retriever

    with pytest.raises(RuntimeError, match=re.escape(HINT)):
        build_retriever("treesitter")


def test_load_ast_chunk_documents_raises_runtime_error_with_the_install_command(without_extra, sample_repo):
    from retrieval import load_ast_chunk_documents

    with pytest.raises(RuntimeError) as info:
        load_ast_chunk_documents(str(sample_repo))
    assert HINT in str(info.value)


def test_index_all_skips_it_and_says_why(without_extra, run, sample_repo):
    result = run("index", "--root", sample_repo)
    assert result.exit_code == 0, result.output
    assert "lexical: indexed" in result.output
    # One line names every retriever not installed, with one command installing their extras.
    (line,) = [line for line in result.output.splitlines() if ": skipped (not installed here: " in line]
    names, hint = line.split(": skipped (not installed here: ")
    assert "treesitter" in names.split(", ") and "treesitter" in re.search(r"\[([a-z,]+)\]", hint)[1].split(",")


def test_asking_for_it_fails_with_one_error_line(without_extra, run, sample_repo):
    for args in (("index", "--retriever", "treesitter"), ("query", "--retriever", "treesitter", "config")):
        result = run(*args, "--root", sample_repo)
        assert result.exit_code == 1
        assert result.output.count("error: ") == 1 and HINT in result.output


def test_status_says_it_is_unavailable(without_extra, run, sample_repo):
    line = [x for x in run("status", "--root", sample_repo).output.splitlines() if x.startswith("treesitter:")][0]
    assert "unavailable" in line and HINT in line


def test_chunk_source_works_without_the_extra(monkeypatch):
    """Other retrievers may reuse the chunker whether or not the extra is installed."""
    import builtins

    from retrieval.chunking import ast, parsing

    real_import = builtins.__import__

    def no_tree_sitter(name, *args, **kwargs):
        if name.startswith("tree_sitter"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tree_sitter)
    monkeypatch.setattr(parsing, "_PARSERS", {})
    chunks = ast.chunk_source("def f():\n    return 1\n", "a.py", language="python")
    assert [(c.start_line, c.end_line, c.chunk_kind) for c in chunks] == [(1, 2, "")]
    docs = ast.chunk_source("# Title\n\nText.\n", "a.md", language="markdown", kind="docs")
    assert docs[0].context == "Title"
