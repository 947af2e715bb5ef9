"""Property tests over arbitrary input: the tokenizer, the chunker, the reader, ignore patterns, search.

Whatever the text, nothing raises; every chunk is a verbatim run of the file's own lines with a span
inside the file; every hit points at a chunk that exists.
"""
from __future__ import annotations

import re
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval import ignore
from retrieval.chunking import ChunkingPolicy, chunk_lines
from retrieval.lexical.features import chunk_terms
from retrieval.read import decode
from retrieval.records import Document
from retrieval.retrievers.lexical import LexicalRetriever
from retrieval.text import fold, normal, split_identifier, term_counts, tokenize

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Characters that stress line handling and word splitting: every code point str.splitlines() treats
# as a line break (the chunker must split on \n only), case-changing letters, digits, underscores,
# combining marks, scripts without case, surrogates, NUL and other controls.
SPECIAL = st.sampled_from(
    list("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\t _-.:#/\\'\"()[]{}$\x00\x7f")
    + ["\r\n", "İ", "ß", "ǅ", "Σς", "é", "e\u0301", "日本", "١٢", "ﬁ", "\ud800", "\udcff"]
)
WORDS = st.sampled_from(["getHTTPResponse", "snake_case", "XMLParser2", "__init__", "déjà_vu", "ID", "a", "I",
                         "the", "running", "ÉCOLE", "x1Y2", "_", "__", "9lives", "camelCaseWord"])
TEXT = st.lists(st.one_of(SPECIAL, WORDS, st.text(max_size=8)), max_size=120).map("".join)
NO_SURROGATES = TEXT.map(lambda s: s.encode("utf-8", "replace").decode("utf-8"))


