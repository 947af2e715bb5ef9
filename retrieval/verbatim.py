"""A query that is text to find word for word (a pasted signature, message or line of code): the hits
whose lines hold it come first, as grep would have found them. The ranking weighs the words, and a
line holding all of them in order can lose to a chunk repeating some of them (alamofire's protocol
requirement `func retry(_ request: Request, for session: Session, dueTo error: any Error,
completion:` was not among the first 30 hits for itself)."""
from __future__ import annotations

import itertools
import re
import textwrap
from dataclasses import replace
from typing import Callable

DEPTH = 30  # files whose hits are looked at for the query's text (or the file a query names)
WINDOW = 100  # among the first this many hits: a file's further chunks count at half their score,
# and the one holding a message was 9th, 18th, 143rd behind its file's first
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+")
_QUOTES = "\"'`\u201c\u2018"
_LOOSE_APOSTROPHE = re.compile(r"(?<!\w)['\u2019]|['\u2019](?!\w)")
_CURLY = {"\u201c": "\u201d", "\u2018": "\u2019"}  # typographic quotes, as a chat or an editor types them
# A question's first words: no line says it (reading files for one costs a question its speed)
_ASKING = frozenset({"how", "what", "where", "why", "which", "when", "who", "whose", "does", "do", "is", "are",
                     "can", "should", "find", "show", "list", "explain"})
# What a pasted line, message or signature has and a typed question does not: a capital letter or
# code's punctuation (a question in lower case is left to the ranking: reading the hits' files
# cost each such query about as much as the search)
_PASTED = re.compile(r"[A-Z()\[\]{}<>:;=,.'\"`/\\|!?%$#@*&+^~]")


def verbatim_text(query: str) -> str:
    """The query as text a file may hold: spaces folded, quotes around it dropped; "" for a query
    of several lines, fewer than three words apart or under 12 or over 300 characters (a name,
    `Ecto.Repo.insert` too, a short phrase, a pasted report: other signals find those), a question
    (`how does ...`) or lower-case words alone, unless quoted: quotes around it say it is text to
    find as written (`"not found in resource path"`, a message pandoc builds around a file name)."""
    text = query.strip()
    closing = _CURLY.get(text[:1], text[:1])
    inner = text[1:-1]
    # (An apostrophe inside a word, `it's`, does not end single quotes.)
    quoted = len(text) >= 2 and text[-1] == closing and text[0] in _QUOTES \
        and (text[0] == closing or text[0] not in inner) \
        and (closing not in inner or (closing in "'\u2019" and not _LOOSE_APOSTROPHE.search(inner)))
    if quoted:
        text = text[1:-1].strip()
    if "\n" in text:
        return ""
    text = _SPACE.sub(" ", text)
    words = _WORD.findall(text)
    if not 12 <= len(text) <= 300 or text.count(" ") < 2 or not words:
        return ""
    if not quoted and (words[0].lower() in _ASKING or not _PASTED.search(text)):
        return ""
    return text


def texts_to_find(query: str) -> list[str]:
    """The texts a query asks to find word for word, in the order to look for them: itself
    (verbatim_text), else a pasted output's lines (verbatim_lines); [] for neither."""
    text = verbatim_text(query)
    return [text] if text else verbatim_lines(query)


MAX_LINES = 4  # of a pasted output of several lines, those looked for (a trace's lines are paths)
MAX_OUTPUT_WORDS = 40  # a text of several lines and this many words is a report (RankingConfig.long_query_words)


def verbatim_lines(query: str) -> list[str]:
    """The lines of a pasted output of several lines that are text to find (verbatim_text), in their
    order, at most MAX_LINES; [] for one line or a report. Only lines at the margin: a stack trace
    indents its frames and the code lines it quotes (a caller's line, not what went wrong), and
    cobra's `Error: unknown command "sever" for "myapp"` over its help, or a Rust panic's
    `called Result::unwrap() on an Err value: ...` under its header, was looked for nowhere."""
    if "\n" not in query.strip() or len(_WORD.findall(query)) >= MAX_OUTPUT_WORDS:
        return []
    # (An output pasted indented as a whole is at its margin once its common indentation goes.)
    found = [verbatim_text(line) for line in textwrap.dedent(query.expandtabs(4)).strip("\n").splitlines()
             if line[:1] not in ("", " ") and not _TRACE_HEADER.match(line)]
    return [text for text in found if text][:MAX_LINES]


