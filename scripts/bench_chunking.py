#!/usr/bin/env python3
"""Index time per retriever on one tree, and where the time of syntax-aware chunking goes.

For each retriever: a full build into a temporary store (wall seconds, files/s, chunks, store
bytes); for `treesitter` also the seconds spent inside tree-sitter's parser and in the chunker as a
whole, summed over the processes that chunk (the worker processes that also extract terms, in a
build of 64 files or more: shares of the wall time above 1 mean they chunked side by side).

    python scripts/bench_chunking.py --root /work/checkouts/semble/fastapi --retrievers lexical,treesitter
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, PROJECT)

from retrieval.evaluation.arguments import description, names as split_names  # noqa: E402


def _note(log: str, what: str, seconds: float) -> None:
    """Add a timing to the log: the chunking runs in worker processes, whose memory is their own."""
    with open(log, "a") as fh:
        fh.write(f"{what} {seconds}\n")


class _TimedParser:
    """A parser whose parse() notes its wall time in the log."""

    def __init__(self, parser, log):
        self._parser, self._log = parser, log

    def parse(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            return self._parser.parse(*args, **kwargs)
        finally:
            _note(self._log, "parse", time.perf_counter() - started)


def measure(root: str, name: str) -> dict:
    from retrieval import service
    from retrieval.store import layout

    log = os.path.join(os.environ["RETRIEVAL_INDEX_DIR"], f"timings-{name}")
    restore = []
    if name == "treesitter":
        from retrieval.chunking import parsing
        from retrieval.retrievers import treesitter

        real_parser, real_chunk = parsing.parser_for, treesitter.chunk_source

        def timed_parser(grammar):
            return _TimedParser(real_parser(grammar), log)

        def timed_chunk(*args, **kwargs):
            started = time.perf_counter()
            try:
                return real_chunk(*args, **kwargs)
            finally:
                _note(log, "chunk", time.perf_counter() - started)

        parsing.parser_for, treesitter.chunk_source = timed_parser, timed_chunk
        restore = [(parsing, "parser_for", real_parser), (treesitter, "chunk_source", real_chunk)]
    try:
        report = service.refresh(root, name, force=True)
    finally:
        for module, attr, value in restore:
            setattr(module, attr, value)
    store = layout.retriever_dir(layout.store_dir(os.path.abspath(root)), name)
    out = {"retriever": name, "seconds": round(report.seconds, 2), "files": report.files, "chunks": report.chunks,
           "files_per_s": round(report.files / report.seconds, 1) if report.seconds else None,
           "store_bytes": layout.directory_size(store)}
    if name == "treesitter":
        parse_seconds, chunk_seconds = [0.0], [0.0]
        if os.path.exists(log):
            with open(log) as fh:
                for line in fh:
                    what, seconds = line.split()
                    (parse_seconds if what == "parse" else chunk_seconds)[0] += float(seconds)
        out.update(parse_seconds=round(parse_seconds[0], 2), chunk_seconds=round(chunk_seconds[0], 2),
                   parse_share=round(parse_seconds[0] / report.seconds, 3),
                   chunk_share=round(chunk_seconds[0] / report.seconds, 3))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--root", required=True)
    ap.add_argument("--retrievers", default="lexical,treesitter")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from retrieval.retrievers.base import get_spec

    names = split_names(args.retrievers)
    for name in names:  # a bad name ended the run with a traceback
        try:
            get_spec(name)
        except ValueError as exc:
            ap.error(f"--retrievers: {exc}")
    if not os.path.isdir(args.root):  # was a DiscoveryError traceback
        print(f"error: root is not a directory: {args.root}", file=sys.stderr)
        return 1
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-chunking-") as tmp:
        os.environ["RETRIEVAL_INDEX_DIR"] = tmp
        for name in names:
            rows.append(measure(args.root, name))
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for row in rows:
            print("  ".join(f"{k}={v}" for k, v in row.items()))
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    from retrieval.streams import run_piped

    sys.exit(run_piped(main))