def file_lines(text: str) -> list[str]:
    """Lines as an editor numbers them (split on \\n only), endings kept; independent of the package."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


# -- tokenizer ------------------------------------------------------------------------------------


@FUZZ
@given(TEXT)
def test_tokenizing_any_text_gives_word_terms_and_agrees_with_term_counts(text):
    terms = tokenize(text)
    assert Counter(terms) == term_counts(text)
    words = set(re.findall(r"\w+", fold(normal(text))))  # read as the tokenizer reads them: NFKC, case folded
    for term in terms:
        assert len(term) > 1
        assert term == fold(term)
        assert not any(c.isspace() for c in term)
        # A term is a word of the text, a piece of one, or (stemmed) a shorter form of either.
        assert any(term[:2] in w for w in words) or not term.isascii(), (term, words)


@FUZZ
@given(st.text(min_size=1, max_size=40))
def test_splitting_any_word_is_deterministic_and_gives_distinct_terms_of_two_or_more_characters(word):
    terms = split_identifier(word)
    assert split_identifier(word) == terms
    assert len(set(terms)) == len(terms)
    assert all(len(t) > 1 for t in terms)


@FUZZ
@given(NO_SURROGATES, st.text(max_size=30))
def test_chunk_terms_never_raise_and_feature_terms_never_collide_with_words(text, path):
    terms = chunk_terms(path or "f.py", text, "", 1)
    words = set(tokenize(text))
    for term in terms:
        assert term
        if term[0] in ("\u00a7", "\u00b6"):  # definition and pair terms
            assert term not in words


# -- chunker --------------------------------------------------------------------------------------


@FUZZ
@given(
    text=TEXT,
    kind=st.sampled_from(["code", "docs", "config", ""]),
    budget=st.integers(min_value=1, max_value=300),
    max_lines=st.integers(min_value=1, max_value=60),
)
def test_chunks_of_any_text_are_verbatim_lines_inside_the_file_in_order(text, kind, budget, max_lines):
    policy = ChunkingPolicy(code=budget, prose=budget, config=budget, default=budget, max_lines=max_lines)
    chunks = chunk_lines(text, "any/file.txt", kind=kind, policy=policy)
    lines = file_lines(text)
    previous_end = 0
    for chunk in chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines)
        assert chunk.text == "".join(lines[chunk.start_line - 1 : chunk.end_line])
        assert chunk.start_line > previous_end
        previous_end = chunk.end_line
        assert chunk.path == "any/file.txt"


@FUZZ
@given(st.binary(max_size=600))
def test_any_bytes_are_either_skipped_with_a_reason_or_chunked_verbatim(data):
    text, reason = decode(data)
    if text is None:
        assert reason in ("binary", "invalid-utf8")
        return
    assert reason == ""
    encoding = "utf-16" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-8"  # UTF-16 only behind its BOM
    try:
        raw = data.decode(encoding).removeprefix("\ufeff")
    except UnicodeDecodeError:  # mostly ASCII, 8-bit: every ASCII byte is its character, so every line is
        raw = None
        ascii_text = bytes(b for b in data if b < 0x80).decode("ascii")
        ascii_read = "".join(ch for ch in text if ch < "\x80")
        assert ascii_read == (ascii_text.replace("\r", "\n") if "\r" in ascii_text and "\n" not in ascii_text
                              else ascii_text)
    # Verbatim, but for lines that all end in a lone CR (classic Mac OS): read as ending in LF.
    if raw is not None:
        assert text == (raw.replace("\r", "\n") if "\r" in raw and "\n" not in raw else raw)
    lines = file_lines(text)
    for chunk in chunk_lines(text, "f.py", kind="code", policy=ChunkingPolicy(code=40, max_lines=5)):
        assert chunk.text == "".join(lines[chunk.start_line - 1 : chunk.end_line])


# -- search over fuzzed documents -----------------------------------------------------------------


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=st.lists(NO_SURROGATES, min_size=1, max_size=4), query=TEXT)
def test_searching_fuzzed_files_with_a_fuzzed_query_returns_hits_inside_real_chunks(files, query):
    documents = []
    spans = {}
    for i, text in enumerate(files):
        path = f"src/f{i}.py"
        for chunk in chunk_lines(text, path, kind="code", policy=ChunkingPolicy(code=60, max_lines=4)):
            documents.append(Document.from_chunk(chunk))
            spans[chunk.docid] = (path, chunk.start_line, chunk.end_line)
    retriever = LexicalRetriever()
    retriever.index(documents)
    hits = retriever.search_detailed(query, top_k=10)
    assert len(hits) <= 10
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    for hit in hits:
        assert spans[hit.docid] == (hit.source_path, hit.start_line, hit.end_line)
        assert hit.score > 0
    # Diversified order: each file's best chunk, best first; a file's n-th further chunk competes at
    # its score discounted to the n (RankingConfig.repeat_discount), so it may come before a weaker
    # file's best, and every hit carries the score it was placed by.
    seen: set = set()
    heads, rest = [], []
    for hit in hits:
        (rest if hit.source_path in seen else heads).append(hit.score)
        seen.add(hit.source_path)
    assert heads == sorted(heads, reverse=True) and rest == sorted(rest, reverse=True)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


# -- ignore patterns ------------------------------------------------------------------------------

PATTERN = st.lists(st.sampled_from(list("*?[]!^-/\\#. az09") + ["**", "**/", "[z-a]", "[]", "[!]", "\\ "]),
                   max_size=12).map("".join)
PATH = st.lists(st.sampled_from(["a", "b.py", "z", "-", "[", "]", "**", " ", "é"]), min_size=1, max_size=4).map(
    "/".join
)


@pytest.mark.filterwarnings("error")  # a FutureWarning from the regex engine would reach the user
@FUZZ
@given(st.lists(st.one_of(PATTERN, st.text(max_size=12)), max_size=6), PATH, st.booleans())
def test_any_ignore_file_compiles_and_matches_without_error(lines, path, is_dir):
    rules = ignore.parse_ignore_text("\n".join(lines))
    stack = ignore.IgnoreStack().push("", rules)
    assert stack.ignored(path, is_dir) in (True, False)
    ruleset = ignore.compile_globs(lines)
    assert ignore.selects(ruleset, path) in (True, False)
    select = ignore.selector(ruleset)  # remembering directories' verdicts, as a filtered query does
    assert [select(p) for p in (path, path, path + "/x", "a/" + path)] == [
        ignore.selects(ruleset, p) for p in (path, path, path + "/x", "a/" + path)]
