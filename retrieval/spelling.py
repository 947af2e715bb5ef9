"""Names spelt like a misspelt one: the definitions a "did you mean" offers for an identifier the
index does not hold (`expireGenricCommand` -> `expireGenericCommand`, `splitlnk` -> `splitLink`).

Standard library only. Names are compared without case and underscores (a query's naming style is
loose: `get_selecton` is one letter from `getSelection`), by edit distance counting a swap of two
neighbouring letters as one edit.
"""
from __future__ import annotations

MIN_LENGTH = 4  # shorter names are one edit from too many others to suggest any


def key(name: str) -> str:
    return name.casefold().replace("_", "").replace("-", "")


def allowed_edits(length: int) -> int:
    """Edits a name of this many letters may be off by: one for a short name, two from eight."""
    return 0 if length < MIN_LENGTH else 1 if length < 8 else 2


def distance(a: str, b: str, bound: int) -> int:
    """Optimal string alignment distance between a and b, or bound + 1 once it must exceed bound."""
    if abs(len(a) - len(b)) > bound:
        return bound + 1
    before: list[int] | None = None
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if before is not None and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                value = min(value, before[j - 2] + 1)
            current[j] = value
        if min(current) > bound:
            return bound + 1
        before, previous = previous, current
    return previous[-1]


def spelt_like(word: str, names, limit: int | None = 3) -> list[str]:
    """Up to `limit` (None: all) of `names` within the allowed edits of `word`, nearest first, then nearest as
    written, then by name (a name in several spellings, `has_many` and `HasMany`, counts once, in
    the spelling nearest the query's). [] when none is, or when `word` itself is among them."""
    target = key(word)
    bound = allowed_edits(len(target))
    if not bound:
        return []
    found: dict[str, tuple[int, int, str]] = {}
    for name in names:
        k = key(name)
        if abs(len(k) - len(target)) > bound or (k[:1] != target[:1] and k[-1:] != target[-1:]):
            continue  # a misspelling keeps its first or its last letter; the rest are not compared
        d = distance(target, k, bound)
        if d == 0:
            return []  # not misspelt: the index holds it in another spelling
        if d <= bound:
            # Of one name's spellings (`has_many`, `HasMany`), the one written in the query's style.
            ranked = (d, distance(word, name, len(word) + len(name)), name)
            if k not in found or ranked < found[k]:
                found[k] = ranked
    return [name for *_, name in sorted(found.values())[:limit]]
