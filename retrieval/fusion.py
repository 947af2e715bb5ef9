"""Rank fusion and span consolidation: pure functions over plain data (no index, no I/O).

Two ways to fuse a lexical and a dense ranking of the same chunks:
- `reciprocal_rank_fusion`: sum of weight / (k + rank); knows nothing of scores.
- `score_fusion`: each arm's scores scaled to [0, 1] against its own best (and, for cosines, its
  own floor), then a convex combination whose lexical share `lexical_trust` chooses per query:
  a bare identifier is the lexical arm's question; a sentence whose best lexical match stands
  well clear of the rest is too; a sentence whose lexical scores are flat is the dense arm's.

`consolidate` merges several retrievers' hits: overlapping or adjacent spans of one file become one
hit (of bounded length) that remembers which retrievers found it (`provenance`) and how many agreed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Hashable, Iterable, Sequence

RRF_K = 60
# Consolidation's rank constant: small, so one retriever's first hit outweighs three retrievers'
# agreeing on a tenth-ranked span (with 60, agreement at any depth wins).
CONSOLIDATE_K = 1


def reciprocal_rank_fusion(rankings: Sequence[Sequence[Hashable]], weights: Sequence[float] | None = None,
                           k: int = RRF_K) -> dict[Hashable, float]:
    """{item: sum over rankings of weight / (k + rank)}; ranks are 1-based, absent items add nothing."""
    weights = weights if weights is not None else [1.0] * len(rankings)
    out: dict[Hashable, float] = {}
    for ranking, weight in zip(rankings, weights):
        for rank, item in enumerate(ranking, start=1):
            out[item] = out.get(item, 0.0) + weight / (k + rank)
    return out


def scale_max(scores: dict[Hashable, float]) -> dict[Hashable, float]:
    """Scores divided by the best (BM25: zero means no match, so zero stays the floor)."""
    top = max(scores.values(), default=0.0)
    return {key: value / top for key, value in scores.items()} if top > 0 else {key: 0.0 for key in scores}


def scale_min_max(scores: dict[Hashable, float]) -> dict[Hashable, float]:
    """Scores mapped onto [0, 1] between the lowest and the best (cosines: the deepest candidate
    retrieved is as good as unrelated)."""
    if not scores:
        return {}
    low, top = min(scores.values()), max(scores.values())
    if top <= low:
        return {key: 1.0 for key in scores}
    return {key: (value - low) / (top - low) for key, value in scores.items()}


def score_fusion(lexical: dict[Hashable, float], dense: dict[Hashable, float], lexical_share: float,
                 *, impute: bool = False, rank_weight: float = 0.0, rank_k: int = 5) -> dict[Hashable, float]:
    """{item: share * lexical (scaled by its best) + (1 - share) * dense (scaled min-max)}. An item
    one arm did not return scores that arm's lowest candidate (`impute`): it is no better than the
    deepest candidate, but not known to be worse; without `impute` it gets nothing from that arm.
    `rank_weight` adds, from each arm, rank_weight * (rank_k + 1) / (rank_k + its rank there) (see
    `rank_bonus`)."""
    lex, den = scale_max(lexical), scale_min_max(dense)
    share = min(max(lexical_share, 0.0), 1.0)
    lex_floor = min(lex.values(), default=0.0) if impute else 0.0
    den_floor = 0.0  # min-max scaling puts the lowest dense candidate at 0 already
    # The lexical arm's items in its order, then the dense arm's others: the ranking's stable sorts
    # keep that order among ties (a set union's order changed with each process's string hashing).
    fused = {key: share * lex.get(key, lex_floor) + (1.0 - share) * den.get(key, den_floor)
             for key in dict.fromkeys([*lex, *den])}
    if rank_weight:
        for arm in (lexical, dense):
            for key, bonus in rank_bonus(arm, rank_weight, rank_k).items():
                fused[key] += bonus
    return fused


def rank_bonus(scores: dict[Hashable, float], weight: float, k: int) -> dict[Hashable, float]:
    """{item: weight * (k + 1) / (k + rank)}, rank 1 the best score (ties by item): the whole weight
    for an arm's first candidate, half of it at rank k + 2. Scaled scores alone flatten an arm's
    lead when its best few are close (cosines of 0.52 and 0.49, the hundredth 0.37, are 1.0 and
    0.8 after min-max scaling, the 0.8 beside a 0.96 from the other arm); ranks keep each arm's own
    first candidates ahead of items both arms rate middling."""
    ranked = sorted(scores, key=lambda key: (-scores[key], key))
    return reciprocal_rank_fusion([ranked], [weight * (k + 1)], k)


def margin(scores: Sequence[float], depth: int = 10) -> float:
    """How far the best score stands above the typical score of the next `depth`: (best - mean of
    those) / best, in [0, 1]. Flat scores (0) say the arm cannot tell its candidates apart."""
    ranked = sorted(scores, reverse=True)
    if not ranked or ranked[0] <= 0:
        return 0.0
    rest = ranked[1 : 1 + depth]
    if not rest:
        return 1.0
    return max(0.0, (ranked[0] - sum(rest) / len(rest)) / ranked[0])


@dataclass(frozen=True)
class TrustConfig:
    """The lexical share per query kind. Measured on semble-dev (11 repositories) and CoSQA dev:
    sentences whose dense best is a close match (CoSQA: a docstring saying what the question
    asks; mean top cosine 0.71 against 0.52 on semble) belong to the dense arm, sentences whose
    lexical best stands out belong to the lexical arm.

    What a better share could still gain (semble-dev's 38 repositories, CoSQA dev; hybrid 0.8914
    and MRR 53.6 as set here): the best of the shares 0, 0.1, ..., 1 picked per sentence in
    hindsight gives 0.923 and 62.2, but no signal at hand tells which arm a sentence needs: each
    of fourteen (both arms' margins, cosine gaps, the arms' agreement on their first hits, query
    length, a named file) separates the sentences either arm answered better at an AUC of 0.35 to
    0.65, and the best linear share over all of them, fitted to both benchmarks at once, reached
    0.890 and 54.3 on the very queries it was fitted to. One share for every sentence trades one
    benchmark for the other (0.6: 0.896 and 47.2; 0.1: 0.874 and 53.3), as does the best of 800
    settings of the fields below (per_margin 0.5, per_cosine 1, cosine_pivot 0.6: 0.892 and 53.2)."""

    symbol: float = 0.95  # a bare identifier: the lexical arm finds its definition
    long: float = 0.7  # a pasted report: the model reads its first 256 tokens only
    base: float = 0.2  # a sentence: lexical share when both margins are equal
    per_margin: float = 1.0  # added per unit of lexical margin over the dense margin
    per_cosine: float = 2.0  # taken per unit the dense best's cosine passes the pivot (a close match)
    cosine_pivot: float = 0.55
    lowest: float = 0.05
    highest: float = 0.8
    # At least this share when the query spells the file name of the lexical arm's best hit
    # (`JsonReader` -> JsonReader.cs): the asker names the place, and the dense arm would lift a
    # large central file over it. semble-dev, 38 repositories: hybrid 0.886 -> 0.889 (0.5: 0.888,
    # 0.9: 0.885); CoSQA is unaffected (its files are numbered).
    named_file: float = 0.7
    # Each arm's rank adds to the fused score (`rank_bonus`): the whole weight for an arm's first
    # candidate, half at rank rank_k + 2. semble-dev (38 repositories): 0.8907 -> 0.8949 (weights 0.1
    # to 0.4 and rank_k 3 to 20 all gained 0.001 to 0.004; Lua, C and Swift up); CoSQA dev MRR 53.4 ->
    # 53.1 (52.6 to 53.5 over those settings); swebench-dev reports, 75 instances (all but sphinx's
    # and sympy's): Acc@1/3/5 0.453/0.747/0.840 -> 0.467/0.747/0.840, MRR 0.723 -> 0.733, edited lines
    # inside a 2,000-token answer 0.547 -> 0.600. Not for bare identifiers: the dense arm's ranks
    # pulled their definitions down (symbol queries 0.978 -> 0.975).
    rank_weight: float = 0.25
    rank_k: int = 5


def lexical_trust(kind: str, lexical_scores: Sequence[float], dense_scores: Sequence[float],
                  config: TrustConfig = TrustConfig(), *, names_file: bool = False) -> float:
    """The lexical arm's share for one query: `kind` is symbol, long or sentence; `names_file`
    says the query spells the file name of the lexical arm's best hit."""
    if kind == "symbol":
        return config.symbol
    if kind == "long":
        return config.long
    if not lexical_scores:
        return 0.0
    if not dense_scores:
        return 1.0
    edge = margin(lexical_scores) - margin(dense_scores)
    close = max(dense_scores) - config.cosine_pivot
    share = min(config.highest, max(config.lowest, config.base + config.per_margin * edge - config.per_cosine * close))
    return max(share, config.named_file) if names_file else share


