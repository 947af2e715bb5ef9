"""Gitignore semantics: one pattern at a time, then layered ignore files, then git itself as oracle."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from retrieval import ignore
from retrieval.discover import DiscoveryOptions, walk

from conftest import dedent


def ignored_by(patterns: str, relpath: str, is_dir: bool = False) -> bool:
    stack = ignore.IgnoreStack().push("", ignore.parse_ignore_text(patterns))
    return stack.ignored(relpath, is_dir)


def test_a_pattern_without_a_slash_matches_at_any_depth():
    assert ignored_by("*.log.py", "a.log.py")
    assert ignored_by("*.log.py", "deep/er/a.log.py")
    assert not ignored_by("*.log.py", "a.py")


def test_a_leading_slash_anchors_a_pattern_to_the_ignore_files_directory():
    assert ignored_by("/top.py", "top.py")
    assert not ignored_by("/top.py", "sub/top.py")


def test_a_slash_in_the_middle_also_anchors_the_pattern():
    assert ignored_by("sub/mid.py", "sub/mid.py")
    assert not ignored_by("sub/mid.py", "other/sub/mid.py")


def test_a_single_star_never_crosses_a_directory_separator():
    assert ignored_by("sub/*.py", "sub/a.py")
    assert not ignored_by("sub/*.py", "sub/inner/a.py")


def test_double_star_spans_zero_or_more_directories():
    assert ignored_by("a/**/b.py", "a/b.py")
    assert ignored_by("a/**/b.py", "a/x/b.py")
    assert ignored_by("a/**/b.py", "a/x/y/b.py")
    assert not ignored_by("a/**/b.py", "c/a/x/b.py")
    assert ignored_by("**/gen/x.py", "gen/x.py")
    assert ignored_by("**/gen/x.py", "p/q/gen/x.py")
    assert ignored_by("logs/**", "logs/a/b.py")
    assert not ignored_by("logs/**", "mylogs/a.py")


def test_a_trailing_slash_matches_directories_only():
    assert ignored_by("README/", "README", is_dir=True)
    assert not ignored_by("README/", "README", is_dir=False)
    assert ignored_by("README/", "pkg/README", is_dir=True)


def test_trailing_spaces_backslashes_and_slashes_are_read_as_git_reads_them():
    # An escaped backslash escapes no space: `a\\ ` is `a\\`, the file `a\`.
    assert ignored_by("a\\\\ \n", "a\\") and not ignored_by("a\\\\ \n", "a\\ ")
    assert ignored_by("b\\ \n", "b ") and ignored_by("c\\\\\\ \n", "c\\ ")
    # A lone trailing backslash escapes nothing, and `d//` keeps a `/` after git drops one: both
    # match nothing in git.
    assert not ignored_by("foo\\\n", "foo\\") and not ignored_by("foo\\\n", "foo")
    assert not ignored_by("d//\n", "d", is_dir=True) and not ignored_by("d//\n", "d/a.py")
    assert ignored_by("d/\n", "d", is_dir=True)


def test_the_last_matching_pattern_wins_and_bang_reincludes():
    assert ignored_by("*.py\n", "drop.py")
    assert not ignored_by("*.py\n!keep.py\n", "keep.py")
    assert ignored_by("*.py\n!keep.py\n", "drop.py")
    assert ignored_by("!keep.py\n*.py\n", "keep.py")


def test_comments_blank_lines_and_escapes_are_handled():
    assert ignore.compile_rule("# a comment") is None
    assert ignore.compile_rule("   ") is None
    assert ignored_by(r"\#lead.py", "#lead.py")
    assert ignored_by(r"\!bang.py", "!bang.py")
    assert not ignored_by(r"\!bang.py", "bang.py")


def test_trailing_spaces_are_ignored_unless_escaped():
    assert ignored_by("trail.py   ", "trail.py")
    assert ignored_by("e\\ ", "e ")
    assert not ignored_by("e\\ ", "e")


def test_character_classes_and_question_marks():
    assert ignored_by("q?.py", "q1.py")
    assert not ignored_by("q?.py", "q22.py")
    assert not ignored_by("q?x.py", "q/x.py")  # a `?` never matches a directory separator
    assert ignored_by("[ab]bc.py", "abc.py")
    assert not ignored_by("[ab]bc.py", "cbc.py")
    assert ignored_by("m[!a].py", "mb.py")
    assert not ignored_by("m[!a].py", "ma.py")


def test_deeper_ignore_layers_override_shallower_ones_only_below_their_directory():
    stack = ignore.IgnoreStack().push("", ignore.parse_ignore_text("*.md\n"))
    stack = stack.push("sub/", ignore.parse_ignore_text("!notes.md\n"))
    assert not stack.ignored("sub/notes.md", False)
    assert not stack.ignored("sub/deep/notes.md", False)
    assert stack.ignored("notes.md", False)
    assert stack.ignored("other/notes.md", False)


def test_matches_any_is_false_without_rules_and_true_when_the_last_match_is_positive():
    assert ignore.matches_any(ignore.compile_globs([]), "a.py") is False
    rules = ignore.compile_globs(["src/**/*.py", "!src/skip.py"])
    assert ignore.matches_any(rules, "src/a/b.py")
    assert not ignore.matches_any(rules, "src/skip.py")
    assert not ignore.matches_any(rules, "lib/a.py")


def test_a_user_glob_starting_with_dot_slash_is_anchored_at_the_root():
    rules = ignore.compile_globs(["./src/**", "!./src/skip.py", "././docs/*.md"])
    assert ignore.matches_any(rules, "src/a/b.py") and ignore.matches_any(rules, "docs/x.md")
    assert not ignore.matches_any(rules, "src/skip.py")
    assert not ignore.matches_any(rules, "lib/src/a.py")  # the root's src, not any src
    assert ignore.matches_any(ignore.compile_globs(["./.github/**"]), ".github/workflows/ci.yml")


def test_a_user_glob_also_names_the_path_it_spells_literally():
    # Next.js routes live in directories named `[slug]`: as a glob that is a one-letter class.
    rules = ignore.compile_globs(["app/[slug]/page.tsx", "./data/a\\b.txt", "x/[z-a].md", "[unclosed"])
    assert ignore.matches_any(rules, "app/[slug]/page.tsx")
    assert ignore.matches_any(rules, "app/s/page.tsx")  # still a glob
    assert ignore.matches_any(rules, "data/a\\b.txt") and ignore.matches_any(rules, "data/ab.txt")
    assert ignore.matches_any(rules, "x/[z-a].md") and ignore.matches_any(rules, "[unclosed")
    assert not ignore.matches_any(rules, "app/[other]/page.tsx")
    # Ignore files keep git's rules: there a bracket is a class only.
    assert ignore.parse_ignore_text("app/[slug]/page.tsx\n")[0].regex.match("app/[slug]/page.tsx") is None


# -- git as the oracle ---------------------------------------------------------------------------

ORACLE_FILES = [
    "top.py", "keep.py", "other.py", "sub/top.py", "sub/mid.py", "sub/deep/mid.py",
    "a/b.py", "a/x/b.py", "a/x/y/b.py", "gen/g.py", "sub/gen/z.py", "README", "pkg/README/x.py",
    "vendored/keep.py", "vendored/drop.py", "notes.md", "sub/notes.md", "sub/deep/notes.md",
    "lib/sub/mid.py", "x.txt", "trail.py", "#lead.py", "!bang.py", "q1.py", "q22.py", "abc.py",
    "one/x.py", "two/three/x.py", "docs/a/b/c.md", "docs/c.md", "deep/foo/bar/z.py",
    "data/keep/k.py", "data/other/o.py", "logs/l.py", "mylogs/l.py", "e s.py", "es.py",
    "cfg/app.toml", "cfg/local/app.toml", "m1.py", "ma.py", "mb.py",
]

ROOT_GITIGNORE = dedent(
    r"""
    /top.py
    *.py
    !keep.py
    !sub/**
    sub/mid.py
    a/**/b.py
    **/gen/
    README/
    /vendored/
    !vendored/keep.py
    *.md
    \#lead.py
    \!bang.py
    q?.py
    !q22.py
    [ab]bc.py
    trail.py   
    !*/x.py
    */x.py
    !docs/**
    docs/**/*.md
    **/foo/bar
    !data/**
    data/*
    !data/keep/
    logs
    !e\ s.py
    !es.py
    e\ s.py
    cfg/**/
    !m?.py
    m[!a].py
    """
)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_discovery_keeps_exactly_the_files_git_would_track(tmp_path):
    root = tmp_path / "oracle"
    root.mkdir()
    for rel in ORACLE_FILES:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")
    (root / ".gitignore").write_text(ROOT_GITIGNORE)
    (root / "sub" / ".gitignore").write_text("!notes.md\n")
    (root / "sub" / "deep" / ".gitignore").write_text("*.md\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=root, check=True, capture_output=True, text=True
    ).stdout.splitlines()
    expected = sorted(p for p in listed if not p.endswith(".gitignore"))
    found = [f.path for f in walk(str(root), DiscoveryOptions(include_globs=("*",))).files]
    assert found == expected
    # The oracle must be discriminating: some files are kept and many are not.
    assert 5 <= len(expected) <= len(ORACLE_FILES) - 15


ODD_FILES = [
    "src/deep.py", "src/a/deep.py", "foobar.py", "foo/bar.py", "fooxbar.py", "v1.py", "va.py",
    "foo[.py", "a/b.py", "ab.py", "w1.py", "wx.py", "sub/keep.py", "sub/anch.py", "sub/deeper/anch.py",
    "sub/top_x.py", "sub/top_kept.py",
]

# Runs of stars that are no whole path component, POSIX classes, a bracket that never closes and a
# `/` inside brackets; the last lines reach into sub/, indexed below on its own as the root.
ODD_GITIGNORE = "\ufeff" + dedent(
    r"""
    src/**.py
    foo**bar.py
    v[[:digit:]].py
    foo[.py
    a[/]b.py
    w[[:alpha:]].py
    /sub/anch.py
    top_*.py
    """
)


def _git_tree(root, files, gitignore: str):
    """A fresh repository (nothing committed) of these files and this .gitignore: git's own answer
    is `git ls-files -co --exclude-standard` there."""
    for rel in files:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")
    (root / ".gitignore").write_text(gitignore, encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.parametrize("below", ["", "sub"])
def test_discovery_agrees_with_git_on_odd_globs_and_from_a_directory_below_the_top(tmp_path, below):
    root = _git_tree(tmp_path / "oracle", ODD_FILES, ODD_GITIGNORE)
    (root / "sub" / ".ignore").write_text("!top_kept.py\n")  # git does not read .ignore: drop it below
    start = root / below if below else root
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=start, check=True, capture_output=True, text=True
    ).stdout.splitlines()
    expected = sorted(p for p in listed if not p.endswith((".gitignore", ".ignore")))
    found = [f.path for f in walk(str(start), DiscoveryOptions(include_globs=("*",))).files]
    kept = "top_kept.py" if below else "sub/top_kept.py"
    assert kept in found  # the .ignore file's negation, which git does not read
    found.remove(kept)
    assert found == expected
    # Discriminating: git keeps some and drops many (8 from the top, 3 of sub's 5 from sub).
    if below:
        assert expected == ["deeper/anch.py", "keep.py"]
    else:
        assert len(ODD_FILES) - len(expected) >= 6 and "src/a/deep.py" in expected


def test_a_run_of_three_stars_before_a_slash_is_any_number_of_directories():
    assert ignored_by("***/deep.py", "a/b/deep.py") and ignored_by("***/deep.py", "deep.py")


