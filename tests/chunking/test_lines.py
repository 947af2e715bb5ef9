"""The line chunker: every chunk is a verbatim run of whole source lines, 1-based and inclusive."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval.chunking import ChunkingPolicy, chunk_lines

from conftest import dedent


def file_lines(text: str) -> list[str]:
    """Lines as an editor numbers them (split on \\n), endings kept; independent of the package."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def assert_verbatim_spans(text: str, chunks) -> None:
    lines = file_lines(text)
    previous_end = 0
    for chunk in chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines)
        assert chunk.text == "".join(lines[chunk.start_line - 1 : chunk.end_line])
        assert chunk.start_line > previous_end, "chunks overlap or are out of order"
        previous_end = chunk.end_line


CODE = dedent(
    '''
    import os


    def first(a, b):
        """Add two numbers."""
        return a + b


    class Thing:
        def method(self):
            return os.getcwd()

        def other(self):
            if True:
                return 1
            return 2
    '''
)

MARKDOWN = dedent(
    """
    # Title

    Intro paragraph that explains things.

    ## Section one

    - item a
    - item b

    ## Section two

    Closing words.
    """
)

CONFIG = dedent(
    """
    [server]
    host = "localhost"
    port = 8080

    [database]
    url = "postgres://db"
    """
)


def test_code_chunks_are_verbatim_source_lines():
    chunks = chunk_lines(CODE, "m.py", language="python", kind="code", policy=ChunkingPolicy(code=120))
    assert len(chunks) > 1
    assert_verbatim_spans(CODE, chunks)


def test_markdown_chunks_are_verbatim_source_lines():
    chunks = chunk_lines(MARKDOWN, "g.md", language="markdown", kind="docs", policy=ChunkingPolicy(prose=60))
    assert len(chunks) > 1
    assert_verbatim_spans(MARKDOWN, chunks)


def test_prose_is_cut_before_an_underlined_title_as_before_a_hash_heading():
    """reST titles and Markdown setext headings are underlined, not `#`: a chunk was cut at the
    last paragraph in reach and ran on into the next section's title (requests' quickstart: 79 of
    1,364 reST sections across the benchmark checkouts began a chunk; now 521)."""
    para = "Some words about this part of the guide.\n\n"
    for language, title in (("rst", "Make a Request\n--------------\n"), ("rst", "====\nHTTP\n====\n"),
                            ("markdown", "Make a Request\n==============\n")):
        text = para * 3 + title + "\n" + para * 3
        chunks = chunk_lines(text, "quickstart", language=language, kind="docs", policy=ChunkingPolicy(prose=200))
        assert_verbatim_spans(text, chunks)
        assert chunks[1].text.startswith(title), (language, [c.text for c in chunks])


def test_config_chunks_are_verbatim_source_lines():
    chunks = chunk_lines(CONFIG, "c.toml", language="toml", kind="config", policy=ChunkingPolicy(config=50))
    assert len(chunks) > 1
    assert_verbatim_spans(CONFIG, chunks)


def test_a_file_without_a_trailing_newline_ends_with_its_last_line():
    text = "def f():\n    return 1\n\ndef g():\n    return 2"
    chunks = chunk_lines(text, "a.py", kind="code")
    assert_verbatim_spans(text, chunks)
    assert chunks[-1].end_line == 5
    assert chunks[-1].text.endswith("return 2")


def test_a_small_file_is_one_chunk_spanning_its_non_blank_lines():
    text = "\n\nx = 1\ny = 2\n\n"
    (chunk,) = chunk_lines(text, "a.py", language="python", kind="code")
    assert (chunk.start_line, chunk.end_line, chunk.text) == (3, 4, "x = 1\ny = 2\n")
    assert (chunk.path, chunk.language, chunk.kind) == ("a.py", "python", "code")
    assert chunk.docid == "a.py:3-4"


def test_crlf_line_endings_are_kept_verbatim():
    text = "a = 1\r\nb = 2\r\n\r\nc = 3\r\n"
    chunks = chunk_lines(text, "a.py", kind="code", policy=ChunkingPolicy(code=10))
    assert_verbatim_spans(text, chunks)
    assert "".join(c.text for c in chunks).count("\r\n") == 3


def test_blank_files_give_no_chunks():
    assert chunk_lines("", "a.py") == []
    assert chunk_lines("\n\n\n", "a.py") == []
    assert chunk_lines("   \n\t\n  ", "a.py") == []


def test_an_oversized_paragraph_is_split_within_the_budget():
    line = "word " * 9 + "end\n"  # 49 characters, no blank lines anywhere
    text = line * 100
    budget = 400
    chunks = chunk_lines(text, "p.md", kind="docs", policy=ChunkingPolicy(prose=budget))
    assert len(chunks) >= len(text) // budget
    assert_verbatim_spans(text, chunks)
    for chunk in chunks:
        assert len(chunk.text) <= budget
    # Nothing was lost: the chunks tile the whole paragraph.
    assert "".join(c.text for c in chunks) == text


def test_the_lines_carried_past_a_cut_count_against_the_next_chunks_budget():
    """A cut at a paragraph break leaves the lines after it to the next chunk: they count against
    its budget too, or that chunk grows past the budget by up to half of one."""
    paragraph = ("word " * 9 + "end\n") * 3 + "\n"  # 148 characters
    text = paragraph * 20
    budget = 400
    chunks = chunk_lines(text, "p.md", kind="docs", policy=ChunkingPolicy(prose=budget))
    assert_verbatim_spans(text, chunks)
    assert len(chunks) >= len(text) // budget
    for chunk in chunks:
        assert len(chunk.text) <= budget


