"""The `retrieval` command: output formats, exit codes, and one-line errors."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

from retrieval import REGISTRY, service
from retrieval.lexical.segment import DiskSegment

HIT_KEYS = {"rank", "path", "start_line", "end_line", "score", "docid", "context", "confidence", "language", "kind",
            "symbol"}


def query_json(run, root, *args):
    result = run("query", "--root", root, "--json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def file_lines(path) -> list[str]:
    text = path.read_bytes().decode("utf-8")
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def assert_no_traceback(result):
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output


# -- query output ---------------------------------------------------------------------------------


def test_query_json_has_exactly_the_documented_schema(run, sample_repo):
    payload = query_json(run, sample_repo, "parse config file")
    assert set(payload) == {"query", "retriever", "results"}
    assert payload["query"] == "parse config file"
    assert payload["retriever"] == "lexical"
    results = payload["results"]
    assert results
    for row in results:
        assert set(row) == HIT_KEYS
        assert isinstance(row["score"], float)
        assert isinstance(row["start_line"], int) and isinstance(row["end_line"], int)
        assert row["docid"] == f"{row['path']}:{row['start_line']}-{row['end_line']}"
    assert [r["rank"] for r in results] == list(range(1, len(results) + 1))
    assert results[0]["path"] == "src/app/config.py"


def test_query_json_results_match_the_service(run, sample_repo):
    payload = query_json(run, sample_repo, "retries", "-k", "3")
    hits = service.search(str(sample_repo), "retries", top_k=3).hits
    assert [(r["path"], r["start_line"], r["end_line"]) for r in payload["results"]] == [
        (h.source_path, h.start_line, h.end_line) for h in hits
    ]
    assert [r["score"] for r in payload["results"]] == pytest.approx([h.score for h in hits], abs=1e-6)
    assert len(payload["results"]) == 3


SNIPPET_KEYS = {"snippet", "snippet_start", "snippet_end"}


def test_snippet_lines_adds_at_most_n_verbatim_lines_of_each_hit(run, sample_repo):
    payload = query_json(run, sample_repo, "parse config file", "--snippet-lines", "2")
    assert payload["results"]
    for row in payload["results"]:
        assert set(row) == HIT_KEYS | SNIPPET_KEYS
        lines = file_lines(sample_repo / row["path"])
        first, last = row["snippet_start"], row["snippet_end"]
        assert row["start_line"] <= first <= last <= row["end_line"]
        assert last - first + 1 == min(2, row["end_line"] - row["start_line"] + 1)
        assert row["snippet"] == "".join(lines[first - 1 : last])


def test_a_long_hit_shows_the_lines_holding_the_query_words_not_its_first(run, make_tree):
    """A chunk of lines often opens with the end of the definition before the one that matched:
    its first lines answered `--snippet-lines` with someone else's docstring."""
    before = "".join(f"    value_{i} = compute(value_{i - 1})  # step {i}\n" for i in range(1, 13))
    source = ("def prepare():\n" + before + "    return value_12\n"
              "def refresh_oauth_token(session):\n    token = session.refresh_token()\n"
              "    return token\n")
    root = make_tree({"auth.py": source})
    (row,) = query_json(run, root, "refresh oauth token", "--snippet-lines", "3")["results"]
    assert (row["start_line"], row["end_line"]) == (1, 17)  # one chunk: the hit's span is unchanged
    assert (row["snippet_start"], row["snippet_end"]) == (15, 17)
    assert row["snippet"].startswith("def refresh_oauth_token(session):")
    # A word on every line but the first: of the windows holding it as often, the earliest.
    (row,) = query_json(run, root, "compute", "--snippet-lines", "3")["results"]
    assert (row["snippet_start"], row["snippet_end"]) == (2, 4)


def test_a_bare_identifier_s_snippet_opens_at_the_line_defining_it(run, make_tree):
    """Lines using the name most (impls below a struct, a doc comment's examples above it) out-voted
    the one line an agent asking for `JoinHandle` wants: its definition, then its body."""
    doc = "".join(f"/// let h: JoinHandle<u8> = spawn_{i}(); // JoinHandle example\n" for i in range(6))
    source = (doc + "pub struct JoinHandle<T> {\n    raw: RawTask,\n    _p: PhantomData<T>,\n}\n\n"
              + "".join(f"impl<T> Marker{i} for JoinHandle<T> {{}}\n" for i in range(6)))
    root = make_tree({"join.rs": source})
    (row,) = query_json(run, root, "JoinHandle", "--snippet-lines", "4")["results"]
    assert row["snippet"].startswith("/// let h") and row["snippet_start"] == 6  # one line before it
    assert row["snippet"].splitlines()[1] == "pub struct JoinHandle<T> {"
    # Cut to a budget, the same line is kept (the words counted alone kept the impls).
    (row,) = query_json(run, root, "JoinHandle", "--max-tokens", "110")["results"]
    assert row["truncated"] is True and "pub struct JoinHandle<T> {" in row["snippet"]
    # A sentence is no bare identifier: its window is the words' own.
    (row,) = query_json(run, root, "JoinHandle marker", "--snippet-lines", "4")["results"]
    assert "pub struct" not in row["snippet"]


def test_a_snippet_is_the_verbatim_text_of_its_span_even_with_a_lone_carriage_return(run, make_tree):
    root = make_tree({"b.py": "# note\rmore\nx = zeta_value\n"})
    (row,) = query_json(run, root, "zeta_value", "--snippet-lines", "5")["results"]
    lines = file_lines(root / "b.py")
    assert row["snippet"] == "".join(lines[row["start_line"] - 1 : row["end_line"]])


def test_a_utf16_file_is_found_and_its_snippet_is_its_text(run, make_tree):
    root = make_tree({"Zebra.cs": "class Zebra { int zeta_stripes; }\n".encode("utf-16")})  # with its BOM
    (row,) = query_json(run, root, "zeta_stripes", "--snippet-lines", "5")["results"]
    assert row["snippet"] == "class Zebra { int zeta_stripes; }\n"


def test_a_minified_line_in_a_snippet_is_shortened_and_the_hit_says_so(run, make_tree):
    from retrieval.snippets import MAX_LINE_CHARS

    long_line = "var zeta_value=1;" * 1000  # 17,000 characters on one line
    root = make_tree({"app.js": "// header\n" + long_line + "\nlet after = 2;\n"})
    (row,) = query_json(run, root, "zeta_value", "--snippet-lines", "5", "--expand", "1")["results"]
    header, cut, after = row["snippet"].splitlines(keepends=True)
    assert header == "// header\n" and after == "let after = 2;\n"  # other lines verbatim
    assert cut == f"{long_line[:MAX_LINE_CHARS]} … ({len(long_line) - MAX_LINE_CHARS} more characters)\n"
    assert row["truncated"] is True and (row["snippet_start"], row["snippet_end"]) == (1, 3)
    text = run("query", "--root", root, "zeta_value", "--snippet-lines", "5").stdout
    assert "(long lines shortened)" in text.splitlines()[0] and len(text) < 2 * MAX_LINE_CHARS
    # A snippet of ordinary lines is not marked.
    assert "truncated" not in query_json(run, root, "after", "--snippet-lines", "5")["results"][0]


def test_a_line_barely_over_the_limit_is_shown_whole_as_saying_what_was_cut_would_take_more(run, make_tree):
    """A line of 1,001 characters came out as 1,022: its first 1,000 and ` … (1 more characters)`."""
    from retrieval.snippets import LINE_SLACK, MAX_LINE_CHARS

    whole, over = "x_" + "b" * (MAX_LINE_CHARS + LINE_SLACK - 2), "y_" + "b" * (MAX_LINE_CHARS + LINE_SLACK - 1)
    root = make_tree({"data.txt": f"needle one\n{whole}\n", "more.txt": f"needle two\n{over}\n"})
    rows = {r["path"]: r for r in query_json(run, root, "needle", "--expand", "1")["results"]}
    assert rows["data.txt"]["snippet"] == f"needle one\n{whole}\n" and "truncated" not in rows["data.txt"]
    assert rows["more.txt"]["snippet"].endswith(f" … ({LINE_SLACK + 1} more characters)\n")
    assert rows["more.txt"]["truncated"] is True


@pytest.mark.parametrize("shown", [["--snippet-lines", "5"], ["--expand", "0"], ["--expand", "2"],
                                   ["--max-tokens", "2000"]], ids=" ".join)
def test_a_minified_line_is_shortened_around_the_query_s_first_match_past_its_head(run, make_tree, shown):
    """However the snippet is asked for: with --expand or --max-tokens alone the line's first
    thousand characters were shown, the match 160,000 characters further on."""
    from retrieval.snippets import MAX_LINE_CHARS

    before, after = "var a=1;" * 20000, ";var b=2" * 500  # the match 160,000 characters in
    root = make_tree({"bundle.js": before + "function frobnicate_total(){return 3}" + after + "\n"})
    (row,) = query_json(run, root, "frobnicate_total", *shown)["results"]
    assert "frobnicate_total" in row["snippet"] and row["truncated"] is True
    at = len(before) + len("function ")
    assert row["snippet"].startswith(f"… ({at - MAX_LINE_CHARS // 4} characters before) ;var a=1;")
    assert row["snippet"].endswith(" more characters)\n") and len(row["snippet"]) < MAX_LINE_CHARS + 100


def test_a_long_line_is_shortened_around_the_identifier_the_query_names_not_a_part_of_it(run, make_tree):
    """`sendHeartbeat` 10,900 characters into a minified line: the window was centred on the first
    word holding `send`, in the line's head, and the identifier was not in it."""
    line = "function send(m){return m};" + "var a=1;" * 1360 + "function sendHeartbeat(){return 3};" + "var b=2;" * 400
    root = make_tree({"phoenix.min.js": line + "\n"})
    (row,) = query_json(run, root, "sendHeartbeat", "--snippet-lines", "1")["results"]
    assert "sendHeartbeat" in row["snippet"] and row["snippet"].startswith("… (")