CASE_FILES = [
    "Build/x.py", "build.py", "src/Gen/g.py", "src/gen/h.py", "a.LOG.py", "b.log.py", "Deep/Sub/t_1.py",
    "deep/sub/t_2.py", "keep/Keep.py", "keep/DROP.py", "Local/l.py", "K.py", "C.PY", "q.py", "É.py", "main.py",
]
CASE_GITIGNORE = "build/\nBUILD.PY\nsrc/GEN/\n*.LOG.py\n/DEEP/sub/\nKEEP/*\n!keep/keep.py\n[a-c].py\né.py\n"


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.parametrize("setting", ["true", "false", None])
def test_discovery_agrees_with_git_when_core_ignorecase_is_set(tmp_path, setting):
    """git sets core.ignoreCase in a repository on a case-insensitive filesystem (macOS, Windows)
    and then ignores `Build/` for `build/`: every file of this tree differs in case from its rule."""
    root = _git_tree(tmp_path / "oracle", CASE_FILES, CASE_GITIGNORE)
    subprocess.run(["git", "config", "--unset-all", "core.ignorecase"], cwd=root)
    if setting is not None:
        subprocess.run(["git", "config", "core.ignorecase", setting], cwd=root, check=True)
    (root / ".git" / "info" / "exclude").write_text("local/\n")
    listed = subprocess.run(
        ["git", "-c", "core.quotepath=off", "ls-files", "-co", "--exclude-standard"], cwd=root, check=True,
        capture_output=True, text=True,
    ).stdout.splitlines()
    expected = sorted(p for p in listed if not p.endswith(".gitignore"))
    found = [f.path for f in walk(str(root), DiscoveryOptions(include_globs=("*",))).files]
    assert found == expected
    if setting == "true":  # discriminating: git folds ASCII letters only
        assert expected == ["K.py", "keep/Keep.py", "main.py", "q.py", "É.py"]
    else:
        assert "Build/x.py" in expected and "Local/l.py" in expected


