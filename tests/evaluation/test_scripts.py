"""The benchmark scripts' pure parts (they run for real against ../shared/bench, not in tests)."""
from __future__ import annotations

import importlib.util
import io
import json
import os
import sys
import tarfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def _the_environment_as_it_was():
    """A script's main() sets RETRIEVAL_INDEX_DIR for its workers: run in process, that moved the
    stores of the tests after it (three failed, finding no index where they had built one)."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def _load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "scripts", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # a script's worker functions are pickled by module name
    spec.loader.exec_module(module)
    return module


def test_cacm_conversion(tmp_path):
    cacm = _load("cacm_to_jsonl")
    src = tmp_path / "cacm"
    src.mkdir()
    with tarfile.open(src / "cacm.tar.gz", "w:gz") as tar:
        for name, body in {"CACM-0115.html": "<html>\n<pre>\nTime &amp; Sharing\n</pre>\n</html>\n",
                           "CACM-1410.html": "<html><pre>Parsing</pre></html>"}.items():
            data = body.encode()
            info = tarfile.TarInfo(f"cacm/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    (src / "topics.cacm.txt").write_text("<DOC>\n<DOCNO> 1 </DOCNO>\n\n What about\n time sharing?\n</DOC>\n"
                                         "<DOC>\n<DOCNO> 2 </DOCNO>\n unjudged\n</DOC>\n")
    (src / "qrels.cacm.txt").write_text("1 Q0 CACM-115 1\n1 Q0 CACM-1410 1\n1 Q0 CACM-0002 0\n")
    out = tmp_path / "out"
    assert cacm.main(["--cacm", str(src), "--out", str(out)]) == 0
    assert (out / "docs" / "CACM-0115.txt").read_text() == "Time & Sharing\n"
    rows = [json.loads(line) for line in (out / "cacm.jsonl").read_text().splitlines()]
    assert rows == [{"id": "1", "query": "What about time sharing?",
                     "relevant": ["CACM-0115.txt", "CACM-1410.txt"], "category": "cacm"}]
    assert cacm.read_qrels(str(src / "qrels.cacm.txt"), verbatim=True) == {"1": ["CACM-115", "CACM-1410"]}


def test_cacm_text_drops_tags_but_keeps_comparisons_as_an_html_parser_does():
    cacm = _load("cacm_to_jsonl")
    raw = "<html>\n<pre>\nIf a < b and c>d then <!-- note -->stop\n</pre>\n</html>\n"
    assert cacm.document_text(raw) == "If a < b and c>d then stop\n"


def test_semble_summary_pools_the_confidence_calibration_over_repositories():
    semble = _load("eval_semble")

    def repo(name, calibration):
        return {"name": name, "language": "python", "index_status": "up to date", "build_seconds": 0.0,
                "warm_query_p50_seconds": 0.001, "summary": {"ndcg": 0.5, "recall": 0.5, "mrr": 0.5, "queries": 1},
                "by_category": {}, "queries": [], "calibration": calibration}

    results = [repo("a", {"high": {"hits": 2, "matched": 2, "precision": 1.0},
                          "low": {"hits": 8, "matched": 0, "precision": 0.0}}),
               repo("b", {"high": {"hits": 2, "matched": 1, "precision": 0.5},
                          "medium": {"hits": 4, "matched": 1, "precision": 0.25}})]
    pooled = semble.summarise(results, {}, 10)["confidence_calibration"]
    assert pooled == {"high": {"hits": 4, "matched": 3, "precision": 0.75},
                      "low": {"hits": 8, "matched": 0, "precision": 0.0},
                      "medium": {"hits": 4, "matched": 1, "precision": 0.25}}


def test_the_calibration_table_lists_levels_from_high_to_low():
    from retrieval.evaluation.report import calibration_text

    text = calibration_text({"low": {"hits": 8, "matched": 1, "precision": 0.125},
                             "high": {"hits": 2, "matched": 2, "precision": 1.0}}, 10)
    assert [line.split()[0] for line in text.splitlines()[2:]] == ["high", "low"]
    # `all`'s hits that only the other retrievers found carry no level: a row without a name.
    text = calibration_text({"high": {"hits": 2, "matched": 2, "precision": 1.0},
                             "": {"hits": 766, "matched": 70, "precision": 0.091}}, 1000)
    assert [line.split()[0] for line in text.splitlines()[2:]] == ["high", "(none)"]


def _tree(root):
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as fh:
                out[os.path.relpath(path, root)] = fh.read()
    return out


def test_the_monorepo_generator_is_deterministic_and_polyglot(tmp_path, monkeypatch):
    import sys

    from retrieval.discover import walk

    gen = _load("gen_monorepo")
    monkeypatch.setitem(sys.modules, "gen_monorepo", gen)  # so that --jobs workers can find it
    gen.main(["--files", "300", "--out", str(tmp_path / "a"), "--seed", "7"])
    gen.main(["--files", "300", "--out", str(tmp_path / "b"), "--seed", "7", "--jobs", "2"])
    a, b = _tree(tmp_path / "a"), _tree(tmp_path / "b")
    assert a == b and len(a) == 300
    gen.main(["--files", "300", "--out", str(tmp_path / "c"), "--seed", "8"])
    assert _tree(tmp_path / "c") != a
    extensions = {os.path.splitext(p)[1] for p in a}
    assert len(extensions & {".py", ".ts", ".js", ".go", ".java", ".rs", ".c", ".cpp"}) >= 4
    assert {".md", ".json"} <= extensions and ".gitignore" in a
    # Some files sit where the .gitignore files (or the built-in pruning) keep them out.
    indexed = {f.path for f in walk(str(tmp_path / "a")).files}
    assert 0 < len(a) - len(indexed) < len(a) // 4


def test_the_swebench_script_scores_an_instance_end_to_end(tmp_path, monkeypatch):
    """The whole path a benchmark run takes (tree from git, index, files, span at a budget): the
    scripts import the package's helpers, and a rename there must fail here, not in a long run."""
    import subprocess

    swebench = _load("eval_swebench")
    repo = tmp_path / "upstream"
    files = {"net/retry.py": "def retry_upload(request, attempts):\n    for n in range(attempts):\n"
                             "        if request.send():\n            return True\n    return False\n",
             "net/auth.py": "def refresh_token(session):\n    return session.renew()\n",
             "README.md": "# demo\n\nUploads and tokens.\n"}
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "one"], check=True)
    commit = subprocess.run(git + ["rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "instances.jsonl").write_text(json.dumps({
        "instance_id": "demo-1", "repo": "demo/net", "base_commit": commit,
        "query": "retry_upload gives up after the attempts", "gold_files": ["net/retry.py"],
        "gold_hunks": {"net/retry.py": [[2, 4]]}}) + "\n")
    (tmp_path / "gitdirs.json").write_text(json.dumps({"demo/net": str(repo / ".git")}))
    out = tmp_path / "result.json"
    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "index"))  # the script sets it; restored after
    code = swebench.main(["--bench", str(bench), "--gitdirs", str(tmp_path / "gitdirs.json"), "--workdir",
                          str(tmp_path / "work"), "--workers", "1", "--max-tokens", "2000",
                          "--span-budgets", "1,2000", "--json", str(out)])
    result = json.loads(out.read_text())
    assert code == 0, result["instances"]
    assert result["overall"]["instances"] == 1
    assert result["overall"]["acc@1"] == 1.0 and result["overall"]["span@budget"] == 1.0
    # One token shows no line of the hunk: each further budget is its own figure, not the first's.
    assert result["overall"]["span@1"] == 0.0 and "span@2000" not in result["overall"]
    assert result["overall"]["acc@5_interval"] == [1.0, 1.0]


