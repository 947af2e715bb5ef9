"""Heading chunks for Markdown and reStructuredText (standard library only)."""
from __future__ import annotations

from retrieval.chunking import ChunkingPolicy
from retrieval.chunking.markdown import chunk_headings
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