def test_an_ignore_stack_with_ignorecase_folds_ascii_letters_only():
    rules = ignore.parse_ignore_text("build/\n*.LOG\né.py\n!Vendor/\n")
    folded = ignore.IgnoreStack(ignorecase=True).push("", rules).push("sub/", ignore.parse_ignore_text("X.py\n"))
    assert folded.ignored("Build", True) and folded.ignored("a.log", False) and folded.ignored("sub/x.py", False)
    assert not folded.ignored("É.py", False)  # git's folding is ASCII's
    assert folded.entering_repository().ignorecase
    assert folded.names("vendor")  # a negation takes back a default directory in either case
    exact = ignore.IgnoreStack().push("", rules)
    assert not exact.ignored("Build", True) and not exact.ignored("a.log", False) and not exact.names("vendor")


# -- an ignore file is a repository's input: matching it stays quick whatever it holds ------------


def _seconds(check) -> float:
    import time

    started = time.monotonic()
    check()
    return time.monotonic() - started


@pytest.fixture(params=["atomic group", "lookahead"])
def commitment(request, monkeypatch):
    """Both ways a wildcard commits: Python 3.11's atomic group, and before it (3.10) a lookahead
    and a backreference."""
    if request.param == "atomic group" and sys.version_info < (3, 11):
        pytest.skip("Python 3.10's re has no atomic groups")
    monkeypatch.setattr(ignore, "_ATOMIC", request.param == "atomic group")