def test_jsonl_prints_one_hit_object_per_line(run, sample_repo):
    result = run("query", "--root", sample_repo, "--jsonl", "config")
    assert result.exit_code == 0
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert rows == query_json(run, sample_repo, "config")["results"]
    assert all(set(r) == HIT_KEYS for r in rows)
    assert len(rows) > 1


def test_json_and_jsonl_together_are_a_usage_error(run, sample_repo):
    assert run("query", "--root", sample_repo, "--json", "--jsonl", "config").exit_code == 2


def test_text_mode_prints_path_colon_start_dash_end_and_confidence_per_hit(run, sample_repo):
    result = run("query", "--root", sample_repo, "config retries app", "-k", "4")
    assert result.exit_code == 0
    expected = [f"{r['path']}:{r['start_line']}-{r['end_line']}  {r['confidence']}"
                for r in query_json(run, sample_repo, "config retries app", "-k", "4")["results"]]
    assert result.stdout.splitlines() == expected
    assert len(expected) == 4


def test_text_mode_with_snippets_numbers_the_lines_under_its_hit(run, sample_repo):
    result = run("query", "--root", sample_repo, "LRUCache", "-k", "1", "--snippet-lines", "2")
    assert result.exit_code == 0
    header, *body = result.stdout.splitlines()
    assert header.startswith("src/app/cache.py:1-")
    assert body == ["     1│ class LRUCache:", "     2│     def __init__(self, capacity):"]


def test_a_dash_reads_the_query_from_stdin(run, sample_repo):
    result = run("query", "--root", sample_repo, "--json", "-", input="evict oldest\n")
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["query"].strip() == "evict oldest"
    assert payload["results"][0]["path"] == "src/app/cache.py"


def test_a_dash_with_other_words_is_a_usage_error_not_a_search_for_them(run, sample_repo):
    """`echo APIRouter | retrieval query - extra` searched for "- extra" and never read stdin."""
    for words in (("-", "extra"), ("extra", "-")):
        result = run("query", "--root", sample_repo, "--json", *words, input="evict oldest\n")
        assert result.exit_code == 2 and result.stdout == ""
        assert "'-' reads the query from stdin and takes no other words" in result.stderr
    # A dash among the words, or one starting a query given after `--`, is a word.
    assert run("query", "--root", sample_repo, "evict", "-", "oldest").exit_code == 0
    assert run("query", "--root", sample_repo, "--", "- evict oldest").exit_code == 0


@pytest.mark.parametrize(
    "flags, allowed",
    [
        (["--kind", "docs"], lambda r: r["path"] in {"README.md", "docs/guide.md"}),
        (["--kind", "config"], lambda r: r["path"] == "config/settings.toml"),
        (["--kind", "Config"], lambda r: r["path"] == "config/settings.toml"),  # as --lang GO is taken
        (["--lang", "toml"], lambda r: r["path"] == "config/settings.toml"),
        (["--lang", "markdown"], lambda r: r["path"].endswith(".md")),
        (["--path", "docs/*"], lambda r: r["path"].startswith("docs/")),
        (["--path", "src/**/http_*.py", "--path", "*.toml"],
         lambda r: r["path"] in {"src/app/http_client.py", "config/settings.toml"}),
    ],
)
def test_path_lang_and_kind_filters_apply_before_ranking(run, sample_repo, flags, allowed):
    everything = query_json(run, sample_repo, "retries config", "-k", "50")["results"]
    matching = [r for r in everything if allowed(r)]
    assert matching and len(matching) < len(everything)
    top = query_json(run, sample_repo, "retries config", "-k", "1", *flags)["results"]
    assert len(top) == 1
    assert allowed(top[0])
    assert top[0]["rank"] == 1


def test_json_carries_the_searchs_notes_for_a_reader_of_stdout_alone(run, sample_repo):
    """An agent reading only stdout took an empty list, or a typo's look-alike hits, for the answer."""
    import json

    typo = run("query", "--root", sample_repo, "--json", "parse_confg")
    (note,) = json.loads(typo.stdout)["notes"]
    assert note.endswith("did you mean `parse_config`?") and typo.stderr == f"note: {note}\n"
    empty = run("query", "--root", sample_repo, "--json", "zorblax")
    assert json.loads(empty.stdout) == {"query": "zorblax", "retriever": "lexical", "results": [],
                                        "notes": ["no hits: no indexed text contains a word of the query"]}
    assert "notes" not in json.loads(run("query", "--root", sample_repo, "--json", "parse_config").stdout)


def test_a_query_with_no_hits_exits_zero_with_empty_results_and_says_why_on_stderr(run, sample_repo):
    assert query_json(run, sample_repo, "xylophonequux")["results"] == []
    result = run("query", "--root", sample_repo, "xylophonequux")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == "note: no hits: no indexed text contains a word of the query\n"
    result = run("query", "--root", sample_repo, "import", "--min-confidence", "high")  # two medium hits
    assert (result.stdout, result.stderr) == ("", "note: no hits at or above --min-confidence high\n")
    # Words the index holds, but none worth searching for: said as such, not as absent.
    result = run("query", "--root", sample_repo, "for the", "if")
    assert (result.stdout, result.stderr) == (
        "", "note: no hits: every word of the query is too common to be searched for (for, the, if)\n")
    # Words never searched for (a single letter, as Go's `gin.H` is named): said, not "no text holds them".
    result = run("query", "--root", sample_repo, "H", "a")
    assert (result.stdout, result.stderr) == ("", "note: no hits: no word of the query is searched for (H, a): "
                                                  "single letters and the most common words are not indexed\n")
    result = run("query", "--root", sample_repo, "???")  # no word at all: not "no text contains one"
    assert (result.stdout, result.stderr) == (
        "", "note: no hits: the query has no word to search for (only punctuation or symbols)\n")


def test_a_query_of_only_common_words_finds_nothing_even_where_prose_reads_as_a_definition(run, make_tree):
    """A docstring line opening "function the ..." reads as defining `the`: the query `for the`
    found that file (README: such a query has no hits at all)."""
    root = make_tree({"a.py": '"""Loads fast, for a\nfunction the standard library builds in anyway."""\nX = 1\n',
                      "b.py": 'def helper():\n    """Return the value for the caller."""\n    return 2\n'})
    result = run("query", "--root", root, "for the")
    assert (result.exit_code, result.stdout) == (0, "")
    assert "every word of the query is too common" in result.stderr


def test_a_query_over_a_tree_with_nothing_indexable_says_so_instead_of_printing_nothing(run, make_tree):
    root = make_tree({"logo.png": b"\x89PNG\r\n\x1a\n\x00\x00", ".env": "TOKEN=abc\n"})
    result = run("query", "--root", root, "anything")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == (f"note: no hits: the index of {root} holds no file (nothing there is indexable "
                             "source, docs or config; binary, ignored and secret-looking files are skipped)\n")


def test_retrieval_retriever_sets_the_default_retriever_and_the_option_still_wins(run, sample_repo, monkeypatch):
    assert query_json(run, sample_repo, "config")["retriever"] == "lexical"
    monkeypatch.setenv("RETRIEVAL_RETRIEVER", "all")  # 'all' works without any extra
    assert query_json(run, sample_repo, "config")["retriever"] == "all"
    assert query_json(run, sample_repo, "--retriever", "lexical", "config")["retriever"] == "lexical"
    monkeypatch.setenv("RETRIEVAL_RETRIEVER", "nope")
    result = run("query", "--root", sample_repo, "config")
    assert result.exit_code == 2 and "RETRIEVAL_RETRIEVER" in result.stderr and "nope" in result.stderr


def test_a_bad_retriever_name_blames_the_environment_only_when_it_came_from_there(run, sample_repo, monkeypatch):
    monkeypatch.delenv("RETRIEVAL_RETRIEVER", raising=False)
    typed = run("query", "--root", sample_repo, "--retriever", "nope", "config")
    assert typed.exit_code == 2
    assert "Invalid value for '--retriever': unknown retriever 'nope'; choose one of" in typed.stderr
    assert "RETRIEVAL_RETRIEVER" not in typed.stderr
    monkeypatch.setenv("RETRIEVAL_RETRIEVER", "nope")
    inherited = run("query", "--root", sample_repo, "config")
    assert "Invalid value for '--retriever' (from RETRIEVAL_RETRIEVER): unknown retriever 'nope'" in inherited.stderr


# -- errors and exit codes ------------------------------------------------------------------------


def test_an_unknown_retriever_is_a_usage_error(run, sample_repo):
    result = run("query", "--root", sample_repo, "--retriever", "nope", "config")
    assert result.exit_code == 2
    assert "nope" in result.stderr
    assert run("index", "--root", sample_repo, "--retriever", "nope").exit_code == 2


@pytest.mark.parametrize("text, stdin", [("", None), ("   ", None), ("-", ""), ("-", "  \n")])
def test_an_empty_query_is_a_usage_error(run, sample_repo, text, stdin):
    result = run("query", "--root", sample_repo, text, input=stdin)
    assert result.exit_code == 2
    assert "empty" in result.stderr


# (`mcp` says it and answers every call with it until the root exists: tests/server/test_mcp.py)
@pytest.mark.parametrize("command", [["query", "config"], ["status"], ["index"], ["index", "--retriever", "all"],
                                     ["serve", "--detach"], ["clean"]])
@pytest.mark.parametrize("kind", ["missing", "file"])
def test_a_bad_root_exits_one_with_a_single_error_line(run, tmp_path, command, kind):
    root = tmp_path / "nope"
    if kind == "file":
        root = tmp_path / "file.py"
        root.write_text("x = 1\n")
    result = run(command[0], "--root", root, *command[1:])
    if "needs the mcp extra" in result.stderr:
        return  # the core's run: checked with the extra installed
    assert result.exit_code == 1, result.stderr
    assert_no_traceback(result)
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: ")
    assert str(root) in lines[0]
    # Every command alike: not one retriever's trouble (`error: lexical: ...`), not a usage error;
    # a mistyped path is not said to be "not a directory", as if something were there.
    what = "does not exist" if kind == "missing" else "is not a directory"
    assert lines[0] == f"error: root {what}: {root}"


