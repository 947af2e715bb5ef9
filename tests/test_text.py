"""The code-aware tokenizer: whole identifiers plus their parts, lower-cased, without stopwords."""
from __future__ import annotations

from collections import Counter

import pytest

from retrieval import text
from retrieval.memo import Memo
from retrieval.text import STOPWORDS, split_identifier, term_counts, tokenize


@pytest.fixture
def unstemmed(monkeypatch):
    """The splitting rules on their own, with Porter stemming switched off (RETRIEVAL_STEM=0)."""
    monkeypatch.setattr(text, "STEM", False)
    monkeypatch.setattr(text, "_MEMO", Memo(10_000))


@pytest.mark.parametrize(
    "word, terms",
    [
        ("getHTTPResponse", ["gethttpresponse", "get", "http", "response"]),
        ("HTTPServer", ["httpserver", "http", "server"]),
        ("IOError", ["ioerror", "io", "error"]),
        ("parseConfigFile", ["parseconfigfile", "parse", "config", "file"]),
        ("snake_case_name", ["snake_case_name", "snake", "case", "name"]),
        ("MAX_RETRIES", ["max_retries", "max", "retries"]),
        ("foo__bar", ["foo__bar", "foo", "bar"]),
        ("base64Encode", ["base64encode", "base", "64", "encode"]),
        ("sha256", ["sha256", "sha", "256"]),
        ("v2_api", ["v2_api", "api"]),
    ],
)
def test_identifiers_are_kept_whole_and_split_on_case_underscore_acronym_and_digit_boundaries(unstemmed, word, terms):
    assert tokenize(word) == terms


def test_everything_is_lower_cased(unstemmed):
    assert tokenize("CONSTANT Value MixedCase") == ["constant", "value", "mixedcase", "mixed", "case"]


def test_stopwords_and_single_characters_are_dropped(unstemmed):
    assert tokenize("how is the value of x in a loop") == ["value", "loop"]
    assert "the" in STOPWORDS and "value" not in STOPWORDS
    # A stopword inside an identifier is dropped as a part, but the whole identifier stays.
    assert tokenize("is_the_thing") == ["is_the_thing", "thing"]


def test_punctuation_separates_words(unstemmed):
    assert tokenize("os.path.join(a, b) -> str") == ["os", "path", "join", "str"]


def test_split_identifier_returns_a_tuple_with_the_whole_word_first(unstemmed):
    assert split_identifier("readFile") == ("readfile", "read", "file")


def test_term_counts_counts_every_term_of_every_occurrence(unstemmed):
    assert term_counts("readFile(path); readFile(other)") == Counter(
        {"readfile": 2, "read": 2, "file": 2, "path": 1, "other": 1}
    )


def test_tokenize_and_term_counts_agree(unstemmed):
    sample = "def getHTTPResponse(url): return fetch_url(url, retries=3)"
    assert Counter(tokenize(sample)) == term_counts(sample)


def test_leading_underscores_do_not_hide_the_name_inside(unstemmed):
    assert "init" in tokenize("def __init__(self):")
    assert "private" in tokenize("_private = 1")


# -- with stemming (the default) ------------------------------------------------------------------


def test_inflected_forms_share_a_stemmed_term():
    assert set(tokenize("parsing")) & set(tokenize("parse"))
    assert set(tokenize("retries")) & set(tokenize("retry"))
    assert set(tokenize("response")) & set(tokenize("getHTTPResponse"))


def test_stemming_keeps_the_whole_identifier_and_the_unsplit_parts():
    terms = tokenize("getHTTPResponse")
    assert terms[0] == "gethttpresponse"
    assert "get" in terms and "http" in terms


def test_a_compound_identifier_s_parts_are_its_units_and_a_plain_word_is_its_own_stem():
    assert text.identifier_parts("ConnectionPool") == ("connect", "pool")
    assert text.identifier_parts("conn_pool_size") == ("conn", "pool", "size")
    assert text.identifier_parts("connection") == ()  # one part, whatever its stem
    assert text.identifier_parts("v2_api") == ()  # one part left of two characters or more
    assert text.word_unit("connections") == "connect"  # compared with the parts above
    assert text.word_unit("the") == ""


