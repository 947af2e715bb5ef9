"""Discovery: which files of a tree are eligible, and why the others were skipped."""
from __future__ import annotations

import json
import os

import pytest

from retrieval import languages, service
from retrieval.discover import (
    DEFAULT_EXCLUDE_DIRS,
    DiscoveryError,
    DiscoveryOptions,
    discover_files,
    is_secret_name,
    walk,
)


def _manifest(root) -> dict:
    return json.loads((root / ".retrieval" / "lexical" / "manifest.json").read_text())


def paths(root, **kw) -> list[str]:
    return [f.path for f in discover_files(str(root), **kw)]


# -- ignore files ------------------------------------------------------------------------------


def test_root_gitignore_excludes_matching_files(make_tree):
    root = make_tree({".gitignore": "generated_*.py\n", "generated_a.py": "x\n", "main.py": "x\n"})
    assert paths(root) == ["main.py"]


def test_gitignore_in_a_subdirectory_applies_only_below_it(make_tree):
    root = make_tree({
        "sub/.gitignore": "*.md\n",
        "sub/notes.md": "n\n",
        "sub/deeper/notes.md": "n\n",
        "notes.md": "n\n",
    })
    assert paths(root) == ["notes.md"]


def test_negation_reincludes_a_file_after_a_broader_pattern(make_tree):
    root = make_tree({".gitignore": "*.py\n!keep.py\n", "keep.py": "k\n", "drop.py": "d\n", "sub/keep.py": "k\n"})
    assert paths(root) == ["keep.py", "sub/keep.py"]


def test_a_deeper_gitignore_can_reinclude_what_the_root_excluded(make_tree):
    root = make_tree({
        ".gitignore": "*.md\n",
        "sub/.gitignore": "!notes.md\n",
        "notes.md": "n\n",
        "sub/notes.md": "n\n",
    })
    assert paths(root) == ["sub/notes.md"]


def test_negation_cannot_reinclude_a_file_inside_an_ignored_directory(make_tree):
    root = make_tree({".gitignore": "/vendored/\n!vendored/keep.py\n", "vendored/keep.py": "k\n", "a.py": "a\n"})
    assert paths(root) == ["a.py"]


def test_directory_only_patterns_skip_directories_but_not_files_of_that_name(make_tree):
    root = make_tree({".gitignore": "README/\n", "README": "read me\n", "pkg/README/x.py": "x\n", "pkg/y.py": "y\n"})
    assert paths(root) == ["README", "pkg/y.py"]


def test_anchored_patterns_match_only_relative_to_their_ignore_file(make_tree):
    root = make_tree({
        ".gitignore": "/top.py\nsub/mid.py\n",
        "top.py": "t\n", "sub/top.py": "t\n", "sub/mid.py": "m\n", "other/sub/mid.py": "m\n",
    })
    assert paths(root) == ["other/sub/mid.py", "sub/top.py"]


def test_double_star_patterns_span_any_number_of_directories(make_tree):
    root = make_tree({
        ".gitignore": "a/**/b.py\n**/gen/\n",
        "a/b.py": "", "a/x/b.py": "", "a/x/y/b.py": "", "a/c.py": "",
        "gen/g.py": "", "deep/er/gen/g.py": "", "deep/er/keep.py": "",
    })
    assert paths(root) == ["a/c.py", "deep/er/keep.py"]


def test_retrievalignore_and_dot_ignore_files_are_honoured(make_tree):
    root = make_tree({
        ".retrievalignore": "fixtures/\n",
        "sub/.ignore": "big.py\n",
        "fixtures/data.py": "", "sub/big.py": "", "sub/small.py": "", "main.py": "",
    })
    assert paths(root) == ["main.py", "sub/small.py"]


def test_git_info_exclude_is_honoured(make_tree):
    root = make_tree({".git/info/exclude": "local_*.py\n", "local_notes.py": "", "main.py": ""})
    assert paths(root) == ["main.py"]


def test_info_exclude_created_after_indexing_makes_the_index_stale(make_tree):
    root = make_tree({".git/HEAD": "ref: refs/heads/main\n", "a.py": "apple = 1\n", "b.py": "b = 1\n"})
    service.refresh(str(root), "lexical")
    assert service.is_current(str(root), _manifest(root))
    (root / ".git" / "info").mkdir()
    (root / ".git" / "info" / "exclude").write_text("a.py\n")
    assert not service.is_current(str(root), _manifest(root))
    service.refresh(str(root), "lexical")
    assert _manifest(root)["files"]["path"] == ["b.py"]


def test_info_exclude_removed_after_indexing_makes_the_index_stale(make_tree):
    """.git is never walked: no directory the index watches changes when its info/exclude goes."""
    root = make_tree({".git/HEAD": "ref: refs/heads/main\n", ".git/info/exclude": "a.py\n",
                      "a.py": "apple = 1\n", "b.py": "b = 1\n"})
    service.refresh(str(root), "lexical")
    assert _manifest(root)["files"]["path"] == ["b.py"]
    os.unlink(root / ".git" / "info" / "exclude")
    assert not service.is_current(str(root), _manifest(root))
    assert [h.source_path for h in service.search(str(root), "apple").hits] == ["a.py"]


def test_a_root_below_the_top_of_its_repository_keeps_the_rules_above_it(make_tree):
    root = make_tree({
        ".git/info/exclude": "info_ign.py\n",
        ".gitignore": "top_*.py\n/sub/anchored.py\n",
        "sub/.ignore": "!top_kept.py\n",
        "sub/keep.py": "", "sub/top_ign.py": "", "sub/info_ign.py": "", "sub/anchored.py": "",
        "sub/deeper/anchored.py": "", "sub/top_kept.py": "",
    })
    assert paths(root / "sub") == ["deeper/anchored.py", "keep.py", "top_kept.py"]


def test_an_ignore_file_above_the_root_is_watched(make_tree):
    root = make_tree({".git/HEAD": "x\n", "sub/a.py": "apple = 1\n", "sub/b.py": "b = 1\n"})
    sub = root / "sub"
    service.refresh(str(sub), "lexical")
    (root / ".gitignore").write_text("a.py\n")
    assert not service.is_current(str(sub), _manifest(sub))
    service.refresh(str(sub), "lexical")
    assert _manifest(sub)["files"]["path"] == ["b.py"]


def test_a_worktree_and_a_nested_repository_use_their_own_info_exclude(make_tree):
    root = make_tree({
        "main/.git/info/exclude": "wt_local.py\n",
        "main/.git/worktrees/wt/commondir": "../..\n",
        "wt/.git": "gitdir: ../main/.git/worktrees/wt\n",
        "wt/wt_local.py": "", "wt/a.py": "",
        "wt/nested/.git/info/exclude": "nested_local.py\n",
        "wt/nested/nested_local.py": "", "wt/nested/b.py": "",
    })
    assert paths(root / "wt") == ["a.py", "nested/b.py"]


