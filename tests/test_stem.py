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