def test_a_bad_root_in_a_real_process_prints_no_traceback(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "RETRIEVAL_INDEX_DIR"}
    proc = subprocess.run(
        [sys.executable, "-m", "retrieval.cli", "query", "--root", str(tmp_path / "nope"), "config"],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ")


def test_exceeding_the_total_size_cap_is_a_one_line_error(run, sample_repo, monkeypatch):
    monkeypatch.setenv("RETRIEVAL_MAX_TOTAL_BYTES", "100")
    result = run("index", "--root", sample_repo)
    assert result.exit_code == 1
    assert_no_traceback(result)
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ") and "RETRIEVAL_MAX_TOTAL_BYTES" in line


# -- index, status, clean -------------------------------------------------------------------------


def test_index_prints_one_line_per_retriever(run, sample_repo):
    result = run("index", "--root", sample_repo)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    said = [line for line in result.stderr.splitlines() if line.endswith(")") and not line.startswith("note:")]
    # Built on stdout; skipped with the reason on stderr (a diagnostic), as is a retriever `all`
    # never builds: each is named (those not installed together, in one line).
    assert sorted(name for line in lines + said for name in line.split(":")[0].split(", ")) == sorted(REGISTRY)
    assert all(": indexed " in line or ": up to date " in line for line in lines)
    (lexical,) = [line for line in lines if line.startswith("lexical:")]
    assert "indexed" in lexical and "6 files" in lexical
    again = run("index", "--root", sample_repo)
    assert [line for line in again.stdout.splitlines() if line.startswith("lexical:")][0].startswith(
        "lexical: up to date"
    )


def test_index_counts_empty_files_apart_so_its_two_file_counts_agree(run, make_tree):
    root = make_tree({"a.py": "alpha = 1\n", "b.py": "beta = 2\n", "__init__.py": "", "blank.txt": "\n\n"})
    result = run("index", "--root", root, "--retriever", "lexical")
    assert result.exit_code == 0, result.stderr
    # A first build: what it indexed is the whole index, said once.
    assert result.stdout.startswith("lexical: indexed 2 chunks from 2 files (and 2 empty) in ")
    (root / "c.py").write_text("gamma = 3\n")
    assert run("index", "--root", root, "--retriever", "lexical").stdout.startswith(
        "lexical: indexed 1 chunk from 1 file (3 chunks, 3 files in the index) in ")


def test_index_with_a_single_retriever_and_options(run, sample_repo):
    result = run("index", "--root", sample_repo, "--retriever", "lexical", "--include", "*.md",
                 "--max-file-bytes", "10000")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [result.stdout.splitlines()[0]]
    paths = {r["path"] for r in query_json(run, sample_repo, "app config retries", "-k", "50")["results"]}
    assert paths == {"README.md", "docs/guide.md"}


def test_index_reports_skipped_files_by_reason(run, make_tree):
    root = make_tree({"a.py": "alpha = 1\n", "blob.py": b"\x00\x01", "credentials.json": "{\"token\": 1}\n"})
    result = run("index", "--root", root)
    assert result.exit_code == 0
    assert "1 binary" in result.stdout and "1 secret-name" in result.stdout


def test_index_all_names_the_retrievers_it_never_builds_and_how_to_build_them(run, make_tree):
    root = make_tree({"a.py": "alpha = 1\n"})
    result = run("index", "--root", root, "--retriever", "all")
    assert result.exit_code == 0
    assert ("lexical+ctx: not part of all (build it on its own: retrieval index --retriever lexical+ctx)"
            in result.stderr)
    assert not os.path.exists(os.path.join(root, ".retrieval", "lexical+ctx"))
    again = run("index", "--root", root, "--retriever", "all")  # said once, at the first build
    assert again.exit_code == 0 and "not part of all" not in again.stderr


def test_index_all_keeps_a_contextual_index_built_on_request_current_without_asking_a_model(run, make_tree,
                                                                                            monkeypatch):
    """It was named 'not part of all (build it on its own)' though built, and left stale by every `index`."""
    from retrieval import service
    from retrieval.contextual import command

    root = make_tree({"a.py": "def alpha_value():\n    return 1\n"})
    service.refresh(str(root), "lexical+ctx")  # built on request (offline here)
    (root / "b.py").write_text("def beta_value():\n    return 2\n")
    asked = []
    monkeypatch.setattr(command, "refresh", lambda *args, **kwargs: asked.append(args))
    result = run("index", "--root", root, "--retriever", "all")
    assert result.exit_code == 0, result.stderr
    assert "lexical+ctx: indexed 1 chunk from 1 file" in result.stdout and "not part of all" not in result.stderr
    assert asked == []  # the model's path (contextual.command.refresh) is `index --retriever lexical+ctx` only
    (row,) = [row for row in service.status(str(root)) if row["retriever"] == "lexical+ctx"]
    assert row["state"] == "ready" and row["files"] == 2


def test_a_consolidated_query_says_how_to_build_the_missing_indexes_but_not_on_every_call_that_one_is_outside_all(
        run, make_tree):
    """Once lexical+ctx was built, every `query --retriever all` said it was left out: news to no
    one (all never takes it in; README and `index` say so), on every call and in every agent's answer."""
    from retrieval import service

    root = make_tree({"a.py": "def alpha_value():\n    return 1\n"})
    service.refresh(str(root), "lexical+ctx")  # built on request (offline here): never part of all
    result = run("query", "--root", root, "--retriever", "all", "alpha_value")
    assert result.exit_code == 0 and "a.py" in result.stdout
    assert "lexical+ctx" not in result.stderr
    for line in result.stderr.splitlines():
        if "not indexed; run `retrieval index" in line:  # the extras installed here but not built
            assert f"--root {root}`" in line, line


def test_a_consolidated_query_names_the_retrievers_not_installed_in_one_line_with_one_install_command(
        run, make_tree, monkeypatch):
    """A core-only installation printed four install commands, one per extra, on every query."""
    from retrieval.retrievers import base

    monkeypatch.setattr(base, "missing_modules", lambda extra: [f"{extra}_module"])  # every extra absent
    root = make_tree({"a.py": "def alpha_value():\n    return 1\n"})
    result = run("query", "--root", root, "--retriever", "all", "alpha_value")
    assert result.exit_code == 0 and "a.py" in result.stdout
    skipped = [line for line in result.stderr.splitlines() if "skipped" in line]
    assert len(skipped) == 1
    assert skipped[0].startswith("note: hybrid, pi-serini, treesitter, turbovec: skipped (not installed here: ")
    assert "[local,pyserini,treesitter,turbovec]" in skipped[0] and skipped[0].count("torch==") == 1


def test_an_include_written_with_backslashes_as_separators_is_refused_naming_the_glob_that_matches(run, make_tree):
    root = make_tree({"src/a.py": "alpha = 1\n", "b.py": "beta = 2\n"})
    result = run("index", "--root", root, "--retriever", "lexical", "--include", "src\\*.py")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: --include 'src\\*.py' matches no indexable file under {root}; nothing was changed "
        "(directories are separated by /: --include 'src/*.py')")


def test_an_exclude_that_leaves_no_file_beside_a_remembered_include_names_that_include(run, make_tree):
    """`index --exclude src/` after `--include 'src/**'`: the line blamed the exclude alone."""
    root = make_tree({"src/a.py": "alpha = 1\n", "b.py": "beta = 2\n"})
    assert run("index", "--root", root, "--retriever", "lexical", "--include", "src/**").exit_code == 0
    result = run("index", "--root", root, "--retriever", "lexical", "--exclude", "src/")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: --exclude src/ leaves no indexable file under {root} with the remembered --include 'src/**' "
        "(`--reset-filters` drops it); nothing was changed")


def test_an_include_that_matches_files_an_exclude_leaves_out_is_not_the_one_blamed(run, make_tree):
    """`--include '*.md' --exclude guide.md`, or an --include beside a remembered `--exclude docs/`:
    "--include '*.md' matches no indexable file", though it matched docs/guide.md."""
    root = make_tree({"docs/guide.md": "# Guide\n\nHow to start.\n", "src/a.py": "alpha = 1\n"})
    both = run("index", "--root", root, "--retriever", "lexical", "--include", "*.md", "--exclude", "guide.md")
    assert both.exit_code == 1
    assert both.stderr.strip().splitlines()[-1] == (
        f"error: --exclude guide.md leaves no indexable file under {root} that --include '*.md' matches; "
        "nothing was changed")
    assert run("index", "--root", root, "--retriever", "lexical", "--exclude", "docs/").exit_code == 0
    later = run("index", "--root", root, "--retriever", "lexical", "--include", "*.md")
    assert later.exit_code == 1
    assert later.stderr.strip().splitlines()[-1] == (
        f"error: the remembered --exclude docs/ leaves no indexable file under {root} that --include '*.md' "
        "matches (`--reset-filters` drops it); nothing was changed")
    # An include matching nothing at all is still the one named.
    alone = run("index", "--root", root, "--retriever", "lexical", "--include", "*.rst")
    assert alone.stderr.strip().splitlines()[-1] == (
        f"error: --include '*.rst' matches no indexable file under {root}; nothing was changed")


def test_a_size_limit_that_leaves_no_file_is_refused_and_the_index_is_kept(run, make_tree):
    """`--max-file-bytes 10` (meant as kilobytes) built an empty index and remembered the limit."""
    from retrieval import service

    root = make_tree({"src/a.py": "alpha = 1111111111\n", "b.py": "beta = 2222222222\n"})
    assert run("index", "--root", root, "--retriever", "lexical").exit_code == 0
    before = service.status(str(root))
    result = run("index", "--root", root, "--retriever", "lexical", "--max-file-bytes", "10")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: --max-file-bytes 10 leaves no indexable file under {root}: each is larger (the limit is in "
        "bytes); nothing was changed")
    assert service.status(str(root)) == before and service.remembered_options(str(root)).max_bytes is None
    assert run("index", "--root", root, "--retriever", "lexical", "--max-file-bytes", "19").exit_code == 0
    assert service.remembered_options(str(root)).max_bytes == 19  # one file fits: taken