# -- consolidation -------------------------------------------------------------------------------


@dataclass
class Span:
    """One hit of one retriever (or, after consolidation, of several)."""

    path: str
    start_line: int | None
    end_line: int | None
    score: float
    provenance: list[str] = field(default_factory=list)
    ranks: dict[str, int] = field(default_factory=dict)  # retriever -> its rank of this span
    # What the best-placed retriever said of it (a merged span keeps the better side's).
    language: str = ""
    kind: str = ""
    context: str = ""
    symbol: str = ""
    # Lines of the longest span one retriever returned among those merged here (0: this span's own).
    longest: int = 0
    scope: tuple[int, int] | None = None  # lines of the enclosing scope, when a retriever knew it
    # What each retriever returned that was merged here: (name, rank, start, end, its share of the
    # score). A span cut to fewer lines keeps the credit of those whose lines it still shows.
    members: tuple = ()
    # The other definitions of the chunk that said the label, with their lines (SearchHit.members):
    # a query's words may name one of them instead (retrieval.labels).
    definitions: tuple = ()

    @property
    def agreement(self) -> int:
        return len(self.provenance)

    @property
    def lines(self) -> int | None:
        return None if self.start_line is None else (self.end_line or self.start_line) - self.start_line + 1


ADJACENT_GAP = 2  # lines between two spans that still make them adjacent (chunks drop blank edge lines)
# A merged span stays within this many times the longest span any one retriever returned in it.
# Without a bound each retriever's chunk touches the next one's and the union keeps growing:
# on semble-dev (38 repositories, four retrievers) the first hit averaged 81 lines (up to 742)
# against hybrid's 36 (up to 112), tokens an agent pays for without asking.
MERGE_GROWTH = 2.0
MIN_REMNANT = 3  # lines a clipped span must keep to stay a hit (one that was shorter is kept)


