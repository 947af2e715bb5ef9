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


def _same_directory(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # no such home (HOME unset or gone)
        return False


def too_broad(found: Root) -> str | None:
    """Why a root that only the current directory chose must not be indexed unasked, else None.

    Run from the home directory or `/` outside any repository, a first query would index every
    project, download and mail folder below it (hours, gigabytes) when the user most likely
    meant to be in a project. Given with --root, or already indexed, it is what was asked for."""
    if found.reason != "cwd":
        return None
    path = found.path
    if os.path.dirname(path) == path:
        what = "the filesystem root"
    elif _same_directory(path, os.path.expanduser("~")):
        what = "your home directory"
    else:
        return None
    return (f"{path} is {what}, not a project: cd into a repository, or give --root {path} "
            "to index everything below it")


DESCRIPTIONS = {
    "given": "given with --root",
    "index": "nearest directory with an index",
    "repository": "repository root",
    "cwd": "current directory",
}