def test_stemming_is_off_only_when_the_environment_says_so():
    import os
    import subprocess
    import sys

    for value, on in (("true", True), ("1", True), ("yes", True), ("0", False), ("off", False), ("false", False)):
        out = subprocess.run([sys.executable, "-c", "import retrieval.text as t; print(t.STEM)"], capture_output=True,
                             text=True, env={**os.environ, "RETRIEVAL_STEM": value}).stdout.strip()
        assert out == str(on), value


def test_a_run_of_base64_is_data_not_words_and_a_long_name_is_still_a_name():
    """A 600 KB base64 string split into 290,000 terms: twelve such files were a 46 s build of 1.5 GB."""
    import base64
    import random

    from retrieval.lexical.features import chunk_terms
    from retrieval.text import without_data

    blob = base64.b64encode(random.Random(1).randbytes(30000)).decode()
    source = f"export const LOGO_PNG = 'data:image/png;base64,{blob}';\nexport function drawLogo() {{}}\n"
    assert without_data(source).split() == ["export", "const", "LOGO_PNG", "=", "'data:image/png;base64,", "';",
                                            "export", "function", "drawLogo()", "{}"]
    terms = chunk_terms("logo.js", source, language="javascript")
    assert len(terms) < 40 and "drawlogo" in terms
    # A setting's name joined to its value by `=` is no part of the value.
    for line in (f"STRIPE_WEBHOOK_SIGNING_SECRET={blob}\n", f"payment.gateway.encryptionKey={blob}\n"):
        assert without_data(line).split() == [line.split("=")[0] + "="]
    # Names and paths as long are kept: parts of three letters or more on average.
    name = "_".join(["configuration", "dispatcher", "initializer"] * 8)
    path = "/".join(["src", "components", "navigation", "header"] * 12)
    assert without_data(f"x = {name}; y = '{path}'") == f"x = {name}; y = '{path}'"


# -- words beyond ASCII --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "word, terms",
    [
        # A word of letters is one word, whatever its script: `größe` was `gr` + `öße`, and any word
        # beginning `gr` (`grünkohl`) matched it, rated high.
        ("größe", ["grösse"]),
        ("präfix_prüfen", ["präfix_prüfen", "präfix", "prüfen"]),
        ("berechneGröße", ["berechnegrösse", "berechne", "grösse"]),
        # Case changes split in any script, as in ASCII.
        ("РассчитатьСтоимость", ["рассчитатьстоимость", "рассчитать", "стоимость"]),
        ("ΥπολογισμόςΤιμής", ["υπολογισμόστιμήσ", "υπολογισμόσ", "τιμήσ"]),  # (a final sigma folds to σ)
        # Full case folding: `ß` is `ss`, Turkish `İ` and `ı` are `i`.
        ("Straße", ["strasse"]),
        ("İzmir_yükle", ["izmir_yükle", "izmir", "yükle"]),
        ("diyarbakır", ["diyarbakir"]),
        # Hebrew points and Arabic harakat are left out, as most text leaves them out.
        ("שָׁלוֹם", ["שלום"]),
        ("كَتَبَ", ["كتب"]),
        # NFKC: full-width letters are their ASCII twins.
        ("ｆｕｌｌ＿ｗｉｄｔｈ", ["full_width", "full", "width"]),
    ],
)
def test_words_in_any_script_are_split_at_case_changes_and_case_folded(unstemmed, word, terms):
    assert tokenize(word) == terms


def test_a_word_typed_composed_matches_it_written_decomposed(unstemmed):
    """macOS writes names decomposed (NFD) and a paste may keep them so: `café` split at its
    combining accent was `cafe`, and the composed query found nothing."""
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    assert tokenize(composed) == tokenize(decomposed) == ["café"]
    assert term_counts(f"x = '{decomposed}'") == term_counts(f"x = '{composed}'")


def test_a_cjk_run_is_also_its_two_character_pieces(unstemmed):
    """Chinese, Japanese and Korean are written without spaces: the run between punctuation is a
    sentence, so `总价` must find it by its pieces (as Lucene's CJK analyzer indexes)."""
    sentence = "计算订单总价格"
    assert tokenize(sentence) == [sentence, "计算", "算订", "订单", "单总", "总价", "价格"]
    assert set(tokenize("总价")) <= set(term_counts(f"# {sentence}"))
    assert {"비밀", "번호"} <= set(tokenize("비밀번호를"))
    # The pieces are no parts of a compound name: no pair terms, and a word's unit is the word.
    assert text.identifier_parts(sentence) == () and text.word_unit(sentence) == sentence
