"""What a user coming from ripgrep, ck, ColGREP or semble types first: it works, or is told what
says it here (a probe: `--type go` was offered `--top-k`, `--include` `--files`, and a path after the
query was searched as a word without a word said)."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

TREE = {
    "src/auth/tokens.py": "def refresh_token(token):\n    '''Refresh an oauth token.'''\n    return token.renew()\n",
    "src/auth/session.go": "package auth\n\n// RefreshSession renews the token of a session.\nfunc RefreshSession() {}\n",
    "docs/tokens.md": "# Tokens\n\nHow a token is refreshed.\n",
    "web/app.ts": "export function refreshToken(): void {}\n",
    "web/view.tsx": "export const TokenView = () => null; // refresh token button\n",
    "config/app.toml": "[token]\nrefresh = true\n",
}


@pytest.mark.parametrize("option, says", [
    ("--type", "--lang LANG"), ("-t", "--lang LANG"), ("--glob", "--path GLOB"), ("-g", "--path GLOB"),
    ("--include", "--path GLOB"), ("--exclude", "--path '!GLOB'"), ("--max-count", "-k N"),
    ("-C", "--expand N"), ("--mode", "--retriever"), ("--color", "NO_COLOR=1"),
    ("-w", "-e '\\bWORD\\b'"), ("--smart-case", "-i (for -e patterns"), ("-E", "-e PATTERN"),
    ("--hidden", "nothing: hidden files are searched"),
    ("--format", "--json, --jsonl, -l or --vimgrep"),  # (it was told to quote the query)
])
def test_a_grep_family_option_is_told_what_says_it_here(run, make_tree, option, says):
    root = make_tree(TREE)
    result = run("query", "--root", root, "token", option, "x")
    assert result.exit_code == 2
    assert f"No such option '{option}'; here: {says}" in result.output


def test_an_option_no_tool_has_keeps_clicks_own_error(run, make_tree):
    result = run("query", "--root", make_tree(TREE), "token", "--frobnicate")
    assert result.exit_code == 2 and "No such option '--frobnicate'" in result.output and "here:" not in result.output


@pytest.mark.parametrize("args, says", [
    (["--root", "/x", "query", "token"], "before the command: a command's options follow it (`retrieval query --root ...`)"),
    (["--json", "query", "token"], "before the command: a command's options follow it (`retrieval query --json ...`)"),
    (["--force", "index"], "before the command: a command's options follow it (`retrieval index --force ...`)"),
    # the command named has no such option: not another command's told instead (`eval --force` is no query)
    (["--force", "query", "x"], ": `retrieval query` has none either (it is an option of eval, index)"),
])
def test_a_command_s_option_before_the_command_is_told_where_it_goes(run, args, says):
    """`retrieval --json query x` was told "No such option '--json'. Did you mean '--version'?"."""
    result = run(*args)
    assert result.exit_code == 2 and f"No such option '{args[0]}'{'' if says[0] == ':' else ' '}{says}" in result.output


def test_a_query_word_starting_with_a_dash_is_told_to_quote_the_query(run, make_tree):
    result = run("query", "--root", make_tree(TREE), "what", "does", "--frobnicate", "do")
    assert result.exit_code == 2
    assert ("No such option '--frobnicate'; a query holding a word that starts with - is quoted whole "
            "(`retrieval query '... --frobnicate ...'`) or given after --") in result.output


def test_search_is_query_and_a_query_without_a_command_is_told_the_command(run, make_tree):
    root = make_tree(TREE)
    searched = run("search", "--root", root, "refresh token", "--json")
    assert searched.exit_code == 0, searched.output
    assert json.loads(searched.stdout) == json.loads(run("query", "--root", root, "refresh token", "--json").stdout)
    listed = [line.split()[0] for line in run("--help").stdout.split("Commands:")[1].splitlines() if line.strip()]
    assert "query" in listed and "search" not in listed  # listed once, as query
    bare = run("where", "are", "tokens", "refreshed")
    assert bare.exit_code == 2
    assert "No such command 'where'; a search is `retrieval query where are tokens refreshed`" in bare.output
    typo = run("quer", "tokens")
    assert "No such command 'quer'; did you mean `query`?" in typo.output
    assert "`retrieval --help` lists the commands" in run("help").output
    assert "`retrieval --help` lists the commands" in run("hlep").output


def test_paths_after_the_query_are_said_to_be_words_with_the_filter_that_searches_there(run, make_tree, monkeypatch):
    root = make_tree(TREE)
    monkeypatch.chdir(root)
    result = run("query", "refresh", "token", "src/auth/", "web/app.ts")
    assert result.exit_code == 0
    assert ("note: src/auth/, web/app.ts were read as words of the query; to search only there: "
            "--path ./src/auth/ --path ./web/app.ts") in result.stderr
    # Words that name nothing here, or a bare directory name (a word as likely as a path), say nothing;
    # nor a path outside the root (no filter finds it), nor a query already given a --path.
    (root.parent / "elsewhere").mkdir()
    for words in (["refresh", "token", "nowhere/"], ["refresh", "src"], ["src/auth/"], ["token", "../elsewhere/"],
                  ["token", "src/auth/", "--path", "web/"]):
        assert "read as" not in run("query", *words).stderr


def test_a_path_word_with_a_newline_or_a_bidi_control_is_quoted_on_one_line_in_its_note(run, make_tree, monkeypatch):
    """shlex.quote kept the newline and the right-to-left mark raw: the note broke in two, or
    showed the name reversed; quoted as every other note quotes a path."""
    root = make_tree({"a\nb.py": "def nl_function(): pass\n", "x\u202ey.py": "def rtl_function(): pass\n"})
    monkeypatch.chdir(root)
    result = run("query", "nl_function", "a\nb.py", "x\u202ey.py")
    (note,) = [line for line in result.stderr.splitlines() if "read as" in line]
    assert note == ("note: $'a\\nb.py', $'x\\xe2\\x80\\xaey.py' were read as words of the query; to search only there: "
                    "--path $'./a\\nb.py' --path $'./x\\xe2\\x80\\xaey.py'")


def test_the_filter_a_path_word_is_told_searches_that_file_alone(run, make_tree, monkeypatch):
    """`a[1].py` suggested as `--path './a[1].py'`, a glob that also matched `a1.py`: the characters a
    glob reads are escaped."""
    names = ["a[1].py", "a1.py", "b*.py", "bb.py", "c{x,y}.py", "cx.py"]
    root = make_tree({name: "def needle_here(): pass\n" for name in names})
    monkeypatch.chdir(root)
    for name in ("a[1].py", "b*.py", "c{x,y}.py"):
        (note,) = [line for line in run("query", "needle_here", name).stderr.splitlines() if "read as" in line]
        filters = shlex.split(note.split("to search only there: ")[1])
        listed = run("query", "needle_here", "-l", *filters)
        assert listed.exit_code == 0, listed.output
        assert listed.stdout.splitlines() == [name], (name, filters)
    # In a root whose own path holds such characters, named from inside it by an absolute path, and
    # from the directory above it (all of it escaped, the root's `t[1]` named nothing).
    root = make_tree({"a[1].py": "def needle_here(): pass\n", "a1.py": "def needle_here(): pass\n"}, name="t[1]")
    for where, root_option, word in ((root, (), str(root / "a[1].py")), (root.parent, ("--root", str(root)),
                                                                            "t[1]/a[1].py")):
        monkeypatch.chdir(where)
        (note,) = [line for line in run("query", *root_option, "needle_here", word).stderr.splitlines()
                   if "read as" in line]
        filters = shlex.split(note.split("to search only there: ")[1])
        listed = run("query", *root_option, "needle_here", "-l", *filters)
        assert [os.path.basename(p) for p in listed.stdout.splitlines()] == ["a[1].py"], (where, filters, listed.output)


def test_the_filter_a_path_word_is_told_finds_it_through_links_and_names_starting_with_dots(
        run, make_tree, monkeypatch):
    """A root given through a link from beside it, a word through a link inside the root (links are
    not indexed: the file it leads to is), and a directory named `..d` (read as going up): each
    suggested --path matched nothing, or other files."""
    root = make_tree({"a1.py": "def needle_here(): pass\n", "real/b.py": "def needle_here(): pass\n",
                      "..d/g.py": "def needle_here(): pass\n", "sub/..d/g.py": "def needle_here(): pass\n"})
    (root.parent / "link").symlink_to(root)
    (root / "lnk").symlink_to(root / "real")
    cases = [(root.parent, ("--root", "link"), "link/a1.py", "a1.py"), (root, (), "lnk/b.py", "real/b.py"),
             (root / "sub", ("--root", str(root)), "..d/g.py", "sub/..d/g.py")]
    for where, root_option, word, found in cases:
        monkeypatch.chdir(where)
        (note,) = [line for line in run("query", *root_option, "needle_here", word).stderr.splitlines()
                   if "read as" in line]
        filters = shlex.split(note.split("to search only there: ")[1])
        listed = run("query", *root_option, "needle_here", "--json", *filters)
        assert [h["path"] for h in json.loads(listed.stdout)["results"]] == [found], (word, filters, listed.stderr)


def test_paths_are_from_the_current_directory_inside_a_root_given_through_a_link(run, make_tree, monkeypatch, tmp_path):
    """`--root ~/link-to-repo` with the shell in the repository: every -l and --vimgrep path came out
    absolute (the current directory is the resolved one, the root was compared as given)."""
    root = make_tree(TREE)
    link = tmp_path / "link"
    link.symlink_to(root)
    monkeypatch.chdir(root / "src")
    assert "auth/tokens.py" in run("query", "--root", str(link), "refresh token", "-l").stdout.splitlines()
    assert any(line.startswith("auth/tokens.py:")
               for line in run("query", "--root", str(link), "refresh token", "--vimgrep").stdout.splitlines())
    monkeypatch.chdir(tmp_path)  # outside the root: absolute, as given
    assert str(link / "src/auth/tokens.py") in run("query", "--root", str(link), "refresh token", "-l").stdout.splitlines()


def test_dash_l_prints_the_ranked_files_paths_alone(run, make_tree, monkeypatch):
    root = make_tree(TREE)
    monkeypatch.chdir(root)
    listed = run("query", "refresh token", "-l")
    files = run("query", "refresh token", "--files")
    assert listed.exit_code == 0
    assert listed.stdout.splitlines() == [line.split(":")[0] for line in files.stdout.splitlines()]
    assert len(listed.stdout.splitlines()) == len(set(listed.stdout.splitlines())) > 1
    assert json.loads(run("query", "refresh token", "-l", "--json").stdout) == \
        json.loads(run("query", "refresh token", "--files", "--json").stdout)
    # From a subdirectory, paths from there, as rg -l prints them (for xargs, for an editor).
    monkeypatch.chdir(root / "src")
    assert "auth/tokens.py" in run("query", "refresh token", "-l").stdout.splitlines()
    assert any(line.startswith("auth/tokens.py:") for line in run("query", "refresh token", "--vimgrep").stdout.splitlines())
    # A budget is spent on the paths printed, not on snippets never shown (it printed one path).
    assert len(run("query", "refresh token", "-l", "--max-tokens", "60").stdout.splitlines()) >= 4


def test_dash_0_ends_each_listed_path_with_nul_written_exactly_for_xargs(make_tree):
    """`-l` escapes a name with a newline (`new\\nline.py`), which `xargs -d '\\n'` then cannot open."""
    root = make_tree({"new\nline.py": "def quokka(): pass\n", "b c.py": "def quokka_two(): pass\n"})
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "RETRIEVAL_NO_SERVER": "1"}
    listed = subprocess.run([sys.executable, "-m", "retrieval", "query", "quokka", "-l", "-0"], cwd=root,
                            capture_output=True, env=env, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert sorted(listed.stdout.split(b"\0")) == [b"", b"b c.py", b"new\nline.py"] and listed.stdout.endswith(b"\0")
    opened = subprocess.run(["xargs", "-0", "cat"], input=listed.stdout, cwd=root, capture_output=True)
    assert opened.returncode == 0 and b"def quokka(): pass" in opened.stdout


@pytest.mark.parametrize("args", [["-0"], ["-0", "-l", "--json"], ["-0", "--files"]])
def test_dash_0_without_dash_l_is_refused(run, make_tree, args):
    result = run("query", "--root", make_tree(TREE), "token", *args)
    assert result.exit_code == 2 and "-0 ends the paths -l prints" in result.output


def test_vimgrep_gives_each_hit_as_path_line_column_text(run, make_tree, monkeypatch):
    root = make_tree(TREE)
    monkeypatch.chdir(root)
    result = run("query", "--root", root, "RefreshSession", "--vimgrep", "-k", "1")
    assert result.exit_code == 0, result.output
    # Its line is the definition's, its column the name's (1-based, as vim's errorformat reads it).
    assert result.stdout == "src/auth/session.go:4:6:func RefreshSession() {}\n"
    many = run("query", "--root", root, "refresh token", "--vimgrep", "--snippet-lines", "3").stdout.splitlines()
    assert "src/auth/tokens.py:1:5:def refresh_token(token):" in many
    assert "src/auth/tokens.py:2:8:    '''Refresh an oauth token.'''" in many
    assert all(line.count(":") >= 3 for line in many)
    for other in ("--json", "--jsonl", "-l"):
        assert run("query", "--root", root, "token", "--vimgrep", other).exit_code == 2


def test_vimgrep_counts_the_column_in_the_file_s_own_line(run, make_tree, monkeypatch):
    """A notebook's snippet is its cells' text and a long line is shown shortened: the column was
    counted in those, not in the line an editor opens (a review of the first version)."""
    notebook = json.dumps({"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# How zqretry works\n"]}],
                           "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
                           "nbformat": 4, "nbformat_minor": 5}, indent=1)
    one_string = json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                                        "source": "x = 1\nzqretry = 2\n"}],
                             "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
                             "nbformat": 4, "nbformat_minor": 5}, indent=1)
    long_line = "x = '" + "a" * 3000 + "' + zqretry()\n"
    latin = ("def k():\n    pass\nw = '" + "filler " * 200 + "café' + zqretry()\n").encode("latin-1")
    utf16 = ("def b():\n    pass\nw = '" + "a" * 2000 + "' + zqretry()\n").encode("utf-16")
    root = make_tree({"nb/retry.ipynb": notebook, "nb/one.ipynb": one_string, "long.py": long_line,
                      "latin.py": latin, "wide.py": utf16})
    monkeypatch.chdir(root)
    lines = run("query", "--root", root, "zqretry", "--vimgrep", "-k", "20").stdout.splitlines()
    by_path = {line.split(":")[0]: line.split(":") for line in lines}
    for name, text in (("nb/retry.ipynb", notebook), ("nb/one.ipynb", one_string)):
        number, column = int(by_path[name][1]), int(by_path[name][2])
        own = text.splitlines()[number - 1].encode()
        assert own[column - 1:].startswith(b"zqretry"), name
    assert by_path["long.py"][1:3] == ["1", str(long_line.index("zqretry") + 1)]
    # (counted in the line as an editor shows it, decoded: UTF-8 bytes of its characters)
    latin_line = latin.decode("latin-1").splitlines()[2]
    assert by_path["latin.py"][1:3] == ["3", str(len(latin_line[:latin_line.index("zqretry")].encode()) + 1)]
    assert by_path["wide.py"][1:3] == ["3", str(2010)]


def test_lang_and_kind_given_twice_keep_either(run, make_tree):
    root = make_tree(TREE)

    def paths(*args):
        return {json.loads(line)["path"] for line in run("query", "--root", root, "refresh token", "-k", "20",
                                                          "--jsonl", *args).stdout.splitlines()}

    assert paths("--lang", "go", "--lang", "py") == {"src/auth/session.go", "src/auth/tokens.py"}
    assert paths("--lang", "go") == {"src/auth/session.go"}
    assert paths("--kind", "docs", "--kind", "config") == {"docs/tokens.md", "config/app.toml"}


def test_braces_in_a_path_glob_are_alternatives(run, make_tree):
    root = make_tree({**TREE, "web/{id}.ts": "export const refreshTokenById = 1;\n"})

    def paths(*globs):
        args = [a for g in globs for a in ("--path", g)]
        return {json.loads(line)["path"] for line in run("query", "--root", root, "refresh token", "-k", "20",
                                                          "--jsonl", *args).stdout.splitlines()}

    assert paths("*.{ts,tsx}") == {"web/app.ts", "web/view.tsx", "web/{id}.ts"}
    assert paths("src/auth/*.{go,py}") == {"src/auth/session.go", "src/auth/tokens.py"}
    assert paths("web/{id}.ts") == {"web/{id}.ts"}  # a name holding braces still matches itself
    assert paths("*", "!*.{md,toml,ts,tsx}") == {"src/auth/session.go", "src/auth/tokens.py"}


def test_brace_expansion_nests_and_respects_escapes():
    from retrieval.ignore import expand_braces

    assert expand_braces("src/{a,b}/{x,y}.go") == ["src/a/x.go", "src/a/y.go", "src/b/x.go", "src/b/y.go",
                                                  "src/{a,b}/{x,y}.go"]
    assert expand_braces("**/{tests,{docs,doc}}/")[:3] == ["**/tests/", "**/docs/", "**/doc/"]
    assert expand_braces("{slug}.ts") == ["{slug}.ts"]
    assert expand_braces(r"a\{b,c}.py") == [r"a\{b,c}.py"]
    assert expand_braces("{a,b") == ["{a,b"]
    assert expand_braces("{{a,b}}") == ["{a}", "{b}", "{{a,b}}"] and expand_braces("{a,{b}}")[:2] == ["a", "{b}"]
    assert len(expand_braces("{a,b}" * 8 + "{" * 40)) == 257  # unclosed braces are text


def test_braces_making_too_many_globs_are_refused_not_cut(run, make_tree):
    """Past 256 alternatives the rest were dropped without a word: files a `--path` named were not
    searched, and ones an `!` left out came back (a review of the first version)."""
    from retrieval.ignore import BraceError, expand_braces

    with pytest.raises(BraceError, match="its braces make more than 256 globs"):
        expand_braces("{a,b}" * 9)
    with pytest.raises(BraceError, match="more than 64 braces"):  # (24,000 of them took minutes)
        expand_braces("{a,b}" * 65)
    many = "many/{" + ",".join(f"f{i}" for i in range(300)) + "}.py"
    for command in (["query", "token", "--path", many], ["index", "--exclude", many]):
        result = run(*command, "--root", make_tree(TREE))
        assert result.exit_code == 2 and "its braces make more than 256 globs" in result.output


def test_an_rgignore_hides_what_it_names_and_a_retrievalignore_takes_it_back(run, make_tree):
    root = make_tree({**TREE, ".rgignore": "web/\ndocs/\n", ".retrievalignore": "!docs/\n"})
    listed = run("query", "--root", root, "refresh token", "-l", "-k", "20").stdout.splitlines()
    assert str(root / "web/app.ts") not in listed and str(root / "docs/tokens.md") in listed  # (absolute from outside)
    assert "ignored\tweb/" in run("status", "--root", root, "--skipped").stdout.splitlines()


def _hits(result) -> list[tuple[str, int, int]]:
    assert result.exit_code == 0, result.output
    return [(h["path"], h["start_line"], h["end_line"]) for h in json.loads(result.stdout)["results"]]


def test_a_pattern_keeps_the_hits_with_a_matching_line_in_the_query_s_order(run, make_tree):
    root = make_tree(TREE)
    everything = _hits(run("query", "--root", root, "refresh token", "--json", "-k", "50"))
    for pattern, expected in (("def |func ", {"src/auth/tokens.py", "src/auth/session.go"}),
                              ("^export", {"web/app.ts", "web/view.tsx"})):
        kept = _hits(run("query", "--root", root, "refresh token", "--json", "-e", pattern))
        assert {path for path, _, _ in kept} == expected
        assert kept == [hit for hit in everything if hit[0] in expected]  # ranked as the query ranks them
    # Repeated: any of them; the ranks are renumbered from 1.
    both = json.loads(run("query", "--root", root, "refresh token", "--json", "-e", "^def", "-e", "^func").stdout)
    assert [h["path"] for h in both["results"]] == [p for p, _, _ in everything if p.startswith("src/auth/")]
    assert [h["rank"] for h in both["results"]] == [1, 2]


def test_a_pattern_is_matched_within_the_hit_s_own_lines_not_anywhere_in_its_file(run, make_tree):
    # Files whose chunks without the pattern say "token" more than the one chunk holding it: the files
    # are let through, those chunks are not, and the search goes deeper than its first round.
    fill = "# -\n" * 90

    def heavy(k: int) -> str:
        return "".join(f"def token_{k}_{n}(token):\n    return token + token + token\n\n\n{fill}" for n in range(6))

    tree = {f"m{k}.py": heavy(k) + "def last(token):\n    return zqmarker(token)\n" + fill for k in range(20)}
    root = make_tree(tree)
    ranked = _hits(run("query", "--root", root, "token", "--json", "-k", "500"))
    marked = [i for i, (path, start, end) in enumerate(ranked) if start <= heavy(0).count("\n") + 2 <= end]
    assert marked and marked[0] >= 50  # (deeper than the first round looks)
    kept = _hits(run("query", "--root", root, "token", "--json", "-e", "zqmarker", "-k", "3"))
    assert kept == [ranked[i] for i in marked[:3]]


def test_a_search_cut_short_by_its_depth_says_so_instead_of_that_nothing_matches(run, make_tree, monkeypatch):
    from retrieval import service

    fill = "# -\n" * 90
    heavy = "".join(f"def token_{n}(token):\n    return token + token + token\n\n\n{fill}" for n in range(6))
    root = make_tree({f"m{k}.py": heavy + "def last(token):\n    return zqmarker(token)\n" + fill for k in range(20)})
    monkeypatch.setattr(service, "PATTERN_MAX_DEPTH", service.PATTERN_DEPTH)  # below the first match's rank
    result = run("query", "--root", root, "token", "-e", "zqmarker")
    assert result.exit_code == 0 and result.stdout == ""
    assert (f"note: -e zqmarker: the query's first {service.PATTERN_DEPTH} hits in the files holding a match were "
            "looked at and 0 of them have one; deeper ones may too") in result.stderr
    assert "none of the chunks" not in result.stderr  # (it said so of chunks it had not looked at)


def test_fixed_strings_and_ignore_case_and_bad_patterns(run, make_tree):
    root = make_tree(TREE)
    literal = _hits(run("query", "--root", root, "refresh token", "--json", "-e", "renew()", "-F"))
    assert [path for path, _, _ in literal] == ["src/auth/tokens.py"]
    bad = run("query", "--root", root, "refresh token", "-e", "renew(")
    assert bad.exit_code == 2
    assert "-e 'renew(' is not a regular expression: missing ), unterminated subpattern" in bad.output
    assert "-F matches it as a literal string" in bad.output
    assert _hits(run("query", "--root", root, "refresh token", "--json", "-e", "REFRESH_TOKEN", "-i")) == \
        _hits(run("query", "--root", root, "refresh token", "--json", "-e", "refresh_token"))
    cased = run("query", "--root", root, "refresh token", "--json", "-e", "REFRESH_TOKEN")
    assert _hits(cased) == []
    assert "note: no hits: no line of the indexed files matches -e REFRESH_TOKEN" in cased.stderr
    for flag in ("-F", "-i"):
        alone = run("query", "--root", root, "refresh token", flag)
        assert alone.exit_code == 2 and f"{flag} applies to -e patterns, and none is given" in alone.output
        assert ("any case already" in alone.output) == (flag == "-i")


def test_a_pattern_no_hit_of_the_query_holds_says_so(run, make_tree):
    root = make_tree(TREE)
    result = run("query", "--root", root, "refresh token", "-e", r"^\[token\]", "--lang", "python")
    assert result.exit_code == 0 and result.stdout == ""
    assert "no line of the indexed files the other filters admit matches -e" in result.stderr
    missed = run("query", "--root", root, "oauth", "-e", "^package")  # a line in session.go, not the word
    assert "none of the chunks the query ranks has a line matching -e '^package'" in missed.stderr


def test_each_json_hit_lists_the_lines_its_pattern_matched(run, make_tree):
    root = make_tree({"app.py": "def refresh(token):\n    log('refresh')\n    x = renew_token(token)\n"
                                "    return renew_token(x)\n"})
    for mode in ("--json", "--jsonl"):
        out = run("query", "--root", root, "refresh token", mode, "-e", "renew_").stdout
        rows = json.loads(out)["results"] if mode == "--json" else [json.loads(line) for line in out.splitlines()]
        assert [r["match_lines"] for r in rows] == [[3, 4]]
    assert "match_lines" not in run("query", "--root", root, "refresh token", "--json").stdout  # (without -e)


def test_vimgrep_and_snippets_show_the_matching_line(run, make_tree, monkeypatch):
    root = make_tree({"app.py": 'def refresh(token):\n    """Refresh the token."""\n    log("refresh")\n'
                                "    return renew_token(token)\n"})
    monkeypatch.chdir(root)
    lines = run("query", "refresh token", "--vimgrep", "-e", "renew_").stdout.splitlines()
    assert lines == ["app.py:4:12:    return renew_token(token)"]
    shown = json.loads(run("query", "refresh token", "--json", "-e", "renew_", "--snippet-lines", "1").stdout)
    assert shown["results"][0]["snippet"] == "    return renew_token(token)\n"


def test_every_retriever_mode_and_the_python_api_take_patterns(run, make_tree):
    from retrieval import service

    root = make_tree(TREE)
    merged = json.loads(run("query", "--root", root, "refresh token", "--json", "--retriever", "all",
                            "-e", "^func").stdout)
    assert [h["path"] for h in merged["results"]] == ["src/auth/session.go"]
    result = service.search(root, "refresh token", filters=service.QueryFilter(patterns=(r"\.renew\(",)))
    assert [h.source_path for h in result.hits] == ["src/auth/tokens.py"]
    with pytest.raises(TypeError, match="not one string"):
        service.QueryFilter(patterns="renew")
    with pytest.raises(ValueError, match="is not a regular expression"):
        service.QueryFilter(patterns=("(",))
    with pytest.raises(TypeError, match="fixed_strings must be a bool"):
        service.QueryFilter(patterns=("x",), fixed_strings="yes")


def test_vimgrep_under_a_token_budget_keeps_the_column_and_marks_a_cut_line(run, make_tree, monkeypatch):
    line = "    items = [h for h in registry if h.enabled]  # each zqroute is registered " + "x" * 200
    root = make_tree({"routes.py": f"def register():\n{line}\n    return items\n"})
    monkeypatch.chdir(root)
    whole = run("query", "zqroute", "--vimgrep", "-k", "1").stdout.splitlines()
    assert whole == [f"routes.py:2:{line.index('zqroute') + 1}:{line}"]
    cut = run("query", "zqroute", "--vimgrep", "-k", "1", "--max-tokens", "20").stdout.splitlines()
    assert len(cut) == 1 and cut[0].startswith(whole[0].rsplit(":", 1)[0].rsplit(":", 1)[0] + ":")
    path, number, column, text = cut[0].split(":", 3)
    assert (path, number, column) == ("routes.py", "2", str(line.index("zqroute") + 1))
    # Cut around what the column points at: the line's head, cut before `zqroute`, showed none of it.
    assert text.startswith("… ") and text.endswith(" …") and "zqroute" in text and text[2:-2] in line
    assert len(text) < len(line)
    # A match inside the head keeps the head.
    early = "zqroute = [h for h in registry if h.enabled]  " + "y" * 300
    monkeypatch.chdir(make_tree({"routes.py": f"def register():\n    {early}\n"}))
    cut = run("query", "zqroute", "--vimgrep", "-k", "1", "--max-tokens", "20").stdout.splitlines()
    text = cut[0].split(":", 3)[3]
    assert text.endswith(" …") and ("    " + early).startswith(text[:-2]) and "zqroute" in text
    # A budget its lines do not fit at all still points at the match, not at the span's first line.
    (bare,) = run("query", "zqroute", "--vimgrep", "-k", "1", "--max-tokens", "3").stdout.splitlines()
    assert bare == "routes.py:2:5:…"


def test_a_cut_vimgrep_line_shows_its_match_whole_and_marks_only_what_was_cut():
    from retrieval.output import _cut_around

    line = "x = compute(a, b) + zqretrywidget(value)  # " + "y" * 100
    col = line.index("zqretrywidget") + 1
    shown = _cut_around(line, 20, col)
    assert "zqretrywidget" in shown and shown.startswith("… ") and shown.endswith(" …")
    assert _cut_around(line, 20, 1) == line[:20] + " …"  # at the head: nothing before it was cut
    assert _cut_around("ab zqretrywidget(value) " + "y" * 50, 16, 4) == "ab zqretrywidget …"  # it fits whole
    assert _cut_around(line, 0, col) == "…"
    # A word longer than the room starts the row (a third of the room before it cut it short), and
    # a row starting past the line's head is marked so (a window at 0 was marked as cut before it).
    assert _cut_around("x = 1 + averylongidentifierzz(value) " + "y" * 50, 20, 9).startswith("… averylongidentifier")
    assert _cut_around("a zqretrywidget_long_name_here(v) " + "y" * 40, 10, 3) == "… zqretrywid …"


def test_a_hit_whose_lines_a_budget_cut_all_points_where_a_larger_budget_does(run, make_tree, monkeypatch):
    """Cut to nothing, a hit pointed at the first line holding any word of the query; with a little
    more room, at the line holding the most of them (the line its snippet shows)."""
    text = "def handler():\n    w5 = 1\n" + "    a = 2\n" * 5 + "    x = w5 + retrywidget(w5)\n    return x\n"
    monkeypatch.chdir(make_tree({"c.py": text, "d.py": "def retrywidget(v):\n    return v\n"}))
    rows = [run("query", "w5", "retrywidget", "--vimgrep", "--max-tokens", str(b)).stdout.splitlines()[0]
            for b in (1, 5, 14)]
    assert {row.split(":")[1] for row in rows} == {"8"}, rows
    # A bare identifier's row is its definition's, not a comment naming it above.
    monkeypatch.chdir(make_tree({"a.py": "# the zqwidget helper is used below\nimport os\n\n\n\ndef zqwidget(x):\n"
                                         "    return x\n"}))
    rows = [run("query", "zqwidget", "--vimgrep", "--max-tokens", str(b)).stdout.splitlines()[0] for b in (1, 40)]
    assert [row.split(":")[1] for row in rows] == ["6", "6"], rows


def test_a_pattern_is_matched_line_by_line_inline_flags_and_text_anchors_included(run, make_tree):
    root = make_tree({"a.py": "import os\n\n\n\ndef zqwidget():\n    return os\n",
                      "b.py": "def zqwidget_too():\n    pass\n"})
    # \A and \Z are a line's ends here, as grep's ^ and $ (one search of a file's text saw its first line only).
    assert {p for p, _, _ in _hits(run("query", "--root", root, "zqwidget", "--json", "-e", r"\Adef"))} == {"a.py", "b.py"}
    # An inline flag opens its own pattern, wherever the pattern comes among several (it was a traceback).
    flagged = _hits(run("query", "--root", root, "zqwidget", "--json", "-e", "nothing", "-e", "(?i)DEF ZQWIDGET_TOO"))
    assert [p for p, _, _ in flagged] == ["b.py"]
    broken = run("query", "--root", root, "zqwidget", "-e", r"zq\nwidget")
    assert broken.exit_code == 2 and r"-e 'zq\nwidget' holds a line break (\n)" in broken.output


def test_a_pattern_too_slow_for_a_file_stops_the_search_naming_it_and_the_index_is_no_damage(run, make_tree, monkeypatch):
    from retrieval import patterns

    monkeypatch.setattr(patterns, "FILE_SECONDS", 0.3)
    root = make_tree({"slow.py": f"zqslow = '{'a' * 34}b'\n", "fine.py": "zqslow = 1\n"})
    result = run("query", "--root", root, "zqslow", "-e", "(a+)+$")
    assert result.exit_code == 1
    assert "error: -e '(a+)+$' took over 0.3 s to match the lines of slow.py: Python's regular expressions " \
           "backtrack" in result.stderr
    assert "damaged" not in result.stderr and "rebuilding" not in result.stderr
    assert _hits(run("query", "--root", root, "zqslow", "--json", "-e", "(a++)+$")) == []  # possessive: at once


def test_a_budget_cuts_a_hit_to_the_lines_its_pattern_matched(run, make_tree):
    body = "".join(f"    step_{n} = zqpipeline.run({n})\n" for n in range(40))
    root = make_tree({"p.py": f"def zqpipeline_steps():\n{body}    raise ZqStopError('done')\n"})
    shown = json.loads(run("query", "--root", root, "zqpipeline steps", "--json", "-e", r"raise \w+Error",
                           "--max-tokens", "120").stdout)["results"][0]
    assert shown["truncated"] and "raise ZqStopError" in shown["snippet"]


def test_shell_completion_offers_languages_for_lang_and_directories_for_root():
    from retrieval.cli import LanguageName
    from retrieval.options import RootPath

    assert [item.value for item in LanguageName().shell_complete(None, None, "py")] == ["python"]
    assert {item.value for item in LanguageName().shell_complete(None, None, "")} >= {"go", "rust", "markdown"}
    assert [(item.value, item.type) for item in RootPath().shell_complete(None, None, "src/a")] == [("src/a", "dir")]


def test_vimgrep_with_a_pattern_shows_every_line_of_a_hit_it_matched(run, make_tree, monkeypatch):
    """As `rg --vimgrep`: the second call of a function was hidden behind the first."""
    long_line = "    table = [" + "1, " * 600 + "renew_token(extra)]"
    root = make_tree({"app.py": "def refresh(token):\n    log('refresh')\n    x = renew_token(token)\n"
                                f"    return renew_token(x)\n{long_line}\n"})
    monkeypatch.chdir(root)
    lines = run("query", "refresh token", "--vimgrep", "-e", "renew_").stdout.splitlines()
    assert lines[:2] == ["app.py:3:9:    x = renew_token(token)", "app.py:4:12:    return renew_token(x)"]
    path, number, column, text = lines[2].split(":", 3)
    assert (path, number, column) == ("app.py", "5", str(long_line.index("renew_") + 1))
    assert "renew_token(extra)" in text and len(text) < len(long_line)  # shortened around the match
    assert len(lines) == 3
    # Lines asked for are the snippet's: those of them the pattern matches (not line 4 here).
    asked = run("query", "refresh token", "--vimgrep", "-e", "renew_", "--snippet-lines", "1").stdout.splitlines()
    assert asked[0] == "app.py:3:9:    x = renew_token(token)" and not any(a.startswith("app.py:4:") for a in asked)


def test_a_search_whose_files_are_each_just_under_the_limit_stops_at_the_search_s_own(run, make_tree, monkeypatch):
    """Twenty files of 2 s each took 39 s, with no error (200, six minutes): the files of one search share a limit."""
    from retrieval import patterns

    monkeypatch.setattr(patterns, "FILE_SECONDS", 30.0)
    monkeypatch.setattr(patterns, "SEARCH_SECONDS", 0.3)
    root = make_tree({f"slow{i}.py": f"zqslow_{i} = '{'a' * 24}b'\n" for i in range(40)})
    result = run("query", "--root", root, "zqslow", "-e", "(a+)+$", "-k", "40")
    assert result.exit_code == 1
    assert "error: -e '(a+)+$' took over 0.3 s to match the lines of " in result.stderr
    assert " files (the last slow" in result.stderr


def test_a_negative_lookaround_at_a_line_s_end_matches_as_grep_matches_it(run, make_tree):
    """In a file's whole text the line break before a line is a character `(?<!\\s)` sees: the search
    of the whole text, which skips files without a match, skipped these."""
    root = make_tree({"a.py": "def zqconvert(value):\n    return value\n",
                      "b.py": "x = 1\nzqconvert_word = 'zqconvert'\n"})
    assert {p for p, _, _ in _hits(run("query", "--root", root, "zqconvert", "--json", "-e", r"(?<!\s)def "))} == {"a.py"}
    assert {p for p, _, _ in _hits(run("query", "--root", root, "zqconvert", "--json", "-e", r"zqconvert'(?!\s)"))} \
        == {"b.py"}


def test_a_negated_class_may_name_the_line_break_and_a_literal_one_is_refused(run, make_tree):
    root = make_tree({"a.py": "raise ValueError('zqbad')\n"})
    assert {p for p, _, _ in _hits(run("query", "--root", root, "zqbad", "--json", "-e", r"[^\n]+Error"))} == {"a.py"}
    refused = run("query", "--root", root, "zqbad", "-F", "-e", "Value\nError")
    assert refused.exit_code == 2 and "holds a line break" in refused.output


def test_vimgrep_under_a_token_budget_shows_one_line_a_hit_as_without_a_pattern(run, make_tree, monkeypatch):
    """Every matched line priced the first hit out of a small budget, and the hits after it with it."""
    body = "".join(f"    zqmany_{n} = zqhandle(x)\n" for n in range(30))
    root = make_tree({"a.py": f"def zqhandle_all(x):\n{body}", "b.py": "def zqhandle_one(x):\n    return zqhandle(x)\n"})
    monkeypatch.chdir(root)
    lines = run("query", "zqhandle", "--vimgrep", "-e", r"zqhandle\(", "--max-tokens", "80").stdout.splitlines()
    assert sorted(line.split(":")[0] for line in lines) == ["a.py", "b.py"]


def test_files_listed_for_an_identifier_that_do_not_hold_it_are_counted_in_a_note(run, make_tree):
    """rg -l lists only files holding the pattern; `-l` here lists the ranked files, and for
    CONTEXT_MISSING_ERROR six of ten only shared parts of the name."""
    root = make_tree({"error.rs": 'pub const CONTEXT_MISSING_ERROR: &str = "no reactor";\n',
                      "handle.rs": "panic!(\"{}\", crate::util::error::CONTEXT_MISSING_ERROR);\n",
                      "camel.ts": "const contextMissingError = 1;\n",
                      "other.rs": "// a missing context is an error here\nfn context_missing() {}\n"})
    listed = run("query", "--root", root, "CONTEXT_MISSING_ERROR", "-l", "-k", "4")
    assert len(listed.stdout.split()) == 4
    assert ("note: 3 of the 4 files listed hold CONTEXT_MISSING_ERROR (in any naming style); the others only share "
            "parts of it (-e CONTEXT_MISSING_ERROR lists only files holding it as written)") in listed.stderr
    assert "files listed ho" not in run("query", "--root", root, "CONTEXT_MISSING_ERROR", "-l", "-k", "2").stderr
    # None of them holds it: said so ("0 of the 1 files listed hold ...; the others")
    from retrieval.notes import files_without_identifier

    assert files_without_identifier(str(root), ["other.rs"], "CONTEXT_MISSING_ERROR") == (
        "the file listed does not hold CONTEXT_MISSING_ERROR (in any naming style), only parts of it "
        "(-e CONTEXT_MISSING_ERROR lists only files holding it as written)")
    assert "files listed ho" not in run("query", "--root", root, "CONTEXT_MISSING_ERROR", "-l", "-k", "4",
                                          "-e", "CONTEXT").stderr


def test_a_hit_holding_a_pasted_frame_s_line_shows_that_line(run, make_tree, monkeypatch):
    """A PHP trace's hit showed, in --vimgrep, the line holding the most of the trace's words (201),
    not the frame's line in it (210)."""
    body = "".join(f"        $zqstep{n} = zqhandle($request, $options);\n" for n in range(20))
    root = make_tree({"src/CurlFactory.php": "<?php\nclass CurlFactory\n{\n    public function zqcreate($request, $options)\n"
                                             f"    {{\n{body}        throw new ZqConnectException('cURL error');\n    }}\n}}\n"})
    monkeypatch.chdir(root)
    trace = ("PHP Fatal error:  Uncaught ZqConnectException: cURL error in /var/www/vendor/src/CurlFactory.php:12\n"
             "Stack trace:\n#0 /var/www/vendor/src/CurlFactory.php(12): CurlFactory->zqcreate(Object(Request), Array)\n"
             "#1 {main}\n")
    lines = run("query", "--vimgrep", "-k", "1", "-", input=trace).stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("src/CurlFactory.php:12:")
    assert lines[0].endswith(":        $zqstep6 = zqhandle($request, $options);")
    shown = json.loads(run("query", "--json", "-k", "1", "--snippet-lines", "1", "-", input=trace).stdout)
    assert shown["results"][0]["snippet_start"] == 12


