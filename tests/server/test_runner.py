"""The server's in-process command runner: one command leaves nothing behind for the next."""
from __future__ import annotations

import os


def test_an_option_that_sets_the_environment_lasts_for_its_own_command_only(make_tree, monkeypatch):
    from retrieval.server.runner import run_cli

    monkeypatch.delenv("RETRIEVAL_EMBED_MODEL", raising=False)
    root = make_tree({"a.py": "def parse_config():\n    return 1\n"})
    # --embed-model sets RETRIEVAL_EMBED_MODEL for the command; the lexical query itself ignores it.
    code, out, _err = run_cli(["query", "--root", str(root), "--retriever", "lexical", "--embed-model",
                               str(root), "parse config"])
    assert code == 0 and b"a.py" in out
    assert "RETRIEVAL_EMBED_MODEL" not in os.environ
