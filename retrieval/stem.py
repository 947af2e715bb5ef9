"""The Porter stemming algorithm (M.F. Porter, 1980), as Lucene's PorterStemFilter applies it.

Written from the published description of the algorithm. Stems are memoised: a corpus has far
fewer distinct words than word occurrences.
"""
from __future__ import annotations

from .memo import Memo

# Bump when a change here changes a stem (the index fingerprint carries it).
VERSION = 1

_VOWELS = frozenset("aeiou")


def _consonants(word: str) -> list[bool]:
    """Whether each letter is a consonant: not a vowel, and a y only first or after a vowel (after
    a consonant it is a vowel). One pass: recursing back over the y's before it went past the
    recursion limit on a token of a thousand y's (a line of filler) and failed the whole index."""
    flags: list[bool] = []
    for c in word:
        flags.append(c not in _VOWELS and (c != "y" or not flags or not flags[-1]))
    return flags


def _measure(stem: str) -> int:
    """m in [C](VC)^m[V]."""
    flags = _consonants(stem)
    m, i, n = 0, 0, len(stem)
    while i < n and flags[i]:
        i += 1
    while i < n:
        while i < n and not flags[i]:
            i += 1
        if i >= n:
            break
        m += 1
        while i < n and flags[i]:
            i += 1
    return m


def _has_vowel(stem: str) -> bool:
    return not all(_consonants(stem))


def _ends_double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _consonants(word)[-1]


def _cvc(word: str) -> bool:
    """consonant-vowel-consonant ending, the last not w, x or y."""
    if len(word) < 3:
        return False
    flags = _consonants(word)  # a letter's flag depends on the letters before it only
    return flags[-3] and not flags[-2] and flags[-1] and word[-1] not in "wxy"


def _replace(word: str, suffix: str, repl: str, min_m: int) -> str | None:
    """If word ends with suffix: the replaced word when m(stem) > min_m, else word; None if no suffix."""
    if not word.endswith(suffix):
        return None
    stem = word[: len(word) - len(suffix)]
    return stem + repl if _measure(stem) > min_m else word


_STEP2 = (
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"),
    ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"),
    ("ization", "ize"), ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"),
    ("fulness", "ful"), ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"),
    ("logi", "log"),
)
_STEP3 = (
    ("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""),
    ("ness", ""),
)
_STEP4 = (
    "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou",
    "ism", "ate", "iti", "ous", "ive", "ize",
)


def _step1ab(w: str) -> str:
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("ies"):
        w = w[:-2]
    elif w.endswith("ss"):
        pass
    elif w.endswith("s"):
        w = w[:-1]
    if w.endswith("eed"):
        if _measure(w[:-3]) > 0:
            w = w[:-1]
        return w
    for suffix in ("ed", "ing"):
        if w.endswith(suffix) and _has_vowel(w[: -len(suffix)]):
            w = w[: -len(suffix)]
            if w.endswith(("at", "bl", "iz")):
                return w + "e"
            if _ends_double_consonant(w) and w[-1] not in "lsz":
                return w[:-1]
            if _measure(w) == 1 and _cvc(w):
                return w + "e"
            return w
    return w


def _step1c(w: str) -> str:
    if w.endswith("y") and _has_vowel(w[:-1]):
        return w[:-1] + "i"
    return w


def _first_suffix(w: str, table) -> str:
    """Steps 2 and 3: the first listed suffix that ends w decides (replaced when m > 0)."""
    for suffix, repl in table:
        out = _replace(w, suffix, repl, 0)
        if out is not None:
            return out
    return w


def _step4(w: str) -> str:
    for suffix in _STEP4:
        if w.endswith(suffix):
            stem = w[: -len(suffix)]
            if suffix == "ion" and not stem.endswith(("s", "t")):
                return w
            return stem if _measure(stem) > 1 else w
    return w


def _step5(w: str) -> str:
    if w.endswith("e"):
        stem = w[:-1]
        m = _measure(stem)
        if m > 1 or (m == 1 and not _cvc(stem)):
            w = stem
    if _measure(w) > 1 and _ends_double_consonant(w) and w.endswith("l"):
        w = w[:-1]
    return w


_MEMO: Memo = Memo(500_000)


def porter(word: str) -> str:
    """The Porter stem of a lower-case word; words of two letters or fewer are kept."""
    out = _MEMO.get(word)
    if out is not None:
        return out
    if len(word) <= 2 or not word.isalpha() or not word.isascii():
        out = word
    else:
        out = _step5(_step4(_first_suffix(_first_suffix(_step1c(_step1ab(word)), _STEP2), _STEP3)))
    return _MEMO.put(word, out)


_MEMO_ANY: Memo = Memo(500_000)


def porter_any(word: str) -> str:
    """The Porter stem of any lower-case token, as Lucene's PorterStemFilter computes it: digits
    and other non-letters count as consonants (porter() leaves such words alone)."""
    out = _MEMO_ANY.get(word)
    if out is None:
        if len(word) <= 2:
            out = word
        else:
            out = _step5(_step4(_first_suffix(_first_suffix(_step1c(_step1ab(word)), _STEP2), _STEP3)))
        _MEMO_ANY.put(word, out)
    return out
