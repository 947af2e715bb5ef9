"""The offline contextualizer: what a reader needs to situate a chunk seen out of its file.

Standard library only, a few microseconds per chunk. For each chunk it writes one short text of
labelled parts, each worth having when the chunk is read (and matched) alone:
- scopes: the enclosing definitions (`class Cache > def evict(self, key)`), i.e. the signature the
  chunk sits in; a chunker's own breadcrumb (`Chunk.context`, tree-sitter) wins when present; for
  Markdown, the headings above the chunk;
- doc: the first sentence of the innermost enclosing definition's docstring or doc comment;
- about: the file's leading docstring or comment (licence headers skipped), first sentence only;
- uses: the imported names the chunk uses, with the module they come from.
The path is left out by default: the lexical index already adds path words to every chunk.
"""
from __future__ import annotations

import bisect
import re

from ..lexical.features import defined_names
from ..read import line_texts
from ..records import Chunk

VERSION = 7  # bump when the text this module produces changes (it is part of the index fingerprint)
PARTS = ("scopes", "doc", "about", "uses")  # what contexts() writes by default; "path" is available too
ALL_PARTS = ("path", "scopes", "doc", "about", "uses")

_MAX_SCOPE = 120  # characters of one signature line
_MAX_ABOUT = 200
_MAX_USES = 8

_LICENCE = re.compile(r"copyright|spdx-license|all rights reserved|licensed under|permission is hereby granted|"
                      r"\(c\) \d{4}", re.IGNORECASE)
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")

# Import statements, by family. Each yields (module, local names) through _imports().
_PY_FROM = re.compile(r"^[ \t]*from[ \t]+([.\w]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]+)", re.MULTILINE)
_PY_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w.]+(?:[ \t]+as[ \t]+\w+)?(?:[ \t]*,[ \t]*[\w.]+(?:[ \t]+as[ \t]+\w+)?)*)",
                        re.MULTILINE)
_JS_IMPORT = re.compile(r"^[ \t]*import[ \t]+(?:type[ \t]+)?([^'\";]+?)[ \t]+from[ \t]+['\"]([^'\"]+)['\"]", re.MULTILINE)
_JS_REQUIRE = re.compile(r"^[ \t]*(?:const|let|var)[ \t]+(\{[^}]*\}|[\w$]+)[ \t]*=[ \t]*require\(['\"]([^'\"]+)['\"]\)",
                         re.MULTILINE)
_GO_IMPORT = re.compile(r"^[ \t]*(?:import[ \t]+)?([\w.]+[ \t]+)?\"([\w./-]+)\"[ \t]*$", re.MULTILINE)
_RUST_USE = re.compile(r"^[ \t]*(?:pub(?:\([^)]*\))?[ \t]+)?use[ \t]+([\w:]+)(?:::\{([^}]*)\})?(?:[ \t]+as[ \t]+(\w+))?;",
                       re.MULTILINE)
_DOTTED_IMPORT = re.compile(r"^[ \t]*(?:import|using)[ \t]+(?:static[ \t]+)?([\w.]+?)(?:\.\*)?[ \t]*;?[ \t]*$", re.MULTILINE)
_PHP_USE = re.compile(r"^[ \t]*use[ \t]+([\w\\]+)(?:[ \t]+as[ \t]+(\w+))?;", re.MULTILINE)

_IMPORT_LINE = re.compile(r"^[ \t]*(?:from[ \t]+\S+[ \t]+import|import\b|use[ \t]|using[ \t]|#include|require\(|"
                          r"(?:const|let|var)[ \t].*require\()")


