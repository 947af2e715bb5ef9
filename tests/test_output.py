"""Text output for people and the token budget (retrieval/output.py)."""
from __future__ import annotations

import io
import shutil
import subprocess

import pytest

from retrieval.output import counted, estimate_tokens, text_lines, use_colour, within_budget
from retrieval.records import SearchHit, Snippet


def hit(path, start, end, rank=1, confidence="high"):
    return SearchHit(docid=f"{path}:{start}-{end}", source_path=path, start_line=start, end_line=end,
                     rank=rank, score=1.0, confidence=confidence)


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_count_names_its_noun_in_the_plural_and_separates_its_thousands():
    assert [counted(n, "file") for n in (0, 1, 2, 4547294)] == ["0 files", "1 file", "2 files", "4,547,294 files"]


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_colour(Terminal()) is True
    assert use_colour(io.StringIO()) is False
    monkeypatch.setenv("NO_COLOR", "1")
    assert use_colour(Terminal()) is False


def test_force_color_colours_a_pipe_but_no_color_still_wins(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert use_colour(io.StringIO()) is True
    monkeypatch.setenv("TERM", "dumb")
    assert use_colour(io.StringIO()) is True  # asked for in so many words
    monkeypatch.setenv("NO_COLOR", "1")
    assert use_colour(Terminal()) is False
    monkeypatch.setenv("FORCE_COLOR", "")  # set but empty: not asked
    monkeypatch.delenv("NO_COLOR")
    assert use_colour(io.StringIO()) is False


def test_no_colour_on_a_terminal_that_says_it_has_none(monkeypatch):
    """TERM=dumb (an editor's shell buffer) showed the escape sequences as text."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "dumb")
    assert use_colour(Terminal()) is False
    monkeypatch.setenv("TERM", "xterm-256color")
    assert use_colour(Terminal()) is True


def test_an_expanded_snippet_is_numbered_and_its_header_names_the_lines_shown():
    h = hit("fastapi/routing.py", 1005, 1006)
    snippets = {h.docid: Snippet(1004, 1007, "\nclass APIRouter:\n    pass\n\n")}
    assert list(text_lines([h], snippets)) == [
        "fastapi/routing.py:1005-1006  high  (lines 1004-1007 shown)",
        "  1004│ ",
        "  1005│ class APIRouter:",
        "  1006│     pass",
        "  1007│ ",
    ]


def test_a_snippet_expanded_only_after_its_hit_names_the_lines_shown_too():
    """A hit on the first lines of a file gets no context before it: the lines after it still
    make the snippet other than the hit's span."""
    h = hit("a.py", 1, 1)
    snippets = {h.docid: Snippet(1, 3, "import os\nimport sys\n\n")}
    assert list(text_lines([h], snippets))[0] == "a.py:1-1  high  (lines 1-3 shown)"
    assert list(text_lines([h], {h.docid: Snippet(1, 1, "import os\n")}))[0] == "a.py:1-1  high"


def test_colour_marks_the_path_the_numbers_and_the_confidence_and_nothing_else():
    h = hit("a.py", 1, 1)
    plain = list(text_lines([h], {h.docid: Snippet(1, 1, "x = 1\n")}))
    coloured = list(text_lines([h], {h.docid: Snippet(1, 1, "x = 1\n")}, colour=True))
    assert coloured != plain and all("\x1b[" in line for line in coloured)
    strip = [__import__("re").sub(r"\x1b\[[0-9;]*m", "", line) for line in coloured]
    assert strip == plain


def test_a_cut_or_stale_snippet_says_so_in_its_header():
    h = hit("a.py", 1, 9)
    snippets = {h.docid: Snippet(1, 2, "a\nb\n", stale=True)}
    (header, *_) = text_lines([h], snippets, truncated={h.docid})
    assert header == "a.py:1-9  high  (cut to fit --max-tokens; file changed since indexing)"


def test_a_hit_that_knows_its_scope_names_it_after_the_confidence_and_on_one_line():
    from dataclasses import replace

    method = replace(hit("fastapi/routing.py", 1005, 1040), context="APIRouter.add_api_route", kind="method")
    section = replace(hit("docs/tutorial.md", 1, 9, confidence="low"), context="Tutorial > Security\n\x1b[2J\tOAuth2",
                      kind="section")
    config = replace(hit("setup.cfg", 1, 5, confidence=""), context="setup.cfg", kind="config")  # no keys
    # lexical+ctx's contexts are prose about a line chunk (kind: the file's), not a scope path
    prose = replace(hit("src/auth.py", 1, 40), context="uses requests.Session, oauthlib; refreshes tokens", kind="code")
    assert list(text_lines([method, section, config, prose], None)) == [
        "fastapi/routing.py:1005-1040  high  APIRouter.add_api_route",
        "docs/tutorial.md:1-9  low  Tutorial > Security\\n\\x1b[2J OAuth2",  # escaped, never obeyed
        "setup.cfg:1-5",  # the path again says nothing
        "src/auth.py:1-40  high",
    ]


def test_without_snippets_hits_are_one_line_each_with_no_blank_lines():
    hits = [hit("a.py", 1, 2), hit("b.py", 3, 4, rank=2, confidence="low")]
    assert list(text_lines(hits, None)) == ["a.py:1-2  high", "b.py:3-4  low"]


def test_the_budget_keeps_whole_hits_in_order_while_they_fit():
    hits = [hit(f"{n}.py", 1, 1, rank=n) for n in range(1, 4)]
    snippets = {h.docid: Snippet(1, 1, "x" * 400) for h in hits}  # 124 tokens each
    kept, cut = within_budget(hits, dict(snippets), 250)
    assert kept == hits[:2] and cut == set()
    assert estimate_tokens("x" * 400) == 124


def test_hits_that_exactly_fill_the_budget_are_all_kept_whole():
    hits = [hit(f"{n}.py", 1, 1, rank=n) for n in range(1, 4)]
    snippets = {h.docid: Snippet(1, 1, "x" * 400) for h in hits}  # 124 tokens each
    kept, cut = within_budget(hits, dict(snippets), 248)
    assert kept == hits[:2] and cut == set()


def test_the_first_hit_over_budget_is_cut_line_by_line_to_fit():
    h = hit("a.py", 10, 19)
    text = "".join(f"line {n:03d}\n" for n in range(10, 20))  # 9 characters a line
    snippets = {h.docid: Snippet(10, 19, text)}
    kept, cut = within_budget([h, hit("b.py", 1, 1, rank=2)], snippets, 24 + 5)  # room for 20 characters
    assert kept == [h] and cut == {h.docid}
    assert snippets[h.docid] == Snippet(10, 11, "line 010\nline 011\n")


def test_the_first_hit_that_does_not_fit_whole_is_cut_to_the_room_left_and_ends_the_answer():
    """One long hit at rank 2 ended the answer with most of the budget unspent."""
    first, long, small = hit("a.py", 1, 1), hit("b.py", 10, 19, rank=2), hit("c.py", 1, 1, rank=3)
    snippets = {first.docid: Snippet(1, 1, "x = 1\n"),  # 24 + 1 tokens
                long.docid: Snippet(10, 19, "".join(f"line {n:03d}\n" for n in range(10, 20))),
                small.docid: Snippet(1, 1, "y = 2\n")}
    kept, cut = within_budget([first, long, small], snippets, 25 + 24 + 5)  # then room for 20 characters
    assert kept == [first, long] and cut == {long.docid}
    assert snippets[long.docid] == Snippet(10, 11, "line 010\nline 011\n")


def test_an_expanded_snippet_cut_to_fit_starts_at_the_hit_not_at_its_context():
    """--expand puts context lines before the hit; a cut that kept the first lines showed only them."""
    h = hit("a.py", 46, 50)
    text = "".join(f"line {n:03d}\n" for n in range(6, 91))  # lines 6-90: the hit with 40 lines around it
    snippets = {h.docid: Snippet(6, 90, text)}
    kept, cut = within_budget([h], snippets, 24 + 5)  # room for 20 characters: two lines
    assert snippets[h.docid] == Snippet(46, 47, "line 046\nline 047\n")


def test_a_budget_with_no_room_for_a_character_shows_nothing_and_claims_no_lines():
    h = hit("a.py", 10, 19)
    snippets = {h.docid: Snippet(10, 19, "line 010\n")}
    kept, cut = within_budget([h], snippets, 1)
    assert kept == [h] and cut == {h.docid}
    assert snippets[h.docid] == Snippet(None, None, "")  # as for a file with nothing left to show


def test_a_cut_snippet_counts_lines_as_the_file_does_even_with_a_form_feed():
    h = hit("a.c", 1, 3)
    snippets = {h.docid: Snippet(1, 3, "a\x0cb\nline two\nline three\n")}
    within_budget([h], snippets, 24 + 5)  # room for 20 characters: two lines
    assert snippets[h.docid] == Snippet(1, 2, "a\x0cb\nline two\n")


def test_snippet_lines_are_numbered_as_the_file_numbers_them():
    h = hit("a.c", 5, 7)
    snippets = {h.docid: Snippet(5, 7, "int a;\x0c\r\nint b; /* \r */\nint c;\n")}
    assert list(text_lines([h], snippets)) == [
        "a.c:5-7  high", "     5│ int a;\\x0c", "     6│ int b; /* \\r */", "     7│ int c;"]  # shown as escapes


def test_a_consolidated_hit_names_the_retrievers_that_found_it_after_the_lead_s_level():
    from dataclasses import replace

    merged = replace(hit("a.py", 1, 9, confidence=""), extra={"provenance": ["hybrid", "lexical"], "agreement": 2})
    graded = replace(hit("c.py", 1, 2, rank=3), extra={"provenance": ["lexical"], "agreement": 1})
    assert list(text_lines([merged, hit("b.py", 3, 4, rank=2), graded], None)) == [
        "a.py:1-9  found by hybrid, lexical", "b.py:3-4  high", "c.py:1-2  high  found by lexical"]


def test_a_path_with_control_characters_is_escaped_so_each_hit_stays_one_line():
    hits = [hit("new\nline.py", 1, 2), hit("tab\there ünï.py", 3, 4, rank=2)]
    assert list(text_lines(hits, None)) == ["new\\nline.py:1-2  high", "tab\\there ünï.py:3-4  high"]


def test_a_backslash_in_a_path_is_escaped_so_no_two_paths_print_alike():
    hits = [hit("new\nline.py", 1, 2), hit("new\\nline.py", 3, 4, rank=2)]  # a newline; a backslash and n
    first, second = text_lines(hits, None)
    assert first.split(":")[0] != second.split(":")[0]
    assert second == "new\\\\nline.py:3-4  high"


@pytest.mark.parametrize("name", ["plain.py", "with space's.py", "new\nline\ttab\r.py", "esc\x1b[2J.py",
                                  "back\\slash\u202e.py", "bad\udcffbyte.py"])
def test_a_path_quoted_for_a_suggested_command_is_one_line_and_means_that_path_to_bash(name):
    from retrieval.output import shell_word

    word = shell_word(name)
    assert word.isprintable() and "\n" not in word
    if shutil.which("bash"):
        said = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, check=True).stdout
        assert said == name.encode("utf-8", "surrogateescape")