def test_a_single_line_longer_than_the_budget_is_a_chunk_of_its_own():
    text = "short = 1\n" + "x" * 500 + "\nafter = 2\n"
    chunks = chunk_lines(text, "a.py", kind="code", policy=ChunkingPolicy(code=100))
    assert_verbatim_spans(text, chunks)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 1), (2, 2), (3, 3)]


def test_the_line_cap_bounds_every_chunk():
    text = "".join(f"v{i} = {i}\n" for i in range(300))
    chunks = chunk_lines(text, "a.py", kind="code", policy=ChunkingPolicy(code=10**6, max_lines=50))
    assert max(c.end_line - c.start_line + 1 for c in chunks) <= 50
    assert "".join(c.text for c in chunks) == text


def test_cuts_prefer_a_blank_line_before_a_new_definition():
    text = "".join(
        f"def function_{i}():\n    value = {i}\n    return value\n\n" for i in range(20)
    )
    chunks = chunk_lines(text, "a.py", kind="code", policy=ChunkingPolicy(code=200))
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.text.startswith("def function_")
        assert chunk.text.endswith("return value\n")


def test_lines_that_exactly_fill_the_budget_stay_one_chunk():
    """A chunk grows until the next line would pass the budget: reaching it is no reason to cut."""
    text = "alpha = 1\nbeta = 22\ngamma = 3\n"  # 30 characters
    chunks = chunk_lines(text, "a.py", kind="code", policy=ChunkingPolicy(code=len(text)))
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 3)]
    chunks = chunk_lines(text, "a.py", kind="code", policy=ChunkingPolicy(code=len(text) - 1))
    assert len(chunks) == 2


def test_of_equally_good_cuts_the_latest_is_taken_so_chunks_hold_as_much_as_fits():
    # Every function is 50 characters (49 without its blank line): four fit a budget of 200, and
    # each blank line before a `def` is as good a cut as the others.
    text = "".join(f"def function_{i}():\n    value = {i}\n    return value\n\n" for i in range(8))
    chunks = chunk_lines(text, "a.py", kind="code", policy=ChunkingPolicy(code=200))
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 15), (17, 31)]


def test_a_chunk_is_cut_in_its_second_half_not_at_a_better_boundary_near_its_start():
    """A blank line before a definition just after the first line would be the best cut, but a
    chunk of one import line is no chunk: cuts are looked for in the chunk's second half only."""
    text = "import os\n\ndef f():\n" + "".join(f"    v = {i % 10}\n" for i in range(30))
    chunks = chunk_lines(text, "a.py", kind="code", policy=ChunkingPolicy(code=200))
    assert_verbatim_spans(text, chunks)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 21), (22, 33)]


def test_a_hash_comment_in_code_is_no_heading_to_cut_before():
    """In prose `#` starts a heading, the best cut; in code it is a comment inside a function, and a
    blank line before the next definition is the better place."""
    body = "".join(f"    step_{i} = {i}\n" for i in range(6))
    text = ("def first():\n" + body + "    # the last step\n    step_9 = 9\n\n"
            "def second():\n" + body + "    return 0\n")
    chunks = chunk_lines(text, "a.py", kind="code", policy=ChunkingPolicy(code=200))
    assert_verbatim_spans(text, chunks)
    assert [c.text.split("\n", 1)[0] for c in chunks] == ["def first():", "def second():"]


def test_budgets_are_chosen_by_kind():
    policy = ChunkingPolicy(code=1, prose=2, config=3, default=4)
    assert [policy.budget(k) for k in ("code", "docs", "config", "")] == [1, 2, 3, 4]


ALPHABET = st.sampled_from(["a", "b", "Z", "_", "1", " ", "  ", "\t", "\n", "\n", "\n\n", "#", "}", ")", "\r", "é", "def ", "# "])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parts=st.lists(ALPHABET, max_size=400),
    kind=st.sampled_from(["code", "docs", "config", ""]),
    budget=st.integers(min_value=1, max_value=120),
    max_lines=st.integers(min_value=1, max_value=40),
)
def test_chunks_of_any_text_are_verbatim_ordered_disjoint_and_cover_every_non_blank_line(parts, kind, budget, max_lines):
    text = "".join(parts)
    policy = ChunkingPolicy(code=budget, prose=budget, config=budget, default=budget, max_lines=max_lines)
    chunks = chunk_lines(text, "f", kind=kind, policy=policy)
    assert_verbatim_spans(text, chunks)
    lines = file_lines(text)
    covered = set()
    for chunk in chunks:
        span = lines[chunk.start_line - 1 : chunk.end_line]
        assert span[0].strip() and span[-1].strip(), "chunks start and end on non-blank lines"
        assert len(span) <= max_lines
        # Only a single line longer than the budget may pass it (it becomes a chunk of its own).
        assert len(chunk.text) <= budget or chunk.start_line == chunk.end_line
        covered.update(range(chunk.start_line, chunk.end_line + 1))
    non_blank = {i for i, line in enumerate(lines, start=1) if line.strip()}
    assert non_blank <= covered


@pytest.mark.parametrize("args, message", [
    ((None, "x.py"), "text must be a str, not NoneType"),
    ((b"a\n", "x.py"), "text must be a str, not bytes"),
    ((5, "x.py"), "text must be a str, not int"),
    (("a\n", None), "path must be a str, not NoneType"),
])
def test_chunk_lines_names_an_argument_of_the_wrong_type(args, message):
    with pytest.raises(TypeError, match=message):
        chunk_lines(*args)
    with pytest.raises(TypeError, match="language must be a str, not int"):
        chunk_lines("a\n", "x.py", language=5)