@pytest.mark.parametrize("pattern, path, matches", [
    ("*a" * 8 + "b", "a" * 50, False),  # 6.6 s for this one name, hours for a name of 255 bytes
    ("*a" * 8 + "b", "x" + "a" * 49 + "b", True),
    ("**/a/" * 7 + "b", "a/" * 50 + "c", False),  # 3 s for this one path
    ("**/a/" * 7 + "b", "a/" * 50 + "b", True),
    ("**/*a/" * 7 + "b", "xa/" * 40 + "c", False),
])
def test_a_pattern_of_many_wildcards_is_matched_without_trying_every_split(pattern, path, matches, commitment):
    assert _seconds(lambda: ignored_by(pattern, path)) < 0.5
    assert ignored_by(pattern, path) is matches


def test_a_wildcard_that_commits_to_the_first_place_still_finds_every_match_git_finds(commitment):
    assert ignored_by("*a*a*b", "xaayb") and ignored_by("*a*a*b", "aab") and not ignored_by("*a*a*b", "xab")
    assert ignored_by("*a*/c", "bab/c") and not ignored_by("*a*a*/c", "ba/ac")
    assert ignored_by("**/a/**/a/b", "x/a/a/a/b") and ignored_by("**/a/**/a/b", "a/a/b")
    assert not ignored_by("**/a/**/a/b", "x/a/b") and not ignored_by("**/a/**/a/b", "a/xa/b")
    assert ignored_by("**/a*/**/b", "q/ab/a/b") and ignored_by("a/**/b/**/c", "a/b/x/b/c")


