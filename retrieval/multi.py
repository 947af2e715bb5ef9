"""`--retriever all`: every usable retriever's hits consolidated into one ranking.

A retriever takes part when its extras are installed and it has an index (lexical always: it
builds in seconds); one without an index is named in a note rather than built behind a query's
back (embedding a repository can take minutes). Hits of one file whose spans overlap or touch
merge (up to a bound on the merged length: retrieval.fusion.MERGE_GROWTH); each hit says which
retrievers found it (`provenance`) and how many agreed (`agreement`). The order follows the
best-measured retriever taking part (see LEADS).
"""
from __future__ import annotations

import os
import time

from .fusion import append_below, as_spans, consolidate, uncovered
from .notes import first_line
from .output import shell_word
from .records import SearchHit, chunk_docid
from .retrievers.base import REGISTRY, check_search_args, not_installed

ALL = "all"
DEPTH_FACTOR = 2  # each retriever is asked for this many times top_k (merging shortens the list)
# Each retriever's first MERGE_DEPTH candidates, consolidated together, decide the first hits: their
# spans and order do not depend on --top-k (deeper candidates merged into them grew them: a hit's
# span changed between -k 3 and -k 30). Candidates below are consolidated among themselves and
# appended. Measured on semble-dev: 20 or 100 give the same NDCG@10, but 100 makes the first hit
# 27% longer to read (67 lines against 53).
MERGE_DEPTH = 20
# The order is the lead's: the first of these that takes part (lexical always does). Measured on
# semble-dev (38 repositories): hybrid alone 0.886, the four retrievers weighted alike 0.846,
# hybrid weighted 2x 0.867, 5x 0.886: agreement of weaker retrievers costs more than it brings.
# The others add their agreement (a tie-breaker deep in the list) and the spans only they found.
LEADS = ("hybrid", "lexical")
LEAD_WEIGHT = 100.0


def lead(names) -> str | None:
    return next((name for name in LEADS if name in names), None)


def participants(root: str) -> tuple[list[str], list[str]]:
    """(retrievers to ask, notes on those left out and why)."""
    from . import service

    root = os.path.abspath(root)
    names, notes = [], []
    uninstalled = []
    for name, reason in service.available_retrievers():
        if reason and REGISTRY[name].missing():
            uninstalled.append(name)
        elif reason:
            notes.append(f"{name}: skipped ({reason})")
        elif name == "lexical" or service.is_built(root, name):
            names.append(name)
        else:
            notes.append(f"{name}: skipped (not indexed; run `retrieval index --retriever {name} "
                         f"--root {shell_word(root)}`)")
    if uninstalled:
        notes.insert(0, not_installed(uninstalled))
    # One outside all (lexical+ctx, built on request only) goes unnamed: all never takes it in (the
    # README and `index` say so), and a note saying it on every query was noise.
    return names, notes


class AllEngine:
    """search_detailed over several open retrievers, consolidated (the engine protocol)."""

    def __init__(self, engines: dict[str, object], root: str | None = None, progress=None,
                 notes: list[str] | None = None):
        self.engines = engines
        # With a root, each participant's store is repaired as a single retriever's query repairs it.
        self.root = root
        self.progress = progress
        self.notes = notes if notes is not None else []

    def search_detailed(self, query: str, top_k: int = 10, *, allow=None) -> list[SearchHit]:
        check_search_args(query, top_k)
        # The first MERGE_DEPTH of each are asked for as such: a retriever's first hits may depend on
        # how many it is asked for (hybrid's dense arm fetches max(100, top_k) candidates, and with more
        # of them the fused order changes), and the first hits must not change with --top-k.
        found = self._ask(query, MERGE_DEPTH, allow)
        rankings = {name: as_spans(hits) for name, hits in found.items()}
        first = lead(rankings)
        weights = {first: LEAD_WEIGHT} if first else None
        spans = consolidate(rankings, weights=weights)
        lead_hits = found.get(first, [])
        depth = max(top_k * DEPTH_FACTOR, MERGE_DEPTH)
        if len(spans) < top_k and depth > MERGE_DEPTH:
            deep = self._ask(query, depth, allow)
            deeper = consolidate({name: uncovered(as_spans(hits[MERGE_DEPTH:]), spans)
                                  for name, hits in deep.items() if name in found},
                                 weights=weights, first_rank=MERGE_DEPTH + 1)
            spans = append_below(spans, deeper)
            lead_hits = [*lead_hits[:MERGE_DEPTH], *deep.get(first, [])[MERGE_DEPTH:]]
        return hits_from_spans(spans[:top_k], lead_hits, first)

    def _ask(self, query: str, depth: int, allow) -> dict[str, list[SearchHit]]:
        """Each participant's hits (one damaged past a rebuild is dropped, with a note)."""
        found = {}
        for name, engine in list(self.engines.items()):
            if self.root is None:
                found[name] = engine.search_detailed(query, depth, allow=allow)
                continue
            from . import service
            from .store.layout import StoreError

            kwargs = {"progress": self.progress} if self.progress else {}
            try:
                found[name], self.engines[name] = service.search_repairing(
                    self.root, name, engine, query, depth, allow=allow, notes=self.notes, **kwargs)
            except StoreError as exc:
                if name == "lexical":  # the base of all: its failure is the answer's
                    raise
                # Damaged past a rebuild: the others still answer, as when it cannot open.
                del self.engines[name]
                self.notes.append(f"{name}: skipped ({first_line(exc)})")
        return found

    def search(self, query: str, top_k: int = 10) -> list[str]:
        return [h.docid for h in self.search_detailed(query, top_k)]


