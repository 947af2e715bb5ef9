"""Snippets: the lines of a hit (optionally with neighbouring lines), read from the file as it is now.

The index keeps no text, so a snippet is read when it is asked for. When the file changed since it
was indexed (possible with `--stale-ok`, or when an edit races a query) the hit's span may no longer
point at the lines that matched; the snippet then shows the current lines of that span, clamped to
the file, and says it is stale rather than guessing where the text moved.
"""
from __future__ import annotations

import bisect
import os
import stat
from dataclasses import replace

from .notebook import as_script, is_notebook
from .read import content_digest, decode_shown, split_ending, split_lines
from .records import SearchHit, Snippet

# (size, mtime_ns, content digest) of a file as it was indexed
Indexed = tuple
# A snippet line longer than this is shortened: one line of a minified file can be a megabyte, all
# of it landing in an agent's context. Code lines stay far below it.
MAX_LINE_CHARS = 1000
# ... unless it is at most this much longer: saying what was left out would take more (a line of
# 1,001 characters came out as 1,022).
LINE_SLACK = 100
# A file grown past this since indexing (far over any size cap an index takes) is not read for a
# snippet: a 400 MB log written over an indexed file cost 1.25 GB to show two lines.
MAX_READ_BYTES = 64 * 1024 * 1024
# `--expand scope` shows at most this many lines of a scope unless told (--snippet-lines): a
# namespace or module can be a whole file (serde's `mod content`: 92,217 characters).
MAX_SCOPE_LINES = 200


def inside(root: str, relpath: str) -> str | None:
    """root/relpath when its directories are inside root and none is a link, else None. The last
    component is not resolved: the caller opens it without following a link (indexing follows none,
    so a link on the path is one swapped in since, perhaps to a file never indexed, like `.env`)."""
    real_root = os.path.realpath(root)
    path = os.path.normpath(os.path.join(real_root, relpath))
    directory = os.path.dirname(path)
    if os.path.commonpath([real_root, path]) != real_root or os.path.realpath(directory) != directory:
        return None
    return path


def read_snippet(
    root: str,
    hit: SearchHit,
    *,
    expand: int = 0,
    max_lines: int | None = None,
    indexed: Indexed | None = None,
    focus: frozenset[str] = frozenset(),
    define: str = "",
    files: dict | None = None,
    anchor: int | None = None,
) -> Snippet | None:
    """Lines max(1, start - expand) .. min(last, end + expand) of the hit's file, at most
    `max_lines` of them: of the windows that hold a line of the hit, the first, or, given the
    query's terms (`focus`), the one holding the most of those terms; given the name a bare
    identifier asks for (`define`), only windows holding the hit's line that defines it, when it
    has one; given a line (`anchor`: the first a `-e` pattern matches), only windows holding it.
    None for a hit without a span."""
    if hit.start_line is None or hit.end_line is None:
        return None
    if files is not None:  # one read of each file for all of a command's hits (`files`: its cache)
        key = (root, hit.source_path)
        if key not in files:
            files[key] = _read_lines(root, hit.source_path)
        digest, lines = files[key]
    else:
        digest, lines = _read_lines(root, hit.source_path)
    if lines is None:
        return Snippet(None, None, "", stale=indexed is not None, missing=True)
    # By content: touched but identical is not stale, and an edit that kept the size and the
    # modification time (`cp -p`, `rsync -t`, two writes within a clock tick) is.
    stale = indexed is not None and digest != indexed[2]
    return _window(hit, lines, stale, expand, max_lines, focus, define, anchor)


def _read_lines(root: str, source_path: str, as_indexed: bool = True) -> tuple[str, list[str] | None]:
    """(content digest, lines split as the chunker split them) of a file as it is now; ("", None)
    when it cannot be read as one (gone, a link, no regular file, too large). Not `as_indexed`:
    a notebook's own lines (its JSON), not its cells' script view."""
    data, text = _read_text(root, source_path, as_indexed)
    if text is None:
        return "", None
    # Split exactly as the chunker did, so line numbers agree (a lone \r is not a line break).
    return content_digest(data), split_lines(text)


def changed_since_indexing(root: str, source_path: str, indexed: Indexed | None) -> bool:
    """Whether a file is not as indexed (`indexed`: its (size, mtime_ns, digest) then), by content
    as a snippet tells it: touched but identical is not changed, an edit keeping the size and the
    time is; a file gone or unreadable is."""
    data = _read_bytes(root, source_path)  # (the bytes alone: no text to decode)
    return indexed is None or data is None or content_digest(data) != indexed[2]


_UTF16_MARKS = (b"\xff\xfe", b"\xfe\xff")