def test_the_swebench_chain_mode_answers_as_fresh_builds_do_commit_after_commit(tmp_path, monkeypatch):
    """--chain refreshes one tree from commit to commit instead of building each: the rows must be
    those of a build per commit, including a file that the later commit adds, edits or deletes."""
    import subprocess

    swebench = _load("eval_swebench")
    repo = tmp_path / "upstream"
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    commits = []
    states = [{"net/retry.py": "def retry_upload(request, attempts):\n    return request.send()\n",
               "net/auth.py": "def refresh_token(session):\n    return session.renew()\n",
               "net/old.py": "def legacy_checksum(blob):\n    return sum(blob)\n"},
              {"net/retry.py": "def retry_upload(request, attempts):\n    return request.send()\n",
               "net/auth.py": "def rotate_signing_key(session):\n    return session.rotate()\n",
               "net/cache.py": "def evict_stale_entries(cache):\n    cache.clear()\n"}]
    for n, state in enumerate(states):
        for old in repo.glob("net/*.py"):
            old.unlink()
        for path, text in state.items():
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_text(text)
        subprocess.run(git + ["add", "-A"], check=True)
        subprocess.run(git + ["commit", "-qm", f"state {n}", "--date", f"{1700000000 + n} +0000"], check=True)
        commits.append(subprocess.run(git + ["rev-parse", "HEAD"], check=True, capture_output=True,
                                      text=True).stdout.strip())
    asked = [(1, "rotate_signing_key for the session", "net/auth.py", [1, 2]),
             (0, "refresh_token renews the session", "net/auth.py", [1, 2]),
             (1, "evict_stale_entries clears the cache", "net/cache.py", [1, 2]),
             (0, "legacy_checksum of a blob", "net/old.py", [1, 2])]
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "instances.jsonl").write_text("".join(json.dumps({
        "instance_id": f"demo-{i}", "repo": "demo/net", "base_commit": commits[state], "query": query,
        "gold_files": [gold], "gold_hunks": {gold: [hunk]}}) + "\n" for i, (state, query, gold, hunk) in enumerate(asked)))
    (tmp_path / "gitdirs.json").write_text(json.dumps({"demo/net": str(repo / ".git")}))
    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "index"))
    results = {}
    for mode in ("build", "chain"):
        out = tmp_path / f"{mode}.json"
        flags = ["--chain"] if mode == "chain" else []
        assert swebench.main(flags + ["--bench", str(bench), "--gitdirs", str(tmp_path / "gitdirs.json"), "--workdir",
                                      str(tmp_path / mode), "--workers", "1", "--json", str(out)]) == 0
        results[mode] = json.loads(out.read_text())["instances"]
    def answers(rows):
        return [(r["instance_id"], r["base_commit"], r["scores"], r["top_files"]) for r in rows]
    assert answers(results["chain"]) == answers(results["build"])
    assert [r["scores"]["acc@1"] for r in results["chain"]] == [1.0] * 4
    assert "net/old.py" not in results["chain"][0]["top_files"]  # deleted by the later commit


