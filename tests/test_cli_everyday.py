"""Everyday use of the command: mistakes are said out loud, remembered state is shown, the root is
found from a subdirectory, and the shell gets what it expects (pipes, Ctrl-C, progress, help)."""
from __future__ import annotations

import errno
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest

from retrieval import service
from retrieval.cli import main
from retrieval.languages import ALIASES, known_languages

README = Path(__file__).resolve().parents[1] / "README.md"


def query_json(run, root, *args):
    result = run("query", "--root", root, "--json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def cli(*args, cwd=None, **kwargs):
    return subprocess.run([sys.executable, "-m", "retrieval.cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120, **kwargs)


def test_python_dash_m_retrieval_is_the_retrieval_command(sample_repo):
    """Where a virtual environment's scripts are not on PATH, `python -m retrieval` still works."""
    done = subprocess.run([sys.executable, "-m", "retrieval", "query", "config", "--root", str(sample_repo), "--json"],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "RETRIEVAL_NO_SERVER": "1"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["results"]
    version = subprocess.run([sys.executable, "-m", "retrieval", "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("retrieval")


# -- mistakes that used to return nothing ----------------------------------------------------------


@pytest.mark.parametrize("alias, name", [("py", "python"), ("PY", "python"), ("md", "markdown"), ("yml", "yaml")])
def test_a_language_alias_filters_like_the_language_name(run, sample_repo, alias, name):
    by_alias = query_json(run, sample_repo, "config retries", "--lang", alias)["results"]
    assert by_alias == query_json(run, sample_repo, "config retries", "--lang", name)["results"]
    if name == "python":
        assert by_alias and all(r["path"].endswith(".py") for r in by_alias)


def test_every_alias_names_a_known_language():
    known = set(known_languages())
    assert {"py", "js", "ts", "rs", "golang", "c++", "cs", "sh", "rb", "kt", "scss", "protobuf", "sol", "jl", "gql",
            "bazel", "hbs", "heex", "j2", "cshtml"} <= set(ALIASES)
    assert set(ALIASES.values()) <= known
    assert not set(ALIASES) & known  # an alias never shadows a real name


def test_every_view_template_extension_names_its_language_to_lang():
    """`--lang heex` worked and `--lang leex` was a usage error: a template is asked for by the
    extension its files wear."""
    from retrieval.languages import TEMPLATES, detect, resolve_language

    extensions = ("erb", "rhtml", "eex", "heex", "leex", "ejs", "hbs", "handlebars", "mustache", "j2", "jinja",
                  "jinja2", "njk", "twig", "liquid", "haml", "slim", "pug", "jade", "cshtml", "razor", "tmpl",
                  "tpl", "gotmpl")
    for ext in extensions:
        assert resolve_language(ext) == detect(f"views/page.{ext}")[0], ext
    assert {detect(f"views/page.{ext}")[0] for ext in extensions} == TEMPLATES


@pytest.mark.parametrize("name", ["klingon", "pyhton"])
def test_an_unknown_language_is_a_usage_error_that_lists_the_valid_names(run, sample_repo, name):
    result = run("query", "--root", sample_repo, "config", "--lang", name)
    assert result.exit_code == 2
    assert f"unknown language '{name}'" in result.stderr
    assert "python" in result.stderr and "typescript" in result.stderr and "py" in result.stderr
    assert ("did you mean python?" in result.stderr) == (name == "pyhton")  # a near miss is told the name


@pytest.mark.parametrize("command", [["query", "config"], ["index"]])
def test_a_misspelled_retriever_is_told_the_name_it_was_probably_meant_to_be(run, sample_repo, command):
    result = run(*command, "--root", sample_repo, "--retriever", "tree-sitter")
    assert result.exit_code == 2
    assert "unknown retriever 'tree-sitter'; did you mean 'treesitter'?" in result.stderr
    # A name like none says so in the same words, as eval and the API do (it was click's own).
    far = run(*command, "--root", sample_repo, "--retriever", "zzz").stderr
    assert "unknown retriever 'zzz'; choose one of: all, hybrid, lexical" in far and "did you mean" not in far


def test_a_budget_smaller_than_the_first_hit_returns_that_hit_cut_to_fit(run, make_tree):
    root = make_tree({"big.py": "def budget_item():\n" + "".join(f"    value_{i} = 'budget'\n" for i in range(80))})
    full = query_json(run, root, "budget item", "--snippet-lines", "1000")["results"][0]
    (row,) = query_json(run, root, "budget item", "--max-tokens", "150")["results"]
    assert (row["path"], row["start_line"], row["end_line"]) == (full["path"], full["start_line"], full["end_line"])
    assert row["truncated"] is True
    assert row["snippet"] and full["snippet"].startswith(row["snippet"])
    assert -(-len(json.dumps(row, ensure_ascii=False)) // 4) + 1 <= 150  # as printed, fields and all
    assert row["snippet_end"] == row["snippet_start"] + row["snippet"].count("\n") - 1
    roomy = query_json(run, root, "budget item", "--max-tokens", "100000")["results"]
    assert roomy and all("truncated" not in r for r in roomy)


def test_a_budget_too_small_for_even_one_line_still_returns_the_first_hit(run, make_tree):
    root = make_tree({"a.py": "def tiny_budget_target():\n    return 1\n"})
    (row,) = query_json(run, root, "tiny budget target", "--max-tokens", "1")["results"]
    assert row["path"] == "a.py" and row["truncated"] is True and row["snippet"] == ""


@pytest.mark.parametrize("flags, named", [
    (["--lang", "rust"], "--lang rust"),
    (["--path", "nowhere/**"], "--path 'nowhere/**'"),
    (["--kind", "config", "--path", "src/**"], "--path 'src/**', with --kind config together"),
    # several of one option are alternatives, not all at once (a review)
    (["--kind", "config", "--path", "src/**", "--path", "nowhere/**"],
     "either --path 'src/**' or --path 'nowhere/**', with --kind config together"),
    # a `!` takes back, it is no alternative
    (["--path", "nowhere/**", "--path", "!docs/**"], "--path 'nowhere/**'"),
    (["--path", "src/**", "--path", "!src/**"], "--path 'src/**' --path '!src/**' together"),
    (["--lang", "rust", "--lang", "go"], "--lang rust or --lang go"),
])
def test_filters_matching_no_indexed_file_say_so_on_stderr(run, sample_repo, flags, named):
    result = run("query", "--root", sample_repo, "config", *flags)
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr.strip() == f"note: no indexed file matches {named}"


def test_a_path_filter_written_with_backslashes_as_separators_is_told_the_glob_that_matches(run, sample_repo):
    """A backslash escapes in a glob: `--path src\\app\\config.py`, as Windows writes a path,
    named no file and the note did not say why."""
    result = run("query", "--root", sample_repo, "config", "--path", "src\\app\\config.py")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr.strip() == ("note: no indexed file matches --path 'src\\app\\config.py' (a backslash escapes "
                                     "the next character; directories are separated by /: --path src/app/config.py)")


def test_a_path_filter_pasted_with_a_hit_s_span_is_told_the_glob_that_matches(run, sample_repo):
    result = run("query", "--root", sample_repo, "config", "--path", "src/app/config.py:5-9")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr.strip() == ("note: no indexed file matches --path src/app/config.py:5-9 (a span is no "
                                     "part of the path: --path src/app/config.py)")


def test_the_glob_a_note_suggests_from_a_subdirectory_is_the_one_to_type_there(run, sample_repo, make_tree,
                                                                                 monkeypatch):
    """From `src/`, `--path ./app/config.py:5-9` was told `--path ./src/app/config.py`: the glob as
    the root sees it, which typed there names `src/src/app/config.py` and nothing."""
    monkeypatch.chdir(os.path.join(sample_repo, "src"))
    result = run("query", "--root", sample_repo, "config", "--path", "./app/config.py:5-9")
    assert result.stderr.strip() == ("note: no indexed file matches --path ./app/config.py:5-9 (a span is no "
                                     "part of the path: --path ./app/config.py)")
    assert query_json(run, sample_repo, "config", "--path", "./app/config.py")["results"]
    # A backslash-separated glob is no `./` path to the command: the one suggested is, from here.
    root = make_tree({"app/config.py": "config = 1\n", "src/lib/util.py": "def util(): config\n"})
    monkeypatch.chdir(root / "src")
    result = run("query", "--root", root, "config", "--path", ".\\app\\config.py")
    assert result.stderr.strip().endswith("(a backslash escapes the next character; directories are separated by /: "
                                          "--path ../app/config.py)")
    assert [h["path"] for h in query_json(run, root, "config", "--path", "../app/config.py")["results"]] == \
        ["app/config.py"]


def test_a_path_filter_matches_a_name_in_either_unicode_normal_form(run, make_tree):
    """A name stored decomposed (`e` and a combining accent, as macOS wrote it) and a glob typed
    composed (`é`), or the other way round: the same name to whoever reads it."""
    root = make_tree({"docs/re\u0301sume\u0301.md": "# Menu\n\nCroissant recipes.\n",
                      "docs/caf\u00e9.md": "# Cafe\n\nCroissant prices.\n", "docs/other.md": "Croissant.\n"})
    found = query_json(run, root, "croissant", "--path", "docs/r\u00e9sum\u00e9.md")["results"]
    assert [h["path"] for h in found] == ["docs/re\u0301sume\u0301.md"]  # the name as it is on disk
    found = query_json(run, root, "croissant", "--path", "cafe\u0301.md")["results"]
    assert [h["path"] for h in found] == ["docs/caf\u00e9.md"]


@pytest.mark.parametrize("where", ["elsewhere", "above"])
def test_a_path_filter_outside_the_root_says_it_is_outside_the_root(run, sample_repo, tmp_path, monkeypatch, where):
    """`--path /other/repo/x.py` or `--path ../../../x` said "no indexed file matches", as if the
    index were missing the file rather than the path leading out of the root."""
    monkeypatch.chdir(sample_repo / "src" / "app")
    glob = str(tmp_path / "other" / "config.py") if where == "elsewhere" else "../../../config.py"
    result = run("query", "--root", sample_repo, "config", "--path", glob)
    assert (result.exit_code, result.stdout) == (0, "")  # as any --path matching nothing
    assert result.stderr.strip() == (f"note: --path {shlex.quote(glob)} is outside the root {sample_repo}: only files "
                                     "under the root are searched (--root chooses another)")


def test_a_filter_that_matches_files_but_no_hit_gets_the_no_hits_note_not_the_filter_one(run, sample_repo):
    result = run("query", "--root", sample_repo, "xylophonequux", "--lang", "python")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == "note: no hits: no indexed text of the files the filters admit contains a word of the query\n"


def test_status_without_an_index_says_how_to_build_one(run, sample_repo):
    for args in ([], ["--json"]):
        result = run("status", "--root", sample_repo, *args)
        assert result.exit_code == 0
        assert f"retrieval index --root {sample_repo}" in result.stderr
    run("index", "--root", sample_repo)
    assert "retrieval index" not in run("status", "--root", sample_repo).stderr


# -- remembered filters -----------------------------------------------------------------------------


def lexical_status(run, root):
    payload = json.loads(run("status", "--root", root, "--json").stdout)
    return next(r for r in payload["retrievers"] if r["retriever"] == "lexical")


def test_remembered_filters_are_shown_announced_and_can_be_dropped(run, sample_repo):
    assert run("index", "--root", sample_repo, "--include", "src/**", "--exclude", "*cache*").exit_code == 0
    assert lexical_status(run, sample_repo)["filters"] == {"include": ["src/**"], "exclude": ["*cache*"]}
    text = run("status", "--root", sample_repo).stdout
    assert "remembered filters: --include 'src/**' --exclude '*cache*'" in text

    result = run("query", "--root", sample_repo, "--json", "config")
    assert result.exit_code == 0
    assert "remembered filters --include 'src/**' --exclude '*cache*'" in result.stderr
    assert "--reset-filters" in result.stderr
    assert {r["path"] for r in json.loads(result.stdout)["results"]} <= {"src/app/config.py", "src/app/http_client.py"}
    # An agent reading stdout alone learns it too (a store committed with an --exclude hid files).
    assert json.loads(result.stdout)["index_filters"] == {"include": ["src/**"], "exclude": ["*cache*"]}

    again = run("index", "--root", sample_repo, "--force")
    assert again.exit_code == 0 and "remembered filters --include 'src/**'" in again.stderr
    assert lexical_status(run, sample_repo)["filters"] == {"include": ["src/**"], "exclude": ["*cache*"]}

    reset = run("index", "--root", sample_repo, "--reset-filters")
    assert reset.exit_code == 0 and "remembered" not in reset.stderr
    row = lexical_status(run, sample_repo)
    assert row["filters"] == {} and row["files"] == 6
    quiet = run("query", "--root", sample_repo, "config")
    assert quiet.exit_code == 0 and "remembered" not in quiet.stderr
    assert "index_filters" not in json.loads(run("query", "--root", sample_repo, "config", "--json").stdout)


def test_every_status_row_has_filters_even_without_an_index(run, sample_repo):
    rows = json.loads(run("status", "--root", sample_repo, "--json").stdout)["retrievers"]
    assert rows and all(isinstance(row["filters"], dict) for row in rows)
    assert lexical_status(run, sample_repo)["state"] == "missing" and lexical_status(run, sample_repo)["filters"] == {}


def test_a_remembered_profile_is_shown_and_announced_like_a_filter(run, sample_repo):
    """It changes every ranking (whole files, Lucene's analyzer): an `eval --profile prose` left
    every later query ranked as prose, and nothing said so."""
    run("index", "--root", sample_repo, "--profile", "prose")
    assert lexical_status(run, sample_repo)["filters"] == {"profile": "prose"}
    assert "remembered filters --profile prose" in run("query", "--root", sample_repo, "config").stderr
    run("index", "--root", sample_repo, "--profile", "code")
    assert "remembered" not in run("query", "--root", sample_repo, "config").stderr


def test_an_option_given_again_replaces_only_itself_and_the_others_stay_remembered(run, sample_repo):
    assert run("index", "--root", sample_repo, "--profile", "prose", "--include", "src/**").exit_code == 0
    tuned = run("index", "--root", sample_repo, "--bm25", "0.9,0.4")
    assert tuned.exit_code == 0
    assert lexical_status(run, sample_repo)["filters"] == {"include": ["src/**"], "profile": "prose", "bm25": [0.9, 0.4]}
    assert "remembered filters --include 'src/**'" in tuned.stderr  # kept, so said
    assert "--bm25 0.9,0.4" in run("status", "--root", sample_repo).stdout

    narrowed = run("index", "--root", sample_repo, "--exclude", "*cache*", "--include", "src/app/**")
    assert narrowed.exit_code == 0 and "remembered filters --profile prose --bm25 0.9,0.4" in narrowed.stderr
    assert lexical_status(run, sample_repo)["filters"] == {
        "include": ["src/app/**"], "exclude": ["*cache*"], "profile": "prose", "bm25": [0.9, 0.4]}

    assert run("index", "--root", sample_repo, "--reset-filters", "--max-file-bytes", "100000").exit_code == 0
    assert lexical_status(run, sample_repo)["filters"] == {"max_file_bytes": 100000}


def test_bm25_parameters_go_to_the_bm25_retrievers_only(run, sample_repo):
    from retrieval.retrievers.base import get_spec

    takes = {n for n in service.REGISTRY if get_spec(n).bm25}
    assert takes == {"lexical", "lexical+ctx", "treesitter", "pi-serini"}
    dense = run("index", "--root", sample_repo, "--retriever", "turbovec", "--bm25", "0.9,0.4")
    assert dense.exit_code == 2 and "--bm25 applies to the BM25 retrievers" in dense.stderr

    # All-mode: every installed retriever is built; the dense ones (with the extras) without them.
    result = run("index", "--root", sample_repo, "--bm25", "0.9,0.4")
    assert result.exit_code == 0, result.output
    rows = json.loads(run("status", "--root", sample_repo, "--json").stdout)["retrievers"]
    built = {r["retriever"]: r["filters"] for r in rows if r["state"] == "ready"}
    assert "lexical" in built
    for name, filters in built.items():
        assert filters.get("bm25") == ([0.9, 0.4] if name in takes else None), name


@pytest.mark.parametrize("value", ["nan,0.5", "inf,0.5", "1e308,0.5", "-1,0.5", "1.2,1.5", "1.2,-0.1", "1.2"])
def test_bm25_parameters_outside_their_range_are_a_usage_error(run, sample_repo, value):
    result = run("index", "--root", sample_repo, "--bm25", value)
    assert result.exit_code == 2 and "--bm25" in result.stderr
    assert lexical_status(run, sample_repo)["state"] == "missing"  # nothing was built with them


@pytest.mark.parametrize("value", ["²", "١٢", "-1", "1.5", "scopes"])
def test_expand_takes_ascii_digits_or_scope_and_anything_else_is_a_usage_error(run, sample_repo, value):
    result = run("query", "--root", sample_repo, "config", "--expand", value)
    assert result.exit_code == 2 and "--expand" in result.stderr and "Traceback" not in result.output
    if value == "-1":  # it is a number: what is wrong with it is said
        assert "0 or more" in result.stderr


def test_expand_scope_is_taken_in_any_case_as_lang_and_retriever_are(run, sample_repo):
    result = run("query", "--root", sample_repo, "config", "--expand", "SCOPE", "--json")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("installed", [True, False])
def test_expand_scope_without_scoped_hits_says_once_that_scopes_come_from_treesitter(run, sample_repo, monkeypatch,
                                                                                    installed):
    """`--expand scope` with lexical (the default) showed each hit's own lines without a word: it
    looked like the option did nothing. Without the extra, the note said to use a retriever that
    could not run: it names the install command instead."""
    from retrieval import extras

    monkeypatch.setattr(extras, "missing_modules", lambda extra: [] if installed else ["tree_sitter"])
    result = run("query", "--root", sample_repo, "config retries", "--expand", "scope", "--json")
    assert result.exit_code == 0, result.stderr
    assert len(json.loads(result.stdout)["results"]) > 1  # several hits, one note
    said = [line for line in result.stderr.splitlines() if "--expand scope" in line]
    where = "--retriever treesitter" if installed else f"its extra is not installed: {extras.install_hint('treesitter')}"
    assert said == ["note: --expand scope: no hit has an enclosing scope (scopes come from the treesitter "
                    f"retriever's chunks: {where}); each shows its own lines"]
    assert json.loads(result.stdout)["notes"] == [said[0][len("note: "):]]  # and on stdout, for an agent
    assert "--expand scope" not in run("query", "--root", sample_repo, "config retries", "--expand", "3").stderr


@pytest.mark.parametrize("command", [["query", "config"], ["index"]])
def test_an_empty_embedding_model_is_a_usage_error_not_ignored(run, sample_repo, command):
    """`--embed-model "$UNSET"` went on with the bundled model without a word."""
    result = run(*command, "--root", sample_repo, "--embed-model", "")
    assert result.exit_code == 2 and "'--embed-model': is empty" in result.output
    assert not (sample_repo / ".retrieval").exists()


@pytest.mark.parametrize("command", [["query", "config"], ["index", "--retriever", "lexical"],
                                     ["query", "config", "--retriever", "treesitter"]])
def test_an_embedding_model_for_a_retriever_that_embeds_nothing_is_a_usage_error(run, sample_repo, command):
    """`--embed-model DIR` with lexical went on without a word, as if the model had been taken."""
    result = run(*command, "--root", sample_repo, "--embed-model", str(sample_repo))
    assert result.exit_code == 2
    assert "--embed-model applies to the dense retrievers (hybrid, turbovec), not to " in result.output
    assert not (sample_repo / ".retrieval").exists()


def test_index_help_says_the_filters_persist_and_how_to_drop_them():
    help_text = " ".join(main.commands["index"].get_help(click.Context(main.commands["index"])).split())
    assert "persist" in help_text and "--reset-filters" in help_text


# -- the root ---------------------------------------------------------------------------------------


def test_a_query_from_a_subdirectory_searches_the_index_above_it(run, sample_repo, monkeypatch):
    assert run("index", "--root", sample_repo).exit_code == 0
    monkeypatch.chdir(sample_repo / "src" / "app")
    result = run("query", "--json", "parse config file")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["results"][0]["path"] == "src/app/config.py"  # relative to the root
    assert not (sample_repo / "src" / "app" / ".retrieval").exists()
    status = run("status")
    assert status.stdout.splitlines()[0] == f"root: {sample_repo} (nearest directory with an index)"
    assert json.loads(run("status", "--json").stdout)["root_reason"] == "index"


def test_without_an_index_the_repository_root_is_used_and_indexed(run, sample_repo, monkeypatch):
    (sample_repo / ".git").mkdir()
    monkeypatch.chdir(sample_repo / "docs")
    result = run("query", "--json", "LRUCache")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["results"][0]["path"] == "src/app/cache.py"
    assert (sample_repo / ".retrieval").is_dir() and not (sample_repo / "docs" / ".retrieval").exists()


def test_outside_any_repository_a_query_says_it_indexes_the_current_directory_only(run, sample_repo, monkeypatch):
    """From a subdirectory of a plain folder the first query indexed that subdirectory alone, silently."""
    monkeypatch.chdir(sample_repo / "src" / "app")
    first = run("query", "--json", "LRUCache")
    assert first.exit_code == 0, first.stderr
    assert "no repository or index at or above" in first.stderr and "--root" in first.stderr
    assert (sample_repo / "src" / "app" / ".retrieval").is_dir()
    again = run("query", "--json", "LRUCache")  # the index it built answers now: nothing to say
    assert again.exit_code == 0 and "no repository or index" not in again.stderr
    assert "no repository or index" not in run("query", "--root", sample_repo, "--json", "LRUCache").stderr



def test_a_subdirectory_s_own_index_says_when_the_project_s_index_above_holds_it_too(run, sample_repo, monkeypatch):
    """Outside git, once a query from a subdirectory built its index, every query from there
    answered from it, the project's index above never asked, and nothing said so."""
    monkeypatch.chdir(sample_repo / "src" / "app")
    assert run("query", "--json", "LRUCache").exit_code == 0  # the subdirectory's own index
    assert "holds it too" not in run("query", "--json", "LRUCache").stderr  # none above yet
    assert run("query", "--root", sample_repo, "--json", "LRUCache").exit_code == 0
    result = run("query", "--json", "LRUCache")
    assert result.exit_code == 0 and json.loads(result.stdout)["results"]
    here, above = sample_repo / "src" / "app", sample_repo
    note = (f"note: the index of {here} answers here; the one of {above} above it holds it too "
            f"(--root {above} searches that; `retrieval clean` here removes this one)\n")
    assert result.stderr == note
    assert run("status").stderr == note  # where the root is told
    assert run("index", "--retriever", "lexical").stderr == ""  # it builds what it names, nothing to correct
    cleaned = run("clean")
    assert cleaned.exit_code == 0 and "note:" not in cleaned.stderr
    result = run("query", "--json", "LRUCache")
    assert result.exit_code == 0 and result.stderr == "" and json.loads(result.stdout)["results"]


def test_clean_of_a_missing_root_is_an_error(run, tmp_path):
    result = run("clean", "--root", tmp_path / "nonexistent")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: root does not exist: ")


# -- shell manners ----------------------------------------------------------------------------------


def test_unquoted_words_are_one_query(run, sample_repo):
    words = query_json(run, sample_repo, "parse", "config", "file")
    quoted = query_json(run, sample_repo, "parse config file")
    assert words["query"] == "parse config file"
    assert words["results"] == quoted["results"]


@pytest.fixture
def wide_repo(make_tree):
    return make_tree({f"pkg/m{i:03d}.py": "".join(f"def widget_{i}_{j}():\n    return 'widget'\n\n\n" for j in range(30))
                      for i in range(40)})


def test_a_closed_stdout_ends_the_command_quietly_with_exit_zero(wide_repo):
    assert cli("index", "--root", wide_repo).returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "retrieval.cli", "query", "widget", "--root", str(wide_repo),
                             "-k", "500", "--expand", "50"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()  # as `| head -1` does: far more than a pipe buffer is still to come
    stderr = proc.stderr.read()
    assert proc.wait(timeout=60) == 0
    assert stderr == b""


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="/dev/full is Linux's")
def test_output_that_cannot_be_written_is_one_error_line(sample_repo):
    assert cli("index", "--root", sample_repo).returncode == 0
    with open("/dev/full", "w") as full:  # every write: no space left on device
        proc = subprocess.run([sys.executable, "-m", "retrieval.cli", "query", "config", "--root", str(sample_repo)],
                              stdout=full, stderr=subprocess.PIPE, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.decode() == f"error: cannot write the output: {os.strerror(errno.ENOSPC)}\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="/dev/full is Linux's")
@pytest.mark.parametrize("entry", ["retrieval.cli", "retrieval"])
def test_notes_that_cannot_be_written_never_cost_the_results(sample_repo, entry):
    """A query with a note on stderr (no hits, and why) into `2>/dev/full` exited 1 with nothing
    on stdout, and into a stderr pipe whose reader was gone, 0 with nothing: the note's failed
    write was taken for the results'."""
    assert cli("index", "--root", sample_repo).returncode == 0
    argv = [sys.executable, "-m", entry, "query", "zzzqqqnothing", "--root", str(sample_repo), "--json"]
    env = {**os.environ, "RETRIEVAL_NO_SERVER": "1"}
    with open("/dev/full", "w") as full:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=full, timeout=60, env=env)
    assert proc.returncode == 0 and json.loads(proc.stdout)["results"] == []
    reader, writer = os.pipe()
    os.close(reader)
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=writer, timeout=60, env=env)
    finally:
        os.close(writer)
    assert proc.returncode == 0 and json.loads(proc.stdout)["results"] == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="/dev/full is Linux's")
@pytest.mark.parametrize("args", [["--version"], ["--help"], ["query", "--help"]])
def test_version_and_help_into_a_full_disk_or_a_closed_pipe_end_as_any_output_does(args):
    """The group's own --version and --help print while its options are parsed, before a command
    runs: a full disk there was a traceback, and a closed pipe exit 1."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "retrieval.cli", *args], stdout=full, stderr=subprocess.PIPE,
                              timeout=60)
    said = f"error: cannot write the output: {os.strerror(errno.ENOSPC)}\n"
    assert (proc.returncode, proc.stderr.decode()) == (1, said)
    reader, writer = os.pipe()
    os.close(reader)  # a reader gone before the first byte, as `| head -0` leaves it
    try:
        proc = subprocess.run([sys.executable, "-m", "retrieval.cli", *args], stdout=writer, stderr=subprocess.PIPE,
                              timeout=60)
    finally:
        os.close(writer)
    assert (proc.returncode, proc.stderr) == (0, b"")


@pytest.mark.parametrize("command", [["query", "config"], ["status"], ["serve", "--stop"], ["index"]])
def test_a_command_run_from_a_removed_directory_says_so(tmp_path, command):
    """`status` and `serve` said `error: [Errno 2] No such file or directory` (an audit)."""
    gone = tmp_path / "gone"
    gone.mkdir()
    proc = subprocess.run(["bash", "-c", 'cd "$1" && rmdir "$1" && shift && exec "$@"', "_", str(gone),
                           sys.executable, "-m", "retrieval.cli", *command],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr == "error: the current directory no longer exists (cd somewhere, or give --root)\n"


def test_running_out_of_memory_is_one_error_line(run, sample_repo, monkeypatch):
    def exhausted(*args, **kwargs):
        raise MemoryError  # what reading a file under `ulimit -v` raised, with a 30-line traceback

    monkeypatch.setattr(service, "refresh", exhausted)
    result = run("index", "--root", sample_repo, "--retriever", "lexical")
    assert (result.exit_code, result.stderr) == (1, "error: out of memory\n")


@pytest.mark.parametrize("where", ["import", "parse"])
def test_ctrl_c_before_the_command_runs_exits_130_without_a_traceback_or_aborted(where, monkeypatch, capsys):
    """Ctrl-C in a command's first 0.3 s (importing the CLI, parsing its options) printed a
    traceback, or click's "Aborted!" with exit 1 (a kill probe, 6 of 8 signal times)."""
    from retrieval import entry, streams
    from retrieval.shell import ShellGroup

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    if where == "import":
        monkeypatch.setattr(streams, "tolerant_output", interrupted)
    else:
        monkeypatch.setattr(ShellGroup.__mro__[1], "make_context", interrupted)
    monkeypatch.setattr(sys, "argv", ["retrieval", "index", "--root", "."])
    with pytest.raises(SystemExit) as exit_info:
        entry.main()
    assert exit_info.value.code == 130
    out, err = capsys.readouterr()
    assert out == "" and err == ""


def test_ctrl_c_exits_130_without_a_traceback(sample_repo):
    # The query is read from a stdin that never ends; SIGINT arrives while the command waits on it.
    code = (
        "import os, signal, sys, threading\n"
        # As in a shell's foreground job: a runner that started us in the background left SIGINT ignored.
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from retrieval.cli import main\n"
        # At the main thread: a process-directed signal sent from the timer thread may land on that
        # thread, leaving the main one blocked in read() (a real Ctrl-C meets a one-thread process).
        "threading.Timer(0.5, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT)).start()\n"
        f"sys.argv = ['retrieval', 'query', '-', '--root', {str(sample_repo)!r}]\n"
        "main()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        assert proc.wait(timeout=60) == 130
        assert proc.stderr.read() == b"" and proc.stdout.read() == b""
    finally:
        proc.stdin.close()


def test_sigterm_stops_a_command_as_ctrl_c_does_its_cleanup_run_and_exits_143(sample_repo, tmp_path):
    """`timeout` and CI runners send SIGTERM: the command's finally blocks must run, as for Ctrl-C."""
    marker = tmp_path / "cleaned-up"
    code = (
        "import os, signal, sys, threading, time\n"
        "from retrieval import service\n"
        "from retrieval.cli import main\n"
        "def slow(*args, **kwargs):\n"
        "    threading.Timer(0.3, signal.pthread_kill, (threading.main_thread().ident, signal.SIGTERM)).start()\n"
        "    try:\n"
        "        time.sleep(30)\n"
        "    finally:\n"
        f"        open({str(marker)!r}, 'w').write('done')\n"
        "service.refresh = slow\n"
        f"sys.argv = ['retrieval', 'index', '--retriever', 'lexical', '--root', {str(sample_repo)!r}]\n"
        "main()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert proc.returncode == 143
    assert proc.stderr == b"" and proc.stdout == b""
    assert marker.read_text() == "done"


@pytest.mark.parametrize("command", [["index"], ["query", "widget"]])
def test_a_first_build_off_a_terminal_prints_no_progress(run, wide_repo, monkeypatch, command):
    ticks = iter(range(10**9))
    monkeypatch.setattr(service.time, "monotonic", lambda: float(next(ticks)))  # every file is due a tick
    result = run(*command, "--root", wide_repo)
    assert result.exit_code == 0
    # No ticks; at most the one line per embedding retriever (installed extras, all-mode index)
    # saying that embedding started, and the note on how `query` uses a built hybrid index:
    # neither is a progress report.
    lines = [line for line in result.stderr.splitlines()
             if not line.startswith("note: `retrieval query` uses lexical unless told")
             and not re.match(r"[\w+, -]+: (skipped \(|not part of all \()", line)]  # all-mode's diagnostics
    assert "\r" not in result.stderr
    assert all(": embedding chunks no cache holds yet;" in line for line in lines)
    assert len(lines) == len({line.split(":")[0] for line in lines})
    assert result.stdout.startswith("lexical: indexed " if command == ["index"] else "pkg/")


def stderr_on_a_terminal(root, term: str) -> bytes:
    """What `index --retriever lexical` writes to a stderr that is a terminal of type `term`."""
    import pty

    code = ("import itertools, sys, time\n"
            "ticks = itertools.count()\n"
            "time.monotonic = lambda: float(next(ticks))  # every file is due a tick, however fast\n"
            "from retrieval.cli import main\n"
            f"sys.argv = ['retrieval', 'index', '--retriever', 'lexical', '--root', {str(root)!r}]\n"
            "main()\n")
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=follower,
                                env={**os.environ, "TERM": term})
    finally:
        os.close(follower)  # the child's copy is the only one left: its exit ends the reading below
    out = b""
    try:
        while True:  # read as it comes: a full terminal buffer would block the child
            try:
                data = os.read(leader, 1 << 16)
            except OSError:  # EIO: the terminal's other end closed, all of it read
                break
            if not data:
                break
            out += data
    finally:
        os.close(leader)
    assert proc.wait(timeout=120) == 0
    return out


def test_a_terminal_that_cannot_move_the_cursor_gets_no_progress_escapes(wide_repo, copy_tree):
    """TERM=dumb (an editor's shell buffer) shows `\\x1b[K` as text: progress is left out there, as
    colour is, while another terminal still gets its line rewritten in place."""
    assert b"\x1b[K" in stderr_on_a_terminal(copy_tree(wide_repo), "xterm")
    assert b"\x1b" not in stderr_on_a_terminal(wide_repo, "dumb")


def test_a_read_only_store_error_suggests_an_index_directory_elsewhere(run, sample_repo, monkeypatch):
    real = os.makedirs

    def refuse(path, *args, **kwargs):
        if ".retrieval" in str(path):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "makedirs", refuse)
    result = run("index", "--root", sample_repo)
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert "RETRIEVAL_INDEX_DIR=" in line and os.strerror(errno.EROFS) in line


def test_text_output_separates_hits_with_a_blank_line_when_lines_are_shown(run, sample_repo):
    rows = query_json(run, sample_repo, "config retries", "-k", "2", "--snippet-lines", "1")["results"]
    lines = run("query", "--root", sample_repo, "config retries", "-k", "2", "--snippet-lines", "1").stdout.splitlines()
    assert lines == [
        f"{rows[0]['path']}:{rows[0]['start_line']}-{rows[0]['end_line']}  {rows[0]['confidence']}",
        f"{rows[0]['snippet_start']:>6}│ {rows[0]['snippet'].rstrip()}",
        "",
        f"{rows[1]['path']}:{rows[1]['start_line']}-{rows[1]['end_line']}  {rows[1]['confidence']}",
        f"{rows[1]['snippet_start']:>6}│ {rows[1]['snippet'].rstrip()}",
    ]
    assert "\x1b[" not in "\n".join(lines)  # not a terminal: no colour


# -- --help and the README ---------------------------------------------------------------------------


def commands():
    return [(name, command) for name, command in main.commands.items()]


def test_every_option_of_every_command_has_a_description():
    missing = [f"{name} {param.opts[0]}" for name, command in commands() for param in command.params
               if isinstance(param, click.Option) and not param.hidden and not param.help]
    assert missing == []


def test_command_summaries_are_whole_phrases_and_the_top_help_has_examples(run):
    result = run("--help")
    assert result.exit_code == 0
    summaries = re.findall(r"^  (\w+)\s+(.+)$", result.stdout.split("Commands:")[1], flags=re.M)
    assert {name for name, _ in summaries} == set(main.commands)
    assert all(not s.endswith("...") for _, s in summaries), summaries
    assert result.stdout.count("retrieval query ") >= 2


def test_query_help_lists_the_retrievers_and_the_languages(run):
    help_text = " ".join(run("query", "--help").stdout.split())
    assert "[lexical" in help_text
    assert all(lang in help_text for lang in ("python", "typescript", "rust", "markdown"))


def test_the_readme_usage_block_lists_every_option():
    text = README.read_text(encoding="utf-8")
    block = text.split("## Use", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    missing = []
    for name, command in commands():
        if f"retrieval {name}" not in block:
            missing.append(name)
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                if not any(opt in block for opt in param.opts):
                    missing.append(f"{name} {param.opts[0]}")
    assert missing == []


CPP_HEADER = "#pragma once\nnamespace absl {\nclass Cord {\n public:\n  void Append(const Cord& src);\n};\n}\n"
C_HEADER = "#ifndef BUF_H\n#define BUF_H\nstruct buffer { char *data; };\nvoid Append(struct buffer *b);\n#endif\n"


OBJC_HEADER = "#import <Foundation/Foundation.h>\n\n@interface Cord : NSObject\n- (void)Append:(Cord *)src;\n@end\n"


def test_a_header_named_h_counts_as_the_language_its_text_is_written_in(run, make_tree):
    """`--lang cpp` on a C++ project whose headers end in `.h` left every header out; an
    Objective-C header was C, parsed by C's grammar (its `@interface` no class)."""
    root = make_tree({"absl/cord.h": CPP_HEADER, "lib/buf.h": C_HEADER, "absl/cord.cc": "void Append() {}\n",
                      "ios/Cord.h": OBJC_HEADER})
    paths = lambda lang: {r["path"] for r in query_json(run, root, "Append", "--lang", lang, "-k", "10")["results"]}
    assert paths("cpp") == {"absl/cord.h", "absl/cord.cc"}
    assert paths("c") == {"lib/buf.h"}
    assert paths("objc") == {"ios/Cord.h"}
    hits = {r["path"]: r["language"] for r in query_json(run, root, "Append", "-k", "10")["results"]}
    assert hits == {"absl/cord.h": "cpp", "lib/buf.h": "c", "absl/cord.cc": "cpp", "ios/Cord.h": "objc"}


MATLAB_FUNCTIONS = ("function y = smooth_signal(x, w)\n% SMOOTH_SIGNAL moving average\n  y = conv(x, ones(w,1)/w);\nend\n"
                    "\nfunction [a, b] = split_pair(p)\n  a = p(1); b = p(2);\nend\n")
OBJC_SOURCE = "#import \"Cord.h\"\n\n@implementation Cord\n- (void)smooth_signal {}\n@end\n"


def test_a_matlab_file_named_m_is_matlab_and_defines_its_functions(run, make_tree):
    """MATLAB's `.m` files were Objective-C: `--lang matlab` a usage error, `--lang objc` theirs,
    and `smooth_signal` defined nowhere (a caller ranked with its definition)."""
    root = make_tree({"signal_utils.m": MATLAB_FUNCTIONS, "caller.m": "x = rand(100,1);\ny = smooth_signal(x, 5);\n",
                      "ios/Cord.m": OBJC_SOURCE})
    hits = query_json(run, root, "smooth_signal", "-k", "10")["results"]
    assert {h["path"]: h["language"] for h in hits} == {"signal_utils.m": "matlab", "caller.m": "matlab",
                                                       "ios/Cord.m": "objc"}
    assert hits[0]["path"] == "signal_utils.m" and hits[0]["confidence"] == "high"
    assert {h["path"] for h in query_json(run, root, "smooth_signal", "--lang", "matlab")["results"]} == {
        "signal_utils.m", "caller.m"}
    from retrieval.lexical.features import defined_names

    assert defined_names(MATLAB_FUNCTIONS, "matlab") == {"smooth_signal", "split_pair"}


@pytest.mark.parametrize("fmt", [[], ["--json"], ["--jsonl"]])
def test_max_tokens_holds_for_what_is_printed_in_every_format(run, make_tree, fmt):
    """Priced as printed: JSON's field names and escapes, text's line numbers (it printed 644 tokens
    for a 400-token budget when only snippets were counted)."""
    files = {f"m{i}.py": "def budget_item():\n" + "".join(f'    value_{n} = "budget \\"{n}\\""\n' for n in range(30))
             for i in range(8)}
    root = make_tree(files)
    for budget in (120, 400, 900):
        result = run("query", "--root", root, "budget item", "--max-tokens", budget, "-k", "8", *fmt)
        assert result.exit_code == 0, result.stderr
        assert len(result.stdout) / 4 <= budget, (budget, len(result.stdout))


def test_hits_asked_for_that_do_not_fit_the_budget_are_counted_in_a_note(run, make_tree):
    """`-k 10 --max-tokens 300` printed one hit and no word of the nine left out."""
    files = {f"m{i}.py": "def budget_item():\n" + "".join(f"    value_{n} = {n}\n" for n in range(30)) for i in range(8)}
    root = make_tree(files)
    result = run("query", "--root", root, "budget item", "-k", "8", "--max-tokens", "300", "--json")
    shown = len(json.loads(result.stdout)["results"])
    assert 1 <= shown < 8
    assert f"note: {8 - shown} more hit{'s' * (8 - shown != 1)} did not fit in --max-tokens 300" in result.stderr
    assert json.loads(result.stdout)["notes"][0].startswith(f"{8 - shown} more hit")  # and on stdout, for an agent
    # Without -k, as many as fit was the question: nothing was left out of it.
    assert "did not fit" not in run("query", "--root", root, "budget item", "--max-tokens", "300").stderr


def test_notes_said_once_the_hits_are_fitted_stay_within_the_budget(run, make_tree):
    """--json carries the notes on files changed since indexing, scopes cut, hits left out: added
    after the hits were fitted, they took the output 5% over --max-tokens."""
    files = {f"m{i}.py": "def budget_item():\n" + "".join(f"    value_{n} = {n}\n" for n in range(30)) for i in range(8)}
    root = make_tree(files)
    assert run("index", "--root", root, "--retriever", "lexical").exit_code == 0
    for name in ("m0.py", "m1.py", "m2.py"):
        with open(os.path.join(root, name), "a") as fh:
            fh.write("# edited\n")
    for budget in (120, 150, 300, 600):
        result = run("query", "--root", root, "budget item", "-k", "8", "--max-tokens", budget, "--json", "--stale-ok")
        assert result.exit_code == 0, result.stderr
        assert len(result.stdout) / 4 <= budget, (budget, len(result.stdout))
    roomy = json.loads(run("query", "--root", root, "budget item", "-k", "3", "--max-tokens", 5000, "--json",
                           "--stale-ok").stdout)
    assert any("changed since indexing" in note for note in roomy["notes"])
    # One hit fitting: the cut is said on stdout too, the room taken from its lines (a quarter of 200 at most).
    one = run("query", "--root", root, "budget item", "-k", "5", "--max-tokens", 200, "--json")
    payload = json.loads(one.stdout)
    assert len(payload["results"]) == 1 and len(one.stdout) / 4 <= 200
    assert any(note.endswith("more hits did not fit in --max-tokens 200 (a larger budget, or fewer lines around "
                             "each hit, shows them)") for note in payload["notes"])


def test_a_pasted_report_is_echoed_cut_so_the_budget_goes_to_the_hits(run, make_tree):
    """A 9 KB bug report as the query with --max-tokens 2000 came back whole in the envelope, and
    with it one hit: the echo is cut to a tenth of the budget, and says so."""
    files = {f"m{i}.py": "def refresh_token():\n" + "".join(f"    step_{n} = {n}\n" for n in range(12))
             for i in range(30)}
    root = make_tree(files)
    report = "refresh token fails after expiry\n" + "Traceback line that says nothing useful\n" * 240
    result = run("query", "--root", root, report, "--json", "--max-tokens", 2000)
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert len(result.stdout) / 4 <= 2000
    assert payload["query_truncated"] is True
    assert payload["query"].endswith("\u2026") and report.startswith(payload["query"][:-1])
    assert len(payload["query"]) / 4 <= 200
    assert len(payload["results"]) >= 10
    # A short query is echoed as it was, with no flag; text and JSONL echo no query at all.
    short = json.loads(run("query", "--root", root, "refresh token", "--json", "--max-tokens", 2000).stdout)
    assert short["query"] == "refresh token" and "query_truncated" not in short
    whole = json.loads(run("query", "--root", root, report, "--json").stdout)
    assert whole["query"] == report and "query_truncated" not in whole  # without a budget: a report whole
    log = "refresh token fails\n" + "DEBUG worker 7 polled the queue and found nothing\n" * 20_000  # ~1 MB
    cut = json.loads(run("query", "--root", root, log, "--json").stdout)
    assert cut["query_truncated"] is True and log.startswith(cut["query"][:-1]) and len(cut["query"]) < 25_000


def test_a_query_is_echoed_whole_when_cutting_it_would_save_nothing(run, make_tree):
    """Under a small budget a six-word question came back as its head, an ellipsis and the
    "query_truncated" flag: more printed than the whole question, and the question lost."""
    root = make_tree({"auth.py": "def refresh_token():\n    return renew()\n"})
    question = "where is the refresh token renewed"
    for budget in (40, 60, 100):
        result = run("query", "--root", root, question, "--json", "--max-tokens", budget)
        assert result.exit_code == 0, result.stderr
        payload = json.loads(result.stdout)
        assert payload["query"] == question and "query_truncated" not in payload, budget


def test_an_expanded_hit_cut_to_fit_shows_its_own_lines_not_only_the_context(run, make_tree):
    body = "".join(f"    step_{n} = {n}\n" for n in range(20))
    root = make_tree({"a.py": "".join(f"filler_{n} = {n}\n\n" for n in range(60)) + "def atomic_write():\n" + body})
    (row,) = query_json(run, root, "atomic_write", "--expand", "40", "--max-tokens", "150", "-k", "1")["results"]
    assert row["start_line"] > 40 and row["truncated"] is True
    assert row["snippet_start"] == row["start_line"]
    lines = (root / "a.py").read_text().splitlines(keepends=True)
    assert row["snippet"] == "".join(lines[row["start_line"] - 1 : row["snippet_end"]])


def test_a_large_first_build_says_so_once_even_off_a_terminal(run, sample_repo, monkeypatch):
    """Progress shows only on a terminal: an agent's first query on a large repository was half a
    minute of silence on stderr."""
    from retrieval import service

    monkeypatch.setattr(service, "FIRST_BUILD_NOTE", 3)  # the sample stands for a large repository
    first = run("query", "--root", sample_repo, "config")
    assert first.exit_code == 0
    assert [line for line in first.stderr.splitlines() if "building the index of" in line] == [
        "lexical: building the index of 7 files (once: later runs re-read only what changed)"]
    assert "building" not in run("query", "--root", sample_repo, "config").stderr
    # A forced rebuild is no first build: it said "once: later runs re-read only what changed".
    forced = run("index", "--root", sample_repo, "--retriever", "lexical", "--force")
    assert [line for line in forced.stderr.splitlines() if "building the index of" in line] == [
        "lexical: rebuilding the index of 7 files"]


def test_an_index_directory_setting_that_names_a_file_is_said_as_such(run, sample_repo, tmp_path, monkeypatch):
    (tmp_path / "not-a-dir").write_text("")
    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "not-a-dir"))
    for command in (["query", "--root", sample_repo, "config"], ["index", "--root", sample_repo]):
        result = run(*command)
        assert result.exit_code == 1
        assert f"RETRIEVAL_INDEX_DIR={tmp_path / 'not-a-dir'} is not a directory" in result.stderr


@pytest.mark.parametrize("command", [["query", "config"], ["index"], ["status"], ["clean"]])
def test_a_relative_index_directory_setting_is_refused_by_every_command(run, sample_repo, monkeypatch, command):
    """`RETRIEVAL_INDEX_DIR=idx` was taken from the current directory: a command run from a
    subdirectory looked for the store elsewhere and built a second, full one."""
    run("index", "--root", sample_repo, "--retriever", "lexical")
    monkeypatch.chdir(sample_repo / "src")
    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", "idx")
    result = run(*command)
    assert result.exit_code == 1
    assert result.stderr == "error: RETRIEVAL_INDEX_DIR=idx is a relative path: it must be absolute (or unset it)\n"
    assert not (sample_repo / "src" / "idx").exists() and not (sample_repo / "idx").exists()
    assert (sample_repo / ".retrieval" / "lexical" / "manifest.json").exists()  # `clean` removed nothing


@pytest.mark.parametrize("command", [["query", "config"], ["index", "--retriever", "lexical"], ["status"]])
def test_an_index_directory_setting_whose_parent_is_missing_is_refused_not_made(run, sample_repo, tmp_path,
                                                                                monkeypatch, command):
    """`RETRIEVAL_INDEX_DIR=/nonexistent/deep` (a typo) made that tree of directories wherever it
    pointed; the directory itself is made, below one that exists."""
    missing = tmp_path / "typo" / "deep"
    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(missing))
    result = run(*command, "--root", sample_repo)
    assert result.exit_code == 1
    assert result.stderr == (f"error: RETRIEVAL_INDEX_DIR={missing} does not exist, nor does the directory above "
                             "it: create it (or unset the variable)\n")
    assert not (tmp_path / "typo").exists()
    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "idx"))  # the directory alone: made
    assert run("query", "config", "--root", sample_repo).exit_code == 0 and (tmp_path / "idx").is_dir()


