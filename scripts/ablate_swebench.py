#!/usr/bin/env python3
"""Ablation of the long-query signals on SWE-bench-dev (file Acc@1/3/5, MRR).

For speed, each repository is materialised once, at the base commit of its last instance, and
indexed in memory; instances whose gold files are absent there are left out. The figures are
therefore close to, not equal to, `eval_swebench.py` (which builds every base commit); use them
to compare variants, and `eval_swebench.py` for the headline numbers.

    python scripts/ablate_swebench.py [--workdir /tmp/swebench-ablation] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict

PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, PROJECT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from eval_swebench import materialise  # noqa: E402
from retrieval.evaluation.arguments import check_output, description, positive_int  # noqa: E402
from retrieval.evaluation.metrics import accuracy_at_k, distinct_files, file_mrr  # noqa: E402
from retrieval.evaluation.report import table  # noqa: E402
from retrieval.loader import load_chunk_documents  # noqa: E402
from retrieval.ranking import RankingConfig  # noqa: E402
from retrieval.retrievers.lexical import LexicalRetriever  # noqa: E402

VARIANTS = [
    ("full", {}),
    ("long queries read as short", {"long_query_words": 10**9}),
    ("no count damping / ask rules", {"long_query_damping": False}),
    ("no title weight", {"long_query_title_weight": 0.0}),
    ("no non-code penalty", {"long_query_noncode": 1.0}),
    ("no code-word weight", {"long_query_code_weight": 0.0}),
    ("no code-word definitions", {"code_definition_weight": 0.0}),
    ("no common-word cut", {"long_query_min_idf": 0.0}),
    ("no definer evidence", {"long_query_definer_boost": 0.0}),
    ("no file-name agreement", {"filename_boost": 1.0}),
    ("no path mentions", {"path_mention_boost": 0.0}),
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--bench", default=os.path.join(PROJECT, "..", "shared", "bench", "swebench-dev"))
    parser.add_argument("--gitdirs", default="/work/checkouts/gitdirs.json")
    parser.add_argument("--workdir", default="/tmp/swebench-ablation")
    parser.add_argument("--depth", type=positive_int, default=50)
    parser.add_argument("--json", dest="json_out")
    args = parser.parse_args(argv)
    check_output(parser, args.json_out)
    with open(os.path.join(args.bench, "instances.jsonl"), encoding="utf-8") as fh:
        instances = [json.loads(line) for line in fh if line.strip()]
    with open(args.gitdirs, encoding="utf-8") as fh:
        gitdirs = json.load(fh)
    by_repo = defaultdict(list)
    for inst in instances:
        by_repo[inst["repo"]].append(inst)
    scores = {name: defaultdict(list) for name, _ in VARIANTS}
    started = time.perf_counter()
    for repo, insts in sorted(by_repo.items()):
        if repo not in gitdirs:  # as eval_swebench: a repository without a mirror is left out, and said
            print(f"{repo}: skipped (no git dir in {args.gitdirs})", file=sys.stderr, flush=True)
            continue
        root = os.path.join(args.workdir, repo.replace("/", "+") + "@" + insts[-1]["base_commit"][:12])
        materialise(gitdirs[repo], insts[-1]["base_commit"], root)
        docs = load_chunk_documents(root)
        present = {d.source_path for d in docs}
        for name, changes in VARIANTS:
            retriever = LexicalRetriever(ranking=RankingConfig().replace(**changes))
            retriever.index(docs)
            for inst in insts:
                gold = [g for g in inst["gold_files"] if g in present]
                if not gold:
                    continue
                hits = retriever.search_detailed(inst["query"], args.depth)
                files = distinct_files((h.source_path, h.start_line, h.end_line) for h in hits)
                for k in (1, 3, 5):
                    scores[name][f"acc@{k}"].append(accuracy_at_k(files, gold, k))
                scores[name]["mrr"].append(file_mrr(files, gold))
        print(f"{repo}: {len(insts)} instance(s)", file=sys.stderr, flush=True)
    summary = {name: {m: sum(v) / len(v) for m, v in s.items()} | {"n": len(s["mrr"])} for name, s in scores.items()}
    print(table(["variant", "n", "Acc@1", "Acc@3", "Acc@5", "MRR"],
                [[name, str(s["n"]), s["acc@1"], s["acc@3"], s["acc@5"], s["mrr"]] for name, s in summary.items()]))
    print(f"{time.perf_counter() - started:.0f}s", file=sys.stderr)
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump(summary, fh, indent=1)
    return 0


if __name__ == "__main__":
    from retrieval.streams import run_piped

    sys.exit(run_piped(main))
