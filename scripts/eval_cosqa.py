#!/usr/bin/env python3
"""MRR on CoSQA dev: 500 web-style questions over 6,267 Python functions (one correct function each).

Each function becomes one file (`functions/f<index>.py`) of a tree under --workdir (written once);
every retriever indexes that tree (its store under --workdir too) and answers every question; a
question scores 1/rank of the first hit in its function's file (0 beyond --depth files).

    python scripts/eval_cosqa.py --retrievers lexical,turbovec,hybrid --workdir /tmp/cosqa
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, PROJECT)  # run from a source checkout without installing

from retrieval.evaluation.arguments import check_output, description, names, positive_int  # noqa: E402


def file_name(index: int) -> str:
    return f"functions/f{index:05d}.py"


def write_tree(bench: str, tree: str) -> int:
    with open(os.path.join(bench, "code_idx_map.txt"), encoding="utf-8") as fh:
        functions = json.load(fh)
    marker = os.path.join(tree, ".complete")
    if not os.path.exists(marker):
        for code, index in functions.items():
            path = os.path.join(tree, file_name(index))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(code + "\n")
        with open(marker, "w") as fh:
            fh.write(str(len(functions)))
    return len(functions)


def reciprocal_rank(hits, target: str) -> float:
    seen: list[str] = []
    for hit in hits:
        if hit.source_path not in seen:
            seen.append(hit.source_path)
            if hit.source_path == target:
                return 1.0 / len(seen)
    return 0.0


def evaluate(tree: str, questions: list[dict], name: str, depth: int) -> dict:
    from retrieval import service
    from retrieval.evaluation.stats import mean_interval

    started = time.perf_counter()
    report = service.refresh(tree, name, progress=service.stderr_progress)
    build = time.perf_counter() - started
    engine = service.open_index(tree, name, stale_ok=True)
    scores, seconds = [], []
    for q in questions:
        started = time.perf_counter()
        hits = engine.search_detailed(q["doc"], depth)
        seconds.append(time.perf_counter() - started)
        scores.append(reciprocal_rank(hits, file_name(q["retrieval_idx"])))
    seconds.sort()
    return {
        "retriever": name,
        "mrr": 100 * sum(scores) / len(scores),
        # what resampling the 500 questions moves the MRR by: a target inside it is not measurably missed
        "mrr_interval": [100 * v for v in mean_interval(scores)],
        "hit_at_1": 100 * sum(s == 1.0 for s in scores) / len(scores),
        "hit_at_10": 100 * sum(s >= 0.1 for s in scores) / len(scores),
        "queries": len(scores),
        "index_status": report.status,
        "index_seconds": round(build, 1),
        "query_p50_ms": round(1000 * seconds[len(seconds) // 2], 1),
        "per_query": scores,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--bench", default=None, help="the CoSQA data (default: ../shared/bench/cosqa)")
    parser.add_argument("--workdir", required=True, help="where the tree and its index go")
    parser.add_argument("--retrievers", default="lexical")
    parser.add_argument("--depth", type=positive_int, default=100)
    parser.add_argument("--json", dest="json_out")
    args = parser.parse_args(argv)
    check_output(parser, args.json_out)
    from retrieval.retrievers.base import get_spec

    for name in names(args.retrievers):  # a misspelt name was a traceback after the tree was written
        try:
            get_spec(name)
        except ValueError as exc:
            parser.error(str(exc))
    bench = os.path.abspath(args.bench or os.path.join(PROJECT, "..", "shared", "bench", "cosqa"))
    if args.bench is None and not os.path.isdir(bench):  # a copy of the project elsewhere
        bench = "/work/shared/bench/cosqa"
    if not os.path.isdir(bench):  # a --bench given was silently replaced by the default data
        print(f"error: no CoSQA data at {bench}", file=sys.stderr)
        return 1
    tree = os.path.join(os.path.abspath(args.workdir), "tree")
    os.environ.setdefault("RETRIEVAL_INDEX_DIR", os.path.join(os.path.abspath(args.workdir), "index"))
    try:  # a bench directory without the data: one line, not a traceback
        with open(os.path.join(bench, "cosqa-retrieval-dev-500.json"), encoding="utf-8") as fh:
            questions = json.load(fh)
        n = write_tree(bench, tree)
    except (OSError, ValueError) as exc:
        where = f" {exc.filename}" if getattr(exc, "filename", None) else f" the data in {bench}"
        print(f"error: cannot read{where}: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
        return 1
    results = []
    for name in names(args.retrievers):
        result = evaluate(tree, questions, name, args.depth)
        results.append(result)
        low, high = result["mrr_interval"]
        print(f"{name}: MRR {result['mrr']:.1f} (95% interval {low:.1f}-{high:.1f})  hit@1 {result['hit_at_1']:.1f}  hit@10 {result['hit_at_10']:.1f}  "
              f"({result['queries']} queries over {n} functions; index {result['index_status']} in "
              f"{result['index_seconds']}s; query p50 {result['query_p50_ms']} ms)", flush=True)
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    from retrieval.streams import run_piped

    sys.exit(run_piped(main))
