#!/usr/bin/env python3
"""Two kinds of query an agent copies from code, sampled from the checkouts themselves: a message
pasted from a log (a string literal of six words or more, its placeholders filled) and a
definition asked for with its keyword (`def NAME`, `func NAME`, `fn NAME`). A message scores when
the first hit (or one of the first 3) is a file holding the literal; a keyword query when it is a
chunk holding the definition's line.

Files with `test` or `spec` in their path are not sampled (a message's file, not its test's), and
names defined in more than three places are not asked for. The sample is the same in every run (each
repository's seeded by its name), so two runs compare query by query.

    python scripts/bench_literals.py --checkouts /work/checkouts/semble [--retriever lexical]
        [--index-dir DIR] [--per-repo 10] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys

PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, PROJECT)  # run from a source checkout without installing

from retrieval.evaluation.arguments import check_output, description, positive_int  # noqa: E402

MESSAGE_EXTENSIONS = frozenset(".py .rb .go .rs .ex .js .ts .java .kt .scala .swift .cs .php .c .cc .cpp .h .hs .lua "
                               ".zig .sh".split())
_LITERAL = re.compile(r'"([^"\\\n]{25,200})"')
# What a program fills in before a message is shown (`%s`, `{name}`, `${x}`, `#{x}`): a sample value here.
_PLACEHOLDER = re.compile(r"[$#]?\{[^{}]*\}|%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[a-zA-Z]")
_WORD = re.compile(r"[A-Za-z]{2,}")
# (keyword, the definition's line) by extension; a name of three characters or fewer is too common.
DEFINITIONS = {
    ".py": ("def", re.compile(r"^\s*(?:async\s+)?def\s+([A-Za-z_]\w{3,})\s*\(")),
    ".rb": ("def", re.compile(r"^\s*def\s+(?:self\.)?([a-z_]\w{3,}[?!]?)")),
    ".ex": ("def", re.compile(r"^\s*def\s+([a-z_]\w{3,}[?!]?)")),
    ".go": ("func", re.compile(r"^func\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w{3,})\s*[\[(]")),
    ".rs": ("fn", re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:const\s+)?(?:unsafe\s+)?fn\s+([a-z_]\w{3,})")),
}


def sampled_files(root: str):
    """(path relative to root, text) of the files a sample may come from, in path order."""
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            path = os.path.relpath(os.path.join(directory, name), root)
            if "test" in path.lower() or "spec" in path.lower():
                continue
            try:
                with open(os.path.join(directory, name), encoding="utf-8") as fh:
                    yield path, fh.read()
            except (OSError, UnicodeDecodeError):
                continue


def collect(root: str) -> tuple[dict, dict]:
    """({literal: its files}, {(keyword, name): [(file, line)]}) of a checkout."""
    literals: dict[str, set[str]] = {}
    definitions: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for path, text in sampled_files(root):
        extension = os.path.splitext(path)[1]
        if extension in MESSAGE_EXTENSIONS:
            for m in _LITERAL.finditer(text):
                if " " in m.group(1) and len(_WORD.findall(m.group(1))) >= 6:
                    literals.setdefault(m.group(1), set()).add(path)
        if extension in DEFINITIONS:
            keyword, pattern = DEFINITIONS[extension]
            for n, line in enumerate(text.split("\n"), start=1):
                m = pattern.match(line)
                if m:
                    definitions.setdefault((keyword, m.group(1)), []).append((path, n))
    return literals, definitions


def score_repository(root: str, name: str, retriever: str, per_repo: int) -> dict:
    from retrieval import service

    literals, definitions = collect(root)
    rng = random.Random(name)
    rows = []
    for literal in rng.sample(sorted(literals), min(per_repo, len(literals))):
        hits = service.search(root, _PLACEHOLDER.sub("foo", literal), retriever=retriever, top_k=3).hits
        holding = [literal in _text(root, h.source_path) for h in hits]
        rows.append({"kind": "message", "query": _PLACEHOLDER.sub("foo", literal), "top1": bool(holding[:1] == [True]),
                     "top3": any(holding)})
    asked = sorted(key for key, places in definitions.items() if len(places) <= 3)
    for keyword, defined in rng.sample(asked, min(per_repo, len(asked))):
        hits = service.search(root, f"{keyword} {defined}", retriever=retriever, top_k=3).hits
        holding = [any(h.source_path == path and (h.start_line or 0) <= line <= (h.end_line or 0)
                       for path, line in definitions[(keyword, defined)]) for h in hits]
        rows.append({"kind": "keyword", "query": f"{keyword} {defined}", "top1": bool(holding[:1] == [True]),
                     "top3": any(holding)})
    return {"name": name, "queries": rows}


def _text(root: str, path: str) -> str:
    try:
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def summary(repos: list[dict], kind: str) -> dict:
    rows = [q for r in repos for q in r["queries"] if q["kind"] == kind]
    n = len(rows)
    return {"queries": n, "top1": sum(q["top1"] for q in rows) / n if n else None,
            "top3": sum(q["top3"] for q in rows) / n if n else None}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--checkouts", required=True, help="a directory of repositories (each one is sampled)")
    parser.add_argument("--retriever", default="lexical")
    parser.add_argument("--index-dir", default=None, help="where the indexes go (RETRIEVAL_INDEX_DIR)")
    parser.add_argument("--per-repo", type=positive_int, default=10, help="queries of each kind per repository")
    parser.add_argument("--json", dest="json_out")
    args = parser.parse_args(argv)
    check_output(parser, args.json_out)
    from retrieval.retrievers.base import get_spec

    try:
        get_spec(args.retriever)
    except ValueError as exc:
        parser.error(str(exc))
    if not os.path.isdir(args.checkouts):
        print(f"error: no checkouts at {args.checkouts}", file=sys.stderr)
        return 1
    if args.index_dir:
        os.environ["RETRIEVAL_INDEX_DIR"] = os.path.abspath(args.index_dir)
    repos = []
    for name in sorted(os.listdir(args.checkouts)):
        root = os.path.join(args.checkouts, name)
        if os.path.isdir(root):
            repos.append(score_repository(root, name, args.retriever, args.per_repo))
            counts = {kind: summary(repos[-1:], kind) for kind in ("message", "keyword")}
            print(f"{name}: " + "; ".join(f"{kind} {c['queries']} top-1 {c['top1']:.2f}" for kind, c in counts.items()
                                         if c["queries"]), file=sys.stderr, flush=True)
    overall = {kind: summary(repos, kind) for kind in ("message", "keyword")}
    for kind, c in overall.items():
        if c["queries"]:
            print(f"{kind}: {c['queries']} queries, top-1 {c['top1']:.3f}, top-3 {c['top3']:.3f}")
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump({"retriever": args.retriever, "overall": overall, "repos": repos}, fh, indent=1)
    return 0


if __name__ == "__main__":
    from retrieval.streams import run_piped

    sys.exit(run_piped(main))
