"""A clean install of the `pyserini` extra through the README's own commands, then a query.

Slow (a new virtual environment, the 165 MB pyserini package): it runs with the extra's other
tests, in the full run of `make test`. pip reaches the package registry; the query afterwards runs
with the network guard on, as every subprocess of the suite does.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.extra("pyserini")

PROJECT = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    """The shell lines of the README block that installs the extra."""
    text = (PROJECT / "README.md").read_text(encoding="utf-8")
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        if "pyserini==" in block:
            return [line for line in block.splitlines() if line.strip()]
    raise AssertionError("the README has no install block for the pyserini extra")


def test_readme_commands_install_the_extra_in_a_fresh_venv(tmp_path):
    checkout = tmp_path / "retrieval"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=PROJECT, capture_output=True, check=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        if (PROJECT / rel).is_file():
            (checkout / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(PROJECT / rel, checkout / rel)
    guard = os.environ.get("PYTHONPATH", "")
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "VIRTUAL_ENV", "PYTHONPATH")}
    env["RETRIEVAL_INDEX_DIR"] = str(tmp_path / "index")
    install, query = readme_commands()
    # Installing needs the registry: no network guard for pip.
    done = subprocess.run(install, shell=True, cwd=checkout, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-2000:]
    # The query runs as a user would, with the network guard back on and no JAVA_HOME: the
    # bundled Java starts, Lucene indexes the checkout, and stdout has the hits only.
    done = subprocess.run(query, shell=True, cwd=checkout, env=dict(env, PYTHONPATH=guard),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    hits = [line.split()[0] for line in done.stdout.splitlines() if line.strip()]  # `path:start-end  confidence`
    assert hits and all(re.fullmatch(r"\S+:\d+-\d+", h) for h in hits)
    assert any(h.startswith("retrieval/service.py:") for h in hits)
