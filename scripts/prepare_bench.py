#!/usr/bin/env python3
"""Checkouts for the benchmarks from the git mirrors the `fetch` tool brings (`../.mirror/<owner>+<name>/repo`).

- semble-dev: each repository of repos.json materialised at its pinned revision under
  `--checkouts/<name>`; when the mirror's snapshot lacks that revision, at the snapshot's HEAD (the
  benchmark's README allows it; the report names every such repository, so results can say so).
- swebench-dev: a JSON map {"owner/name": git dir} of the mirrors present (`--gitdirs`), which
  `eval_swebench.py --gitdirs` reads; its trees are materialised per base commit by that script.

Repositories without a mirror are listed, not fetched (fetching is the `fetch` tool's job).

    python scripts/prepare_bench.py --mirrors ../.mirror --checkouts /work/checkouts/semble \
        --gitdirs /work/checkouts/gitdirs.json
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(PROJECT, "scripts"))

from eval_swebench import materialise  # noqa: E402
from retrieval.evaluation.arguments import names  # noqa: E402


def slug(url: str) -> str:
    """`owner/name` of a GitHub URL (`https://github.com/psf/requests.git` -> `psf/requests`)."""
    tail = url.rstrip("/").split("github.com/", 1)[-1]
    return tail[:-4] if tail.endswith(".git") else tail


def mirror_of(mirrors: str, owner_name: str) -> str | None:
    gitdir = os.path.join(mirrors, owner_name.replace("/", "+"), "repo")
    return gitdir if os.path.isdir(gitdir) else None


def has_commit(gitdir: str, revision: str) -> bool:
    probe = subprocess.run(["git", f"--git-dir={gitdir}", "cat-file", "-e", f"{revision}^{{tree}}"],
                           capture_output=True)
    return probe.returncode == 0


def prepare_semble(repos: list[dict], mirrors: str, checkouts: str) -> dict:
    """{name: {"revision": pinned|"HEAD", "missing_blobs": n} or {"skipped": why}} per repository."""
    report: dict = {}
    for repo in repos:
        name = repo["name"]
        gitdir = mirror_of(mirrors, slug(repo["url"]))
        if gitdir is None:
            report[name] = {"skipped": f"no mirror of {slug(repo['url'])} (fetch github:{slug(repo['url'])})"}
            continue
        revision = repo["revision"] if has_commit(gitdir, repo["revision"]) else "HEAD"
        dest = os.path.join(checkouts, name)
        missing = materialise(gitdir, revision, dest)
        entry = {"revision": "pinned" if revision != "HEAD" else "HEAD", "missing_blobs": len(missing)}
        root = repo.get("benchmark_root")
        if root and not os.path.isdir(os.path.join(dest, root)):
            entry["skipped"] = f"the checkout lacks its benchmark_root {root}"
        report[name] = entry
    return report


def swebench_gitdirs(instances_path: str, mirrors: str) -> tuple[dict, list[str]]:
    """({owner/name: git dir} for the mirrors present, [owner/name without one])."""
    with open(instances_path, encoding="utf-8") as fh:
        names = sorted({json.loads(line)["repo"] for line in fh if line.strip()})
    found = {n: mirror_of(mirrors, n) for n in names}
    return {n: d for n, d in found.items() if d}, [n for n, d in found.items() if not d]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bench = os.path.join(PROJECT, "..", "shared", "bench")
    parser.add_argument("--bench", default=bench, help="the shared bench directory (holding semble-dev/ and swebench-dev/)")
    parser.add_argument("--mirrors", default=os.path.join(PROJECT, "..", ".mirror"))
    parser.add_argument("--checkouts", default="/work/checkouts/semble", help="semble-dev checkouts go here")
    parser.add_argument("--gitdirs", help="write the swebench-dev {owner/name: git dir} map here")
    parser.add_argument("--repos", default="", help="comma-separated subset of semble-dev names")
    args = parser.parse_args(argv)

    path = os.path.join(args.bench, "semble-dev", "repos.json")
    try:
        with open(path, encoding="utf-8") as fh:
            repos = json.load(fh)
    except (OSError, ValueError) as exc:  # one line, not a traceback
        print(f"error: cannot read {path}: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
        return 1
    if args.repos:
        wanted = set(names(args.repos))
        unknown = sorted(wanted - {r["name"] for r in repos})
        if unknown:  # a misspelt name prepared the others and said nothing of it
            parser.error(f"--repos: no repository {', '.join(unknown)} in semble-dev")
        repos = [r for r in repos if r["name"] in wanted]
    if not os.path.isdir(args.mirrors):  # every repository was "skipped (no mirror)", exit 0
        print(f"error: no directory of mirrors at {args.mirrors} (--mirrors: where `fetch` brings them)",
              file=sys.stderr)
        return 1
    os.makedirs(args.checkouts, exist_ok=True)
    report = prepare_semble(repos, os.path.abspath(args.mirrors), args.checkouts)
    for name, entry in report.items():
        if "skipped" in entry:
            print(f"semble-dev {name}: skipped ({entry['skipped']})")
        else:
            blobs = f", {entry['missing_blobs']} blobs missing from the mirror" if entry["missing_blobs"] else ""
            where = ("pinned revision" if entry["revision"] == "pinned"
                     else "snapshot HEAD (pinned revision not in the mirror)")
            print(f"semble-dev {name}: {where}{blobs}")
    if args.gitdirs:
        gitdirs, absent = swebench_gitdirs(os.path.join(args.bench, "swebench-dev", "instances.jsonl"),
                                           os.path.abspath(args.mirrors))
        with open(args.gitdirs, "w", encoding="utf-8") as fh:
            json.dump(gitdirs, fh, indent=1, sort_keys=True)
        print(f"swebench-dev: {len(gitdirs)} mirrors in {args.gitdirs}" + (f"; no mirror of {', '.join(absent)}" if absent else ""))
    return 0


if __name__ == "__main__":
    from retrieval.streams import run_piped

    sys.exit(run_piped(main))