@pytest.mark.parametrize("given, size", [("2M", 2_000_000), ("500k", 500_000), ("1.5MB", 1_500_000), ("1G", 10**9),
                                         ("4096", 4096), ("2MiB", 2 * 1024 * 1024), (" 2 M", 2_000_000)])
def test_a_size_limit_may_be_written_with_a_unit_as_the_help_writes_the_default(run, make_tree, given, size):
    """`--max-file-bytes 2M` was "'2M' is not a valid integer range", beside a help saying "1 MB"."""
    from retrieval import service

    root = make_tree({"a.py": "alpha = 1\n"})
    assert run("index", "--root", root, "--retriever", "lexical", "--max-file-bytes", given).exit_code == 0
    assert service.remembered_options(str(root)).max_bytes == size


@pytest.mark.parametrize("given", ["2X", "0", "-1M", "M", "", "1.5", "1e6", "1" + "0" * 400, "10000000000G",
                                   "\u0663"])  # (an Arabic-Indic 3: digits are ASCII ones)
def test_a_size_limit_that_is_no_size_is_a_usage_error(run, make_tree, given):
    result = run("index", "--root", make_tree({"a.py": "alpha = 1\n"}), "--max-file-bytes", given)
    assert result.exit_code == 2 and "is not a size in bytes" in result.stderr


@pytest.mark.parametrize("option, emptying, says, fine", [
    ("--include", "scr/**", "matches no indexable file", "src/**"),
    # `--exclude '*'` built an empty index and remembered it: every later query blamed the tree
    # ("the index holds no file (nothing there is indexable...)").
    ("--exclude", "*", "leaves no indexable file", "src/"),
    # Files it names that are binary by their bytes: the walk admitted them, and the build replaced
    # the index with an empty one, remembered.
    ("--include", "*.txt", "matches no indexable file", "src/**"),
])
def test_a_filter_that_leaves_no_file_is_refused_and_the_index_is_kept(run, make_tree, option, emptying, says, fine):
    from retrieval import service

    root = make_tree({"src/a.py": "alpha = 1\n", "b.py": "beta = 2\n", "blob.txt": b"\x00\x01\x02" * 50})
    assert run("index", "--root", root, "--retriever", "lexical").exit_code == 0
    before = service.status(str(root))
    result = run("index", "--root", root, "--retriever", "lexical", option, emptying)
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: {option} {shlex.quote(emptying)} {says} under {root}; nothing was changed")
    assert service.status(str(root)) == before  # the index, its files and its (absent) filters
    field = option.removeprefix("--")
    assert getattr(service.remembered_options(str(root)), field) == ()
    assert query_json(run, root, "alpha")["results"]
    kept = run("index", "--root", root, "--retriever", "lexical", option, fine)
    assert kept.exit_code == 0 and getattr(service.remembered_options(str(root)), field) == (fine,)
    if option == "--exclude":  # in an empty tree it is not the exclusion that leaves nothing
        empty = make_tree({}, name="empty")
        assert run("index", "--root", empty, "--retriever", "lexical", option, emptying).exit_code == 0


def test_index_with_a_per_file_cap_skips_bigger_files(run, make_tree):
    root = make_tree({"small.py": "tiny = 1\n", "big.py": "gigantic = 1\n" + "# pad\n" * 100})
    assert run("index", "--root", root, "--max-file-bytes", "100").exit_code == 0
    assert query_json(run, root, "gigantic")["results"] == []
    assert query_json(run, root, "tiny")["results"]


def test_index_force_rebuilds(run, sample_repo):
    run("index", "--root", sample_repo)
    result = run("index", "--root", sample_repo, "--force")
    assert result.exit_code == 0
    assert "indexed" in result.stdout


def test_index_reports_and_rebuilds_a_garbage_manifest(run, sample_repo):
    run("index", "--root", sample_repo)
    (sample_repo / ".retrieval" / "lexical" / "manifest.json").write_text("garbage{")
    result = run("index", "--root", sample_repo)
    assert result.exit_code == 0
    assert_no_traceback(result)
    assert "corrupt" in result.stderr and "rebuilding" in result.stderr
    assert result.stdout.startswith("lexical: indexed")
    assert query_json(run, sample_repo, "LRUCache")["results"][0]["path"] == "src/app/cache.py"


@pytest.mark.parametrize("damage", ["garbage", "truncated-segment"])
def test_a_damaged_index_rebuilt_by_a_query_is_said_in_a_note_line(run, sample_repo, damage):
    """"the lexical index is corrupt; rebuilding it" had no `note:` prefix: a script reading stderr
    for `^note:|^error:` missed it."""
    assert run("index", "--root", sample_repo, "--retriever", "lexical").exit_code == 0
    store = sample_repo / ".retrieval" / "lexical"
    if damage == "garbage":
        (store / "manifest.json").write_text("garbage{")
    else:
        (segment,) = [n for n in os.listdir(store) if n.startswith("seg-")]
        (store / segment / "docs.bin").write_bytes(b"\x01")
    result = run("query", "--root", sample_repo, "parse config")
    assert result.exit_code == 0, result.stderr
    said = [line for line in result.stderr.splitlines() if "rebuilding it" in line]
    assert said and all(line.startswith("note: the lexical index is ") for line in said), result.stderr


@pytest.mark.parametrize("damage", ["garbage", "old-schema", "truncated-segment"])
def test_query_over_a_damaged_store_rebuilds_it_and_answers_like_a_clean_build(run, sample_repo, copy_tree, damage):
    run("index", "--root", sample_repo)
    expected = query_json(run, copy_tree(sample_repo), "parse config retries", "-k", "20")["results"]
    store = sample_repo / ".retrieval" / "lexical"
    if damage == "garbage":
        (store / "manifest.json").write_bytes(b"\xff\x00{{")
    elif damage == "old-schema":
        manifest = json.loads((store / "manifest.json").read_text())
        manifest["schema"] = 0
        (store / "manifest.json").write_text(json.dumps(manifest))
    else:
        (segment,) = [n for n in os.listdir(store) if n.startswith("seg-")]
        (store / segment / "docs.bin").write_bytes(b"\x01")
    result = run("query", "--root", sample_repo, "--json", "parse config retries", "-k", "20")
    assert result.exit_code == 0, result.stderr
    assert_no_traceback(result)
    assert json.loads(result.stdout)["results"] == expected
    rows = json.loads(run("status", "--root", sample_repo, "--json").stdout)["retrievers"]
    assert [r["state"] for r in rows if r["retriever"] == "lexical"] == ["ready"]


@pytest.mark.parametrize("tree_changed", [False, True], ids=["unchanged-tree", "changed-tree"])
def test_index_reports_and_rebuilds_a_truncated_segment(run, sample_repo, rewrite, tree_changed):
    run("index", "--root", sample_repo)
    store = sample_repo / ".retrieval" / "lexical"
    (segment,) = [n for n in os.listdir(store) if n.startswith("seg-")]
    (store / segment / "post.bin").write_bytes(b"abc")
    if tree_changed:
        rewrite(sample_repo / "src/app/cache.py", "class LRUCache:\n    pass\n")
    result = run("index", "--root", sample_repo)
    assert result.exit_code == 0, result.stderr
    assert_no_traceback(result)
    assert "damaged" in result.stderr
    manifest = json.loads((store / "manifest.json").read_text())
    for seg in manifest["state"]["segments"]:
        DiskSegment(str(store / seg["name"]))  # raises CorruptSegment while damaged


def test_status_json_describes_each_retriever(run, sample_repo, rewrite):
    def status():
        result = run("status", "--root", sample_repo, "--json")
        assert result.exit_code == 0, result.stderr
        payload = json.loads(result.stdout)
        assert payload["root"] == str(sample_repo)
        return {row["retriever"]: row for row in payload["retrievers"]}

    assert status()["lexical"]["state"] == "missing"
    # What to do about it, as the text says it (a script read `"reason": null`).
    assert status()["lexical"]["reason"] == f"build it with `retrieval index --retriever lexical --root {sample_repo}`"
    run("index", "--root", sample_repo)
    row = status()["lexical"]
    assert {"retriever", "state", "files", "chunks", "tokens", "primary_language", "languages",
            "created", "store_bytes"} <= set(row)
    assert row["state"] == "ready"
    assert row["files"] == 6
    assert row["chunks"] >= 6
    assert row["tokens"] > 0
    assert row["primary_language"] == "python"
    assert row["languages"] == {"python": 3, "markdown": 2, "toml": 1}
    assert row["created"] and row["created"][:4].isdigit()
    assert row["store_bytes"] > 0
    rewrite(sample_repo / "src/app/config.py", "def parse_config():\n    return {}\n")
    assert status()["lexical"]["state"] == "stale"
    assert "the next query refreshes it" in status()["lexical"]["reason"]  # a state said without a word looked like a fault
    # A store that cannot be written is never refreshed: said so, not that the next query refreshes it.
    with pytest.MonkeyPatch.context() as patch:
        lexical_dir = os.path.join(str(sample_repo), ".retrieval", "lexical")
        patch.setattr(os, "access", lambda path, mode, *a, **k: not (path == lexical_dir and mode == os.W_OK))
        reason = status()["lexical"]["reason"]
    assert reason.startswith("files changed since its last refresh") and "next query" not in reason
    assert reason.endswith("the store is not writable, so queries answer from this snapshot "
                           "(RETRIEVAL_INDEX_DIR=/a/writable/directory keeps indexes elsewhere)")
    # Built by another version: no query answers from it (it was said they did from the snapshot).
    from retrieval import service

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "access", lambda path, mode, *a, **k: not (path == lexical_dir and mode == os.W_OK))
        patch.setattr(service, "_checked", lambda *args: (True, ""))
        reason = status()["lexical"]["reason"]
    assert reason.startswith("built by another version") and reason.endswith(
        "the store is not writable, so no query answers from it until it is rebuilt "
        "(RETRIEVAL_INDEX_DIR=/a/writable/directory keeps indexes elsewhere)")
    run("query", "--root", sample_repo, "config")
    assert status()["lexical"]["state"] == "ready" and status()["lexical"]["reason"] is None


