"""The tree watcher: a quiet queue means an unchanged tree, any change in a watched directory shows."""
from __future__ import annotations

import os
import shutil
import sys

import pytest

from retrieval.server.watch import InotifyWatcher, PollWatcher, directories, make_watcher

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


def test_directories_of_a_watch_table(tmp_path):
    (tmp_path / "src" / "app").mkdir(parents=True)
    above = str(tmp_path.parent)
    watch = {".": [0, 1], "src/": [0, 1], "src/app/": [0, 1], "src/app/.gitignore": [12, 1],
             ".git/info/exclude": [3, 1], "big.bin": [5_000_000, 1],
             # absent `.git`s of the root and above it: the root under its absolute name is "."
             str(tmp_path / ".git"): [0, 0], os.path.join(above, ".git"): [0, 0]}
    assert directories(str(tmp_path), watch) == {
        ".": None, "src": None, "src/app": None,  # the tree's directories: every entry matters
        ".git/info": frozenset({"exclude"}), above: frozenset({".git"})}  # elsewhere, only those files


@linux_only
def test_a_directory_outside_the_tree_reports_only_the_entries_watched_there(tmp_path):
    """The absent `.git` of every directory above the root is watched: the rest of what happens in
    a busy home directory, or in `/`, is no change of the tree."""
    tree, home = tmp_path / "home" / "src", tmp_path / "home"
    tree.mkdir(parents=True)
    watcher = InotifyWatcher(str(tree))
    try:
        watcher.watch_dirs(directories(str(tree), {".": [0, 1], str(tree / ".git"): [0, 0],
                                                   str(home / ".git"): [0, 0]}))
        assert watcher.watch_dirs(directories(str(tree), {".": [0, 1], str(tree / ".git"): [0, 0],
                                                          str(home / ".git"): [0, 0]})) is False  # one name each
        (home / "notes.txt").write_text("busy\n")
        assert watcher.changed() is False
        (home / ".git").mkdir()
        assert watcher.changed() is True
        (tree / "a.py").write_text("x = 1\n")
        assert watcher.changed() is True
    finally:
        watcher.close()


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


@linux_only
@pytest.mark.parametrize("layout_", ["no repository", "repository top", "below the top"])
def test_the_warm_path_vouches_for_a_root_wherever_it_sits(tmp_path, layout_):
    """The absent `.git` of the root, recorded by its absolute path, made the root a second watched
    name: every check found a "new" directory, nothing was vouched for, and every served query
    stat'ed every indexed file (a plain folder, or a root below its repository's top)."""
    import subprocess

    from retrieval import service
    from retrieval.server.warm import Warm
    from retrieval.store import layout

    top = tmp_path / "repo"
    root = top / "sub" if layout_ == "below the top" else top
    (root / "pkg").mkdir(parents=True)
    if layout_ != "no repository":
        subprocess.run(["git", "init", "-q", str(top)], check=True)
    (root / "pkg" / "a.py").write_text("def alpha_handler():\n    return 1\n")
    warm = Warm(str(root))
    try:
        warm.open(["lexical"])
        for _ in range(2):
            warm.freshen()
            assert (layout.store_dir(str(root)), "lexical") in service.VOUCHED
            service.search(str(root), "alpha_handler")
    finally:
        warm.close()
        service._OPEN.clear()


@linux_only
def test_a_tree_put_where_a_watched_one_was_moved_from_is_watched_all_the_way_down(tmp_path):
    """`mv src src.old; cp -r src.old src`: the subdirectories' watches moved with them under their
    old names, the new `src/pkg` was taken for watched, and edits in it went unseen."""
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    watcher = InotifyWatcher(str(tmp_path))
    try:
        watcher.watch_dirs({".", "src", os.path.join("src", "pkg")})
        (tmp_path / "src").rename(tmp_path / "src.old")
        (tmp_path / "src" / "pkg").mkdir(parents=True)
        assert watcher.changed() is True
        assert watcher.watch_dirs({".", "src", os.path.join("src", "pkg")}) is True
        watcher.changed()
        (tmp_path / "src" / "pkg" / "a.py").write_text("x = 1\n")
        assert watcher.changed() is True
    finally:
        watcher.close()