def test_control_characters_in_a_snippet_are_shown_as_escapes_the_same_on_a_pipe_and_a_terminal():
    text = 's = "\x1b[2J\x1b[31mRED"\nx = 1\rcarriage\n\tindented\u202eevil\n'
    snippet = Snippet(1, 3, text)
    shown = list(text_lines([hit("a.py", 1, 3)], {"a.py:1-3": snippet}))
    assert shown[1:] == ['     1│ s = "\\x1b[2J\\x1b[31mRED"', "     2│ x = 1\\rcarriage",
                         "     3│ \tindented\\u202eevil"]


def test_a_hit_cut_to_fit_shows_its_lines_holding_the_query_s_words():
    """A long function opens with its signature and docstring; the lines that matched came later and
    the cut showed only the opening."""
    h = hit("a.py", 10, 29)
    text = "".join("quokka!!\n" if n in (25, 26) else f"line {n:03d}\n" for n in range(10, 30))  # 9 characters a line
    snippets = {h.docid: Snippet(10, 29, text)}
    kept, cut = within_budget([h], snippets, 24 + 5, focus=frozenset({"quokka"}))  # room for 20 characters: two lines
    assert kept == [h] and cut == {h.docid}
    assert snippets[h.docid] == Snippet(25, 26, "quokka!!\n" * 2)
    unfocused = {h.docid: Snippet(10, 29, text)}
    within_budget([h], unfocused, 24 + 5)
    assert unfocused[h.docid] == Snippet(10, 11, "line 010\nline 011\n")
    # words no line holds, or held by the first lines already: from the hit's first line
    for words in ({"platypus"}, {"line"}):
        shown = {h.docid: Snippet(10, 29, text)}
        within_budget([h], shown, 24 + 5, focus=frozenset(words))
        assert shown[h.docid] == Snippet(10, 11, "line 010\nline 011\n")


def test_a_focused_cut_of_longer_lines_shows_fewer_of_them():
    h = hit("a.py", 10, 29)
    text = "".join("quokka found here\n" if n in (25, 26) else f"line {n:03d}\n" for n in range(10, 30))
    snippets = {h.docid: Snippet(10, 29, text)}
    within_budget([h], snippets, 24 + 5, focus=frozenset({"quokka"}))  # 20 characters: one such line
    assert snippets[h.docid] == Snippet(25, 25, "quokka found here\n")


def test_a_path_byte_that_is_not_utf8_is_shown_as_that_byte():
    """`--root $'/tmp/\xff'` was said as `/tmp/\udcff`, Python's surrogate, in the error line."""
    from retrieval.output import shown_path

    assert shown_path("/tmp/\udcff") == "/tmp/\\xff"
    assert shown_path("/tmp/\\xff") == "/tmp/\\\\xff"  # a name holding a backslash and `xff` prints apart
    assert shown_path("caf\u00e9") == "caf\u00e9"  # printable: as it is