def test_every_status_json_row_has_the_same_keys_whatever_its_retriever_or_state(run, sample_repo):
    """A script reads `row["reason"]` or `row["chunking"]` of any row: they were missing from the
    rows with nothing to say (reason: only unavailable, error and outdated rows had it; chunking only
    treesitter's)."""
    def rows():
        result = run("status", "--root", sample_repo, "--json")
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)["retrievers"]

    before = rows()
    run("index", "--root", sample_repo)
    after = rows()
    assert {row["state"] for row in after} >= {"ready", "missing"}  # lexical+ctx is not part of `index` (all)
    every = before + after
    assert all(set(row) == set(every[0]) for row in every), [sorted(row) for row in every]
    assert all(row["reason"] is None or isinstance(row["reason"], str) for row in every)
    assert all(isinstance(row["chunking"], dict) for row in every)
    lexical = next(row for row in after if row["retriever"] == "lexical")
    assert lexical["reason"] is None and lexical["chunking"] == {}


def test_status_text_has_one_line_per_retriever(run, sample_repo):
    run("index", "--root", sample_repo)
    result = run("status", "--root", sample_repo)
    assert result.exit_code == 0
    root_line, *lines = result.stdout.splitlines()
    assert root_line == f"root: {sample_repo} (given with --root)"
    assert len(lines) == len(REGISTRY)
    assert lines[0].startswith("lexical: ready, 6 files")
    # A retriever with nothing built says what to do, not a row of zeros.
    ctx = next(line for line in lines if line.startswith("lexical+ctx:"))
    # With its root: followed from another directory, the bare command indexed another tree.
    assert ctx == f"lexical+ctx: missing (build it with `retrieval index --retriever lexical+ctx --root {sample_repo}`)"


def test_status_names_the_process_writing_the_index_and_when_it_began(run, sample_repo):
    import json
    import os

    from retrieval.store import layout
    from retrieval.store.lock import WriterLock

    run("index", "--root", sample_repo)
    lock_file = os.path.join(layout.store_dir(str(sample_repo)), "lock")
    lock = WriterLock(lock_file)
    lock.acquire(timeout=0)  # what a first build holds while its rows still read `missing`
    try:
        data = json.loads(run("status", "--root", sample_repo, "--json").stdout)
        text = run("status", "--root", sample_repo).stdout.splitlines()
    finally:
        lock.release()
    assert data["writer"]["pid"] == os.getpid() and data["writer"]["since"].startswith("20")
    (line,) = [line for line in text if line.startswith("writer: ")]
    assert line.startswith(f"writer: process {os.getpid()} has been writing the index since ")
    assert json.loads(run("status", "--root", sample_repo, "--json").stdout)["writer"] is None


def test_status_during_a_first_build_says_it_is_under_way_not_to_build_one(run, sample_repo):
    import json
    import os

    from retrieval.store import layout
    from retrieval.store.lock import WriterLock

    store = layout.store_dir(str(sample_repo))
    os.makedirs(os.path.join(store, "lexical"))  # what a first build of lexical has made so far
    lock = WriterLock(os.path.join(store, "lock"))
    lock.acquire(timeout=0)  # what a first build holds before any retriever's manifest exists
    try:
        data = json.loads(run("status", "--root", sample_repo, "--json").stdout)
        text = run("status", "--root", sample_repo)
    finally:
        lock.release()
    rows = {row["retriever"]: row for row in data["retrievers"]}
    assert {row["state"] for row in rows.values()} <= {"missing", "unavailable"}
    # "build it with `retrieval index`" sent the user to wait on the lock of the build under way.
    said = f"not built yet; process {os.getpid()} is writing the store, perhaps building it"
    assert rows["lexical"]["reason"] == said and f"lexical: missing ({said})" in text.stdout
    # The others are not being built: what builds them, as ever.
    assert rows["lexical+ctx"]["reason"].startswith("build it with `retrieval index --retriever lexical+ctx")
    assert text.stderr == f"note: no index yet: process {os.getpid()} is building one; a query waits for it\n"
    after = json.loads(run("status", "--root", sample_repo, "--json").stdout)["retrievers"][0]
    assert after["reason"].startswith("build it with `retrieval index --retriever lexical")


def test_status_where_no_index_can_be_written_says_so_not_that_a_query_builds_one(run, sample_repo, monkeypatch,
                                                                                   tmp_path):
    """In a read-only checkout status said "the first `retrieval query` there does" build one; the
    query then failed with Permission denied."""
    import os

    assert "or the first `retrieval query` there does" in run("status", "--root", sample_repo).stderr
    real = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if str(path).startswith(str(sample_repo))
                        else real(path, mode, **kw))
    said = run("status", "--root", sample_repo).stderr
    assert said == (f"note: no index yet, and none can be written at {os.path.join(sample_repo, '.retrieval')}: "
                    "set RETRIEVAL_INDEX_DIR=/a/writable/directory to keep indexes elsewhere\n")
    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "indexes"))  # writable: built by a query there
    assert "or the first `retrieval query` there does" in run("status", "--root", sample_repo).stderr


def test_status_of_a_store_without_a_lock_file_creates_none(run, sample_repo):
    import json
    import os

    from retrieval.store import layout

    run("index", "--root", sample_repo)
    lock_file = os.path.join(layout.store_dir(str(sample_repo)), "lock")
    os.remove(lock_file)
    assert json.loads(run("status", "--root", sample_repo, "--json").stdout)["writer"] is None
    assert not os.path.exists(lock_file)


def test_status_text_of_an_unreadable_index_gives_the_reason_not_a_row_of_zeros(run, sample_repo):
    from retrieval.store import layout

    run("index", "--root", sample_repo)
    with open(layout.manifest_path(layout.store_dir(str(sample_repo)), "lexical"), "w", encoding="utf-8") as fh:
        fh.write('{"version": ')  # torn
    (line,) = [line for line in run("status", "--root", sample_repo).stdout.splitlines() if line.startswith("lexical:")]
    assert line.startswith("lexical: error (") and "0 files" not in line
    assert line.endswith("the next query or `retrieval index --retriever lexical` rebuilds it)")


def test_clean_removes_only_the_store(run, sample_repo):
    run("index", "--root", sample_repo)
    before = sorted(str(p.relative_to(sample_repo)) for p in sample_repo.rglob("*") if ".retrieval" not in p.parts)
    result = run("clean", "--root", sample_repo)
    assert result.exit_code == 0
    assert "removed" in result.stderr
    assert not (sample_repo / ".retrieval").exists()
    assert sorted(str(p.relative_to(sample_repo)) for p in sample_repo.rglob("*")) == before
    again = run("clean", "--root", sample_repo)
    assert again.exit_code == 0 and "no index" in again.stderr


def test_clean_refuses_a_store_directory_it_did_not_create(run, sample_repo):
    (sample_repo / ".retrieval").mkdir()
    (sample_repo / ".retrieval" / "notes.txt").write_text("keep me")
    result = run("clean", "--root", sample_repo)
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ")
    assert (sample_repo / ".retrieval" / "notes.txt").exists()


def test_clean_refuses_a_store_holding_files_put_there_since_it_was_built(run, sample_repo):
    """Notes a user put into `.retrieval/` after the index was built (a build refuses a directory
    holding them; a query of the store does not look) were removed with it."""
    run("index", "--root", sample_repo, "--retriever", "lexical")
    store = sample_repo / ".retrieval"
    (store / "mydir").mkdir()
    (store / "mydir" / "keep.txt").write_text("keep me")
    result = run("clean", "--root", sample_repo)
    assert result.exit_code == 1
    assert result.stderr == (f"error: refusing to remove {store}: it holds mydir, which retrieval did not write "
                             "(move that away, then clean again)\n")
    assert (store / "mydir" / "keep.txt").read_text() == "keep me" and (store / "lexical").is_dir()
    (store / "mydir" / "keep.txt").unlink()
    (store / "mydir").rmdir()
    assert run("clean", "--root", sample_repo).exit_code == 0 and not store.exists()


def test_version_and_help(run):
    assert run("--version").exit_code == 0
    result = run("--help")
    assert result.exit_code == 0
    for command in ("index", "query", "status", "clean"):
        assert command in result.stdout


# -- agent-facing output --------------------------------------------------------------------------


def test_files_mode_lists_each_file_once_with_its_best_span(run, make_tree):
    body = "".join(f"def widget_{i}():\n    return 'widget gadget {i}'\n\n\n" for i in range(60))
    root = make_tree({"a.py": body, "b.py": "def widget():\n    return 'widget'\n"})
    chunks = query_json(run, root, "widget gadget")["results"]
    assert len({r["path"] for r in chunks}) < len(chunks)  # several chunks of a.py match
    files = query_json(run, root, "widget gadget", "--files")["results"]
    assert [r["path"] for r in files] == list(dict.fromkeys(r["path"] for r in chunks))  # in chunk-rank order
    assert len(files) == len({r["path"] for r in files}) == 2
    assert [r["rank"] for r in files] == [1, 2]
    assert files[0]["start_line"] == chunks[0]["start_line"]


