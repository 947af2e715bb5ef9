"""The root a command uses without --root: nearest index, else repository root, else the cwd."""
from __future__ import annotations

from retrieval import service
from retrieval.roots import find_root


def test_a_given_root_is_used_as_it_is(tmp_path):
    assert find_root(str(tmp_path / "x"), start=str(tmp_path)) == (str(tmp_path / "x"), "given")


def indexed(path):
    (path / ".retrieval" / "lexical").mkdir(parents=True)
    (path / ".retrieval" / "lexical" / "manifest.json").write_text("{}")


def test_a_superproject_s_index_wins_over_a_nearer_submodule_it_holds(make_tree):
    mono = make_tree({"pkg/src/app.py": "def app():\n    return 1\n", "main.py": "x = 1\n"})
    (mono / ".git").mkdir()
    (mono / ".git" / "modules" / "pkg").mkdir(parents=True)
    (mono / "pkg" / ".git").write_text("gitdir: ../.git/modules/pkg\n")
    service.refresh(str(mono))
    assert find_root(start=str(mono / "pkg" / "src")) == (str(mono), "index")


def test_an_outer_index_never_answers_for_a_repository_it_leaves_out_nor_for_a_linked_worktree(make_tree):
    """A worktree on another branch, under the main checkout, was answered from the main checkout's
    index (its files, its lines), and so was a repository cloned into an ignored directory (a
    probe of git working copies)."""
    main = make_tree({".gitignore": "libs/\n", "app.py": "def handler():\n    return 'main'\n",
                      "libs/click/core.py": "def command():\n    pass\n",
                      ".worktrees/feat/app.py": "def handler():\n    return 'feat'\n",
                      ".git/info/exclude": ".worktrees/\n", ".git/worktrees/feat/commondir": "../..\n"})
    (main / "libs" / "click" / ".git").mkdir()
    (main / ".worktrees" / "feat" / ".git").write_text(f"gitdir: {main / '.git' / 'worktrees' / 'feat'}\n")
    service.refresh(str(main))
    assert find_root(start=str(main / "libs" / "click")) == (str(main / "libs" / "click"), "repository")
    assert find_root(start=str(main / ".worktrees" / "feat")) == (str(main / ".worktrees" / "feat"), "repository")
    assert find_root(start=str(main)) == (str(main), "index")
    # A worktree the outer index does hold (nothing ignores it) is still a checkout of its own.
    (main / ".git" / "info" / "exclude").write_text("")
    service.refresh(str(main))
    assert find_root(start=str(main / ".worktrees" / "feat")) == (str(main / ".worktrees" / "feat"), "repository")


def test_a_plain_directory_s_index_never_answers_for_a_repository_below_it(tmp_path):
    """A query once run (or killed) in ~/src, or an index of all of home, answered every project
    below it with other projects' files, and refreshed all of them on each query."""
    deep = tmp_path / "src" / "repo" / "lib"
    deep.mkdir(parents=True)
    (tmp_path / "src" / "repo" / ".git").mkdir()
    indexed(tmp_path / "src")
    assert find_root(start=str(deep)) == (str(tmp_path / "src" / "repo"), "repository")
    assert find_root(start=str(tmp_path / "src")) == (str(tmp_path / "src"), "index")
    indexed(tmp_path / "src" / "repo" / "lib")
    assert find_root(start=str(deep)) == (str(deep), "index")  # an index inside the repository does


def test_a_store_no_build_ever_committed_to_is_no_index(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / ".retrieval" / "lexical").mkdir(parents=True)  # a first build killed before its commit
    assert find_root(start=str(tmp_path / "pkg")) == (str(tmp_path / "pkg"), "cwd")


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


