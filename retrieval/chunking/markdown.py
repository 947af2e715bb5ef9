"""Heading chunks for Markdown and reStructuredText (standard library only).

A section runs from its heading to the next heading; its context is the heading path
(`Tutorial > Security > OAuth2`) and its symbol the heading's own title. Sections are merged with
their neighbours up to the budget (a heading with one line under it is not worth a chunk alone)
when the first of them is the parent or a sibling; a section over the budget is cut by the line
chunker, every piece keeping the section's context. Fenced code is never taken for a heading, and
a title reads as rendered (no link targets, badges or HTML tags). A section's `scope` (for
`--expand scope`) is the section around it; a piece's, its section.
"""
from __future__ import annotations

import re
from itertools import accumulate

from ..languages import DOCS
from ..read import split_lines
from ..records import Chunk
from .lines import RST_ADORNMENT, SETEXT_UNDERLINE, ChunkingPolicy, chunk_rows

_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
# A closing run of `#` follows a space (or is all there is): `# C#` is about C#.
_ATX_CLOSE = re.compile(r"(?:^|[ \t]+)#+$")
_ATTRS = re.compile(r"\s*\{[^{}]*\}\s*$")  # `{ #anchor }` attribute lists (MkDocs, Pandoc)
# At any indentation: a fence in a list item is indented 4 spaces or more, and taking its content
# (or missing its opening and taking its closing for one) hid every heading after it. It closes
# indented less than 4 columns deeper than it opened (deeper, it is a line of its content).
_FENCE = re.compile(r"([ \t]*)(`{3,}|~{3,})(.*)")
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
# Inline markup a rendered heading does not show: images (badges, logos), link targets, HTML tags.
_TICKS = re.compile(r"`+")
# Link text holds no bracket: with one, `[[[[...` (a runaway line) took quadratic time.
_IMAGE = re.compile(r"!\[([^\[\]]*)\](?:\((?:[^()]|\([^()]*\))*\)|\[[^\[\]]*\])")
_LINK = re.compile(r"\[([^\[\]]*)\](?:\((?:[^()]|\([^()]*\))*\)|\[[^\[\]]*\])")
MAX_RAW_TITLE = 2000  # a heading line longer than this is a runaway: read no further
# An HTML tag as CommonMark reads one (`\<name\>` and `swap<basic_json\>` are text), not a type
# parameter (`Option<T>`).
_TAG = re.compile(r"""(?<!\\)</?(?:[a-z]|[A-Za-z][A-Za-z0-9-]+)(?:\s+[A-Za-z_:][\w.:-]*"""
                  r"""(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?)*\s*/?>""")