def test_files_mode_gives_top_k_distinct_files_for_a_pasted_report_too(run, make_tree):
    """A pasted report's answer holds several chunks of its best file: the first k hits named fewer
    than k files, and `--files -k 3` returned one."""
    body = "".join(f"def widget_{i}():\n    return 'widget gadget sprocket {i}'\n\n\n" for i in range(60))
    others = {f"m{i}.py": f"def helper_{i}():\n    return 'gadget'\n" for i in range(4)}
    filler = {f"z{i}.py": f"def unrelated_{i}():\n    return {i}\n" for i in range(20)}  # for the words' rarity
    root = make_tree({"a.py": body, **others, **filler})
    report = "widget gadget sprocket fails " + " ".join(f"word{i}" for i in range(40))  # 44 words
    chunks = query_json(run, root, report, "-k", "3")["results"]
    assert {r["path"] for r in chunks} == {"a.py"}
    files = query_json(run, root, report, "-k", "3", "--files")["results"]
    assert [r["path"] for r in files][0] == "a.py" and len({r["path"] for r in files}) == 3
    assert [r["rank"] for r in files] == [1, 2, 3]


def test_files_mode_checks_the_index_once_however_deep_it_asks(run, make_tree, monkeypatch):
    """Each deeper round of `--files` stat'ed every file of the tree again (0.2 s a round at 50,000
    files): one check per query is enough, the rounds ask the same snapshot."""
    body = "".join(f"def widget_{i}():\n    return 'widget gadget sprocket {i}'\n\n\n" for i in range(60))
    filler = {f"z{i}.py": f"def unrelated_{i}():\n    return 'gadget {i}'\n" for i in range(20)}
    root = make_tree({"a.py": body, **filler})
    report = "widget gadget sprocket fails " + " ".join(f"word{i}" for i in range(40))
    query_json(run, root, report, "-k", "3")  # builds the index
    checks, rounds = [], []
    is_current, search = service.is_current, service.search
    monkeypatch.setattr(service, "is_current", lambda *a, **k: checks.append(1) or is_current(*a, **k))
    monkeypatch.setattr(service, "search", lambda *a, **k: rounds.append(k["top_k"]) or search(*a, **k))
    files = query_json(run, root, report, "-k", "3", "--files")["results"]
    assert len({r["path"] for r in files}) == 3
    assert len(rounds) > 1  # a.py's chunks filled the first round
    assert len(checks) == 1


def printed_tokens(row: dict) -> int:
    """What a JSON result costs as --max-tokens prices it: four characters a token, and its separator."""
    return -(-len(json.dumps(row, ensure_ascii=False)) // 4) + 1


def test_max_tokens_returns_whole_hits_that_fit_the_budget(run, make_tree):
    files = {f"m{i}.py": "def budget_item():\n" + "    value = 'budget'\n" * 40 for i in range(6)}
    root = make_tree(files)
    everything = query_json(run, root, "budget item", "--snippet-lines", "1000")["results"]
    one_cost = printed_tokens(everything[0])  # as printed: fields and escapes count too
    envelope = printed_tokens({"query": "budget item", "retriever": "lexical", "results": []})
    limited = query_json(run, root, "budget item", "--max-tokens", str(envelope + one_cost * 2 + 5))["results"]
    assert len(limited) == 2
    assert all(r["snippet"] for r in limited)
    (first,) = query_json(run, root, "budget item", "--max-tokens", "5")["results"]
    assert first["truncated"] is True  # the best hit always comes back, cut to fit


def test_max_tokens_prices_the_stale_flag_of_an_answer_from_the_previous_snapshot(run, make_tree, monkeypatch):
    """`"stale": true` (another writer, a full disk) is printed too, so it is paid from the budget."""
    root = make_tree({f"m{i}.py": "def budget_item():\n" + "    value = 'budget'\n" * 40 for i in range(6)})
    query_json(run, root, "budget item")  # builds the index
    search = service.search

    def previous_snapshot(*args, **kwargs):
        result = search(*args, **kwargs)
        result.notes.append(f"lexical: {service.PREVIOUS_SNAPSHOT} (another process is refreshing it)")
        return result

    monkeypatch.setattr(service, "search", previous_snapshot)
    for budget in range(150, 600, 11):
        for form in ("--json", "--jsonl"):
            printed = run("query", "--root", root, form, "--max-tokens", budget, "budget item").stdout
            assert '"stale": true' in printed
            assert -(-len(printed.rstrip("\n")) // 4) <= budget, (form, budget)


def test_max_tokens_without_top_k_returns_as_many_hits_as_fit_not_the_default_ten(run, make_tree):
    root = make_tree({f"m{i:02d}.py": f"def budget_item_{i}():\n    return 'budget'\n" for i in range(15)})
    assert len(query_json(run, root, "budget item", "--max-tokens", "100000")["results"]) == 15
    assert len(query_json(run, root, "budget item", "--max-tokens", "100000", "--top-k", "3")["results"]) == 3
    assert len(query_json(run, root, "budget item")["results"]) == 10


def test_max_tokens_cuts_a_long_hit_to_its_lines_holding_the_query_s_words(run, make_tree):
    """The cut showed a long function's signature and docstring and none of the lines that matched."""
    body = "".join(f"    step_{i} = prepare({i})\n" for i in range(30))
    root = make_tree({"jobs.py": 'def run_jobs():\n    """Run every job."""\n' + body
                      + "    quokka = marsupial(step_1)\n    return quokka\n"})
    (whole,) = query_json(run, root, "quokka marsupial", "--snippet-lines", "1000")["results"]
    (row,) = query_json(run, root, "quokka marsupial", "--max-tokens", "150")["results"]
    assert row["truncated"] is True and whole["start_line"] < row["snippet_start"] <= row["snippet_end"] <= whole["end_line"]
    lines = file_lines(root / "jobs.py")
    assert row["snippet"] == "".join(lines[row["snippet_start"] - 1 : row["snippet_end"]])
    assert "quokka = marsupial" in row["snippet"]


# -- --expand --------------------------------------------------------------------------------------

@pytest.fixture
def long_repo(make_tree):
    # Blank lines split the file into chunks; the query words sit in the middle, first and last chunk.
    body = "".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(200))
    files = {
        "mid.py": body.replace("return 100\n", "return 'quokka marsupial'\n"),
        "first.py": "quokka_start = 1\n" + body,
        "last.py": body + "quokka_end = 2\n",
    }
    return make_tree(files)


def test_expand_adds_n_lines_around_each_hit_and_keeps_its_own_span(run, long_repo):
    plain = {r["path"]: r for r in query_json(run, long_repo, "quokka marsupial")["results"]}
    rows = query_json(run, long_repo, "quokka marsupial", "--expand", "3")["results"]
    assert rows and {r["path"] for r in rows} == set(plain)
    for row in rows:
        assert set(row) == HIT_KEYS | SNIPPET_KEYS
        own = plain[row["path"]]
        assert (row["start_line"], row["end_line"]) == (own["start_line"], own["end_line"])
        lines = file_lines(long_repo / row["path"])
        start, end = max(1, row["start_line"] - 3), min(len(lines), row["end_line"] + 3)
        assert (row["snippet_start"], row["snippet_end"]) == (start, end)
        assert row["snippet"] == "".join(lines[start - 1 : end])
    by_path = {r["path"]: r for r in rows}
    mid = by_path["mid.py"]
    assert mid["snippet_start"] == mid["start_line"] - 3 and mid["snippet_end"] == mid["end_line"] + 3
    assert by_path["first.py"]["snippet_start"] == 1  # clamped to the file
    assert by_path["last.py"]["snippet_end"] == len(file_lines(long_repo / "last.py"))


def test_expand_with_snippet_lines_shows_the_n_lines_of_the_expanded_span_holding_the_query(run, long_repo):
    (row,) = query_json(run, long_repo, "marsupial", "--expand", "3", "--snippet-lines", "2")["results"]
    lines = file_lines(long_repo / row["path"])
    first, last = row["snippet_start"], row["snippet_end"]
    assert row["start_line"] - 3 <= first and last == first + 1 and last <= row["end_line"] + 3
    assert "marsupial" in lines[first - 1] + lines[last - 1]
    assert row["snippet"] == "".join(lines[first - 1 : last])


def test_a_snippet_window_always_holds_a_line_of_its_hit_however_far_it_is_expanded(run, make_tree):
    """The query's words may be likelier in the lines --expand adds around a hit than in the hit:
    the window went there and showed none of the hit (and --max-tokens then cut to a line outside it)."""
    def filler(a, b):
        return "".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(a, b))

    dense = 'def notes():\n    """quokka marsupial quokka marsupial quokka"""\n    return 0\n\n\n'
    # The dense lines end one chunk; 33 lines below them, the next chunk's one mention.
    root = make_tree({"zoo.py": filler(0, 25) + dense + filler(25, 32) + "def g():\n    return 'quokka'\n\n\n"
                      + filler(32, 90)})
    # (a budget with room for a line of the first hit: at 60 tokens it showed none, and nothing was checked)
    for extra in ([], ["--max-tokens", "90"]):
        rows = query_json(run, root, "quokka marsupial", "-k", "5", "--expand", "40", "--snippet-lines", "2",
                          *extra)["results"]
        assert len(rows) >= 2 or extra
        for row in rows:
            assert row["snippet_start"] is not None, row
            assert row["snippet_start"] <= row["end_line"] and row["snippet_end"] >= row["start_line"], row


def test_text_mode_with_expand_numbers_the_expanded_lines_and_says_which_are_shown(run, long_repo):
    result = run("query", "--root", long_repo, "marsupial", "--expand", "1")
    assert result.exit_code == 0
    header, *body = result.stdout.splitlines()
    (row,) = query_json(run, long_repo, "marsupial")["results"]
    start, end = row["start_line"] - 1, row["end_line"] + 1
    assert header == f"mid.py:{row['start_line']}-{row['end_line']}  {row['confidence']}  (lines {start}-{end} shown)"
    lines = file_lines(long_repo / "mid.py")
    assert body == [f"{n:>6}│ {lines[n - 1].rstrip()}" for n in range(start, end + 1)]


