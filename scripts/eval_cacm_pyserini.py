#!/usr/bin/env python3
"""CACM through the Python API with `pi-serini` (Lucene's own BM25) beside `lexical`'s prose profile.

    python scripts/cacm_to_jsonl.py --out /tmp/cacm --anserini-ids
    python scripts/eval_cacm_pyserini.py --cacm-out /tmp/cacm

Indexes the documents as `Document`s with `build_retriever("pi-serini", k1=0.9, b=0.4,
profile="prose")` (Anserini's English analyzer, plain BM25) and prints MAP and P@30 over the judged
topics (top 1000, trec_eval's way) against Anserini's 0.3123 / 0.1942, the overlap of each topic's
top 30 with Anserini's shipped run (`cacm-bm25.lucene-run.txt`), the index statistics, and how
far the result agrees with `lexical --profile prose` (same top-30 sets, same order, score gaps).
Exits 1 when MAP or P@30 is more than 0.005 from Anserini's.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, PROJECT)

from retrieval import Document, build_retriever  # noqa: E402
from retrieval.evaluation.arguments import description, positive_int  # noqa: E402
from retrieval.evaluation.metrics import average_precision, precision_at_k  # noqa: E402

ANSERINI_MAP, ANSERINI_P30 = 0.3123, 0.1942


def load_documents(docs_dir: str) -> list[Document]:
    out = []
    for name in sorted(os.listdir(docs_dir)):
        if not os.path.isfile(os.path.join(docs_dir, name)):
            continue  # the index `retrieval eval --root <out>/docs` leaves there (`.retrieval/`)
        with open(os.path.join(docs_dir, name), encoding="utf-8") as fh:
            text = fh.read()
        docid = os.path.splitext(name)[0]
        out.append(Document(docid, text, source_path=name))
    return out


def read_run(path: str) -> dict[str, list[str]]:
    run: dict[str, list[tuple[int, str]]] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            topic, _q0, docid, rank, _score, _tag = line.split()
            run.setdefault(topic, []).append((int(rank), docid))
    return {t: [d for _, d in sorted(rows)] for t, rows in run.items()}


def evaluate(retriever, queries, k: int) -> tuple[dict, dict]:
    """({topic: [docid, ...]}, {topic: [score, ...]}) for the top k of each query."""
    ranked, scores = {}, {}
    for q in queries:
        hits = retriever.search_detailed(q["query"], k)
        ranked[q["id"]] = [h.docid for h in hits]
        scores[q["id"]] = [h.score for h in hits]
    return ranked, scores


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--cacm-out", default="/tmp/cacm", help="the --out of scripts/cacm_to_jsonl.py")
    parser.add_argument("--run", default=os.path.join(PROJECT, "..", "shared", "bench", "cacm", "cacm-bm25.lucene-run.txt"))
    parser.add_argument("-k", type=positive_int, default=1000)
    args = parser.parse_args(argv)
    try:  # every input read first: a missing run file ended the run with a traceback after the scoring
        docs = load_documents(os.path.join(args.cacm_out, "docs"))
        with open(os.path.join(args.cacm_out, "cacm.jsonl"), encoding="utf-8") as fh:
            queries = [json.loads(line) for line in fh if line.strip()]
        shipped = read_run(args.run)
    except (OSError, ValueError) as exc:
        where = f" {exc.filename}" if getattr(exc, "filename", None) else ""
        print(f"error: cannot read{where}: {getattr(exc, 'strerror', None) or exc} "
              "(--cacm-out: the --out of cacm_to_jsonl.py; --run: Anserini's run)", file=sys.stderr)
        return 2
    relevant = {q["id"]: [os.path.splitext(p)[0] for p in q["relevant"]] for q in queries}

    started = time.perf_counter()
    lucene = build_retriever("pi-serini", k1=0.9, b=0.4, profile="prose")
    lucene.index(docs)
    index_s = time.perf_counter() - started
    started = time.perf_counter()
    got, got_scores = evaluate(lucene, queries, args.k)
    search_s = time.perf_counter() - started
    stats = lucene.statistics()

    prose = build_retriever("lexical", profile="prose")
    prose.index(docs)
    ref, ref_scores = evaluate(prose, queries, args.k)

    n = len(queries)
    mean_ap = sum(average_precision(got[t], relevant[t]) for t in got) / n
    p30 = sum(precision_at_k(got[t], relevant[t], 30) for t in got) / n
    prose_map = sum(average_precision(ref[t], relevant[t]) for t in ref) / n
    prose_p30 = sum(precision_at_k(ref[t], relevant[t], 30) for t in ref) / n
    print(f"pi-serini (Lucene): {stats['documents']} documents, {stats['unique_terms']} unique terms, "
          f"{stats['total_terms']} term occurrences; indexed in {index_s:.1f}s, {n} queries in {search_s:.1f}s")
    print(f"MAP  {mean_ap:.4f}  (Anserini {ANSERINI_MAP}, diff {mean_ap - ANSERINI_MAP:+.4f}; lexical prose {prose_map:.4f})")
    print(f"P@30 {p30:.4f}  (Anserini {ANSERINI_P30}, diff {p30 - ANSERINI_P30:+.4f}; lexical prose {prose_p30:.4f})")

    judged = [q["id"] for q in queries if q["id"] in shipped]
    same_set = sum(set(got[t][:30]) == set(shipped[t][:30]) for t in judged)
    same_list = sum(got[t][:30] == shipped[t][:30] for t in judged)
    overlap = sum(len(set(got[t][:30]) & set(shipped[t][:30])) for t in judged) / sum(
        len(shipped[t][:30]) for t in judged)
    print(f"top 30 vs Anserini's run: {overlap:.4f} of its documents shared; same set in {same_set}/{len(judged)} "
          f"topics, same order in {same_list}/{len(judged)}")

    same_set = sum(set(got[t][:30]) == set(ref[t][:30]) for t in got)
    same_list = sum(got[t][:30] == ref[t][:30] for t in got)
    # lexical keeps BM25's (k1 + 1) numerator, which Lucene dropped: its scores are Lucene's times 1.9.
    ratios = [b / a for t in got for a, b in zip(got_scores[t][:30], ref_scores[t][:30]) if a > 0]
    print(f"top 30 vs lexical prose: same set in {same_set}/{n} topics, same order in {same_list}/{n}; "
          f"lexical score / Lucene score at equal ranks {min(ratios):.4f}..{max(ratios):.4f}")
    ok = abs(mean_ap - ANSERINI_MAP) <= 0.005 and abs(p30 - ANSERINI_P30) <= 0.005
    return 0 if ok else 1


if __name__ == "__main__":
    from retrieval.streams import run_piped

    sys.exit(run_piped(main))
