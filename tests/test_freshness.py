"""Racy entries: an edit that keeps size and mtime is caught when the mtime was not clearly older
than the index's check, as git does; clearly older entries are trusted on their stat alone."""
from __future__ import annotations

import json
import os
import time

from retrieval import service
from retrieval.freshness import COARSE_MARGIN_NS, FINE_MARGIN_NS, racy, settle
from retrieval.store import layout

SECOND = 1_000_000_000


def test_an_mtime_within_a_tick_of_the_check_is_racy_and_a_clearly_older_one_is_not():
    checked = 1_700_000_000_123_456_789
    assert racy(checked - FINE_MARGIN_NS // 2, checked, checked + SECOND)
    assert racy(checked, checked, checked + SECOND)
    assert not racy(checked - 2 * FINE_MARGIN_NS, checked, checked + SECOND)
    # whole-second stamps (a coarse filesystem) are judged with a wider margin
    assert racy(checked // SECOND * SECOND - SECOND, checked, checked + SECOND)
    assert not racy(checked // SECOND * SECOND - 2 * COARSE_MARGIN_NS, checked, checked + SECOND)
    # a manifest from before check times were recorded: nothing is racy
    assert not racy(checked, None, checked + SECOND)
    # a stamp far in the future cannot have been reached by an edit yet
    assert not racy(checked + 10 * SECOND, checked, checked + SECOND)
    assert racy(checked + 10 * SECOND, checked, checked + 10 * SECOND)


def _set_checked(root, value: int) -> None:
    path = layout.manifest_path(layout.store_dir(str(root)), "lexical")
    with open(path, encoding="utf-8") as fh:
        manifest = json.load(fh)
    manifest["checked_ns"] = value
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh)


def _same_size_edit(path, old: str, new: str, mtime_ns: int) -> None:
    assert len(old) == len(new)
    path.write_text(new)
    os.utime(path, ns=(mtime_ns, mtime_ns))


def test_a_same_size_edit_in_the_tick_of_the_index_is_seen_at_the_next_query(make_tree):
    before = "def lookup_alpha():\n    return 1\n"
    after = "def lookup_omega():\n    return 1\n"
    root = make_tree({"pkg/a.py": before, "pkg/b.py": "def other():\n    return 2\n"})
    stamp = time.time_ns() - SECOND
    os.utime(root / "pkg/a.py", ns=(stamp, stamp))
    service.refresh(str(root))
    _set_checked(root, stamp)  # the index committed in the same tick as the file's stamp
    _same_size_edit(root / "pkg/a.py", before, after, stamp)
    assert not service.is_current(str(root), layout.read_manifest(layout.store_dir(str(root)), "lexical"))

    hits = service.search(str(root), "lookup_omega").hits
    assert hits and hits[0].source_path == "pkg/a.py"
    # checked once, at a later time: the entry is clean now and is not read again
    assert service.refresh(str(root)).reread == []
    assert service.is_current(str(root), layout.read_manifest(layout.store_dir(str(root)), "lexical"))


def _indexed_then_forged(make_tree):
    """A root whose pkg/a.py was indexed, then edited keeping its size and mtime (lookup_alpha ->
    lookup_omega), well after the index's check."""
    before = "def lookup_alpha():\n    return 1\n"
    root = make_tree({"pkg/a.py": before})
    stamp = time.time_ns() - 10 * SECOND
    os.utime(root / "pkg/a.py", ns=(stamp, stamp))
    service.refresh(str(root))
    _set_checked(root, stamp + 5 * SECOND)
    _same_size_edit(root / "pkg/a.py", before, "def lookup_omega():\n    return 1\n", stamp)
    return root


def test_an_edit_forging_size_and_mtime_is_seen_through_the_ctime(make_tree):
    root = _indexed_then_forged(make_tree)
    # git's stat check would miss it (size and mtime as recorded); the write changed the ctime
    assert service.refresh(str(root)).reread == ["pkg/a.py"]
    assert service.search(str(root), "lookup_omega").hits[0].source_path == "pkg/a.py"


def test_an_edit_forging_size_and_mtime_is_seen_by_the_next_query(make_tree):
    """A query checks the index by stats alone: the ctime is what tells it the file changed."""
    root = _indexed_then_forged(make_tree)
    assert not service.is_current(str(root), layout.read_manifest(layout.store_dir(str(root)), "lexical"))
    assert [h.source_path for h in service.search(str(root), "lookup_omega").hits] == ["pkg/a.py"]


def test_a_file_over_the_size_cap_rewritten_small_with_its_old_mtime_is_indexed_by_the_next_query(make_tree):
    """Its size is all that changes (a sync tool keeps the mtime; no directory changes)."""
    root = make_tree({"big.py": "def lookup_big():\n    return 1\n" + "#" * 200 + "\n", "a.py": "x = 1\n"})
    stamp = time.time_ns() - 10 * SECOND
    os.utime(root / "big.py", ns=(stamp, stamp))
    service.refresh(str(root), options=service.IndexOptions(max_bytes=100))
    assert service.search(str(root), "lookup_big").hits == []
    (root / "big.py").write_text("def lookup_big():\n    return 1\n")
    os.utime(root / "big.py", ns=(stamp, stamp))
    assert not service.is_current(str(root), layout.read_manifest(layout.store_dir(str(root)), "lexical"))
    assert [h.source_path for h in service.search(str(root), "lookup_big").hits] == ["big.py"]


def _drop_ctimes(root) -> None:
    """The manifest as an index written before ctimes were kept has it."""
    path = layout.manifest_path(layout.store_dir(str(root)), "lexical")
    with open(path, encoding="utf-8") as fh:
        manifest = json.load(fh)
    del manifest["files"][layout.CTIME_COLUMN]
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh)


def test_an_index_without_ctimes_still_sees_edits_that_keep_the_mtime(make_tree):
    """With no ctime to compare, the size tells a query of a changed file, and a racy entry is read
    again whatever its stat says."""
    before = "def lookup_alpha():\n    return 1\n"
    root = make_tree({"pkg/a.py": before})
    stamp = time.time_ns() - 10 * SECOND
    os.utime(root / "pkg/a.py", ns=(stamp, stamp))
    service.refresh(str(root))
    _drop_ctimes(root)
    _set_checked(root, stamp + 5 * SECOND)
    (root / "pkg/a.py").write_text("def lookup_longer_name():\n    return 1\n")
    os.utime(root / "pkg/a.py", ns=(stamp, stamp))
    assert not service.is_current(str(root), layout.read_manifest(layout.store_dir(str(root)), "lexical"))
    assert [h.source_path for h in service.search(str(root), "lookup_longer_name").hits] == ["pkg/a.py"]

    # A same-size edit in the tick of the index's check: racy, so read again.
    stamp = time.time_ns() - 10 * SECOND
    os.utime(root / "pkg/a.py", ns=(stamp, stamp))
    service.refresh(str(root))
    _drop_ctimes(root)
    _set_checked(root, stamp)
    _same_size_edit(root / "pkg/a.py", "def lookup_longer_name():\n    return 1\n",
                    "def lookup_louder_name():\n    return 1\n", stamp)
    assert service.refresh(str(root)).reread == ["pkg/a.py"]
    assert [h.source_path for h in service.search(str(root), "lookup_louder_name").hits] == ["pkg/a.py"]


def test_settling_leaves_racy_a_file_whose_content_changed_while_the_refresh_waited():
    checked = time.time_ns()
    racy_files = {"a.py": (checked, "digest as indexed")}
    assert settle(racy_files, checked, lambda path: "another digest") == checked
    assert settle(racy_files, checked, lambda path: None) == checked  # unreadable now
    # (discriminating: unchanged, the present becomes the check time)
    assert settle(racy_files, checked, lambda path: "digest as indexed") > checked


def test_a_file_saved_just_before_indexing_is_settled_by_the_refresh_not_left_racy(make_tree):
    root = make_tree({"pkg/a.py": "def old():\n    pass\n"})
    (root / "pkg/a.py").write_text("def fresh_save():\n    pass\n")  # stamped now, as an editor's save
    service.refresh(str(root))
    manifest = layout.read_manifest(layout.store_dir(str(root)), "lexical")
    assert service.is_current(str(root), manifest)  # the refresh waited out the tick and re-read it
    assert service.refresh(str(root)).reread == []


def test_a_file_replaced_by_one_of_the_same_size_and_mtime_is_read_again(make_tree):
    """Archives and `cp -p` give whole-second, equal mtimes: `mv b.py a.py` left a.py's old chunks."""
    from retrieval import service

    root = make_tree({"a.py": "def zeta_alpha():\n    return 1\n", "b.py": "def zeta_bravo():\n    return 2\n"})
    for name in ("a.py", "b.py"):
        os.utime(root / name, ns=(1_700_000_000 * 10**9, 1_700_000_000 * 10**9))
    service.refresh(str(root))
    os.replace(root / "b.py", root / "a.py")
    hits = service.search(str(root), "zeta_bravo", top_k=1).hits
    assert [(h.source_path, h.confidence) for h in hits] == [("a.py", "high")]
    assert service.refresh(str(root)).status == "up to date"


def test_an_ignore_file_rewritten_with_its_old_size_and_mtime_is_seen_through_the_ctime(make_tree):
    """`cp -p` or a sync tool rewrites `.gitignore` keeping size and mtime: its new rules were never
    applied by the incremental index, while a clean build applied them."""
    root = make_tree({"a.py": "def alpha_handler():\n    return 1\n",
                      "notes.md": "# Notes\n\nalpha_handler is documented here.\n", ".gitignore": "*.md\n"})
    stamp = time.time_ns() - 10 * SECOND
    os.utime(root / ".gitignore", ns=(stamp, stamp))
    assert [h.source_path for h in service.search(str(root), "alpha_handler").hits] == ["a.py"]
    _same_size_edit(root / ".gitignore", "*.md\n", "*.py\n", stamp)
    assert not service.is_current(str(root), layout.read_manifest(layout.store_dir(str(root)), "lexical"))
    assert [h.source_path for h in service.search(str(root), "alpha_handler").hits] == ["notes.md"]


def test_a_repository_made_above_the_root_brings_its_ignore_rules_to_the_next_query(tmp_path):
    """`git init` in a parent makes its `.gitignore` apply to the root below (a clean build honours
    it); the index said it was current."""
    from conftest import write_tree

    project = write_tree(tmp_path / "proj", {".gitignore": "*.md\n", "sub/a.py": "def alpha_handler():\n    return 1\n",
                                             "sub/notes.md": "# Notes\n\nalpha_handler is documented here.\n"})
    root = str(project / "sub")
    assert sorted(h.source_path for h in service.search(root, "alpha_handler").hits) == ["a.py", "notes.md"]
    (project / ".git").mkdir()
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert [h.source_path for h in service.search(root, "alpha_handler").hits] == ["a.py"]


def test_setting_core_excludes_file_in_a_git_config_is_seen_by_the_next_query(make_tree, monkeypatch, tmp_path):
    """`git config core.excludesFile FILE` changes what is ignored without touching the tree: the
    config files were read by a walk but not watched."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    root = make_tree({".git/HEAD": "ref: refs/heads/main\n", "a.py": "def alpha_handler():\n    return 1\n",
                      "notes.md": "# Notes\n\nalpha_handler is documented here.\n"})
    assert sorted(h.source_path for h in service.search(str(root), "alpha_handler").hits) == ["a.py", "notes.md"]
    (tmp_path / "my-ignore").write_text("*.md\n")
    (root / ".git" / "config").write_text(f"[core]\n\texcludesFile = {tmp_path / 'my-ignore'}\n")
    assert [h.source_path for h in service.search(str(root), "alpha_handler").hits] == ["a.py"]
    (tmp_path / "xdg" / "git").mkdir(parents=True)  # the user's config, absent until now, wins over none
    (tmp_path / "xdg" / "git" / "config").write_text("[core]\n\tbare = false\n")
    assert not service.is_current(str(root), layout.read_manifest(layout.store_dir(str(root)), "lexical"))


def test_a_query_by_a_user_with_other_git_ignore_rules_applies_them(make_tree, monkeypatch, tmp_path):
    """Another HOME or XDG_CONFIG_HOME (`sudo`, a CI user) finds another per-user ignore file; the
    index, checked against the files the first user's walk watched, said it was current."""
    root = make_tree({".git/HEAD": "ref: refs/heads/main\n", "a.py": "def alpha_handler():\n    return 1\n",
                      "notes.md": "# Notes\n\nalpha_handler is documented here.\n"})
    assert sorted(h.source_path for h in service.search(str(root), "alpha_handler").hits) == ["a.py", "notes.md"]
    other = tmp_path / "other-user"
    (other / ".config" / "git").mkdir(parents=True)
    (other / ".config" / "git" / "ignore").write_text("*.md\n")
    monkeypatch.setenv("HOME", str(other))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(other / ".config"))
    assert [h.source_path for h in service.search(str(root), "alpha_handler").hits] == ["a.py"]
    assert service.is_current(str(root), layout.read_manifest(layout.store_dir(str(root)), "lexical"))


def test_a_repository_made_between_the_root_and_its_repository_s_top_takes_over_its_rules(tmp_path):
    """`git init proj/mid` with the root at proj/mid/sub: the nested repository's rules replace the
    outer ones (git's view, and a clean build's); the index kept the outer `*.md` rule."""
    from conftest import write_tree

    project = write_tree(tmp_path / "proj", {".git/HEAD": "ref: refs/heads/main\n", ".gitignore": "*.md\n",
                                             "mid/sub/a.py": "def alpha_handler():\n    return 1\n",
                                             "mid/sub/notes.md": "# Notes\n\nalpha_handler is documented here.\n"})
    root = str(project / "mid" / "sub")
    assert [h.source_path for h in service.search(root, "alpha_handler").hits] == ["a.py"]
    (project / "mid" / ".git").mkdir()
    (project / "mid" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert sorted(h.source_path for h in service.search(root, "alpha_handler").hits) == ["a.py", "notes.md"]
