"""Filtered queries prune as unfiltered ones do, and find exactly what scoring every document finds."""
from __future__ import annotations

import random

import pytest

from retrieval import service
from retrieval.lexical.bm25 import best_hits, score
from retrieval.query import plan_query
from retrieval.retrievers.base import get_spec

WORDS = ("cache credential token retry queue worker handler request session route parse render "
         "encode decode config loader store index query record field value error state event").split()


def generated_tree(rng: random.Random, n_files: int) -> dict:
    """Python and JavaScript files of a few functions each over a small vocabulary (common words
    in most chunks, pruning has work to do); every fifth file is a copy of another (ties)."""
    files = {}
    for n in range(n_files):
        directory = ("alpha", "beta", "gamma")[n % 3]
        extension = "py" if n % 2 == 0 else "js"
        if n % 5 == 4 and n >= 6:  # in the same directory and language: it ties with it
            source = files[f"{directory}/m{n - 6}.{extension}"]
        else:
            funcs = []
            for f in range(rng.randint(1, 4)):
                name = "_".join(rng.sample(WORDS, 2))
                body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 25)))
                funcs.append(f"def {name}_{f}(x):\n    # {body}\n    return x\n" if n % 2 == 0
                             else f"function {name}_{f}(x) {{\n  // {body}\n  return x;\n}}\n")
            source = "\n\n".join(funcs)
        files[f"{directory}/m{n}.{extension}"] = source
    return files


def first_stage_scoring_everything(engine, query: str, depth: int, allow):
    """What first_stage finds when every document is scored, then the filter applied."""
    plan = plan_query(query, engine.ranking)
    views = engine._views
    full = score(views, plan.weights, engine.params, engine._n_docs, engine._avgdl,
                 engine.ranking.long_query_min_idf if plan.long else 0.0)
    return best_hits(views, [{d: s for d, s in acc.items() if allow(*v.segment.files[v.segment.doc_file[d]])}
                             for v, acc in zip(views, full)], depth)


QUERIES = ("retry the request when the credential token expires", "cache_loader", "QueueWorker",
           "the worker handler drops the session state when the queue fills up and every retry "
           "of the request fails to parse the config record, so the loader keeps the stale value "
           "in the store and the index query returns an error event for each field it renders")


@pytest.mark.parametrize("retriever", ["lexical", "treesitter"])
def test_a_filtered_first_stage_finds_what_scoring_every_document_finds(make_tree, rewrite, retriever):
    """After an incremental refresh (changed files' old chunks deleted in their segment), with a
    small depth so pruning starts: filters by directory, language, leaving out the best files."""
    reason = get_spec(retriever).unavailable_reason()
    if reason:
        pytest.skip(reason)
    rng = random.Random(7)
    files = generated_tree(rng, 150)
    root = make_tree(files)
    service.refresh(str(root), retriever)
    for n in range(0, 150, 4):  # a second segment, and deleted documents in the first
        path = next(p for p in files if p.split("/")[1].split(".")[0] == f"m{n}")
        rewrite(root / path, files[path] + f"\n\n# retry {rng.choice(WORDS)} {rng.choice(WORDS)}\n")
    service.refresh(str(root), retriever)
    engine = service.open_index(str(root), retriever)
    assert len(engine._views) > 1 and any(v.deleted for v in engine._views)

    for query in QUERIES:
        for depth in (1, 3, 10):
            best = {hit.source_path for hit in engine.search_detailed(query, depth)}
            filters = [
                service.QueryFilter(paths=("alpha/",)).compile(),
                service.QueryFilter(paths=("!beta/",)).compile(),
                service.QueryFilter(language="javascript").compile(),
                lambda path, _language, _kind: path not in best,
                lambda path, _language, _kind: path.endswith(("m7.js", "m11.js")),
            ]
            for allow in filters:
                expected = first_stage_scoring_everything(engine, query, depth, allow)
                _plan, got = engine.first_stage(query, depth, allow)
                assert got == expected  # the same documents, order and float scores


def documents_kept_by_scoring(monkeypatch) -> list[int]:
    """A list that gets, for every scoring the lexical retriever does, how many documents it kept."""
    from retrieval.retrievers import lexical

    kept = []
    original = lexical.score

    def spy(*args, **kwargs):
        results = original(*args, **kwargs)
        kept.append(sum(len(acc) for acc in results))
        return results

    monkeypatch.setattr(lexical, "score", spy)
    return kept


def test_a_filtered_query_keeps_only_the_allowed_documents_that_can_still_rank(make_tree, monkeypatch):
    """With a filter, scoring prunes too: it does not keep every allowed document a word is in."""
    root = make_tree(generated_tree(random.Random(3), 150))
    engine = service.open_index(str(root))
    kept = documents_kept_by_scoring(monkeypatch)
    allow = service.QueryFilter(paths=("!beta/",)).compile()
    query = "retry the request when the credential token expires"
    _plan, got = engine.first_stage(query, 3, allow)
    allowed_matching = sum(1 for _s, _i, _d in first_stage_scoring_everything(engine, query, 10_000, allow))
    assert len(got) == 3 and kept[-1] < allowed_matching


def test_the_prose_profile_prunes_filtered_queries_too_and_finds_the_same_hits(monkeypatch):
    """Plain BM25 over prose (`profile="prose"`): a filtered query keeps only the documents that
    can still rank, and returns the hits and scores of scoring every document, then filtering."""
    from retrieval import Document, build_retriever

    rng = random.Random(5)
    docs = [Document(f"d{n:03d}", " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 40))),
                     source_path=f"{'ab'[n % 2]}/d{n:03d}.txt") for n in range(300)]
    engine = build_retriever("lexical", profile="prose")
    engine.index(docs)
    allow = lambda path, _language, _kind: path.startswith("a/")  # noqa: E731
    query = "retry the request when the credential token expires"
    unpruned = [(h.docid, h.score) for h in engine.search_detailed(query, 300, allow=allow)]
    kept = documents_kept_by_scoring(monkeypatch)
    got = [(h.docid, h.score) for h in engine.search_detailed(query, 5, allow=allow)]
    assert got == unpruned[:5]
    assert all(docid in {d.docid for d in docs[::2]} for docid, _ in got)  # the allowed half only
    assert kept[-1] < len(unpruned)