def test_a_worktree_reads_its_repository_s_config(make_tree, tmp_path):
    """A worktree's git directory has no `config`: the repository's core.excludesFile (and its
    core.ignoreCase) were lost there, and a file git ignores in both checkouts was indexed in the
    worktree only (a probe of git working copies)."""
    excludes = tmp_path / "excludes"
    excludes.write_text("local.py\n")
    root = make_tree({
        "main/.git/config": f"[core]\n\texcludesFile = {excludes}\n",
        "main/.git/worktrees/wt/commondir": "../..\n", "main/local.py": "", "main/a.py": "",
        "wt/.git": "gitdir: ../main/.git/worktrees/wt\n", "wt/local.py": "", "wt/a.py": "",
        "wt2/.git": "gitdir: ../main/.git/worktrees/wt2\n", "wt2/local.py": "", "wt2/mine.py": "",
        "main/.git/worktrees/wt2/commondir": "../..\n",
        "main/.git/worktrees/wt2/config.worktree": "[core]\n\texcludesFile = /nonexistent\n",
    })
    assert paths(root / "main") == ["a.py"]
    assert paths(root / "wt") == ["a.py"]
    assert paths(root / "wt2") == ["local.py", "mine.py"]  # its own config.worktree over the repository's


def test_a_submodule_is_walked_by_its_own_git_rules_not_the_outer_repositorys(make_tree, monkeypatch, tmp_path):
    """git applies neither the superproject's .gitignore nor its info/exclude inside a submodule:
    files the submodule tracks were dropped (and indexed when its directory was the root). The
    user's global excludes and the tool's own `.ignore` files still apply there."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    (tmp_path / "config" / "git").mkdir(parents=True)
    (tmp_path / "config" / "git" / "ignore").write_text("*.swp.py\n")
    root = make_tree({
        ".git/info/exclude": "local.py\n", ".gitignore": "*.gen.py\n", ".ignore": "scratch/\n",
        "lib/.git": "gitdir: ../.git/modules/lib\n", ".git/modules/lib/info/exclude": "mine.py\n",
        "lib/parser.gen.py": "", "lib/local.py": "", "lib/mine.py": "", "lib/x.swp.py": "", "lib/scratch/a.py": "",
        "lib/.gitignore": "built.py\n", "lib/built.py": "",
        "app.gen.py": "", "local.py": "", "main.py": "",
    })
    assert paths(root) == ["lib/local.py", "lib/parser.gen.py", "main.py"]
    # From the submodule's own directory, git's rules are the same (its own).
    inner = paths(root / "lib")
    assert {"local.py", "parser.gen.py"} <= set(inner) and not {"mine.py", "built.py", "x.swp.py"} & set(inner)


def test_the_users_global_git_excludes_apply_inside_a_repository(make_tree, monkeypatch, tmp_path):
    config = tmp_path / "config"
    (config / "git").mkdir(parents=True)
    (config / "git" / "ignore").write_text("scratch_*.py\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    repo = make_tree({".git/HEAD": "x\n", "scratch_notes.py": "", "main.py": ""})
    plain = make_tree({"scratch_notes.py": "", "main.py": ""}, name="plain")
    assert paths(repo) == ["main.py"]
    assert paths(plain) == ["main.py", "scratch_notes.py"]  # git applies them in repositories only
    # core.excludesFile in the repository's config names another file.
    (tmp_path / "mine").write_text("main.py\n")
    (repo / ".git" / "config").write_text(f"[core]\n\texcludesFile = {tmp_path / 'mine'}\t# mine\n")
    assert paths(repo) == ["scratch_notes.py"]


@pytest.mark.parametrize("target", ["/dev/null", "a directory"])
def test_a_users_excludes_file_that_is_no_readable_file_is_no_skipped_file_of_the_tree(make_tree, monkeypatch,
                                                                                      tmp_path, target):
    """core.excludesFile at /dev/zero counted `1 special-file`, at a directory `1 unreadable`,
    though no file of the tree was left out."""
    from retrieval.discover import walk

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    repo = make_tree({".git/HEAD": "x\n", "main.py": "x = 1\n"})
    excludes = target if target.startswith("/") else str(tmp_path)
    (repo / ".git" / "config").write_text(f"[core]\n\texcludesFile = {excludes}\n")
    result = walk(str(repo))
    assert [f.path for f in result.files] == ["main.py"] and not result.skipped


def test_core_excludes_file_set_in_an_included_config_applies(make_tree, monkeypatch, tmp_path):
    """A dotfiles setup keeps core.excludesFile in a file `[include]`d by ~/.gitconfig or the
    repository's config; git follows the include (relative to the including file), and so must we."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    repo = make_tree({".git/HEAD": "x\n", "scratch.py": "", "main.py": ""})
    (tmp_path / "ignores").write_text("scratch.py\n")
    (repo / ".git" / "shared.inc").write_text(f"[core]\n\texcludesfile = {tmp_path / 'ignores'}\n"
                                               "[include]\n\tpath = ../.git/config\n")  # a loop: ends
    (repo / ".git" / "config").write_text("[core]\n\tbare = false\n[include]\n\tpath = shared.inc\n")
    assert paths(repo) == ["main.py"]


def test_core_excludes_file_in_an_include_if_applies_only_to_the_repositories_it_names(make_tree, monkeypatch,
                                                                                        tmp_path):
    """`[includeIf "gitdir:~/work/"]` is how many keep work and home settings apart."""
    config = tmp_path / "config"
    (config / "git").mkdir(parents=True)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    work = make_tree({".git/HEAD": "x\n", "scratch.py": "", "main.py": ""}, name="work")
    home = make_tree({".git/HEAD": "x\n", "scratch.py": "", "main.py": ""}, name="home")
    (tmp_path / "work.ignore").write_text("scratch.py\n")
    (config / "git" / "work.inc").write_text(f"[core]\n\texcludesFile = {tmp_path / 'work.ignore'}\n")
    (config / "git" / "config").write_text(
        f'[includeIf "gitdir:{work}/"]\n\tpath = work.inc\n'
        '[includeIf "onbranch:main"]\n\tpath = /nonexistent\n')
    assert paths(work) == ["main.py"]
    assert paths(home) == ["main.py", "scratch.py"]
    (config / "git" / "config").write_text(f'[includeIf "gitdir/i:{str(work).upper()}/.GIT"]\n\tpath = work.inc\n')
    assert paths(work) == ["main.py"]


