#!/usr/bin/env python3
"""The warm path: `retrieval query` answered by a running `retrieval serve`, side by side with rg.

    /tmp/v/bin/python scripts/bench_serve.py --root /path/to/tree [--root another] [--json]

For each root, in one run: the index is built (or reused with --index-dir), then
  cold      `retrieval query` with no server (RETRIEVAL_NO_SERVER=1), a fresh process per query
  warm      the same queries, a fresh client process each, answered by the server (lexical, --json)
  edit      append a line to a file, then query its new word: the edit must be in the answer
  rg        `rg -i -c WORD ROOT` for the longest word of each query
  server    the same queries sent by one long-lived client: the server's share of a warm query
  start     `python -c pass` with the same interpreter: the floor of any fresh client process
plus the server's resident memory after the queries and its CPU use over --idle seconds of quiet.
The store goes to a temporary RETRIEVAL_INDEX_DIR; the edited file is restored byte for byte.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_speed import DEFAULT_QUERIES, find_cli, load_average, log, p50, p90, pick_file, read_manifest, rg_times, run  # noqa: E402

TARGETS_MS = {"small": 40.0, "scale": 60.0}  # warm p50; scale: a tree of 20,000 files or more


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _query_times(cli, root, queries, env, rounds) -> list[float]:
    return [run([cli, "query", "--root", root, q, "--json"], env)[0] for _ in range(rounds) for q in queries]


SERVER_SHARE = """
import json, os, sys, time
from retrieval.server import client
root, queries, rounds = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
store, times = client.store_dir(root), []
for _ in range(rounds):
    for q in queries:
        header = {"op": "run", "argv": ["query", "--root", root, q, "--json"], "cwd": os.getcwd(),
                  "version": client.code_version(), "env": client.environment(), "encodings": client._encodings(), "stdin_len": 0}
        start = time.perf_counter()
        reply, _ = client.call(store, header)
        times.append(time.perf_counter() - start)
        assert reply.get("ok"), reply