class HeuristicContextualizer:
    """Contexts from the file itself; no network, no model."""

    name = "heuristic"

    def __init__(self, parts: tuple[str, ...] = PARTS):
        unknown = set(parts) - set(ALL_PARTS)
        if unknown:
            raise ValueError(f"unknown context parts: {', '.join(sorted(unknown))}")
        self.parts = tuple(p for p in ALL_PARTS if p in parts)

    def fingerprint(self) -> dict:
        return {"name": self.name, "version": VERSION, "parts": list(self.parts)}

    def contexts(self, text: str, path: str, chunks: list[Chunk], language: str = "") -> list[str]:
        """One context per chunk (possibly empty), in order. Each per-file structure is built once,
        so a file costs one pass whatever its number of chunks."""
        lines = line_texts(text)  # indexed by the chunks' line numbers
        markdown = language == "markdown" or path.lower().endswith((".md", ".markdown", ".mdx", ".rst"))
        rst = language == "rst" or path.lower().endswith(".rst")
        about = leading_doc(lines, markdown, "rst" if rst else "markdown") if "about" in self.parts else ""
        imported = imports(text, language) if "uses" in self.parts else {}
        wants_scopes = ("scopes" in self.parts or "doc" in self.parts) and not markdown
        outline = Outline(lines) if wants_scopes else None
        titles = HeadingIndex(lines, "rst" if rst else "markdown") if markdown and "scopes" in self.parts else None
        out = []
        for chunk in chunks:
            parts = []
            if "path" in self.parts:
                parts.append(path)
            enclosing = scope_lines(lines, chunk.start_line, language, outline) if outline else []
            if "scopes" in self.parts:
                crumb = chunk.context or (titles.at(chunk.start_line) if titles
                                          else " > ".join(_signature(lines, j) for j in enclosing))
                if crumb:
                    parts.append(f"in {crumb}")
            if "doc" in self.parts and enclosing:
                doc = next((d for d in (definition_doc(lines, j) for j in reversed(enclosing)) if d), "")
                if doc:
                    parts.append(f"doc: {doc}")
            if about:
                parts.append(f"about: {about}")
            if imported:
                used = uses(chunk.text, imported)
                if used:
                    parts.append("uses " + ", ".join(used))
            out.append("\n".join(parts))
        return out


def _skipped(stripped: str) -> bool:
    """Comments and decorators: they never open a block."""
    return stripped.startswith(("#", "//", "*", "/*", "--", "@")) and not stripped.startswith("#[")


class Outline:
    """Each non-blank line's enclosing line: the nearest line above it that is less indented (one
    pass with a stack). Indentation is the evidence, so this holds for Python and for brace
    languages written the usual way."""

    def __init__(self, lines: list[str]):
        self.parent: list[int | None] = [None] * len(lines)
        stack: list[tuple[int, int]] = []  # (indent, line index) of the open blocks
        for i, line in enumerate(lines):
            stripped = line.strip()
            if not stripped:
                continue
            indent = _indent(line)
            if _skipped(stripped):
                self.parent[i] = next((j for d, j in reversed(stack) if d < indent), None)
                continue
            # `) -> T:` / `) {` closing a multi-line signature: the signature's first line stays the head
            continuation = stripped[0] in ")]}" and stripped.endswith(("{", ":"))
            while stack and (stack[-1][0] > indent if continuation else stack[-1][0] >= indent):
                stack.pop()
            if continuation and stack and stack[-1][0] == indent:
                self.parent[i] = self.parent[stack[-1][1]]
                continue
            self.parent[i] = stack[-1][1] if stack else None
            stack.append((indent, i))


def scopes(lines: list[str], start_line: int, language: str = "") -> list[str]:
    """The definition lines enclosing line `start_line` (1-based), outermost first."""
    return [_signature(lines, j) for j in scope_lines(lines, start_line, language)]


def scope_lines(lines: list[str], start_line: int, language: str = "", outline: Outline | None = None) -> list[int]:
    """Indices (0-based) of the definition lines enclosing line `start_line`, outermost first."""
    i = start_line - 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i >= len(lines):
        return []
    outline = outline or Outline(lines)
    found = []
    j = outline.parent[i]
    while j is not None:
        stripped = lines[j].strip()
        if stripped[0] in ")]}":
            break  # the end of an earlier block: nothing above it encloses the chunk
        if _defines(stripped, language):
            found.append(j)
        j = outline.parent[j]
    return found[::-1]


def _signature_end(lines: list[str], j: int) -> int:
    """The index of the last line of the signature starting at lines[j]."""
    text = lines[j]
    k = j
    while text.count("(") > text.count(")") and k + 1 < min(len(lines), j + 12):
        k += 1
        text += lines[k]
    return k


def _signature(lines: list[str], j: int) -> str:
    """The definition starting at lines[j], its parameters joined onto one line when they span several."""
    text = lines[j].strip()
    for k in range(j + 1, _signature_end(lines, j) + 1):
        if len(text) >= _MAX_SCOPE:
            break
        text += (" " if text[-1] in ",:" else "") + lines[k].strip()
    text = text.rstrip(" {:")
    return text if len(text) <= _MAX_SCOPE else text[: _MAX_SCOPE - 3] + "..."


def definition_doc(lines: list[str], j: int) -> str:
    """The first sentence documenting the definition at lines[j]: the docstring right under its
    signature, else the comment block right above it (decorators and attributes skipped)."""
    k = _signature_end(lines, j) + 1
    while k < len(lines) and not lines[k].strip():
        k += 1
    if k < len(lines) and re.match(r"[rRuU]?(\"\"\"|\'\'\')", lines[k].strip()):
        block, _ = _comment_block(lines, k, min(len(lines), k + 60))
        return _first_sentence(block or "")
    a = j - 1
    while a >= 0 and lines[a].strip().startswith(("@", "#[")):
        a -= 1
    end = a
    while a >= 0 and lines[a].strip().startswith(("//", "#", "*", "/*", "--", ";")) and not lines[a].strip().startswith("#["):
        a -= 1
    if end > a:
        block, _ = _comment_block(lines, a + 1, end + 1)
        if block and not _LICENCE.search(block):
            return _first_sentence(block)
    return ""