def test_thousands_of_patterns_cost_time_linear_in_their_number():
    """One alternation of 20,000 patterns took 0.7 s to match each path (re's cost per group grows
    with the number of groups): a repository's generated .gitignore stalled the walk for hours."""
    rules = ignore.RuleSet(ignore.parse_ignore_text("\n".join(f"name{i}" for i in range(20_000)) + "\n!name7\n"))
    paths = [f"src/x{i}/file.py" for i in range(20)]
    assert _seconds(lambda: [rules.verdict(p, False) for p in paths]) < 2.0
    assert rules.verdict("a/name19999", False) is True and rules.verdict("name7", False) is False
    assert rules.verdict("name0", True) is True and rules.verdict("file.py", False) is None


def test_a_remembered_include_glob_of_many_wildcards_is_matched_quickly_too(commitment):
    """`--include` globs are remembered in the store, which a repository can commit."""
    rules = ignore.compile_globs(["*a" * 8 + "b"])
    assert _seconds(lambda: ignore.selects(rules, "a" * 50)) < 0.5
    assert not ignore.selects(rules, "a" * 50) and ignore.selects(rules, "a" * 49 + "b")
    assert ignore.selects(ignore.compile_globs(["*[ab]*]"]), "[ab]")  # a bracket spelled out still matches


@pytest.mark.parametrize("globs", [
    ("src/",), ("src/app/",), ("*.py",), ("!tests/",), ("src/", "!src/gen/"), ("**/gen/", "!**/gen/keep.py"),
    ("app/[slug]/**",), ("docs",), ("!*.md", "!vendor"), ("src/**/b.py", "a/"), ("é/",),
])
def test_a_selector_judging_many_paths_selects_what_selects_does(globs):
    """A filtered query judges every file of an index with one selector, which remembers each
    directory's verdict: the verdicts are those selects gives path by path, in any order."""
    names = ["src", "app", "gen", "tests", "docs", "vendor", "a", "[slug]", "e\u0301", "b.py"]
    paths = [f"{x}/{y}/{z}" for x in names for y in names for z in ("b.py", "keep.py", "r.md", "gen")]
    paths += [p.rsplit("/", 1)[0] for p in paths[::7]] + ["b.py", "r.md", "/src/b.py", "src//b.py", "/".join(["d"] * 3000) + "/b.py"]
    for rules in (ignore.compile_selection(globs), ignore.compile_globs(globs)):  # --path; --include
        for order in (paths, paths[::-1]):
            select = ignore.selector(rules)
            assert [select(p) for p in order] == [ignore.selects(rules, p) for p in order]


def test_the_rules_a_walk_picks_once_per_directory_judge_its_entries_as_the_whole_stack_does():
    """A walk asks for every entry of a directory; judge(directory) picks the layers that can apply
    to them once. Its verdicts are verdict()'s, whatever layers, bases and prefixes were pushed."""
    import random

    rng = random.Random(7)
    patterns = ["*.log", "!keep.log", "build/", "/a/b", "b", "!b/", "**/c", "a/**", "*", "!*.py", "x?z", "[ab]*",
                "d/", "!d/e"]
    names = ["a", "b", "c", "d", "e", "keep.log", "x.log", "m.py", "xyz", "build"]
    for _ in range(200):
        stack = ignore.IgnoreStack(ignorecase=rng.random() < 0.3)
        for _ in range(rng.randint(0, 4)):
            base = rng.choice(["", "a/", "a/b/", "b/", "a/b/c/", "a", "ab"])  # (a base without `/` too)
            rules = ignore.parse_ignore_text("\n".join(rng.sample(patterns, rng.randint(1, 5))))
            stack = stack.push(base, rules, prefix=rng.choice(["", "sub/"]), repository=rng.random() < 0.5)
        for directory in ["", "a/", "a/b/", "b/", "a/b/c/", "ab/", "abc/", "a/bc/"]:
            judge = stack.judge(directory)
            for name in names:
                for is_dir in (False, True):
                    assert judge(directory + name, is_dir) == stack.verdict(directory + name, is_dir)
