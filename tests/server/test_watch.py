"""The tree watcher: a quiet queue means an unchanged tree, any change in a watched directory shows."""
from __future__ import annotations

import sys

import pytest

from retrieval.server.watch import InotifyWatcher, PollWatcher, directories, make_watcher

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


def test_directories_of_a_watch_table(tmp_path):
    (tmp_path / "src" / "app").mkdir(parents=True)
    watch = {".": [0, 1], "src/": [0, 1], "src/app/": [0, 1], "src/app/.gitignore": [12, 1],
             ".git/info/exclude": [3, 1], "big.bin": [5_000_000, 1]}
    assert directories(str(tmp_path), watch) == {".", "src", "src/app", ".git/info"}


@linux_only
def test_a_change_in_a_watched_directory_is_seen_once(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1\n")
    watcher = make_watcher(str(tmp_path), (".retrieval",))
    assert isinstance(watcher, InotifyWatcher)
    try:
        assert watcher.watch_dirs({".", "src"}) is True
        assert watcher.watch_dirs({".", "src"}) is False  # nothing new
        assert watcher.changed() is False
        (tmp_path / "src" / "a.py").write_text("x = 2\n")
        assert watcher.changed() is True
        assert watcher.changed() is False  # drained
        (tmp_path / "src" / "new.py").write_text("")
        assert watcher.changed() is True
        (tmp_path / "unwatched").mkdir()
        watcher.changed()
        (tmp_path / "unwatched" / "b.py").write_text("")
        assert watcher.changed() is False
        (tmp_path / ".retrieval").mkdir()  # the store beside the tree: its own writes are not changes
        assert watcher.changed() is False
        (tmp_path / "src" / "a.py").unlink()
        assert watcher.changed() is True
    finally:
        watcher.close()


@linux_only
def test_a_removed_directory_is_a_change_and_may_be_watched_again(tmp_path):
    (tmp_path / "d").mkdir()
    watcher = InotifyWatcher(str(tmp_path))
    try:
        watcher.watch_dirs({".", "d"})
        (tmp_path / "d").rmdir()
        assert watcher.changed() is True
        (tmp_path / "d").mkdir()
        watcher.changed()
        assert watcher.watch_dirs({"d"}) is True
        (tmp_path / "d" / "f.py").write_text("")
        assert watcher.changed() is True
    finally:
        watcher.close()


def test_without_notifications_every_look_may_have_changed():
    watcher = PollWatcher()
    assert watcher.changed() is True and watcher.exact is False and watcher.fileno() is None


@linux_only
def test_a_directory_made_where_a_watched_one_was_renamed_from_is_watched(tmp_path):
    """`mv pkg pkg2` moves pkg's watch with it; a new `pkg` was taken for watched, and edits in it
    went unseen by the server."""
    (tmp_path / "pkg").mkdir()
    watcher = InotifyWatcher(str(tmp_path))
    try:
        watcher.watch_dirs({".", "pkg"})
        (tmp_path / "pkg").rename(tmp_path / "pkg2")
        assert watcher.changed() is True
        (tmp_path / "pkg").mkdir()
        watcher.changed()
        assert watcher.watch_dirs({".", "pkg2", "pkg"}) is True
        watcher.changed()
        (tmp_path / "pkg" / "b.py").write_text("x = 1\n")
        assert watcher.changed() is True
        (tmp_path / "pkg2" / "c.py").write_text("x = 1\n")
        assert watcher.changed() is True
    finally:
        watcher.close()


@linux_only
def test_a_renamed_directory_is_watched_under_its_new_name_the_order_of_the_table_aside(tmp_path):
    (tmp_path / "pkg").mkdir()
    watcher = InotifyWatcher(str(tmp_path))
    try:
        watcher.watch_dirs({".", "pkg"})
        (tmp_path / "pkg").rename(tmp_path / "pkg2")
        (tmp_path / "pkg").mkdir()
        watcher.changed()
        for order in (["pkg", "pkg2"], ["pkg2", "pkg"]):
            watcher.watch_dirs(order)
            watcher.changed()
            (tmp_path / "pkg" / f"{order[0]}.py").write_text("x = 1\n")
            assert watcher.changed() is True
            (tmp_path / "pkg2" / f"{order[0]}.py").write_text("x = 1\n")
            assert watcher.changed() is True
    finally:
        watcher.close()


@linux_only
def test_a_directory_that_does_not_exist_yet_is_watched_from_the_nearest_one_above(tmp_path):
    """git's global excludes file in a `~/.config/git` made while the server runs: the server could
    not watch a directory that did not exist, and never looked again."""
    tree, config = tmp_path / "tree", tmp_path / "home" / ".config"
    tree.mkdir()
    config.mkdir(parents=True)
    watcher = InotifyWatcher(str(tree))
    try:
        watcher.watch_dirs({".", str(config / "git")})
        assert watcher.changed() is False
        (config / "git").mkdir()
        assert watcher.changed() is True
        assert watcher.watch_dirs({".", str(config / "git")}) is True  # asked again: there now
        watcher.changed()
        (config / "git" / "ignore").write_text("*.md\n")
        assert watcher.changed() is True
        assert watcher.exact
    finally:
        watcher.close()
