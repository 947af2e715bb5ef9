"""Heading chunks for Markdown and reStructuredText (standard library only)."""
from __future__ import annotations

from retrieval.chunking import ChunkingPolicy
from retrieval.chunking.markdown import chunk_headings, heading_rows
from retrieval.read import split_lines

from chunk_checks import assert_verbatim

SMALL = ChunkingPolicy(prose=60)

MARKDOWN = """\
Preamble before any heading.

# Guide { #guide }

Intro text.

## Install

```sh
# a comment in a fence, not a heading
pip install thing
```

Setext title
------------

Under a setext heading.

### Deep

Deep text.

# Appendix

The end.
"""


def test_sections_carry_their_heading_path_and_title():
    chunks = chunk_headings(MARKDOWN, "docs/guide.md", language="markdown", kind="docs", policy=SMALL)
    assert_verbatim(MARKDOWN, chunks)
    by_context = {c.context: c for c in chunks}
    assert "Guide > Install" in by_context
    assert by_context["Guide > Setext title > Deep"].symbol == "Deep"
    assert by_context["Appendix"].chunk_kind == "section"
    assert chunks[0].context == "" and chunks[0].chunk_kind == "document"  # the preamble
    assert not any("comment in a fence" in c.context for c in chunks)
    assert all(c.definitions == () for c in chunks)


def test_small_sections_merge_under_their_parent_up_to_the_budget():
    chunks = chunk_headings(MARKDOWN, "docs/guide.md", language="markdown", kind="docs")
    assert_verbatim(MARKDOWN, chunks)
    assert len(chunks) == 1  # it all fits the default budget


def test_a_chunk_of_merged_sections_names_the_headings_beside_its_label_with_their_lines():
    """sinatra's README chunk `Halting` holds `### Passing`: a question about passing control was
    told `Halting`. The headings a chunk holds beside its label are its members, with their lines,
    for the question's words to choose (retrieval.labels)."""
    text = ("# Sinatra\n\n## Helpers\n\n### Halting\n\nTo stop a request immediately, use halt.\n\n"
            "### Passing\n\nA route can punt processing to the next matching route using pass.\n")
    (chunk,) = chunk_headings(text, "README.md", language="markdown", kind="docs")
    assert chunk.context == "Sinatra"
    assert ("Passing", "Sinatra > Helpers > Passing", "section", 9, 11) in chunk.members
    assert ("Halting", "Sinatra > Helpers > Halting", "section", 5, 8) in chunk.members


def test_a_page_opening_with_an_anchor_is_its_first_heading_s_section():
    """click's docs open with a MyST target, `(shell-completion)=`, above `# Shell Completion`: the
    chunk was a `document` without a symbol, as a page's preamble is."""
    for marker in ("(shell-completion)=", '<a name="shell-completion"></a>', "<!-- generated -->"):
        text = f"{marker}\n\n# Shell Completion\n\nClick can complete.\n\n## Enabling\n\nRun this.\n"
        (chunk,) = chunk_headings(text, "docs/shell-completion.md", language="markdown", kind="docs")
        assert (chunk.context, chunk.symbol, chunk.chunk_kind) == ("Shell Completion", "Shell Completion", "section")
        assert [m[0] for m in chunk.members] == ["Enabling"]
    (lead, *_rest) = chunk_headings("Intro text here.\n\n# Title\n\nBody.\n", "docs/x.md", language="markdown",
                                    kind="docs")
    assert lead.chunk_kind == "document"  # prose before the first heading stays the page's preamble


def test_an_oversized_section_is_cut_by_lines_and_every_piece_keeps_its_context():
    text = "# Big\n\n" + "".join(f"line {i} of a long section with words\n\n" for i in range(200))
    chunks = chunk_headings(text, "big.md", language="markdown", kind="docs")
    assert_verbatim(text, chunks)
    assert len(chunks) > 3
    assert all(c.context == "Big" for c in chunks)
    assert all(c.scope == (1, len(split_lines(text))) for c in chunks)


RST = """\
=====
Title
=====

Intro.

Section one
-----------

Text one.

Sub
~~~

Text sub.

Section two
-----------

Text two.
"""


