"""Which root a command means when it is not given `--root`: found the way git finds its repository.

From the current directory upwards, the nearest directory that already has an index (its own
`.retrieval`, or a store for it under RETRIEVAL_INDEX_DIR, holding a committed index) wins, so a
query from a subdirectory searches the index built above it instead of building a second one. An
index above the repository the directory is in counts only when it is a repository's too (a
superproject's, around its submodules) and holds files of the inner one: a plain directory's (a
stray query from a parent folder, a home-wide index) never answers for the projects below it, nor
does an outer repository's for a repository it leaves out (ignored, or in a pruned `deps/`) or for
a linked worktree (another checkout, on another branch, whatever the outer index holds). Without an
index, the nearest repository root (a `.git` directory or file) is used, else the current directory.
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
    """Whether path's store holds a committed index of some retriever: a store a first build
    left before its first commit (killed, interrupted) is not one."""
    store = layout.store_dir(path)
    try:
        names = os.listdir(store)
    except OSError:
        return False
    return any(os.path.isfile(layout.manifest_path(store, name)) for name in names)


def find_root(given: str | None = None, start: str | None = None) -> Root:
    """`given` (a `--root` value) as is; otherwise the nearest indexed directory, repository root
    or the start directory (default: the current one)."""
    if given is not None:
        return Root(os.path.abspath(given), "given")
    start = os.path.abspath(start or os.getcwd())
    repository = None
    worktree = False
    for path in _ancestors(start):
        is_repository = os.path.exists(os.path.join(path, ".git"))
        if has_index(path) and (repository is None or (is_repository and not worktree and covers(path, repository))):
            return Root(path, "index")
        if is_repository and repository is None:
            repository, worktree = path, linked_worktree(path)
    return Root(repository, "repository") if repository is not None else Root(start, "cwd")


def index_above(root: Root) -> str | None:
    """For an index a plain directory's own (no repository there), the nearest directory above it
    whose index holds it too: a stray query from a subdirectory of an unpacked tarball built the
    small index, which then answered every query from there, the project's own never asked."""
    if root.reason != "index" or os.path.exists(os.path.join(root.path, ".git")):
        return None
    for path in _ancestors(os.path.dirname(root.path)):
        if os.path.exists(os.path.join(path, ".git")) and not has_index(path):
            return None  # a repository around it without an index: it would be indexed whole
        if has_index(path):
            return path if covers(path, root.path) else None
    return None


def linked_worktree(path: str) -> bool:
    """Whether path is a linked worktree (`git worktree add`): its `.git` file names a directory
    under the main repository's `worktrees/`, which holds a `commondir`."""
    try:
        with open(os.path.join(path, ".git"), encoding="utf-8", errors="replace") as fh:
            head = fh.read(4096)
    except OSError:  # a directory (a repository of its own), or unreadable
        return False
    if not head.startswith("gitdir:"):
        return False
    gitdir = head[len("gitdir:"):].strip()
    gitdir = gitdir if os.path.isabs(gitdir) else os.path.join(path, gitdir)
    return os.path.isfile(os.path.join(gitdir, "commondir"))


def covers(outer: str, inner: str) -> bool:
    """Whether an index of `outer` holds a file under `inner` (a directory below it): a submodule
    the superproject's index walked, not a repository its rules left out."""
    from bisect import bisect_left

    prefix = os.path.relpath(inner, outer).replace(os.sep, "/") + "/"
    store = layout.store_dir(outer)
    try:
        names = sorted(os.listdir(store))
    except OSError:
        return False
    for name in names:
        try:
            manifest = layout.read_manifest(store, name)
            paths = manifest["files"]["path"] if isinstance(manifest, dict) else None
        except (layout.ManifestProblem, layout.StoreError, KeyError, TypeError):  # (a file there: StoreError)
            continue
        if isinstance(paths, list):
            i = bisect_left(paths, prefix)
            if i < len(paths) and isinstance(paths[i], str) and paths[i].startswith(prefix):
                return True
    return False


def same_directory(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # no such home (HOME unset or gone)
        return False


def too_broad(found: Root, advice: str = "") -> str | None:
    """Why a root the current directory chose (itself, or the repository around it) must not be
    indexed unasked, else None.

    Run from the home directory or `/` outside any repository, a first query would index every
    project, download and mail folder below it (hours, gigabytes) when the user most likely
    meant to be in a project. Given with --root, or already indexed, it is what was asked for."""
    if found.reason not in ("cwd", "repository"):  # a home kept in git (dotfiles) is no project either
        return None
    path = found.path
    if os.path.dirname(path) == path:
        what = "the filesystem root"
    elif same_directory(path, os.path.expanduser("~")):
        what = "your home directory"
    elif found.reason == "cwd" and len(projects := repositories_below(path)) >= 2:
        # A folder of checkouts (~/src): the query was most likely meant for one of them.
        shown = ", ".join(projects[:3]) + (", ..." if len(projects) > 3 else "")
        what = f"a directory of {len(projects)} projects ({shown})"
    else:
        return None
    from .output import shell_word, shown_path

    # Quoted: a home directory named `John Smith` made the command suggested two arguments.
    if advice:  # (`retrieval mcp`: an agent cannot cd; the server's config names its root)
        return f"{shown_path(path)} is {what}, not a project: {advice}"
    return (f"{shown_path(path)} is {what}, not a project: cd into a repository, or give "
            f"--root {shell_word(path)} to index everything below it")


# How far below a directory outside any repository projects are looked for: `~/work/projects/api`
# typed from `~`-like folders was indexed whole. Bounded: a tree of thousands of directories (an
# unpacked archive) is not walked for it at every command.
PROJECTS_DEPTH = 3
PROJECTS_BUDGET = 2000  # directories listed at most


def repositories_below(path: str, depth: int = PROJECTS_DEPTH) -> list[str]:
    """The paths (relative, with `/`) of the projects in path's subdirectories, `depth` levels down
    at most and none inside another: repository roots (a `.git` directory or file), or directories
    indexed on their own (copies or exports of projects have no `.git`)."""
    from .discover import DEFAULT_EXCLUDE_DIRS

    found: list[str] = []
    budget = PROJECTS_BUDGET

    def look(directory: str, prefix: str, levels: int) -> None:
        nonlocal budget
        if budget <= 0:
            return
        budget -= 1
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            return
        for e in entries:
            if e.name.startswith(".") or e.name in DEFAULT_EXCLUDE_DIRS or not _is_dir(e):
                continue
            if os.path.exists(os.path.join(e.path, ".git")) or has_index(e.path):
                found.append(prefix + e.name)
            elif levels > 1:
                look(e.path, f"{prefix}{e.name}/", levels - 1)

    look(path, "", depth)
    return found


def _is_dir(entry) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


DESCRIPTIONS = {
    "given": "given with --root",
    "index": "nearest directory with an index",
    "repository": "repository root",
    "cwd": "current directory",
}
