"""Hits whose lines match a pattern (`query -e PATTERN`, as ColGREP's `-e` or ck's grep mode): the
retriever's ranking decides the order, the pattern which hits may be in it.

A pattern is Python's `re` syntax (ripgrep's is close to it), or a literal string with `-F`, matched
within a line, as grep matches, against the files as they are now (as snippets read them): a hit is
kept when a line of its span holds a match. A file without one is left out before ranking.

Python's expressions backtrack: `(a+)+$` on a line of forty a's, or `.*x.*y.*z` on a megabyte-long
minified line, runs for hours where grep takes milliseconds. A file that takes longer than
FILE_SECONDS, or a search whose files together take longer than SEARCH_SECONDS, stops the search
with an error naming it (in the main thread, where a timer can interrupt a match; elsewhere,
between lines: a match holds the interpreter's lock, which is why the MCP server matches a pattern
in a process of its own).
"""
from __future__ import annotations

import re
import signal
import threading
import time

FILE_SECONDS = 5.0
SEARCH_SECONDS = 20.0  # every file of one search together (twenty files of 2 s each took 39 s, unsaid)


class PatternError(ValueError):
    """A pattern that does not compile, or matches too slowly: the command line's error, the API's
    ValueError."""


class PatternTimeout(PatternError):
    pass


# An escaped `n` (not an escaped backslash followed by n): a line break, which no line holds; but
# not inside a negated class (`[^\n]+`, which ripgrep takes: any character of a line).
_LINE_BREAK = re.compile(r"(?<!\\)(?:\\\\)*\\n")
_NEGATED_CLASS = re.compile(r"(?<!\\)((?:\\\\)*)\[\^\]?(?:\\.|[^\]\\])*\]")
# Anchors at the text's ends, which in one search of a whole file mean its first or last line only;
# and negative lookarounds, which in a whole text see the line break a line has not
# (`(?<!\s)def` holds at a line's start, not after the `\n` before it).
_TEXT_ANCHOR = re.compile(r"(?<!\\)(?:\\\\)*(?:\\[AZ]|\(\?<?!)")


class Patterns:
    """Any of several compiled patterns: `search` gives the earliest match among them. Each is
    compiled alone, so an inline flag (`(?i)`, which must open its expression) stays its own."""

    def __init__(self, compiled: list[re.Pattern], whole_text: bool):
        self.compiled = compiled
        self.whole_text = whole_text  # one search of a file's text is a superset of its lines' searches

    def search(self, text: str):
        found = None
        for pattern in self.compiled:
            match = pattern.search(text)
            if match is not None and (found is None or match.start() < found.start()):
                found = match
        return found


def compile_patterns(patterns: tuple[str, ...], *, fixed: bool = False, ignore_case: bool = False) -> Patterns:
    """`patterns` compiled (an error names the pattern at fault)."""
    from .output import shell_word

    flags = re.MULTILINE | (re.IGNORECASE if ignore_case else 0)
    compiled = []
    whole_text = True
    for pattern in patterns:
        if "\n" in pattern or (not fixed and _LINE_BREAK.search(_NEGATED_CLASS.sub(r"\1", pattern))):
            raise PatternError(f"-e {shell_word(pattern)} holds a line break (\\n): a pattern is matched within a line, "
                               "as grep matches")
        try:
            compiled.append(re.compile(re.escape(pattern) if fixed else pattern, flags))
        except re.error as exc:
            raise PatternError(f"-e {shell_word(pattern)} is not a regular expression: {exc} "
                               "(-F matches it as a literal string)") from None
        except (OverflowError, RecursionError):  # (nesting deep enough to exhaust the compiler)
            raise PatternError(f"-e {shell_word(pattern)} is too complex to compile") from None
        whole_text = whole_text and (fixed or not _TEXT_ANCHOR.search(pattern))
    return Patterns(compiled, whole_text)