def test_core_excludes_file_is_read_as_git_reads_its_config(make_tree, monkeypatch, tmp_path):
    """A section header with its setting on the same line, a quoted value holding ` #`, a relative
    path (git's from the top of the work tree, not from where the command runs) and
    GIT_CONFIG_GLOBAL, which replaces ~/.gitconfig (a CI job's own configuration)."""
    repo = make_tree({".git/HEAD": "x\n", "a.py": "", "b.py": "", "c.py": "", "d.py": "", "main.py": "",
                      "local.ignore": "c.py\n"})
    (tmp_path / "one line").write_text("a.py\n")
    (tmp_path / "x #y").mkdir()
    (tmp_path / "x #y" / "ignore").write_text("b.py\n")
    (tmp_path / "d.ignore").write_text("d.py\n")
    (tmp_path / "global").write_text(f"[core] excludesFile = {tmp_path / 'd.ignore'}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "global"))
    monkeypatch.chdir(tmp_path)
    assert paths(repo) == ["a.py", "b.py", "c.py", "main.py"]
    for config, dropped in ((f"[core] excludesFile = {tmp_path / 'one line'}\n", "a.py"),
                            (f'[core]\n\texcludesFile = "{tmp_path / "x #y" / "ignore"}" ; mine\n', "b.py"),
                            ("[core]\n\texcludesFile = local.ignore\n", "c.py")):
        (repo / ".git" / "config").write_text(config)
        assert dropped not in paths(repo), config
        assert "d.py" in paths(repo)  # the repository's setting is the last one read


@pytest.mark.parametrize("config, folded", [
    ("[core]\n\tignorecase = true\n", True), ("[core]\n\tignoreCase = Yes ; a Mac\n", True),
    ("[core] ignorecase = 1\n", True), ("[core]\n\tignorecase\n", True),
    ("[core]\n\tignorecase = off\n", False), ("[core]\n\tignorecase =\n", False), ("[core]\n\tbare = false\n", False),
    ("[core]\n\tignorecase = true\n[core]\n\tignorecase = no\n", False),  # the last setting wins
])
def test_core_ignorecase_matches_gits_ignore_rules_in_either_case(make_tree, monkeypatch, tmp_path, config, folded):
    """git sets core.ignoreCase in a repository on a case-insensitive filesystem (macOS, Windows) and
    then `build/` ignores `Build/`; `.retrievalignore` and `.ignore` follow it too."""
    (tmp_path / "config" / "git").mkdir(parents=True)
    (tmp_path / "config" / "git" / "ignore").write_text("SCRATCH/\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global"))
    repo = make_tree({".git/HEAD": "x\n", ".git/config": config, ".git/info/exclude": "local.py\n",
                      ".gitignore": "build/\n*.GEN.py\n", ".retrievalignore": "Notes.md\n",
                      "Build/x.py": "", "api.gen.py": "", "LOCAL.py": "", "scratch/s.py": "", "notes.md": "",
                      "main.py": ""})
    everything = ["Build/x.py", "LOCAL.py", "api.gen.py", "main.py", "notes.md", "scratch/s.py"]
    assert paths(repo) == (["main.py"] if folded else everything)