def test_a_query_read_from_stdin_is_echoed_without_its_final_newline(run, sample_repo):
    result = run("query", "--root", sample_repo, "-", "--json", input="parse config\n")
    assert json.loads(result.stdout)["query"] == "parse config"


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16"])
def test_a_query_read_from_stdin_drops_the_byte_order_mark_a_windows_editor_saved_it_with(run, sample_repo, encoding):
    """`query - < report.txt` from Notepad: the mark stood first in the query (and in its JSON echo),
    and UTF-16 read as UTF-8 was a string of replacement characters and NULs."""
    result = run("query", "--root", sample_repo, "-", "--json", input="parse config\r\n".encode(encoding))
    payload = json.loads(result.stdout)
    assert payload["query"] == "parse config" and payload["results"]


@pytest.mark.parametrize("mark", [b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\xff\xfe\r\x00\n\x00"],
                         ids=["utf-8", "utf-16-le", "utf-16-be", "utf-16-le and a newline"])
def test_a_byte_order_mark_alone_on_stdin_is_an_empty_query(run, sample_repo, mark):
    """A UTF-16 mark alone was read as UTF-8: the query `\ufffd\ufffd`, no hits, exit 0."""
    result = run("query", "--root", sample_repo, "-", "--json", input=mark)
    assert result.exit_code == 2 and "the query is empty" in result.output and not result.stdout.strip()


@pytest.mark.parametrize("command", [["query", "alpha"], ["index"], ["status"], ["serve"], ["clean"], ["eval", "q.json"]])
def test_an_empty_root_is_a_usage_error_not_the_current_directory(run, sample_repo, command, monkeypatch):
    """`--root "$UNSET"` was the current directory: from a folder of repositories it indexed them all."""
    monkeypatch.chdir(sample_repo)
    result = run(*command, "--root", "")
    assert result.exit_code == 2 and "'--root': is empty" in result.output
    assert not (sample_repo / ".retrieval").exists()


@pytest.mark.parametrize("option", ["--lang", "--path"])
def test_an_empty_language_or_path_filter_is_a_usage_error_not_ignored(run, sample_repo, option):
    result = run("query", "--root", sample_repo, "config", option, "")
    assert result.exit_code == 2 and f"'{option}': is empty" in result.output


@pytest.mark.parametrize("option", ["--include", "--exclude", "--bm25"])
def test_an_empty_index_filter_is_a_usage_error_not_remembered(run, sample_repo, option):
    """`index --include "$UNSET"` indexed everything, remembered `--include ''` and said so on every
    later query; `--bm25 ''` was dropped without a word."""
    result = run("index", "--root", sample_repo, "--retriever", "lexical", option, "")
    assert result.exit_code == 2 and f"'{option}': is empty" in result.output
    assert lexical_status(run, sample_repo)["filters"] == {}


def test_index_says_the_remembered_filters_once_not_once_per_retriever(run, sample_repo, monkeypatch):
    monkeypatch.setattr(service, "available_retrievers", lambda: [("lexical", None)])  # and lexical+ctx, built
    assert run("index", "--root", sample_repo, "--retriever", "lexical", "--include", "src/**").exit_code == 0
    assert run("index", "--root", sample_repo, "--retriever", "lexical+ctx", "--include", "src/**",
               "--contextualizer", "offline").exit_code == 0
    result = run("index", "--root", sample_repo)
    assert result.exit_code == 0
    assert result.stderr.count("remembered filters --include 'src/**'") == 1, result.stderr


def test_index_into_a_closed_pipe_still_builds_every_retriever(run, sample_repo):
    """`retrieval index | head -1`: the closed pipe ended the command at its second line, exit 0,
    with the retrievers after it left stale."""
    assert run("index", "--root", sample_repo, "--retriever", "lexical+ctx", "--contextualizer", "offline").exit_code == 0
    (sample_repo / "src" / "app" / "added.py").write_text("def added_later():\n    return 1\n", encoding="utf-8")
    done = subprocess.Popen([sys.executable, "-m", "retrieval.cli", "index", "--root", str(sample_repo)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    done.stdout.close()  # the reader is gone before the first line
    assert done.wait(timeout=120) == 0, done.stderr.read()
    done.stderr.close()
    rows = json.loads(run("status", "--root", sample_repo, "--json").stdout)["retrievers"]
    assert {r["retriever"]: r["state"] for r in rows if r["retriever"] in ("lexical", "lexical+ctx")} == {
        "lexical": "ready", "lexical+ctx": "ready"}


def test_status_text_counts_one_file_in_the_singular(run, make_tree):
    root = make_tree({"only.py": "def alone():\n    return 1\n"})
    assert run("index", "--root", root, "--retriever", "lexical").exit_code == 0
    line = next(l for l in run("status", "--root", root).stdout.splitlines() if l.startswith("lexical:"))
    assert "1 file, 1 chunk," in line and "1 files" not in line


def test_a_dataset_over_the_limit_is_refused_in_one_line(run, sample_repo, tmp_path, monkeypatch):
    """`eval /dev/zero` grew until the kernel killed it."""
    from retrieval.evaluation import datasets

    monkeypatch.setattr(datasets, "MAX_DATASET_CHARS", 100)
    big = tmp_path / "big.jsonl"
    big.write_text('{"query": "config", "relevant": ["a.py"]}\n' * 10, encoding="utf-8")
    result = run("eval", str(big), "--root", sample_repo)
    assert result.exit_code == 1 and "big.jsonl: over 100 characters: not an evaluation dataset" in result.output


@pytest.mark.parametrize("module", ["retrieval", "retrieval.cli"])
def test_a_stdout_that_cannot_write_every_character_gets_escapes_not_a_traceback(make_tree, module):
    """PYTHONIOENCODING=latin-1 (or an ISO-8859 locale): a `✓` in a snippet was a UnicodeEncodeError."""
    root = make_tree({"a.py": 'def zqunicode():\n    return "\u2713 done \U0001f600"\n'})
    env = {**os.environ, "RETRIEVAL_NO_SERVER": "1", "PYTHONIOENCODING": "latin-1"}

    def query(*args):
        done = subprocess.run([sys.executable, "-m", module, "query", "zqunicode", "--root", str(root), *args],
                              capture_output=True, timeout=120, env=env)
        assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
        return done.stdout.decode("latin-1")

    text = query("--snippet-lines", "5")
    assert '     2|     return "\\u2713 done \\U0001f600"' in text.splitlines()
    # JSON is all ASCII there, and reads back as the file's exact text.
    (row,) = json.loads(query("--snippet-lines", "5", "--json"))["results"]
    assert row["snippet"] == 'def zqunicode():\n    return "\u2713 done \U0001f600"\n'


@pytest.mark.parametrize("command", ["index", "status", "clean", "serve", "mcp"])
def test_a_directory_given_as_an_argument_is_told_to_be_given_as_root(run, sample_repo, command):
    """`retrieval index ~/repo`, a newcomer's first try, said only "unexpected extra argument"."""
    result = run(command, str(sample_repo))
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (f"Error: Got unexpected extra argument ({sample_repo}): "
                                              f"a root is given as --root {sample_repo}")
    assert not (sample_repo / ".retrieval").exists()


def test_an_extra_argument_that_is_no_directory_or_follows_a_root_gets_click_s_own_error(run, sample_repo):
    for args in (["index", "nosuchdir"], ["index", "--root", str(sample_repo), str(sample_repo)]):
        result = run(*args)
        assert result.exit_code == 2 and result.stderr.splitlines()[-1].endswith(f"({args[-1]})")


def test_a_retriever_built_later_takes_the_filters_the_index_remembers(run, sample_repo):
    """The filters are the index's: `index --include 'src/**'`, then `index` once an extra was
    installed, built the new retriever over the whole tree under a note saying the filters applied,
    and `query --retriever all` mixed in hits from outside them. BM25's parameters stay lexical's."""
    assert run("index", "--root", sample_repo, "--retriever", "lexical", "--include", "src/**",
               "--exclude", "*cache*", "--bm25", "0.9,0.4").exit_code == 0
    later = run("index", "--root", sample_repo, "--retriever", "lexical+ctx", "--contextualizer", "offline")
    assert later.exit_code == 0, later.output
    assert "remembered filters --include 'src/**' --exclude '*cache*'" in later.stderr
    rows = {r["retriever"]: r for r in json.loads(run("status", "--root", sample_repo, "--json").stdout)["retrievers"]}
    assert rows["lexical+ctx"]["filters"] == {"include": ["src/**"], "exclude": ["*cache*"]}
    assert rows["lexical+ctx"]["files"] == rows["lexical"]["files"] < 6
    hits = json.loads(run("query", "--root", sample_repo, "--retriever", "lexical+ctx", "--json", "config").stdout)
    assert hits["results"] and all(h["path"].startswith("src/") for h in hits["results"])


def test_a_retriever_first_built_by_a_query_takes_the_remembered_filters_too(run, sample_repo):
    assert run("index", "--root", sample_repo, "--retriever", "lexical", "--include", "src/**").exit_code == 0
    report = service.refresh(str(sample_repo), "lexical+ctx")
    assert report.status == "indexed" and all(path.startswith("src/") for path in report.reprocessed)
    assert service.remembered_options(str(sample_repo), "lexical+ctx").include == ("src/**",)


def test_filters_reset_for_one_retriever_are_not_taken_back_from_another(run, sample_repo):
    assert run("index", "--root", sample_repo, "--retriever", "lexical", "--include", "src/**").exit_code == 0
    reset = run("index", "--root", sample_repo, "--retriever", "lexical+ctx", "--contextualizer", "offline",
                "--reset-filters")
    assert reset.exit_code == 0, reset.output
    rows = {r["retriever"]: r for r in json.loads(run("status", "--root", sample_repo, "--json").stdout)["retrievers"]}
    assert rows["lexical+ctx"]["filters"] == {} and rows["lexical+ctx"]["files"] == 6
    assert rows["lexical"]["filters"] == {"include": ["src/**"]}


@pytest.mark.parametrize("module", ["retrieval", "retrieval.cli"])
@pytest.mark.parametrize("command", [["query", "config"], ["status"]])
def test_a_command_started_with_stdout_closed_says_so_instead_of_succeeding_with_nothing(sample_repo, command, module):
    """`retrieval query x >&-` exited 0 with its results thrown away (as `cat`, `ls` and `echo` do,
    a write error is said; a reader gone, `| head -0`, is quiet, as above)."""
    proc = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-m", module, *command,
                           "--root", str(sample_repo)], stderr=subprocess.PIPE, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.decode().splitlines() == [
        f"error: `retrieval {command[0]}` prints its results on stdout, which is closed"]


def test_skill_started_with_stdout_closed_says_so_and_installs_as_asked(tmp_path):
    """Printing is all `retrieval skill` does: `>&-` exited 0 having printed nothing."""
    argv = ["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-m", "retrieval", "skill"]
    proc = subprocess.run(argv, stderr=subprocess.PIPE, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.decode().splitlines() == [
        "error: `retrieval skill` prints the skill file on stdout, which is closed (`--install` writes it to a file)"]
    proc = subprocess.run(argv + ["--install", str(tmp_path)], stderr=subprocess.PIPE, timeout=60)
    assert proc.returncode == 0 and (tmp_path / "SKILL.md").is_file()


def test_index_started_with_stdout_closed_still_builds_the_index(sample_repo):
    """Its work is the index; what it prints is a report."""
    proc = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-m", "retrieval", "index",
                           "--retriever", "lexical", "--root", str(sample_repo)], stderr=subprocess.PIPE, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (sample_repo / ".retrieval" / "lexical" / "manifest.json").is_file()


def test_a_query_read_from_a_terminal_says_how_to_end_it_once(sample_repo):
    """`retrieval query -` typed at a prompt sat waiting, saying nothing of what it waited for."""
    import pty
    import select
    import signal
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: stdin, stdout and stderr all the terminal
        os.execve(sys.executable, [sys.executable, "-m", "retrieval", "query", "-", "--root", str(sample_repo), "-k", "1"],
                  {**os.environ, "NO_COLOR": "1"})
    said = b""
    deadline = time.monotonic() + 60
    sent = False
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:  # the child is gone
                    break
                if not chunk:
                    break
                said += chunk
            if not sent and b"Ctrl-D" in said:
                os.write(fd, b"parse config\n\x04")
                sent = True
    finally:
        if not sent:  # it never said how to end the query: it would wait for one for ever
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    text = said.decode().replace("\r\n", "\n")
    assert text.count("reading the query from the terminal: end it with Ctrl-D") == 1
    assert "src/app/config.py:" in text.split("parse config", 1)[1]


def test_status_lists_the_files_the_index_leaves_out_and_why(run, make_tree):
    """Counts said `2 binary, 1 secret-name` and never which: "why is my file never found?" had no
    answer short of guessing at the rules."""
    root = make_tree({"main.py": "x = 1\n", "util.py": "y = 2\n", "blob.py": b"\x00\x01", ".gitignore": "gen.py\n", "gen.py": "x\n",
                      "secrets.yaml": "k: v\n", "node_modules/lib/index.js": "x\n", "big.py": "x = 1\n" * 300_000,
                      "stock.py": "# エラー：在庫が足りません。注文を確認してください\n".encode("shift_jis")})
    os.symlink(root / "main.py", root / "link.py")
    assert run("index", "--root", root, "--retriever", "lexical").exit_code == 0
    result = run("status", "--root", root, "--skipped")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == ["too-large\tbig.py", "binary\tblob.py", "ignored\tgen.py",
                                          "symlink\tlink.py", "excluded-dir\tnode_modules/",
                                          "secret-name\tsecrets.yaml", "invalid-utf8\tstock.py"]
    listed = json.loads(run("status", "--root", root, "--skipped", "--json").stdout)
    assert listed["root"] == str(root)
    assert {"path": "blob.py", "reason": "binary"} in listed["skipped"] and len(listed["skipped"]) == 7
    # With the index's own filters: a file an --exclude left out is listed as one ignored, and a
    # directory as the directory.
    assert run("index", "--root", root, "--retriever", "lexical", "--exclude", "main.py", "--exclude",
               "gen/").exit_code == 0
    (root / "gen").mkdir()
    (root / "gen" / "out.py").write_text("x = 1\n")
    listed = run("status", "--root", root, "--skipped")
    assert {"ignored\tmain.py", "ignored\tgen/"} <= set(listed.stdout.splitlines())
    assert "note: the lexical index is stale" in listed.stderr  # (gen/ is new: a refresh would look)
    # No index: said, since the files skipped when read are not known yet (and nothing else: "the
    # index leaves out no file" after it said so of an index there is not).
    bare = make_tree({"a.py": "x = 1\n"}, name="bare")
    said = run("status", "--root", bare, "--skipped").stderr
    assert "note: no index yet" in said and "leaves out no file" not in said
    assert run("index", "--root", bare, "--retriever", "lexical").exit_code == 0
    assert "note: the index leaves out no file" in run("status", "--root", bare, "--skipped").stderr


def test_an_index_remembering_a_glob_of_too_many_alternatives_says_how_to_drop_it(run, make_tree, rewrite):
    """An earlier version cut braces past 256 alternatives; remembered, the glob then failed every
    refresh as a damaged index (a review)."""
    from retrieval.store import layout

    root = make_tree({"parser.py": "def parse():\n    pass\n"})
    assert run("index", "--root", root, "--retriever", "lexical", "--include", "*.py").exit_code == 0
    path = layout.manifest_path(layout.store_dir(str(root)), "lexical")
    with open(path) as fh:
        manifest = json.load(fh)
    manifest["config"]["options"]["include"] = ["{" + ",".join(f"n{i}" for i in range(300)) + "}.py"]
    with open(path, "w") as fh:
        json.dump(manifest, fh)
    rewrite(root / "parser.py", "def parse():\n    return 1\n")
    result = run("index", "--root", root, "--retriever", "lexical")
    assert result.exit_code == 1 and "damaged" not in result.stderr
    assert "remembered --include/--exclude" in result.stderr and "--reset-filters" in result.stderr
    assert run("index", "--root", root, "--retriever", "lexical", "--reset-filters").exit_code == 0


def test_status_counts_the_files_of_types_it_never_reads_by_extension(run, make_tree):
    """`app.log` was never eligible, so never "skipped": `status --skipped` said the index left out
    no file while the one the user searched for was not in it."""
    root = make_tree({"main.py": "x = 1\n", "app.log": "token refresh failed\n", "old.log": "x\n",
                      "NOTES": "remember the token\n", "data.bin.bak": "x\n", ".gitignore": "ignored.log\n",
                      "ignored.log": "x\n",
                      # never counted: secret-looking names (no --include takes them), a worktree's `.git`
                      ".env": "A=1\n", "server.pem": "x\n", ".git": "gitdir: /elsewhere/.git/worktrees/x\n"})
    assert run("index", "--root", root, "--retriever", "lexical").exit_code == 0
    listed = run("status", "--root", root, "--skipped")
    assert listed.exit_code == 0 and listed.stdout == ""
    assert ("note: 4 files of types retrieval does not read, not listed: .log 2, (no extension) 1, .bak 1; "
            "`retrieval index --include GLOB`") in listed.stderr
    assert "leaves out no file" not in listed.stderr
    as_json = json.loads(run("status", "--root", root, "--skipped", "--json").stdout)
    assert as_json["other_types"] == {".log": 2, "": 1, ".bak": 1}
    # Files an --include leaves out were chosen away, not of an unread type.
    assert run("index", "--root", root, "--retriever", "lexical", "--include", "*.py").exit_code == 0
    assert json.loads(run("status", "--root", root, "--skipped", "--json").stdout)["other_types"] == {}


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="drops root's permission bypass")
def test_status_lists_a_file_no_refresh_could_read(run, make_tree):
    root = make_tree({"ok.py": "x = 1\n", "hid.py": "y = 1\n"})
    (root / "hid.py").chmod(0)
    drop = ["setpriv", "--inh-caps=-dac_override,-dac_read_search", "--bounding-set=-dac_override,-dac_read_search"]
    package = str(Path(service.__file__).resolve().parents[1])  # (this checkout's, run from elsewhere)
    env = {**os.environ, "RETRIEVAL_NO_SERVER": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [package, os.environ.get("PYTHONPATH")]))}
    for args in (["index", "--retriever", "lexical"], ["status", "--skipped"]):
        done = subprocess.run([*drop, sys.executable, "-m", "retrieval", *args, "--root", str(root)],
                              capture_output=True, text=True, timeout=120, env=env, cwd=str(root.parent))
    assert done.stdout.splitlines() == ["unreadable\thid.py"], done.stderr