def _touches(a: Span, b: Span) -> bool:
    """Same file, and the spans overlap or are adjacent (a whole-file hit touches every span)."""
    if a.path != b.path:
        return False
    if a.start_line is None or b.start_line is None:
        return True
    reach = ADJACENT_GAP + 1
    return a.start_line <= (b.end_line or b.start_line) + reach and b.start_line <= (a.end_line or a.start_line) + reach


def consolidate(rankings: dict[str, Sequence[Span]], k: int = CONSOLIDATE_K,
                weights: dict[str, float] | None = None, first_rank: int = 1) -> list[Span]:
    """One ranking from several retrievers' ranked spans. Each span scores by reciprocal rank
    (times its retriever's weight, 1 unless given);
    spans of one file that overlap or touch merge (their union, scores summed, provenance and
    ranks joined), so a place several retrievers agree on rises, as long as the union stays
    within MERGE_GROWTH times its longest member; a span that cannot merge keeps only the lines
    no other hit covers. Best first; ties by path. `first_rank`: the rank of each list's first span
    (the lists continue deeper ones); a None holds a rank whose span is left out (see uncovered)."""
    merged: dict[str, list[Span]] = {}
    for name, spans in rankings.items():
        for rank, span in enumerate(spans, start=first_rank):
            if span is None:
                continue
            weight = (weights or {}).get(name, 1.0)
            piece = Span(span.path, span.start_line, span.end_line, weight / (k + rank), [name], {name: rank},
                         span.language, span.kind, span.context, span.symbol, scope=span.scope,
                         members=((name, rank, span.start_line, span.end_line, weight / (k + rank)),),
                         definitions=span.definitions)
            group = merged.setdefault(span.path, [])
            # Absorb every existing span it touches while the union stays within bounds (a new span
            # can bridge two), the one it overlaps most first: a piece inside a span is credited to
            # that span, not to a neighbour it merely touches (its rank went to the neighbour, and the
            # span that holds it showed only a deeper rank). What still touches it limits it to the
            # lines no other hit covers.
            for s in sorted((s for s in group if _touches(s, piece)), key=lambda s: -_overlap(s, piece)):
                if _fits(s, piece):
                    group.remove(s)
                    piece = _join(s, piece, k, weights)
            # Of two overlapping spans that cannot merge, the lower-scored one gives up the shared
            # lines: a syntax-aware hit merged into the best place lost its method's last lines to
            # a deeper line chunk that began inside it (requests' rebuild_auth, 282-300, shown as
            # ...-296 with 297-300 opening the next hit).
            # A retriever whose lines went with them is credited to the span that shows them now.
            for s in [s for s in group if _overlap(s, piece) > 0 and s.score < piece.score]:
                group.remove(s)
                rest = _clip(s, [piece])
                piece = _credited(piece, piece.members + _lost(s, rest, piece))
                if rest is not None:
                    group.append(rest)
            touching = [s for s in group if _touches(s, piece)]
            rest = _clip(piece, touching)
            for s in touching:
                lost = _lost(piece, rest, s)
                if lost:
                    group[group.index(s)] = _credited(s, s.members + lost)
            if rest is not None:
                group.append(rest)
    out = [s for group in merged.values() for s in group]
    out.sort(key=lambda s: (-s.score, s.path, s.start_line or 0))
    return out


