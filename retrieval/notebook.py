"""A Jupyter notebook read as the script it holds, line for line.

A notebook is JSON: its cells' source lines are string items, one per line as Jupyter writes them,
among lines of structure, metadata and outputs (tables, tracebacks, base64 images). The script view
keeps every line where it is, so a span in the view is the span of the same lines in the file:
a line holding a code cell's item becomes that item's text, a markdown or raw cell's item the same
behind the kernel language's line comment (as jupytext writes it, so the code around it still
parses), and every other line is blank. Outputs are what the code printed, not what it is: left out.
"""
from __future__ import annotations

import bisect
import json
from dataclasses import replace

from .lazyre import LazyPattern

JUPYTER = "jupyter"  # the language of a notebook whose kernel language is not known

# A cell's source key: a key never matches inside a JSON string (its quotes would be escaped).
_SOURCE_KEY = LazyPattern(r'"source"\s*:\s*')
_SPACE = LazyPattern(r"[ \t\n\r]*")

# Kernel language (as notebooks name it) -> (language, line comment). Others stay `jupyter`, their
# prose written behind `#`.
_KERNELS: dict[str, tuple[str, str]] = {
    "python": ("python", "#"), "python3": ("python", "#"), "ipython": ("python", "#"),
    "r": ("r", "#"), "julia": ("julia", "#"), "bash": ("bash", "#"), "sh": ("bash", "#"),
    "ruby": ("ruby", "#"), "perl": ("perl", "#"), "powershell": ("powershell", "#"),
    "scala": ("scala", "//"), "java": ("java", "//"), "kotlin": ("kotlin", "//"),
    "javascript": ("javascript", "//"), "typescript": ("typescript", "//"), "go": ("go", "//"),
    "rust": ("rust", "//"), "c++": ("cpp", "//"), "cpp": ("cpp", "//"), "c": ("c", "//"),
    "c#": ("csharp", "//"), "csharp": ("csharp", "//"), "f#": ("fsharp", "//"), "fsharp": ("fsharp", "//"),
    "haskell": ("haskell", "--"), "sql": ("sql", "--"), "lua": ("lua", "--"),
    "matlab": ("matlab", "%"), "octave": ("matlab", "%"),
}


NOTEBOOK_RAW_FACTOR = 50


def raw_limit(language: str, max_bytes: int) -> int:
    """The bytes a file may have on disk under a size cap of max_bytes: a notebook's cap is on the
    script it holds, not on the outputs saved with it (a dozen plots are megabytes of base64: a
    quarter of a textbook's notebooks, their code a few dozen KB, were skipped as too large)."""
    return max_bytes * NOTEBOOK_RAW_FACTOR if language == JUPYTER else max_bytes


# A markdown heading of a cell as the script view writes it: behind the kernel's line comment.
_HEADING = LazyPattern(r"(?:#|//|--|%) (#{1,6})[ \t]+(.*?)[ \t#]*$")


def with_headings(chunks: list, text: str) -> list:
    """A notebook's chunks (of its script view, `text`) with the path of the markdown headings above
    each as its context (`Training > Split the data`), where the chunker gave none more precise (a
    line chunk has none; a syntax tree's module-level one is `module <path>`); any other file's as
    they are."""
    if not chunks or not is_notebook(chunks[0].path):
        return chunks
    trail: list[tuple[int, str]] = []
    path_at: list[str] = []  # the heading path in force at each line
    for line in text.split("\n"):
        m = _HEADING.match(line) if line[:1] in "#/-%" else None
        if m and m.group(2):
            level = len(m.group(1))
            trail = [h for h in trail if h[0] < level] + [(level, m.group(2))]
        path_at.append(" > ".join(title for _, title in trail))
    out = []
    for chunk in chunks:
        if chunk.context and not chunk.context.startswith("module "):
            out.append(chunk)
            continue
        # The headings over its first line, else (a chunk before any) the first it holds.
        context = path_at[chunk.start_line - 1] or path_at[min(chunk.end_line, len(path_at)) - 1]
        out.append(replace(chunk, context=context) if context else chunk)
    return out


def is_notebook(path: str) -> bool:
    return path[-6:].lower() == ".ipynb"


def as_script(text: str) -> tuple[str, str]:
    """(text, language) of a notebook as indexed: the script its cells hold, line for line, in its
    kernel's language; one that does not read as a notebook stays the JSON it is."""
    view = script_view(text)
    return (text, JUPYTER) if view is None else (view[1], view[0])


def script_view(text: str) -> tuple[str, str] | None:
    """(language, view) of a notebook's text, the view with the text's line count; None when the
    text is no notebook this reads (not JSON, no list of cells, a source that is not where the JSON
    says): the caller keeps the text as it is."""
    try:
        notebook = json.loads(text)
    except (ValueError, RecursionError):  # (outputs nested 1,000 deep: every build of the tree failed)
        return None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
        return None
    language, comment = _kernel(notebook.get("metadata"))
    starts = [0]  # each line's first offset
    at = text.find("\n")
    while at != -1:
        starts.append(at + 1)
        at = text.find("\n", at + 1)
    view: list[list[str]] = [[] for _ in starts]
    decoder = json.JSONDecoder()
    sources = iter(c for c in cells if "source" in c)
    cell = next(sources, None)
    for key in _SOURCE_KEY.finditer(text):
        if cell is None:
            break
        items = _string_items(text, key.end(), decoder)
        if items is None or "".join(s for _, s in items) != _joined(cell["source"]):
            continue  # a "source" key of something else (a widget's metadata)
        prose = cell.get("cell_type") != "code"
        for offset, item in items:
            # An item is one line ending in its newline; any other newline inside it is no line of
            # the file, so the item stays on the one line it is written on.
            line = item.removesuffix("\n").replace("\r", "").replace("\n", " ")
            if prose:
                line = f"{comment} {line}".rstrip() if line.strip() else comment
            view[bisect.bisect_right(starts, offset) - 1].append(line)
        cell = next(sources, None)
    if cell is not None:
        return None  # a cell's source was not found in the text: nothing to place its lines by
    return language, "\n".join(" ".join(parts) for parts in view)


def _kernel(metadata: object) -> tuple[str, str]:
    if isinstance(metadata, dict):
        for holder, key in (("kernelspec", "language"), ("language_info", "name"), ("kernelspec", "name")):
            value = metadata.get(holder)
            name = value.get(key) if isinstance(value, dict) else None
            if isinstance(name, str) and name.strip().lower() in _KERNELS:
                return _KERNELS[name.strip().lower()]
    return JUPYTER, "#"


def _joined(source: object) -> str | None:
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(s, str) for s in source):
        return "".join(source)
    return None


def _string_items(text: str, at: int, decoder: json.JSONDecoder) -> list[tuple[int, str]] | None:
    """(offset, string) of each item of the JSON string or list of strings at `at`; None when
    something else is there."""
    if text.startswith('"', at):
        try:
            return [(at, decoder.raw_decode(text, at)[0])]
        except ValueError:
            return None
    if not text.startswith("[", at):
        return None
    items: list[tuple[int, str]] = []
    pos = _SPACE.match(text, at + 1).end()
    if text.startswith("]", pos):
        return items
    while True:
        if not text.startswith('"', pos):
            return None
        try:
            value, end = decoder.raw_decode(text, pos)
        except ValueError:
            return None
        items.append((pos, value))
        pos = _SPACE.match(text, end).end()
        if text.startswith("]", pos):
            return items
        if not text.startswith(",", pos):
            return None
        pos = _SPACE.match(text, pos + 1).end()