def test_the_cosqa_script_scores_questions_end_to_end(tmp_path, monkeypatch):
    cosqa = _load("eval_cosqa")
    bench = tmp_path / "bench"
    bench.mkdir()
    functions = {"def parse_json_config(path):\n    return json.load(open(path))": 0,
                 "def retry_request(send, attempts):\n    return any(send() for _ in range(attempts))": 1}
    (bench / "code_idx_map.txt").write_text(json.dumps(functions))
    (bench / "cosqa-retrieval-dev-500.json").write_text(json.dumps([
        {"doc": "python retry a request", "retrieval_idx": 1}, {"doc": "parse json config", "retrieval_idx": 0}]))
    out = tmp_path / "result.json"
    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "index"))
    assert cosqa.main(["--bench", str(bench), "--workdir", str(tmp_path / "work"), "--json", str(out)]) == 0
    (result,) = json.loads(out.read_text())
    assert result["retriever"] == "lexical" and result["queries"] == 2 and result["mrr"] == 100.0
    assert result["mrr_interval"] == [100.0, 100.0]  # every question right: nothing to resample


def test_the_semble_script_scores_a_checkout_end_to_end(tmp_path, monkeypatch):
    semble = _load("eval_semble")
    bench = tmp_path / "bench"
    (bench / "annotations").mkdir(parents=True)
    (bench / "repos.json").write_text(json.dumps([{"name": "demo", "language": "python", "benchmark_root": "src"},
                                                  {"name": "absent", "language": "go"}]))
    (bench / "annotations" / "demo.json").write_text(json.dumps([
        {"query": "retry an upload", "relevant": ["src/net/retry.py"], "secondary": [], "category": "semantic"},
        {"query": "refresh_token", "relevant": ["src/net/auth.py"], "secondary": [], "category": "symbol"}]))
    root = tmp_path / "checkouts" / "demo" / "src" / "net"
    root.mkdir(parents=True)
    (root / "retry.py").write_text("def retry_upload(request, attempts):\n    return request.send()\n")
    (root / "auth.py").write_text("def refresh_token(session):\n    return session.renew()\n")
    out = tmp_path / "result.json"
    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "index"))  # the script sets it; restored after
    code = semble.main(["--bench", str(bench), "--checkouts", str(tmp_path / "checkouts"), "--workers", "1",
                        "--index-dir", str(tmp_path / "index"), "--json", str(out)])
    result = json.loads(out.read_text())
    assert code == 0, result["repos"]
    assert result["skipped"] == {"absent": f"no checkout at {tmp_path / 'checkouts' / 'absent'}"}
    (repo,) = result["repos"]
    assert repo["summary"]["ndcg"] == 1.0 and repo["summary"]["queries"] == 2
    # Each file is one two-line chunk: what an agent would read per hit is reported beside the metrics.
    assert [q["lines"][0] for q in repo["queries"]] == [2, 2]
    assert result["overall"]["hit_lines"]["first"] == 2.0
    assert result["overall"]["ndcg_interval"] == [1.0, 1.0]  # every query right: nothing to resample


