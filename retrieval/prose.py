"""The `prose` analyzer: Lucene's default English analysis, for collections of documents.

StandardTokenizer word rules (UAX #29 for alphabetic scripts: letters joined across `.` `'` `:`,
digits across `.` `,` `;`, letters and digits and `_` run together, each CJK ideograph a token of
its own), then English possessive removal, lower-casing, the 33-word English stop list and the
Porter stemmer. No identifier splitting: `getHTTPResponse` is one term, as it is for Lucene.
Matching Lucene term for term is what lets BM25 over these terms reproduce a Lucene reference run.
"""
from __future__ import annotations

from collections import Counter

from .lazyre import LazyPattern as lazy_compile
from .memo import Memo
from .stem import porter_any

# Bump when a change here changes the terms a text yields (the index fingerprint carries it).
VERSION = 1

# Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET.
STOPWORDS = frozenset(
    """a an and are as at be but by for if in into is it no not of on or such that the their then
    there these they this to was will with""".split()
)

_IDEOGRAPH = "\u3040-\u309f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# A word character: a letter, a digit, a combining mark, or connector punctuation (`_`).
_CHAR = rf"[^\W{_IDEOGRAPH}]|[\u0300-\u036f\u203f\u2040\u2054\ufe33\ufe34\ufe4d-\ufe4f\uff3f]"
_LETTER = rf"[^\W\d_{_IDEOGRAPH}]"
# UAX #29 MidLetter, MidNumLet and the apostrophe join letters; MidNum, MidNumLet and the
# apostrophe join digits.
_MID_LETTER = r"[:.'\u00b7\u0387\u055f\u05f4\u2018\u2019\u2024\u2027\ufe13\ufe52\ufe55\uff07\uff0e\uff1a]"
_MID_NUM = (r"[.,;'\u037e\u0589\u060c\u060d\u066c\u07f8\u2018\u2019\u2024\u2044\ufe10\ufe14\ufe50\ufe52"
            r"\ufe54\uff07\uff0c\uff0e\uff1b]")
_TOKEN = lazy_compile(
    rf"[{_IDEOGRAPH}]"
    rf"|(?:{_CHAR})(?:{_CHAR}|(?<={_LETTER}){_MID_LETTER}(?={_LETTER})|(?<=\d){_MID_NUM}(?=\d))*"
)
_CONNECTORS_ONLY = lazy_compile(r"[_\u203f\u2040\u2054\ufe33\ufe34\ufe4d-\ufe4f\uff3f]+")
MAX_TOKEN = 255  # Lucene splits longer tokens at this length


def tokens(text: str) -> list[str]:
    """Tokens as Lucene's StandardTokenizer cuts them (case kept)."""
    out = []
    for token in _TOKEN.findall(text):
        if _CONNECTORS_ONLY.fullmatch(token):
            continue
        if len(token) > MAX_TOKEN:
            out.extend(token[i : i + MAX_TOKEN] for i in range(0, len(token), MAX_TOKEN))
        else:
            out.append(token)
    return out


_MEMO: Memo = Memo(500_000)


def _term(token: str) -> str | None:
    """One token through the filter chain: possessive, lower case, stop words, Porter."""
    term = _MEMO.get(token, "")
    if term != "":
        return term
    word = token
    if len(word) >= 2 and word[-1] in "sS" and word[-2] in "'\u2019\uff07":
        word = word[:-2]
    word = word.lower()
    result = None if word in STOPWORDS or not word else porter_any(word)
    return _MEMO.put(token, result)


def analyze(text: str) -> list[str]:
    """Terms of a text in order (queries)."""
    return [t for t in map(_term, tokens(text)) if t is not None]


def term_counts(text: str) -> Counter:
    """Term frequencies of a text (documents)."""
    return Counter(analyze(text))