@linux_only
def test_a_tree_put_where_the_watched_root_was_moved_from_is_watched_all_the_way_down(tmp_path):
    """`mv repo repo.old; git clone ... repo` under a running server (its store elsewhere) or an MCP
    server: the root's subdirectories kept their watches under their old names, the new `repo/pkg`
    was taken for watched, and edits in it went unseen."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    watcher = InotifyWatcher(str(root))
    try:
        watcher.watch_dirs({".", "pkg"})
        root.rename(tmp_path / "repo.old")
        (root / "pkg").mkdir(parents=True)
        assert watcher.changed() is True
        assert watcher.watch_dirs({".", "pkg"}) is True
        watcher.changed()
        (root / "pkg" / "a.py").write_text("x = 1\n")
        assert watcher.changed() is True
        (tmp_path / "repo.old" / "pkg" / "b.py").write_text("x = 1\n")  # no longer the tree
        assert watcher.changed() is False
    finally:
        watcher.close()


@linux_only
def test_a_directory_made_again_while_the_queue_overflowed_is_watched_again(tmp_path):
    """Past the kernel's queue (a checkout of thousands of files) events are dropped, among them
    the one saying a removed directory's watch is gone: the directory made again under its name
    was taken for watched, and edits in it went unseen for the life of the server."""
    with open("/proc/sys/fs/inotify/max_queued_events") as fh:
        limit = int(fh.read())
    if limit > 200_000:
        pytest.skip("the kernel's event queue is too long to fill quickly")
    (tmp_path / "pkg").mkdir()
    first, second = tmp_path / "a.py", tmp_path / "b.py"
    first.write_text("x = 1\n")
    second.write_text("x = 2\n")
    watcher = InotifyWatcher(str(tmp_path))
    try:
        watcher.watch_dirs({".", "pkg"})
        for _ in range(limit // 2 + 1):  # two files in turn: the kernel merges an event repeated at once
            os.utime(first)
            os.utime(second)
        shutil.rmtree(tmp_path / "pkg")
        (tmp_path / "pkg").mkdir()
        assert watcher.changed() is True
        assert watcher.watch_dirs({".", "pkg"}) is True
        watcher.changed()
        (tmp_path / "pkg" / "c.py").write_text("x = 3\n")
        assert watcher.changed() is True
    finally:
        watcher.close()


@linux_only
def test_a_queue_that_overflowed_with_the_store_s_own_writes_is_a_change(tmp_path):
    """The events past the kernel's queue are lost, an edit of the tree among them: an overflow
    says changed even when every event that made it was the store's (not a change itself)."""
    with open("/proc/sys/fs/inotify/max_queued_events") as fh:
        limit = int(fh.read())
    if limit > 200_000:
        pytest.skip("the kernel's event queue is too long to fill quickly")
    (tmp_path / ".retrieval").mkdir()
    (tmp_path / ".retrieval-other").mkdir()
    watcher = InotifyWatcher(str(tmp_path), (".retrieval", ".retrieval-other"))
    try:
        watcher.watch_dirs({"."})
        for _ in range(limit // 2 + 1):  # two entries in turn: the kernel merges an event repeated at once
            os.utime(tmp_path / ".retrieval")
            os.utime(tmp_path / ".retrieval-other")
        (tmp_path / "a.py").write_text("x = 1\n")  # past the full queue: its event is dropped
        assert watcher.changed() is True
    finally:
        watcher.close()


@linux_only
def test_a_watcher_that_could_not_watch_a_directory_says_every_look_may_have_changed(tmp_path):
    """Past the watch limit (ENOSPC) a directory goes unwatched: a quiet queue proves nothing."""
    import ctypes

    (tmp_path / "d").mkdir()
    watcher = InotifyWatcher(str(tmp_path))

    class WatchLimit:  # the C library, but watches of `d` fail as past the limit
        def __init__(self, libc):
            self.libc = libc

        def __getattr__(self, name):
            return getattr(self.libc, name)

        def inotify_add_watch(self, fd, path, mask):
            if path.endswith(b"/d"):
                ctypes.set_errno(28)
                return -1
            return self.libc.inotify_add_watch(fd, path, mask)

    watcher._libc = WatchLimit(watcher._libc)
    try:
        watcher.watch_dirs({".", "d"})
        assert watcher.exact is False
        assert watcher.changed() is True
        assert watcher.changed() is True  # every look, with nothing in the queue
    finally:
        watcher.close()


@linux_only
def test_a_root_named_through_a_symbolic_link_is_watched(tmp_path):
    """`--root ~/proj`, proj a link to the checkout: its watch did not follow the link, and a file
    written at the top of the tree went unseen while those below it were seen."""
    real = tmp_path / "checkout"
    (real / "pkg").mkdir(parents=True)
    (tmp_path / "proj").symlink_to(real)
    watcher = InotifyWatcher(str(tmp_path / "proj"))
    try:
        watcher.watch_dirs({".", "pkg"})
        watcher.changed()
        (real / "top.py").write_text("x = 1\n")
        assert watcher.changed() is True
    finally:
        watcher.close()


MOUNTINFO = """\
27 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
40 27 0:50 / /home/me/share rw,relatime - nfs4 server:/export rw
41 40 0:51 / /home/me/share/local\\040disk rw,relatime - ext4 /dev/sdb1 rw
"""


def test_the_file_system_of_a_path_is_that_of_the_deepest_mount_holding_it():
    from retrieval.server.watch import filesystem_type

    assert filesystem_type("/home/me/project", MOUNTINFO) == "ext4"
    assert filesystem_type("/home/me/share/project", MOUNTINFO) == "nfs4"
    assert filesystem_type("/home/me/share/local disk/project", MOUNTINFO) == "ext4"
    assert filesystem_type("/home/me/shared", MOUNTINFO) == "ext4"  # a name that only starts like it
    # A file system mounted over another at the same point hides it: the later line is the one in use.
    over = MOUNTINFO + "42 27 0:52 / /home/me/project rw,relatime - nfs server:/project rw\n"
    assert filesystem_type("/home/me/project/src", over) == "nfs"
    assert filesystem_type("/home/me/project/src", over + "43 42 8:3 / /home/me/project rw - ext4 /dev/sdc1 rw\n") == "ext4"


def test_a_tree_on_a_network_file_system_is_checked_by_its_files_not_by_notifications(tmp_path, monkeypatch):
    """inotify is silent about changes made on another machine (NFS, SMB) or by a VM's host (9p,
    virtiofs, WSL's drvfs): a served answer there would have missed them."""
    from retrieval.server import watch

    monkeypatch.setattr(watch, "filesystem_type", lambda path: "nfs4")
    watcher = make_watcher(str(tmp_path))
    assert isinstance(watcher, PollWatcher) and not watcher.exact
    monkeypatch.setattr(watch, "filesystem_type", lambda path: "ext4")
    watcher = make_watcher(str(tmp_path))
    try:
        assert isinstance(watcher, InotifyWatcher) == sys.platform.startswith("linux")
    finally:
        watcher.close()


@linux_only
@pytest.mark.extra("treesitter")
def test_a_command_s_freshen_checks_its_own_index_and_leaves_the_others_to_the_next_one(tmp_path):
    """After a branch switch a served lexical query waited while every open index was refreshed,
    hybrid's embedding of hundreds of chunks included, and a client that gave up on the server found
    the store locked and answered from the old branch for minutes (a probe of git working copies)."""
    from retrieval import service
    from retrieval.server.warm import Warm
    from retrieval.store import layout

    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def alpha_handler():\n    return 1\n")
    store = layout.store_dir(str(root))
    warm = Warm(str(root))
    try:
        warm.open(["lexical", "treesitter"])
        assert {(store, "lexical"), (store, "treesitter")} <= set(service.VOUCHED) and not warm.behind
        (root / "b.py").write_text("def beta_handler():\n    return 2\n")
        warm.note_events()
        warm.freshen(["lexical"])
        assert (store, "lexical") in service.VOUCHED and (store, "treesitter") not in service.VOUCHED
        assert warm.behind  # the server's next quiet moment freshens the rest
        # The index left behind is checked by the command that opens it, as a cold one would be.
        hits = service.search(str(root), "beta_handler", retriever="treesitter").hits
        assert hits and hits[0].source_path == "b.py"
        warm.freshen()
        assert (store, "treesitter") in service.VOUCHED and not warm.behind
    finally:
        warm.close()
        service._OPEN.clear()


def test_the_indexes_a_command_line_opens():
    from retrieval.server.warm import _embeds, command_retrievers

    assert command_retrievers(["query", "x"], {}) == ["lexical"]
    assert command_retrievers(["query", "x", "--retriever", "treesitter"], {}) == ["treesitter"]
    assert command_retrievers(["query", "x", "--retriever=hybrid"], {"RETRIEVAL_RETRIEVER": "treesitter"}) == ["hybrid"]
    assert command_retrievers(["query", "x"], {"RETRIEVAL_RETRIEVER": "turbovec"}) == ["turbovec"]
    assert command_retrievers(["query", "x", "--retriever", "all"], {}) is None
    assert command_retrievers(["status", "--json"], {}) == []
    assert sorted(["hybrid", "lexical", "turbovec", "treesitter"], key=_embeds) == [
        "lexical", "treesitter", "hybrid", "turbovec"]


@pytest.mark.extra("treesitter")
def test_a_freshen_of_all_leaves_nothing_behind_even_what_it_could_not_vouch_for(tmp_path, monkeypatch):
    """A poll watcher never vouches for an index: `behind` stayed set after every freshen, and the
    server's loop freshened without pause (15,000 times in 8 s, a core busy for its idle half hour)."""
    from retrieval import service
    from retrieval.server import warm as warm_module

    monkeypatch.setattr(warm_module, "make_watcher", lambda root, skip=(): PollWatcher())
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def alpha_handler():\n    return 1\n")
    warm = warm_module.Warm(str(root))
    try:
        warm.open(["lexical", "treesitter"])
        assert not warm.behind
        warm.freshen(["lexical"])
        assert warm.behind  # treesitter was passed over
        warm.freshen()
        assert not warm.behind  # tried, though not vouched for: the next change (or poll) tries again
        assert not any(store == warm.store for store, _name in service.VOUCHED)
    finally:
        warm.close()
        service._OPEN.clear()


def test_a_freshen_after_a_change_hands_freed_memory_back(tmp_path, monkeypatch):
    """glibc keeps a refresh's freed heap: a server's memory grew from 300 MB to 1.8 GB over a
    soak of edits with hybrid open, 1.3 GB of it freed (a soak of the warm path)."""
    from retrieval import service
    from retrieval.server import warm as warm_module

    trimmed = []
    monkeypatch.setattr(warm_module, "return_freed_memory", lambda: trimmed.append(True))
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def alpha_handler():\n    return 1\n")
    warm = warm_module.Warm(str(root))
    try:
        warm.open(["lexical"])
        trimmed.clear()
        warm.freshen()
        assert trimmed == []  # nothing changed: nothing freed
        (root / "b.py").write_text("def beta():\n    pass\n")
        warm.dirty = True
        warm.freshen()
        assert trimmed == [True]
    finally:
        warm.close()
        service._OPEN.clear()
    warm_module.return_freed_memory()  # (and the real one runs wherever it is)


@linux_only
def test_a_server_finds_a_data_file_edited_in_place_into_a_script(tmp_path):
    """`bin/deploy`, extension-less data, edited in place into a script: the watcher said something
    changed, the server's check (like a cold query's) stat'ed no such file and vouched for the
    index, and queries through it never found the new function."""
    from retrieval import service
    from retrieval.server.warm import Warm

    root = tmp_path / "repo"
    (root / "bin").mkdir(parents=True)
    (root / "main.go").write_text("package main\nfunc Main() {}\n")
    (root / "bin" / "deploy").write_text("just some data here\n")
    warm = Warm(str(root))
    try:
        warm.open(["lexical"])
        with open(root / "bin" / "deploy", "r+") as fh:  # in place: no directory changes
            fh.write("#!/usr/bin/env python\ndef quokka_deploy():\n    pass\n")
        warm.freshen()
        assert [h.source_path for h in service.search(str(root), "quokka_deploy").hits] == ["bin/deploy"]
    finally:
        warm.close()
        service._OPEN.clear()


def test_the_server_s_own_freshen_leaves_embedding_indexes_to_the_command_asking_for_them(tmp_path, monkeypatch):
    """After a batch of edits, the freshen between requests re-embedded hybrid's changed chunks in
    the one request loop: every lexical query in those minutes waited 10 s and answered stale."""
    from retrieval import service
    from retrieval.server import warm as warm_module

    (tmp_path / "a.py").write_text("x = 1\n")
    warm = warm_module.Warm(str(tmp_path))
    validated = []
    monkeypatch.setattr(warm, "open_names", lambda: ["lexical", "hybrid"])
    monkeypatch.setattr(warm, "_validate", validated.append)
    monkeypatch.setattr(warm.watcher, "changed", lambda: True)
    try:
        warm.freshen(embedding=False)  # between requests
        assert validated == ["lexical"] and not warm.behind  # (not behind: the loop would spin on it)
        warm.freshen(["lexical"])  # a lexical query's
        assert validated == ["lexical", "lexical"] and not warm.behind
        warm.freshen(["hybrid"])  # a hybrid query's: it waits for its own index, as a cold one would
        assert validated[-1] == "hybrid"
        warm.freshen()  # all (`--retriever all`, the server's start)
        assert validated[-2:] == ["lexical", "hybrid"]
    finally:
        warm.close()
        service._OPEN.clear()