def test_the_bench_preparation_checks_out_pinned_revisions_and_falls_back_to_the_snapshot_head(tmp_path):
    import subprocess

    prepare = _load("prepare_bench")
    upstream = tmp_path / "upstream"
    git = ["git", "-C", str(upstream), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run(["git", "init", "-q", str(upstream)], check=True)
    commits = []
    for text in ("first = 1\n", "second = 2\n"):
        (upstream / "src").mkdir(exist_ok=True)
        (upstream / "src" / "mod.py").write_text(text)
        subprocess.run(git + ["add", "-A"], check=True)
        subprocess.run(git + ["commit", "-qm", text], check=True)
        commits.append(subprocess.run(git + ["rev-parse", "HEAD"], check=True, capture_output=True,
                                      text=True).stdout.strip())
    mirrors = tmp_path / "mirror"
    subprocess.run(["git", "clone", "-q", "--bare", str(upstream), str(mirrors / "demo+net" / "repo")], check=True)
    bench = tmp_path / "bench"
    (bench / "semble-dev").mkdir(parents=True)
    (bench / "swebench-dev").mkdir()
    (bench / "semble-dev" / "repos.json").write_text(json.dumps([
        {"name": "pinned", "url": "https://github.com/demo/net.git", "revision": commits[0], "benchmark_root": "src"},
        {"name": "moved", "url": "https://github.com/demo/net", "revision": "f" * 40, "benchmark_root": None},
        {"name": "unfetched", "url": "https://github.com/demo/other.git", "revision": commits[0]}]))
    (bench / "swebench-dev" / "instances.jsonl").write_text(
        json.dumps({"repo": "demo/net"}) + "\n" + json.dumps({"repo": "demo/other"}) + "\n")
    checkouts, gitdirs = tmp_path / "checkouts", tmp_path / "gitdirs.json"
    assert prepare.main(["--bench", str(bench), "--mirrors", str(mirrors), "--checkouts", str(checkouts),
                         "--gitdirs", str(gitdirs)]) == 0
    assert (checkouts / "pinned" / "src" / "mod.py").read_text() == "first = 1\n"
    assert (checkouts / "moved" / "src" / "mod.py").read_text() == "second = 2\n"  # the pinned commit is absent
    assert not (checkouts / "unfetched").exists()
    assert json.loads(gitdirs.read_text()) == {"demo/net": str(mirrors / "demo+net" / "repo")}


def test_comparing_two_semble_runs_averages_over_the_repositories_both_scored():
    compare = _load("compare_semble").compare

    def run(scores: dict) -> dict:
        return {"repos": [
            {"name": name, "language": lang, "summary": {"ndcg": sum(qs.values()) / len(qs)},
             "queries": [{"query": q, "category": "semantic", "scores": {"ndcg": v}} for q, v in qs.items()]}
            for name, (lang, qs) in scores.items()]}

    before = run({"a": ("go", {"x": 1.0, "y": 0.5}), "b": ("rust", {"z": 0.0}), "gone": ("go", {"w": 1.0})})
    after = run({"a": ("go", {"x": 0.5, "y": 0.5}), "b": ("rust", {"z": 1.0})})
    c = compare(before, after)
    assert c["repos"] == 2  # `gone` was scored only before: it counts in neither mean
    assert (c["before"], c["after"]) == (0.375, 0.75)
    assert c["languages"] == {"go": (0.75, 0.5), "rust": (0.0, 1.0)}
    assert (c["up"], c["down"]) == (1, 1)
    assert sorted(m[4] for m in c["moved"]) == ["x", "z"]


def _semble_run(scores: dict) -> dict:
    return {"repos": [
        {"name": name, "language": "go", "summary": {"ndcg": sum(qs) / len(qs)},
         "queries": [{"query": f"q{i}", "category": "semantic", "scores": {"ndcg": v}} for i, v in enumerate(qs)]}
        for name, qs in scores.items()]}


def test_a_comparison_gives_the_difference_an_interval_from_resampling_repositories_and_queries():
    compare = _load("compare_semble").compare
    base = {f"r{i}": [0.5] * 20 for i in range(8)}
    same = compare(_semble_run(base), _semble_run(base))
    assert same["interval"] == (0.0, 0.0) and same["sign_p"] == 1.0

    lifted = compare(_semble_run(base), _semble_run({n: [v + 0.25 for v in qs] for n, qs in base.items()}))
    assert lifted["interval"] == (0.25, 0.25)  # every query gained the same: no noise to draw
    assert lifted["after_interval"] == (0.75, 0.75)

    one = dict(base, r0=[1.0] + [0.5] * 19)  # one query of 160 rose: not evidence of anything
    c = compare(_semble_run(base), _semble_run(one))
    low, high = c["interval"]
    assert low <= 0.0 < high and (c["up"], c["down"]) == (1, 0) and c["sign_p"] == 1.0
    assert compare(_semble_run(base), _semble_run(one))["interval"] == c["interval"]  # seeded


def test_the_semble_scripts_refuse_a_zero_cut_off_as_a_usage_error(tmp_path, capsys):
    # -k 0 failed every repository on a division by zero (eval_semble) or ended in a traceback (ablate).
    import pytest

    for name in ("eval_semble", "ablate_semble"):
        script = _load(name)
        with pytest.raises(SystemExit) as exit_info:
            script.main(["--bench", str(tmp_path), "-k", "0"])
        assert exit_info.value.code == 2
        assert "must be at least 1" in capsys.readouterr().err


def test_the_semble_script_refuses_an_unknown_retriever_as_a_usage_error(tmp_path, capsys):
    import pytest

    with pytest.raises(SystemExit) as exit_info:
        _load("eval_semble").main(["--bench", str(tmp_path), "--retriever", "lexicl"])
    assert exit_info.value.code == 2
    assert "unknown retriever 'lexicl'" in capsys.readouterr().err


def test_the_semble_scripts_name_a_missing_benchmark_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "index"))  # eval_semble sets it; restored after
    for name in ("eval_semble", "ablate_semble"):
        assert _load(name).main(["--bench", str(tmp_path / "absent")]) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: cannot read ") and "repos.json" in err and len(err.splitlines()) == 1