def test_a_nul_byte_in_a_stdin_query_is_said_as_such_and_read_as_a_space(run, sample_repo):
    """`printf 'parse\x00config' | retrieval query -` was told its ASCII query was "not UTF-8"."""
    result = run("query", "--root", sample_repo, "-", "--json", input=b"parse\x00config")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["query"] == "parse config"
    assert "holds NUL bytes" in result.stderr and "not UTF-8" not in result.stderr


@pytest.mark.parametrize("option", [["--snippet-lines", "3"], ["--expand", "3"], ["--expand", "scope"]])
def test_paths_alone_with_lines_asked_for_is_a_usage_error(run, sample_repo, option):
    """`-l --snippet-lines 3` printed paths and dropped the lines without a word."""
    result = run("query", "--root", sample_repo, "config", "-l", *option)
    assert result.exit_code == 2 and "-l prints paths alone" in result.output and not result.stdout.strip()


def test_an_empty_answer_with_stale_ok_says_changed_files_were_not_looked_at(run, sample_repo):
    """A function saved after indexing, asked for with --stale-ok: "no indexed text contains a word",
    and nothing said that the index had not been checked."""
    assert run("index", "--root", sample_repo, "--retriever", "lexical").exit_code == 0
    (sample_repo / "late.py").write_text("def frobnicate_widget():\n    return 42\n")
    stale = run("query", "--root", sample_repo, "frobnicate_widget", "--stale-ok")
    assert not stale.stdout.strip() and "--stale-ok: files changed since indexing were not looked at" in stale.stderr
    fresh = run("query", "--root", sample_repo, "frobnicate_widget")
    assert fresh.stdout.startswith("late.py:") and "--stale-ok" not in fresh.stderr


