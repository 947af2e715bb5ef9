"""A query that is text to find word for word (a pasted signature, message or line of code): the hits
whose lines hold it come first, as grep would have found them. The ranking weighs the words, and a
line holding all of them in order can lose to a chunk repeating some of them (alamofire's protocol
requirement `func retry(_ request: Request, for session: Session, dueTo error: any Error,
completion:` was not among the first 30 hits for itself)."""
from __future__ import annotations

import re
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
    pieces = text.split()
    longest = max(pieces, key=len)
    pattern = re.compile(r"\s+".join(map(re.escape, pieces)))
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

    def raised(hit):
        confidence = hit.confidence
        if confidence in LEVELS and level in LEVELS and LEVELS.index(level) > LEVELS.index(confidence):
            confidence = level
        return replace(hit, score=max(hit.score, floor), confidence=confidence)

    return [replace(hit, rank=n) for n, hit in enumerate([*map(raised, first), *others], start=1)]


# A format string's placeholders, which the message it prints has filled in: printf's (`%s`, `%-8.3f`,
# `%(name)s`, Go's `%v`), braces (Python's `{url!r}`, C#'s `{0}`, Rust's `{:?}`, SLF4J's `{}`),
# interpolation (`${x}`, Ruby's `#{x}`, Swift's `\(x)`, Kotlin's and PHP's `$name`).
_PLACEHOLDER = re.compile(r"%(?:\([^)\s]*\))?[-+#0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?[a-zA-Z]"
                          r"|[$#]?\{[^{}\n]*\}|\\\([^()\n]*\)|\$[A-Za-z_]\w*")
# A string literal within a line, in double, single or back quotes, its escapes as written.
_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|`(?:[^`\\\n]|\\.)*`')
_ESCAPED = re.compile(r"\\(.)")
_LETTERS = re.compile(r"[^\W\d_]{2,}")
# What a format string must print of its own to be taken for a message's (`No such option: {name}`
# prints 13 characters in 3 words): fewer, and `Error: %s` would be every error's.
MIN_TEMPLATE_CHARS = 12
MIN_TEMPLATE_WORDS = 3
MAX_PLACEHOLDERS = 8  # (each is a lazy `.*?`: a pattern's cost grows with their number)


def template_lines(body: str, text: str) -> dict[int, int]:
    """{line: characters it prints} of the string literals in `body` that `text` (verbatim_text)
    holds with their placeholders filled in (`Invalid URL {url!r}: No scheme supplied.` in
    `Invalid URL 'x.com': No scheme supplied. Perhaps...`): a pasted message was printed from a
    format string, and only its words were left to find the code that builds it."""
    found: dict[int, int] = {}
    line, at = 1, 0
    for match in _LITERAL.finditer(body):
        parts = _PLACEHOLDER.split(match.group()[1:-1])
        if len(parts) > MAX_PLACEHOLDERS + 1:
            continue
        # Its printed pieces as the pasted text has them: escapes read, spaces folded.
        pieces = [_SPACE.sub(" ", _ESCAPED.sub(lambda m: " " if m.group(1) in "nrt" else m.group(1), part))
                  for part in parts]
        pieces[0], pieces[-1] = pieces[0].lstrip(), pieces[-1].rstrip()
        printed = "".join(pieces)
        if len(printed.replace(" ", "")) < MIN_TEMPLATE_CHARS or len(_LETTERS.findall(printed)) < MIN_TEMPLATE_WORDS \
                or not all(piece.strip() in text for piece in pieces):
            continue
        if not re.search(".*?".join(map(re.escape, pieces)), text):
            continue
        line += body.count("\n", at, match.start())
        at = match.start()
        found[line] = max(found.get(line, 0), len(printed.replace(" ", "")))
    return found


def line_holding(body: str, text: str) -> int | None:
    """The line of `body` (1-based) where `text` (verbatim_text) starts word for word, else the one
    holding the format string printing most of it (template_lines), else None."""
    match = re.search(r"\s+".join(map(re.escape, text.split())), body)
    if match:
        return body.count("\n", 0, match.start()) + 1
    lines = template_lines(body, text)
    return max(lines, key=lambda line: (lines[line], -line)) if lines else None


def template_first(hits: list, text: str, read: Callable[[str], str | None],
                   liftable: Callable[[object], bool], more: Callable[[frozenset], list]) -> list | None:
    """`hits` with those holding a format string that printed `text` (template_lines) first, the one
    printing most of it first, then in their order; None when no liftable hit's file holds one.
    `read(path)`: a file's text or None; `more(paths)`: those files' hits, looked for when such a
    line is in no hit here (a file's further chunks count at half their score, and jackson's
    `Cannot deserialize value of type %s from String %s` was 152nd behind its `from number %s`)."""
    found: dict[str, dict[int, int]] = {}
    for hit in hits:
        path = hit.source_path
        if path not in found and liftable(hit):
            body = read(path)
            found[path] = template_lines(body, text) if body else {}
    found = {path: lines for path, lines in found.items() if lines}
    if not found:
        return None

    def span(hit) -> range:
        first = hit.start_line or 1
        return range(first, (hit.end_line or first) + 1)

    def printed(hit) -> int:
        lines = found.get(hit.source_path) or {}
        return max((n for line, n in lines.items() if line in span(hit)), default=0)

    order = {hit.docid: n for n, hit in enumerate(hits)}
    holding = [hit for hit in hits if liftable(hit) and printed(hit)]
    unseen = frozenset(path for path, lines in found.items()
                       if not all(any(hit.source_path == path and line in span(hit) for hit in holding) for line in lines))
    for hit in more(unseen) if unseen else ():  # (in the ranking's order)
        if hit.docid not in order and hit.source_path in unseen and printed(hit):
            order[hit.docid] = len(order)
            holding.append(hit)
    holding.sort(key=lambda hit: (-printed(hit), order[hit.docid]))
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
