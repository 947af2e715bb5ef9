"""The root a command uses without --root: nearest index, else repository root, else the cwd."""
from __future__ import annotations

from retrieval import service
from retrieval.roots import find_root


def test_a_given_root_is_used_as_it_is(tmp_path):
    assert find_root(str(tmp_path / "x"), start=str(tmp_path)) == (str(tmp_path / "x"), "given")


def test_the_nearest_directory_with_an_index_wins_over_a_nearer_repository(tmp_path):
    deep = tmp_path / "mono" / "pkg" / "src"
    deep.mkdir(parents=True)
    (tmp_path / "mono" / ".retrieval").mkdir()
    (tmp_path / "mono" / "pkg" / ".git").mkdir()
    assert find_root(start=str(deep)) == (str(tmp_path / "mono"), "index")


def test_without_an_index_the_repository_root_is_used(tmp_path):
    deep = tmp_path / "repo" / "a" / "b"
    deep.mkdir(parents=True)
    (tmp_path / "repo" / ".git").write_text("gitdir: elsewhere\n")  # a worktree or submodule
    assert find_root(start=str(deep)) == (str(tmp_path / "repo"), "repository")


def test_with_neither_the_start_directory_is_used(tmp_path):
    assert find_root(start=str(tmp_path)) == (str(tmp_path), "cwd")


def test_an_index_kept_under_retrieval_index_dir_is_found_too(make_tree, tmp_path, monkeypatch):
    root = make_tree({"pkg/app.py": "def app():\n    return 1\n"})
    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "indexes"))
    assert find_root(start=str(root / "pkg")) == (str(root / "pkg"), "cwd")
    service.refresh(str(root))
    assert not (root / ".retrieval").exists()
    assert find_root(start=str(root / "pkg")) == (str(root), "index")