def test_core_ignorecase_in_the_users_config_applies_and_the_repositorys_wins(make_tree, monkeypatch, tmp_path):
    (tmp_path / "global").write_text("[core]\n\tignorecase = true\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "global"))
    repo = make_tree({".git/HEAD": "x\n", ".gitignore": "build/\n", "Build/x.py": "", "main.py": ""})
    plain = make_tree({".retrievalignore": "build/\n", "Build/x.py": "", "main.py": ""}, name="plain")
    assert paths(repo) == ["main.py"]
    assert paths(plain) == ["Build/x.py", "main.py"]  # no repository: git's setting is none of its
    (repo / ".git" / "config").write_text("[core]\n\tignorecase = false\n")
    assert paths(repo) == ["Build/x.py", "main.py"]


def test_core_ignorecase_set_after_indexing_makes_the_index_stale(make_tree):
    root = make_tree({".git/HEAD": "x\n", ".git/config": "[core]\n\tbare = false\n", ".gitignore": "build/\n",
                      "Build/x.py": "x = 1\n", "main.py": "y = 1\n"})
    service.refresh(str(root), "lexical")
    assert _manifest(root)["files"]["path"] == ["Build/x.py", "main.py"]
    assert service.is_current(str(root), _manifest(root))
    (root / ".git" / "config").write_text("[core]\n\tbare = false\n\tignorecase = true\n")
    assert not service.is_current(str(root), _manifest(root))
    service.refresh(str(root), "lexical")
    assert _manifest(root)["files"]["path"] == ["main.py"]


def test_a_byte_order_mark_is_not_part_of_the_first_pattern(make_tree):
    root = make_tree({".gitignore": "\ufeffgenerated_api.py\n", "generated_api.py": "", "main.py": ""})
    assert paths(root) == ["main.py"]


def test_ignored_files_are_counted(make_tree):
    root = make_tree({".gitignore": "*.md\n", "a.md": "", "b.md": "", "c.py": ""})
    result = walk(str(root))
    assert result.skipped["ignored"] == 2


# -- pruned directories, secrets, sizes, symlinks -------------------------------------------------


@pytest.mark.parametrize(
    "directory", [".git", "node_modules", "__pycache__", ".venv", "venv", ".tox", "build", "dist", ".retrieval"]
)
def test_dependency_build_and_vcs_directories_are_never_entered(make_tree, directory):
    assert directory in DEFAULT_EXCLUDE_DIRS
    root = make_tree({f"{directory}/inner.py": "x\n", f"pkg/{directory}/inner.py": "x\n", "main.py": "x\n"})
    assert paths(root) == ["main.py"]


def test_a_default_directory_is_counted_and_an_ignore_file_can_take_it_back(make_tree):
    root = make_tree({"src/build/wheel.py": "", "vendor/v.py": "", ".git/HEAD": "x\n", "main.py": "",
                      ".retrievalignore": "!build/\n"})
    result = walk(str(root))
    assert [f.path for f in result.files] == ["main.py", "src/build/wheel.py"]
    assert result.skipped == {"excluded-dir": 1}  # vendor; .git is never news


SECRET_NAMES = [
    ".env", ".env.local", "server.pem", "id_rsa", "id_ed25519.pub", "credentials.json",
    "prod.key", "secrets.yaml", ".npmrc", "terraform.tfstate", "service-account-prod.json", "app.sqlite",
]


def test_secret_looking_files_are_skipped_and_counted(make_tree):
    files = {name: "TOKEN=hunter2\n" for name in SECRET_NAMES}
    files["config/.env.production"] = "TOKEN=x\n"
    files["main.py"] = "x = 1\n"
    root = make_tree(files)
    # Every name made eligible (most are not source files): the secret rule alone keeps them out.
    result = walk(str(root), DiscoveryOptions(include_globs=("*",)))
    assert [f.path for f in result.files] == ["main.py"]
    assert result.skipped["secret-name"] == len(SECRET_NAMES) + 1


def test_data_under_a_directory_of_credentials_is_skipped_and_never_sent(make_tree):
    """`secrets/db.yaml` was indexed (its name looked harmless) while `lexical+ctx` never sent it;
    Docker's and Terraform's credential files were indexed and shown in snippets. Code, markup docs
    and build files under such a directory are what they are (a probe found nine of them lost)."""
    from retrieval.contextual.generate import sendable

    root = make_tree({"secrets/db.yaml": "password: hunter2\n", "deploy/secrets/prod/app.json": "{}\n",
                      ".docker/config.json": '{"auths": {}}\n', "infra/prod.tfvars": 'db_password = "x"\n',
                      "infra/prod.tfvars.json": "{}\n", "infra/main.tf": "variable \"db_password\" {}\n",
                      "secrets/handler.py": "def rotate():\n    pass\n", "credentials/load.sh": "export K=1\n",
                      "secrets/notes.txt": "root: hunter2\n", "main.py": "x = 1\n",
                      # what such a directory holds besides its data: a how-to, a package's build file
                      "docs/secrets/index.md": "# Managing secrets\n", "app/secrets/pyproject.toml": "[project]\n",
                      "src/Secrets/settings.json": "{}\n", "Credentials/app.yaml": "k: v\n", "secret/db.yaml": "k: v\n"})
    result = walk(str(root))
    # (names in any case: macOS and Windows ignore it)
    assert [f.path for f in result.files] == ["app/secrets/pyproject.toml", "docs/secrets/index.md", "infra/main.tf",
                                              "main.py", "secrets/handler.py"]
    assert result.skipped == {"secret-name": 10}
    kept = {"infra/main.tf", "main.py"}
    assert {p for p in ("secrets/db.yaml", ".docker/config.json", "infra/prod.tfvars", *kept)
            if not sendable(p, 1, 10)} == kept


def test_terraform_code_and_ci_pipelines_named_after_secrets_are_indexed_and_their_values_are_not(make_tree):
    """A Terraform module named `secrets`, a `secrets.tf` of secret-manager resources and a workflow
    rotating secrets were skipped as secret-named (a probe of infrastructure questions): they are
    programs that name secrets; the values are in `*.tfvars` and the CI's own store."""
    root = make_tree({"infra/secrets.tf": 'module "secrets" {\n  source = "./modules/secrets"\n}\n',
                      "infra/modules/secrets/main.tf": 'resource "aws_secretsmanager_secret" "db" {}\n',
                      "infra/modules/secrets/prod.tfvars": 'db_password = "x"\n',
                      "infra/modules/secrets/values.yaml": "password: x\n",
                      ".github/workflows/secrets.yml": "on: schedule\njobs: {}\n",
                      ".github/actions/secrets/action.yml": "runs: {using: composite}\n",
                      "deploy/secrets.yml": "password: x\n",
                      # data put beside them is judged as anywhere (a review of the first version)
                      ".github/workflows/prod.tfvars": 'password = "x"\n', ".github/workflows/secrets.sh": "K=1\n",
                      ".github/actions/deploy/credentials.json": "{}\n", ".gitlab/secrets.yaml": "k: v\n",
                      ".circleci/credentials.yml": "k: v\n"})
    result = walk(str(root))
    assert [f.path for f in result.files] == [".github/actions/secrets/action.yml", ".github/workflows/secrets.yml",
                                              "infra/modules/secrets/main.tf", "infra/secrets.tf"]
    assert result.skipped == {"secret-name": 8}


def test_a_data_science_projects_own_files_are_found_and_quartos_outputs_are_not(make_tree):
    """A probe of notebook repositories: Snakemake rules, a Pipfile and an MLflow project were never
    indexed, and Quarto's frozen copy of a page (`_freeze/.../html.json`) ranked second for it."""
    root = make_tree({"Snakefile": "rule all:\n    input: 'a'\n", "rules/train.smk": "rule train:\n    shell: 'x'\n",
                      "Pipfile": "[packages]\n", "MLproject": "name: churn\n", "arrow.qmd": "# Arrow\n",
                      "_freeze/arrow/execute-results/html.json": '{"markdown": "# Arrow"}\n',
                      ".quarto/idx/arrow.qmd.json": "{}\n"})
    found = {f.path: f.language for f in discover_files(str(root))}
    assert found == {"Snakefile": "python", "rules/train.smk": "python", "Pipfile": "toml", "MLproject": "yaml",
                     "arrow.qmd": "markdown"}


def test_bats_tests_and_zig_package_manifests_are_found(make_tree):
    """An agent probe of bash-it and zls: the whole Bats test suite (`test/*.bats`) and the
    package manifest `build.zig.zon` were never indexed, and --include '*.bats' then indexed only them."""
    root = make_tree({"test/plugins.bats": '@test "enable a plugin" {\n  run _enable-plugin base\n}\n',
                      "build.zig.zon": '.{\n    .name = .zls,\n    .version = "0.15.0",\n}\n'})
    found = {f.path: (f.language, f.kind) for f in discover_files(str(root))}
    assert found == {"test/plugins.bats": ("bash", "code"), "build.zig.zon": ("zig", "config")}


def test_msbuild_project_files_are_found_as_xml_configuration(make_tree):
    """newtonsoft's `TargetFrameworks` was in no indexed file: `.csproj` and `Directory.Build.props`
    were skipped as files of no known type, so a C# project's build questions had no answer."""
    project = '<Project Sdk="Microsoft.NET.Sdk">\n  <PropertyGroup>\n    <TargetFrameworks>net8.0</TargetFrameworks>\n'
    root = make_tree({"Src/Demo/Demo.csproj": project + "  </PropertyGroup>\n</Project>\n",
                      "Directory.Build.props": "<Project>\n  <PropertyGroup><LangVersion>latest</LangVersion></PropertyGroup>\n</Project>\n",
                      "eng/Demo.targets": "<Project>\n  <Target Name=\"Pack\" />\n</Project>\n",
                      "Src/Demo/App.config": "<configuration>\n  <appSettings />\n</configuration>\n"})
    found = {f.path: (f.language, f.kind) for f in discover_files(str(root))}
    assert found == {"Src/Demo/Demo.csproj": ("xml", "config"), "Directory.Build.props": ("xml", "config"),
                     "eng/Demo.targets": ("xml", "config"), "Src/Demo/App.config": ("xml", "config")}


def test_skip_counts_only_count_files_that_would_otherwise_be_indexed(make_tree):
    # `.env` and `app.sqlite` are no source file: never indexed, so not news worth a count.
    root = make_tree({".env": "A=1\n", "app.sqlite": "x", "credentials.json": "{}\n", "main.py": "x = 1\n",
                      ".gitignore": "*.o\n", "a.o": "x", "gen.py": "y = 1\n", "sub/.gitignore": "gen.py\n",
                      "sub/gen.py": "y = 1\n"})
    result = walk(str(root))
    assert [f.path for f in result.files] == ["gen.py", "main.py"]
    assert result.skipped == {"secret-name": 1, "ignored": 1}


def test_a_script_named_after_secrets_is_taken_for_one():
    assert is_secret_name("secrets.sh") and is_secret_name("credentials.sql") and is_secret_name("secrets.ps1")
    assert is_secret_name("secrets.bat") and is_secret_name("credentials.cmd")  # `set API_KEY=...`, as a shell's


def test_a_template_of_a_secret_file_is_taken_for_one_and_a_page_so_named_is_not(make_tree):
    """Templates became code, and code named after secrets is indexed: an Ansible `.env.j2` with its
    passwords was searchable. A template renders the file it is named for."""
    files = {name: "DB_PASSWORD=hunter2\n" for name in (".env.j2", "secrets.yml.j2", "credentials.json.tmpl",
                                                          "deploy/app.key.tpl", "id_rsa.erb", "secrets.j2")}
    files.update({"app/views/secrets/secrets.html.erb": "<h1>Secrets</h1>\n", "main.py": "x = 1\n"})
    result = walk(str(make_tree(files)))
    assert [f.path for f in result.files] == ["app/views/secrets/secrets.html.erb", "main.py"]
    assert result.skipped["secret-name"] == 6


@pytest.mark.parametrize("name", ["secrets.py", "credentials.go", "Credentials.scala", "id_rsa_test.go",
                                  "secrets.ts", "credentials.rs"])
def test_source_files_named_after_secrets_are_code_and_indexed(make_tree, name):
    root = make_tree({name: "def token_hex(n):\n    return n\n"})
    result = walk(str(root))
    assert [f.path for f in result.files] == [name]
    assert not result.skipped


@pytest.mark.parametrize("name", SECRET_NAMES + ["ID_RSA", ".ENV"])
def test_secret_name_detection_recognises_credential_files(name):
    assert is_secret_name(name)


def test_a_name_is_judged_a_secret_as_the_path_pattern_judges_it():
    """The walk matches names (no `/` in them) against the secret globs without the `(?:.*/)?` a
    path pattern starts with: the same verdict for every name, whatever its case, accents or a
    trailing newline (a `$` matches before one)."""
    import random
    from retrieval import discover

    whole = discover._SECRET_RE.compiled()
    names = [glob.replace("*", fill) for glob in discover._SECRET_GLOBS for fill in ("", "a", "A.b", "\n", "é", "ſ")]
    names += [n.upper() for n in names] + [n + "\n" for n in names] + ["\n" + n for n in names]
    rng = random.Random(1)
    names += ["".join(rng.choice("aeds.-_\nKſ") for _ in range(rng.randint(0, 12))) for _ in range(20_000)]
    for name in names:
        assert (discover._SECRET_NAME_RE.match(name) is None) == (whole.match(name) is None), repr(name)
        assert is_secret_name(name) == _secret_by_path_pattern(name, whole), repr(name)


def _secret_by_path_pattern(name: str, whole) -> bool:
    """is_secret_name as written before the name pattern (the reference)."""
    language, kind = languages.detect(name)
    if language in languages.TEMPLATES:
        rendered = name.rpartition(".")[0]
        return bool(rendered) and _secret_by_path_pattern(rendered, whole)
    if whole.match(name) is None or languages.env_example(name):
        return False
    return kind != languages.CODE or language in languages.VALUE_SCRIPTS


def test_the_extension_of_a_name_is_what_splitext_says():
    import itertools

    names = ["".join(t) for k in range(7) for t in itertools.product("a.B", repeat=k)]
    names += [".bashrc", "..x", "a.", "...", "x.tar.gz", ".a.b", "README", "..", ".", "", "Makefile.am", ".env.j2"]
    for name in names:
        assert languages.extension(name) == os.path.splitext(name)[1], repr(name)


def test_a_walk_judges_a_name_met_in_many_directories_once(make_tree, monkeypatch):
    """A tree repeats its names (`__init__.py` in every package): what the name alone decides (its
    language, whether it names a secret) is worked out once per walk, and holds for each of them."""
    from retrieval import discover

    root = make_tree({f"pkg{i}/{name}": "x = 1\n" for i in range(5) for name in ("__init__.py", "secrets.sh", "notes")})
    judged = []
    real = discover.is_secret_name
    monkeypatch.setattr(discover, "is_secret_name", lambda name: judged.append(name) or real(name))
    result = walk(str(root))
    assert sorted(judged) == ["__init__.py", "notes", "secrets.sh"]
    assert [f.path for f in result.files] == [f"pkg{i}/__init__.py" for i in range(5)]
    assert result.skipped == {"secret-name": 5}


def test_a_dotenv_file_s_committed_example_is_indexed_and_the_file_itself_is_not(make_tree):
    """`.env.example` documents a project's settings with placeholders; an agent asks where
    `DATABASE_URL` is set, and it was skipped as a secret name."""
    names = [".env.example", ".env.local.sample", ".env.dist", "example.env", ".env.template"]
    root = make_tree({**{name: "DATABASE_URL=postgres://user:password@localhost/app\n" for name in names},
                      ".env": "DATABASE_URL=postgres://admin:hunter2@db/app\n", ".env.local": "X=1\n"})
    result = walk(str(root))
    assert sorted(f.path for f in result.files) == sorted(names)  # not `.env`, not `.env.local`
    assert {languages.detect(name) for name in names} == {("ini", "config")}
    assert all(is_secret_name(name) for name in (".env", ".env.local", ".env.production", ".env.example.bak"))


@pytest.mark.parametrize("name", ["environment.py", "env.py", "monkey.py", "keyboard.py", "credential_helpers.py",
                                  "secret_sauce.md", "id.py", "database.py"])
def test_secret_name_detection_does_not_flag_ordinary_source_files(name):
    assert not is_secret_name(name)


def test_files_over_the_per_file_size_cap_are_skipped_and_counted(make_tree):
    root = make_tree({"exact.py": "x" * 100, "over.py": "x" * 101, "small.py": "x"})
    result = walk(str(root), DiscoveryOptions(max_bytes=100))
    assert [f.path for f in result.files] == ["exact.py", "small.py"]
    assert result.skipped["too-large"] == 1


def test_symlinks_to_files_and_directories_and_symlink_loops_are_not_followed(make_tree):
    root = make_tree({"real/a.py": "a\n", "outside_target.py": "o\n"})
    os.symlink(root / "real" / "a.py", root / "link_to_file.py")
    os.symlink(root / "real", root / "link_to_dir")
    os.symlink("loop", root / "loop")  # points at itself
    os.symlink("..", root / "real" / "up")  # a directory cycle
    result = walk(str(root))
    assert [f.path for f in result.files] == ["outside_target.py", "real/a.py"]
    assert result.skipped["symlink"] == 4


def test_a_fifo_with_a_source_name_is_skipped_and_counted_never_opened(make_tree):
    root = make_tree({"a.py": "a\n"})
    os.mkfifo(root / "pipe.py")  # opening it for reading would block until a writer came
    result = walk(str(root))
    assert [f.path for f in result.files] == ["a.py"]
    assert result.skipped["special-file"] == 1


def test_output_is_sorted_by_relative_path_and_deterministic(make_tree):
    names = ["zeta.py", "a/b.py", "a.py", "A.py", "m/z/y.py", "m/a.py", "b-c.py", "b_c.py"]
    root = make_tree({name: "x\n" for name in names})
    first = paths(root)
    assert first == sorted(names)
    assert paths(root) == first


def test_include_globs_restrict_discovery_to_matching_files(make_tree):
    root = make_tree({"src/a.py": "", "src/deep/b.py": "", "src/c.md": "", "tests/t.py": "", "notes.xyz": ""})
    assert paths(root, include_globs=["src/**/*.py"]) == ["src/a.py", "src/deep/b.py"]
    # An include glob can select a file whose extension is not indexed by default.
    assert paths(root, include_globs=["*.xyz"]) == ["notes.xyz"]


@pytest.mark.parametrize("glob", ["src/", "src"])
def test_an_include_glob_naming_a_directory_selects_the_files_below_it(make_tree, glob):
    root = make_tree({"src/a.py": "", "src/deep/b.py": "", "tests/t.py": ""})
    assert paths(root, include_globs=[glob]) == ["src/a.py", "src/deep/b.py"]


def test_include_and_exclude_globs_match_a_name_in_either_unicode_normal_form(make_tree):
    """`é` typed is one character (NFC); macOS's HFS+ stored it as `e` and a combining accent (NFD),
    and a checkout from there keeps that: the glob typed matched no such file."""
    nfd = "re\u0301sume\u0301"
    root = make_tree({f"{nfd}/cafe\u0301.py": "", "other.py": ""})
    assert paths(root, include_globs=["r\u00e9sum\u00e9/caf\u00e9.py"]) == [f"{nfd}/cafe\u0301.py"]
    assert paths(root, exclude_globs=["r\u00e9sum\u00e9/"]) == ["other.py"]
    nfc = make_tree({"caf\u00e9.py": "", "other.py": ""})
    assert paths(nfc, include_globs=["cafe\u0301.py"]) == ["caf\u00e9.py"]


def test_exclude_globs_drop_files_and_prune_directories(make_tree):
    root = make_tree({"src/a.py": "", "src/c.md": "", "tests/t.py": "", "tests/deep/u.py": ""})
    assert paths(root, exclude_globs=["tests/"]) == ["src/a.py", "src/c.md"]
    assert paths(root, exclude_globs=["*.md"]) == ["src/a.py", "tests/deep/u.py", "tests/t.py"]


def test_files_with_unknown_extensions_are_not_discovered_by_default(make_tree):
    root = make_tree({"image.png": "x", "archive.tar": "x", "main.py": "x"})
    assert paths(root) == ["main.py"]


def test_an_extensionless_script_is_discovered_as_the_language_its_first_line_runs(make_tree):
    """`bin/deploy` and git-hook-style scripts were never indexed: their name says nothing, their
    `#!` line says everything. Other extension-less files (data, a dotfile) stay out, uncounted."""
    root = make_tree({
        "bin/deploy": "#!/usr/bin/env python3\nimport sys\n",
        "bin/setup": "#!/bin/bash -e\nmake all\n",
        "script/serve": "#!/usr/bin/env -S deno run --allow-net\nserve()\n",
        "hooks/pre-commit": "#!/usr/bin/perl5.36\nprint 1;\n",
        "fixtures/payload": "not a script\n",
        "tools/awkward": "#!/usr/bin/awk -f\n{ print }\n",  # a program no language here runs
        ".profile": "#!/bin/sh\nexport X=1\n",
        "secrets": "#!/bin/sh\nexport TOKEN=x\n",
        "main.py": "x = 1\n",
    })
    os.mkfifo(root / "bin" / "pipe")  # opened for its first line, it would block every walk
    result = walk(str(root))
    found = {f.path: (f.language, f.kind) for f in result.files}
    assert found == {"bin/deploy": ("python", "code"), "bin/setup": ("bash", "code"),
                     "script/serve": ("typescript", "code"), "hooks/pre-commit": ("perl", "code"),
                     "main.py": ("python", "code")}
    assert not +result.skipped  # nothing counted: none of the others would have been indexed
    # A caller that names the extensions it wants gets only those.
    assert paths(root, extensions=[".py"]) == ["main.py"]
    # Files an include pattern takes are all indexed; a script among them is still its language.
    chosen = walk(str(root), DiscoveryOptions(include_globs=("bin/**", "fixtures/**"))).files
    assert {f.path: f.language for f in chosen} == {"bin/deploy": "python", "bin/setup": "bash",
                                                    "fixtures/payload": "text"}


@pytest.mark.parametrize("line, language", [
    ("#!/usr/bin/env python3", "python"), ("#!/usr/bin/python3.11 -u", "python"), ("#! /bin/sh", "bash"),
    ("#!/usr/bin/env FOO=1 ruby -w", "ruby"), ("#!/usr/bin/env node", "javascript"),
    ("#!/usr/bin/env Rscript", "r"), ("#!/usr/bin/awk -f", ""), ("#!/usr/bin/env", ""), ("#!", ""),
    ("import os", ""),
])
def test_a_scripts_language_is_read_from_the_program_its_first_line_names(line, language):
    assert languages.script_language(line)[0] == language


def test_a_first_line_written_into_an_extensionless_file_is_seen_by_the_next_query(make_tree):
    """Created empty, then given its `#!` line: no directory changes, so the file itself is watched."""
    root = make_tree({"main.py": "x = 1\n", "bin/tool": "", "tests/data/case1": "GET / HTTP/1.1\n"})
    service.refresh(str(root))
    assert "bin/tool" not in [f.path for f in walk(str(root)).files]
    assert service.is_current(str(root), _manifest(root))
    # Extension-less files with contents (test data) are not watched: each would cost every query a stat.
    assert "bin/tool" in _manifest(root)["watch"] and "tests/data/case1" not in _manifest(root)["watch"]
    (root / "bin" / "tool").write_text("#!/bin/sh\nfrobnicate_widgets() { echo; }\n")
    assert not service.is_current(str(root), _manifest(root))

    assert [h.source_path for h in service.search(str(root), "frobnicate_widgets").hits] == ["bin/tool"]


def test_an_index_from_before_scripts_were_discovered_walks_again_and_finds_them(make_tree, monkeypatch):
    """Its stats alone said it was current: the script was never looked at. The first query after
    the upgrade walks, indexes the script, and the index is current again afterwards."""
    from retrieval import discover

    root = make_tree({"main.py": "x = 1\n", "bin/rotate-keys": "#!/usr/bin/env ruby\ndef rotate_signing_keys; end\n"})
    with monkeypatch.context() as old:  # the version before: no extension, no file
        old.setattr(discover, "_may_be_script", lambda name: False)
        service.refresh(str(root))
    path = root / ".retrieval" / "lexical" / "manifest.json"
    manifest = _manifest(root)
    del manifest["walker"]  # which that version did not write
    path.write_text(json.dumps(manifest))
    service._OPEN.clear()
    assert not service.is_current(str(root), manifest)
    assert [h.source_path for h in service.search(str(root), "rotate_signing_keys").hits] == ["bin/rotate-keys"]
    assert service.is_current(str(root), _manifest(root))


def test_an_extension_written_in_capitals_is_discovered_as_its_language_is_detected(make_tree):
    """`App.TSX` was detected as TypeScript, yet `Script.PY` was never discovered, and not counted."""
    root = make_tree({"Script.PY": "x = 1\n", "App.TSX": "x\n", "analysis.R": "x <- 1\n", "main.py": "x\n",
                      "PHOTO.PNG": "x"})
    found = {f.path: f.language for f in discover_files(str(root))}
    assert found == {"App.TSX": "typescript", "Script.PY": "python", "analysis.R": "r", "main.py": "python"}


def test_fortran_sources_and_build_files_of_known_languages_are_discovered(make_tree):
    """Fortran, which the grammar pack parses, and build files of languages known here (an included
    makefile, Bazel's module file, a second Dockerfile) were never indexed, nor counted as skipped.
    (Terraform's variable files are secret-looking: Terraform's own ignore template leaves them out
    as likely to hold credentials.)"""
    root = make_tree({"src/solver.f90": "module solver\nend module solver\n", "legacy/KERNEL.F": "      END\n",
                      "mk/common.mk": "CFLAGS += -O2\n", "env/prod.tfvars": "region = \"eu-west-1\"\n",
                      "MODULE.bazel": "module(name = \"demo\")\n", "docker/Dockerfile.dev": "FROM python:3.11\n",
                      "docker/api.dockerfile": "FROM node:20\n", "notes.dev": "x\n", "main.py": "x\n"})
    found = {f.path: (f.language, f.kind) for f in discover_files(str(root))}
    assert found == {"src/solver.f90": ("fortran", "code"), "legacy/KERNEL.F": ("fortran", "code"),
                     "mk/common.mk": ("make", "config"),
                     "MODULE.bazel": ("starlark", "config"), "docker/Dockerfile.dev": ("dockerfile", "config"),
                     "docker/api.dockerfile": ("dockerfile", "config"), "main.py": ("python", "code")}


def test_an_index_from_before_view_templates_were_discovered_walks_again_and_finds_them(make_tree, monkeypatch):
    """Its stats alone said it was current; the first query after the upgrade walks again (walker 8)."""
    root = make_tree({"app/models/user.rb": "class User\nend\n",
                      "app/views/user_mailer/password_reset.html.erb": "<p>Follow this link to reset your password</p>\n"})
    with monkeypatch.context() as old:  # the version before: no `.erb`
        old.setattr(languages, "DEFAULT_EXTENSIONS", languages.DEFAULT_EXTENSIONS - {".erb"})
        service.refresh(str(root))
    path = root / ".retrieval" / "lexical" / "manifest.json"
    manifest = _manifest(root)
    assert "app/views/user_mailer/password_reset.html.erb" not in manifest["files"]["path"]
    manifest["walker"] = 7
    path.write_text(json.dumps(manifest))
    service._OPEN.clear()
    assert not service.is_current(str(root), manifest)
    hits = service.search(str(root), "reset your password").hits
    assert [h.source_path for h in hits] == ["app/views/user_mailer/password_reset.html.erb"]
    assert service.is_current(str(root), _manifest(root))


def test_an_index_holding_a_template_of_a_secret_file_walks_again_and_drops_it(make_tree, monkeypatch):
    """Walker 8 indexed `.env.j2`; its stats alone said the index was current after the upgrade."""
    from retrieval import discover

    root = make_tree({"app.py": "def connect():\n    return db\n", "deploy/.env.j2": "DB_PASSWORD=hunter2\n"})
    with monkeypatch.context() as old:  # the walker before: a template named for secrets was code
        old.setattr(discover, "is_secret_name", lambda name: False)
        service.refresh(str(root))
    path = root / ".retrieval" / "lexical" / "manifest.json"
    manifest = _manifest(root)
    assert "deploy/.env.j2" in manifest["files"]["path"]
    manifest["walker"] = 8
    path.write_text(json.dumps(manifest))
    service._OPEN.clear()
    assert service.search(str(root), "hunter2").hits == []
    assert "deploy/.env.j2" not in _manifest(root)["files"]["path"]


def test_view_templates_are_discovered_as_code_and_a_generators_code_skeleton_is_not(make_tree):
    """A Rails view, a Phoenix template, a Jinja page, a Handlebars partial and a Go template are the
    markup and code of an app's pages and mails, and were never indexed. A Thor `.tt` file is a copy
    of code a generator writes out (`railtie.rb.tt`): indexed, it outranked the code it copies."""
    root = make_tree({"app/views/user_mailer/password_reset.html.erb": "<p><%= link_to 'Reset', url %></p>\n",
                      "lib/app_web/components/layouts/root.html.heex": "<main><%= @inner_content %></main>\n",
                      "templates/base.html.j2": "{% block content %}{% endblock %}\n",
                      "views/partials/nav.hbs": "<nav>{{#each links}}{{title}}{{/each}}</nav>\n",
                      "web/index.tmpl": "{{define \"index\"}}{{.Title}}{{end}}\n",
                      "templates/plugin/railtie.rb.tt": "class Railtie < ::Rails::Railtie\nend\n"})
    found = {f.path: (f.language, f.kind) for f in discover_files(str(root))}
    assert found == {"app/views/user_mailer/password_reset.html.erb": ("erb", "code"),
                     "lib/app_web/components/layouts/root.html.heex": ("eex", "code"),
                     "templates/base.html.j2": ("jinja", "code"),
                     "views/partials/nav.hbs": ("handlebars", "code"),
                     "web/index.tmpl": ("template", "code")}


def test_infrastructure_files_a_platform_engineer_asks_about_are_indexed_and_config_templates_are_config(make_tree):
    """A probe of CI and infrastructure questions: "where is the Go version pinned" had its answer
    in `.tool-versions`, never indexed, nor were a Tiltfile, a Caddyfile or a systemd unit; and
    `--kind config` missed `nginx.conf.j2` (a template, so code)."""
    root = make_tree({".tool-versions": "golang 1.22.1\n", ".nvmrc": "20\n", ".python-version": "3.12\n",
                      "Tiltfile": "docker_build('api', '.')\n", "Caddyfile": "example.com {\n  reverse_proxy api:8000\n}\n",
                      "deploy/api.service": "[Service]\nExecStart=/usr/bin/api\n",
                      "roles/nginx/templates/nginx.conf.j2": "server { listen {{ port }}; }\n",
                      "charts/app/values.yaml.tmpl": "replicas: {{ .Replicas }}\n",
                      "templates/page.html.j2": "<p>{{ x }}</p>\n", "web/user.service.ts": "export class UserService {}\n"})
    found = {f.path: (f.language, f.kind) for f in discover_files(str(root))}
    assert found == {".tool-versions": ("text", "config"), ".nvmrc": ("text", "config"),
                     ".python-version": ("text", "config"), "Tiltfile": ("starlark", "config"),
                     "Caddyfile": ("text", "config"), "deploy/api.service": ("ini", "config"),
                     "roles/nginx/templates/nginx.conf.j2": ("jinja", "config"),
                     "charts/app/values.yaml.tmpl": ("template", "config"),
                     "templates/page.html.j2": ("jinja", "code"), "web/user.service.ts": ("typescript", "code")}


# -- language and kind --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, expected",
    [
        ("main.py", ("python", "code")),
        ("App.TSX", ("typescript", "code")),
        ("lib.rs", ("rust", "code")),
        ("guide.md", ("markdown", "docs")),
        ("notes.txt", ("text", "docs")),
        ("pyproject.toml", ("toml", "config")),
        ("values.yml", ("yaml", "config")),
        ("Dockerfile", ("dockerfile", "config")),
        ("Makefile", ("make", "config")),
        ("CMakeLists.txt", ("cmake", "config")),
        ("BUILD.bazel", ("starlark", "config")),
        ("Dockerfile.prod", ("dockerfile", "config")),
        ("worker.Dockerfile", ("dockerfile", "config")),
        ("Dockerfile.md", ("markdown", "docs")),  # its extension says what it is
        ("rules.mk", ("make", "config")),
        ("prod.tfvars", ("hcl", "config")),
        ("solver.f90", ("fortran", "code")),
        ("rules.bzl", ("starlark", "code")),  # where Bazel's rules are defined
        ("show.html.erb", ("erb", "code")),
        ("form.html.heex", ("eex", "code")),
        ("page.twig", ("twig", "code")),
        ("Index.cshtml", ("razor", "code")),
        ("layout.pug", ("pug", "code")),
        ("saxpy.cu", ("cuda", "code")),
        ("shade.frag", ("glsl", "code")),
        ("counter.sv", ("verilog", "code")),
        ("memcpy.S", ("asm", "code")),
        ("init.el", ("elisp", "code")),
        ("replication.tcl", ("tcl", "code")),
        ("build.bat", ("batch", "code")),
        ("schema.prisma", ("prisma", "code")),
        ("config.ru", ("ruby", "code")),
        ("index.json.jbuilder", ("ruby", "code")),
        ("Guardfile", ("ruby", "config")),
        ("meson.build", ("meson", "config")),
        ("analysis.Rmd", ("markdown", "docs")),
        ("unknown.xyz", ("", "")),
    ],
)
def test_language_and_kind_are_detected_from_the_file_name(name, expected):
    """Beyond the mainstream: a CUDA kernel, redis's Tcl test suite, a Rails JSON view or a Windows
    build script was never indexed, nor counted as skipped."""
    assert languages.detect(name) == expected
    assert languages.detect(f"some/dir/{name}") == expected