# A runtime's lines around the message, which a library's docs quote too (requests' docstrings quote
# Python's `Traceback (most recent call last):` and came before the code raising the message).
# (Not a Rust panic's header: before Rust 1.73 it held the message, `panicked at 'msg', src/x.rs:4:5`.)
_TRACE_HEADER = re.compile(r"Traceback \(most recent call last\)|During handling of the above exception"
                           r"|The above exception was the direct cause|goroutine \d+ \[|Stack ?trace:"
                           r"|Exception in thread \S+$")


def _as_written(text: str) -> re.Pattern:
    """`text` (verbatim_text) as a file may hold it: its words in its letter case, any spacing."""
    return re.compile(r"\s+".join(map(re.escape, text.split())))


def holding_first(hits: list, text: str, read: Callable[[str, str], str | None],
                  liftable: Callable[[object], bool] = lambda hit: True) -> list | None:
    """`hits` with those holding `text` (verbatim_text; in its letter case, any spacing, across
    lines too: a signature the file wraps) first, where a match starts within their span, in their
    order, ranks renumbered from 1; None when none holds it. `read(path, word)`: a file's text, or
    None (also when it lacks `word`, the longest of the text's: most files do). Only `liftable`
    hits are lifted; the others holding it keep their place: a test or a guide quotes a message
    as printed, which the code raising it builds from pieces (`"Self referencing loop detected" +
    " for property '{0}'"`), and two tests and a guide came before it. A lifted hit's score is
    raised to the first other's, so that scores still fall with rank."""
    longest = max(text.split(), key=len)
    pattern = _as_written(text)
    starts: dict[str, list[int]] = {}  # by file, the lines where a match starts
    holding, others = [], []
    for hit in hits:
        path = hit.source_path
        if not liftable(hit):  # (its file is not read for it)
            others.append(hit)
            continue
        if path not in starts:
            body = read(path, longest)
            found = starts[path] = []
            if body is not None and longest in body:
                line, at = 1, 0
                for match in pattern.finditer(body):  # (lines counted on from the last match: a
                    line += body.count("\n", at, match.start())  # file of thousands is one pass)
                    at = match.start()
                    found.append(line)
        first, last = hit.start_line or 1, hit.end_line or first
        held = starts[path] and any(first <= line <= last for line in starts[path])
        (holding if held else others).append(hit)
    return lifted(holding, others)


def lifted(first: list, others: list) -> list | None:
    """`first` before `others`, each in its order, ranks renumbered from 1, the score and confidence
    of each of `first` raised to the first other's, so that both still fall with rank (a lifted
    `low` above a `high` read as the weaker answer); None when `first` is empty."""
    if not first:
        return None
    from .confidence import LEVELS

    if not others:
        return [replace(hit, rank=n) for n, hit in enumerate(first, start=1)]
    floor, level = others[0].score, others[0].confidence
    # Each lifted hit scores as it did, or as the first other if that is more, and no more than the
    # one before it (a lifted hit's own score could top the one chosen before it).
    scores = itertools.accumulate((max(hit.score, floor) for hit in first), min)

    def raised(hit, score):
        confidence = hit.confidence
        if confidence in LEVELS and level in LEVELS and LEVELS.index(level) > LEVELS.index(confidence):
            confidence = level
        return replace(hit, score=score, confidence=confidence)

    return [replace(hit, rank=n) for n, hit in enumerate([*map(raised, first, scores), *others], start=1)]


