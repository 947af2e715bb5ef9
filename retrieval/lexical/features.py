"""Index-time features of a chunk beyond its words, encoded as extra terms in the same postings.

- Path terms: the words of the file's path (directories, file name without extension), so
  `websocket` finds `websockets.py` even where the body says little.
- Definition terms: `\u00a7name` for every symbol the chunk defines (class, def, func, fn, ...), so a
  query naming a symbol can prefer the chunk that defines it over the many that use it.
- Member terms: `\u00a7owner.name` for a definition inside a class-like one (`Group.invoke`, a Go
  method's receiver type), so a qualified query finds the method, not the class's first lines.
The prefix character cannot come out of the tokenizer, so feature terms never collide with words.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter

from ..lazyre import LazyPattern as lazy_compile
from ..text import split_identifier, term_counts

DEF = "\u00a7"
# Bump when a change here changes the path or definition terms of a chunk (the index fingerprint
# carries it, with the versions of the modules it builds on).
VERSION = 2

_MODIFIERS = (
    r"(?:(?:export|default|pub(?:\([^)]*\))?|public|private|protected|internal|static|final|abstract|"
    r"async|override|open|sealed|data|inline|extern|unsafe|virtual|partial|readonly|local|"
    r"fileprivate|mutating|suspend|implicit|lazy|case|noinline|constexpr|explicit|friend)\s+)*"
)
_KEYWORDS = (
    r"(?:class|def|func|fun|function|fn|struct|interface|trait|enum|type|typealias|typedef|module|"
    r"object|record|protocol|extension|defmodule|defp|defmacro|defmacrop|defguard|defstruct|macro|"
    r"sub|namespace|union|newtype|data|instance|alias|signature)"
)
# keyword-introduced definitions (most languages), with a Go receiver or a Lua table prefix
_KEYWORD_DEF = lazy_compile(
    rf"^[ \t]*{_MODIFIERS}{_KEYWORDS}\s+(?:\([^)]*\)\s*)?(?:[A-Za-z_][\w]*[.:])?([A-Za-z_$][\w$]*[?!]?)(?![\w$]|\s*[,}}])",
    re.MULTILINE,
)
# `impl Trait for Type` defines behaviour for Type, not Trait; a bare `impl Type` is Type's.
_IMPL_DEF = lazy_compile(
    r"^[ \t]*(?:unsafe\s+)?impl(?:<[^\n{]*?>)?\s+(?:[\w:]+(?:<[^\n{]*?>)?\s+for\s+)?(?:[\w]+::)*([A-Za-z_]\w*)",
    re.MULTILINE,
)
# Bindings define a name only at the top level: an indented `const x` is a local variable.
_BINDING_DEF = lazy_compile(
    rf"^{_MODIFIERS}(?:val|var|let|const)\s+([A-Za-z_$][\w$]*)",
    re.MULTILINE,
)
# Shell functions: `name() {` or `function name`.
_SHELL_DEF = lazy_compile(r"^[ \t]*(?:function[ \t]+)?([A-Za-z_][\w:-]*)[ \t]*\(\)", re.MULTILINE)
# C-family function or method signatures: a type, a name, an open parenthesis, not a statement
_SIGNATURE_DEF = lazy_compile(
    r"^[ \t]*(?!return\b|raise\b|if\b|while\b|for\b|switch\b|else\b|new\b|throw\b|case\b|await\b|yield\b|delete\b)"
    r"[A-Za-z_](?:[\w:<>,.*&? \t]|\[\])*[\s*&>]([A-Za-z_~]\w*)\s*\([^;\n]*$",
    re.MULTILINE,
)
# `#define NAME`, Haskell `name ::`, and top-level `NAME = ...` assignments
_OTHER_DEF = lazy_compile(
    r"^#\s*define\s+([A-Za-z_]\w*)|^([a-z_][\w']*)\s+::|^([A-Za-z_][\w.]*)\s*(?::[^=]+)?=(?!=)",
    re.MULTILINE,
)


# Languages whose functions are declared by a type and a name, with no keyword; elsewhere the
# signature pattern only finds calls (a Python `x: Annotated[T, Depends(dep)]` is not a definition).
_SIGNATURE_LANGUAGES = frozenset(
    "c cpp objc java csharp javascript typescript php dart groovy swift kotlin scala vue svelte solidity".split()
)
_SHELL_LANGUAGES = frozenset({"bash", "powershell"})


def defined_names(text: str, language: str = "") -> set[str]:
    names: set[str] = set()
    for m in _KEYWORD_DEF.finditer(text):
        names.add(m.group(1))
    for m in _IMPL_DEF.finditer(text):
        names.add(m.group(1))
    for m in _BINDING_DEF.finditer(text):
        names.add(m.group(1))
    if not language or language in _SIGNATURE_LANGUAGES:
        for m in _SIGNATURE_DEF.finditer(text):
            names.add(m.group(1))
    if not language or language in _SHELL_LANGUAGES:
        for m in _SHELL_DEF.finditer(text):
            names.add(m.group(1))
    for m in _OTHER_DEF.finditer(text):
        name = m.group(1) or m.group(2) or m.group(3)
        if name:
            names.add(name.rsplit(".", 1)[-1])
    return names


def path_terms(path: str) -> list[str]:
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    out: list[str] = []
    for word in re.findall(r"[^\W_](?:\w*[^\W_])?", stem):
        out.extend(split_identifier(word))
    return out


def chunk_terms(path: str, text: str, context: str = "", path_weight: int = 1, language: str = "",
                definitions=None, members=()) -> Counter:
    """Every term a chunk is indexed under: words, path words, definitions. `definitions` are the
    names a syntax tree says the chunk defines; None finds them with the patterns above.
    `members`: its `owner.name` pairs (member_definitions)."""
    counts = term_counts(f"{context}\n{text}" if context else text)
    if path_weight:
        for term in path_terms(path):
            counts[term] += path_weight
    for name in defined_names(text, language) if definitions is None else set(definitions):
        lowered = name.lower()
        counts[DEF + lowered] += 1
        if name != lowered:
            # the exact spelling too, so `Vitest` prefers `class Vitest` over `const vitest`
            counts[DEF + name] += 1
    for member in members:
        counts[DEF + member.lower()] += 1
    return counts


# Definitions that own members: a method defined below one (indented, or up to its closing brace)
# is that owner's.
_OWNER_DEF = lazy_compile(
    rf"^([ \t]*){_MODIFIERS}(?:class|struct|interface|trait|enum|object|record|protocol|extension|"
    r"module|namespace|defmodule|impl(?:<[^\n{]*?>)?(?:\s+[\w:]+(?:<[^\n{]*?>)?\s+for)?)"
    r"\s+(?:[A-Za-z_][\w]*(?:\.|::))*([A-Za-z_$][\w$]*)"
)
_GO_RECEIVER = lazy_compile(r"^func\s*\(\s*\w*\s*\*?\s*([A-Za-z_]\w*)")
_OWNER_HINT = re.compile(r"\b(?:class|struct|interface|trait|enum|object|record|protocol|extension|module|"
                         r"namespace|defmodule|impl)\b")


def member_definitions(texts: list[str], language: str = "") -> list[set[str]]:
    """For a file's consecutive chunks, each chunk's `owner.name` pairs: the names it defines
    inside an owning definition (by indentation, which every mainstream style keeps), or on a Go
    method's receiver type."""
    owners: list[tuple[int, str]] = []  # (indentation, name), innermost last
    out: list[set[str]] = []
    for text in texts:
        members: set[str] = set()
        owner_at: list[str] = []  # the innermost owner of each line of this chunk
        for line in text.split("\n"):
            stripped = line.strip()
            if stripped:
                indent = len(line) - len(line.lstrip(" \t"))
                while owners and indent <= owners[-1][0] and stripped[0] not in ")]>":
                    owners.pop()
                if _OWNER_HINT.search(line):
                    m = _OWNER_DEF.match(line)
                    if m:
                        owner_at.append(owners[-1][1] if owners else "")
                        owners.append((len(m.group(1)), m.group(2)))
                        continue
            owner_at.append(owners[-1][1] if owners else "")
        if any(owner_at) or (language == "go" and "func" in text):
            starts = [0]
            for i, ch in enumerate(text):
                if ch == "\n":
                    starts.append(i + 1)
            for name, offset in _names_with_offsets(text, language):
                row = bisect_right(starts, offset) - 1
                owner = owner_at[row] if row < len(owner_at) else ""
                if language == "go":
                    line = text[starts[row]:].split("\n", 1)[0]
                    m = _GO_RECEIVER.match(line)
                    if m:
                        owner = m.group(1)
                if owner and owner != name:
                    members.add(f"{owner}.{name}")
        out.append(members)
    return out


def _names_with_offsets(text: str, language: str):
    """(name, offset of its line) for the keyword and signature definitions of defined_names."""
    for m in _KEYWORD_DEF.finditer(text):
        yield m.group(1), m.start()
    if not language or language in _SIGNATURE_LANGUAGES:
        for m in _SIGNATURE_DEF.finditer(text):
            yield m.group(1), m.start()
