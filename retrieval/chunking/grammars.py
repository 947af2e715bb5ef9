"""Which tree-sitter grammar parses a file: a table, no imports of the extra.

Keys are the language names of `retrieval.languages`; the grammar names are those of
tree-sitter-language-pack 0.13 (its wheel ships them, nothing is downloaded). A few languages pick
their grammar by extension (`.tsx` is TSX, `.mli` an OCaml interface, `.scss` SCSS).
"""
from __future__ import annotations

# language -> grammar, for every language the discovery knows that the pack can parse
GRAMMARS: dict[str, str] = {
    "python": "python", "javascript": "javascript", "typescript": "typescript", "go": "go",
    "java": "java", "kotlin": "kotlin", "scala": "scala", "swift": "swift", "c": "c", "cpp": "cpp",
    "csharp": "csharp", "rust": "rust", "ruby": "ruby", "php": "php", "elixir": "elixir",
    "haskell": "haskell", "lua": "lua", "zig": "zig", "bash": "bash", "objc": "objc", "dart": "dart",
    "r": "r", "julia": "julia", "perl": "perl", "ocaml": "ocaml", "erlang": "erlang",
    "clojure": "clojure", "fsharp": "fsharp", "groovy": "groovy", "sql": "sql",
    "powershell": "powershell", "nim": "nim", "vim": "vim", "elm": "elm", "solidity": "solidity",
    "vue": "vue", "svelte": "svelte", "html": "html", "css": "css", "proto": "proto",
    "graphql": "graphql", "cmake": "cmake", "json": "json", "yaml": "yaml", "toml": "toml",
    "ini": "ini", "xml": "xml", "nix": "nix", "hcl": "hcl", "dockerfile": "dockerfile",
    "make": "make", "starlark": "starlark", "fortran": "fortran",
    "cuda": "cuda", "metal": "cpp", "glsl": "glsl", "hlsl": "hlsl", "wgsl": "wgsl", "verilog": "verilog",
    "vhdl": "vhdl", "asm": "asm", "commonlisp": "commonlisp", "elisp": "elisp", "scheme": "scheme",
    "racket": "racket", "fennel": "fennel", "pascal": "pascal", "ada": "ada", "tcl": "tcl", "gleam": "gleam",
    "odin": "odin", "haxe": "haxe", "gdscript": "gdscript", "qml": "qmljs", "purescript": "purescript",
    "cairo": "cairo", "wat": "wat", "astro": "astro", "prisma": "prisma", "thrift": "thrift",
    "capnp": "capnp", "puppet": "puppet", "bitbake": "bitbake", "jsonnet": "jsonnet", "gn": "gn",
    "ninja": "ninja", "meson": "meson", "matlab": "matlab",
}

_BY_SUFFIX: dict[str, str] = {
    ".tsx": "tsx", ".mli": "ocaml_interface", ".scss": "scss", ".tf": "terraform", ".fish": "fish",
    ".wast": "wast",
}
# Files named for their language whose syntax is their own: `go.mod` is not Go (parsed as Go, its
# directives were error nodes cut every line or two).
_BY_NAME: dict[str, str] = {"go.mod": "gomod"}

# Prose formats the stdlib heading chunker handles (retrieval.chunking.markdown).
HEADING_LANGUAGES = frozenset({"markdown", "rst"})


def grammar_for(path: str, language: str) -> str | None:
    """The grammar to parse `path` with, or None when the pack has none for it."""
    if language not in GRAMMARS:
        return None
    special = _BY_NAME.get(path[path.rfind("/") + 1:])
    if special is not None:
        return special
    dot = path.rfind(".")
    if dot > path.rfind("/"):
        special = _BY_SUFFIX.get(path[dot:].lower())
        if special is not None:
            return special
    return GRAMMARS[language]


def structured(language: str) -> bool:
    """Whether files of `language` are chunked by their structure (syntax tree or headings)."""
    return language in GRAMMARS or language in HEADING_LANGUAGES


def chunking_by_language(files: dict, fallback: list[str]) -> dict[str, str]:
    """{language: "ast" | "headings" | "lines" | "ast (N of M files by lines)"} for the indexed files
    of a manifest (`files` columns) whose store lists the `fallback` paths that got line chunks."""
    fell = set(fallback)
    totals: dict[str, list[int]] = {}
    for path, language, chunks in zip(files["path"], files["language"], files["chunks"]):
        if chunks > 0:
            entry = totals.setdefault(language, [0, 0])
            entry[0] += 1
            entry[1] += path in fell
    out = {}
    for language, (n, by_lines) in sorted(totals.items(), key=lambda kv: (-kv[1][0], kv[0])):
        if not structured(language) or by_lines == n:
            out[language] = "lines"
        else:
            how = "headings" if language in HEADING_LANGUAGES else "ast"
            out[language] = f"{how} ({by_lines} of {n} files by lines)" if by_lines else how
    return out
