#!/usr/bin/env python3
"""Ablation of the lexical ranking signals on semble-dev: each signal switched off in turn.

Each repository's chunks are loaded once and indexed in memory; every variant re-ranks the same
queries, so the table isolates the ranking. NDCG@10 is the benchmark's metric (retrieval's own
`evaluation.metrics`), reported overall (mean over repositories and over queries), per category
and per language.

    python scripts/ablate_semble.py --checkouts /work/checkouts/semble [--retriever lexical|treesitter]
        [--repos a,b] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, PROJECT)

from retrieval.evaluation.arguments import check_output, description, names, positive_int  # noqa: E402
from retrieval.evaluation.datasets import load_dataset  # noqa: E402
from retrieval.evaluation.metrics import ndcg, path_matches, target_ranks  # noqa: E402
from retrieval.evaluation.report import table  # noqa: E402
from retrieval.loader import load_chunk_documents  # noqa: E402
from retrieval.ranking import RankingConfig  # noqa: E402
from retrieval.retrievers.lexical import LexicalRetriever  # noqa: E402

# (name, ranking changes, index-time changes)
VARIANTS = [
    ("full", {}, {}),
    ("no file-name agreement (NL)", {"filename_boost": 1.0}, {}),
    ("no file-name agreement (symbol)", {"symbol_filename_boost": 1.0, "exact_filename_boost": 1.0}, {}),
    ("no definition terms", {"definition_weight": 0.0, "symbol_definition_weight": 0.0,
                             "code_definition_weight": 0.0}, {}),
    ("no exact-spelling definitions", {"exact_definition_weight": 0.0}, {}),
    ("no path terms", {"path_weight": 0}, {}),
    ("no file evidence", {"file_evidence": 0.0}, {}),
    ("no identifier pairs", {"identifier_pair_weight": 0.0}, {}),
    ("no diversity", {"diversify": False}, {}),
    ("no test/example/vendor priors", {"test_penalty": 1.0, "example_penalty": 1.0, "vendor_penalty": 1.0,
                                       "generated_penalty": 1.0}, {}),
    ("no docs prior", {"docs_penalty": 1.0}, {}),
    ("no stemming", {}, {"stem": False}),
    ("plain BM25 (all off)", {"filename_boost": 1.0, "symbol_filename_boost": 1.0, "exact_filename_boost": 1.0,
                              "definition_weight": 0.0, "symbol_definition_weight": 0.0,
                              "code_definition_weight": 0.0, "path_weight": 0, "file_evidence": 0.0,
                              "identifier_pair_weight": 0.0,
                              "diversify": False, "test_penalty": 1.0, "example_penalty": 1.0,
                              "vendor_penalty": 1.0, "generated_penalty": 1.0, "docs_penalty": 1.0}, {"stem": False}),
]


def evaluate_repo(docs, queries, prefix: str, config: RankingConfig, k: int,
                  retriever_class=LexicalRetriever) -> list[tuple[str, float]]:
    retriever = retriever_class(ranking=config)
    retriever.index(docs)
    paths = [prefix + d.source_path for d in docs]
    out = []
    for q in queries:
        present = [t for t in q.targets if any(path_matches(p, t.path) for p in paths)]
        if not present:
            continue
        hits = [(prefix + h.source_path, h.start_line, h.end_line) for h in retriever.search_detailed(q.query, k)]
        out.append((q.category, ndcg(target_ranks(hits, present, k), len(present), k)))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--checkouts", default="/work/checkouts/semble")
    parser.add_argument("--bench", default=os.path.join(PROJECT, "..", "shared", "bench", "semble-dev"))
    parser.add_argument("--repos", default="")
    parser.add_argument("--variants", default="", help="comma-separated subset of variant names")
    parser.add_argument("--retriever", choices=("lexical", "treesitter"), default="lexical",
                        help="treesitter: the same variants over syntax-aware chunks (needs the extra)")
    parser.add_argument("-k", type=positive_int, default=10)
    parser.add_argument("--json", dest="json_out")
    args = parser.parse_args(argv)
    check_output(parser, args.json_out)
    import retrieval.text as text

    load, retriever_class = load_chunk_documents, LexicalRetriever
    if args.retriever == "treesitter":
        from retrieval.loader import load_ast_chunk_documents
        from retrieval.retrievers.treesitter import TreesitterRetriever

        load, retriever_class = load_ast_chunk_documents, TreesitterRetriever

    try:
        with open(os.path.join(args.bench, "repos.json"), encoding="utf-8") as fh:
            repos = json.load(fh)
    except (OSError, ValueError) as exc:  # one line, not a traceback
        print(f"error: cannot read {os.path.join(args.bench, 'repos.json')}: {getattr(exc, 'strerror', None) or exc}",
              file=sys.stderr)
        return 1
    if args.repos:
        wanted = set(names(args.repos))
        unknown = sorted(wanted - {r["name"] for r in repos})
        if unknown:  # `cobra,cobraa` ablated cobra alone, as if both had been measured
            parser.error(f"--repos: no repository {', '.join(unknown)} in the benchmark")
        repos = [r for r in repos if r["name"] in wanted]
    asked = names(args.variants)
    unknown = [name for name in asked if name not in {v[0] for v in VARIANTS}]
    if unknown:  # `full,bogus` ran `full` alone, as if bogus had been measured
        parser.error(f"--variants: unknown {', '.join(unknown)}; choose from: {', '.join(v[0] for v in VARIANTS)}")
    variants = [v for v in VARIANTS if not asked or v[0] in asked]
    # An unknown --repos or --variants name printed an empty table and exit 0: an ablation that passed
    repos = [r for r in repos if os.path.isdir(os.path.join(args.checkouts, r["name"], r.get("benchmark_root") or ""))]
    if not repos:
        print("error: no repository to evaluate (none of --repos has a checkout under --checkouts)", file=sys.stderr)
        return 1
    results = {name: {} for name, _, _ in variants}  # variant -> repo -> [(category, ndcg)]
    languages = {}
    started = time.perf_counter()
    for stem in (True, False):
        todo = [v for v in variants if v[2].get("stem", True) == stem]
        if not todo:
            continue
        text.set_stemming(stem)  # drops every memo of derived terms (ranking's file-name words too)
        for repo in repos:
            root = os.path.join(args.checkouts, repo["name"], repo.get("benchmark_root") or "")
            if not os.path.isdir(root):
                continue
            prefix = (repo.get("benchmark_root") or "").strip("/")
            prefix = prefix + "/" if prefix else ""
            docs = load(root)
            queries = load_dataset(os.path.join(args.bench, "annotations", repo["name"] + ".json"))
            for name, ranking, _ in todo:
                rows = evaluate_repo(docs, queries, prefix, RankingConfig().replace(**ranking), args.k, retriever_class)
                if rows:
                    results[name][repo["name"]] = rows
                    languages[repo["name"]] = repo["language"]
            print(f"{repo['name']}: {len(todo)} variant(s)", file=sys.stderr, flush=True)
    text.set_stemming(True)

    def mean(values):
        values = list(values)
        return sum(values) / len(values) if values else None

    cats = ["architecture", "semantic", "symbol"]
    langs = sorted(set(languages.values()))
    header = ["variant", "repo mean", "query mean"] + cats + langs
    body = []
    summary = {}
    for name, _, _ in variants:
        per_repo = results[name]
        repo_means = {r: mean(s for _, s in rows) for r, rows in per_repo.items()}
        all_rows = [row for rows in per_repo.values() for row in rows]
        entry = {"repo_mean": mean(repo_means.values()), "query_mean": mean(s for _, s in all_rows)}
        for c in cats:
            entry[c] = mean(s for cat, s in all_rows if cat == c)
        for lang in langs:
            entry[lang] = mean(m for r, m in repo_means.items() if languages[r] == lang)
        summary[name] = entry
        body.append([name] + [entry[h] for h in ["repo_mean", "query_mean"] + cats + langs])
    print(table(header, body))
    print(f"{len(results['full']) if 'full' in results else '?'} repositories, "
          f"{time.perf_counter() - started:.0f}s", file=sys.stderr)
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump(summary, fh, indent=1)
    return 0


if __name__ == "__main__":
    from retrieval.streams import run_piped

    sys.exit(run_piped(main))
