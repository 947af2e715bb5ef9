"""The Porter stemmer reproduces the algorithm's published examples."""
from __future__ import annotations

import pytest

from retrieval.stem import porter


@pytest.mark.parametrize(
    "word, stem",
    [
        ("caresses", "caress"), ("ponies", "poni"), ("cats", "cat"), ("feed", "feed"), ("agreed", "agre"),
        ("plastered", "plaster"), ("motoring", "motor"), ("sing", "sing"), ("conflated", "conflat"),
        ("hopping", "hop"), ("filing", "file"), ("happy", "happi"), ("relational", "relat"),
        ("conditional", "condit"), ("generalization", "gener"), ("electrical", "electr"),
        ("adjustment", "adjust"), ("hopeful", "hope"), ("goodness", "good"), ("effective", "effect"),
        ("controll", "control"), ("rate", "rate"), ("cease", "ceas"),
    ],
)
def test_words_reduce_to_their_porter_stems(word, stem):
    assert porter(word) == stem


def test_inflections_of_one_word_share_a_stem():
    assert porter("routes") == porter("routing") == porter("route")
    assert porter("registered") == porter("register") == porter("registering")


def test_short_non_alphabetic_and_non_ascii_words_are_kept():
    assert porter("is") == "is"
    assert porter("utf8") == "utf8"
    assert porter("größe") == "größe"


def test_y_is_a_consonant_first_or_after_a_vowel_and_a_vowel_after_a_consonant():
    assert porter("yelling") == "yell"  # the first y: a consonant, so `ell` holds the vowel
    assert porter("toys") == "toi"      # after a vowel: a consonant (m > 0 lets y -> i)
    assert porter("syzygy") == "syzygi"  # after a consonant: a vowel


def test_a_word_of_thousands_of_y_s_stems_without_exhausting_the_stack():
    """Each y's role depends on the letter before it: computed by recursion, a line of filler y's in
    a source file raised RecursionError and failed the whole index and every query."""
    # Step 1c: a final y after a stem holding a vowel (here: a y after a consonant y) becomes i.
    assert porter("y" * 5000) == "y" * 4999 + "i"
    assert porter("a" + "y" * 5001 + "ing") == "a" + "y" * 4999 + "i"  # -ing, a double consonant, then 1c