def test_restructuredtext_levels_follow_the_order_of_adornments():
    chunks = chunk_headings(RST, "docs/index.rst", language="rst", kind="docs", policy=ChunkingPolicy(prose=20))
    assert_verbatim(RST, chunks)
    contexts = [c.context for c in chunks]
    assert "Title > Section one > Sub" in contexts
    assert "Title > Section two" in contexts


def test_an_overlined_restructuredtext_title_starts_at_its_overline_and_outranks_the_same_underline():
    text = "=====\nTitle\n=====\n\nIntro.\n\nSection\n=======\n\nText.\n"
    chunks = chunk_headings(text, "docs/index.rst", language="rst", kind="docs", policy=ChunkingPolicy(prose=20))
    assert_verbatim(text, chunks)
    assert (chunks[0].start_line, chunks[0].context) == (1, "Title")
    assert "Title > Section" in {c.context for c in chunks}


def test_a_restructuredtext_title_underlined_one_character_short_is_still_a_title():
    # docutils warns of it but reads it as a title
    text = "Guide\n=====\n\nIntro.\n\nInstalling\n---------\n\nRun it.\n"
    chunks = chunk_headings(text, "docs/index.rst", language="rst", kind="docs", policy=ChunkingPolicy(prose=20))
    assert_verbatim(text, chunks)
    assert "Guide > Installing" in {c.context for c in chunks}


def test_windows_line_endings_give_the_same_sections_as_unix_ones():
    for text, name, language in ((MARKDOWN, "docs/guide.md", "markdown"), (RST, "docs/index.rst", "rst")):
        policy = ChunkingPolicy(prose=20)
        unix = chunk_headings(text, name, language=language, kind="docs", policy=policy)
        crlf = text.replace("\n", "\r\n")
        windows = chunk_headings(crlf, name, language=language, kind="docs", policy=policy)
        assert_verbatim(crlf, windows)
        # The same sections in the same order (the extra `\r`s may cut the budget elsewhere).
        assert _sections(windows) == _sections(unix) and len(_sections(unix)) >= 4


def _sections(chunks) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for c in chunks:
        if not out or out[-1] != (c.context, c.chunk_kind):
            out.append((c.context, c.chunk_kind))
    return out


def test_a_heading_over_one_long_line_is_not_a_chunk_of_its_own():
    """A paragraph never wrapped is one line longer than the budget: its heading stood alone as a
    chunk that says nothing. It heads its line instead."""
    paragraph = "The installer reads the configuration and " * 60
    text = f"# Guide\n\nIntro.\n\n## Install\n\n{paragraph}\n\n## Next\n\nMore.\n"
    chunks = chunk_headings(text, "guide.md", language="markdown", kind="docs")
    assert_verbatim(text, chunks)
    install = [c for c in chunks if c.symbol == "Install"]
    assert len(install) == 1
    assert install[0].text.startswith("## Install\n\nThe installer")
    setext = f"Install\n-------\n\n{paragraph}\n"
    chunks = chunk_headings(setext, "guide.md", language="markdown", kind="docs")
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 4)]


def test_a_heading_inside_an_html_comment_is_not_a_heading():
    text = ("# Guide\n\nIntro.\n\n<!--\n# Draft section\nNot written yet.\n-->\n\n"
            "<!-- one line -->\n## Usage\n\nRun it.\n")
    chunks = chunk_headings(text, "guide.md", language="markdown", kind="docs", policy=ChunkingPolicy(prose=20))
    assert_verbatim(text, chunks)
    assert {c.symbol for c in chunks} == {"Guide", "Usage"}
    assert "Draft section" not in " ".join(c.context for c in chunks)


def test_a_heading_several_lines_into_an_html_comment_is_not_a_heading():
    text = "# Guide\n\nIntro.\n\n<!--\nTo do, later:\n\n## Draft section\n-->\n\n## Usage\n\nRun it.\n"
    chunks = chunk_headings(text, "guide.md", language="markdown", kind="docs", policy=ChunkingPolicy(prose=20))
    assert_verbatim(text, chunks)
    assert {c.symbol for c in chunks} == {"Guide", "Usage"}