def test_a_stale_ok_answer_without_lines_marks_the_hits_whose_file_changed_since_indexing(run, make_tree):
    """A file cut to 20 lines after indexing: --stale-ok printed its hit at lines 361-479, `high`,
    and nothing said the file had changed (only a snippet, read from the file, could tell)."""
    root = make_tree({"a.py": "".join(f"def f{i}():\n    return {i}\n\n" for i in range(200)),
                      "b.py": "def f150_helper():\n    return f150()\n"})
    assert run("index", "--root", root, "--retriever", "lexical").exit_code == 0
    (root / "a.py").write_text("def f0():\n    return 0\n")
    result = run("query", "--root", root, "f150", "--stale-ok", "--json")
    payload = json.loads(result.stdout)
    assert {h["path"]: h.get("stale", False) for h in payload["results"]} == {"a.py": True, "b.py": False}
    assert payload["notes"] == ["1 file changed since indexing (a.py); --stale-ok answered from the index as it was: "
                                "spans there may have moved (--snippet-lines N shows the current lines)"]
    rows = [json.loads(line) for line in run("query", "--root", root, "f150", "--stale-ok", "--jsonl").stdout.splitlines()]
    assert [row.get("stale", False) for row in rows] == [True, False]
    assert "1 file changed since indexing (a.py)" in run("query", "--root", root, "f150", "--stale-ok").stderr
    listed = run("query", "--root", root, "f150", "--stale-ok", "-l")  # (no spans, no lines to suggest there)
    assert "changed since indexing (a.py); --stale-ok answered from the index as it was\n" in listed.stderr
    listed = run("query", "--root", root, "f150", "--stale-ok", "-l", "--jsonl")  # (spans, no lines)
    assert "changed since indexing (a.py); --stale-ok answered from the index as it was: spans there may " \
           "have moved\n" in listed.stderr
    # By content, as a snippet tells it: b.py touched is as indexed; edited in place, keeping its
    # size and its time (`cp -p`, `rsync -t`), it is not.
    b = root / "b.py"
    os.utime(b)
    assert [row.get("stale", False) for row in json.loads(
        run("query", "--root", root, "f150", "--stale-ok", "--json").stdout)["results"]] == [True, False]
    st = b.stat()
    b.write_text(b.read_text().replace("return", "yield "))
    os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert [row.get("stale", False) for row in json.loads(
        run("query", "--root", root, "f150", "--stale-ok", "--json").stdout)["results"]] == [True, True]
    # Without --stale-ok the index is refreshed first: nothing is stale, nothing said.
    fresh = run("query", "--root", root, "f150", "--json")
    assert "stale" not in fresh.stdout and "changed since indexing" not in fresh.stderr