def test_discovered_files_carry_language_kind_size_and_paths(make_tree):
    root = make_tree({"src/main.py": "print(1)\n", "docs/guide.md": "# g\n", "Dockerfile": "FROM x\n",
                      "odd.xyz": "?\n"})
    found = {f.path: f for f in walk(str(root), DiscoveryOptions(include_globs=("*",))).files}
    assert (found["src/main.py"].language, found["src/main.py"].kind) == ("python", "code")
    assert (found["docs/guide.md"].language, found["docs/guide.md"].kind) == ("markdown", "docs")
    assert (found["Dockerfile"].language, found["Dockerfile"].kind) == ("dockerfile", "config")
    # A file selected by an include glob but of unknown type is treated as text.
    assert (found["odd.xyz"].language, found["odd.xyz"].kind) == ("text", "docs")
    assert found["src/main.py"].size == len("print(1)\n")
    assert found["src/main.py"].abspath == str(root / "src" / "main.py")


# -- total size and bad roots -------------------------------------------------------------------


def test_exceeding_the_total_size_cap_raises_a_discovery_error_that_says_what_to_do(make_tree):
    root = make_tree({"a.py": "x" * 40, "b.py": "x" * 40})
    with pytest.raises(DiscoveryError) as info:
        walk(str(root), DiscoveryOptions(max_total_bytes=50))
    message = str(info.value)
    assert "50 bytes" in message
    assert str(root) in message
    assert "RETRIEVAL_MAX_TOTAL_BYTES" in message
    # Exactly at the cap is fine.
    assert len(walk(str(root), DiscoveryOptions(max_total_bytes=80)).files) == 2