# A format string's placeholders, which the message it prints has filled in: printf's (`%s`, `%-8.3f`,
# `%(name)s`, Java's and PHP's `%1$s`, Go's `%v` and `%[1]s`), Ruby's and Elixir's `%{count}` and
# `%<n>d`, braces (Python's `{url!r}`, C#'s `{0}`, Rust's `{:?}`, SLF4J's `{}`), interpolation
# (`${x}`, Ruby's `#{x}`, Swift's `\(x)`, Kotlin's and PHP's `$name`).
_PLACEHOLDER = re.compile(
    r"%(?:\{[^{}\n]*\}|<\w+>[-+#0 ]*\d*(?:\.\d+)?[a-zA-Z]|(?:\([^)\s]*\)|\[\d+\]|\d+\$)?[-+#0]*(?:\d+|\*)?"
    r"(?:\.(?:\d+|\*))?[a-zA-Z])|[$#]?\{[^{}\n]*\}|\\\([^()\n]*\)|\$[A-Za-z_]\w*")
# A string literal within a line, in double, single or back quotes, its escapes as written.
# (At most 500 characters: an unclosed line of escaped quotes took 5 s at 16,000.)
_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.){0,500}"|\'(?:[^\'\\\n]|\\.){0,500}\'|`(?:[^`\\\n]|\\.){0,500}`')
# Between two literals of one message: nothing but a concatenation (Python's implicit one over lines
# too, the next literal's prefix after it), or an expression between two operators (`'timeout of '
# + config.timeout + 'ms exceeded'`, Elixir's `<>`, PHP's `.`, Lua's `..`), read as a placeholder.
# (Only gaps of MAX_GAP characters or fewer are read: 100,000 spaces between two literals took minutes.)
_JOINED = re.compile(r"\s*(?:(?:\+|<>|\.\.?)\s*)?[fFrRbBuU$@]{0,2}")
_JOINED_AROUND = re.compile(r"\s*(?:\+|<>|\.\.?)\s*[^\"'`;\n{}]{1,80}?\s*(?:\+|<>|\.\.?)\s*[fFrRbBuU$@]{0,2}")
MAX_GAP = 120
_COMMENT_LINE = re.compile(r"\s*(?://|/\*|\*(?:\s|/|$)|#\s|--|;)")  # (a literal in a comment or a doc is no message)
_ESCAPED = re.compile(r"\\(.)")
_LETTERS = re.compile(r"[^\W\d_]{2,}")
_LETTERED = re.compile(r"[^\W\d_]")
# What a format string must print of its own to be taken for a message's (`No such option: {name}`
# prints 13 characters in 3 words): fewer, and `Error: %s` would be every error's. Not all in one
# piece without spaces either: a path (`github.com/gin-gonic/gin/binding`) or a date pattern is a
# value the message quotes, no message.
MIN_TEMPLATE_CHARS = 12
MIN_TEMPLATE_WORDS = 3
MAX_PLACEHOLDERS = 8  # (more: a table of values, no message)
MAX_JOINED = 16  # literals joined into one message at most (more are a table of data, no message)
MAX_TEMPLATE_CHARS = 500_000  # a longer file's text is looked for word for word only


def _unescaped(part: str) -> str:
    """A literal's piece as printed: escapes read (`\\n` a space), `%%` a `%`, spaces folded."""
    return _SPACE.sub(" ", _ESCAPED.sub(lambda m: " " if m.group(1) in "nrt" else m.group(1), part)).replace("%%", "%")


def _joined_literals(body: str):
    """(offset, pieces) of each message `body` builds: a literal, or literals joined by
    concatenation, split at their placeholders (an expression joined between two is one); and each
    literal of such a message alone too (a user pastes one sentence of a long deprecation notice)."""
    run: list[list[str]] = []  # the message being joined: each piece's fragments (joined once, at the end)
    alone: list[tuple[int, list[str]]] = []  # its literals', each apart
    first = last_end = -1
    for match in _LITERAL.finditer(body):
        parts = _PLACEHOLDER.split(match.group()[1:-1])
        if run:
            gap = body[last_end:match.start()] if match.start() - last_end <= MAX_GAP else "\0"
            if len(alone) < MAX_JOINED and _JOINED.fullmatch(gap):
                run[-1].append(parts[0])
                run.extend([part] for part in parts[1:])
            elif len(alone) < MAX_JOINED and _JOINED_AROUND.fullmatch(gap):
                run.extend([part] for part in parts)
            else:
                yield first, ["".join(piece) for piece in run]
                if len(alone) > 1:
                    yield from alone
                run, alone = [], []
        if not run:
            first, run = match.start(), [[part] for part in parts]
        alone.append((match.start(), parts))
        last_end = match.end()
    if run:
        yield first, ["".join(piece) for piece in run]
        if len(alone) > 1:
            yield from alone


