"""The server's in-process command runner: one command leaves nothing behind for the next."""
from __future__ import annotations

import os


def test_an_option_that_sets_the_environment_lasts_for_its_own_command_only(make_tree, monkeypatch):
    from retrieval.server.runner import run_cli

    monkeypatch.delenv("RETRIEVAL_EMBED_MODEL", raising=False)
    root = make_tree({"a.py": "def parse_config():\n    return 1\n"})
    # --embed-model sets RETRIEVAL_EMBED_MODEL for the command (all: the dense indexes it would open).
    code, out, _err = run_cli(["query", "--root", str(root), "--retriever", "all", "--embed-model",
                               str(root), "parse config"])
    assert code == 0 and b"a.py" in out
    assert "RETRIEVAL_EMBED_MODEL" not in os.environ


def test_a_bad_setting_is_named_by_every_command_as_by_each_cold_one(make_tree, monkeypatch, rewrite):
    """The warning is said once per process: a server named it in its first answer (or its log)
    and never again, while each cold command names it."""
    from retrieval.server.runner import run_cli

    monkeypatch.setenv("RETRIEVAL_MAX_TOTAL_BYTES", "abc")
    root = make_tree({"a.py": "def parse_config():\n    return 1\n"})
    for text in ("def parse_config():\n    return 2\n", None):
        code, out, err = run_cli(["query", "--root", str(root), "--retriever", "lexical", "parse config"])
        assert code == 0 and b"a.py" in out
        assert b"ignoring RETRIEVAL_MAX_TOTAL_BYTES='abc'" in err
        if text:
            rewrite(root / "a.py", text)  # the next query refreshes, reading the setting again