def _defines(line: str, language: str) -> bool:
    if line.startswith(("impl ", "impl<", "unsafe impl")):
        return True
    return bool(defined_names(line, language))


class HeadingIndex:
    """The heading path in force at each line of a Markdown (or `rst`) file: headings read as
    the chunker reads them (setext and reST titles too, rendered titles, fences as CommonMark
    closes them); a regular expression of its own here missed those and kept link targets."""

    def __init__(self, lines: list[str], language: str = "markdown"):
        from ..chunking.markdown import heading_rows

        self.starts: list[int] = []  # 0-based line of each heading
        self.paths: list[str] = []
        path: list[tuple[int, str]] = []
        for row, level, title in heading_rows(lines, language):
            path = [(lv, t) for lv, t in path if lv < level] + [(level, title)]
            self.starts.append(row)
            self.paths.append(" > ".join(t for _, t in path))

    def at(self, start_line: int) -> str:
        """The heading path in force at line `start_line` (1-based): a chunk starting with a heading
        is in that heading's section, not the one before."""
        k = bisect.bisect_right(self.starts, start_line - 1)
        return self.paths[k - 1] if k else ""


def headings(lines: list[str], start_line: int, language: str = "markdown") -> str:
    """`Guide > Retries` for a Markdown (or `rst`) chunk: the heading path above its first line."""
    return HeadingIndex(lines, language).at(start_line)


def leading_doc(lines: list[str], markdown: bool = False, language: str = "markdown") -> str:
    """The first sentence of the file's leading docstring or comment block (not a licence); of a
    Markdown (or `rst`) file, its first heading as rendered (a regular expression of its own here
    kept MkDocs' `{ #anchor }`, link targets and badges, and missed setext and reST titles)."""
    if markdown:
        from ..chunking.markdown import heading_rows

        for _row, _level, title in heading_rows(lines[:50], language):
            return title[:_MAX_ABOUT]
        return ""
    i, n = 0, min(len(lines), 200)
    while i < n:
        stripped = lines[i].strip()
        if not stripped or stripped.startswith("#!") or re.match(r"#.*coding[:=]", stripped):
            i += 1
            continue
        block, i = _comment_block(lines, i, n)
        if block is None:
            # code before any comment: one more chance, a `package`/`module` line then its doc
            if re.match(r"(package|module|namespace)\b", stripped) and i + 1 < n:
                i += 1
                continue
            return ""
        if block and not _LICENCE.search(block):
            return _first_sentence(block)
    return ""


def _comment_block(lines, i, n):
    """(text of the comment or docstring starting at lines[i], index after it); (None, i) when
    lines[i] starts code."""
    stripped = lines[i].strip()
    for quote in ('"""', "'''"):
        if stripped.startswith(quote) or re.match(rf"[rRuU]?{quote}", stripped):
            body = stripped.split(quote, 1)[1]
            if quote in body:
                return body.split(quote, 1)[0], i + 1
            parts = [body]
            j = i + 1
            while j < n and quote not in lines[j]:
                parts.append(lines[j].strip())
                j += 1
            if j < n:
                parts.append(lines[j].split(quote, 1)[0].strip())
            return " ".join(parts), j + 1
    if stripped.startswith("/*"):
        parts = []
        j = i
        while j < n:
            piece = lines[j].strip()
            done = "*/" in piece
            piece = piece.split("*/", 1)[0].lstrip("/").lstrip("*").strip()
            parts.append(piece)
            j += 1
            if done:
                break
        return " ".join(parts), j
    for marker in ("///", "//!", "//", "#", "--", ";;", "%"):
        if stripped.startswith(marker):
            parts = []
            j = i
            while j < n and lines[j].strip().startswith(marker) and not lines[j].strip().startswith("#!"):
                parts.append(lines[j].strip()[len(marker):].strip().lstrip("!/").strip())
                j += 1
            return " ".join(parts), j
    return None, i


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    m = re.search(r"(?<=[.!?])\s", text)
    if m:
        text = text[: m.start()]
    return text[:_MAX_ABOUT]


_FAMILIES = {
    "python": "py", "javascript": "js", "typescript": "js", "vue": "js", "svelte": "js", "go": "go",
    "rust": "rust", "php": "php", "java": "dotted", "kotlin": "dotted", "scala": "dotted", "csharp": "dotted",
    "groovy": "dotted", "dart": "dotted", "swift": "dotted",
}