def test_a_stale_ok_answer_reads_each_hit_file_once_to_tell_whether_it_changed(run, make_tree, monkeypatch):
    from retrieval import snippets

    root = make_tree({"a.py": "".join(f"def handler_{i}(request):\n    return request\n\n" for i in range(300))})
    assert run("index", "--root", root, "--retriever", "lexical").exit_code == 0
    reads = []
    real = snippets._read_bytes
    monkeypatch.setattr(snippets, "_read_bytes", lambda *args, **kw: reads.append(args[1]) or real(*args, **kw))
    result = run("query", "--root", root, "handler request", "--stale-ok", "--json", "-k", "5")
    assert len(json.loads(result.stdout)["results"]) == 5 and reads == ["a.py"]


def test_a_query_building_lexical_ctx_says_its_contexts_are_offline_ones(run, sample_repo, monkeypatch):
    """With a key set, a query's build of lexical+ctx said nothing: its contexts read as the model's."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-unused")
    first = run("query", "--root", sample_repo, "config", "--retriever", "lexical+ctx")
    assert first.exit_code == 0 and "lexical+ctx was built with offline contexts" in first.stderr
    again = run("query", "--root", sample_repo, "config", "--retriever", "lexical+ctx")
    assert again.exit_code == 0 and "offline contexts" not in again.stderr
