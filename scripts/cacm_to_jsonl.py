#!/usr/bin/env python3
"""Turn the CACM collection (../shared/bench/cacm) into a tree and a dataset `retrieval eval` reads.

    python scripts/cacm_to_jsonl.py --out /tmp/cacm --anserini-ids
    RETRIEVAL_INDEX_DIR=/tmp/cacm-index retrieval eval /tmp/cacm/cacm.jsonl --root /tmp/cacm/docs -k 1000 --profile prose \
        --retriever lexical  # (without it: every installed retriever, the embedding ones too)

writes <out>/docs/CACM-NNNN.txt (the text of each HTML-like document, tags removed) and
<out>/cacm.jsonl: one {id, query, relevant: [CACM-NNNN.txt, ...], category: "cacm"} per judged
topic (52 of 64 have judgments; trec_eval leaves the others out too). The `cacm` category makes
`retrieval eval` report MAP and P@30 beside NDCG; Anserini's BM25 reference is MAP 0.3123, P@30 0.1942,
with 14,363 unique terms and 320,968 term occurrences, and the `prose` profile reproduces all four
(and Anserini's top 30 of every judged topic, document for document).

The qrels write ids below 1000 unpadded (CACM-115) while the documents are CACM-0115: by default
the judgments are mapped to the documents they mean. Anserini's regression compares the ids
verbatim, so those judgments can never be retrieved there; --anserini-ids keeps them verbatim (they
then count as relevant documents missing from the tree) for a like-for-like comparison with 0.3123.
"""
from __future__ import annotations

import argparse
import html
import json
import os
import re
import sys
import tarfile

PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A tag starts with `<` and a letter, `/`, `!` or `?`, as an HTML parser reads it (Anserini's
# HtmlCollection); any other `<` is text, and CACM's abstracts have formulas such as `a < b`.
TAG = re.compile(r"<(?:/?[A-Za-z][^>]*>|!--.*?-->|[!?][^>]*>)", re.S)
TOPIC = re.compile(r"<DOC>\s*<DOCNO>\s*(\S+)\s*</DOCNO>(.*?)</DOC>", re.S)


def document_text(raw: str) -> str:
    """The visible text: tags dropped, entities decoded, line structure kept."""
    text = html.unescape(TAG.sub("", raw))
    lines = [line.rstrip() for line in text.splitlines()]
    return "\n".join(lines).strip("\n") + "\n"


def write_documents(archive: str, dest: str) -> int:
    os.makedirs(dest, exist_ok=True)
    count = 0
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar:
            name = os.path.basename(member.name)
            if not member.isfile() or not name.startswith("CACM-"):
                continue
            raw = tar.extractfile(member).read().decode("utf-8", errors="replace")
            stem = os.path.splitext(name)[0]
            with open(os.path.join(dest, stem + ".txt"), "w", encoding="utf-8") as fh:
                fh.write(document_text(raw))
            count += 1
    return count


def read_topics(path: str) -> dict[str, str]:
    with open(path, encoding="utf-8", errors="replace") as fh:
        data = fh.read()
    return {num: " ".join(text.split()) for num, text in TOPIC.findall(data)}


def read_qrels(path: str, verbatim: bool = False) -> dict[str, list[str]]:
    """{topic: [docid, ...]} for judgments with a positive grade (binary relevance)."""
    qrels: dict[str, list[str]] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) == 4 and int(parts[3]) > 0:
                docid = parts[2]
                prefix, _, number = docid.partition("-")
                if not verbatim and number.isdigit():
                    docid = f"{prefix}-{int(number):04d}"
                qrels.setdefault(parts[0], []).append(docid)
    return qrels


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cacm", default=os.path.join(PROJECT, "..", "shared", "bench", "cacm"))
    parser.add_argument("--out", default="/tmp/cacm", help="writes <out>/docs/ and <out>/cacm.jsonl")
    parser.add_argument("--anserini-ids", action="store_true",
                        help="keep the qrels' unpadded ids as Anserini's regression does (see above)")
    args = parser.parse_args(argv)
    for name in ("cacm.tar.gz", "topics.cacm.txt", "qrels.cacm.txt"):  # checked before anything is written
        if not os.path.isfile(os.path.join(args.cacm, name)):
            print(f"error: no {name} in {args.cacm} (--cacm: the CACM collection's directory)", file=sys.stderr)
            return 1
    docs = os.path.join(args.out, "docs")
    n_docs = write_documents(os.path.join(args.cacm, "cacm.tar.gz"), docs)
    topics = read_topics(os.path.join(args.cacm, "topics.cacm.txt"))
    qrels = read_qrels(os.path.join(args.cacm, "qrels.cacm.txt"), verbatim=args.anserini_ids)
    dataset = os.path.join(args.out, "cacm.jsonl")
    n_queries = 0
    with open(dataset, "w", encoding="utf-8") as fh:
        for num in sorted(topics, key=int):
            if num not in qrels:
                continue
            row = {"id": num, "query": topics[num], "relevant": [f"{d}.txt" for d in qrels[num]], "category": "cacm"}
            fh.write(json.dumps(row) + "\n")
            n_queries += 1
    print(f"{n_docs} documents in {docs}; {n_queries} judged topics (of {len(topics)}) in {dataset}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
