"""A packed chunk's label, chosen by the query's words.

A syntax-aware chunk of several small definitions (`halt`, `pass` and `forward` merged up to the
size budget) is labelled at index time by the one holding most of its lines. A query whose words
are in another one's lines is about that one: the hit names it (its scope path, name and kind), so
an agent reading `Base.forward` does not look for the match in the wrong function. The chunk's
span, and so what is shown, stays as it is.
"""
from __future__ import annotations

import math
from dataclasses import replace

from .records import SearchHit
from .text import term_counts


def member_in_focus(lines: list[str], start: int, members, weights: dict[str, float]):
    """The member (Chunk.members) whose lines hold more of the query's terms (`weights`: term ->
    weight, each counted once per region) than the label's own lines do (those in no member beside
    it); None when none does. `lines` are the chunk's, its first being line `start`. Of members
    holding as much, the shortest (a method rather than the class around it), then the first."""
    ranged = [m for m in members if m[3] and m[3] <= start + len(lines) - 1 and start <= m[4]]
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


def relabel(hit: SearchHit, lines: list[str], weights: dict[str, float]) -> SearchHit:
    """`hit` labelled by its member in focus (member_in_focus over its own lines), if any."""
    if hit.start_line is None or len(lines) != (hit.end_line or 0) - hit.start_line + 1:
        return hit
    member = member_in_focus(lines, hit.start_line, hit.members, weights)
    if member is None:
        return hit
    name, path, kind = member[:3]
    return replace(hit, context=path, symbol=name, kind=kind or hit.kind)