print(json.dumps(times))
"""


def _server_times(root, queries, env, rounds) -> list[float]:
    # Not from the checkout: `-c` puts the current directory first on sys.path, and a source tree's
    # modules are another code version than the installed server's.
    done = subprocess.run([sys.executable, "-c", SERVER_SHARE, root, json.dumps(queries), str(rounds)], env=env,
                          capture_output=True, text=True, cwd=tempfile.gettempdir())
    if done.returncode:
        raise SystemExit(f"the server's share could not be measured: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout)


def _edit_times(cli, root, store, env, edits: int) -> list[float]:
    """Append a new word to a median-sized file, query it at once (it must be the top hit), restore."""
    files = read_manifest(store, "lexical")["files"]
    table = {p: [files[c][i] for c in ("size", "mtime", "digest", "language", "kind", "chunks")]
             for i, p in enumerate(files["path"])}
    rel = pick_file(table)
    path = os.path.join(root, rel)
    st = os.stat(path)
    with open(path, "rb") as fh:
        original = fh.read()
    times = []
    try:
        for n in range(edits):
            word = "zqbenchedit" + "".join(chr(ord("a") + int(d)) for d in str(n)) + "q"
            with open(path, "ab") as fh:
                fh.write(f"\n# {word}\n".encode())
            elapsed, _, out = run([cli, "query", "--root", root, word, "--json"], env)
            hits = json.loads(out)["results"]
            if not hits or hits[0]["path"] != rel:
                sys.exit(f"error: the edit to {rel} is not in the answer: {hits[:1]}")
            times.append(elapsed)
    finally:
        with open(path, "wb") as fh:
            fh.write(original)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    return times


def bench_root(root: str, cli: str, index_dir: str, rounds: int, edits: int, idle: float, use_rg: bool) -> dict:
    env = dict(os.environ, RETRIEVAL_INDEX_DIR=index_dir)
    env.pop("RETRIEVAL_NO_SERVER", None)
    cold_env = dict(env, RETRIEVAL_NO_SERVER="1")
    store = subprocess.run([sys.executable, "-c", "import sys; from retrieval.store.layout import store_dir; "
                            "print(store_dir(sys.argv[1]))", root], env=env, capture_output=True, text=True,
                           check=True).stdout.strip()
    r: dict = {"root": root, "files": None}
    log(f"{root}: index")
    r["index_s"] = run([cli, "index", "--root", root, "--retriever", "lexical"], cold_env)[0]
    r["files"] = sum(1 for c in read_manifest(store, "lexical")["files"]["chunks"] if c > 0)
    queries = DEFAULT_QUERIES
    log(f"{root}: cold queries")
    cold = _query_times(cli, root, queries, cold_env, 1)
    log(f"{root}: start the server")
    run([cli, "serve", "--detach", "--root", root, "--idle-timeout", "600"], cold_env)
    with open(os.path.join(store, "serve", "info.json")) as fh:
        pid = json.load(fh)["pid"]
    try:
        run([cli, "query", "--root", root, "warm up", "--json"], env)
        log(f"{root}: warm queries ({rounds} rounds)")
        warm = _query_times(cli, root, queries, env, rounds)
        log(f"{root}: the server's share (one long-lived client, no process start)")
        r["server_p50_ms"] = p50(_server_times(root, queries, env, rounds)) * 1000
        log(f"{root}: edits then queries")
        edit = _edit_times(cli, root, store, env, edits)
        # Let the server finish refreshing after the last restore (ahead of any query), then measure.
        deadline = time.monotonic() + 120
        before = _cpu_seconds(pid)
        while time.monotonic() < deadline:
            time.sleep(1.0)
            now = _cpu_seconds(pid)
            if now - before < 0.005:
                break
            before = now
        r["server_rss_mb"] = _rss_mb(pid)
        log(f"{root}: idle CPU over {idle:g}s")
        before = _cpu_seconds(pid)
        time.sleep(idle)
        r["idle_cpu_pct"] = 100 * (_cpu_seconds(pid) - before) / idle
    finally:
        run([cli, "serve", "--stop", "--root", root], cold_env, check=False)
    python = os.path.join(os.path.dirname(cli), "python")
    start = [run([python if os.access(python, os.X_OK) else sys.executable, "-c", "pass"], env)[0]
             for _ in range(len(queries))]  # the floor of any fresh client process
    rg = rg_times(root, queries * rounds) if use_rg else None
    big = r["files"] >= 20000
    r.update(
        cold_p50_ms=p50(cold) * 1000, warm_p50_ms=p50(warm) * 1000, warm_p90_ms=p90(warm) * 1000,
        edit_p50_ms=p50(edit) * 1000, python_start_p50_ms=p50(start) * 1000, rg_p50_ms=p50(rg) * 1000 if rg else None,
        rg_p90_ms=p90(rg) * 1000 if rg else None, target_warm_p50_ms=TARGETS_MS["scale" if big else "small"],
    )
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", action="append", required=True)
    ap.add_argument("--rounds", type=int, default=5, help="times each of the 20 queries is asked warm")
    ap.add_argument("--edits", type=int, default=10)
    ap.add_argument("--idle", type=float, default=10.0, help="seconds of quiet over which idle CPU is measured")
    ap.add_argument("--index-dir", help="keep the stores here (reused by the next run) instead of a temp dir")
    ap.add_argument("--no-rg", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    cli = find_cli()
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp:
        for root in args.root:
            results.append(bench_root(os.path.abspath(root), cli, args.index_dir or tmp, args.rounds, args.edits,
                                      args.idle, not args.no_rg))
    load = load_average()
    if args.json:
        print(json.dumps({"load_average": load, "results": results}, indent=2))
        return
    print(f"load average {load:.2f}" if load is not None else "load average unknown")
    cols = [("files", "files", "{:d}"), ("cold p50", "cold_p50_ms", "{:.0f} ms"),
            ("warm p50", "warm_p50_ms", "{:.0f} ms"), ("server share p50", "server_p50_ms", "{:.0f} ms"), ("warm p90", "warm_p90_ms", "{:.0f} ms"),
            ("edit+query p50", "edit_p50_ms", "{:.0f} ms"), ("python start p50", "python_start_p50_ms", "{:.0f} ms"), ("rg p50", "rg_p50_ms", "{:.0f} ms"),
            ("target", "target_warm_p50_ms", "<= {:.0f} ms"), ("server RSS", "server_rss_mb", "{:.0f} MB"),
            ("idle CPU", "idle_cpu_pct", "{:.2f} %")]
    print("| root | " + " | ".join(c[0] for c in cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for r in results:
        cells = [fmt.format(r[key]) if r.get(key) is not None else "-" for _, key, fmt in cols]
        print(f"| {os.path.basename(r['root'])} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    from retrieval.streams import run_piped

    sys.exit(run_piped(main))
