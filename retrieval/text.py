"""Tokenization for code and prose.

Identifiers are kept whole (lower-cased) and also split into their parts on snake_case, camelCase,
acronym and digit boundaries, so `getHTTPResponse2` matches the queries `gethttpresponse2`,
`http response` and `get response`. Splitting is memoised per distinct word: real corpora repeat
identifiers heavily, and the split is the expensive step.
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from itertools import chain

from .lazyre import LazyPattern
from .memo import Memo, clear_all
from .settings import env_flag
from .stem import porter

# Porter stemming of words and identifier parts: on unless RETRIEVAL_STEM=0 (the stored index
# records the choice in its fingerprint; set_stemming changes it in a running process).
# Off only when said so (`0`, `false`, `no`, `off`); any other word is named on stderr.
STEM = env_flag("RETRIEVAL_STEM", True)
# Bump when a change here changes the terms a text yields (the index fingerprint carries it).
VERSION = 6  # 3: data runs (without_data); 4: a run stops at `=` (its padding aside); 5: Unicode words
# (NFKC, case folded, split at case changes in any script, CJK runs also as their 2-character pieces); 6: combining
# marks inside words, Thai, Lao, Myanmar and Khmer runs as CJK ones, a sentence-long run its pieces only


def set_stemming(on: bool) -> None:
    """Switch stemming for this process; every memo of derived terms is dropped with it."""
    global STEM
    STEM = bool(on)
    clear_all()

_WORD = re.compile(r"[^\W_](?:\w*[^\W_])?|_\w*[^\W_]\w*")


def _marks() -> str:
    """A character class body of the combining marks of the Basic Multilingual Plane: `\\w` has none,
    so a Devanagari, Thai or vowelled Arabic word was cut at each of its vowel signs (`नमस्ते` was
    `नमस`, `दुनिया` nothing)."""
    ranges, start = [], None
    for cp in range(0x10000):
        mark = unicodedata.category(chr(cp))[0] == "M"
        if mark and start is None:
            start = cp
        elif not mark and start is not None:
            ranges.append(f"\\u{start:04x}-\\u{cp - 1:04x}" if cp - 1 > start else f"\\u{start:04x}")
            start = None
    return "".join(ranges)


def _unicode_word() -> str:
    m = _marks()
    end = rf"(?:[^\W_]|[{m}])"  # a word ends in a letter, a digit or a mark, never `_`
    return rf"{end}(?:[\w{m}]*{end})?|_[\w{m}]*[^\W_][\w{m}]*"


# Words of a text past ASCII: their combining marks are theirs (built once, on first use: 17 ms).
_UNICODE_WORD = LazyPattern(_unicode_word)
# Within an underscore-free word: acronym before a capitalised word, capitalised/lower words,
# acronyms, digit runs, and any other letter runs (non-ASCII scripts).
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+|[^\W\d_]+")

# Han, kana, Hangul, Thai, Lao, Myanmar and Khmer: written without spaces, so a run between
# punctuation is a sentence, not a word. Such a run is also indexed as its overlapping 2-character
# pieces (as Lucene's CJK analyzer does), so that `总价` finds `计算订单总价格`.
_CJK = re.compile("[\u0e00-\u0eff\u1000-\u109f\u1100-\u11ff\u1780-\u17ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf"
                  "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
# A run longer than this is a sentence, not a word: its pieces are its terms, not the run itself
# (each sentence a term of its own grew the vocabulary by one per sentence).
CJK_WORD = 8
# Pieces of one run at most: a run of 10,000 characters is data, not text (an 18 MB file of such
# runs took 60 s and 2.6 GB to index, against 0.5 s before pieces); an unpunctuated paragraph is not.
CJK_PIECES = 2048
# A part's letters by case (Upper, lower, other: a caseless script) and digits; combining marks
# take their letter's.
_CASED_PART = re.compile(r"U+(?=Ul)|U?l+|U+|d+|o+")


def normal(text: str) -> str:
    """Text as its terms are read: NFKC, so a word typed composed matches it written decomposed
    (macOS writes names so) and full-width letters match their ASCII twins."""
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def fold(word: str) -> str:
    """Lower case; beyond ASCII full case folding (`Straße` is `strasse`), and `İ`'s dot dropped
    (`İzmir` and `DİYARBAKIR` are `izmir` and `diyarbakir`, as is `diyarbakır`)."""
    if word.isascii():
        return word.lower()
    return word.casefold().replace("\u0307", "").replace("ı", "i").translate(_POINTING)


# Hebrew points and Arabic harakat: written in teaching texts and poetry, left out in most, so
# `שָׁלוֹם` is `שלום` and `كَتَبَ` `كتب`, as Lucene's normalizers fold them.
_POINTING = dict.fromkeys([*range(0x0591, 0x05C8), *range(0x0610, 0x061B), *range(0x064B, 0x0660), 0x0670,
                           *range(0x06D6, 0x06EE)])
_POINTING.update({0x05BE: 0x05BE, 0x05C0: 0x05C0, 0x05C3: 0x05C3, 0x05C6: 0x05C6})  # punctuation among them


def _parts(piece: str) -> list[str]:
    """An underscore-free word's parts: at case changes, digits and caseless runs, in any script
    (the ASCII pattern alone cut `größe` into `gr` and `öße`, and matched `grünkohl` by `gr`)."""
    if piece.isascii():
        return _PART.findall(piece)
    if piece.isalpha() and (piece.lower() == piece.upper()
                            or (piece.islower() or piece[1:].islower()) and not _CJK.search(piece)):
        return [piece]  # one part: caseless, lower case or capitalised (most words past ASCII)
    classes = []
    for ch in piece:
        if ch.isdigit():
            classes.append("d")
        elif ch.isupper() or ch.istitle():
            classes.append("U")
        elif ch.islower():
            classes.append("l")
        elif ch.isalpha() or not classes:
            classes.append("o")
        else:  # a combining mark (a word's letter in scripts NFKC composes none for)
            classes.append(classes[-1])
    return [piece[m.start():m.end()] for m in _CASED_PART.finditer("".join(classes))]


def _cjk(word: str) -> bool:
    return not word.isascii() and _CJK.search(word) is not None


# A short English list: words that carry no meaning in a code-search query.
STOPWORDS = frozenset(
    """a an and are as at be but by do does for from has have how i if in into is it its of on or
    s such t that the their then there these they this to was what when where which who why will
    with you your""".split()
)

_MEMO: Memo = Memo(500_000)


def split_identifier(word: str) -> tuple[str, ...]:
    """Lower-cased terms for one word: the whole word first, then its parts (deduplicated)."""
    cached = _MEMO.get(word)
    if cached is not None:
        return cached
    key, word = word, normal(word)  # (words_of's are already)
    whole = fold(word)
    terms = [whole] if len(whole) > 1 and whole not in STOPWORDS else []
    parts: list[str] = []
    for piece in word.split("_"):
        if piece:
            parts.extend(_parts(piece))
    single = len(parts) == 1 and (parts[0] == word or fold(parts[0]) == whole)
    if STEM and single and terms:
        stem = porter(whole)
        if stem != whole and len(stem) > 1:  # `ies` stems to `i`: one letter is no term
            terms.append(stem)
    seen = {whole}
    if parts and not single:
        for part in parts:
            part = fold(part)
            if STEM:
                part = porter(part)
            if len(part) > 1 and part not in seen and part not in STOPWORDS:
                seen.add(part)
                terms.append(part)
    if _cjk(word):
        terms = [t for t in terms if len(t) <= CJK_WORD or not _CJK.search(t)]
        pieces = 0
        for run in _CJK.findall(whole):
            for i in range(min(len(run) - 1, CJK_PIECES - pieces)):
                piece = run[i:i + 2]
                if piece not in seen:
                    seen.add(piece)
                    terms.append(piece)
            pieces += len(run) - 1
            if pieces >= CJK_PIECES:
                break
    return _MEMO.put(key, tuple(terms))


def identifier_parts(word: str) -> tuple[str, ...]:
    """The part terms of a compound identifier (`ConnectionPool` -> connect, pool), () for a word
    of fewer than two parts: split_identifier gives the whole word, then its parts."""
    terms = split_identifier(word)
    if len(terms) < 3 or _cjk(word):  # one part, perhaps with its stem; a CJK run's pieces are no parts
        return ()
    return terms[1:] if terms[0] == fold(normal(word)) else terms


def word_unit(word: str) -> str:
    """The term a one-part word is compared by with identifiers' parts: its stem, as split_identifier
    stems a part ('' for a stop word or a single letter)."""
    terms = split_identifier(word)
    if _cjk(word):
        return fold(normal(word)) if terms else ""
    return terms[-1] if terms else ""


def words_of(text: str) -> list[str]:
    """The words of a text, in order, as term_counts reads them."""
    return _WORD.findall(text) if text.isascii() else _UNICODE_WORD.findall(normal(text))


def term_counts(text: str, words: list[str] | None = None) -> Counter:
    """Term frequencies of a text, for indexing (`words`: its words_of, when the caller has them)."""
    if words is None:
        words = words_of(text)
    memo = _MEMO
    # A membership test per distinct word (set.difference would walk the whole memo: a dict subclass
    # gets no fast path there).
    distinct = set(words)
    new = [w for w in distinct if w not in memo]
    if new:
        memo.make_room(len(new))  # now, so that filling the memo below cannot evict any of these words
        new = [w for w in distinct if w not in memo]
    for word in new:
        split_identifier(word)
    try:
        # Every word is memoised: expand and count them all in C (no Python step per word).
        return Counter(chain.from_iterable(map(memo.__getitem__, words)))
    except KeyError:  # the memo overflowed after all (a text with more distinct words than it holds)
        counts: Counter = Counter()
        for word, n in Counter(words).items():
            for term in split_identifier(word):
                counts[term] += n
        return counts


# A run of base64's (or base64url's) alphabet long enough to be data, not a name; `=` only as its
# padding: `SIGNING_SECRET=<base64>` in an .env file keeps its name (blanked with the value, no
# search found the setting).
_DATA_RUN = re.compile(r"[A-Za-z0-9+/_-]{200,}={0,2}")


def without_data(text: str) -> str:
    """text with each run of 200 or more characters of base64's alphabet that reads as data (parts
    of under three letters on average: an embedded image, a key, a packed blob) blanked, the
    same length: split into words, a 600 KB base64 string was 290,000 terms, and twelve such
    files a 46 s build of 1.5 GB (and a query after an edit, 40 s). A name is never that long."""
    return _DATA_RUN.sub(_blank_data, text) if len(text) >= 200 else text


def _blank_data(m: re.Match) -> str:
    run = m.group()
    return " " * len(run) if 3 * len(_PART.findall(run)) > len(run) else run


def tokenize(text: str) -> list[str]:
    """Terms of a text in order (a word's whole form before its parts), for queries."""
    out: list[str] = []
    for word in words_of(text):
        out.extend(split_identifier(word))
    return out


_OPERATOR = re.compile(r"\boperator\s*(\(\s*\)|[^\w\s(][^\w(]*)$")


def operator_name(text: str) -> str | None:
    """`operator==` for C++'s `operator==`, C#'s `operator ==`, `Value::operator[]`: an operator
    named by its symbol, spaces dropped; None for anything else (a conversion, `operator bool`)."""
    m = _OPERATOR.search(text)
    return "operator" + "".join(m.group(1).split()) if m else None