def hits_from_spans(spans, lead_hits=(), lead_name: str | None = None) -> list[SearchHit]:
    """SearchHits of consolidated spans. A span the lead retriever found carries that hit's
    confidence level (the ranking follows the lead); the others have none."""
    out = []
    for rank, span in enumerate(spans, start=1):
        at = span.ranks.get(lead_name) if lead_name else None
        confidence = lead_hits[at - 1].confidence if at and at <= len(lead_hits) else ""
        docid = chunk_docid(span.path, span.start_line, span.end_line) if span.start_line else span.path
        extra = {"provenance": list(span.provenance), "agreement": span.agreement, "ranks": dict(span.ranks)}
        out.append(SearchHit(docid, span.path, span.start_line, span.end_line, rank, span.score, span.context,
                             confidence, language=span.language, kind=span.kind, symbol=span.symbol,
                             scope=span.scope, extra=extra, members=span.definitions))
    return out


def open_all(root: str, *, stale_ok: bool = False, progress=None, notes: list[str] | None = None) -> AllEngine:
    from . import service
    from .progress import from_caller, raised_by_caller

    progress = from_caller(progress) if progress is not None else None

    notes = notes if notes is not None else []
    names, skipped = participants(root)
    notes.extend(skipped)
    engines = {}
    # One wait for another writer in all: the store has one lock, and each index would wait anew.
    wait_until = time.monotonic() + service.writer_wait()
    for name in names:
        kwargs = {"progress": progress} if progress else {}
        try:
            engines[name] = service.open_index(root, name, stale_ok=stale_ok, notes=notes, wait_until=wait_until,
                                               **kwargs)
        except (RuntimeError, OSError) as exc:
            if name == "lexical" or raised_by_caller(exc):  # the base of all: its failure is the answer's
                raise
            # One participant that cannot answer (its model gone, its Java broken) leaves the others'.
            notes.append(f"{name}: skipped ({first_line(exc)})")
    return AllEngine(engines, root, progress, notes)