def test_the_total_size_cap_can_be_set_from_the_environment_for_indexing(make_tree, monkeypatch):
    root = make_tree({"a.py": "x" * 40, "b.py": "x" * 40})
    monkeypatch.setenv("RETRIEVAL_MAX_TOTAL_BYTES", "50")
    with pytest.raises(DiscoveryError, match="50 bytes"):
        service.refresh(str(root))


def test_a_missing_root_or_a_file_as_root_raises_discovery_error(tmp_path):
    with pytest.raises(DiscoveryError, match="does not exist"):
        walk(str(tmp_path / "nope"))
    (tmp_path / "file.py").write_text("x")
    with pytest.raises(DiscoveryError, match="not a directory"):
        walk(str(tmp_path / "file.py"))


# -- the store is never indexed -----------------------------------------------------------------


def test_the_default_store_directory_is_never_discovered(sample_repo):
    before = paths(sample_repo)
    service.refresh(str(sample_repo))
    assert (sample_repo / ".retrieval").is_dir()
    assert paths(sample_repo) == before
    assert not any(".retrieval" in p for p in paths(sample_repo, include_globs=["*"]))


def test_a_store_moved_inside_the_root_with_the_environment_variable_is_never_indexed(sample_repo, monkeypatch):
    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(sample_repo / "idx"))
    before = paths(sample_repo)
    first = service.refresh(str(sample_repo))
    assert first.status == "indexed"
    store_files = [p for p in os.listdir(sample_repo / "idx")]
    assert store_files, "the store should live under the moved index directory"
    assert not (sample_repo / ".retrieval").exists()
    assert paths(sample_repo) == before
    assert not any(p.startswith("idx/") for p in paths(sample_repo, include_globs=["*"]))
    # The store's own files never make the tree look changed, and never answer a query, even
    # without the catch-all .gitignore the store writes for git's benefit.
    from retrieval.store import layout

    os.unlink(os.path.join(layout.store_dir(str(sample_repo)), ".gitignore"))
    assert service.status(str(sample_repo))[0]["state"] == "ready"
    assert service.refresh(str(sample_repo)).status == "up to date"
    assert service.status(str(sample_repo))[0]["state"] == "ready"
    hits = service.search(str(sample_repo), "tool_version n_docs manifest schema").hits
    assert not any(h.source_path.startswith("idx/") for h in hits)


