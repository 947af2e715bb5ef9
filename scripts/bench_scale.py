#!/usr/bin/env python3
"""Scale curve: generate synthetic monorepos of several sizes and run the speed benchmark on each.

    /tmp/v/bin/python scripts/bench_scale.py --data /work/scale-data [--sizes 5000,20000,50000] [--json OUT]

Trees are generated once into <data>/mono-<N> (seeded, reused on later runs; a sidecar
<data>/mono-<N>.json records how they were made) and stores go under <data>/index. Each tree gets
the full bench_speed run (scale targets); the summary table is the growth curve. Progress goes to
stderr, the table to stdout.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_speed  # noqa: E402
import gen_monorepo  # noqa: E402

# Questions an engineer would ask of the generated monorepo, plus symbols in its vocabulary.
QUERIES = [
    "retry with backoff when the request times out", "validate session token", "parse config file",
    "serialize invoice payment", "connection pool lock", "schedule cron job", "upload attachment",
    "checkout cart discount coupon", "tenant permission policy", "flush metric histogram",
    "PaymentService", "SessionStore", "get_user_id", "fetchAccountOrder", "snapshot restore replica",
    "decode message payload", "register plugin extension", "invalid email address error",
    "websocket channel subscribe", "rate limit quota",
]


def ensure_tree(data: str, files: int, seed: int, jobs: int) -> tuple[str, dict]:
    root = os.path.join(data, f"mono-{files}")
    sidecar = root + ".json"
    if os.path.isfile(sidecar):
        with open(sidecar, encoding="utf-8") as fh:
            info = json.load(fh)
        if info.get("seed") == seed and info.get("files") == files and os.path.isdir(root):
            return root, info
        sys.exit(f"error: {root} exists but was made with other settings; remove it and {sidecar}")
    if os.path.exists(root):
        sys.exit(f"error: {root} exists without {sidecar} (an interrupted run?); remove it")
    bench_speed.log(f"generating {files} files into {root}")
    started = time.perf_counter()
    n, total = gen_monorepo.generate(root, files, seed, jobs)
    info = {"files": n, "bytes": total, "seed": seed, "generate_s": round(time.perf_counter() - started, 1)}
    with open(sidecar, "w", encoding="utf-8") as fh:
        json.dump(info, fh)
    bench_speed.log(f"  {n} files, {total / 1e6:.0f} MB in {info['generate_s']}s")
    return root, info


def print_curve(rows: list[dict]) -> None:
    head = (f"{'files':>7} {'MB':>6} {'index s':>8} {'cpu s':>6} {'s/1k files':>10} {'RSS MB':>7} {'refresh s':>9} "
            f"{'1-file s':>8} {'cold p50':>8} {'cold p90':>8} {'stale-ok':>8} {'fresh ms':>8} {'store MB':>8} {'load':>9}")
    print(head)
    print("-" * len(head))
    for r in rows:
        rss = r["full_index_tree_rss_mb"] or r["full_index_peak_rss_mb"]
        print(f"{r['files']:>7} {r['source_bytes'] / 1e6:>6.0f} {r['full_index_s']:>8.1f} {r['full_index_cpu_s']:>6.0f} "
              f"{r['full_index_s'] / r['files'] * 1000:>10.2f} {rss:>7.0f} "
              f"{r['noop_refresh_s']:>9.2f} {r['one_file_refresh_s']:>8.2f} {r['cold_query_p50_ms']:>8.0f} "
              f"{r['cold_query_p90_ms']:>8.0f} {r['cold_stale_ok_query_p50_ms']:>8.0f} "
              f"{r['freshness_check_ms']:>8.0f} {r['store_bytes'] / 1e6:>8.0f} "
              f"{bench_speed.fmt_load(r['load_before']):>4}/{bench_speed.fmt_load(r['load_after'])}")
    print("cpu s: CPU seconds of the index process and its workers; RSS: peak of the index process tree "
          "(sampled); cold p50/p90 and stale-ok: ms per `retrieval query --json` process; fresh ms: the "
          "in-process stat pass; load: 1-min load average before/after")
    for r in rows:
        missed = ", ".join(r["missed_targets"]) or "none"
        print(f"{r['files']} files: missed targets: {missed}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="directory for the trees and the stores (outside any checkout)")
    ap.add_argument("--sizes", default="5000,20000,50000", help="comma-separated file counts")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2, help="generator processes")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", help="also write every run's full results to this file")
    ap.add_argument("--rg", action="store_true", help="also time rg for reference")
    args = ap.parse_args(argv)
    try:
        sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    except ValueError:  # was a traceback
        ap.error(f"--sizes takes file counts separated by commas, not {args.sizes!r}")
    if not sizes or min(sizes) < 1:
        ap.error("--sizes takes positive file counts")
    data = os.path.abspath(args.data)
    os.makedirs(data, exist_ok=True)
    rows = []
    for files in sizes:
        root, info = ensure_tree(data, files, args.seed, args.jobs)
        bench_speed.log(f"benchmarking {root}")
        r = bench_speed.bench(root, queries=QUERIES, rounds=args.rounds, index_dir=os.path.join(data, "index"),
                              use_rg=args.rg, targets=bench_speed.TARGET_SETS["scale"])
        r["generated"] = info
        rows.append(r)
        bench_speed.print_table(r)
        print(flush=True)
    print_curve(rows)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=2)
    return 0


if __name__ == "__main__":
    from retrieval.streams import run_piped

    sys.exit(run_piped(main))