def test_a_list_of_matching_lines_cut_at_k_says_so(run, make_tree):
    """The skill's way to list a function's callers (-e with --vimgrep) stopped at -k: 142 of 491
    calls, with no word."""
    root = make_tree({f"caller{i}.py": f"def zqcaller_{i}():\n    return zqtarget({i})\n" for i in range(3)})
    cut = run("query", "--root", root, "zqtarget", "-e", r"zqtarget\(", "--vimgrep", "-k", "2")
    assert len(cut.stdout.splitlines()) == 2
    assert "note: the answer stops at -k 2: more chunks may hold a line matching -e (a larger -k lists them)" in cut.stderr
    whole = run("query", "--root", root, "zqtarget", "-e", r"zqtarget\(", "--vimgrep", "-k", "5")
    assert len(whole.stdout.splitlines()) == 3 and "stops at" not in whole.stderr
    assert "stops at -k 2" in run("query", "--root", root, "zqtarget", "-e", "zqtarget", "-l", "-k", "2").stderr


def test_a_budget_under_the_first_hit_says_the_hit_is_shown_anyway(run, make_tree):
    """An agent's max_tokens of 10 got a hit of about 125 tokens, unsaid."""
    root = make_tree({"a.py": "def zqbudget(x):\n    return zqother(x)\n"})
    small = run("query", "--root", root, "zqbudget", "--json", "--max-tokens", "5")
    assert len(json.loads(small.stdout)["results"]) == 1
    assert "note: the first hit alone takes about " in small.stderr and "over --max-tokens 5" in small.stderr
    took = int(small.stderr.split("takes about ")[1].split()[0])
    notes = json.loads(small.stdout)["notes"]  # said on stdout too, for an agent reading only that
    assert [note for note in notes if "first hit alone" in note] == [small.stderr.split("note: ")[1].strip()]
    assert abs(took - (len(small.stdout) - sum(len(note) + 14 for note in notes)) / 4) < 10  # (about what was printed)
    assert "first hit alone" not in run("query", "--root", root, "zqbudget", "--json", "--max-tokens", "2000").stderr
