"""Heading chunks for Markdown and reStructuredText (standard library only).

A section runs from its heading to the next heading; its context is the heading path
(`Tutorial > Security > OAuth2`) and its symbol the heading's own title. Sections are merged with
their neighbours up to the budget (a heading with one line under it is not worth a chunk alone)
when the first of them is the parent or a sibling; a section over the budget is cut by the line
chunker, every piece keeping the section's context. Fenced code is never taken for a heading.
"""
from __future__ import annotations

import re

from ..languages import DOCS
from ..read import split_lines
from ..records import Chunk
from .lines import ChunkingPolicy, chunk_lines

_ATX = re.compile(r" {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$|( {0,3})(#{1,6})$")
_ATTRS = re.compile(r"\s*\{[^{}]*\}\s*$")  # `{ #anchor }` attribute lists (MkDocs, Pandoc)
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*$")
_RST_ADORNMENT = re.compile(r"([=\-`:'\"~^_*+#<>.])\1{2,}[ \t]*$")
# A title ends at the first line break of any kind (a file of lone CRs is one "line" here) and
# holds no control character; a runaway one is cut, as definition names are.
_TITLE_END = re.compile("[\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_CONTROL = re.compile("[\x00-\x08\x0e-\x1f\x7f]")
MAX_TITLE = 120
FRONT_MATTER_ROWS = 200  # a leading `---` block longer than this is not front matter


def _title(raw: str) -> str:
    title = _CONTROL.sub("", _TITLE_END.split(raw, 1)[0]).strip()
    return title if len(title) <= MAX_TITLE else title[: MAX_TITLE - 1].rstrip() + "\u2026"


def _front_matter_end(lines: list[str]) -> int:
    """Rows of a leading YAML (`---`) or TOML (`+++`) front matter block (Jekyll, Hugo, Docusaurus,
    MDX): metadata, not a paragraph whose closing `---` underlines a setext heading. 0 if none."""
    if not lines or lines[0].rstrip() not in ("---", "+++"):
        return 0
    marker = lines[0].rstrip()
    for i in range(1, min(len(lines), FRONT_MATTER_ROWS)):
        if lines[i].rstrip() == marker or (marker == "---" and lines[i].rstrip() == "..."):
            return i + 1
    return 0


_FRONT_TITLE = re.compile(r"""title[ \t]*[:=][ \t]*(['"]?)(.+?)\1[ \t]*$""")


def _front_matter_title(lines: list[str]) -> str:
    """The `title:` (YAML) or `title =` (TOML) of a page's front matter: the page's first heading
    as its site renders it (Docusaurus, Hugo, Jekyll write none in the text). '' if none."""
    for raw in lines[1 : max(1, _front_matter_end(lines) - 1)]:
        m = _FRONT_TITLE.match(raw.rstrip("\r\n"))
        if m and m.group(2).strip():
            return _title(m.group(2))
    return ""


def _markdown_headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(row, level, title) of every heading; a setext heading's row is its text line."""
    out = []
    fence = ""
    comment = False  # inside an HTML comment (`<!--` ... `-->`), where `#` lines are not headings
    front = _front_matter_end(lines)
    for i, raw in enumerate(lines):
        if i < front:
            continue
        line = raw.rstrip("\r\n")
        if comment:
            comment = "-->" not in line
            continue
        if not fence and "<!--" in line and "-->" not in line[line.index("<!--") + 4 :]:
            comment = True  # from the next line on
        m = _FENCE.match(line)
        if m:
            marker = m.group(1)
            if not fence:
                fence = marker[0] * len(marker)
            elif marker.startswith(fence):
                fence = ""
            continue
        if fence:
            continue
        m = _ATX.match(line)
        if m:
            level = len(m.group(1) or m.group(4))
            out.append((i, level, _title(_ATTRS.sub("", m.group(2) or ""))))
            continue
        if i > front and _SETEXT.match(line) and lines[i - 1].strip():
            prev = lines[i - 1].strip()
            if not _ATX.match(prev) and not prev.startswith(("- ", "* ", "> ", "|")) and (not out or out[-1][0] != i - 1):
                out.append((i - 1, 1 if line.strip()[0] == "=" else 2, _title(prev)))
    return out


def _rst_headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """Titles underlined (optionally overlined too) with punctuation; levels in order of first use."""
    out = []
    styles: list[tuple[str, bool]] = []
    i = 1
    while i < len(lines):
        line = lines[i].rstrip("\r\n")
        title = lines[i - 1].strip()
        if _RST_ADORNMENT.match(line) and title and not _RST_ADORNMENT.match(lines[i - 1].rstrip("\r\n")) \
                and len(line.strip()) >= len(title) - 1:
            over = i >= 2 and lines[i - 2].rstrip("\r\n") == line
            style = (line.strip()[0], over)
            if style not in styles:
                styles.append(style)
            out.append((i - 2 if over else i - 1, styles.index(style) + 1, _title(title)))
            i += 2
            continue
        i += 1
    return out


def chunk_headings(text: str, path: str, *, language: str = "markdown", kind: str = DOCS,
                   policy: ChunkingPolicy | None = None) -> list[Chunk]:
    policy = policy or ChunkingPolicy()
    lines = split_lines(text)
    if not lines:
        return []
    headings = _rst_headings(lines) if language == "rst" else _markdown_headings(lines)
    budget = policy.budget(kind)
    # A page titled in its front matter: that title heads its heading paths (`Getting started >
    # Install`), as the rendered page's first heading, unless the text has a first-level one.
    page = _front_matter_title(lines) if language != "rst" else ""
    if any(level == 1 for _, level, _ in headings):
        page = ""
    # Sections: (first row, last row, heading path, title, level)
    sections = []
    stack: list[tuple[int, str]] = [(0, page)] if page else []
    starts = [row for row, _, _ in headings]
    if not starts or starts[0] > 0:
        # What comes before the first heading (a logo and a tagline, front matter) leads the page:
        # its title, from the front matter or the first heading when that is the page's one title.
        titles = [title for _, level, title in headings if level == 1]
        lead = page or (titles[0] if len(titles) == 1 and headings[0][1] == 1 else "")
        sections.append([0, (starts[0] - 1) if starts else len(lines) - 1, lead, "", 0])
    for n, (row, level, title) in enumerate(headings):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        end = headings[n + 1][0] - 1 if n + 1 < len(headings) else len(lines) - 1
        sections.append([row, end, " > ".join(t for _, t in stack), title, level])
    # Merge a section into the previous chunk while both fit and it is not a shallower heading.
    merged = []
    for sec in sections:
        if merged:
            prev = merged[-1]
            size = sum(len(line) for line in lines[prev[0] : sec[1] + 1])
            # a child or a sibling of the chunk's first heading (or anything after a preamble)
            if size <= budget and sec[1] - prev[0] < policy.max_lines and (sec[4] >= prev[4] or not prev[3]):
                prev[1] = sec[1]
                continue
        merged.append(list(sec))
    out: list[Chunk] = []
    for start, end, context, title, _level in merged:
        kind_name = "section" if title else "document"
        body = "".join(lines[start : end + 1])
        if not body.strip():
            continue
        pieces = [(p.start_line, p.end_line, p.text) for p in
                  chunk_lines(body, path, language=language, kind=kind, policy=policy)]
        if title and len(pieces) > 1 and _only_heading(pieces[0][2], language):
            # A heading over one long line (a paragraph never wrapped) was a chunk of its own,
            # saying nothing: it goes with what it heads.
            a, b = pieces[0][0], pieces[1][1]
            pieces[:2] = [(a, b, "".join(lines[start + a - 1 : start + b]))]
        for s, e, piece_text in pieces:
            s, e = s + start, e + start
            out.append(Chunk(path, s, e, piece_text, language, kind, context, title, kind_name,
                             (start + 1, end + 1) if (s, e) != (start + 1, end + 1) else None, ()))
    return out


def _only_heading(text: str, language: str) -> bool:
    """The text is a heading and blank lines, nothing it heads (a setext or reST title counts its
    underline too)."""
    filled = [line for line in text.splitlines() if line.strip()]
    adorned = 3 if language == "rst" else 2
    return len(filled) <= 1 or (len(filled) <= adorned and all(
        _SETEXT.match(line) or _RST_ADORNMENT.match(line) for line in filled[1:]))
