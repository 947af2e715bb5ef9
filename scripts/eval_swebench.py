#!/usr/bin/env python3
"""File-level localisation on SWE-bench-dev: the whole issue text as the query, the files the fix
changes as the gold. Reports Acc@1/3/5 (every gold file among the top-k distinct files) and the MRR
of the first gold file, overall and per repository, plus the median query latency, and the span
figure at a token budget: the share of instances where one of the first 10 hits of an answer
capped at --max-tokens (as `retrieval query --max-tokens`) overlaps a gold hunk (and at each of
--span-budgets, from the same answers).

For each base commit a tree is materialised (`git ls-tree` + `git cat-file --batch`) under --workdir (reused if
already there, deleted after use unless --keep), indexed (index under --workdir too), and queried
in-process. With --chain, each repository has one tree that moves from commit to commit in commit
order, its index refreshed as a user's checkout would be (most of sympy's 53 builds become refreshes
of the files that changed); the answers should be those of fresh builds, which makes the mode a
check of incremental refresh as well.

    python scripts/eval_swebench.py --limit 40 --json /tmp/swebench.json
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor

PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, PROJECT)  # run from a source checkout without installing

from retrieval.evaluation.arguments import check_output, count, description, names, positive_int  # noqa: E402
from retrieval.evaluation.datasets import EvalQuery, Target  # noqa: E402
from retrieval.evaluation.report import fmt, table  # noqa: E402
from retrieval.evaluation.runner import evaluate  # noqa: E402
from retrieval.evaluation.stats import mean_interval  # noqa: E402

METRICS = ("acc@1", "acc@3", "acc@5", "file_mrr", "span@budget")


def materialise(gitdir: str, commit: str, dest: str) -> list[str]:
    """Write every file of `commit` under dest, atomically (a half-written tree is never taken for a
    cached one). Blobs the mirror lacks (it leaves out its largest files) are skipped and returned."""
    if os.path.isdir(dest):
        return []
    partial = dest + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    listing = subprocess.run(["git", f"--git-dir={gitdir}", "ls-tree", "-r", "-z", commit],
                             capture_output=True, check=True).stdout
    entries = []
    for record in listing.split(b"\0"):
        if record:
            meta, path = record.split(b"\t", 1)
            mode, kind, sha = meta.split()
            if kind == b"blob" and mode != b"120000":  # links are not followed by the indexer anyway
                entries.append((sha, os.fsdecode(path)))
    cat = subprocess.Popen(["git", f"--git-dir={gitdir}", "cat-file", "--batch"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def feed():
        for sha, _ in entries:
            cat.stdin.write(sha + b"\n")
        cat.stdin.close()

    threading.Thread(target=feed, daemon=True).start()
    missing = []
    for _sha, path in entries:
        header = cat.stdout.readline().split()
        if len(header) < 3 or header[1] == b"missing":
            missing.append(path)
            continue
        data = cat.stdout.read(int(header[2]))
        cat.stdout.read(1)
        full = os.path.join(partial, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as fh:
            fh.write(data)
    if cat.wait() != 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise RuntimeError(f"git cat-file failed for {commit[:12]}")
    os.rename(partial, dest)
    return missing


def run_group(job: dict) -> list[dict]:
    """All instances of one (repository, base commit): one tree, one index (in a worker process)."""
    root = os.path.join(job["workdir"], "trees", job["repo"].replace("/", "+") + "@" + job["commit"][:12])
    try:
        started = time.perf_counter()
        materialise(job["gitdir"], job["commit"], root)
        return evaluate_tree(root, job, time.perf_counter() - started)
    except Exception as exc:  # report and carry on with the other commits
        return [{"instance_id": i["instance_id"], "repo": job["repo"], "error": f"{exc.__class__.__name__}: {exc}"}
                for i in job["instances"]]
    finally:
        if not job["keep"]:
            discard(root)


def discard(root: str) -> None:
    """A tree and its index, after use."""
    from retrieval import service

    try:
        service.clean(root)
    except Exception:
        pass
    shutil.rmtree(root, ignore_errors=True)


def run_chain(job: dict) -> list[dict]:
    """Every commit of one repository in commit order, in one tree whose index is refreshed from
    commit to commit (in a worker process)."""
    root = os.path.join(job["workdir"], "trees", job["repo"].replace("/", "+") + "@chain")
    out = []
    try:
        for step in job["steps"]:
            try:
                started = time.perf_counter()
                following = root + ".next"
                shutil.rmtree(following, ignore_errors=True)
                materialise(job["gitdir"], step["commit"], following)
                # The same path, so the same store: the tree changes under its index.
                shutil.rmtree(root, ignore_errors=True)
                os.rename(following, root)
                out.extend(evaluate_tree(root, dict(job, **step), time.perf_counter() - started))
            except Exception as exc:  # report and carry on with the next commit
                out.extend({"instance_id": i["instance_id"], "repo": job["repo"], "error": f"{exc.__class__.__name__}: {exc}"}
                           for i in step["instances"])
    finally:
        if not job["keep"]:
            discard(root)
    return out


def evaluate_tree(root: str, job: dict, extract_seconds: float) -> list[dict]:
    """The instances of job["commit"] against the tree at root (indexed or refreshed by evaluate)."""
    out = []
    queries = [EvalQuery(i["query"], tuple(Target(f) for f in i["gold_files"]), i["repo"], i["instance_id"])
               for i in job["instances"]]
    ev = evaluate(root, queries, [job["retriever"]], 10, metrics=("files",), depth=job["depth"])
    if not ev.runs:
        raise RuntimeError("; ".join(ev.skipped.values()))
    run = ev.runs[0]
    for row in run.rows:
        out.append({"instance_id": row.id, "repo": job["repo"], "base_commit": job["commit"],
                    "gold": row.n_targets, "gold_in_tree": row.n_existing, "scores": row.scores,
                    "ranks": row.ranks["files"], "query_seconds": row.seconds,
                    "build_seconds": run.build_seconds, "extract_seconds": extract_seconds,
                    "top_files": _top_files(row.hits)})
    if job.get("max_tokens"):
        by_id = {i["instance_id"]: i for i in job["instances"]}
        budgets = [job["max_tokens"]] + [b for b in job.get("span_budgets", ()) if b != job["max_tokens"]]
        for entry in out:
            inst = by_id[entry["instance_id"]]
            spans = span_hits(root, job["retriever"], inst["query"], inst.get("gold_hunks") or {}, budgets)
            entry["scores"]["span@budget"] = spans[job["max_tokens"]]
            for budget in budgets[1:]:
                entry["scores"][f"span@{budget}"] = spans[budget]
    return out


def span_hits(root: str, retriever: str, query: str, hunks: dict, budgets: list[int]) -> dict[int, float]:
    """{budget: 1.0 when one of the first 10 hits of the answer that fits that many tokens overlaps a
    gold hunk, else 0.0}, from one search. Snippets are priced by within_budget's default (four
    characters a token plus 24 a hit, close to what `query --max-tokens` prints as text; its JSON
    costs more a hit), so the figure is comparable across runs and retrievers."""
    from retrieval import service
    from retrieval.snippets import read_snippet
    from retrieval.text import tokenize

    result = service.search(root, query, retriever=retriever, top_k=100, stale_ok=True)
    read = {}
    for h in result.hits:
        snippet = read_snippet(root, h)
        if snippet is not None:
            read[h.docid] = snippet
    focus = frozenset(tokenize(query))  # as `query --max-tokens` cuts a hit: its lines with the query's words
    return {budget: _span_hit(result.hits, dict(read), hunks, budget, focus) for budget in budgets}


def _span_hit(hits: list, snippets: dict, hunks: dict, budget: int, focus: frozenset = frozenset()) -> float:
    from retrieval.output import within_budget

    kept, cut = within_budget(hits, snippets, budget, focus=focus)  # cuts the last hit's snippet in `snippets`
    for h in kept[:10]:
        first, last = h.start_line, h.end_line
        if h.docid in cut and h.docid in snippets:  # cut to fit the budget: only its snippet's lines show
            first, last = snippets[h.docid].start_line, snippets[h.docid].end_line
        for start, end in hunks.get(h.source_path, ()):
            if first is not None and first <= end and start <= last:
                return 1.0
    return 0.0


def commit_time(gitdir: str, commit: str) -> int:
    out = subprocess.run(["git", f"--git-dir={gitdir}", "show", "-s", "--format=%ct", commit],
                         capture_output=True, text=True, check=True).stdout
    return int(out.strip() or 0)


def _top_files(hits: list[str]) -> list[str]:
    files = []
    for hit in hits:
        path = hit.rsplit(":", 1)[0] if ":" in hit else hit
        if path not in files:
            files.append(path)
    return files[:5]


def mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def summarise(rows: list[dict]) -> dict:
    ok = [r for r in rows if "error" not in r and r["gold_in_tree"]]
    out = {m: mean(r["scores"].get(m) for r in ok) for m in METRICS}
    for extra in sorted({k for r in ok for k in r["scores"] if k.startswith("span@") and k not in METRICS},
                        key=lambda k: int(k[5:])):  # --span-budgets
        out[extra] = mean(r["scores"].get(extra) for r in ok)
    out["instances"] = len(ok)
    # what drawing other instances moves Acc@5 by (the acceptance part has other issues)
    out["acc@5_interval"] = mean_interval([r["scores"]["acc@5"] for r in ok if r["scores"].get("acc@5") is not None])
    out["median_query_ms"] = statistics.median(r["query_seconds"] for r in ok) * 1000 if ok else None
    out["median_build_s"] = statistics.median(r["build_seconds"] for r in ok) if ok else None
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--bench", default=os.path.join(PROJECT, "..", "shared", "bench", "swebench-dev"))
    parser.add_argument("--gitdirs", default="/work/checkouts/gitdirs.json", help='JSON {"owner/name": bare git dir}')
    parser.add_argument("--workdir", default="/tmp/swebench-trees")
    parser.add_argument("--keep", action="store_true", help="keep trees and indexes for the next run")
    parser.add_argument("--skip", type=count, default=0, help="leave out the first N instances (a long run in parts)")
    parser.add_argument("--limit", type=count, default=0, help="only the first N instances (after --skip)")
    parser.add_argument("--repos", default="", help="comma-separated subset (owner/name)")
    parser.add_argument("--chain", action="store_true",
                        help="one tree per repository, refreshed from commit to commit (several times faster)")
    parser.add_argument("--retriever", default="lexical")
    parser.add_argument("--depth", type=positive_int, default=50, help="chunks retrieved per query (widened to cover 5 files)")
    parser.add_argument("--workers", type=positive_int, default=2)
    parser.add_argument("--max-tokens", type=count, default=2000, help="budget of the span figure (0: skip it)")
    parser.add_argument("--span-budgets", default="",
                        help="comma-separated further budgets whose span figures are reported too (e.g. 500,1000,4000)")
    parser.add_argument("--json", dest="json_out", help="write all numbers, per instance too, to this file")
    args = parser.parse_args(argv)
    check_output(parser, args.json_out)

    try:
        budgets = sorted({int(b) for b in args.span_budgets.split(",") if b.strip()})
    except ValueError:
        parser.error(f"--span-budgets takes whole numbers separated by commas, not {args.span_budgets!r}")
    if any(b <= 0 for b in budgets) or (budgets and not args.max_tokens):
        parser.error("--span-budgets takes positive budgets, beside a --max-tokens budget")
    if args.retriever != "all":  # a misspelt name failed every instance, one at a time
        from retrieval.retrievers.base import get_spec

        try:
            get_spec(args.retriever)
        except ValueError as exc:
            parser.error(str(exc))
    started = time.perf_counter()
    try:  # a missing or broken input: one line, not a traceback
        path = os.path.join(args.bench, "instances.jsonl")
        with open(path, encoding="utf-8") as fh:
            instances = [json.loads(line) for line in fh if line.strip()]
        path = args.gitdirs
        with open(path, encoding="utf-8") as fh:
            gitdirs = json.load(fh)
    except (OSError, ValueError) as exc:
        print(f"error: cannot read {path}: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
        return 1
    if args.repos:
        wanted = set(names(args.repos))
        unknown = sorted(wanted - {i["repo"] for i in instances})
        if unknown:  # `pallets/flask,pytest` measured flask alone, as if both had been measured
            parser.error(f"--repos: no instance of {', '.join(unknown)} (repositories are named owner/name)")
        instances = [i for i in instances if i["repo"] in wanted]
    # A repository without a mirror is left out, before --skip and --limit count, and said once (one
    # `failed` line per instance hid the one fix), as ablate_swebench.py does.
    missing: dict[str, int] = {}
    for inst in instances:
        if inst["repo"] not in gitdirs:
            missing[inst["repo"]] = missing.get(inst["repo"], 0) + 1
    for repo, n in sorted(missing.items()):
        print(f"{repo}: {n} instance(s) skipped, no git dir in {args.gitdirs} (fetch github:{repo}, then run "
              "scripts/prepare_bench.py)", file=sys.stderr, flush=True)
    if missing and len(missing) == len({i["repo"] for i in instances}):
        print("error: no instance has a git dir to evaluate", file=sys.stderr)
        return 1
    instances = [i for i in instances if i["repo"] not in missing]
    instances = instances[args.skip:]
    if args.limit:
        instances = instances[: args.limit]
    if not instances:  # an empty table and exit 0 passed for a measurement
        print("error: no instance to evaluate (--repos names repositories as owner/name)", file=sys.stderr)
        return 1
    workdir = os.path.abspath(args.workdir)
    os.makedirs(os.path.join(workdir, "trees"), exist_ok=True)
    os.environ["RETRIEVAL_INDEX_DIR"] = os.path.join(workdir, "index")  # inherited by the workers

    groups: dict[tuple, list] = {}
    rows: list[dict] = []
    for inst in instances:
        groups.setdefault((inst["repo"], inst["base_commit"]), []).append(inst)
    common = {"workdir": workdir, "retriever": args.retriever, "depth": args.depth, "keep": args.keep,
              "max_tokens": args.max_tokens, "span_budgets": budgets}
    if args.chain:
        chains: dict[str, list] = {}
        for (repo, commit), insts in groups.items():
            chains.setdefault(repo, []).append({"commit": commit, "instances": insts})
        jobs = [dict(common, repo=repo, gitdir=gitdirs[repo],
                     steps=sorted(steps, key=lambda s: (commit_time(gitdirs[repo], s["commit"]), s["commit"])))
                for repo, steps in chains.items()]
        jobs.sort(key=lambda j: -len(j["steps"]))  # the longest chain first: it sets the run's length
        work = run_chain
    else:
        jobs = [dict(common, repo=repo, commit=commit, gitdir=gitdirs[repo], instances=insts)
                for (repo, commit), insts in groups.items()]
        work = run_group
    with ProcessPoolExecutor(max_workers=max(1, args.workers)) as pool:
        for done, group in enumerate(pool.map(work, jobs), start=1):
            rows.extend(group)
            print(f"[{done}/{len(jobs)}] {group[0]['repo']} {len(group)} instance(s)", file=sys.stderr, flush=True)

    order = {inst["instance_id"]: n for n, inst in enumerate(instances)}
    rows.sort(key=lambda r: order.get(r["instance_id"], -1))
    repos = sorted({r["repo"] for r in rows})
    per_repo = {repo: summarise([r for r in rows if r["repo"] == repo]) for repo in repos}
    overall = summarise(rows)
    table_rows = [[repo, str(s["instances"])] + [s[m] for m in METRICS] + [_ms(s["median_query_ms"])]
                  for repo, s in per_repo.items()]
    table_rows.append(["overall", str(overall["instances"])] + [overall[m] for m in METRICS]
                      + [_ms(overall["median_query_ms"])])
    print(table(["repository", "instances", "Acc@1", "Acc@3", "Acc@5", "MRR", f"span@{args.max_tokens}",
                 "median cold query ms"], table_rows))
    errors = [r for r in rows if "error" in r]
    for r in errors:
        print(f"failed {r['instance_id']}: {r['error']}")
    partial = [r for r in rows if "error" not in r and r["gold_in_tree"] < r["gold"]]
    if partial:
        print(f"note: {len(partial)} instance(s) name gold files absent before the patch (new files); "
              "Acc@k asks only for the gold files that exist: " + ", ".join(r["instance_id"] for r in partial))
    elapsed = time.perf_counter() - started
    others = [f"{k[5:]} tokens {fmt(v)}" for k, v in overall.items() if k.startswith("span@") and k != "span@budget"]
    if others:
        print(f"span at other budgets (span@{args.max_tokens} above): " + ", ".join(others))
    if overall["acc@5_interval"]:
        low, high = overall["acc@5_interval"]
        print(f"overall Acc@5 95% interval {fmt(low)}-{fmt(high)} (bootstrap over instances)")
    print(f"{len(rows)} instances ({len(groups)} commits, {len(jobs)} trees) in {elapsed:.1f}s with "
          f"{args.workers} workers; median index build {overall['median_build_s'] or 0:.1f}s"
          + (f"; {sum(missing.values())} instance(s) skipped without a git dir" if missing else ""))
    if args.json_out:
        payload = {"args": vars(args), "seconds": elapsed, "overall": overall, "per_repo": per_repo, "instances": rows,
                   "skipped_without_git_dir": missing}
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, ensure_ascii=False, indent=1)
    return 1 if errors else 0


def _ms(value):
    return "-" if value is None else f"{value:.1f}"


if __name__ == "__main__":
    from retrieval.streams import run_piped

    sys.exit(run_piped(main))
