"""How far to trust a hit: `high`, `medium` or `low`, from what the ranking already knows.

Signals (all deterministic, computed for the returned hits only):
- coverage: the share of the query's words, weighted by idf, that the hit's chunk contains. A
  word is found when any of its forms is (the word, its stem); an identifier's parts without the
  identifier earn ABSENT_PART_CREDIT of it times the idf-weighted share of its parts the chunk has,
  whether the index holds the identifier elsewhere or not. A
  word that occurs nowhere in the index weighs the most an idf can, so a query about something the
  repository does not have covers little anywhere.
- relative: the hit's score over the best hit's score; runner-up: the second score over the best.
- defines: the query is a bare identifier and the hit's chunk defines it.

Levels (one global rule set, calibrated on semble-dev; `retrieval eval` prints, per level, how
many of the top-k hits match a target):
- low: coverage below MIN_COVERAGE (the hit lacks most of what was asked), or none of the below;
- high: the first hit, with coverage of at least HIGH_COVERAGE, and clearly ahead (the runner-up
  below CLEAR_LEAD of its score) or defining the symbol asked for;
- medium: the first hit otherwise, or any hit scoring within NEAR_BEST of the first; and at least
  medium, a hit a stack frame the query pastes vouches for (it defines the frame's function in a
  file the frame names, or holds its line in the one file the frame's path names, which defines
  its function: retrieval.retrievers.lexical `frame_evidence`): a trace's words are mostly
  addresses and paths, which no chunk covers, so its own frame's chunk was `low` and
  `--min-confidence medium` dropped it.
"""
from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import replace

from .lexical.bm25 import idf, live_count
from .lexical.features import def_term
from .ranking import file_names_only, query_words
from .text import split_identifier

LOW, MEDIUM, HIGH = "low", "medium", "high"
LEVELS = (LOW, MEDIUM, HIGH)  # ascending

MIN_COVERAGE = 0.2
HIGH_COVERAGE = 0.5
CLEAR_LEAD = 0.8
NEAR_BEST = 0.8
ABSENT_PART_CREDIT = 0.4  # below HIGH_COVERAGE: a one-identifier query for a missing name is never high


def level(*, first: bool, coverage: float, relative: float, runner_up: float, defines: bool) -> str:
    if coverage < MIN_COVERAGE:
        return LOW
    if first and coverage >= HIGH_COVERAGE and (runner_up < CLEAR_LEAD or defines):
        return HIGH
    if first or relative >= NEAR_BEST:
        return MEDIUM
    return LOW


def at_least(value: str, minimum: str) -> bool:
    """True when level `value` is `minimum` or above (an unknown value never passes)."""
    return value in LEVELS and LEVELS.index(value) >= LEVELS.index(minimum)


def keep_at_least(hits: list, minimum: str, top_k: int) -> list:
    """The first top_k hits at level `minimum` or above, ranks renumbered from 1."""
    kept = [h for h in hits if at_least(h.confidence, minimum)][:top_k]
    return [replace(h, rank=n) for n, h in enumerate(kept, start=1)]


def in_postings(docs, d: int) -> bool:
    i = bisect_left(docs, d)  # postings are sorted by document
    return i < len(docs) and docs[i] == d


def assess(views, n_docs: int, words, defined, ranked, count: int, vouched=frozenset()) -> list[str]:
    """Levels of the first `count` of `ranked` [(score, (view index, doc))], best first.

    `words` are the query's words as (forms, compound): its terms, whole form first, and whether
    it is a compound identifier (whose whole form, not a part, says what was asked for).
    `defined` holds the definition terms that mark a chunk defining the symbol the query names
    (empty unless the query is a symbol); `vouched` the (view index, doc) of the chunks a pasted
    stack frame vouches for."""
    if not ranked or count <= 0:
        return []
    top = ranked[:count]
    hit_views = {i for _, (i, _) in top}
    n = max(n_docs, 1)
    idfs: dict[str, float] = {}
    docs_of: dict[tuple[str, int], object] = {}  # (term, view) -> doc ids, for the views hits are in
    for term in {t for forms, _ in words for t in forms}:
        df = 0
        for i, view in enumerate(views):
            plist = view.segment.postings(term)
            if plist is None:
                continue
            docs = plist[0]
            df += live_count(view, docs)
            if i in hit_views:
                docs_of[(term, i)] = docs
        if df:
            idfs[term] = idf(n, df)
    absent = idf(n, 0)  # the largest idf: a term no document has
    weights, part_totals = [], []
    for forms, compound in words:
        present = [idfs[t] for t in forms if t in idfs]
        if compound:
            weights.append(idfs.get(forms[0], absent))
        else:
            weights.append(max(present) if present else absent)
        # What an identifier's parts weigh (one the index lacks weighs the most an idf can): what
        # a hit holding some of them, not the identifier, is credited a share of (below).
        part_totals.append(sum(idfs.get(t, absent) for t in forms[1:]) if compound else 0.0)
    for term in defined:
        for i in hit_views:
            plist = views[i].segment.postings(term)
            if plist is not None:
                docs_of[(term, i)] = plist[0]
    total = sum(weights)
    best = ranked[0][0]
    runner_up = ranked[1][0] / best if len(ranked) > 1 and best > 0 else 0.0
    out = []
    empty = ()
    for n_hit, (value, (i, d)) in enumerate(top):
        matched = 0.0
        for (forms, compound), weight, parts in zip(words, weights, part_totals):
            held = [t for t in forms if t in idfs and in_postings(docs_of.get((t, i), empty), d)]
            if not held:
                continue
            if compound and held[0] != forms[0]:
                # An identifier's parts without the identifier: credit for the share of its parts
                # the hit has, by idf (one part of `totally_bogus_identifier` is no half-answer), at
                # most ABSENT_PART_CREDIT of it, whether the index holds the name or not (`load_config_file`
                # that never existed, `config` and `file` everywhere; a chunk defining `otherNeedleFn`
                # was `high` for `targetNeedleFn`, defined in another file).
                matched += weight * ABSENT_PART_CREDIT * sum(idfs[t] for t in held) / parts if parts else 0.0
            else:
                matched += min(weight, max(idfs[t] for t in held))
        graded = level(
            first=n_hit == 0,
            coverage=matched / total if total > 0 else 0.0,
            relative=value / best if best > 0 else 0.0,
            runner_up=runner_up,
            defines=any(in_postings(docs_of.get((term, i), empty), d) for term in defined),
        )
        out.append(MEDIUM if graded == LOW and (i, d) in vouched else graded)
    return out


# camelCase, an acronym before a word, a letter-digit boundary, or an inner underscore
_COMPOUND = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]|[A-Za-z][0-9]|[0-9][A-Za-z]|[^\W_]_+[^\W_]")


def word_forms(words, split) -> list[tuple[tuple[str, ...], bool]]:
    """(forms, compound) for each distinct word of a query, given the tokenizer's `split`."""
    out, seen = [], set()
    for word in words:
        forms = tuple(split(word))
        if not forms or forms in seen:
            continue
        seen.add(forms)
        out.append((forms, bool(_COMPOUND.search(word)) and forms[0] == word.lower()))
    return out


def query_evidence(query: str, symbol_query: bool) -> tuple[list, list[str]]:
    """(word forms, definition terms) of a code-aware query, as `assess` takes them: a symbol query
    also counts whether a hit defines one of its words. A path counts by its file name."""
    defined = list(dict.fromkeys(def_term(w) for w in query_words(query))) if symbol_query else []
    return word_forms(query_words(file_names_only(query)), split_identifier), defined
