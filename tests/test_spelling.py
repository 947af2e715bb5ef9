"""Names spelt like a misspelt identifier: what a note's "did you mean" offers."""
from __future__ import annotations

from retrieval.spelling import distance, spelt_like


def test_an_edit_is_a_letter_added_dropped_changed_or_two_neighbours_swapped():
    assert distance("receive", "receive", 2) == 0
    assert distance("recieve", "receive", 2) == 1  # swapped
    assert distance("expiregenriccommand", "expiregenericcommand", 2) == 1  # dropped
    assert distance("serialiser", "serializer", 2) == 1  # changed
    assert distance("abcdef", "ghijkl", 2) == 3  # past the bound: bound + 1, not the full distance


def test_a_misspelt_name_finds_the_names_a_letter_or_two_off_nearest_first():
    names = ["expireGenericCommand", "expireCommand", "ttlGenericCommand", "expireGenericCommands", "expireGenericCommandsXY"]
    assert spelt_like("expireGenricCommand", names) == ["expireGenericCommand", "expireGenericCommands"]
    assert spelt_like("splitlnk", ["splitLink", "split", "merge"]) == ["splitLink"]


def test_naming_style_and_letter_case_are_no_edit_and_the_querys_style_is_offered():
    assert spelt_like("MessagePackSerialiser", ["MessagePackSerializer"]) == ["MessagePackSerializer"]
    # One name in two styles is offered once, in the style the query wrote.
    assert spelt_like("has_mnay", ["HasMany", "has_many"]) == ["has_many"]
    assert spelt_like("HasMnay", ["HasMany", "has_many"]) == ["HasMany"]


def test_nothing_is_offered_for_a_name_held_in_another_style_or_too_short_to_tell():
    assert spelt_like("get_selection", ["getSelection", "set_selection"]) == []  # not misspelt
    assert spelt_like("fo", ["foo", "fog"]) == []  # a letter from too many names
    assert spelt_like("parser", ["parse", "parsed", "parses", "sparser"], limit=2) == ["parse", "parsed"]


def test_a_name_sharing_neither_end_letter_is_not_compared():
    # A misspelling keeps its first or its last letter: scanning 74,000 names stays fast.
    assert spelt_like("xcontext", ["context"]) == ["context"]  # the last letter agrees
    assert spelt_like("xcontexy", ["context"]) == []
