"""A packed chunk's label, chosen by the query's words.

A syntax-aware chunk of several small definitions (`halt`, `pass` and `forward` merged up to the
size budget) is labelled at index time by the one holding most of its lines. A query whose words
are in another one's lines is about that one: the hit names it (its scope path, name and kind), so
an agent reading `Base.forward` does not look for the match in the wrong function. The chunk's
span, and so what is shown, stays as it is.
"""
from __future__ import annotations

import math
import re
from dataclasses import replace

from .records import SearchHit
from .text import term_counts


_WORD = re.compile(r"[A-Za-z_$][\w$]*(\s*\()?")


def named_identifiers(query: str) -> frozenset[str]:
    """The identifiers a query writes as code, lower-cased: camelCase, snake_case, with a digit, or
    called (`preventLazyLoading`, `spawn_blocking`, `run()`); not its plain words."""
    return frozenset(m.group(0).split("(")[0].strip().lower() for m in _WORD.finditer(query)
                     if m.group(1) or re.search(r"[a-z][A-Z]|\w_\w|[A-Za-z]\d", m.group(0)))


def member_in_focus(lines: list[str], start: int, members, weights: dict[str, float],
                    named: frozenset[str] = frozenset()):
    """The member (Chunk.members) the query names as code (`named`: named_identifiers), else the
    one whose lines hold more of the query's terms (`weights`: term -> weight, each counted once
    per region) than the label's own lines do (those in no member beside it); None when none does.
    `lines` are the chunk's, its first being line `start`. Of members holding as much, the shortest
    (a method rather than the class around it), then the first."""
    ranged = [m for m in members if m[3] and m[3] <= start + len(lines) - 1 and start <= m[4]]
    called = [m for m in ranged if m[0].lower() in named]
    if called:
        # Its words are plain words elsewhere too: a docblock saying "prevent lazy loading" outweighed
        # the method `preventLazyLoading` a question named.
        return min(called, key=lambda m: (m[4] - m[3], m[3]))
    if not ranged or not weights:
        return None
    found = [weights.keys() & term_counts(line).keys() for line in lines]

    def worth(first: int, last: int) -> float:
        held = set().union(*found[max(first, start) - start : min(last, start + len(lines) - 1) - start + 1])
        # fsum: exact whatever the order; a plain sum over a set varied in its last bit with the
        # hash seed, and two regions holding the same terms compared unequal (labels flipped per run).
        return math.fsum(weights[t] for t in held)

    own = set()
    covered = {row for m in ranged for row in range(m[3], m[4] + 1)}
    for row, terms in enumerate(found, start=start):
        if row not in covered:
            own |= terms
    best = max(ranged, key=lambda m: (worth(m[3], m[4]), -(m[4] - m[3]), -m[3]))
    return best if worth(best[3], best[4]) > math.fsum(weights[t] for t in own) else None


def relabel(hit: SearchHit, lines: list[str], weights: dict[str, float],
            named: frozenset[str] = frozenset(), pasted=()) -> SearchHit:
    """`hit` labelled by its member in focus (member_in_focus over its own lines), if any; a hit
    whose own label the query names keeps it. `pasted`: texts to find word for word (verbatim_text,
    or a pasted output's lines), the first one's line in the hit deciding: a message names its class
    (`Cannot create NonEmptyList from empty list`), and the class's label was kept over the member
    raising it."""
    if hit.start_line is None or len(lines) != (hit.end_line or 0) - hit.start_line + 1:
        return hit
    if pasted:
        from .verbatim import line_holding

        row = line_holding("".join(lines), pasted)
        if row is not None:
            row += hit.start_line - 1
            held = [m for m in hit.members if m[3] and m[3] <= row <= m[4]]
            if held:
                name, path, kind = min(held, key=lambda m: (m[4] - m[3], m[3]))[:3]
                return replace(hit, context=path, symbol=name, kind=kind or hit.kind)
            return hit
    if hit.symbol and hit.symbol.lower() in named:
        return hit
    member = member_in_focus(lines, hit.start_line, hit.members, weights, named)
    if member is None:
        return hit
    name, path, kind = member[:3]
    return replace(hit, context=path, symbol=name, kind=kind or hit.kind)