def current_text(root: str, source_path: str, holding: str = "") -> str | None:
    """A file's text as it is now, decoded as indexing decodes it (a notebook's script view); None
    when it cannot be read, or when its bytes plainly do not hold the ASCII word `holding` (not
    decoded then: a search for a text reads many files that lack it)."""
    return _read_text(root, source_path, holding=holding)[1]


def _read_bytes(root: str, source_path: str) -> bytes | None:
    """A file's bytes as they are now; None when it cannot be read as one (gone, a link, no regular
    file, too large)."""
    path = inside(root, source_path)
    if path is None:
        return None
    try:
        # No links followed and regular files only: a path from a stale or tampered index, or a
        # link swapped in since indexing, must not read outside the root (or block on a FIFO).
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_BINARY", 0))  # Windows: no CRLF folding, no stop at ^Z
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if stat.S_ISREG(st.st_mode) and st.st_size <= MAX_READ_BYTES:
                return fh.read()
    except OSError:
        pass
    return None


def _read_text(root: str, source_path: str, as_indexed: bool = True,
               holding: str = "") -> tuple[bytes | None, str | None]:
    data = _read_bytes(root, source_path)
    if data is None:
        return None, None
    # (bytes only tell where the text is UTF-8: an ASCII word, no UTF-16 mark, no notebook's JSON)
    if holding and holding.isascii() and not data.startswith(_UTF16_MARKS) and not is_notebook(source_path) \
            and holding.encode("ascii") not in data:
        return data, None
    text = decode_shown(data)  # as when it was indexed
    if as_indexed and is_notebook(source_path):
        text = as_script(text)[0]
    return data, text


def file_lines(root: str, source_path: str) -> list[str] | None:
    """A file's own lines, decoded as indexing decodes it, without their endings; None when it
    cannot be read (an editor's line and column are counted in these)."""
    lines = _read_lines(root, source_path, as_indexed=False)[1]
    return None if lines is None else [split_ending(line)[0] for line in lines]


def _window(hit: SearchHit, lines: list[str], stale: bool, expand: int, max_lines: int | None,
            focus: frozenset[str], define: str, anchor: int | None = None) -> Snippet:
    start = max(1, hit.start_line - expand)
    end = min(len(lines), hit.end_line + expand)
    if max_lines is not None and end - start + 1 > max_lines and is_notebook(hit.source_path):
        return _notebook_window(hit, lines, stale, start, end, max_lines, focus, define, anchor)
    return _plain_window(hit, lines, stale, start, end, max_lines, focus, define, anchor)


def _plain_window(hit: SearchHit, lines: list[str], stale: bool, start: int, end: int, max_lines: int | None,
                  focus: frozenset[str], define: str, line: int | None = None) -> Snippet:
    if max_lines is not None and end - start + 1 > max_lines:
        # Only windows holding a line of the hit: the words may be likelier in the lines --expand
        # added around it (a docstring 25 lines above), which would show none of the hit.
        lo = max(start, hit.start_line - max_lines + 1)
        hi = min(hit.end_line, end - max_lines + 1)
        if hi < lo:  # the file shrank below the span (a stale hit): its last lines
            lo = hi = max(start, end - max_lines + 1)
        if line is not None and lo <= line <= hi + max_lines - 1:  # the line a -e pattern matched
            lo += best_window(lines[lo - 1 : hi + max_lines - 1], max_lines, focus, line - lo)
        elif focus:
            anchor = None
            if define:
                found = definition_offset(lines[hit.start_line - 1 : hit.end_line], define, hit.language)
                anchor = None if found is None else hit.start_line + found - lo
            lo += best_window(lines[lo - 1 : hi + max_lines - 1], max_lines, focus, anchor)
        start, end = lo, lo + max_lines - 1
    return _shown(lines, start, end, stale, focus)


def _notebook_window(hit: SearchHit, lines: list[str], stale: bool, start: int, end: int, max_lines: int,
                     focus: frozenset[str], define: str, anchor: int | None = None) -> Snippet:
    """A notebook's window of max_lines lines of its cells (its outputs and JSON are blank lines in
    the script view: 15 lines asked showed 11 blank and 4 of code), shown with the blank lines among
    them so that its lines stay the file's."""
    kept = [n for n in range(start, end + 1) if lines[n - 1].strip()]
    first = bisect.bisect_left(kept, hit.start_line)
    last = bisect.bisect_right(kept, hit.end_line) - 1
    if first > last:  # the hit holds no line of a cell
        return _shown(lines, start, min(end, start + max_lines - 1), stale, focus)
    if len(kept) <= max_lines:
        return _shown(lines, kept[0], kept[-1], stale, focus)
    packed = replace(hit, start_line=first + 1, end_line=last + 1)
    line = kept.index(anchor) + 1 if anchor in kept else None
    window = _plain_window(packed, [lines[n - 1] for n in kept], stale, 1, len(kept), max_lines, focus, define, line)
    return _shown(lines, kept[window.start_line - 1], kept[window.end_line - 1], stale, focus)