def imports(text: str, language: str = "") -> dict[str, str]:
    """{local name: where it comes from} for the file's import statements (the patterns of the
    language's family; every family's for an unknown language)."""
    family = _FAMILIES.get(language, "")
    if not family and language:
        return {}
    found: dict[str, str] = {}
    if family in ("", "py"):
        _python_imports(text, found)
    if family in ("", "js"):
        _js_imports(text, found)
    if family in ("", "go"):
        _go_imports(text, found)
    if family in ("", "rust"):
        _rust_imports(text, found)
    if family in ("", "dotted"):
        for m in _DOTTED_IMPORT.finditer(text):
            dotted = m.group(1)
            if "." in dotted:
                found.setdefault(dotted.rsplit(".", 1)[-1], dotted)
    if family in ("", "php"):
        for m in _PHP_USE.finditer(text):
            found[m.group(2) or m.group(1).rsplit("\\", 1)[-1]] = m.group(1)
    found.pop("*", None)
    return found


def _python_imports(text: str, found: dict) -> None:
    for m in _PY_FROM.finditer(text):
        module = m.group(1)
        for item in m.group(2).strip("() \t").split(","):
            name, _, alias = item.strip().partition(" as ")
            local = (alias or name).strip()
            if local.isidentifier():
                found[local] = f"{module}.{name.strip()}".lstrip(".")
    for m in _PY_IMPORT.finditer(text):
        for item in m.group(1).split(","):
            name, _, alias = item.strip().partition(" as ")
            name = name.strip()
            found[(alias.strip() or name.split(".")[0])] = name if alias else name.split(".")[0]


def _js_imports(text: str, found: dict) -> None:
    for m in _JS_IMPORT.finditer(text):
        clause, module = m.group(1), m.group(2)
        for local, orig in _js_names(clause):
            found[local] = f"{module}:{orig}" if orig else module
    for m in _JS_REQUIRE.finditer(text):
        for local, orig in _js_names(m.group(1)):
            found[local] = f"{m.group(2)}:{orig}" if orig else m.group(2)


def _go_imports(text: str, found: dict) -> None:
    for m in _GO_IMPORT.finditer(text):
        if "/" in m.group(2) or m.group(1) or text.count(f'"{m.group(2)}"') == 1:
            local = (m.group(1) or "").strip() or m.group(2).rstrip("/").rsplit("/", 1)[-1]
            if local.isidentifier():
                found[local] = m.group(2)


def _rust_imports(text: str, found: dict) -> None:
    for m in _RUST_USE.finditer(text):
        base, group, alias = m.group(1), m.group(2), m.group(3)
        if group:
            for item in group.split(","):
                name, _, al = item.strip().partition(" as ")
                if name.strip() and name.strip() != "self":
                    found[(al or name).strip().rsplit("::", 1)[-1]] = f"{base}::{name.strip()}"
        else:
            found[alias or base.rsplit("::", 1)[-1]] = base


def _js_names(clause: str) -> list[tuple[str, str]]:
    """[(local name, imported name or '')] of `Default, { a, b as c }` / `* as ns` / `{ a: b }`."""
    out = []
    braces = re.search(r"\{([^}]*)\}", clause)
    if braces:
        for item in braces.group(1).split(","):
            item = item.strip()
            if not item:
                continue
            if " as " in item:
                orig, local = item.split(" as ", 1)
            elif ":" in item:
                orig, local = item.split(":", 1)
            else:
                orig = local = item
            out.append((local.strip(), orig.replace("type ", "").strip()))
        clause = clause[: braces.start()] + clause[braces.end():]
    for item in clause.split(","):
        item = item.strip()
        if item.startswith("* as "):
            out.append((item[5:].strip(), ""))
        elif item.isidentifier():
            out.append((item, ""))
    return [(local, orig) for local, orig in out if local]


def uses(chunk_text: str, imported: dict[str, str]) -> list[str]:
    """Where the imported names a chunk uses come from, in order of first use (import lines excluded)."""
    out = []
    seen = set()
    for line in chunk_text.splitlines():
        if _IMPORT_LINE.match(line):
            continue
        for name in _IDENT.findall(line):
            if name in imported and name not in seen:
                seen.add(name)
                origin = imported[name]
                out.append(origin if origin.endswith((name, f":{name}")) else f"{name} ({origin})")
                if len(out) == _MAX_USES:
                    return out
    return out


def _indent(line: str) -> int:
    expanded = line.expandtabs(4)
    return len(expanded) - len(expanded.lstrip(" "))