def test_max_tokens_counts_the_expanded_snippets(run, make_tree):
    files = {f"m{i}.py": "\n" * 30 + "def budget_item():\n    return 'budget'\n" + "\n" * 30 for i in range(6)}
    root = make_tree(files)
    plain = query_json(run, root, "budget item", "--max-tokens", "600")["results"]
    expanded = query_json(run, root, "budget item", "--max-tokens", "600", "--expand", "100")["results"]
    assert len(plain) == 6
    assert all(r["snippet"].count("\n") == 62 for r in expanded)  # the whole file
    assert 0 < len(expanded) < len(plain)
    assert sum(printed_tokens(r) for r in expanded) <= 600


def test_a_file_grown_huge_since_indexing_is_not_read_for_its_snippet(run, make_tree, rewrite, monkeypatch):
    """A 400 MB log written over an indexed file cost 1.25 GB of memory to show two lines of it."""
    from retrieval import snippets

    root = make_tree({"app.py": "def marsupial():\n    pass\n"})
    assert run("index", "--root", root).exit_code == 0
    monkeypatch.setattr(snippets, "MAX_READ_BYTES", 1000)
    rewrite(root / "app.py", "def marsupial():\n    pass\n" + "# log line\n" * 200)
    result = run("query", "--root", root, "--json", "marsupial", "--stale-ok", "--expand", "0")
    (hit,) = json.loads(result.stdout)["results"]
    assert (hit["path"], hit["snippet"], hit["stale"]) == ("app.py", "", True)


def test_a_hit_in_a_file_deleted_since_indexing_is_not_said_to_show_its_current_lines(run, make_tree):
    """--stale-ok over a deleted file said its snippet showed "the current lines": it had none."""
    root = make_tree({"routes.py": "def marsupial():\n    pass\n", "keep.py": "def wombat():\n    pass\n"})
    assert run("index", "--root", root).exit_code == 0
    (root / "routes.py").unlink()
    result = run("query", "--root", root, "marsupial", "--stale-ok", "--snippet-lines", "2")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0].endswith("(file changed since indexing, not readable now)")
    assert [line for line in result.stderr.splitlines() if "since indexing" in line] == [
        "note: 1 file changed since indexing and not readable now (deleted, or too large to show) (routes.py): "
        "no lines to show"]


def test_the_note_naming_changed_files_escapes_what_a_terminal_would_obey(run, make_tree, rewrite):
    """A name holding an escape sequence cleared the screen; one holding a newline split the note."""
    name = "a\x1b[2Jb\nc.py"
    root = make_tree({name: "def marsupial():\n    pass\n"})
    assert run("index", "--root", root).exit_code == 0
    rewrite(root / name, "# moved\ndef marsupial():\n    pass\n")
    result = run("query", "--root", root, "marsupial", "--stale-ok", "--expand", "0")
    note = [line for line in result.stderr.splitlines() if "changed since indexing" in line]
    assert len(note) == 1 and "(a\\x1b[2Jb\\nc.py)" in note[0] and "\x1b" not in result.stderr


def test_the_note_naming_changed_files_names_only_those_of_the_hits_printed(run, make_tree, rewrite):
    """Under --max-tokens, the note named three changed files when the one hit printed was from one."""
    names = ["a.py", "b.py", "c.py"]
    root = make_tree({name: "def marsupial():\n    pass\n" + "# filler line\n" * 60 for name in names})
    assert run("index", "--root", root).exit_code == 0
    for name in names:
        rewrite(root / name, "# moved\n" + (root / name).read_text())
    result = run("query", "--root", root, "marsupial", "--stale-ok", "--json", "--max-tokens", "150")
    (hit,) = json.loads(result.stdout)["results"]
    assert f"note: 1 file changed since indexing ({hit['path']})" in result.stderr


def test_a_file_changed_since_indexing_gives_a_stale_snippet_of_its_current_lines(run, long_repo, rewrite, touch):
    (before,) = query_json(run, long_repo, "marsupial", "--expand", "1")["results"]
    touch(long_repo / "mid.py")  # a new mtime, the same bytes: not stale
    (same,) = query_json(run, long_repo, "marsupial", "--expand", "1", "--stale-ok")["results"]
    assert same == before
    text = (long_repo / "mid.py").read_text()
    rewrite(long_repo / "mid.py", "# a new first line\n" + text)
    result = run("query", "--root", long_repo, "--json", "marsupial", "--expand", "1", "--stale-ok")
    (row,) = json.loads(result.stdout)["results"]
    assert row["stale"] is True
    assert (row["start_line"], row["snippet_start"]) == (before["start_line"], before["snippet_start"])
    lines = file_lines(long_repo / "mid.py")
    assert row["snippet"] == "".join(lines[row["snippet_start"] - 1 : row["snippet_end"]])
    assert "changed since indexing (mid.py)" in result.stderr
    (fresh,) = query_json(run, long_repo, "marsupial", "--expand", "1")["results"]  # refreshes first
    assert "stale" not in fresh and "marsupial" in fresh["snippet"]


def test_an_edit_keeping_size_and_modification_time_still_gives_a_stale_snippet(run, long_repo):
    """`cp -p` or `rsync -t` of a same-size version, or two writes within a clock tick: the snippet
    was compared with the index by size and mtime only, and showed other lines as current."""
    path = long_repo / "mid.py"
    (before,) = query_json(run, long_repo, "marsupial", "--expand", "0")["results"]
    st = path.stat()
    lines = path.read_text().splitlines(keepends=True)
    hit = "".join(lines[before["start_line"] - 1 : before["end_line"]])
    path.write_text(path.read_text().replace("marsupial", "kangaroos"))  # as long
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size
    (row,) = query_json(run, long_repo, "marsupial", "--expand", "0", "--stale-ok")["results"]
    assert row["stale"] is True and row["snippet"] != hit


def test_a_vanished_file_gives_an_empty_stale_snippet(run, long_repo):
    query_json(run, long_repo, "marsupial")
    (long_repo / "mid.py").unlink()
    (row,) = query_json(run, long_repo, "marsupial", "--expand", "2", "--stale-ok")["results"]
    assert (row["snippet"], row["snippet_start"], row["snippet_end"], row["stale"]) == ("", None, None, True)


@pytest.mark.parametrize("flags", [["--dry-run"], ["--yes"], ["--max-chunks", "3"], ["--contextualizer", "offline"]])
def test_the_lexical_ctx_options_are_refused_for_any_other_retriever(run, sample_repo, flags):
    """Ignored, `index --dry-run` built every index for real."""
    for retriever in ("lexical", "all"):
        result = run("index", "--root", sample_repo, "--retriever", retriever, *flags)
        assert result.exit_code == 2
        assert f"{flags[0]} applies to --retriever lexical+ctx only" in result.stderr
    assert not (sample_repo / ".retrieval").exists()


def test_what_a_build_skipped_is_told_by_status_and_by_an_index_with_nothing_to_do(run, make_tree):
    """A first build done by `query` said nowhere that files were left out."""
    root = make_tree({"a.py": "alpha = 1\n", "blob.py": b"\x00\x01", "credentials.json": "{\"token\": 1}\n"})
    assert run("query", "--root", root, "alpha").exit_code == 0  # builds the index
    row = next(r for r in json.loads(run("status", "--root", root, "--json").stdout)["retrievers"]
               if r["retriever"] == "lexical")
    assert row["skipped"] == {"binary": 1, "secret-name": 1}
    assert "skipped: 1 binary, 1 secret-name" in run("status", "--root", root).stdout
    again = run("index", "--root", root, "--retriever", "lexical")
    assert again.stdout.startswith("lexical: up to date") and "(skipped: 1 binary, 1 secret-name)" in again.stdout


def test_an_escape_sequence_in_a_file_is_printed_visibly_not_stripped_or_obeyed(run, make_tree):
    root = make_tree({"a.py": 'BANNER = "\x1b[2J\x1b[31mwarning_banner_text"\n'})
    out = run("query", "--root", root, "warning banner text", "--snippet-lines", "1").stdout
    assert '\\x1b[2J\\x1b[31mwarning_banner_text' in out and "\x1b" not in out


def test_a_path_filter_written_from_a_subdirectory_or_absolute_is_taken_from_there(run, make_tree, monkeypatch):
    root = make_tree({"src/pkg/decorators.py": "def make_pass_decorator():\n    return 1\n",
                      "src/pkg/core.py": "def make_pass_decorator_use():\n    return make_pass_decorator()\n",
                      "README.md": "make pass decorator\n"})
    monkeypatch.chdir(root / "src" / "pkg")
    for glob in ("./decorators.py", str(root / "src" / "pkg" / "decorators.py"), "src/pkg/decorators.py"):
        payload = json.loads(run("query", "--root", root, "make_pass_decorator", "--path", glob, "--json").stdout)
        assert [h["path"] for h in payload["results"]] == ["src/pkg/decorators.py"], glob
    payload = json.loads(run("query", "--root", root, "make pass decorator", "--path", "../../README.md", "--json").stdout)
    assert [h["path"] for h in payload["results"]] == ["README.md"]


def test_a_path_filter_from_a_subdirectory_works_through_a_linked_root_and_as_a_dot(run, make_tree, monkeypatch):
    root = make_tree({"util.py": "def helper_util():\n    return 1\n", "src/util.py": "def helper_util():\n    return 2\n"})
    link = root.parent / "linked"
    link.symlink_to(root)
    monkeypatch.chdir(root / "src")
    for glob in ("./util.py", "."):
        payload = json.loads(run("query", "--root", link, "helper_util", "--path", glob, "--json").stdout)
        assert [h["path"] for h in payload["results"]] == ["src/util.py"], glob


def test_a_path_filter_names_a_route_directory_whose_name_is_in_brackets(run, make_tree, monkeypatch):
    root = make_tree({"app/[slug]/page.tsx": "export function renderSlugPage() { return 1 }\n",
                      "app/s/page.tsx": "export function renderSlugPage() { return 2 }\n",
                      "app/other/page.tsx": "export function renderSlugPage() { return 3 }\n"})
    payload = json.loads(run("query", "--root", root, "renderSlugPage", "--path", "app/[slug]/**", "--json").stdout)
    assert sorted(h["path"] for h in payload["results"]) == ["app/[slug]/page.tsx", "app/s/page.tsx"]
    monkeypatch.chdir(root / "app" / "[slug]")
    payload = json.loads(run("query", "--root", root, "renderSlugPage", "--path", "./page.tsx", "--json").stdout)
    assert [h["path"] for h in payload["results"]] == ["app/[slug]/page.tsx"]


