"""How hits are shown: the token budget, and the text form for people (JSON is built in cli.py).

Text form, one block per hit:

    fastapi/routing.py:1005-1040  high  APIRouter  (lines 995-1050 shown)
       995│ ...
      1005│ class APIRouter(routing.Router):

with a blank line between hits when lines are shown. Colour only on a terminal (or with FORCE_COLOR), never with NO_COLOR.
"""
from __future__ import annotations

import os
from dataclasses import replace
from typing import Callable, Iterator, Optional

from .languages import KINDS
from .lazyre import LazyPattern
from .notebook import is_notebook
from .progress import redraws
from .read import line_texts, split_lines
from .records import SearchHit, Snippet

# -- the token budget ------------------------------------------------------------------------------

HIT_OVERHEAD = 24  # tokens for the fields around each hit

# What one hit costs as it will be printed: (hit, its snippet or None, whether that snippet is cut
# to fit, which the output says) -> tokens.
Cost = Callable[[SearchHit, Optional[Snippet], bool], int]


def estimate_tokens(text: str) -> int:
    # About four characters per token, plus the fields around each hit.
    return len(text) // 4 + HIT_OVERHEAD


def _estimate(hit: SearchHit, snippet: Snippet | None, cut: bool = False) -> int:
    return estimate_tokens(snippet.text if snippet else "")


