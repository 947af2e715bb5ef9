#!/usr/bin/env python3
"""Two `eval_semble.py --json` results side by side: NDCG@10 (mean over the repositories both scored)
overall, per language and per category, how many queries rose and fell, and with --queries each
query that moved. What a change must show before it lands: a gain on a few repositories is not
evidence until the whole set agrees, and a gain the benchmark's own sampling noise could make is not
a gain: the difference comes with a 95% interval from a paired bootstrap in two stages (draw the
repositories, then the queries of each drawn one, since the acceptance set holds other repositories
and other queries) and the two-sided sign test of the queries that moved.

    python scripts/compare_semble.py before.json after.json [--queries]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a source checkout

from retrieval.evaluation.arguments import description  # noqa: E402
from retrieval.evaluation.stats import bootstrap_interval, sign_test  # noqa: E402


def _scored(result: dict) -> dict[str, dict]:
    return {r["name"]: r for r in result["repos"]
            if "error" not in r and (r.get("summary") or {}).get("ndcg") is not None}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def compare(before: dict, after: dict) -> dict:
    """{"repos", "before", "after", "languages": {lang: (b, a)}, "categories": {cat: (b, a, n)},
    "moved": [(repo, before, after, category, query)], "up", "down", "interval", "after_interval", "sign_p"} over the
    repositories both scored."""
    a, b = _scored(before), _scored(after)
    names = sorted(a.keys() & b.keys())
    languages: dict[str, list[list[float]]] = defaultdict(lambda: [[], []])
    categories: dict[str, list[list[float]]] = defaultdict(lambda: [[], []])
    moved = []
    pairs = []  # per repository, the (before, after) NDCG of each query both runs scored
    for name in names:
        languages[a[name]["language"]][0].append(a[name]["summary"]["ndcg"])
        languages[a[name]["language"]][1].append(b[name]["summary"]["ndcg"])
        later = {q["query"]: q for q in b[name]["queries"]}
        pairs.append([])
        for q in a[name]["queries"]:
            other = later.get(q["query"])
            if other is None or q["scores"]["ndcg"] is None or other["scores"]["ndcg"] is None:
                continue
            x, y = q["scores"]["ndcg"], other["scores"]["ndcg"]
            categories[q["category"]][0].append(x)
            categories[q["category"]][1].append(y)
            pairs[-1].append((x, y))
            if abs(x - y) > 1e-9:
                moved.append((name, x, y, q["category"], q["query"]))
    pairs = [p for p in pairs if p]
    up = sum(1 for m in moved if m[2] > m[1])
    down = sum(1 for m in moved if m[2] < m[1])
    return {
        "repos": len(names),
        "before": _mean([a[n]["summary"]["ndcg"] for n in names]),
        "after": _mean([b[n]["summary"]["ndcg"] for n in names]),
        "languages": {lang: (_mean(x), _mean(y)) for lang, (x, y) in sorted(languages.items())},
        "categories": {cat: (_mean(x), _mean(y), len(x)) for cat, (x, y) in sorted(categories.items())},
        "moved": moved,
        "up": up,
        "down": down,
        "interval": bootstrap_interval(pairs),
        "after_interval": bootstrap_interval([[(0.0, y) for _x, y in repo] for repo in pairs]),
        "sign_p": sign_test(up, down),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--queries", action="store_true", help="list every query whose NDCG@10 moved")
    args = parser.parse_args(argv)
    results = []
    for path in (args.before, args.after):
        try:
            with open(path, encoding="utf-8") as fh:
                result = json.load(fh)
        except (OSError, ValueError) as exc:
            print(f"error: cannot read {path}: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
            return 1
        if not isinstance(result, dict) or not isinstance(result.get("repos"), list):
            print(f"error: {path} is not an eval_semble.py --json result (no 'repos' list)", file=sys.stderr)
            return 1
        results.append(result)
    c = compare(*results)
    if not c["repos"]:  # printed as "0 repositories: nan -> nan" with exit 0, a comparison that passed
        print("error: no repository was scored in both results", file=sys.stderr)
        return 1
    for label, path, result in (("before", args.before, results[0]), ("after", args.after, results[1])):
        retrievers = sorted({r.get("retriever") or "?" for r in result["repos"]})
        print(f"{label}: {path} ({', '.join(retrievers)})")  # which two runs the figures are
    print(f"{c['repos']} repositories: {c['before']:.4f} -> {c['after']:.4f} "
          f"({c['after'] - c['before']:+.4f}); queries up {c['up']}, down {c['down']}")
    if c["interval"]:
        (low, high), (a_low, a_high) = c["interval"], c["after_interval"]
        print(f"  difference 95% interval [{low:+.4f}, {high:+.4f}] (paired bootstrap: repositories, then "
              f"queries); sign test p = {c['sign_p']:.3f}; the after mean's own interval [{a_low:.4f}, {a_high:.4f}]")
    for lang, (x, y) in c["languages"].items():
        print(f"  {lang:12s} {x:.3f} -> {y:.3f} {y - x:+.3f}")
    for cat, (x, y, n) in c["categories"].items():
        print(f"  {cat:12s} {x:.3f} -> {y:.3f} (mean over {n} queries)")
    if args.queries:
        for repo, x, y, cat, query in sorted(c["moved"], key=lambda m: (m[2] - m[1], m[0], m[4])):
            print(f"{repo:20s} {x:.3f} -> {y:.3f} {cat:12s} {query}")
    return 0


if __name__ == "__main__":
    from retrieval.streams import run_piped

    sys.exit(run_piped(main))