def test_the_comparison_names_an_unreadable_or_foreign_result_in_one_line(tmp_path, capsys):
    compare = _load("compare_semble")
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"repos": []}))
    (tmp_path / "broken.json").write_text('{"repos": [')
    (tmp_path / "other.json").write_text(json.dumps([{"retriever": "lexical"}]))  # eval_cosqa's output
    for bad in ("absent.json", "broken.json", "other.json"):
        assert compare.main([str(tmp_path / bad), str(good)]) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: ") and bad in err and len(err.splitlines()) == 1


def test_a_comparison_names_the_two_results_and_their_retrievers_first(tmp_path, capsys):
    runs = {"a.json": _semble_run({"cobra": [0.5, 1.0]}), "b.json": _semble_run({"cobra": [1.0, 1.0]})}
    runs["b.json"]["repos"][0]["retriever"] = "treesitter"
    for name, run in runs.items():
        (tmp_path / name).write_text(json.dumps(run))
    assert _load("compare_semble").main([str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [f"before: {tmp_path / 'a.json'} (?)", f"after: {tmp_path / 'b.json'} (treesitter)",
                         "1 repositories: 0.7500 -> 1.0000 (+0.2500); queries up 1, down 0"]


def test_a_comparison_with_no_repository_scored_in_both_fails_instead_of_printing_nan(tmp_path, capsys):
    compare = _load("compare_semble")

    def result(name):
        return {"repos": [{"name": name, "language": "go", "summary": {"ndcg": 0.5},
                           "queries": [{"query": "q", "category": "symbol", "n_existing": 1, "scores": {"ndcg": 0.5}}]}]}

    (tmp_path / "a.json").write_text(json.dumps(result("cobra")))
    (tmp_path / "b.json").write_text(json.dumps(result("fastapi")))
    assert compare.main([str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 1
    out, err = capsys.readouterr()
    assert "nan" not in out and err == "error: no repository was scored in both results\n"


def test_the_cosqa_script_does_not_replace_a_missing_bench_with_the_default_data(tmp_path, capsys):
    cosqa = _load("eval_cosqa")
    assert cosqa.main(["--bench", str(tmp_path / "absent"), "--workdir", str(tmp_path / "work")]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == f"error: no CoSQA data at {tmp_path / 'absent'}\n"
    assert not (tmp_path / "work").exists()
    (tmp_path / "empty").mkdir()  # a directory without the data files
    assert cosqa.main(["--bench", str(tmp_path / "empty"), "--workdir", str(tmp_path / "work")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: cannot read ") and len(err.splitlines()) == 1


def test_the_benchmark_scripts_name_a_missing_input_in_one_line_before_writing_anything(tmp_path, capsys):
    absent = str(tmp_path / "absent")
    runs = {"cacm_to_jsonl": (["--cacm", absent, "--out", str(tmp_path / "out")], 1),
            "eval_swebench": (["--bench", absent, "--workdir", str(tmp_path / "out")], 1),
            "prepare_bench": (["--bench", absent, "--checkouts", str(tmp_path / "out")], 1),
            # 1 says the figures are off Anserini's: an unreadable input is told apart
            "eval_cacm_pyserini": (["--cacm-out", absent], 2)}
    for name, (argv, code) in runs.items():
        assert _load(name).main(argv) == code, name
        err = capsys.readouterr().err
        assert err.startswith("error: ") and absent in err and len(err.splitlines()) == 1, (name, err)
        assert not (tmp_path / "out").exists(), name


def test_the_semble_script_fails_when_no_repository_could_be_scored(tmp_path, monkeypatch, capsys):
    # As `retrieval eval`: checkouts of other trees gave an empty report and exit 0, which passed a CI step.
    semble = _load("eval_semble")
    bench = tmp_path / "bench"
    (bench / "annotations").mkdir(parents=True)
    (bench / "repos.json").write_text(json.dumps([{"name": "demo", "language": "python"}]))
    (bench / "annotations" / "demo.json").write_text(json.dumps([
        {"query": "retry an upload", "relevant": ["net/retry.py"], "secondary": [], "category": "semantic"}]))
    (tmp_path / "checkouts" / "demo").mkdir(parents=True)
    (tmp_path / "checkouts" / "demo" / "other.py").write_text("def unrelated():\n    pass\n")
    out = tmp_path / "result.json"
    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "index"))  # the script sets it; restored after
    code = semble.main(["--bench", str(bench), "--checkouts", str(tmp_path / "checkouts"), "--workers", "1",
                        "--index-dir", str(tmp_path / "index"), "--json", str(out)])
    assert code == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("[1/1] demo: ")  # each repository said as it finishes
    assert err[-1].startswith("error: no repository could be scored")
    assert json.loads(out.read_text())["overall"]["unscored_repos"] == ["demo"]  # the report still written


def test_the_ablation_refuses_names_that_select_nothing_instead_of_printing_an_empty_table(tmp_path, capsys):
    import pytest

    ablate = _load("ablate_semble")
    (tmp_path / "repos.json").write_text(json.dumps([{"name": "demo", "language": "python"},
                                                     {"name": "other", "language": "go"}]))
    (tmp_path / "checkouts" / "demo").mkdir(parents=True)
    argv = ["--bench", str(tmp_path), "--checkouts", str(tmp_path / "checkouts")]
    assert ablate.main(argv + ["--repos", "other"]) == 1  # in the benchmark, not checked out
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: no repository to evaluate")
    for repos in ("demoo", "demo,demoo", " demo , demoo "):  # the second ablated demo alone, as if both had been measured
        with pytest.raises(SystemExit) as exit_info:
            ablate.main(argv + ["--repos", repos])
        assert exit_info.value.code == 2 and "no repository demoo in the benchmark" in capsys.readouterr().err
    assert ablate.main(argv + ["--repos", " other , "]) == 1  # names are stripped: `other` is known
    assert capsys.readouterr().err.startswith("error: no repository to evaluate")
    for variants in ("fulll", "full,bogus"):  # the second ran `full` alone, as if bogus had been measured
        with pytest.raises(SystemExit) as exit_info:
            ablate.main(argv + ["--variants", variants])
        assert exit_info.value.code == 2 and "unknown " in capsys.readouterr().err


def test_the_swebench_and_cosqa_scripts_refuse_an_unknown_retriever_before_any_work(tmp_path, capsys):
    import pytest

    runs = {"eval_swebench": ["--bench", str(tmp_path), "--workdir", str(tmp_path / "work"), "--retriever", "lexicl"],
            "eval_cosqa": ["--bench", str(tmp_path), "--workdir", str(tmp_path / "work"), "--retrievers", "lexicl"]}
    for name, argv in runs.items():
        with pytest.raises(SystemExit) as exit_info:
            _load(name).main(argv)
        assert exit_info.value.code == 2, name
        assert "unknown retriever 'lexicl'" in capsys.readouterr().err
        assert not (tmp_path / "work").exists()


def test_the_swebench_script_fails_when_no_instance_is_selected(tmp_path, capsys):
    import pytest

    (tmp_path / "instances.jsonl").write_text(json.dumps({"repo": "psf/requests", "instance_id": "x"}) + "\n")
    (tmp_path / "gitdirs.json").write_text(json.dumps({"psf/requests": str(tmp_path / "requests.git")}))
    argv = ["--bench", str(tmp_path), "--gitdirs", str(tmp_path / "gitdirs.json"), "--workdir", str(tmp_path / "work")]
    code = _load("eval_swebench").main(argv + ["--skip", "1"])
    out, err = capsys.readouterr()
    assert code == 1 and out == "" and err.startswith("error: no instance to evaluate")
    for repos in ("requests", "psf/requests,pallets/flask"):  # a name no instance has, alone or beside one
        with pytest.raises(SystemExit) as exit_info:
            _load("eval_swebench").main(argv + ["--repos", repos])
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and "--repos: no instance of " in err and "owner/name" in err


def test_the_swebench_script_says_once_per_repository_without_a_mirror_that_it_is_skipped(tmp_path, capsys):
    """Four of the nine repositories had no mirror here: 133 `failed <id>: no git dir` lines on
    stdout hid the one fix."""
    lines = [{"repo": "sympy/sympy", "instance_id": f"sympy-{n}", "base_commit": "0" * 40} for n in range(3)]
    (tmp_path / "instances.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (tmp_path / "gitdirs.json").write_text("{}")
    argv = ["--bench", str(tmp_path), "--gitdirs", str(tmp_path / "gitdirs.json"), "--workdir", str(tmp_path / "work")]
    code = _load("eval_swebench").main(argv)
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert err.splitlines() == [f"sympy/sympy: 3 instance(s) skipped, no git dir in {tmp_path / 'gitdirs.json'} "
                                "(fetch github:sympy/sympy, then run scripts/prepare_bench.py)",
                                "error: no instance has a git dir to evaluate"]


def test_the_bench_scripts_refuse_a_missing_root_or_bad_sizes_without_a_traceback(tmp_path, capsys):
    import pytest

    assert _load("bench_chunking").main(["--root", str(tmp_path / "absent")]) == 1
    assert capsys.readouterr().err == f"error: root is not a directory: {tmp_path / 'absent'}\n"
    for sizes in ("5k", "0", ","):
        with pytest.raises(SystemExit) as exit_info:
            _load("bench_scale").main(["--data", str(tmp_path / "data"), "--sizes", sizes])
        assert exit_info.value.code == 2 and "--sizes takes" in capsys.readouterr().err
    assert not (tmp_path / "data").exists()


def test_a_script_whose_reader_stops_early_ends_quietly_with_exit_0(tmp_path):
    # `compare_semble.py A B --queries | head -1` ended in a BrokenPipeError traceback and exit 1
    import subprocess

    base = {f"r{i}": [0.5] * 400 for i in range(4)}
    (tmp_path / "a.json").write_text(json.dumps(_semble_run(base)))
    (tmp_path / "b.json").write_text(json.dumps(_semble_run({n: [0.75] * 400 for n in base})))
    script = os.path.join(ROOT, "scripts", "compare_semble.py")
    proc = subprocess.Popen([sys.executable, script, str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--queries"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()  # the reader is gone before the 1,600 moved queries are written
    err = proc.stderr.read().decode()
    assert proc.wait() == 0, err
    assert "Traceback" not in err and "Broken pipe" not in err, err


def test_the_bench_preparation_refuses_a_repository_name_not_in_the_benchmark(tmp_path, capsys):
    import pytest

    (tmp_path / "semble-dev").mkdir()
    (tmp_path / "semble-dev" / "repos.json").write_text(json.dumps([{"name": "cobra", "language": "go"}]))
    with pytest.raises(SystemExit) as exit_info:  # it prepared cobra and said nothing of `gin`
        _load("prepare_bench").main(["--bench", str(tmp_path), "--checkouts", str(tmp_path / "out"),
                                     "--repos", "cobra,gin"])
    assert exit_info.value.code == 2 and "no repository gin in semble-dev" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_scripts_refuse_bad_counts_and_an_unwritable_report_before_any_work(tmp_path, capsys):
    """`--depth 0` scored every query 0 and `--workers 0` ran "with 0 workers", exit 0; a `--json`
    into a missing directory was a traceback after the whole run, its numbers lost."""
    import pytest

    cases = [("eval_cosqa", ["--workdir", str(tmp_path / "w"), "--depth", "0"], "must be at least 1"),
             ("eval_swebench", ["--depth", "0"], "must be at least 1"),
             ("eval_swebench", ["--max-tokens", "-5"], "must be at least 0"),
             ("eval_swebench", ["--workers", "0"], "must be at least 1"),
             ("eval_semble", ["--workers", "0"], "must be at least 1"),
             ("eval_semble", ["--json", str(tmp_path / "absent" / "out.json")], "--json: no directory"),
             ("eval_swebench", ["--json", str(tmp_path)], "is a directory"),
             ("ablate_semble", ["--json", str(tmp_path / "absent" / "out.json")], "--json: no directory"),
             ("bench_chunking", ["--root", str(tmp_path), "--retrievers", "lexical,bogus"], "unknown retriever 'bogus'")]
    for name, argv, said in cases:
        with pytest.raises(SystemExit) as exit_info:
            _load(name).main(argv)
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and said in err, (name, argv, err)
    assert not (tmp_path / "w").exists()


def test_the_semble_script_says_why_no_repository_is_left_to_evaluate(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "index"))
    (tmp_path / "repos.json").write_text(json.dumps([{"name": "cobra", "language": "go"}]))
    script = _load("eval_semble")
    assert script.main(["--bench", str(tmp_path), "--checkouts", str(tmp_path / "none"), "--repos", "cobra,gin"]) == 1
    err = capsys.readouterr().err
    assert err == (f"error: no repository to evaluate (cobra: no checkout at {tmp_path / 'none' / 'cobra'}; "
                   "gin: not in repos.json)\n")


def test_the_cacm_comparison_reads_the_documents_beside_an_index_retrieval_eval_left_there(tmp_path):
    """The documented `retrieval eval <out>/cacm.jsonl --root <out>/docs` leaves `docs/.retrieval/`:
    the next documented step failed on it (`cannot read .../.retrieval: Is a directory`)."""
    (tmp_path / "CACM-0001.txt").write_text("preliminary report\n")
    (tmp_path / ".retrieval").mkdir()
    docs = _load("eval_cacm_pyserini").load_documents(str(tmp_path))
    assert [(d.docid, d.source_path) for d in docs] == [("CACM-0001", "CACM-0001.txt")]


def test_the_bench_preparation_without_its_mirrors_is_an_error_not_every_repository_skipped(tmp_path, capsys):
    (tmp_path / "semble-dev").mkdir()
    (tmp_path / "semble-dev" / "repos.json").write_text(json.dumps([{"name": "cobra", "language": "go"}]))
    assert _load("prepare_bench").main(["--bench", str(tmp_path), "--checkouts", str(tmp_path / "out"),
                                        "--mirrors", str(tmp_path / "absent")]) == 1
    assert "error: no directory of mirrors at" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_the_literals_script_asks_a_checkout_s_messages_and_keyword_definitions_of_it(tmp_path, capsys):
    literals = _load("bench_literals")
    repo = tmp_path / "checkouts" / "demo"
    (repo / "net").mkdir(parents=True)
    (repo / "net" / "retry.py").write_text(
        'def retry_upload(request, attempts):\n    raise RuntimeError("gave up after %d attempts to upload the file")\n')
    (repo / "net" / "auth.py").write_text("def refresh_token(session):\n    return session.renew()\n")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_retry.py").write_text('def test_retry_upload():\n    assert "never sampled from a test file"\n')
    out = tmp_path / "result.json"
    code = literals.main(["--checkouts", str(tmp_path / "checkouts"), "--index-dir", str(tmp_path / "index"),
                          "--json", str(out)])
    assert code == 0
    result = json.loads(out.read_text())
    (demo,) = result["repos"]
    assert sorted(q["query"] for q in demo["queries"]) == ["def refresh_token", "def retry_upload",
                                                           "gave up after foo attempts to upload the file"]
    assert all(q["top1"] for q in demo["queries"])
    assert result["overall"]["message"] == {"queries": 1, "top1": 1.0, "top3": 1.0}
    assert "keyword: 2 queries, top-1 1.000, top-3 1.000" in capsys.readouterr().out