def test_the_command_suggested_for_a_home_directory_named_with_a_space_is_quoted(run, tmp_path, monkeypatch):
    home = tmp_path / "John Smith"
    home.mkdir()
    (home / "notes.md").write_text("# where tokens are refreshed\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(home)
    result = run("query", "tokens")
    assert result.exit_code == 1 and result.stderr.endswith(f"give --root '{home}' to index everything below it\n")


def test_a_home_directory_chosen_only_as_the_cwd_is_not_indexed_unasked(run, tmp_path, monkeypatch):
    """Run from $HOME outside any repository, a first query would index every project below it."""
    (tmp_path / "notes.md").write_text("# where tokens are refreshed\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    for command in (("query", "tokens"), ("index",)):
        result = run(*command)
        assert result.exit_code == 1
        assert result.stderr == (f"error: {tmp_path} is your home directory, not a project: cd into a "
                                 f"repository, or give --root {tmp_path} to index everything below it\n")
        assert result.stdout == ""
    assert not (tmp_path / ".retrieval").exists()
    # Asked for by name, it is indexed; once indexed, it is found as an index and used.
    assert run("index", "--root", tmp_path).exit_code == 0
    result = run("query", "tokens")
    assert result.exit_code == 0 and "notes.md" in result.stdout


def test_below_home_a_plain_directory_and_a_repository_are_roots_as_before(run, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    for sub in ("scratch", "repo"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "a.py").write_text("def refresh_token():\n    return 1\n")
    (tmp_path / "repo" / ".git").mkdir()
    for sub in ("scratch", "repo"):
        monkeypatch.chdir(tmp_path / sub)
        result = run("query", "refresh_token")
        assert result.exit_code == 0, result.stderr
        assert result.stdout.startswith("a.py:1-2")


def test_the_filesystem_root_chosen_only_as_the_cwd_is_refused(run, monkeypatch):
    monkeypatch.chdir("/")
    result = run("query", "tokens")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: / is the filesystem root, not a project")


def test_a_folder_of_repositories_chosen_as_the_cwd_is_refused_but_one_given_or_indexed_is_not(run, tmp_path,
                                                                                                monkeypatch):
    """A query typed in ~/src (no repository around it) indexed every checkout below it."""
    for name in ("api", "web", "tools"):
        (tmp_path / name / ".git").mkdir(parents=True)
        (tmp_path / name / "a.py").write_text("def refresh_token():\n    return 1\n")
    monkeypatch.chdir(tmp_path)
    result = run("query", "refresh_token")
    assert result.exit_code == 1
    assert result.stderr == (f"error: {tmp_path} is a directory of 3 projects (api, tools, web), not a "
                             f"project: cd into a repository, or give --root {tmp_path} to index everything below it\n")
    assert not (tmp_path / ".retrieval").exists()
    assert run("query", "--root", tmp_path, "refresh_token").exit_code == 0  # asked for: indexed
    assert run("query", "refresh_token").exit_code == 0  # and from then on found by its index
    monkeypatch.chdir(tmp_path / "web")
    assert run("query", "refresh_token").stdout.startswith("a.py:1-2")  # inside one: that repository


def test_a_folder_of_separately_indexed_projects_without_git_is_refused_too(run, tmp_path, monkeypatch):
    """Copies of projects (no `.git`), each indexed on its own: a query from the folder above
    them indexed all of them as one project."""
    for name in ("api", "web"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "a.py").write_text("def refresh_token():\n    return 1\n")
        assert run("index", "--root", tmp_path / name, "--retriever", "lexical").exit_code == 0
    monkeypatch.chdir(tmp_path)
    result = run("query", "refresh_token")
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {tmp_path} is a directory of 2 projects (api, web), not a project")
    assert not (tmp_path / ".retrieval").exists()


def test_a_folder_of_repositories_a_level_further_down_is_refused_too(run, tmp_path, monkeypatch):
    """`~/work/projects/{api,web}` typed from `~` indexed every checkout as one project."""
    for name in ("work/projects/api", "work/projects/web", "sites/blog"):
        (tmp_path / name / ".git").mkdir(parents=True)
    (tmp_path / "work" / "projects" / "api" / "vendor" / "lib" / ".git").mkdir(parents=True)  # inside one: not counted
    (tmp_path / "notes" / "2024" / "drafts" / "x" / ".git").mkdir(parents=True)  # deeper than looked at
    monkeypatch.chdir(tmp_path)
    result = run("query", "refresh_token")
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {tmp_path} is a directory of 3 projects (sites/blog, work/projects/api, "
                                    "work/projects/web), not a project")
    assert not (tmp_path / ".retrieval").exists()


def test_a_directory_holding_one_repository_is_not_refused(run, tmp_path, monkeypatch):
    (tmp_path / "api" / ".git").mkdir(parents=True)
    (tmp_path / "notes.md").write_text("# refresh tokens\n")
    monkeypatch.chdir(tmp_path)
    assert run("query", "refresh").exit_code == 0


def test_serve_and_mcp_refuse_it_too_but_a_stop_is_always_allowed(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from retrieval.server.commands import mcp_command, serve_command

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for command in (serve_command, mcp_command):
        result = runner.invoke(command, [])
        if command is mcp_command and "needs the mcp extra" in result.stderr:
            continue  # the core's run: checked with the extra installed
        if command is mcp_command:  # serving, every call answering the refusal (stdin here is empty)
            assert "is your home directory, not a project" in result.stderr and "every call answers" in result.stderr
            continue
        assert result.exit_code == 1 and "is your home directory, not a project" in result.stderr
    result = runner.invoke(serve_command, ["--stop"])
    assert result.exit_code == 0 and "no server is running" in result.stderr


def test_status_at_home_names_commands_that_work_there(run, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    result = run("status")
    assert result.exit_code == 0
    assert f"lexical: missing (build it with `retrieval index --retriever lexical --root {tmp_path}`)" in result.stdout
    assert result.stderr.strip().endswith("to index everything below it")
    assert "first `retrieval query`" not in result.stderr


def test_the_client_of_a_running_server_picks_the_same_root(tmp_path, monkeypatch):
    from retrieval.server.client import _root_of

    deep = tmp_path / "src" / "repo" / "lib"
    deep.mkdir(parents=True)
    (tmp_path / "src" / "repo" / ".git").mkdir()
    indexed(tmp_path / "src")
    monkeypatch.chdir(deep)
    assert _root_of(["query", "x"]) == find_root().path == str(tmp_path / "src" / "repo")


def test_a_home_kept_in_git_is_still_not_indexed_unasked_from_a_folder_below_it(run, tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()  # dotfiles
    (tmp_path / "Downloads").mkdir()
    (tmp_path / "Downloads" / "notes.md").write_text("# where tokens are refreshed\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path / "Downloads")
    result = run("query", "tokens")
    assert result.exit_code == 1 and "is your home directory, not a project" in result.stderr
    assert not (tmp_path / ".retrieval").exists()