def test_an_ignore_file_that_is_a_fifo_is_skipped_and_counted_not_waited_on(make_tree):
    root = make_tree({"a.py": "x = 1\n", "sub/b.py": "y = 2\n"})
    os.mkfifo(root / "sub" / ".gitignore")  # opening it for reading would block until a writer came
    os.mkfifo(root / ".retrievalignore")
    result = walk(str(root))
    assert [f.path for f in result.files] == ["a.py", "sub/b.py"]
    assert result.skipped == {"special-file": 2}


def test_an_ignore_file_over_the_read_limit_drops_the_line_it_cuts_not_reads_half_of_it(make_tree):
    padding = "#" + "x" * (1_000_000 - len("api.py") - 2) + "\n"  # the limit falls after `api.py`
    root = make_tree({".gitignore": padding + "api.py.orig\n", "api.py": "x = 1\n"})
    assert paths(root) == ["api.py"]


def test_a_gitattributes_that_is_a_fifo_is_skipped_and_counted_not_waited_on(make_tree):
    root = make_tree({"a.go": "package a\n"})
    os.mkfifo(root / ".gitattributes")
    result = walk(str(root))
    assert [(f.path, f.marked) for f in result.files] == [("a.go", None)]
    assert result.skipped == {"special-file": 1}


def test_a_fifo_named_git_is_not_waited_on(make_tree):
    root = make_tree({"a.py": "x = 1\n", "sub/b.py": "y = 2\n"})
    os.mkfifo(root / "sub" / ".git")  # taken for a worktree's `.git` file, it was read and hung
    assert [f.path for f in walk(str(root / "sub")).files] == ["b.py"]
    assert [f.path for f in walk(str(root)).files] == ["a.py", "sub/b.py"]