class LineMatcher:
    """Which lines of a root's files match `patterns`, each file read once (lines numbered as the
    chunker numbered them, a notebook's in its cells' script view)."""

    def __init__(self, root: str, patterns: Patterns, said: str = ""):
        self.root = root
        self.patterns = patterns
        self.said = said  # the patterns as the command line gave them, for an error
        self._matches: dict[str, frozenset[int]] = {}  # (the numbers alone: every file's text was 100 MB)
        self._spent = 0.0  # seconds matching, over all files (SEARCH_SECONDS)

    def matching_lines(self, path: str) -> frozenset[int]:
        """The 1-based numbers of the file's lines holding a match (none when it cannot be read)."""
        found = self._matches.get(path)
        if found is None:
            from .snippets import current_text

            text = current_text(self.root, path)
            began = time.monotonic()
            limit = min(FILE_SECONDS, SEARCH_SECONDS - self._spent)
            if limit <= 0:  # (spent between lines, where no timer stopped it sooner)
                self._too_slow(path)
            try:
                with _time_limit(limit, lambda: self._too_slow(path)):
                    found = self._scan(text, path, began + limit)
            finally:
                self._spent += time.monotonic() - began
            self._matches[path] = found
        return found

    def _scan(self, text: str | None, path: str, deadline: float) -> frozenset[int]:
        from .read import line_texts

        search = self.patterns.search
        # One search of the whole text first: most files hold no match, and that is C's loop. (Not
        # with a CR in it: `x$` matches before a line's `\n` only, and a line is matched without its
        # `\r\n`.)
        if not text or (self.patterns.whole_text and "\r" not in text and search(text) is None):
            return frozenset()
        lines = line_texts(text)
        found = []
        for n, line in enumerate(lines, start=1):
            if search(line) is not None:
                found.append(n)
            if not n % 256 and time.monotonic() > deadline:  # (no timer outside the main thread)
                self._too_slow(path)
        return frozenset(found)

    def _too_slow(self, path: str):
        said = self.said or "-e"
        if self._spent + FILE_SECONDS > SEARCH_SECONDS:  # (slow over many files, not one: no backtracking)
            raise PatternTimeout(f"{said} took over {SEARCH_SECONDS:g} s to match the lines of "
                                 f"{len(self._matches) + 1} files (the last {path}): --path or --lang narrows the "
                                 "files; -F, a possessive `a++` or an atomic `(?>...)` group makes a pattern faster")
        raise PatternTimeout(f"{said} took over {FILE_SECONDS:g} s to match the lines of {path}: "
                             "Python's regular expressions backtrack (`(a+)+`, `.*x.*y` on a long line); "
                             "-F, a possessive `a++` or an atomic `(?>...)` group avoids it")

    def allows_file(self, path: str) -> bool:
        return bool(self.matching_lines(path))

    def first_in(self, path: str, start: int, end: int) -> int | None:
        """The first line of start..end holding a match, or None."""
        found = self.matching_lines(path)
        if not found:
            return None
        return next((n for n in range(start, end + 1) if n in found), None)

    def in_span(self, hit) -> bool:
        """Whether a line of the hit's span holds a match (a hit without a span: any of its file's)."""
        if hit.start_line is None or hit.end_line is None:
            return self.allows_file(hit.source_path)
        return self.first_in(hit.source_path, hit.start_line, hit.end_line) is not None

    def restrict(self, allow):
        """`allow(path, language, kind)` narrowed to files holding a match (None: any file)."""
        def allowed(path: str, language: str, kind: str) -> bool:
            return (allow is None or allow(path, language, kind)) and self.allows_file(path)

        return allowed


class _time_limit:
    """Calls `expired` (which raises) from a timer after `seconds`, in the main thread, where a
    signal interrupts a match in progress; elsewhere, or where SIGALRM is another's, nothing."""

    def __init__(self, seconds: float, expired):
        self.seconds = seconds
        self.expired = expired
        self.previous = None

    def __enter__(self):
        alarm = getattr(signal, "SIGALRM", None)
        if alarm is None or threading.current_thread() is not threading.main_thread():
            return self
        if signal.getsignal(alarm) not in (signal.SIG_DFL, None) or signal.getitimer(signal.ITIMER_REAL)[0]:
            return self  # a timer of someone else's: left alone
        self.previous = signal.signal(alarm, lambda signum, frame: self.expired())
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)
        return False