def uncovered(spans: Sequence[Span], above: Sequence[Span]) -> list[Span | None]:
    """Each span cut to the lines no span of `above` covers (None where none are left): deeper
    candidates consolidated from these credit a retriever only for lines it returned that the hits
    above do not show (merged whole and clipped after, a deeper hit listed retrievers whose span was
    a hit above)."""
    by_path: dict[str, list[Span]] = {}
    for span in above:
        by_path.setdefault(span.path, []).append(span)
    return [_clip(span, [s for s in by_path.get(span.path, ()) if _overlap(s, span) > 0]) for span in spans]


def append_below(first: list[Span], more: Sequence[Span]) -> list[Span]:
    """`first`, then each span of `more` cut to the lines no span before it in its file covers
    (dropped if none are left): deeper candidates add hits without changing those above them."""
    out = list(first)
    by_path: dict[str, list[Span]] = {}
    for span in out:
        by_path.setdefault(span.path, []).append(span)
    for span in more:
        group = by_path.setdefault(span.path, [])
        piece = _clip(span, [s for s in group if _touches(s, span)]) if group else span
        if piece is not None:
            group.append(piece)
            out.append(piece)
    added = out[len(first):]
    floor = first[-1].score if first else 0.0
    top = max((s.score for s in added), default=0.0)
    if top > floor > 0:
        # Scaled below the last of `first`: a score falls with rank (a lead retriever's 21st hit
        # scored 4.59 below another's 19th at 0.05), and the order among them stays.
        out[len(first):] = [replace(s, score=s.score * floor / top) for s in added]
    return out


def _overlap(a: Span, b: Span) -> int:
    """Lines two spans of a file share (0 or less: they are apart or adjacent); a whole-file hit
    shares everything."""
    if a.start_line is None or b.start_line is None:
        return 1 << 30
    return min(a.end_line or a.start_line, b.end_line or b.start_line) - max(a.start_line, b.start_line) + 1


def _longest(s: Span) -> int:
    return s.longest or s.lines or 0


def _fits(a: Span, b: Span) -> bool:
    """Whether the union of two touching spans stays within MERGE_GROWTH of the longer's longest
    member (a whole-file hit is the whole file already)."""
    if a.start_line is None or b.start_line is None:
        return True
    union = max(a.end_line or a.start_line, b.end_line or b.start_line) - min(a.start_line, b.start_line) + 1
    return union <= MERGE_GROWTH * max(_longest(a), _longest(b))


