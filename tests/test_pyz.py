"""The single-file zipapp: built from this checkout, run by a bare interpreter that has no click."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


@pytest.fixture(scope="module")
def pyz(tmp_path_factory):
    out = tmp_path_factory.mktemp("pyz") / "retrieval.pyz"
    subprocess.run([sys.executable, str(SCRIPTS / "build_pyz.py"), "--output", str(out)], check=True,
                   capture_output=True, timeout=120)
    return out


NO_NETWORK = Path(__file__).resolve().parent / "no_network"


def bare(*args, cwd):
    # -I: no environment, no user site, no script directory; -S: no site-packages (so no click).
    return subprocess.run([sys.executable, "-I", "-S", *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def bare_pyz(pyz, *args, cwd):
    """The zipapp run as `python -I -S retrieval.pyz ARGS`, with the suite's network guard (which -I
    would otherwise leave out) installed first."""
    code = (f"import runpy, sys; sys.path.insert(0, {str(NO_NETWORK)!r}); import sitecustomize; "
            f"sitecustomize.install(hard=True); del sys.path[0]; sys.argv = {[str(pyz), *map(str, args)]!r}; "
            f"runpy.run_path({str(pyz)!r}, run_name='__main__')")
    return bare("-c", code, cwd=cwd)


def test_the_bare_interpreter_really_has_no_click(tmp_path):
    assert bare("-c", "import click", cwd=tmp_path).returncode == 1


def test_the_zipapp_holds_the_core_and_click_and_nothing_else(pyz):
    import zipfile

    tops = {name.split("/", 1)[0] for name in zipfile.ZipFile(pyz).namelist()}
    assert tops == {"__main__.py", "__main__.pyc", "retrieval", "click"}


def test_the_zipapp_runs_version_query_and_skill_without_anything_installed(pyz, make_tree, tmp_path):
    from retrieval import __version__

    version = bare(pyz, "--version", cwd=tmp_path)
    assert (version.returncode, version.stdout) == (0, f"retrieval, version {__version__}\n")
    root = make_tree({"app/routes.py": "def register_routes(app):\n    app.add_route('/')\n",
                      "README.md": "# demo\n"})
    result = bare_pyz(pyz, "query", "how", "are", "routes", "registered", "--json", cwd=root / "app")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["results"][0]["path"] == "routes.py"  # the current directory was the root
    skill = bare(pyz, "skill", cwd=tmp_path)
    assert skill.returncode == 0 and skill.stdout.startswith("---\nname: retrieval\n")


def test_the_zipapp_s_query_is_answered_by_a_running_server(pyz, make_tree, tmp_path):
    """`python retrieval.pyz serve --detach` started a server its own `query` never asked: the
    zipapp's entry was the click CLI, not the console command's (which tries the server first)."""
    root = make_tree({"app/routes.py": "def register_routes(app):\n    app.add_route('/')\n"})
    started = bare(pyz, "serve", "--detach", "--root", root, "--idle-timeout", "60", cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    try:
        served = bare("-X", "importtime", pyz, "query", "--root", root, "register routes", cwd=tmp_path)
        assert served.returncode == 0 and served.stdout.startswith("app/routes.py:1-2"), served.stderr
        imported = [line.rsplit("|", 1)[-1].strip() for line in served.stderr.splitlines() if "import time:" in line]
        assert "click" not in imported  # the answer came from the server: the CLI was never loaded
    finally:
        bare(pyz, "serve", "--stop", "--root", root, cwd=tmp_path)


def test_a_missing_extra_through_the_zipapp_says_the_zipapp_holds_the_core_only(pyz, make_tree, tmp_path):
    root = make_tree({"a.py": "def alpha():\n    pass\n"})
    result = bare_pyz(pyz, "query", "--root", root, "alpha", "--retriever", "treesitter", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "retrieval.pyz holds the core only" in result.stderr