def test_an_ignore_file_that_is_a_symbolic_link_is_not_followed(make_tree):
    root = make_tree({"a.py": "x = 1\n", "elsewhere/rules": "*.py\n"})
    os.symlink(root / "elsewhere" / "rules", root / ".gitignore")
    result = walk(str(root))
    assert [f.path for f in result.files] == ["a.py"]  # git (2.32 on) refuses such a .gitignore too
    assert result.skipped == {"symlink": 1}


def test_a_wildcard_negation_does_not_take_back_the_default_directories(make_tree):
    """The whitelist idiom `*`, `!*/`, `!*.py` walked .git, node_modules and .venv."""
    root = make_tree({".gitignore": "*\n!*/\n!*.py\n", "src/app.py": "", "node_modules/pkg/x.py": "",
                      ".venv/lib/y.py": "", ".git/hooks/h.py": "", "vendor/v.py": ""})
    result = walk(str(root))
    assert [f.path for f in result.files] == ["src/app.py"]
    assert ".git/hooks/" not in result.watch and ".git/" not in result.watch  # never walked
    named = make_tree({".retrievalignore": "!vendor/\n!.git/\n", "vendor/v.py": "", ".git/hooks/h.py": ""}, name="n")
    assert [f.path for f in walk(str(named)).files] == ["vendor/v.py"]  # named: back; version control: never


def test_a_walk_begun_in_the_clock_tick_a_directory_changed_in_is_not_taken_for_the_tree(make_tree):
    """A directory changed again in that tick, after its listing, keeps its stat (see freshness):
    such a walk's stats prove nothing, and as_walked() sends the caller to walk again."""
    import time

    from retrieval.discover import as_walked, walk_record

    root = make_tree({"src/app.py": "x = 1\n", "README.md": "# demo\n"})
    found = walk(str(root))
    files = ([f.path for f in found.files], [f.marked for f in found.files])
    watch = {path: list(value) for path, value in found.watch.items()}
    in_its_tick = walk_record(found, os.stat(root / "src").st_mtime_ns)
    assert not in_its_tick["settled"] and as_walked(str(root), None, in_its_tick, watch, files) is None
    time.sleep(0.06)
    later = walk_record(walk(str(root)), time.time_ns())
    assert later["settled"] and as_walked(str(root), None, later, watch, files).files == found.files