def test_front_matter_is_not_a_setext_heading():
    """Its closing `---` underlined the last key: every section's heading path began with
    `slug: /docs/start` (Docusaurus, Jekyll, Hugo, MDX pages)."""
    text = ("---\nid: start\ntitle: Getting started\nslug: /docs/start\n---\n\nSome text.\n\n"
            "## Configuration\n\nSet it up.\n\n### Options\n\nMore.\n")
    chunks = chunk_headings(text, "start.mdx", language="markdown", kind="docs", policy=ChunkingPolicy(prose=20))
    assert_verbatim(text, chunks)
    assert "slug" not in " ".join(c.context for c in chunks)
    toml = "+++\ntitle = 'Start'\n+++\n\nIntro\n-----\n\nText.\n"
    assert [c.context for c in chunk_headings(toml, "start.md", language="markdown", kind="docs",
                                               policy=ChunkingPolicy(prose=20))][-1] == "Start > Intro"


def test_a_page_opening_with_a_rule_far_from_the_next_one_keeps_its_headings():
    """A `---` with no other within 200 lines opens no front matter: it is a thematic break."""
    text = "---\n# Intro\n\n" + "A line of the introduction.\n" * 250 + "\n---\n\n## Usage\n\nRun it.\n"
    chunks = chunk_headings(text, "guide.md", language="markdown", kind="docs")
    assert_verbatim(text, chunks)
    assert "Intro" in {c.context for c in chunks} and "Intro > Usage" in {c.context for c in chunks}


def test_a_page_titled_in_its_front_matter_has_that_title_at_the_head_of_every_heading_path():
    """Docusaurus, Hugo and Jekyll pages write their first heading in the front matter: the lead
    paragraph had no label, and each section's path left out the page it is on."""
    text = ("---\nid: start\ntitle: \"Getting started\"\n---\n\nThis page explains how to install the tool.\n\n"
            "## Configuration\n\nSet it up.\n\n### Options\n\nMore.\n")
    chunks = chunk_headings(text, "start.mdx", language="markdown", kind="docs", policy=ChunkingPolicy(prose=20))
    assert_verbatim(text, chunks)
    assert {c.context for c in chunks} == {"Getting started", "Getting started > Configuration",
                                           "Getting started > Configuration > Options"}
    assert {c.symbol for c in chunks} == {"", "Configuration", "Options"}  # the lead defines nothing
    # A page that writes its own first-level heading is titled by it.
    own = text.replace("## Configuration", "# Setup\n\n## Configuration")
    contexts = [c.context for c in chunk_headings(own, "start.md", language="markdown", kind="docs",
                                                  policy=ChunkingPolicy(prose=20))]
    assert contexts[0] == "Setup" and contexts[-1] == "Setup > Configuration > Options"


def test_what_comes_before_a_page_s_first_heading_is_labelled_with_that_title():
    """A README's logo and tagline before `# axios` was a chunk with no label."""
    text = ('<p align="center"><img src="logo.png"></p>\n\nPromise based HTTP client for the browser.\n\n'
            "# axios\n\nInstall it.\n\n## Features\n\nMany.\n")
    chunks = chunk_headings(text, "README.md", language="markdown", kind="docs", policy=ChunkingPolicy(prose=20))
    assert_verbatim(text, chunks)
    assert chunks[0].start_line == 1 and chunks[0].context == "axios" and chunks[0].symbol == ""
    notes = "Some notes.\n\n## Later\n\nText.\n"  # no page title: the lead stays unlabelled
    assert chunk_headings(notes, "NOTES.md", language="markdown", kind="docs",
                          policy=ChunkingPolicy(prose=20))[0].context == ""


