"""`retrieval eval` end to end on a tiny tree."""
from __future__ import annotations

import json
import os

import pytest

from click.testing import CliRunner

from retrieval.cli import main

FILES = {
    "pkg/alpha.py": "def frobnicate_widgets(x):\n    return x * 2\n",
    "pkg/beta.py": "class QuuxRegistry:\n    pass\n",
    "pkg/gamma.py": "def zebra_stripes():\n    return 'stripes'\n",
}


def _dataset(tmp_path, rows, name="ds.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_eval_json_numbers(make_tree, tmp_path):
    root = make_tree(FILES)
    ds = _dataset(tmp_path, [
        # Root is the repository: targets are relative to it.
        {"query": "frobnicate widgets", "relevant": ["pkg/alpha.py"], "category": "semantic"},
        {"query": "QuuxRegistry", "relevant": [{"path": "pkg/beta.py", "start_line": 1, "end_line": 2}],
         "category": "symbol"},
        # The target that exists is found at rank 1; the missing one is left out of n.
        {"query": "zebra stripes", "relevant": ["pkg/gamma.py"], "secondary": ["pkg/gone.py"], "category": "semantic"},
        {"query": "nothing here", "relevant": ["pkg/gone.py"], "category": "semantic"},
    ])
    result = CliRunner().invoke(main, ["eval", ds, "--root", str(root), "--retriever", "lexical", "--json", "--per-query"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["missing_targets"] == 2
    (run,) = data["runs"]
    assert run["retriever"] == "lexical" and run["index_status"] == "indexed"
    assert run["summary"]["ndcg"] == 1.0
    assert run["summary"]["queries"] == 3 and run["summary"]["unscored"] == 1
    assert run["by_category"]["symbol"]["ndcg"] == 1.0
    # MAP counts the query without a target (as 0) but the others still do not: it stays unscored
    # (MAP on made it `queries 4, unscored 0`, over the same NDCG of three)
    result = CliRunner().invoke(main, ["eval", ds, "--root", str(root), "--retriever", "lexical", "--json",
                                       "--metrics", "ndcg,files,map"])
    summary = json.loads(result.stdout)["runs"][0]["summary"]
    assert (summary["queries"], summary["unscored"], summary["ndcg"]) == (3, 1, 1.0) and summary["map"] < 1.0
    text = CliRunner().invoke(main, ["eval", ds, "--root", str(root), "--retriever", "lexical", "--metrics", "ndcg,map"])
    assert "1 query has no target in the tree and is not scored (but for MAP and P@30" in text.output
    assert [q["ranks"]["span"] for q in run["queries"]] == [[1], [1], [1], []]
    assert run["cold_query_seconds"] > 0 and run["warm_query_p50_seconds"] > 0
    # Every file is one two-line chunk: the lines an agent reads per hit.
    assert all(n == 2 for q in run["queries"] for n in q["lines"])
    assert run["hit_lines"]["first"] == 2.0 and run["hit_lines"]["top_k"] == 2.0


def test_a_category_without_a_scored_query_gets_no_row_of_dashes(make_tree, tmp_path):
    root = make_tree(FILES)
    ds = _dataset(tmp_path, [{"query": "frobnicate widgets", "relevant": ["pkg/alpha.py"], "category": "semantic"},
                             {"query": "QuuxRegistry", "relevant": ["pkg/beta.py"], "category": "symbol"},
                             {"query": "does not exist anywhere", "relevant": ["nope/missing.go"]}])
    text = CliRunner().invoke(main, ["eval", ds, "--root", str(root), "--retriever", "lexical"]).output
    rows = text.split("category")[1].splitlines()
    assert any(r.startswith("semantic") for r in rows) and any(r.startswith("symbol") for r in rows)
    assert not any(r.startswith("-") and "lexical" in r for r in rows)


def test_eval_text_table_and_subdirectory_root(make_tree, tmp_path):
    root = make_tree(FILES)
    # Index only pkg/ while the annotations name files from the repository root (as semble does).
    ds = _dataset(tmp_path, [{"query": "QuuxRegistry", "relevant": ["pkg/beta.py"], "category": "symbol"}])
    result = CliRunner().invoke(main, ["eval", ds, "--root", str(root / "pkg"), "-k", "5"])
    assert result.exit_code == 0, result.output
    header, rule, row = result.stdout.splitlines()[:3]
    assert header.split()[:4] == ["retriever", "NDCG@5", "RECALL@5", "MRR@5"]
    assert row.split()[:4] == ["lexical", "1.000", "1.000", "1.000"]


def test_eval_prose_dataset_reports_map(make_tree, tmp_path):
    root = make_tree({
        "CACM-0001.txt": "time sharing systems for computers\n",
        "CACM-0002.txt": "parsing of programming languages\n",
        "CACM-0003.txt": "time sharing and parsing\n",
    })
    ds = _dataset(tmp_path, [{"id": "1", "query": "time sharing", "relevant": ["CACM-0001", "CACM-0003"],
                              "category": "cacm"}])
    result = CliRunner().invoke(main, ["eval", ds, "--root", str(root), "-k", "100", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["runs"][0]["summary"]
    assert summary["map"] == 1.0  # both relevant documents outrank the third
    assert summary["p@30"] == 2 / 30


def _errors(result) -> str:
    """stderr without the line naming the registered retrievers not installed (and any other skip)."""
    return "".join(line for line in result.stderr.splitlines(keepends=True)
                   if not line.startswith("skipped ") and ": skipped (not installed here: " not in line)


def test_an_eval_error_names_a_dataset_or_root_with_a_newline_in_its_name_whole(make_tree, tmp_path):
    """The error is one line: it was cut at the newline, `error: bad`, or went on on a second."""
    root = make_tree(FILES, name="a\nroot")
    bad = tmp_path / "bad\nname.jsonl"
    bad.write_text("{nope\n")
    result = CliRunner().invoke(main, ["eval", str(bad), "--root", str(root)])
    assert result.exit_code == 1 and _errors(result).startswith("error: bad\\nname.jsonl:1: not valid JSON")
    result = CliRunner().invoke(main, ["eval", str(tmp_path / "no\nsuch.json"), "--root", str(root)])
    assert _errors(result) == f"error: cannot read the dataset {tmp_path}/no\\nsuch.json: No such file or directory\n"
    ds = _dataset(tmp_path, [{"query": "q", "relevant": ["not/here.py"]}])
    result = CliRunner().invoke(main, ["eval", ds, "--root", str(root), "--retriever", "lexical"])
    assert result.exit_code == 1 and _errors(result) == (
        "error: no query could be scored: none of the 1 queries has a target in the tree at "
        f"{tmp_path}/a\\nroot; is --root the dataset's tree?\n")


def test_eval_errors(make_tree, tmp_path):
    root = make_tree(FILES)
    runner = CliRunner()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{nope\n")
    result = runner.invoke(main, ["eval", str(bad), "--root", str(root)])
    assert result.exit_code == 1
    assert _errors(result).strip().splitlines() == [_errors(result).strip()]
    assert _errors(result).startswith("error: bad.jsonl:1: not valid JSON")
    result = runner.invoke(main, ["eval", str(tmp_path / "missing.json"), "--root", str(root)])
    assert result.exit_code == 1 and _errors(result).startswith("error: cannot read the dataset")
    # A directory was a usage error (exit 2) where a missing file is exit 1 (an audit).
    result = runner.invoke(main, ["eval", str(tmp_path), "--root", str(root)])
    assert result.exit_code == 1 and _errors(result).startswith("error: cannot read the dataset")
    ds = _dataset(tmp_path, [{"query": "q", "relevant": ["pkg/alpha.py"]}])
    result = runner.invoke(main, ["eval", ds, "--root", str(root), "--retriever", "nosuch"])
    assert result.exit_code == 2
    # A near miss is told the name it was meant to be, and `all` (the default) is among the choices.
    result = runner.invoke(main, ["eval", ds, "--root", str(root), "--retriever", "lexical,lexcal"])
    assert result.exit_code == 2 and "unknown retriever 'lexcal'; did you mean 'lexical'? (one of: all, " in result.stderr
    result = runner.invoke(main, ["eval", ds, "--root", str(root), "--metrics", "bogus"])
    assert result.exit_code == 2 and "unknown metric family 'bogus' (one of: " in result.stderr  # a usage error
    result = runner.invoke(main, ["eval", ds, "--root", str(root), "--metrics", "ndgc"])  # auto, the default, named
    assert result.exit_code == 2 and ("unknown metric family 'ndgc'; did you mean 'ndcg'? (one of: ndcg, files, map, "
                                      "comma separated; or auto alone)") in result.stderr
    result = runner.invoke(main, ["eval", ds, "--root", str(root), "--metrics", " , "])  # "$UNSET": not auto
    assert result.exit_code == 2 and "'--metrics': names no metric family" in result.stderr
    result = runner.invoke(main, ["eval", ds, "--root", str(tmp_path / "no-such-dir")])
    assert result.exit_code == 1 and _errors(result).startswith("error: ")


@pytest.mark.parametrize("content, message", [
    (b"\xff\xfe{}\n", "error: bad.jsonl: not UTF-8 text"),
    (b"[" * 100_000 + b"]" * 100_000, "error: bad.jsonl: not valid JSON"),
    (b'{"query": "q", "relevant": [{"path": "pkg/alpha.py", "start_line": true, "end_line": 2}]}\n',
     "error: bad.jsonl:1: target 'pkg/alpha.py' has a bad span"),
])
def test_a_dataset_that_is_not_what_it_should_be_is_one_error_line(make_tree, tmp_path, content, message):
    root = make_tree(FILES)
    (tmp_path / "bad.jsonl").write_bytes(content)
    result = CliRunner().invoke(main, ["eval", str(tmp_path / "bad.jsonl"), "--root", str(root)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    (line,) = _errors(result).strip().splitlines()
    assert line.startswith(message)


def test_a_dataset_with_a_byte_order_mark_is_read(make_tree, tmp_path):
    root = make_tree(FILES)
    ds = tmp_path / "bom.jsonl"
    ds.write_bytes(b"\xef\xbb\xbf" + json.dumps({"query": "QuuxRegistry", "relevant": ["pkg/beta.py"]}).encode() + b"\n")
    result = CliRunner().invoke(main, ["eval", str(ds), "--root", str(root), "--retriever", "lexical", "--json"])
    assert result.exit_code == 0, result.output


def test_eval_finds_its_root_as_query_does_and_takes_each_retriever_once(make_tree, tmp_path, monkeypatch):
    root = make_tree(FILES)
    ds = _dataset(tmp_path, [{"query": "QuuxRegistry", "relevant": ["pkg/beta.py"]}])
    assert CliRunner().invoke(main, ["index", "--root", str(root), "--retriever", "lexical"]).exit_code == 0
    monkeypatch.chdir(root / "pkg")  # below the indexed root: that index is used, no second one made
    result = CliRunner().invoke(main, ["eval", ds, "--retriever", "lexical,lexical", "--json"])
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.stdout)["runs"]
    assert run["retriever"] == "lexical" and run["index_status"] == "up to date"
    assert not (root / "pkg" / ".retrieval").exists()
    empty = CliRunner().invoke(main, ["eval", ds, "--retriever", " , "])
    assert empty.exit_code == 2 and "names no retriever" in empty.stderr


def test_uninstalled_retrievers_are_skipped_and_named(make_tree, tmp_path, monkeypatch):
    from retrieval.extras import EXTRAS
    from retrieval.retrievers.base import REGISTRY, RetrieverSpec

    monkeypatch.setitem(EXTRAS, "fancy", ("no_such_module_zz",))
    monkeypatch.setitem(REGISTRY, "fancy", RetrieverSpec("fancy", "nowhere:Nothing", extras=("fancy",)))
    root = make_tree(FILES)
    ds = _dataset(tmp_path, [{"query": "QuuxRegistry", "relevant": ["pkg/beta.py"]}])
    result = CliRunner().invoke(main, ["eval", ds, "--root", str(root), "--json"])
    assert result.exit_code == 0, result.output
    # (one line for every retriever whose extras are missing: with no extra installed, all of them)
    line = next(line for line in result.stderr.splitlines() if ": skipped (not installed here: " in line)
    assert "fancy" in line.split(": skipped")[0].split(", ") and "fancy" in line.rsplit("[", 1)[-1]
    data = json.loads(result.stdout)
    from retrieval.service import available_retrievers

    installed = [name for name, reason in available_retrievers() if not reason]  # lexical, and any extras
    consolidated = ["all"] if len(installed) > 1 else []  # query --retriever all's ranking, with two or more
    assert [r["retriever"] for r in data["runs"]] == installed + consolidated and "lexical" in installed
    assert "fancy" in data["skipped"]
    # Asked for alone, its reason is the one error line (it was "skipped", then "none installed").
    result = CliRunner().invoke(main, ["eval", ds, "--root", str(root), "--retriever", "fancy"])
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: the 'fancy' retriever needs no_such_module_zz")


@pytest.mark.extra("treesitter")
def test_eval_all_also_scores_the_consolidated_ranking_that_query_all_serves(make_tree, tmp_path):
    root = make_tree(FILES)
    ds = _dataset(tmp_path, [{"query": "frobnicate widgets", "relevant": ["pkg/alpha.py"]},
                             {"query": "QuuxRegistry", "relevant": ["pkg/beta.py"]}])
    result = CliRunner().invoke(main, ["eval", ds, "--root", str(root), "--json", "--per-query"])
    assert result.exit_code == 0, result.output
    runs = {r["retriever"]: r for r in json.loads(result.stdout)["runs"]}
    assert {"lexical", "treesitter", "all"} <= set(runs)
    assert list(runs)[-1] == "all"  # after the retrievers it consolidates
    assert runs["all"]["summary"]["ndcg"] == 1.0
    assert [q["hits"][0] for q in runs["all"]["queries"]] == ["pkg/alpha.py:1-2", "pkg/beta.py:1-2"]
    text = CliRunner().invoke(main, ["eval", ds, "--root", str(root)]).stdout
    assert any(line.split()[:1] == ["all"] for line in text.splitlines())
    # Its parts were built by their own rows: the `all` row built nothing, and says so.
    again = json.loads(CliRunner().invoke(main, ["eval", ds, "--root", str(root), "--json"]).stdout)
    (row,) = [r for r in again["runs"] if r["retriever"] == "all"]
    assert row["index_status"] == "up to date"


def test_eval_reports_how_far_the_headline_metric_could_move_on_other_queries(make_tree, tmp_path):
    root = make_tree(FILES)
    ds = _dataset(tmp_path, [{"query": "frobnicate widgets", "relevant": ["pkg/alpha.py"]},
                             {"query": "zebra stripes", "relevant": ["pkg/beta.py"]}])  # a miss
    result = CliRunner().invoke(main, ["eval", ds, "--root", str(root), "--retriever", "lexical", "--json"])
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.stdout)["runs"]
    assert run["interval"]["metric"] == "ndcg"
    assert run["interval"]["low"] == 0.0 and run["interval"]["high"] == 1.0 and run["summary"]["ndcg"] == 0.5
    text = CliRunner().invoke(main, ["eval", ds, "--root", str(root), "--retriever", "lexical"]).stdout
    assert "NDCG@10 95% interval" in text and "lexical  " in text and "0.000-1.000" in text


def test_eval_json_stays_strict_json_when_no_query_is_scored_and_the_run_fails(make_tree, tmp_path):
    """A run that scored nothing (a dataset for another checkout, a wrong --root) reports what it
    saw, then exits 1: a CI step comparing retrievers passed on it."""
    root = make_tree(FILES)
    ds = _dataset(tmp_path, [{"query": "nothing here", "relevant": ["pkg/gone.py"]}])
    result = CliRunner().invoke(main, ["eval", ds, "--root", str(root), "--retriever", "lexical", "--json"])
    assert result.exit_code == 1, result.output
    (run,) = json.loads(result.stdout, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))["runs"]
    assert run["interval"] == {"metric": "ndcg", "low": None, "high": None}
    assert result.stderr.strip().splitlines()[-1].startswith("error: no query could be scored: none of the 1 queries")


def test_map_and_p_at_30_do_not_move_with_k_or_the_other_metric_families(make_tree, tmp_path):
    root = make_tree({f"doc{n:02d}.py": f"widget = {n}\n" + "filler line\n" * n for n in range(40)})
    ds = _dataset(tmp_path, [{"query": "widget", "relevant": [f"doc{n:02d}.py" for n in range(0, 40, 2)]}])

    def numbers(*args):
        result = CliRunner().invoke(main, ["eval", ds, "--root", str(root), "--json", *args])
        assert result.exit_code == 0, result.output
        summary = json.loads(result.stdout)["runs"][0]["summary"]
        return summary["map"], summary["p@30"]

    alone = numbers("--metrics", "map")
    assert alone == numbers("--metrics", "files,map") == numbers("--metrics", "map", "-k", "30")
    assert alone[1] > 10 / 30  # the list covers 30 files, not k = 10


def test_eval_refuses_a_home_directory_that_only_the_current_directory_chose(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text("widget = 1\n")
    ds = _dataset(tmp_path, [{"query": "widget", "relevant": ["a.py"]}])
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["eval", ds])
    assert result.exit_code == 1 and "is your home directory, not a project" in result.stderr
    assert not (tmp_path / ".retrieval").exists()


def test_a_query_with_a_lone_surrogate_is_printed_per_query_without_a_traceback(make_tree, tmp_path):
    root = make_tree(FILES)
    path = tmp_path / "sur.jsonl"
    path.write_text('{"query": "zebra \\ud800 stripes", "relevant": ["pkg/gamma.py"]}\n')
    for fmt in ([], ["--json"]):
        result = CliRunner().invoke(main, ["eval", str(path), "--root", str(root), "--per-query", *fmt])
        assert result.exit_code == 0, result.output
        assert "zebra \ufffd stripes" in result.stdout


def test_when_every_retriever_asked_for_fails_to_start_the_run_fails_with_their_reasons(make_tree, tmp_path,
                                                                                       monkeypatch):
    """Two retrievers that could not start (their model gone) were each skipped, and the command
    printed an empty table and exited 0: a CI step comparing them passed on nothing measured."""
    from retrieval import service

    def gone(root, name, **kwargs):
        raise RuntimeError(f"the {name} model is gone")

    monkeypatch.setattr(service, "refresh", gone)
    root = make_tree(FILES)
    ds = _dataset(tmp_path, [{"query": "QuuxRegistry", "relevant": ["pkg/beta.py"]}])
    for fmt in ([], ["--json"]):
        result = CliRunner().invoke(main, ["eval", ds, "--root", str(root), "--retriever", "lexical,lexical+ctx", *fmt])
        assert (result.exit_code, result.stdout) == (1, "")
        assert result.stderr.splitlines() == ["skipped lexical: the lexical model is gone",
                                              "skipped lexical+ctx: the lexical+ctx model is gone",
                                              "error: none of the retrievers asked for could run here"]


def test_eval_json_of_a_root_whose_name_is_not_utf8_is_valid_utf8(make_tree, tmp_path):
    root = make_tree(FILES, name=os.fsdecode(b"repo\xff"))
    ds = _dataset(tmp_path, [{"query": "QuuxRegistry", "relevant": ["pkg/beta.py"]}])
    result = CliRunner().invoke(main, ["eval", ds, "--root", str(root), "--retriever", "lexical", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout_bytes.decode("utf-8"))  # strict UTF-8: no raw byte 0xff in it
    assert os.fsencode(payload["root"]) == os.fsencode(root)


def test_the_note_on_what_was_not_scored_counts_in_words_that_agree(make_tree, tmp_path):
    """`1 targets are not in the tree`, `1 queries have no target`: one of each reads singular."""
    root = make_tree(FILES)
    ds = _dataset(tmp_path, [{"query": "QuuxRegistry", "relevant": ["pkg/beta.py"]},
                             {"query": "zebra", "relevant": ["pkg/gone.py"]}])
    result = CliRunner().invoke(main, ["eval", ds, "--root", str(root), "--retriever", "lexical"])
    assert result.exit_code == 0, result.output
    assert ("note: 1 target is not in the tree (left out of the scores); "
            "1 query has no target in the tree and is not scored") in result.stdout


def test_a_dataset_named_dash_is_read_from_standard_input(make_tree):
    root = make_tree(FILES)
    rows = json.dumps({"query": "QuuxRegistry", "relevant": ["pkg/beta.py"]}) + "\n"
    result = CliRunner().invoke(main, ["eval", "-", "--root", str(root), "--retriever", "lexical", "--json"],
                                input=rows.encode())
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["runs"][0]["summary"]["queries"] == 1


def test_all_in_a_list_of_retrievers_is_a_usage_error_that_says_it_stands_alone(make_tree, tmp_path):
    root = make_tree(FILES)
    ds = _dataset(tmp_path, [{"query": "QuuxRegistry", "relevant": ["pkg/beta.py"]}])
    result = CliRunner().invoke(main, ["eval", ds, "--root", str(root), "--retriever", "lexical,all"])
    assert result.exit_code == 2
    assert "'all' (every installed retriever) stands alone" in _errors(result)


def test_retrievers_eval_cannot_run_for_missing_extras_are_said_in_one_line(make_tree, tmp_path, monkeypatch):
    """A core-only installation said four `skipped NAME: ...` lines, the torch command twice in them;
    `index` says one line with one command."""
    from retrieval.extras import EXTRAS
    from retrieval.retrievers.base import REGISTRY, RetrieverSpec

    monkeypatch.setitem(EXTRAS, "fancy", ("no_such_module_zz",))
    monkeypatch.setitem(EXTRAS, "plush", ("no_such_module_yy",))
    monkeypatch.setitem(REGISTRY, "fancy", RetrieverSpec("fancy", "nowhere:Nothing", extras=("fancy",)))
    monkeypatch.setitem(REGISTRY, "plush", RetrieverSpec("plush", "nowhere:Nothing", extras=("plush", "fancy")))
    root = make_tree(FILES)
    ds = _dataset(tmp_path, [{"query": "QuuxRegistry", "relevant": ["pkg/beta.py"]}])
    result = CliRunner().invoke(main, ["eval", ds, "--root", str(root), "--retriever", "lexical,fancy,plush"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if "skipped" in line]
    assert len(lines) == 1 and lines[0].startswith("fancy, plush: skipped (not installed here: "), lines
    assert lines[0].count("[fancy,plush]") == 1