def _clip(piece: Span, others: Sequence[Span]) -> Span | None:
    """`piece` cut to its longest run of lines that none of `others` covers (None: nothing left),
    so the hits of one file never overlap."""
    if not others:
        return piece
    if piece.start_line is None or any(other.start_line is None for other in others):
        return None  # a whole-file hit covers every line; a file with hits takes none below them
    free = [(piece.start_line, piece.end_line or piece.start_line)]
    for other in others:
        lo, hi = other.start_line, other.end_line or other.start_line
        free = [part for a, b in free for part in ((a, min(b, lo - 1)), (max(a, hi + 1), b)) if part[0] <= part[1]]
    if not free:
        return None
    start, end = max(free, key=lambda part: (part[1] - part[0], -part[0]))
    if end - start + 1 < MIN_REMNANT <= (piece.end_line or piece.start_line) - piece.start_line + 1:
        return None  # a line or two left between other hits (a blank, a brace) is no hit
    piece = replace(piece, start_line=start, end_line=end, longest=_longest(piece))
    if not piece.members:
        return piece
    # Credited only to the retrievers whose lines it still shows: a merged span that gave up the
    # lines of one retriever's hit listed that retriever, and kept its score, for lines it never returned.
    kept = tuple(m for m in piece.members if m[2] is None or (m[2] <= end and start <= (m[3] or m[2])))
    if not kept:
        return None
    return _credited(piece, kept)


def _lost(span: Span, rest: Span | None, holder: Span) -> tuple:
    """The members of `span` that its clipped `rest` lost and whose lines `holder` shows."""
    kept = rest.members if rest is not None else ()
    return tuple(m for m in span.members if m not in kept and m[2] is not None and holder.start_line is not None
                 and m[2] <= (holder.end_line or holder.start_line) and holder.start_line <= (m[3] or m[2]))


def _credited(span: Span, members: tuple) -> Span:
    """`span` credited to `members`: each retriever once, at its best rank."""
    if members == span.members:
        return span
    best: dict[str, tuple] = {}
    for m in members:
        if m[0] not in best or m[1] < best[m[0]][1]:
            best[m[0]] = m
    names = list(dict.fromkeys([*span.provenance, *(m[0] for m in members)]))
    provenance = [name for name in names if name in best]
    ranks = {name: best[name][1] for name in names if name in best}
    score = math.fsum(best[name][4] for name in ranks)  # as _join sums it
    return replace(span, provenance=provenance, ranks=ranks, score=score, members=members)


def _join(a: Span, b: Span, k: int = CONSOLIDATE_K, weights: dict[str, float] | None = None) -> Span:
    if a.start_line is None or b.start_line is None:
        start = end = None
    else:
        start = min(a.start_line, b.start_line)
        end = max(a.end_line or a.start_line, b.end_line or b.start_line)
    provenance = list(dict.fromkeys(a.provenance + b.provenance))
    ranks = dict(a.ranks)
    for name, rank in b.ranks.items():
        ranks[name] = min(rank, ranks.get(name, rank))
    # A retriever counts once per merged span: its best rank, not every chunk it returned there.
    # fsum: exact, so spans with the same ranks tie whatever order they were merged in (a plain sum
    # could differ in the last bit and order a tie by that, not by path).
    score = math.fsum((weights or {}).get(name, 1.0) / (k + r) for name, r in ranks.items())
    best, other = (a, b) if a.score >= b.score else (b, a)
    # What the best-placed retriever said, unless only the other knows the scope (a line chunk
    # merged with a syntax-aware one): then the other's, so `--expand scope` still has a scope.
    said = other if not (best.context or best.scope) and (other.context or other.scope) else best
    scope = said.scope
    if scope is not None and start is not None:  # the scope encloses the whole merged span
        scope = (min(scope[0], start), max(scope[1], end))
    return Span(a.path, start, end, score, provenance, ranks, a.language or b.language, said.kind,
                said.context, said.symbol, max(_longest(a), _longest(b)), scope, a.members + b.members,
                said.definitions)


def as_spans(hits: Iterable) -> list[Span]:
    """SearchHits as Spans."""
    return [Span(h.source_path, h.start_line, h.end_line, h.score, language=h.language, kind=h.kind,
                 context=h.context, symbol=h.symbol, scope=h.scope, definitions=h.members) for h in hits]