def test_a_title_stops_at_any_line_break_holds_no_control_character_and_is_bounded():
    """A file of lone CRs is one line: its first heading's title was the whole file, indexed again
    with every chunk. A runaway heading line is cut as definition names are."""
    lone_cr = "# Release notes\r\rThis release fixes the parser.\r\r## Changes\r\r- faster startup\r"
    assert [c.context for c in chunk_headings(lone_cr, "NOTES.md", language="markdown", kind="docs")] \
        == ["Release notes"]
    assert chunk_headings("# Colour \x1b[31mred\x1b[0m\n\nText.\n", "a.md", language="markdown",
                          kind="docs")[0].symbol == "Colour [31mred[0m"
    long = chunk_headings("## " + "word " * 1000 + "\n\nText.\n", "a.md", language="markdown", kind="docs")
    assert len(long[0].context) <= 120 and long[0].context.startswith("word word")


def _headings(text, language="markdown"):
    """The heading paths of a text's sections, in order, with a budget small enough to cut at each."""
    chunks = chunk_headings(text, "a.md", language=language, kind="docs", policy=ChunkingPolicy(prose=20))
    assert_verbatim(text, chunks)
    return list(dict.fromkeys(c.context for c in chunks if c.symbol))


def test_fences_in_list_items_and_fences_with_an_info_string_inside_hide_no_heading():
    """A fence indented 4 spaces in a list item was no fence, and its closing line, indented 3, opened
    one: kotlinx-coroutines' guide lost its last eight headings to fenced code."""
    listed = ("# Guide\n\n1. Step:\n\n    ```kotlin\n    # not a heading\n   ```\n\n"
              "## Scopes\n\nText.\n")
    assert _headings(listed) == ["Guide", "Guide > Scopes"]
    # Inside a fence, a line with an info string or indented 4 deeper is content, not its end.
    nested = ("# Guide\n\n```\n```python\n# a comment\n```\n\n~~~\n    ~~~\n# a comment\n~~~\n\n"
              "## Usage\n\nText.\n")
    assert _headings(nested) == ["Guide", "Guide > Usage"]


def test_a_closing_run_of_hashes_follows_a_space():
    """`# C#` is about C#: a title lost its last `#` (messagepack-csharp's README)."""
    text = "# MessagePack for C#\n\nText.\n\n## F# ##\n\nText.\n\n## Usage ##\n\nText.\n"
    assert _headings(text) == ["MessagePack for C#", "MessagePack for C# > F#",
                                               "MessagePack for C# > Usage"]


def test_only_a_line_of_paragraph_text_is_underlined_into_a_setext_heading():
    """A closing fence, a list item, a line of HTML or a thematic break over a `---` is no heading
    (abseil's issue template: a heading named `-----...`)."""
    text = ("# Guide\n\n```\ncode\n```\n---\n\n- item\n---\n\n<div>\n</div>\n---\n\n"
            "------\n------\n\nInstall\n-------\n\nText.\n")
    chunks = chunk_headings(text, "a.md", language="markdown", kind="docs", policy=ChunkingPolicy(prose=20))
    assert_verbatim(text, chunks)
    assert {c.context for c in chunks} == {"Guide", "Guide > Install"}
    assert chunk_headings("---", "a.md", language="markdown", kind="docs")[0].context == ""


def test_headings_read_alike_from_lines_with_or_without_their_endings_and_beside_a_comment():
    """The scan skips the rows that cannot change what follows; a paragraph line it skipped is still
    underlined into a heading, and lines given without their endings (contextual's) read the same."""
    text = ("Intro line\n\nSetext title\n============\n\n- item\n---\n\n```\n# not a heading\n```\n"
            "Paragraph\n---\n# ATX #\n")
    expected = heading_rows(split_lines(text))
    assert expected == [(2, 1, "Setext title"), (11, 2, "Paragraph"), (13, 1, "ATX")]
    assert heading_rows(text.splitlines()) == expected
    assert heading_rows(split_lines(text + "<!-- a note\n# hidden\n-->\n")) == expected


def test_a_thematic_break_after_a_blank_line_makes_no_heading_of_the_paragraph_above():
    text = "# Guide\n\nA paragraph of the guide.\n\n---\n\nMore text after the rule.\n"
    chunks = chunk_headings(text, "a.md", language="markdown", kind="docs", policy=ChunkingPolicy(prose=20))
    assert_verbatim(text, chunks)
    assert {c.context for c in chunks} == {"Guide"}