def format_strings(body: str) -> list[tuple[int, tuple[str, ...], int]]:
    """(line, printed pieces, characters printed) of the messages `body` builds (_joined_literals)
    that print enough of their own to be told apart (MIN_TEMPLATE_CHARS, MIN_TEMPLATE_WORDS), not
    in a comment; none for a file over MAX_TEMPLATE_CHARS."""
    if len(body) > MAX_TEMPLATE_CHARS:
        return []
    out = []
    line, at = 1, 0
    for offset, parts in _joined_literals(body):
        if len(parts) > MAX_PLACEHOLDERS + 1:
            continue
        pieces = [_unescaped(part) for part in parts]
        pieces[0], pieces[-1] = pieces[0].lstrip(), pieces[-1].rstrip()
        printed = "".join(pieces)
        size = len(printed.replace(" ", ""))
        if size < MIN_TEMPLATE_CHARS or len(_LETTERS.findall(printed)) < MIN_TEMPLATE_WORDS \
                or sum(1 for word in printed.split() if _LETTERED.search(word)) < 2 \
                or _COMMENT_LINE.match(body, body.rfind("\n", 0, offset) + 1):
            continue
        line += body.count("\n", at, offset)
        at = offset
        out.append((line, tuple(pieces), size))
    return out


def _in_order(pieces, text: str) -> tuple[int, int, list[tuple[int, int]]] | None:
    """(start, end, the spans between them) of `pieces` found one after another in `text`, leftmost
    (what a lazy `a(.*?)b(.*?)c` finds, in linear time: with eight placeholders the pattern took 50 s
    to fail on a text of 170 characters), else None."""
    start = pos = text.find(pieces[0])
    if start < 0:
        return None
    pos += len(pieces[0])
    gaps = []
    for piece in pieces[1:]:
        found = text.find(piece, pos)
        if found < 0:
            return None
        gaps.append((pos, found))
        pos = found + len(piece)
    return start, pos, gaps


def template_matches(strings, text: str) -> dict[int, tuple]:
    """{line: (characters it prints, (start, end) of the text its pieces matched, those of the values
    it may wrap a message in)} of the format strings (format_strings's) that `text` (verbatim_text)
    holds with their placeholders filled in (`Invalid URL {url!r}: No scheme supplied.` in `Invalid
    URL 'x.com': No scheme supplied. Perhaps...`): a pasted message was printed from a format
    string, and only its words were left to find the code that builds it. Of a line's, the one
    printing most."""
    found: dict[int, tuple] = {}
    for line, pieces, size in strings:
        if size <= found.get(line, (0,))[0]:
            continue
        # (A placeholder first or last takes what is before or after the text the pieces match.)
        lead, trail = not pieces[0], len(pieces) > 1 and not pieces[-1]
        inner = pieces[lead : len(pieces) - trail]
        match = _in_order(inner, text)
        if match is None:
            continue
        start, end, gaps = match
        # Where its values are: those between its pieces, and after the last one a message it ends
        # with (`{prefix}: {message}`); one before its first piece is a value it names (`{value!r}
        # is not a valid integer.`), no message it wraps.
        found[line] = (size, (start, end), tuple(gaps + [(end, len(text))] * trail))
    return found


def template_lines(body: str, text: str) -> dict[int, int]:
    """{line: characters it prints} of the format strings of `body` that printed `text`."""
    return {line: found[0] for line, found in template_matches(format_strings(body), text).items()}


def line_holding(body: str, texts) -> int | None:
    """The line of `body` (1-based) the first of `texts` (texts_to_find's) it holds is on: where it
    starts word for word, else the one holding the format string printing most of it
    (template_matches); None when it holds none. (Its format strings are read once for all.)"""
    strings = None
    for text in texts:
        match = _as_written(text).search(body)
        if match:
            return body.count("\n", 0, match.start()) + 1
        if strings is None:
            strings = format_strings(body)
        lines = {line: found[0] for line, found in template_matches(strings, text).items()}
        if lines:
            return max(lines, key=lambda line: (lines[line], -line))
    return None


