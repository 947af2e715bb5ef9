#!/usr/bin/env python3
"""Speed benchmark for `retrieval`: index, refresh, query latency, store size, rg for reference.

Run it with the Python that has `retrieval` installed, e.g.
    /tmp/v/bin/python scripts/bench_speed.py --root /path/to/tree [--json] [--targets scale]

`--targets scale` checks the large-monorepo targets (see scripts/bench_scale.py) instead of the
small-repository ones.

By default the store goes to a temporary RETRIEVAL_INDEX_DIR, so nothing is written into the tree;
the one file touched for the one-file refresh is restored byte for byte (content and mtime).
Results go to stdout (a table, or JSON with --json); progress goes to stderr.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

DEFAULT_QUERIES = [
    "parse configuration file", "http request retry", "error handling", "read json from disk",
    "authentication token validation", "database connection pool", "logging setup",
    "command line argument parsing", "unit test fixtures", "serialize object to json",
    "dependency injection", "cache invalidation", "async background task", "file upload",
    "validate user input", "websocket connection", "middleware", "OAuth2PasswordBearer",
    "APIRouter", "exception handler",
]
# metric: upper bound (a value above it is a miss)
TARGET_SETS = {
    # a repository of a few thousand files
    "repo": {"full_index_s": 10.0, "noop_refresh_s": 0.3, "cold_query_p50_ms": 150.0,
             "inproc_query_p50_ms": 10.0, "store_ratio": 1.5},
    # a 50,000-file, ~500 MB monorepo on 2 cores
    "scale": {"full_index_s": 180.0, "full_index_peak_rss_mb": 2048.0, "noop_refresh_s": 2.0,
              "cold_query_p50_ms": 300.0},
}
TARGETS = TARGET_SETS["repo"]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def fail(msg: str) -> None:
    sys.exit(f"error: {msg}")


def p50(xs):
    return statistics.median(xs)


def p90(xs):
    return statistics.quantiles(xs, n=10, method="inclusive")[8] if len(xs) > 1 else xs[0]


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants, from /proc (0 where there is none)."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/statm") as fh:
                total += int(fh.read().split()[1]) * PAGE
            with open(f"/proc/{p}/task/{p}/children") as fh:
                stack.extend(int(c) for c in fh.read().split())
        except (OSError, ValueError, IndexError):
            pass
    return total / 2**20


PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
LAST_TREE_PEAK_MB = [0.0]  # sampled peak of the last run() with sample_tree=True


def run(cmd, env, check=True, sample_tree=False):
    """Run cmd; return (wall seconds, peak RSS in MB, stdout text).

    The peak RSS is the largest single process (the kernel's figure); with sample_tree the summed
    RSS of the whole process tree (worker processes included) is also sampled every 0.1 s into
    LAST_TREE_PEAK_MB[0]."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        sampler = None
        if sample_tree:
            import threading

            LAST_TREE_PEAK_MB[0] = 0.0
            done = threading.Event()

            def sample():
                while not done.wait(0.1):
                    LAST_TREE_PEAK_MB[0] = max(LAST_TREE_PEAK_MB[0], tree_rss_mb(proc.pid))

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
        _pid, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        if sampler is not None:
            done.set()
            sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        text, errtext = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if check and proc.returncode != 0:
        last = (errtext.strip().splitlines() or ["(no output)"])[-1]
        fail(f"{' '.join(cmd[:3])} exited {proc.returncode}: {last}")
    return elapsed, usage.ru_maxrss / 1024.0, text  # ru_maxrss is in KiB on Linux


def find_cli() -> str:
    beside = os.path.join(os.path.dirname(sys.executable), "retrieval")
    cli = beside if os.access(beside, os.X_OK) else shutil.which("retrieval")
    if not cli:
        fail("the `retrieval` command was not found (run this with the venv's python)")
    return cli


def read_manifest(store: str, name: str) -> dict:
    with open(os.path.join(store, name, "manifest.json"), encoding="utf-8") as fh:
        return json.load(fh)


def pick_file(files: dict) -> str:
    """The median-sized indexed code file (docs if there is no code; ties broken by path)."""
    indexed = sorted((e[0], p) for p, e in files.items() if e[5] > 0 and e[4] == "code")
    indexed = indexed or sorted((e[0], p) for p, e in files.items() if e[5] > 0)
    if not indexed:
        fail("no file was indexed")
    return indexed[len(indexed) // 2][1]


def one_file_refresh(root: str, rel: str, index_cmd, env) -> tuple[float, float]:
    """Append a line to rel, refresh, restore it exactly, refresh again. Returns both times."""
    path = os.path.join(root, rel)
    st = os.stat(path)
    with open(path, "rb") as fh:
        original = fh.read()
    try:
        with open(path, "ab") as fh:
            fh.write(b"\nbench_speed_probe_line = 1\n")
        changed_s, _, out = run(index_cmd, env)
        log("   " + out.strip())
    finally:
        with open(path, "wb") as fh:
            fh.write(original)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    with open(path, "rb") as fh:
        if fh.read() != original or os.stat(path).st_mtime_ns != st.st_mtime_ns:
            fail(f"could not restore {path} exactly")
    restored_s = run(index_cmd, env)[0]
    return changed_s, restored_s


def rg_times(root: str, queries) -> list[float] | None:
    rg = shutil.which("rg")
    if not rg:
        return None
    times = []
    for q in queries:
        word = max(q.split(), key=len)
        times.append(run([rg, "-i", "-c", word, root], os.environ.copy(), check=False)[0])
    return times


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def bench(root: str, *, retriever: str = "lexical", queries=DEFAULT_QUERIES, rounds: int = 5,
          keep_store: bool = False, in_tree: bool = False, index_dir: str | None = None,
          use_rg: bool = True, targets: dict = TARGETS) -> dict:
    """Measure one tree; returns the results dict (what --json prints)."""
    root = os.path.abspath(root)
    cli, env = find_cli(), os.environ.copy()
    tmp = None
    if in_tree:
        env.pop("RETRIEVAL_INDEX_DIR", None)
    elif index_dir:
        os.makedirs(index_dir, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix="bench_speed-", dir=index_dir)
        env["RETRIEVAL_INDEX_DIR"] = tmp
    else:
        tmp = tempfile.mkdtemp(prefix="bench_speed-")
        env["RETRIEVAL_INDEX_DIR"] = tmp
    os.environ.pop("RETRIEVAL_INDEX_DIR", None)
    os.environ.update(env)  # the in-process search must see the same store
    from retrieval import service
    from retrieval.store import layout

    store = layout.store_dir(root)
    index_cmd = [cli, "index", "--root", root, "--retriever", retriever]
    r: dict = {"root": root, "retriever": retriever, "queries": len(queries), "store": store,
               "load_before": load_average()}
    try:
        if in_tree:
            run([cli, "clean", "--root", root], env)
        log("1/8 full index (clean store)")
        cpu_before = os.times()
        r["full_index_s"], r["full_index_peak_rss_mb"], _ = run(index_cmd, env, sample_tree=True)
        cpu_after = os.times()
        r["full_index_tree_rss_mb"] = LAST_TREE_PEAK_MB[0] or None
        # CPU seconds of the index process and its workers: on a shared machine, wall time also
        # counts the time other programs had the cores.
        r["full_index_cpu_s"] = (cpu_after.children_user + cpu_after.children_system
                                 - cpu_before.children_user - cpu_before.children_system)
        files = service.file_table(read_manifest(store, retriever))
        indexed = [e for e in files.values() if e[5] > 0]
        r["files"], r["chunks"] = len(indexed), sum(e[5] for e in indexed)
        r["source_bytes"] = sum(e[0] for e in indexed)
        r["manifest_bytes"] = os.path.getsize(os.path.join(store, retriever, "manifest.json"))

        log(f"2/8 no-change refresh x{rounds}")
        noop = [run(index_cmd, env) for _ in range(rounds)]
        r["noop_refresh_s"] = p50([t for t, _, _ in noop])
        r["noop_refresh_peak_rss_mb"] = max(m for _, m, _ in noop)

        rel = pick_file(files)
        log(f"3/8 one-file refresh ({rel})")
        r["one_file"] = rel
        r["one_file_refresh_s"], r["restore_refresh_s"] = one_file_refresh(root, rel, index_cmd, env)

        log(f"4/8 cold-process queries x{len(queries)} (and with --stale-ok)")
        qcmd = lambda q, *extra: [cli, "query", q, "--root", root, "--retriever", retriever, "--json", *extra]
        run(qcmd(queries[0]), env)  # warm the page cache; not counted
        cold = [run(qcmd(q), env)[0] * 1000 for q in queries]
        r["cold_query_p50_ms"], r["cold_query_p90_ms"] = p50(cold), p90(cold)
        cold_ok = [run(qcmd(q, "--stale-ok"), env)[0] * 1000 for q in queries]
        r["cold_stale_ok_query_p50_ms"], r["cold_stale_ok_query_p90_ms"] = p50(cold_ok), p90(cold_ok)
        # The floor every cold query pays: interpreter start and the CLI's imports.
        r["cold_startup_ms"] = p50([run([cli, "--version"], env)[0] * 1000 for _ in range(rounds)])

        log(f"5/8 cold-query parts in-process x{rounds}: manifest load, freshness check")
        loads, checks = [], []
        for _ in range(rounds):
            t = time.perf_counter()
            m = layout.read_manifest(store, retriever)
            loads.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            current = service.is_current(root, m)
            checks.append((time.perf_counter() - t) * 1000)
        r["manifest_load_ms"], r["freshness_check_ms"], r["fresh"] = p50(loads), p50(checks), current

        log(f"6/8 in-process queries x{rounds} rounds")
        for stale_ok, key in ((False, "inproc_query"), (True, "inproc_stale_ok_query")):
            per_query = {q: [] for q in queries}
            for q in queries:  # warm-up
                service.search(root, q, retriever=retriever, stale_ok=stale_ok)
            for _ in range(rounds):
                for q in queries:
                    t = time.perf_counter()
                    service.search(root, q, retriever=retriever, stale_ok=stale_ok)
                    per_query[q].append((time.perf_counter() - t) * 1000)
            medians = [p50(v) for v in per_query.values()]
            r[key + "_p50_ms"], r[key + "_p90_ms"] = p50(medians), p90(medians)

        log("7/8 store size")
        r["store_bytes"] = layout.directory_size(store)
        r["store_ratio"] = r["store_bytes"] / r["source_bytes"] if r["source_bytes"] else None

        log("8/8 rg reference" + ("" if use_rg else " (skipped)"))
        rg = rg_times(root, queries) if use_rg else None
        r["rg_p50_ms"] = p50(rg) * 1000 if rg else None
        r["rg_p90_ms"] = p90(rg) * 1000 if rg else None
    finally:
        if keep_store:
            log(f"store kept at {store}")
        elif tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        elif os.path.isdir(store):
            run([cli, "clean", "--root", root], env, check=False)

    r["load_after"] = load_average()
    r["targets"] = dict(targets)
    r["missed_targets"] = [k for k, t in targets.items() if r.get(k) is None or r[k] > t]
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True, help="tree to benchmark (any directory)")
    ap.add_argument("--retriever", default="lexical")
    ap.add_argument("--queries", help="file with one query per line (default: 20 built-in queries)")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    ap.add_argument("--keep-store", action="store_true", help="do not delete the store afterwards")
    ap.add_argument("--in-tree", action="store_true",
                    help="use the default store location (<root>/.retrieval); it is cleaned first")
    ap.add_argument("--index-dir", help="put the temporary store under this directory (default: the system temp dir)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds for no-change refresh and in-process queries")
    ap.add_argument("--targets", choices=sorted(TARGET_SETS), default="repo", help="which targets to check")
    ap.add_argument("--no-rg", action="store_true", help="skip the rg reference timings")
    args = ap.parse_args()

    root = os.path.abspath(args.root)
    if not os.path.isdir(root):
        fail(f"root is not a directory: {args.root}")
    queries = DEFAULT_QUERIES
    if args.queries:
        try:
            with open(args.queries, encoding="utf-8") as fh:
                queries = [line.strip() for line in fh if line.strip()]
        except OSError as exc:
            fail(f"cannot read {args.queries}: {exc.strerror}")
        if not queries:
            fail(f"no queries in {args.queries}")
    r = bench(root, retriever=args.retriever, queries=queries, rounds=args.rounds, keep_store=args.keep_store,
              in_tree=args.in_tree, index_dir=args.index_dir, use_rg=not args.no_rg,
              targets=TARGET_SETS[args.targets])
    if args.json:
        print(json.dumps(r, indent=2))
    else:
        print_table(r)


def print_table(r: dict) -> None:
    def fmt(v, unit):
        if v is None:
            return "n/a"
        return {"s": f"{v:.3f} s", "ms": f"{v:.1f} ms", "MB": f"{v:.1f} MB", "x": f"{v:.2f}x"}.get(unit, f"{v:,}")

    rg_note = "no rg timings (skipped or rg not installed)" if r["rg_p50_ms"] is None else ""
    rows = [
        ("files indexed", r["files"], "", None), ("chunks", r["chunks"], "", None),
        ("source bytes (indexed files)", r["source_bytes"], "", None),
        ("full index (clean store)", r["full_index_s"], "s", "full_index_s"),
        ("  CPU time (process + workers)", r["full_index_cpu_s"], "s", None),
        ("  peak RSS of index process", r["full_index_peak_rss_mb"], "MB", "full_index_peak_rss_mb"),
        ("  peak RSS, with workers (sampled)", r["full_index_tree_rss_mb"], "MB", None),
        ("no-change refresh (median)", r["noop_refresh_s"], "s", "noop_refresh_s"),
        ("  peak RSS of refresh process", r["noop_refresh_peak_rss_mb"], "MB", None),
        ("one-file refresh", r["one_file_refresh_s"], "s", None),
        ("  refresh after restoring it", r["restore_refresh_s"], "s", None),
        ("cold-process query p50", r["cold_query_p50_ms"], "ms", "cold_query_p50_ms"),
        ("cold-process query p90", r["cold_query_p90_ms"], "ms", None),
        ("  cold, --stale-ok, p50", r["cold_stale_ok_query_p50_ms"], "ms", None),
        ("  cold, --stale-ok, p90", r["cold_stale_ok_query_p90_ms"], "ms", None),
        ("  process start (--version)", r["cold_startup_ms"], "ms", None),
        ("  manifest load (in-process)", r["manifest_load_ms"], "ms", None),
        ("  freshness check (in-process)", r["freshness_check_ms"], "ms", None),
        ("in-process query p50", r["inproc_query_p50_ms"], "ms", "inproc_query_p50_ms"),
        ("in-process query p90", r["inproc_query_p90_ms"], "ms", None),
        ("  in-process, stale_ok, p50", r["inproc_stale_ok_query_p50_ms"], "ms", None),
        ("  in-process, stale_ok, p90", r["inproc_stale_ok_query_p90_ms"], "ms", None),
        ("store bytes", r["store_bytes"], "", None),
        ("  manifest bytes", r["manifest_bytes"], "", None),
        ("store / source bytes", r["store_ratio"], "x", "store_ratio"),
        ("rg -i -c p50 (reference)", r["rg_p50_ms"], "ms", None),
        ("rg -i -c p90 (reference)", r["rg_p90_ms"], "ms", None),
    ]
    print(f"root: {r['root']}  retriever: {r['retriever']}  queries: {r['queries']}  "
          f"load average (1 min) before/after: {fmt_load(r['load_before'])}/{fmt_load(r['load_after'])}")
    print(f"one-file refresh touched: {r['one_file']}" + (f"  ({rg_note})" if rg_note else ""))
    print(f"{'metric':<32} {'value':>14}  {'target':>12}  ok")
    print("-" * 66)
    for label, value, unit, key in rows:
        target = ok = ""
        if key and key in r["targets"]:
            target = "<= " + fmt(r["targets"][key], unit)
            ok = "yes" if key not in r["missed_targets"] else "MISS"
        print(f"{label:<32} {fmt(value, unit):>14}  {target:>12}  {ok}")


def fmt_load(value) -> str:
    return "n/a" if value is None else f"{value:.2f}"


if __name__ == "__main__":
    main()
