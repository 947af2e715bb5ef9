"""Which root a command means when it is not given `--root`: found the way git finds its repository.

From the current directory upwards, the nearest directory that already has an index (its own
`.retrieval`, or a store for it under RETRIEVAL_INDEX_DIR) wins, so a query from a subdirectory
searches the index built above it instead of building a second one. Without an index anywhere
above, the nearest repository root (a `.git` directory or file) is used, else the current directory.
"""
from __future__ import annotations

import os
from typing import NamedTuple

from .store import layout


class Root(NamedTuple):
    path: str
    reason: str  # given | index | repository | cwd


def _ancestors(start: str):
    path = os.path.abspath(start)
    while True:
        yield path
        parent = os.path.dirname(path)
        if parent == path:
            return
        path = parent


def has_index(path: str) -> bool:
    store = layout.store_dir(path)
    return os.path.isfile(os.path.join(store, "STORE.json")) or os.path.isdir(
        os.path.join(path, layout.STORE_DIRNAME)
    )


def find_root(given: str | None = None, start: str | None = None) -> Root:
    """`given` (a `--root` value) as is; otherwise the nearest indexed directory, repository root
    or the start directory (default: the current one)."""
    if given is not None:
        return Root(os.path.abspath(given), "given")
    start = os.path.abspath(start or os.getcwd())
    chain = list(_ancestors(start))
    for path in chain:
        if has_index(path):
            return Root(path, "index")
    for path in chain:
        if os.path.exists(os.path.join(path, ".git")):
            return Root(path, "repository")
    return Root(start, "cwd")


DESCRIPTIONS = {
    "given": "given with --root",
    "index": "nearest directory with an index",
    "repository": "repository root",
    "cwd": "current directory",
}