def search_all(root: str | os.PathLike[str], query: str, *, retriever: str = ALL, top_k: int = 10, filters=None,
               stale_ok: bool = False, min_confidence: str | None = None, progress=None):
    """service.search's result for every usable retriever at once (`min_confidence` is judged on the
    lead retriever's levels, see hits_from_spans)."""
    from . import service
    from .discover import root_path

    service.check_query(query, top_k, filters, min_confidence)  # before any index is opened or built
    root = root_path(root)
    notes: list[str] = []
    engine = open_all(root, stale_ok=stale_ok, progress=progress, notes=notes)
    allow = filters.compile() if filters else None
    matcher = filters.line_matcher(root) if filters else None

    def fetch(asked: int, allow=allow) -> list[SearchHit]:
        return engine.search_detailed(query, asked, allow=allow)

    short: list[str] = []  # a search -e's depth cut short: why an empty answer is empty
    # A label is the treesitter chunk's (the others have none): its words are weighed by its index.
    lead = "treesitter" if engine.engines.get("treesitter") else "lexical"
    weigher = engine.engines.get(lead)
    # (as one retriever's would: hits for a name no file holds)
    resemble = service.resemblance_note(root, lead, weigher, query, filters, stale_ok) if weigher is not None else None

    def ranked(asked: int) -> list[SearchHit]:
        hits = service.first_hits(root, query, fetch, asked, matcher, allow, short)
        return service.only_resembling(hits, query) if resemble else hits

    if min_confidence:  # the lead's levels (see hits_from_spans): look deeper, then keep those at the level
        from .confidence import keep_at_least

        hits = keep_at_least(ranked(max(top_k, service.MIN_CONFIDENCE_DEPTH)), min_confidence, top_k)
    else:
        hits = ranked(top_k)
    notes += short
    if not hits and top_k and not short:  # the lexical index speaks for them all
        service.say_why_empty(root, "lexical", filters, min_confidence, query, notes, matcher, engine=weigher,
                              stale_ok=stale_ok)
    indexed = _indexed(root, engine.engines, hits)
    hits = _labelled_by_syntax(root, engine.engines, hits, indexed)
    if hits and resemble:
        notes.append(resemble)
    return service.SearchResult(query, ALL, service._labelled(root, weigher, query, hits, indexed), notes, indexed,
                                matcher)


def _labelled_by_syntax(root: str, engines: dict, hits: list[SearchHit], indexed: dict) -> list[SearchHit]:
    """Hits only line-chunk retrievers found (lexical's, pi-serini's, the dense arm's) labelled by
    the treesitter chunk their lines overlap most, the others they overlap offered as its members
    (retrieval.labels then names the one the query's words are in), when treesitter indexed the
    same version of the file. A quarter of gin's hits had no label at all."""
    from dataclasses import replace

    from . import service

    syntax = engines.get("treesitter")
    bare = [h for h in hits if not h.symbol and not h.members and h.start_line and h.end_line
            and h.source_path in indexed]
    if syntax is None or not bare:
        return hits
    records = service._indexed_files(root, "treesitter", syntax, bare)
    same = {h.source_path for h in bare if h.source_path in records
            and records[h.source_path][DIGEST] == indexed[h.source_path][DIGEST]}
    try:
        labels = syntax.chunk_labels(same) if same else {}
    except (OSError, *service._DAMAGE):  # a label is no answer: a snapshot released or damaged keeps the hits
        return hits
    bare_ids = {id(h) for h in bare}
    out = []
    for h in hits:
        rows = labels.get(h.source_path) if id(h) in bare_ids else None
        overlapping = [r for r in rows or () if r[0] <= h.end_line and h.start_line <= r[1]]
        if not overlapping:
            out.append(h)
            continue
        best = max(overlapping, key=lambda r: (min(h.end_line, r[1]) - max(h.start_line, r[0]), -r[0]))
        start, end, context, kind, symbol, scope, members = best
        others = tuple((r[4], r[2], r[3], r[0], r[1]) for r in overlapping if r is not best and r[4])
        out.append(replace(h, context=context, kind=kind or h.kind, symbol=symbol, scope=scope,
                           members=members + others))
    return out


def _indexed(root: str, engines: dict, hits) -> dict[str, tuple]:
    """Each hit's file as the retrievers that found it there indexed it. When they indexed other
    versions (one index refreshed, another not: --stale-ok), some of its lines are from a version
    the file no longer is: a record no file matches, so its snippet says stale (the first
    participant's record, lexical's, said current lines for another index's old span)."""
    from . import service

    records = {name: service._indexed_files(root, name, engines[name], hits) for name in engines}
    out = {}
    for h in hits:
        found = [records[name][h.source_path] for name in h.extra["provenance"]
                 if h.source_path in records.get(name, ())]
        if h.source_path in out:  # another hit of the file: its finders count too
            found.append(out[h.source_path])
        if found:
            out[h.source_path] = found[0] if len({record[DIGEST] for record in found}) == 1 else UNMATCHED
    return out


DIGEST = 2  # of an indexed record (size, mtime_ns, digest)
UNMATCHED = (-1, -1, "")  # an indexed record no file matches