def shown_line(hit: SearchHit, lines: list[str], focus: frozenset[str], define: str = "") -> int | None:
    """The line a one-line snippet of the hit shows (read_snippet's choice, from lines read already)."""
    return _window(hit, lines, False, 0, 1, focus, define).start_line


def _shown(lines: list[str], start: int, end: int, stale: bool, focus: frozenset[str]) -> Snippet:
    """Lines start..end, each too long a line shortened."""
    if start > end:
        return Snippet(None, None, "", stale=stale)
    shown = lines[start - 1 : end]
    cut = 0
    for i, line in enumerate(shown):
        body, ending = split_ending(line)
        if len(body) > MAX_LINE_CHARS + LINE_SLACK:
            cut += 1
            shown[i] = shorten_line(body, focus) + ending
    return Snippet(start, end, "".join(shown), stale=stale, cut_lines=cut)


def shorten_line(body: str, focus: frozenset[str] = frozenset()) -> str:
    """A line longer than MAX_LINE_CHARS cut to that many characters: from its start, or, when the
    query's longest term (`focus`: an identifier it names whole, `sendheartbeat`, before its parts)
    first appears past that, around it (a match 180,000 characters into a minified line showed
    only the line's first thousand; centred on the first word holding any part, `send`, a query for
    `sendHeartbeat` showed a thousand characters without it)."""
    begin = 0
    if focus:
        low = body.lower()
        for term in sorted(focus, key=lambda t: (-len(t), t)):
            at = low.find(term)
            if at < 0:
                continue
            if at + len(term) > MAX_LINE_CHARS:  # else it is within the line's head
                begin = min(max(0, at - MAX_LINE_CHARS // 4), len(body) - MAX_LINE_CHARS)
            break
    head = f"… ({begin} characters before) " if begin else ""
    after = len(body) - begin - MAX_LINE_CHARS
    tail = f" … ({after} more characters)" if after > 0 else ""
    return f"{head}{body[begin : begin + MAX_LINE_CHARS]}{tail}"


def defined_name(query: str) -> str:
    """The name a bare identifier query asks for the definition of (`os.path.join`: `join`), else ""."""
    from .ranking import is_symbol_query, query_words

    return query_words(query)[-1] if is_symbol_query(query) else ""


def definition_offset(lines: list[str], name: str, language: str = "") -> int | None:
    """The offset of the first of `lines` that defines `name` (any case), by the lexical index's
    definition patterns, line by line; None when none does."""
    from .lexical.features import defined_names

    wanted = name.lower()
    for i, line in enumerate(lines):
        if wanted in line.lower() and any(n.lower() == wanted for n in defined_names(line, language)):
            return i
    return None


def best_window(lines: list[str], size: int, terms: frozenset[str], anchor: int | None = None) -> int:
    """Where in `lines` the `size` lines holding the most of `terms` start (their offset): most
    distinct terms, then most lines with one; the earliest such window, so a span whose terms are
    spread evenly still shows its beginning. A chunk of lines often opens with the end of the
    definition before the one that matched. With `anchor` (an offset into lines) only windows
    holding that line in their first quarter: a bare identifier's definition, followed by its body
    (the lines using the name most, `impl Send for JoinHandle` below the struct, or the doc comment
    above it, would otherwise win)."""
    from .text import term_counts

    if anchor is not None and 0 <= anchor < len(lines):
        first = max(0, min(anchor - size // 4, len(lines) - size))
        last = max(first, min(anchor, len(lines) - size))  # the latest start
        return first + best_window(lines[first : last + size], size, terms)

    found = [terms.intersection(term_counts(line)) for line in lines]
    held: dict[str, int] = {}  # term -> lines of the window holding it
    lines_with = 0
    best, best_score = 0, (-1, -1)
    for last, line_terms in enumerate(found):
        for term in line_terms:
            held[term] = held.get(term, 0) + 1
        lines_with += bool(line_terms)
        first = last - size + 1
        if first < 0:
            continue
        score = (sum(1 for n in held.values() if n), lines_with)
        if score > best_score:
            best, best_score = first, score
        for term in found[first]:  # the window moves on past its first line
            held[term] -= 1
        lines_with -= bool(found[first])
    return best