def printed_tokens(text: str) -> int:
    """Tokens of text as printed: about four characters each, rounded up; but a character of the
    scripts written without spaces (CJK, from U+2E80 on) and beyond (emoji) at least one each, as
    models' tokenizers take them (a budget of 200 printed some 600 tokens of Chinese)."""
    if text.isascii():
        return -(-len(text) // 4)
    wide = len(_NARROW.sub("", text))
    return -(-(len(text) - wide) // 4) + wide


_NARROW = LazyPattern("[\x00-\u2e7f]+")


def _cut(hit: SearchHit, snippet: Snippet, budget: int, cost: Cost, focus: frozenset[str] = frozenset(),
         define: str = "", anchor: int | None = None) -> Snippet:
    """The snippet's lines that fit `budget` tokens as printed, from the hit's own first line (an
    expanded snippet's context before it goes first), or given the query's terms (`focus`) the
    hit's lines holding the most of them: a long function opens with its signature and docstring,
    and the lines that matched may come further down (the first line itself cut if need be); given
    `anchor` (the first line a `-e` pattern matched), lines holding it."""
    lines = split_lines(snippet.text)  # as the file's lines are numbered (a form feed is no break)
    if hit.start_line is not None and snippet.start_line is not None:
        skip = min(max(0, hit.start_line - snippet.start_line), max(0, len(lines) - 1))
        lines = lines[skip:]
        snippet = replace(snippet, start_line=snippet.start_line + skip)

    def trial(kept: list[str], at: int = 0) -> Snippet:
        """The snippet of `kept`, lines[at:] onwards."""
        if snippet.start_line is None:
            return replace(snippet, end_line=None, text="".join(kept))
        first = snippet.start_line + at
        return replace(snippet, start_line=first, end_line=first + len(kept) - 1, text="".join(kept))

    def fits(kept: list[str], at: int = 0) -> bool:
        return cost(hit, trial(kept, at), True) <= budget

    # The most lines that fit, by bisection: pricing renders the whole hit, so line by line would
    # cost the square of a long snippet's length (seconds for a file of 10,000 lines).
    low, high = 0, len(lines)
    while low < high:
        mid = (low + high + 1) // 2
        if fits(lines[:mid]):
            low = mid
        else:
            high = mid - 1
    at, kept = 0, lines[:low]
    offset = anchor - snippet.start_line if anchor is not None and snippet.start_line is not None else None
    if (focus or offset is not None) and 0 < low < len(lines):
        # The window's lines may be longer than the first ones: fewer of them, placed again.
        for size in range(low, max(0, low - 8), -1):
            at = _focus(hit, lines, size, focus, define, offset)
            if at == 0 or fits(lines[at : at + size], at):
                kept = lines[at : at + size] if at else kept
                break
        else:
            at = 0
    if not kept and lines:
        room = max(0, (budget - cost(hit, trial([]), True)) * 4)  # characters left for the first line
        while room and not fits([lines[0][:room]]):
            room = room * 3 // 4  # escaping (JSON) makes some characters cost more than one
        kept = [lines[0][:room]] if room else []
    if not kept:  # no room for a single character: nothing shown, and no lines claimed
        return replace(snippet, start_line=None, end_line=None, text="")
    return trial(kept, at)


def _focus(hit: SearchHit, lines: list[str], size: int, focus: frozenset[str], define: str = "",
           offset: int | None = None) -> int:
    """Where the `size` of the hit's own lines (later ones are an expanded snippet's context)
    holding the most of the focus terms start (and the line defining `define`, when one does, or
    the line at `offset`, a pattern's match); 0 when the first ones hold as many."""
    from .snippets import best_window, definition_offset

    own = len(lines)
    if hit.start_line is not None and hit.end_line is not None:
        own = max(1, min(own, hit.end_line - hit.start_line + 1))
    if size >= own:
        return 0
    if offset is not None and 0 <= offset < own:
        anchor = offset
    else:
        anchor = definition_offset(lines[:own], define, hit.language) if define else None
    return best_window(lines[:own], size, focus, anchor)


def within_budget(hits: list[SearchHit], snippets: dict, budget: int, cost: Cost | None = None,
                  focus: frozenset[str] = frozenset(), define: str = "",
                  anchors: dict | None = None) -> tuple[list[SearchHit], set[str]]:
    """The hits that fit `budget` tokens, in rank order, and the docids whose snippet was cut.
    `cost` prices a hit as it will be printed (`query` passes its JSON's or its text's); the default
    is four characters a token of snippet plus HIT_OVERHEAD. Whole hits while they fit; the first
    that does not is cut to the room left (its snippet, in `snippets`, in place: from the hit's own
    first line, or given `focus`, the query's terms, its lines holding the most of them, and the line
    defining `define` when it has one, or the line `anchors` gives its docid) and ends
    the answer, so the budget is spent on the best hits, not left half empty by one long one. A
    later hit of which not one line fits is left out; the first hit always comes back, so a small
    budget still gets the best answer."""
    cost = cost or _estimate
    out, used = [], 0
    for hit in hits:
        snippet = snippets.get(hit.docid)
        price = cost(hit, snippet, False)
        if used + price > budget:
            cut = _cut(hit, snippet, budget - used, cost, focus, define, (anchors or {}).get(hit.docid)) \
                if snippet is not None else None
            if not out or (cut is not None and cut.text):
                if cut is not None:
                    snippets[hit.docid] = cut
                return out + [hit], {hit.docid}
            break
        used += price
        out.append(hit)
    return out, set()


# -- text for people ------------------------------------------------------------------------------


def use_colour(stream) -> bool:
    """Colour when writing to a terminal, unless NO_COLOR is set (https://no-color.org) or the
    terminal says it has none (TERM=dumb: an editor's shell buffer, showing escapes as text);
    FORCE_COLOR (https://force-color.org) colours a pipe too (`| less -R`), NO_COLOR still winning
    (as Python's own colours decide)."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return redraws(stream)  # a terminal that is not TERM=dumb, as for progress lines


_STYLES = {"path": "35;1", "lines": "32", "high": "32", "medium": "33", "low": "2", "note": "2", "context": "36"}


class _Paint:
    def __init__(self, colour: bool):
        self.colour = colour

    def __call__(self, style: str, text: str) -> str:
        if not self.colour or not text:
            return text
        return f"\x1b[{_STYLES[style]}m{text}\x1b[0m"


def counted(n: int, noun: str) -> str:
    """`1 file`, `2 files`, `4,547,294 bytes`: a count with its noun, its thousands separated (a
    status line of seven-digit counts was read digit by digit)."""
    return f"{n} {noun}" if n == 1 else f"{n:,} {noun}s"


def shown_path(path: str, *, escaped: bool = False) -> str:
    """A path as text output prints it: control characters and backslashes escaped (`new\\nline.py`),
    so every hit stays on one line for a reader that splits on newlines, and no two paths print
    alike. JSON carries the exact path. On Windows a backslash is the separator (no name holds
    one, nor a control character): left as it is there, not doubled. `escaped`: the path already
    writes its undecodable bytes as `\\xff` (the walk's record of a name it could not decode), so
    its backslashes are not doubled again."""
    if path.isprintable() and ("\\" not in path or os.sep == "\\" or escaped):
        return path
    # Backslashes too: a name holding a real backslash and `n` never prints as one holding a newline.
    # A byte a name holds that is not UTF-8 (a lone surrogate, as the file system gives it) as that
    # byte, `\xff`, not as Python's `\udcff`.
    return "".join("\\\\" if c == "\\" and not escaped else c if c.isprintable() or c == " "
                   else f"\\x{ord(c) - 0xDC00:02x}" if "\udc80" <= c <= "\udcff"
                   else c.encode("unicode_escape").decode("ascii") for c in path)


_SHELL_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def shell_word(text: str) -> str:
    """A path or glob quoted for a shell command a message suggests, on one line: shlex.quote's
    form, or when it holds a control character or a byte that is not UTF-8 (a lone surrogate from
    the file system), bash's `$'...'` with those escaped (`\\n`, `\\xff`). shlex.quote put a raw
    newline inside its quotes: a note or a `status` row broke in two. A single quote with nothing a
    shell reads inside double quotes is in those (`"it's ("`, not `'it'"'"'s ('`)."""
    import shlex

    if text.isprintable():
        if "'" in text and not any(c in text for c in '"$`\\!'):
            return f'"{text}"'
        return shlex.quote(text)
    out = []
    for c in text:
        if c in "\\'":
            out.append("\\" + c)
        elif c.isprintable() or c == " ":
            out.append(c)
        elif c in _SHELL_ESCAPES:
            out.append(_SHELL_ESCAPES[c])
        else:
            try:
                data = c.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:  # a surrogate no file name decodes to
                data = c.encode("utf-8", "surrogatepass")
            out.append("".join(f"\\x{b:02x}" for b in data))
    return "$'" + "".join(out) + "'"


def _header(hit: SearchHit, snippet: Snippet | None, truncated: bool, paint: _Paint) -> str:
    path = shown_path(hit.source_path)
    span = f"{path}:{hit.start_line}-{hit.end_line}" if hit.start_line else path
    parts = [paint("path", span)]
    if hit.confidence:
        parts.append(paint(hit.confidence, hit.confidence))
    if hit.context and hit.kind not in KINDS and hit.context != hit.source_path:
        # What the hit is (`APIRouter.add_api_route`, `Tutorial > Security`), as JSON's `context`
        # says it: without it a person must open the file to see what was found. Only a chunker's
        # scope path (its hits have a chunk kind, not the file's): lexical+ctx's contexts are prose.
        parts.append(paint("context", _visible(hit.context).replace("\t", " ")))
    if hit.extra.get("provenance"):
        # `--retriever all`: which retrievers found it (the level, when shown, is the lead's).
        parts.append(paint("note", "found by " + ", ".join(hit.extra["provenance"])))
    notes = []
    # Lines around the hit (--expand) are named in the header; a snippet cut short shows its numbers.
    if snippet is not None and snippet.start_line is not None and hit.start_line is not None and (
        snippet.start_line < hit.start_line or snippet.end_line > hit.end_line
    ):
        notes.append(f"lines {snippet.start_line}-{snippet.end_line} shown")
    if truncated:
        notes.append("cut to fit --max-tokens")
    if snippet is not None and snippet.cut_lines:
        notes.append("long lines shortened")
    if snippet is not None and snippet.stale:
        notes.append("file changed since indexing, not readable now" if snippet.missing else "file changed since indexing")
    if notes:
        parts.append(paint("note", "(" + "; ".join(notes) + ")"))
    return "  ".join(parts)


def _gutter(mark: str = "│", plain: str = "|") -> str:
    """The bar between a line's number and its text: `|` where stdout cannot write `│` (latin-1);
    the same for another mark."""
    import sys

    try:
        mark.encode(getattr(sys.stdout, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return plain
    return mark


def _visible(line: str) -> str:
    """A source line as the terminal gets it: control and format characters (an escape sequence in
    a test fixture, a lone CR, a bidirectional override) shown as escapes, tabs kept. Printed raw
    they could recolour or clear the screen; and click strips escape sequences from output that is
    not a terminal, so a pipe got other text than a terminal. JSON carries the exact text."""
    if line.isprintable():
        return line
    import unicodedata

    return "".join(c.encode("unicode_escape").decode("ascii")
                   if c != "\t" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") else c for c in line)


def _numbered(snippet: Snippet, paint: _Paint, gaps: bool = False) -> Iterator[str]:
    """The snippet's lines with their numbers; with `gaps` (a notebook's: its outputs and JSON are
    blank lines in the script view) a run of blank lines is one `⋮` line, its numbers skipped."""
    width = max(6, len(str(snippet.end_line)) + 2)
    gutter, gap = _gutter(), _gutter("⋮", ":")
    blank = 0
    for number, line in enumerate(line_texts(snippet.text), start=snippet.start_line):
        if gaps and not line.strip():
            blank += 1
            continue
        if blank:
            if blank > 1:
                yield f"{paint('lines', f'{gap:>{width}}')}"
            else:  # one blank line is shown as it is
                yield f"{paint('lines', f'{number - 1:>{width}}')}{gutter}"
            blank = 0
        yield f"{paint('lines', f'{number:>{width}}')}{gutter} {_visible(line)}"



_WORD = LazyPattern(r"\w+")


def _byte_column(line: str, at: int) -> int:
    """The 1-based byte column, in UTF-8, of the line's character `at`: as vim counts its decoded buffer
    (and ripgrep a UTF-8 file; a Latin-1 file it counts in its raw bytes)."""
    return len(line[:at].encode("utf-8", "surrogatepass")) + 1


def _term_column(line: str, terms: frozenset[str]) -> int | None:
    """The 1-based byte column (as ripgrep's --vimgrep counts, in UTF-8) of the line's first word
    holding one of the query's terms, else of the first term found inside a word (a notebook's
    JSON line writes `\nwalrusjam`); None when none is there."""
    from .text import tokenize

    for m in _WORD.finditer(line):
        if terms.intersection(tokenize(m.group())):
            return _byte_column(line, m.start())
    low = line.lower()
    found = [at for at in (low.find(t) for t in terms if len(t) > 2) if at >= 0]
    return _byte_column(line, min(found)) if found else None


def _match_column(own: str, cell: str | None, pattern) -> int | None:
    """The 1-based byte column of the pattern's first match in the file's own line, None when it
    has none; a notebook's line is matched in its cell's text (as indexed), its column in the JSON
    line holding it (its start when escapes moved it)."""
    if cell is not None and pattern.search(cell) is None:
        return None
    found = pattern.search(own)
    if found is None:
        return None if cell is None else 1
    return _byte_column(own, found.start())


def vimgrep_lines(hits: list[SearchHit], snippets: dict, terms: frozenset[str], root: str,
                  pattern=None, truncated: set[str] = frozenset(), matched: dict | None = None,
                  define: str = "") -> Iterator[str]:
    """`path:line:column:text` for each hit (vim's default errorformat, ripgrep's --vimgrep), its
    path from the current directory (where an editor opens it): the lines of its snippet holding a
    word of the query (given a `-e` pattern, those it matches, at the match), else its first; its
    first line with no text when there is no snippet (a file gone since indexing). The column is
    counted in the file's own line: a notebook's snippet shows its cells' text, not the JSON line
    holding it, and a long line is shown shortened. A line --max-tokens cut (`truncated` hits) shows
    the part its column points at, marked `…` where cut; a hit cut to no line at all points at the
    line a larger budget shows (`define`: the name a bare identifier asks for, whose definition
    that is). `matched`: {docid: the lines of the hit the pattern matched}, each shown (as rg
    --vimgrep shows every match; one line a hit hid a function's other calls), when the hit's
    file still has them."""
    files: dict[str, list[str] | None] = {}
    for hit in hits:
        path = shown_path(path_from_here(root, hit.source_path))
        # (a hit --max-tokens cut shows its cut snippet's lines)
        rows = list(_matched_rows(path, root, hit, matched.get(hit.docid, ()), pattern, files)) \
            if matched and hit.docid not in truncated else []
        if rows:
            yield from rows
            continue
        snippet = snippets.get(hit.docid)
        if snippet is None or not snippet.text or snippet.start_line is None:
            yield _bare_row(path, root, hit, terms, pattern, files, hit.docid in truncated, define)
            continue
        notebook = is_notebook(hit.source_path)
        cut = hit.docid in truncated
        raw = _file_lines(root, hit.source_path, files) if notebook or snippet.cut_lines or cut else None
        shown = []
        for n, line in enumerate(line_texts(snippet.text), start=snippet.start_line):
            own = raw[n - 1] if raw is not None and 0 < n <= len(raw) else line
            col = _term_column(own, terms) if pattern is None else _match_column(own, line if notebook else None,
                                                                                  pattern)
            if cut and not notebook and len(line) < len(own) and not snippet.cut_lines:
                line = _cut_around(own, len(line), col)  # (its column is still the file line's)
            shown.append((n, line, col))
        for n, line, col in [entry for entry in shown if entry[2] is not None] or [(*shown[0][:2], 1)]:
            yield f"{path}:{n}:{col}:{_visible(line)}"


def _cut_around(own: str, width: int, col: int | None) -> str:
    """A file line --max-tokens cut to `width` characters, marked `…`: its head, or, when what the
    row points at lies past the head, as many characters around it (a cut row showed `HTTP server …`
    for a column pointing at `retry` further on)."""
    if width <= 0:
        return "…"
    if col is not None:
        at = len(own.encode("utf-8", "surrogatepass")[: col - 1].decode("utf-8", "surrogatepass"))
        word = _WORD.match(own, at)
        end = word.end() if word else at + 1
        if end > width:
            # A third of the room before it, less if the word would not fit whole; never past it.
            start = max(0, min(at, max(end - width, at - width // 3), len(own) - width))
            return ("… " if start else "") + own[start:start + width] + (" …" if start + width < len(own) else "")
    return own[:width] + " …"


def _bare_row(path: str, root: str, hit: SearchHit, terms: frozenset[str], pattern, files: dict, cut: bool,
              define: str = "") -> str:
    """A hit's row without its lines: at its first line, or, when --max-tokens cut them all
    (`cut`), at the line a larger budget shows (`:1:1:` and no text pointed past the match, as if
    nothing was cut): the first a pattern matches, else the one-line snippet's (the line holding
    the most of the query's words; a bare identifier's definition), its text `…`."""
    if cut and hit.start_line and not is_notebook(hit.source_path):
        raw = _file_lines(root, hit.source_path, files) or []
        rows = range(hit.start_line, min(hit.end_line, len(raw)) + 1)
        if pattern is None:
            from .snippets import shown_line

            line = shown_line(hit, raw, terms, define)  # (from the lines read once, not the file again)
            rows = [line] if line in rows else rows
        for n in rows:
            col = _term_column(raw[n - 1], terms) if pattern is None else _match_column(raw[n - 1], None, pattern)
            if col is not None:
                return f"{path}:{n}:{col}:…"
    return f"{path}:{hit.start_line}:1:" + ("…" if cut else "")


def _matched_rows(path: str, root: str, hit: SearchHit, lines, pattern, files: dict) -> Iterator[str]:
    """`path:line:column:text` for each of `lines` the pattern matches in the hit's file as it is
    now (a notebook's lines are its JSON's: its snippet path shows them as cells)."""
    if not lines or is_notebook(hit.source_path):
        return
    raw = _file_lines(root, hit.source_path, files)
    if raw is None:
        return
    from .snippets import LINE_SLACK, MAX_LINE_CHARS, shorten_line

    for n in lines:
        own = raw[n - 1] if 0 < n <= len(raw) else ""
        found = pattern.search(own)
        if found is None:  # (the file changed since it was matched)
            continue
        column = _byte_column(own, found.start())
        if len(own) > MAX_LINE_CHARS + LINE_SLACK:  # around its match
            own = shorten_line(own, frozenset({found.group(0).lower()}))
        yield f"{path}:{n}:{column}:{_visible(own)}"


def path_from_here(root: str, path: str) -> str:
    """A hit's path as a tool run here opens it (rg's -l and --vimgrep print them so): from the
    current directory when it is inside the root, else absolute (`../../x` from elsewhere)."""
    full = os.path.join(root, path)
    try:
        here = os.getcwd()
    except OSError:  # (the current directory was removed)
        return full
    # The root as given, or as resolved: the current directory is the resolved one (a root given
    # through a link, with the shell inside it, printed every path absolute).
    for base in dict.fromkeys((root, os.path.realpath(root))):
        if os.path.normcase(here) == os.path.normcase(base) or \
                os.path.normcase(here).startswith(os.path.normcase(base.rstrip(os.sep)) + os.sep):
            return os.path.relpath(os.path.join(base, path), here)
    return full


def _file_lines(root: str, path: str, files: dict) -> list[str] | None:
    """A file's own lines, decoded as indexing decodes it (UTF-16, Latin-1), read once per file."""
    if path not in files:
        from .snippets import file_lines

        files[path] = file_lines(root, path)
    return files[path]


def text_lines(hits: list[SearchHit], snippets: dict | None, truncated: set[str] = frozenset(),
               colour: bool = False) -> Iterator[str]:
    """The text form of the hits, line by line (without newlines)."""
    paint = _Paint(colour)
    for n, hit in enumerate(hits):
        snippet = snippets.get(hit.docid) if snippets is not None else None
        if snippets is not None and n:
            yield ""  # lines are shown: a blank line between hits
        yield _header(hit, snippet, hit.docid in truncated, paint)
        if snippet is not None and snippet.text and snippet.start_line is not None:
            yield from _numbered(snippet, paint, gaps=is_notebook(hit.source_path))