def test_any_punctuation_adorns_a_restructuredtext_title():
    text = "Title\n!!!!!\n\nIntro.\n\nUsage\n@@@@@\n\nText.\n"
    assert _headings(text, "rst") == ["Title", "Title > Usage"]


def test_heading_paths_read_as_the_rendered_headings():
    """Link targets, badges and HTML tags are not in the heading a reader sees: nvm's README put
    its badges' URLs in the heading path of every chunk, a changelog each release's compare URL."""
    text = ("# Node Version Manager [![Tests](https://ci.example/badge.svg?branch=main)][3] "
            "[![CII](https://bestpractices.dev/badge)](https://bestpractices.dev/projects/684)\n\nIntro.\n\n"
            "## [v12.15.0](https://github.com/laravel/framework/compare/v12.14.1...v12.15.0) - 2025-05-20\n\n"
            "Fixed.\n\n## <small>nlohmann::json::</small>parse\n\nParses.\n\n"
            "## The `<T>` in [`get<T>()`](api/get.md)\n\nText.\n\n## Option<T> and --output=\\<PATH\\>\n\nText.\n\n"
            "[![logo](logo.svg)](https://curl.se)\n=========\n\nLogo.\n")
    assert _headings(text) == [
        "Node Version Manager", "Node Version Manager > v12.15.0 - 2025-05-20",
        "Node Version Manager > nlohmann::json::parse", "Node Version Manager > The `<T>` in `get<T>()`",
        "Node Version Manager > Option<T> and --output=\\<PATH\\>",  # no HTML tags
        "logo"]  # a heading that is only an image: its alt text


def test_a_code_span_is_closed_by_a_run_of_as_many_backticks_and_a_runaway_heading_is_cut():
    """CommonMark: ``a`b`` is one span (a shorter run inside is text), an unclosed run is plain
    text. A heading line of thousands of backticks or brackets (minified text) still gives a title,
    cut to the title's length (a pattern with a backreference took minutes on it)."""
    text = ("# Use ``List<`T`>`` with `<b>` and ```x``\n\nA.\n\n"
            "# " + "`" * 30000 + "\n\nB.\n\n# " + "[" * 30000 + "\n\nC.\n")
    first, ticks, brackets = _headings(text)
    assert first == "Use ``List<`T`>`` with `<b>` and ```x``"  # the tags are in code: kept
    assert ticks.startswith("```") and brackets.startswith("[[[")
    assert 100 <= len(ticks) <= 120 and 100 <= len(brackets) <= 120


def test_expand_scope_on_a_section_is_the_section_around_it():
    """As a method's scope is its class: a subsection's is its parent section, a piece of a
    section cut by lines the section; a top-level section has none, nor one under the page's title
    (as a function's scope is not its module)."""
    text = ("# Guide\n\nIntro.\n\n## Install\n\nSteps.\n\n### Linux\n\napt.\n\n## Usage\n\nRun.\n\n"
            "# Appendix\n\n" + "".join(f"Line {i} of a long appendix.\n\n" for i in range(80)))
    chunks = chunk_headings(text, "a.md", language="markdown", kind="docs", policy=ChunkingPolicy(prose=20))
    assert_verbatim(text, chunks)
    scopes = {c.context: c.scope for c in chunks}
    assert scopes["Guide"] is None
    assert scopes["Guide > Install"] == (1, 16) and scopes["Guide > Usage"] == (1, 16)
    assert scopes["Guide > Install > Linux"] == (5, 12)
    appendix = [c for c in chunks if c.context == "Appendix"]
    assert len(appendix) > 1 and all(c.scope == (17, len(split_lines(text))) for c in appendix)
    page = "# Tool\n\nIntro.\n\n## Install\n\nSteps.\n\n### Linux\n\napt.\n\n## Usage\n\nRun.\n"
    scopes = {c.context: c.scope for c in chunk_headings(page, "README.md", language="markdown", kind="docs",
                                                         policy=ChunkingPolicy(prose=20))}
    assert scopes == {"Tool": None, "Tool > Install": None, "Tool > Install > Linux": (5, 12), "Tool > Usage": None}