def test_a_path_filter_naming_the_root_itself_keeps_every_hit(run, make_tree, monkeypatch):
    """`.` at the root, `..` from a directory below it, the root's absolute path: every file (as
    `./.` they named a file called `.`, and nothing came back)."""
    root = make_tree({"util.py": "def helper_util():\n    return 1\n", "src/util.py": "def helper_util():\n    return 2\n"})
    for where, glob in ((root, "."), (root, "./"), (root / "src", ".."), (root / "src", str(root))):
        monkeypatch.chdir(where)
        payload = json.loads(run("query", "--root", root, "helper_util", "--path", glob, "--json").stdout)
        assert sorted(h["path"] for h in payload["results"]) == ["src/util.py", "util.py"], (where, glob)


def test_a_path_filter_written_from_outside_the_root_is_taken_from_there_too(run, make_tree, monkeypatch):
    """From the directory holding the root (`--root repo`), `./repo/src/util.py` matched nothing and
    the note blamed the index; `.` there holds the whole root; `../../repo/util.py` from inside it
    leads out of the root and back in."""
    root = make_tree({"util.py": "def helper_util():\n    return 1\n", "src/util.py": "def helper_util():\n    return 2\n"},
                     name="repo")
    (root.parent / "side").mkdir()
    for where, glob, found in ((root.parent, "./repo/src/util.py", ["src/util.py"]),
                               (root.parent / "side", "../repo/src/", ["src/util.py"]),
                               (root.parent, ".", ["src/util.py", "util.py"]),
                               (root / "src", "../../repo/util.py", ["util.py"])):
        monkeypatch.chdir(where)
        result = run("query", "--root", root, "helper_util", "--path", glob, "--json")
        assert sorted(h["path"] for h in json.loads(result.stdout)["results"]) == found, (where, glob, result.stderr)
    monkeypatch.chdir(root.parent)
    result = run("query", "--root", root, "helper_util", "--path", "./side/util.py")
    assert result.stderr.startswith(f"note: --path {root.parent}/side/util.py is outside the root {root}: ")


def test_a_negated_directory_path_filter_leaves_out_the_files_below_it(run, make_tree):
    """`!tests/` leaves out tests/a.py as `tests/` keeps it, alone or after a glob matching the file."""
    root = make_tree({"src/route.py": "def route_table():\n    return 1\n",
                      "tests/test_route.py": "def test_route_table():\n    assert route_table()\n",
                      "src/gen/route_gen.py": "def route_table_gen():\n    return route_table()\n"})
    for globs in (["!tests/"], ["!tests"], ["*.py", "!tests/"], ["!/tests"], ["!tests/", "!src/gen"]):
        args = [a for g in globs for a in ("--path", g)]
        paths = {h["path"] for h in json.loads(run("query", "--root", root, "route table", *args, "--json").stdout)["results"]}
        assert "tests/test_route.py" not in paths and "src/route.py" in paths, globs
        assert ("src/gen/route_gen.py" in paths) == ("!src/gen" not in globs), globs
    # Taken back in the order written: a later glob keeps what an earlier one left out.
    payload = json.loads(run("query", "--root", root, "route table", "--path", "!src/", "--path", "src/gen/", "--json").stdout)
    assert [h["path"] for h in payload["results"]] == ["src/gen/route_gen.py"]


def test_a_path_filter_starting_with_a_hash_is_a_name_not_a_comment(run, make_tree):
    """Read as an ignore file's comment, `--path '#x'` was dropped and every hit came back."""
    root = make_tree({"#notes.md": "route table notes\n", "src/route.py": "def route_table():\n    return 1\n"})
    payload = json.loads(run("query", "--root", root, "route table", "--path", "#notes.md", "--json").stdout)
    assert [h["path"] for h in payload["results"]] == ["#notes.md"]
    result = run("query", "--root", root, "route table", "--path", "#nothing", "--json")
    assert json.loads(result.stdout)["results"] == [] and "no indexed file matches --path '#nothing'" in result.stderr


def test_path_filters_that_only_exclude_keep_everything_else(run, make_tree):
    root = make_tree({"src/route.py": "def route_table():\n    return 1\n",
                      "tests/test_route.py": "def test_route_table():\n    assert route_table()\n"})
    payload = json.loads(run("query", "--root", root, "route table", "--path", "!tests/**", "--json").stdout)
    assert [h["path"] for h in payload["results"]] == ["src/route.py"]
    assert run("index", "--root", root, "--include", "!tests/**", "--force").exit_code == 0
    payload = json.loads(run("query", "--root", root, "route table", "--json").stdout)
    assert [h["path"] for h in payload["results"]] == ["src/route.py"]


def test_status_of_a_root_named_with_a_newline_and_a_byte_that_is_not_utf8_stays_one_line_and_valid_json(tmp_path):
    root = os.path.join(os.fsencode(tmp_path), b"a\nb\xff")
    os.mkdir(root)
    with open(os.path.join(root, b"x.py"), "w") as fh:
        fh.write("def zqweird():\n    pass\n")
    env = dict(os.environ, RETRIEVAL_NO_SERVER="1", PYTHONIOENCODING="utf-8")
    command = [sys.executable, "-m", "retrieval.cli", "status", "--root", root]
    assert subprocess.run([sys.executable, "-m", "retrieval.cli", "index", "--root", root, "--retriever", "lexical"],
                          capture_output=True, env=env).returncode == 0
    text = subprocess.run(command, capture_output=True, env=env)
    first = text.stdout.decode("utf-8").splitlines()[0]
    assert first.startswith("root: ") and first.endswith("a\\nb\\xff (given with --root)"), first
    listing = subprocess.run([*command, "--json"], capture_output=True, env=env)
    payload = json.loads(listing.stdout.decode("utf-8"))  # strict UTF-8: no raw byte 0xff in it
    assert os.fsencode(payload["root"]) == root


def test_every_message_naming_a_root_or_glob_with_a_newline_stays_one_line(run, tmp_path):
    """A `status` row suggesting `index --root ...`, the refusal of an `--include`, a `--path` that
    matches nothing and `clean` all broke in two at the newline; an error was cut at it."""
    root = tmp_path / "a\nb"
    root.mkdir()
    (root / "x.py").write_text("def zqweird():\n    pass\n")
    assert run("index", "--root", root, "--retriever", "lexical").exit_code == 0
    rows = run("status", "--root", root).stdout.splitlines()
    assert all(row.startswith("root: ") or row.split(":")[0] in REGISTRY for row in rows), rows
    assert "--root $'" + str(tmp_path) + "/a\\nb'`" in "\n".join(rows)  # bash reads it back as the root
    refused = run("index", "--root", root, "--include", "no\nsuch.py")
    assert refused.exit_code == 1 and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert "--include $'no\\nsuch.py' matches no indexable file under " in refused.stderr
    unmatched = run("query", "--root", root, "zqweird", "--path", "no\nsuch.py")
    assert unmatched.stderr == "note: no indexed file matches --path $'no\\nsuch.py'\n"
    missing = run("query", "--root", root / "gone", "zqweird")
    assert missing.stderr == f"error: root does not exist: {tmp_path}/a\\nb/gone\n"
    cleaned = run("clean", "--root", root)
    assert cleaned.stderr == f"removed the index of {tmp_path}/a\\nb\n"


def test_json_lines_escape_the_line_separators_a_line_reader_would_cut_at(run, make_tree):
    root = make_tree({"a.py": "SEPARATORS = 'one\u2028two\u2029three\u0085four'  # separator_marker\n"})
    out = run("query", "--root", root, "separator_marker", "--jsonl", "--snippet-lines", "1").stdout
    assert len(out.splitlines()) == 1  # str.splitlines cuts at U+2028, U+2029 and U+0085 too
    assert json.loads(out)["snippet"] == "SEPARATORS = 'one\u2028two\u2029three\u0085four'  # separator_marker\n"


def test_a_file_holding_many_hits_is_read_once_for_all_their_snippets(run, make_tree, monkeypatch):
    """Each snippet re-read, hashed and split its whole file: 400 hits in three 1 MB files took 2 s."""
    from retrieval import snippets

    root = make_tree({"big.py": "".join(f"def plus_{i}(x):\n    return x + {i}  # big plus\n\n" for i in range(300)),
                      "small.py": "def plus_small(x):\n    return x  # big plus\n"})
    reads = []
    real = snippets._read_lines
    monkeypatch.setattr(snippets, "_read_lines", lambda root, path: reads.append(path) or real(root, path))
    rows = query_json(run, root, "big plus", "--top-k", "50", "--expand", "1")["results"]
    assert len({r["path"] for r in rows}) == 2 and len(rows) > 10
    assert sorted(reads) == ["big.py", "small.py"]
    lines = (root / "big.py").read_text().splitlines(keepends=True)
    assert all(r["snippet"] == "".join(lines[r["snippet_start"] - 1 : r["snippet_end"]]) for r in rows if r["path"] == "big.py")


def test_status_of_a_moved_tree_says_where_it_was_last_refreshed_not_that_files_changed(run, make_tree, tmp_path):
    import shutil

    root = make_tree({"a.py": "def zqmoved():\n    pass\n"})
    run("index", "--root", root, "--retriever", "lexical")
    moved = tmp_path / "elsewhere" / "moved"
    moved.parent.mkdir()
    shutil.move(str(root), str(moved))
    row = json.loads(run("status", "--root", moved, "--json").stdout)["retrievers"][0]
    assert row["state"] == "stale"
    assert row["reason"] == (f"last refreshed at {root} (the tree moved or was copied here); "
                             "the next query refreshes it")
