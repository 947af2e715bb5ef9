#!/usr/bin/env python3
"""NDCG@10 on the semble-dev code-search benchmark, per repository, language and category.

For every repository in repos.json whose checkout exists, index <checkout>/<benchmark_root> (the
index lives under --index-dir, so checkouts stay clean, and a fresh index is reused), run its
annotated queries in-process and score them with retrieval.evaluation. Published numbers for other
tools (published.tsv) are shown beside ours, averaged over the same repositories.

    python scripts/eval_semble.py --checkouts /work/checkouts/semble --json /tmp/semble.json
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, PROJECT)  # run from a source checkout without installing

from retrieval.evaluation.arguments import check_output, description, names, positive_int  # noqa: E402
from retrieval.evaluation.datasets import load_dataset  # noqa: E402
from retrieval.evaluation.report import calibration_text, fmt, table  # noqa: E402
from retrieval.evaluation.runner import evaluate, hit_lines  # noqa: E402
from retrieval.evaluation.stats import bootstrap_interval  # noqa: E402

PUBLISHED = ("bm25_raw", "semble", "coderankembed_hybrid")
METRICS = ("ndcg", "recall", "mrr")


def load_published(bench: str) -> dict[str, dict]:
    path = os.path.join(bench, "published.tsv")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as fh:
        return {row["repo"]: row for row in csv.DictReader(fh, delimiter="\t")}


def mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def run_repo(job: dict) -> dict:
    """Evaluate one repository (in a worker process). Never raises: failures come back as data."""
    started = time.perf_counter()
    try:
        queries = load_dataset(job["annotations"])
        ev = evaluate(job["root"], queries, [job["retriever"]], job["k"], force=job["force"])
        if not ev.runs:
            return {**job, "error": "; ".join(ev.skipped.values())}
        run = ev.runs[0]
        return {
            **job,
            "summary": run.summary(),
            "by_category": run.by_category(),
            "calibration": run.calibration(),
            "index_status": run.index_status,
            "build_seconds": run.build_seconds,
            "cold_query_seconds": run.cold_seconds,
            "warm_query_p50_seconds": run.warm_p50_seconds,
            "missing_targets": ev.missing_targets,
            "seconds": time.perf_counter() - started,
            "queries": [row.to_json() for row in run.rows],
        }
    except Exception as exc:  # one broken repository must not lose the others' numbers
        return {**job, "error": f"{exc.__class__.__name__}: {exc}"}


def plan(args) -> tuple[list[dict], dict[str, str]]:
    with open(os.path.join(args.bench, "repos.json"), encoding="utf-8") as fh:
        repos = json.load(fh)
    wanted = set(names(args.repos)) if args.repos else None
    jobs, skipped = [], {}
    for repo in repos:
        name = repo["name"]
        if wanted is not None and name not in wanted:
            continue
        checkout = os.path.join(args.checkouts, name)
        root = os.path.join(checkout, repo.get("benchmark_root") or "")
        if not os.path.isdir(checkout):
            skipped[name] = f"no checkout at {checkout}"
        elif not os.path.isdir(root):
            skipped[name] = f"the checkout lacks its benchmark_root {repo.get('benchmark_root')}"
        else:
            jobs.append({"name": name, "language": repo["language"], "root": os.path.normpath(root),
                         "annotations": os.path.join(args.bench, "annotations", f"{name}.json"),
                         "retriever": args.retriever, "k": args.k, "force": args.force})
    if wanted:
        for name in sorted(wanted - {r["name"] for r in repos}):
            skipped[name] = "not in repos.json"
    return jobs, skipped


def summarise(results: list[dict], published: dict, k: int) -> dict:
    # Only repositories with at least one scored query: a checkout at another revision may lack
    # every annotated file, and the published columns are averaged over the same repositories.
    ok = [r for r in results if "error" not in r and r["summary"]["ndcg"] is not None]
    rows = [q for r in ok for q in r["queries"] if q["n_existing"]]

    def pub(repos, column):
        return mean(float(published[n][column]) for n in repos if n in published and published[n].get(column))

    def group(repos):
        scored = [r["name"] for r in repos]
        out = {m: mean(r["summary"][m] for r in repos) for m in METRICS}
        out.update({c: pub(scored, c) for c in PUBLISHED})
        out["repos"] = len(repos)
        out["queries"] = sum(r["summary"]["queries"] for r in repos)
        return out

    by_language = {}
    for lang in sorted({r["language"] for r in ok}):
        by_language[lang] = group([r for r in ok if r["language"] == lang])
    by_category = {}
    for cat in sorted({q["category"] for q in rows}):
        qs = [q for q in rows if q["category"] == cat]
        by_category[cat] = {m: mean(q["scores"][m] for q in qs) for m in METRICS}
        by_category[cat]["queries"] = len(qs)
        by_category[cat]["ndcg_mean_over_repos"] = mean(
            r["by_category"][cat]["ndcg"] for r in ok if cat in r["by_category"])
    calibration: dict[str, dict] = {}
    for r in ok:
        for level, c in r["calibration"].items():
            entry = calibration.setdefault(level, {"hits": 0, "matched": 0})
            entry["hits"] += c["hits"]
            entry["matched"] += c["matched"]
    for entry in calibration.values():
        entry["precision"] = entry["matched"] / entry["hits"]
    return {
        "hit_lines": hit_lines(q.get("lines", []) for q in rows),
        "k": k,
        "confidence_calibration": calibration,
        "mean_over_repos": group(ok),
        # what drawing other repositories and other queries moves the overall figure by
        "ndcg_interval": bootstrap_interval([[(0.0, q["scores"]["ndcg"]) for q in r["queries"]
                                              if q["n_existing"] and q["scores"]["ndcg"] is not None] for r in ok]),
        "mean_over_queries": {**{m: mean(q["scores"][m] for q in rows) for m in METRICS}, "queries": len(rows)},
        "published_mean_over_all_repos": {c: pub(list(published), c) for c in PUBLISHED},
        "published_repos": len(published),
        "by_language": by_language,
        "by_category": by_category,
        "unscored_repos": [r["name"] for r in results if "error" not in r and r["summary"]["ndcg"] is None],
        "median_warm_query_ms": _median([r["warm_query_p50_seconds"] * 1000 for r in ok if r["warm_query_p50_seconds"]]),
        "total_build_seconds": sum(r["build_seconds"] for r in results
                                   if "error" not in r and r["index_status"] == "indexed"),
    }


def _median(values):
    values = sorted(values)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def print_report(results, skipped, overall, published, k):
    label = f"NDCG@{k}"
    rows = []
    for r in results:
        pubrow = published.get(r["name"], {})
        pubs = [float(pubrow[c]) if pubrow.get(c) else None for c in PUBLISHED]
        if "error" in r:
            rows.append([r["name"], r["language"], "-", "-", "failed", "-", "-"] + pubs + ["-", "-"])
            continue
        s = r["summary"]
        build = f"{r['build_seconds']:.2f}" if r["index_status"] == "indexed" else "reused"
        warm = r["warm_query_p50_seconds"]
        rows.append([r["name"], r["language"], str(s["queries"]), str(r["missing_targets"]), s["ndcg"], s["recall"],
                     s["mrr"]] + pubs + [build, "-" if warm is None else f"{warm * 1000:.1f}"])
    headers = (["repository", "language", "queries", "missing", label, f"R@{k}", f"MRR@{k}"] + list(PUBLISHED)
               + ["build s", "warm ms"])
    print(table(headers, rows, left=(0, 1)))
    print("(queries: scored, i.e. with a target in the tree; missing: targets the checkout lacks, left out of n)")
    for r in results:
        if "error" in r:
            print(f"failed {r['name']}: {r['error']}")
    for name in overall["unscored_repos"]:
        print(f"unscored {name}: no annotated file exists in this checkout; left out of every mean")
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")

    print()
    rows = [[lang, str(g["repos"]), str(g["queries"]), g["ndcg"], g["recall"], g["mrr"]] + [g[c] for c in PUBLISHED]
            for lang, g in overall["by_language"].items()]
    print(table(["language", "repos", "queries", label, f"R@{k}", f"MRR@{k}"] + list(PUBLISHED), rows))

    print()
    rows = [[cat, str(g["queries"]), g["ndcg"], g["recall"], g["mrr"], g["ndcg_mean_over_repos"]]
            for cat, g in overall["by_category"].items()]
    print(table(["category", "queries", label, f"R@{k}", f"MRR@{k}", f"{label} repo-mean"], rows))

    print()
    g, q, allpub = overall["mean_over_repos"], overall["mean_over_queries"], overall["published_mean_over_all_repos"]
    rows = [
        [f"mean over repositories ({g['repos']})", g["ndcg"], g["recall"], g["mrr"]] + [g[c] for c in PUBLISHED],
        [f"mean over queries ({q['queries']})", q["ndcg"], q["recall"], q["mrr"]] + ["-"] * len(PUBLISHED),
        [f"published, all {overall['published_repos']} repositories", "-", "-", "-"] + [allpub[c] for c in PUBLISHED],
    ]
    print(table(["overall", label, f"R@{k}", f"MRR@{k}"] + list(PUBLISHED), rows))
    if overall["ndcg_interval"]:
        low, high = overall["ndcg_interval"]
        print(f"{label}, mean over repositories: 95% interval {fmt(low, 4)}-{fmt(high, 4)} (bootstrap: "
              f"repositories drawn, then their queries; a target inside it is not measurably missed or met)")
    calibration = overall["confidence_calibration"]
    if calibration:
        print(f"\nconfidence calibration: the top-{k} hits of every scored query, pooled over repositories")
        print(calibration_text(calibration, k))
    lines = overall["hit_lines"]
    if lines["hits"]:
        print(f"\nlines per hit (what an agent reads): first hit {lines['first']:.1f}, "
              f"top {k} {lines['top_k']:.1f} (mean over {lines['hits']} hits with a span)")
    built = sum(1 for r in results if r.get("index_status") == "indexed")
    print(f"\nindexes built or updated: {built} ({overall['total_build_seconds']:.1f}s of build time), reused: "
          f"{len(results) - built}; median over repositories of the warm query p50: "
          f"{fmt(overall['median_warm_query_ms'], 2)} ms")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--checkouts", default="/work/checkouts/semble", help="directory of checkouts named like repos.json")
    parser.add_argument("--bench", default=os.path.join(PROJECT, "..", "shared", "bench", "semble-dev"))
    parser.add_argument("--retriever", default="lexical")
    parser.add_argument("--repos", default="", help="comma-separated subset of repository names")
    parser.add_argument("--workers", type=positive_int, default=2)
    parser.add_argument("-k", type=positive_int, default=10)
    parser.add_argument("--index-dir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "retrieval-eval-index"),
                        help="where indexes are kept (RETRIEVAL_INDEX_DIR), reused while fresh")
    parser.add_argument("--force", action="store_true", help="rebuild every index (times the builds)")
    parser.add_argument("--json", dest="json_out", help="write all numbers, per query too, to this file")
    args = parser.parse_args(argv)
    args.bench = os.path.normpath(args.bench)
    check_output(parser, args.json_out)
    if args.retriever != "all":  # a misspelt name failed every repository, one table row at a time
        from retrieval.retrievers.base import get_spec

        try:
            get_spec(args.retriever)
        except ValueError as exc:
            parser.error(f"{exc} (or all)")

    started = time.perf_counter()
    os.environ["RETRIEVAL_INDEX_DIR"] = os.path.abspath(args.index_dir)  # inherited by the workers
    published = load_published(args.bench)
    try:
        jobs, skipped = plan(args)
    except (OSError, ValueError) as exc:  # no or a broken repos.json: one line, not a traceback
        print(f"error: cannot read {os.path.join(args.bench, 'repos.json')}: {getattr(exc, 'strerror', None) or exc}",
              file=sys.stderr)
        return 1
    if not jobs:  # and why: each asked for is not in the benchmark, or has no checkout
        why = "; ".join(f"{name}: {reason}" for name, reason in sorted(skipped.items())) or "the benchmark lists none"
        print(f"error: no repository to evaluate ({why})", file=sys.stderr)
        return 1
    results = []
    with ProcessPoolExecutor(max_workers=max(1, args.workers)) as pool:
        # One stderr line per repository as it finishes: a run of minutes said nothing until its end.
        for done, result in enumerate(pool.map(run_repo, jobs), 1):
            results.append(result)
            outcome = "failed" if "error" in result else f"{result['seconds']:.1f}s"
            print(f"[{done}/{len(jobs)}] {result['name']}: {outcome}", file=sys.stderr, flush=True)
    overall = summarise(results, published, args.k)
    print_report(results, skipped, overall, published, args.k)
    elapsed = time.perf_counter() - started
    print(f"{len(jobs)} repositories in {elapsed:.1f}s with {args.workers} workers")
    if args.json_out:
        payload = {"args": vars(args), "seconds": elapsed, "overall": overall, "skipped": skipped, "repos": results}
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, ensure_ascii=False, indent=1)
    failed = any("error" in r for r in results)  # each named above
    if not failed and not overall["mean_over_repos"]["repos"]:  # as `retrieval eval`: a run that measured nothing must not pass
        print("error: no repository could be scored: no annotated file exists in any checkout; is --checkouts "
              "the semble-dev checkouts?", file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    from retrieval.streams import run_piped

    sys.exit(run_piped(main))
