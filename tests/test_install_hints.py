"""The command a missing extra's message names is one the user's installer runs: pip inside a pipx
venv made with uv does not exist, extras pip added there are dropped by `pipx reinstall`, a uv tool
keeps only the extras its last install named, and uvx's environments are uv's cache (a probe)."""
from __future__ import annotations

import shlex
import sys

import pytest

from retrieval import extras


def test_the_installer_is_told_by_the_files_it_leaves_in_its_environment(tmp_path, monkeypatch):
    package = tmp_path / "site-packages" / "retrieval"
    package.mkdir(parents=True)
    for marker, expected in (("pipx_metadata.json", "pipx"), ("uv-receipt.toml", "uv-tool")):
        prefix = tmp_path / marker
        prefix.mkdir()
        (prefix / marker).write_text("{}")
        assert extras.installer(str(prefix), str(package)) == expected
    cache = tmp_path / ".cache" / "uv" / "archive-v0" / "Xq1"
    cache.mkdir(parents=True)
    assert extras.installer(str(cache), str(package)) == "uvx"
    assert extras.installer(str(tmp_path), str(tmp_path / "retrieval.pyz" / "retrieval")) == "pyz"
    monkeypatch.setattr("site.getusersitepackages", lambda: str(package.parent))
    monkeypatch.setattr("site.ENABLE_USER_SITE", True)
    assert extras.installer(str(tmp_path), str(package)) == "user"


def test_the_environment_running_the_tests_is_a_venv_with_pip_or_without():
    import importlib.util

    assert extras.installer() == ("pip" if importlib.util.find_spec("pip") else "no-pip")


@pytest.mark.parametrize("how, extra, expected", [
    ("pipx", ("treesitter",), "pipx inject retrieval '/src[treesitter]'"),
    ("pipx", ("local", "turbovec"), "pipx runpip retrieval install torch==2.13.0 --index-url "
                                    "https://download.pytorch.org/whl/cpu && pipx inject retrieval '/src[local,turbovec]'"),
    ("pipx", ("pyserini",), "pipx inject retrieval '/src[pyserini]' && pipx runpip retrieval install --no-deps "
                            "pyserini==1.6.0"),
    ("uv-tool", ("treesitter",), "uv tool install --force '/src[mcp,treesitter]'"),
    ("uv-tool", ("local", "turbovec"), "uv tool install --force --torch-backend cpu '/src[mcp,local,turbovec]'"),
    ("uvx", ("treesitter",), "uvx --from '/src[mcp,treesitter]' retrieval ... (uvx's environments are uv's cache; "
                             "`uv tool install '/src[mcp,treesitter]'` keeps one)"),
    # pyserini's own step (a package installed without its dependencies) is lost in uv's cache.
    ("uvx", ("pyserini",), "uv tool install '/src[mcp,pyserini]' && uv pip install --python "
                           "\"$(uv tool dir)/retrieval/bin/python\" --no-deps pyserini==1.6.0 (uvx's environments are "
                           "uv's cache: one keeps no step of its own)"),
    ("user", ("treesitter",), f"{shlex.quote(sys.executable)} -m pip install --user '/src[treesitter]'"),
    ("no-pip", ("treesitter",), f"uv pip install --python {shlex.quote(sys.executable)} '/src[treesitter]'"),
    ("pyz", ("treesitter",), "pipx install '/src[treesitter]' (the single-file retrieval.pyz holds the core only: "
                             "install the package from its source, with pipx or into a venv)"),
    # The core first, then torch's CPU build before the extras and pyserini's jar after them, as pipx
    # steps: `pipx install '/src[local,turbovec]'` alone pulled torch's CUDA build.
    ("pyz", ("local", "turbovec", "pyserini"),
     "pipx install /src && pipx runpip retrieval install torch==2.13.0 --index-url "
     "https://download.pytorch.org/whl/cpu && pipx inject retrieval '/src[local,turbovec,pyserini]' && "
     "pipx runpip retrieval install --no-deps pyserini==1.6.0 (the single-file retrieval.pyz holds the core only: "
     "install the package from its source, with pipx or into a venv)"),
])
def test_each_installer_is_given_its_own_command_keeping_the_extras_it_has(monkeypatch, how, extra, expected):
    monkeypatch.setattr(extras, "installer", lambda: how)
    monkeypatch.setattr(extras, "_source", lambda: "/src")
    # mcp installed, the rest not: a uv tool's reinstall names mcp again, or it would be dropped.
    monkeypatch.setattr(extras, "missing_modules", lambda e: [] if e == "mcp" else ["x"])
    assert extras.install_hint(*extra) == expected


def test_the_version_is_written_once_and_the_package_metadata_reads_it():
    """pyproject.toml and __init__ each wrote 0.1.0: an upgrade bumping one said "upgraded to 0.2.0"
    while `retrieval --version` and the MCP server's info still said 0.1.0."""
    import tomllib
    from importlib.metadata import version
    from pathlib import Path

    import retrieval

    config = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in config["project"] and "version" in config["project"]["dynamic"]
    assert config["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "retrieval.__version__"}
    assert version("retrieval") == retrieval.__version__
