"""Index-time features of a chunk beyond its words, encoded as extra terms in the same postings.

- Path terms: the words of the file's path (directories, file name without extension), so
  `websocket` finds `websockets.py` even where the body says little.
- Definition terms: `\u00a7name` for every symbol the chunk defines (class, def, func, fn, ...), so a
  query naming a symbol can prefer the chunk that defines it over the many that use it.
The prefix character cannot come out of the tokenizer, so feature terms never collide with words.
"""
from __future__ import annotations

import re
from collections import Counter

from ..lazyre import LazyPattern as lazy_compile
from ..text import split_identifier, term_counts

DEF = "\u00a7"
# Bump when a change here changes the path or definition terms of a chunk (the index fingerprint
# carries it, with the versions of the modules it builds on).
VERSION = 1

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
                definitions=None) -> Counter:
    """Every term a chunk is indexed under: words, path words, definitions. `definitions` are the
    names a syntax tree says the chunk defines; None finds them with the patterns above."""
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
    return counts