def _wrappers(matches) -> set:
    """The matches (template_matches's) one of whose values is mostly what another format string
    printed: click's `Invalid value for {param_hint}: {message}` around `{value!r} is not a valid
    integer.`, whose own line says what went wrong. (A detail a message appends, jackson's `(for
    POJO property '%s')` after `Could not resolve type id '%s' as a subtype of %s`, is less of its
    value; a literal with no placeholder inside one is a value the message quotes, jackson's date
    patterns in its `Cannot parse date` message.)"""
    spans = {found[1] for found in matches if found[2]}
    return {found for found in matches
            if any(a <= s and e <= b and (s, e) != (a, b) and 2 * (e - s) >= b - a
                   for a, b in found[2] for s, e in spans)}


def template_first(hits: list, text: str, strings: Callable[[str], list],
                   liftable: Callable[[object], bool], more: Callable[[frozenset], list]) -> list | None:
    """`hits` with those holding a format string that printed `text` (template_matches) first: one
    printing a message inside another's placeholder before that one, then the one printing most of
    it, then in their order; None when no liftable hit's file holds one. `strings(path)`: a file's
    format_strings ([] when it cannot be read); `more(paths)`: those files' hits, looked for when
    such a line is in no hit here (a file's further chunks count at half their score, and jackson's
    `Cannot deserialize value of type %s from String %s` was 152nd behind its `from number %s`)."""
    found: dict[str, dict[int, tuple]] = {}
    for hit in hits:
        path = hit.source_path
        if path not in found and liftable(hit):
            found[path] = template_matches(strings(path), text)
    found = {path: lines for path, lines in found.items() if lines}
    if not found:
        return None
    wrapping = _wrappers([match for lines in found.values() for match in lines.values()])

    def span(hit) -> range:
        first = hit.start_line or 1
        return range(first, (hit.end_line or first) + 1)

    def held(hit) -> tuple[bool, int]:
        """(whether it holds an inner message, characters printed) of its best format string."""
        lines = found.get(hit.source_path) or {}
        return max(((match not in wrapping, match[0]) for line, match in lines.items() if line in span(hit)),
                   default=(False, 0))

    order = {hit.docid: n for n, hit in enumerate(hits)}
    holding = [hit for hit in hits if liftable(hit) and held(hit)[1]]
    unseen = frozenset(path for path, lines in found.items()
                       if not all(any(hit.source_path == path and line in span(hit) for hit in holding) for line in lines))
    for hit in more(unseen) if unseen else ():  # (in the ranking's order)
        if hit.docid not in order and hit.source_path in unseen and held(hit)[1]:
            order[hit.docid] = len(order)
            holding.append(hit)
    holding.sort(key=lambda hit: (not held(hit)[0], -held(hit)[1], order[hit.docid]))
    chosen = {hit.docid for hit in holding}
    return lifted(holding, [hit for hit in hits if hit.docid not in chosen])


def window(hits: list) -> frozenset:
    """The docids of the hits a lift may choose from, the same however many hits are asked for:
    those among the first WINDOW of the first DEPTH files."""
    files: dict[str, None] = {}
    chosen = []
    for hit in hits[:WINDOW]:
        if hit.source_path not in files:
            if len(files) >= DEPTH:
                continue
            files[hit.source_path] = None
        chosen.append(hit.docid)
    return frozenset(chosen)


def named_first(hits: list, name: str, chosen: frozenset | None = None) -> list | None:
    """`hits` with those of the files named `name` (lower case, `queried_file_name`) first, of the
    `chosen` docids (`window`; None: all): a query that is a file's name asks for that file
    (`Newtonsoft.Json.csproj`, whose words are in every file, came 67th); None when no hit is of
    such a file."""
    def named(hit) -> bool:
        return hit.source_path.rsplit("/", 1)[-1].lower() == name and (chosen is None or hit.docid in chosen)

    return lifted([hit for hit in hits if named(hit)], [hit for hit in hits if not named(hit)])
