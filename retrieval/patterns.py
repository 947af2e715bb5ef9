"""Hits whose lines match a pattern (`query -e PATTERN`, as ColGREP's `-e` or ck's grep mode): the
retriever's ranking decides the order, the pattern which hits may be in it.

A pattern is Python's `re` syntax (ripgrep's is close to it), or a literal string with `-F`, matched
within a line, as grep matches, against the files as they are now (as snippets read them): a hit is
kept when a line of its span holds a match. A file without one is left out before ranking.
"""
from __future__ import annotations

import re


class PatternError(ValueError):
    """A pattern that does not compile: the command line's usage error, the API's ValueError."""


def compile_patterns(patterns: tuple[str, ...], *, fixed: bool = False, ignore_case: bool = False) -> re.Pattern:
    """One expression matching where any of `patterns` does. Each is compiled alone first, so an
    error names the pattern at fault (an alternation's position means nothing to its writer)."""
    flags = re.MULTILINE | (re.IGNORECASE if ignore_case else 0)
    parts = []
    for pattern in patterns:
        part = re.escape(pattern) if fixed else pattern
        try:
            re.compile(part, flags)
        except re.error as exc:
            raise PatternError(f"-e {pattern!r} is not a regular expression: {exc} "
                               "(-F matches it as a literal string)") from None
        except (OverflowError, RecursionError):  # (nesting deep enough to exhaust the compiler)
            raise PatternError(f"-e {pattern!r} is too complex to compile") from None
        parts.append(part)
    return re.compile("|".join(f"(?:{p})" for p in parts), flags)


class LineMatcher:
    """Which lines of a root's files match `regex`, each file read once (lines numbered as the
    chunker numbered them, a notebook's in its cells' script view)."""

    def __init__(self, root: str, regex: re.Pattern):
        self.root = root
        self.regex = regex
        self._matches: dict[str, frozenset[int]] = {}  # (the numbers alone: every file's text was 100 MB)

    def matching_lines(self, path: str) -> frozenset[int]:
        """The 1-based numbers of the file's lines holding a match (none when it cannot be read)."""
        found = self._matches.get(path)
        if found is None:
            from .read import split_ending
            from .snippets import current_lines

            lines = [split_ending(line)[0] for line in current_lines(self.root, path) or ()]
            search = self.regex.search
            # One search of the whole text first: most files hold no match, and that is C's loop.
            if lines and search("\n".join(lines)) is not None:
                found = frozenset(n for n, line in enumerate(lines, start=1) if search(line) is not None)
            else:
                found = frozenset()
            self._matches[path] = found
        return found

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
