"""Gitignore semantics: pattern compilation and layered matching.

Rules follow git's documented behaviour: the last matching pattern wins, deeper ignore files
override shallower ones, `!` re-includes, a trailing `/` matches directories only, a pattern with a
slash elsewhere is anchored to its file's directory, and `**` spans directories.
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    regex: re.Pattern
    negated: bool
    dir_only: bool


def _translate(glob: str) -> str:
    """Glob body -> regex body, with `*` and `?` never crossing a `/`."""
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if c == "*":
            if glob.startswith("**", i):
                # `**/` = zero or more directories; a lone `**` (e.g. trailing) = anything.
                if glob.startswith("**/", i):
                    out.append("(?:.*/)?")
                    i += 3
                else:
                    out.append(".*")
                    i += 2
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i + 1
            if j < n and glob[j] in "!^":
                j += 1
            if j < n and glob[j] == "]":
                j += 1
            while j < n and glob[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(c))
            else:
                body = glob[i + 1 : j]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(glob[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def compile_rule(line: str) -> Rule | None:
    """One line of an ignore file -> Rule, or None for blanks and comments."""
    line = line.rstrip("\n").rstrip("\r")
    # Trailing spaces are ignored unless escaped.
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(line):
        stripped += " "
    line = stripped
    if not line or line.startswith("#"):
        return None
    negated = False
    if line.startswith("!"):
        negated, line = True, line[1:]
    elif line.startswith("\\!") or line.startswith("\\#"):
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    line = line.lstrip("/")
    body = _translate(line)
    prefix = "" if anchored else "(?:.*/)?"
    return Rule(re.compile(f"^{prefix}{body}$", re.DOTALL), negated, dir_only)


def compile_globs(globs) -> list[Rule]:
    return [r for r in (compile_rule(g) for g in globs) if r is not None]


def parse_ignore_text(text: str) -> list[Rule]:
    return compile_globs(text.splitlines())


class IgnoreStack:
    """Ignore rules collected while walking down a tree, each set scoped to its directory."""

    def __init__(self, layers: tuple[tuple[str, tuple[Rule, ...]], ...] = ()):
        self._layers = layers  # (directory relative to root with trailing '/', or '', rules)

    def push(self, base: str, rules: list[Rule]) -> "IgnoreStack":
        if not rules:
            return self
        return IgnoreStack(self._layers + ((base, tuple(rules)),))

    def ignored(self, relpath: str, is_dir: bool) -> bool:
        verdict = False
        for base, rules in self._layers:
            if base and not relpath.startswith(base):
                continue
            local = relpath[len(base):]
            for rule in rules:
                if rule.dir_only and not is_dir:
                    continue
                if rule.regex.match(local):
                    verdict = not rule.negated
        return verdict


def matches_any(rules: list[Rule], relpath: str, is_dir: bool = False) -> bool:
    """True when the last matching rule is positive (used for --include/--exclude globs)."""
    return IgnoreStack((("", tuple(rules)),)).ignored(relpath, is_dir) if rules else False