_BLANKS = re.compile(r"[ \t]+")
# A title ends at the first line break of any kind (a file of lone CRs is one "line" here) and
# holds no control character; a runaway one is cut, as definition names are.
_TITLE_END = re.compile("[\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_CONTROL = re.compile("[\x00-\x08\x0e-\x1f\x7f]")
MAX_TITLE = 120
FRONT_MATTER_ROWS = 200  # a leading `---` block longer than this is not front matter


def _title(raw: str) -> str:
    title = _CONTROL.sub("", _TITLE_END.split(raw, 1)[0]).strip()
    return title if len(title) <= MAX_TITLE else title[: MAX_TITLE - 1].rstrip() + "\u2026"


def _code_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each code span: a run of backticks closed by the next run of the same
    length (CommonMark); an unclosed run is plain text. Linear: a pattern with a backreference took
    cubic time on a line of backticks."""
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(text)]
    following: list[int | None] = [None] * len(runs)  # the next run of the same length
    last: dict[int, int] = {}
    for n in range(len(runs) - 1, -1, -1):
        length = runs[n][1] - runs[n][0]
        following[n] = last.get(length)
        last[length] = n
    out, n = [], 0
    while n < len(runs):
        close = following[n]
        if close is None:
            n += 1
        else:
            out.append((runs[n][0], runs[close][1]))
            n = close + 1
    return out


def _plain(raw: str) -> str:
    """A Markdown heading's text as it reads rendered: `[v3.7.2](https://...) (2019-11-10)` is
    `v3.7.2 (2019-11-10)`, `<small>nlohmann::json::</small>parse` is `nlohmann::json::parse`; a
    badge's URLs went into the heading path of every chunk under it. Code spans are kept as written;
    a heading that is only an image is named by its alt text."""
    raw = raw[:MAX_RAW_TITLE]
    if not any(c in raw for c in "`[<\x00"):  # most headings: no code span, image, link or tag to read
        return _BLANKS.sub(" ", raw).strip(" \t")
    raw = raw.replace("\x00", "")
    spans, masked, done = [], [], 0
    for start, end in _code_spans(raw):  # set aside: `<T>` in code is no tag
        spans.append(raw[start:end])
        masked += [raw[done:start], "\x00"]
        done = end
    masked = "".join(masked) + raw[done:]

    def strip(images: bool) -> str:
        text = _TAG.sub("", _LINK.sub(r"\1", _IMAGE.sub(r"\1" if images else "", masked)))
        code = iter(spans)
        return _BLANKS.sub(" ", re.sub("\x00", lambda _: next(code, ""), text)).strip(" \t")

    return strip(False) or strip(True)


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
    fence, fence_indent = "", 0
    comment = False  # inside an HTML comment (`<!--` ... `-->`), where `#` lines are not headings
    # The last row of paragraph text: only that is underlined into a setext heading, not a closing
    # fence, a heading, a list item, a line of HTML or another `---` (a thematic break).
    text_row: int | None = None
    front = _front_matter_end(lines)
    done = None  # the row read before this one
    # Each pattern below is tried only on a line whose first characters could start its match:
    # most lines are none of these, and the patterns were most of the chunker's time.
    for i in _rows_to_read(lines, front):
        before, done = done, i
        line = lines[i].rstrip("\r\n")
        if comment:
            comment = "-->" not in line
            continue
        if not fence and "<!--" in line and "-->" not in line[line.index("<!--") + 4 :]:
            comment = True  # from the next line on
        lead = line.lstrip(" \t")[:3]
        m = _FENCE.match(line) if lead in ("```", "~~~") else None
        # A backtick fence's info string holds no backtick (```` ```a``` ```` is inline code); a
        # closing fence is as long as the opening one, or longer, and has none.
        if m and not fence and not (m.group(2)[0] == "`" and "`" in m.group(3)):
            fence, fence_indent = m.group(2), len(m.group(1).expandtabs(4))
            continue
        if m and fence and m.group(2)[0] == fence[0] and len(m.group(2)) >= len(fence) \
                and not m.group(3).strip() and len(m.group(1).expandtabs(4)) < fence_indent + 4:
            fence = ""
            continue
        if fence:
            continue
        m = _ATX.match(line) if "#" in line[:4] else None
        if m:
            title = (m.group(2) or "").rstrip()
            if title.endswith("#"):
                title = _ATX_CLOSE.sub("", title)
            if "}" in title:
                title = _ATTRS.sub("", title)
            out.append((i, len(m.group(1)), _title(_plain(title))))
            continue
        if lead[:1] in ("=", "-") and SETEXT_UNDERLINE.match(line):
            # (a row skipped just before, outside fences and comments as this one: text, or not)
            if text_row == i - 1 or (before != i - 1 and i - 1 >= front and _is_text(lines[i - 1].rstrip("\r\n"))):
                out.append((i - 1, 1 if line.strip()[0] == "=" else 2, _title(_plain(lines[i - 1].strip()))))
            continue
        if _is_text(line):
            text_row = i
    return out


def _is_text(line: str) -> bool:
    """A line of paragraph text (not a list item, a quote, a table row or a line of HTML)."""
    stripped = line.strip()
    listed = (stripped[:1] in ("-", "*", "+") or stripped[:1].isdigit()) and _LIST_ITEM.match(line)
    return bool(stripped) and not listed and not stripped.startswith((">", "|")) \
        and not (stripped.startswith("<") and stripped.endswith(">"))


# A line that may open or close a fence, or be a heading or an underline: at its start (after
# indentation) three backticks or tildes, `#`, `=` or `-`. Searched for with its line break first,
# which the regular expression engine finds fast.
_BLOCK_LINE = re.compile(r"\n[ \t]*(?:```|~~~|[#=-])")


def _rows_to_read(lines: list[str], front: int):
    """The rows from `front` on that the heading scan must read: in a file without HTML comments
    only those that may be a fence, a heading or an underline (no other row changes what follows;
    whether a skipped row is paragraph text is asked only of the one above an underline). With a
    comment (`<!--`, `-->`), which may start or end on any row, every row; and every row of
    lines not split at line breaks kept (read.split_lines): a caller may give them without."""
    text = "\n" + "".join(lines)  # a line break before every row, the first one's too
    if not lines or "<!--" in text or "-->" in text or text.count("\n") != len(lines) + lines[-1].endswith("\n") \
            or not all(line.endswith("\n") for line in lines[:-1]):
        return range(front, len(lines))
    rows, row, at = [], 0, 0
    for m in _BLOCK_LINE.finditer(text):
        row += text.count("\n", at, m.start())  # line breaks before this one's: its row
        at = m.start()
        if row >= front:
            rows.append(row)
    return rows


def _rst_headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """Titles underlined (optionally overlined too) with punctuation; levels in order of first use."""
    out = []
    styles: list[tuple[str, bool]] = []
    i = 1
    while i < len(lines):
        line = lines[i].rstrip("\r\n")
        title = lines[i - 1].strip()
        if RST_ADORNMENT.match(line) and title and not RST_ADORNMENT.match(lines[i - 1].rstrip("\r\n")) \
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


def heading_rows(lines: list[str], language: str = "markdown") -> list[tuple[int, int, str]]:
    """(row, level, title) of every heading of a Markdown or (`rst`) reStructuredText file's
    lines, 0-based rows, titles as rendered: the one reading of headings, shared by the chunker
    and what contextualizes chunks."""
    return _rst_headings(lines) if language == "rst" else _markdown_headings(lines)


# A line that only marks a place: blank, a MyST target `(label)=`, an HTML anchor or comment.
_MARKER = re.compile(r"\s*(?:\([^()\s]+\)=|<a\s+(?:name|id)=[^>]*>\s*(?:</a>)?|<!--.*-->)?\s*$")


def chunk_headings(text: str, path: str, *, language: str = "markdown", kind: str = DOCS,
                   policy: ChunkingPolicy | None = None) -> list[Chunk]:
    policy = policy or ChunkingPolicy()
    lines = split_lines(text)
    if not lines:
        return []
    headings = heading_rows(lines, language)
    budget = policy.budget(kind)
    # A page titled in its front matter: that title heads its heading paths (`Getting started >
    # Install`), as the rendered page's first heading, unless the text has a first-level one.
    page = _front_matter_title(lines) if language != "rst" else ""
    if any(level == 1 for _, level, _ in headings):
        page = ""
    # Sections: (first row, last row, heading path, title, level, enclosing section's rows)
    sections = []
    stack: list[tuple[int, str, int]] = [(0, page, -1)] if page else []  # (level, title, heading's index)
    starts = [row for row, _, _ in headings]
    titles = [title for _, level, title in headings if level == 1]
    titled = len(titles) == 1 and headings[0][1] == 1  # the first heading is the page's one title
    if not starts or starts[0] > 0:
        # What comes before the first heading (a logo and a tagline, front matter) leads the page:
        # its title, from the front matter or the first heading when that is the page's one title.
        lead = page or (titles[0] if titled else "")
        sections.append([0, (starts[0] - 1) if starts else len(lines) - 1, lead, "", 0, None])
    # The last row of each heading's section with its subsections: before the next heading as high.
    whole = [len(lines) - 1] * len(headings)
    open_: list[int] = []
    for n, (row, level, _) in enumerate(headings):
        while open_ and headings[open_[-1]][1] >= level:
            whole[open_.pop()] = row - 1
        open_.append(n)
    for n, (row, level, title) in enumerate(headings):
        while stack and stack[-1][0] >= level:
            stack.pop()
        # `--expand scope` on a section shows the section around it, as on a method its class; not
        # the page under its title (the whole file), as on a function not its module.
        parent = stack[-1][2] if stack else -1
        scope = (headings[parent][0] + 1, whole[parent] + 1) if parent > 0 or (parent == 0 and not titled) else None
        stack.append((level, title, n))
        end = headings[n + 1][0] - 1 if n + 1 < len(headings) else len(lines) - 1
        sections.append([row, end, " > ".join(t for _, t, _ in stack), title, level, scope])
    # Merge a section into the previous chunk while both fit and it is not a shallower heading.
    merged = []
    offsets = [0, *accumulate(map(len, lines))]  # characters before each row: a span's size at once
    for sec in sections:
        if merged:
            prev = merged[-1]
            size = offsets[sec[1] + 1] - offsets[prev[0]]
            # a child or a sibling of the chunk's first heading (or anything after a preamble)
            if size <= budget and sec[1] - prev[0] < policy.max_lines and (sec[4] >= prev[4] or not prev[3]):
                adopted = not prev[3] and prev[1] + 1 == sec[0] and all(
                    _MARKER.match(line) for line in lines[prev[0] : sec[0]])
                if adopted:
                    # a page's opening anchor (MyST's `(shell-completion)=`, `<a name=...>`) is no
                    # preamble: the chunk is the heading's (it was a `document` without a title)
                    prev[2:6] = sec[2:6]
                prev[1] = sec[1]
                if sec[3] and not adopted:  # a heading beside the chunk's label: a question's words may name it
                    prev[6].append((sec[3], sec[2], "section", sec[0] + 1, sec[1] + 1))
                continue
        merged.append([*sec, []])
    out: list[Chunk] = []
    for start, end, context, title, _level, around, members in merged:
        kind_name = "section" if title else "document"
        rows = lines[start : end + 1]
        if not any(line.strip() for line in rows):
            continue
        pieces = [(p.start_line, p.end_line, p.text) for p in
                  chunk_rows(rows, path, language=language, kind=kind, policy=policy)]
        if title and len(pieces) > 1 and _only_heading(pieces[0][2], language):
            # A heading over one long line (a paragraph never wrapped) was a chunk of its own,
            # saying nothing: it goes with what it heads.
            a, b = pieces[0][0], pieces[1][1]
            pieces[:2] = [(a, b, "".join(lines[start + a - 1 : start + b]))]
        for s, e, piece_text in pieces:
            s, e = s + start, e + start
            # A piece's scope is its section; a whole section's, the one around it.
            out.append(Chunk(path, s, e, piece_text, language, kind, context, title, kind_name,
                             (start + 1, end + 1) if len(pieces) > 1 else around, (),
                             tuple(members) if len(pieces) == 1 else ()))
    return out


def _only_heading(text: str, language: str) -> bool:
    """The text is a heading and blank lines, nothing it heads (a setext or reST title counts its
    underline too)."""
    filled = [line for line in text.splitlines() if line.strip()]
    adorned = 3 if language == "rst" else 2
    return len(filled) <= 1 or (len(filled) <= adorned and all(
        SETEXT_UNDERLINE.match(line) or RST_ADORNMENT.match(line) for line in filled[1:]))
