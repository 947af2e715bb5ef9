"""File name -> (language, kind). Kind is one of code, docs, config."""
from __future__ import annotations

import os
import re

from .lazyre import LazyPattern

CODE, DOCS, CONFIG = "code", "docs", "config"
KINDS = (CODE, DOCS, CONFIG)
# Code that usually holds values rather than logic about them (`export KEY=...`, a SQL seed):
# taken for data where secrets are looked for (a secret-looking name, a private key inside).
VALUE_SCRIPTS = frozenset({"bash", "powershell", "batch", "sql"})
# View templates (registered below): a template renders the file it is named for, `.env.j2` an
# `.env` and `secrets.yml.tmpl` a `secrets.yml`, its values often written in.
TEMPLATES = frozenset({"erb", "eex", "ejs", "handlebars", "mustache", "jinja", "twig", "liquid", "haml", "slim",
                       "pug", "razor", "template"})

_BY_EXTENSION: dict[str, tuple[str, str]] = {}


def _register(language: str, kind: str, *extensions: str) -> None:
    for ext in extensions:
        _BY_EXTENSION[ext] = (language, kind)


_register("python", CODE, ".py", ".pyi", ".pyx", ".pxd", ".smk")
_register("javascript", CODE, ".js", ".mjs", ".cjs", ".jsx")
_register("typescript", CODE, ".ts", ".tsx", ".mts", ".cts")
_register("go", CODE, ".go")
_register("java", CODE, ".java")
_register("kotlin", CODE, ".kt", ".kts")
_register("scala", CODE, ".scala", ".sc", ".sbt")
_register("swift", CODE, ".swift")
_register("c", CODE, ".c", ".h")
_register("cpp", CODE, ".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++", ".inl", ".ipp", ".tpp")
_register("csharp", CODE, ".cs", ".csx")
_register("rust", CODE, ".rs")
_register("ruby", CODE, ".rb", ".rake", ".gemspec", ".podspec", ".jbuilder", ".rabl", ".builder", ".thor", ".ru")
_register("php", CODE, ".php", ".phtml")
_register("elixir", CODE, ".ex", ".exs")
_register("haskell", CODE, ".hs", ".lhs", ".hs-boot")
_register("lua", CODE, ".lua")
_register("zig", CODE, ".zig")
_register("zig", CONFIG, ".zon")  # Zig Object Notation: `build.zig.zon`, a package's manifest
_register("bash", CODE, ".sh", ".bash", ".zsh", ".ksh", ".fish", ".bats")  # (.bats: Bats test files)
_register("objc", CODE, ".m", ".mm")
_register("dart", CODE, ".dart")
_register("r", CODE, ".r", ".R")
_register("julia", CODE, ".jl")
_register("perl", CODE, ".pl", ".pm")
_register("ocaml", CODE, ".ml", ".mli")
_register("erlang", CODE, ".erl", ".hrl")
_register("clojure", CODE, ".clj", ".cljs", ".cljc", ".edn")
_register("fsharp", CODE, ".fs", ".fsi", ".fsx")
_register("vb", CODE, ".vb")
_register("groovy", CODE, ".groovy", ".gradle")
_register("sql", CODE, ".sql")
_register("powershell", CODE, ".ps1", ".psm1")
_register("nim", CODE, ".nim")
_register("vim", CODE, ".vim")
# Read as the script their cells hold (notebook.script_view), in their kernel's language.
_register("jupyter", CODE, ".ipynb")
_register("elm", CODE, ".elm")
_register("solidity", CODE, ".sol")
_register("vue", CODE, ".vue")
_register("svelte", CODE, ".svelte")
_register("html", CODE, ".html", ".htm")
_register("css", CODE, ".css", ".scss", ".sass", ".less")
_register("proto", CODE, ".proto")
_register("graphql", CODE, ".graphql", ".gql", ".graphqls")
_register("cmake", CONFIG, ".cmake")
_register("make", CONFIG, ".mk")  # included makefiles (`common.mk`, `rules.mk`)
_register("fortran", CODE, ".f90", ".f95", ".f03", ".f08", ".f", ".for", ".f77")
_register("starlark", CODE, ".bzl", ".star")  # Bazel's rules and macros (BUILD files are config)
# More languages with a grammar in the pack (or none: line chunks): GPU kernels and shaders, HDLs,
# Lisps, assembly, Pascal and Ada, Tcl (redis's test suite), Windows batch files, schemas.
_register("cuda", CODE, ".cu", ".cuh")
_register("metal", CODE, ".metal")
_register("glsl", CODE, ".glsl", ".vert", ".frag", ".geom", ".tesc", ".tese", ".comp")
_register("hlsl", CODE, ".hlsl", ".hlsli")
_register("wgsl", CODE, ".wgsl")
_register("verilog", CODE, ".sv", ".svh")  # (`.v` is Coq's and V's too)
_register("vhdl", CODE, ".vhd", ".vhdl")
_register("asm", CODE, ".s", ".S", ".asm")
_register("commonlisp", CODE, ".lisp", ".lsp", ".asd")
_register("elisp", CODE, ".el")
_register("scheme", CODE, ".scm", ".sld")
_register("racket", CODE, ".rkt")
_register("fennel", CODE, ".fnl")
_register("crystal", CODE, ".cr")
_register("pascal", CODE, ".pas", ".dpr", ".lpr")
_register("ada", CODE, ".ads", ".adb")
_register("tcl", CODE, ".tcl")
_register("gleam", CODE, ".gleam")
_register("odin", CODE, ".odin")
_register("haxe", CODE, ".hx")
_register("gdscript", CODE, ".gd")
_register("qml", CODE, ".qml")
_register("purescript", CODE, ".purs")
_register("rescript", CODE, ".res", ".resi")
_register("cairo", CODE, ".cairo")
_register("cobol", CODE, ".cob", ".cbl")
_register("batch", CODE, ".bat", ".cmd")
_register("awk", CODE, ".awk")
_register("wat", CODE, ".wat", ".wast")
_register("astro", CODE, ".astro")
_register("jsp", CODE, ".jsp")
_register("prisma", CODE, ".prisma")
_register("thrift", CODE, ".thrift")
_register("capnp", CODE, ".capnp")
_register("flatbuffers", CODE, ".fbs")
_register("puppet", CODE, ".pp")
_register("bitbake", CONFIG, ".bb", ".bbappend", ".bbclass")
_register("jsonnet", CONFIG, ".jsonnet", ".libsonnet")
_register("cabal", CONFIG, ".cabal")
_register("gn", CONFIG, ".gn", ".gni")
_register("ninja", CONFIG, ".ninja")
# View templates: the markup and the code of an app's pages, mails and generated files (a Rails
# view, a Phoenix generator's `.ex.eex`, a Jinja page). Line chunks: a template's syntax tree (text
# runs between tags) has no definitions to cut at.
_register("erb", CODE, ".erb", ".rhtml")
_register("eex", CODE, ".eex", ".heex", ".leex")
_register("ejs", CODE, ".ejs")
_register("handlebars", CODE, ".hbs", ".handlebars")
_register("mustache", CODE, ".mustache")
_register("jinja", CODE, ".j2", ".jinja", ".jinja2", ".njk")
_register("twig", CODE, ".twig")
_register("liquid", CODE, ".liquid")
_register("haml", CODE, ".haml")
_register("slim", CODE, ".slim")
_register("pug", CODE, ".pug", ".jade")
_register("razor", CODE, ".cshtml", ".razor")
_register("template", CODE, ".tmpl", ".tpl", ".gotmpl")  # Go's text/template, Smarty, ...
_register("markdown", DOCS, ".md", ".markdown", ".mdx", ".rmd", ".qmd")  # (R Markdown, Quarto)
_register("rst", DOCS, ".rst")
_register("text", DOCS, ".txt", ".text")
_register("asciidoc", DOCS, ".adoc", ".asciidoc")
_register("org", DOCS, ".org")
_register("tex", DOCS, ".tex")
_register("json", CONFIG, ".json", ".jsonc", ".json5")
_register("yaml", CONFIG, ".yaml", ".yml")
_register("toml", CONFIG, ".toml")
_register("ini", CONFIG, ".ini", ".cfg", ".conf", ".properties",
          ".service", ".timer", ".socket")  # (systemd units are ini files)
# MSBuild's project and build files are XML: C#'s target frameworks, package references and
# `Directory.Build.props` (newtonsoft's `TargetFrameworks` was in no indexed file)
_register("xml", CONFIG, ".xml", ".xsd", ".plist", ".xaml", ".csproj", ".fsproj", ".vbproj", ".vcxproj", ".proj",
          ".props", ".targets", ".nuspec", ".slnx", ".config")  # (.NET's App.config, Web.config, nuget.config)
_register("nix", CONFIG, ".nix")
_register("hcl", CONFIG, ".tf", ".hcl", ".tfvars")

# Extensionless (or oddly named) project files that are worth indexing.
_BY_NAME: dict[str, tuple[str, str]] = {
    "Dockerfile": ("dockerfile", CONFIG),
    "Containerfile": ("dockerfile", CONFIG),
    "Makefile": ("make", CONFIG),
    "GNUmakefile": ("make", CONFIG),
    "makefile": ("make", CONFIG),
    "CMakeLists.txt": ("cmake", CONFIG),
    "Rakefile": ("ruby", CODE),
    "Gemfile": ("ruby", CONFIG),
    "Podfile": ("ruby", CONFIG),
    "Vagrantfile": ("ruby", CONFIG),
    "Snakefile": ("python", CODE),  # Snakemake's rules: Python with rule blocks
    "Pipfile": ("toml", CONFIG),
    "MLproject": ("yaml", CONFIG),
    "Guardfile": ("ruby", CONFIG),
    "Capfile": ("ruby", CONFIG),
    "Brewfile": ("ruby", CONFIG),
    "Berksfile": ("ruby", CONFIG),
    "Dangerfile": ("ruby", CONFIG),
    "Fastfile": ("ruby", CONFIG),
    "Appfile": ("ruby", CONFIG),
    "Thorfile": ("ruby", CODE),
    "meson.build": ("meson", CONFIG),
    "meson_options.txt": ("meson", CONFIG),
    "Jenkinsfile": ("groovy", CONFIG),
    "Procfile": ("text", CONFIG),
    "BUILD": ("starlark", CONFIG),
    "BUILD.bazel": ("starlark", CONFIG),
    "WORKSPACE": ("starlark", CONFIG),
    "WORKSPACE.bazel": ("starlark", CONFIG),
    "MODULE.bazel": ("starlark", CONFIG),
    "Justfile": ("make", CONFIG),
    "justfile": ("make", CONFIG),
    "README": ("text", DOCS),
    "LICENSE": ("text", DOCS),
    "CHANGELOG": ("text", DOCS),
    "go.mod": ("go", CONFIG),
    "Tiltfile": ("starlark", CONFIG),
    "Caddyfile": ("text", CONFIG),
    # Version pins of the version managers (asdf, mise, nvm, pyenv, rbenv, goenv, tfenv): "where is
    # the Go version pinned" has its answer there.
    ".tool-versions": ("text", CONFIG),
    ".nvmrc": ("text", CONFIG),
    ".node-version": ("text", CONFIG),
    ".python-version": ("text", CONFIG),
    ".ruby-version": ("text", CONFIG),
    ".go-version": ("text", CONFIG),
    ".terraform-version": ("text", CONFIG),
}

DEFAULT_EXTENSIONS: frozenset[str] = frozenset(_BY_EXTENSION)
DEFAULT_BASENAMES: frozenset[str] = frozenset(_BY_NAME)


def languages_of(kind: str) -> frozenset[str]:
    """The languages whose files are of this kind (code, docs, config)."""
    return frozenset(lang for lang, k in (*_BY_EXTENSION.values(), *_BY_NAME.values()) if k == kind)


# The program a script's `#!` line runs -> language: an extension-less script (`bin/deploy`, a git
# hook, `script/bootstrap`) is code like any other, and its first line is the only place that says so.
_BY_INTERPRETER: dict[str, str] = {
    "python": "python", "pypy": "python",
    "sh": "bash", "bash": "bash", "zsh": "bash", "ksh": "bash", "dash": "bash", "ash": "bash", "fish": "bash",
    "node": "javascript", "nodejs": "javascript", "bun": "javascript",
    "deno": "typescript", "ts-node": "typescript", "tsx": "typescript",
    "ruby": "ruby", "perl": "perl", "php": "php", "lua": "lua", "luajit": "lua",
    "rscript": "r", "julia": "julia", "elixir": "elixir", "escript": "erlang",
    "runhaskell": "haskell", "runghc": "haskell", "groovy": "groovy", "scala": "scala",
    "swift": "swift", "pwsh": "powershell", "dart": "dart",
}
_VERSIONED = LazyPattern(r"([a-z][a-z_+-]*?)[\d.]*")  # python3.11 -> python, lua5.4 -> lua


def script_language(first_line: str) -> tuple[str, str]:
    """(language, kind) of a script from its `#!` line (`#!/usr/bin/env -S python3 -u`), or ("", "")
    when the line names no program known here."""
    if not first_line.startswith("#!"):
        return ("", "")
    words = first_line[2:].split()
    if words and os.path.basename(words[0]) == "env":
        # env's options and VAR=value assignments come before the program
        words = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
    if not words:
        return ("", "")
    found = _VERSIONED.fullmatch(os.path.basename(words[0]).lower())
    language = _BY_INTERPRETER.get(found.group(1)) if found else None
    return (language, CODE) if language else ("", "")


def tool_file(word: str) -> bool:
    """A tool's file named `<Tool>file` (Dockerfile, Jenkinsfile, Makefile, Gemfile, ...; in any
    case: `api.dockerfile`)."""
    return len(word) > 4 and word.lower().endswith("file") and word.lower() in _TOOL_FILES


_TOOL_FILES = frozenset(name.lower() for name in _BY_NAME if name.lower().endswith("file"))


def dockerfile_variant(name: str) -> bool:
    """`Dockerfile.dev`, `Dockerfile.prod`, `api.dockerfile`: one of a project's several image builds."""
    lower = name.lower()
    return lower.startswith(("dockerfile.", "containerfile.")) or lower.endswith((".dockerfile", ".containerfile"))


def extension(name: str) -> str:
    """os.path.splitext(name)[1] of a base name (no separator in it), without its path handling: a
    walk asks for every file's. A leading dot starts no extension (`.bashrc`, `..x`)."""
    dot = name.rfind(".")
    if dot <= 0 or (name[0] == "." and not name[:dot].lstrip(".")):
        return ""
    return name[dot:]


# The committed example of a dotenv file (`.env.example`, `.env.local.sample`, Symfony's `.env.dist`,
# `example.env`): placeholders a project documents its settings with (`KEY=value` lines, read as
# ini), which an agent asks for by name (`where is DATABASE_URL set`); the real `.env` beside it
# is a secret (retrieval.discover).
_ENV_EXAMPLE = LazyPattern(r"\.env(?:rc)?(?:\.[\w-]+)*\.(?:example|sample|template|dist)"
                           r"|(?:example|sample|template)\.env", re.IGNORECASE)


def env_example(name: str) -> bool:
    """Whether a base name is a dotenv file's committed example."""
    return ".env" in name.lower() and _ENV_EXAMPLE.fullmatch(name) is not None


def detect(path: str) -> tuple[str, str]:
    """Return (language, kind) for a file name; ("", "") when unknown."""
    name = os.path.basename(path)
    if name in _BY_NAME:
        return _BY_NAME[name]
    ext = extension(name)
    found = _BY_EXTENSION.get(ext) or _BY_EXTENSION.get(ext.lower())
    if found:
        if found[0] in TEMPLATES and found[1] != CONFIG and detect(name[: -len(ext)])[1] == CONFIG:
            return (found[0], CONFIG)  # a template of a config file is config (`nginx.conf.j2`)
        return found
    if name.endswith(".d.ts"):
        return ("typescript", CODE)
    if dockerfile_variant(name):
        return _BY_NAME["Dockerfile"]
    if env_example(name):
        return _BY_EXTENSION[".ini"]
    return ("", "")


# A `.h` file written in C++ (namespaces, templates, access labels, classes with bodies, std::):
# its name says C, its text says otherwise. 361 of abseil's 380 headers match, none of curl's 178,
# one of redis's 68 (a C header with a C++ guard, which C++ tools read as well).
_CPP_HEADER = LazyPattern(r"^\s*(?:namespace\s+[\w:]+\s*\{|template\s*<|(?:public|private|protected)\s*:|"
                         r"class\s+\w+[^;()]*\{)|\bstd::|\busing\s+namespace\b", re.M)
HEADER_SCAN = 200_000  # characters looked at: enough for any header's first declarations


# An Objective-C header: its declarations (`@interface X : NSObject`, `@protocol`), or Foundation's.
_OBJC_HEADER = LazyPattern(r"^\s*(?:@(?:interface|protocol|implementation)\b|#import\s*<(?:Foundation|UIKit|AppKit)/)",
                           re.M)


# The languages only a file's text tells (from_content), none an extension names.
CONTENT_LANGUAGES = frozenset({"matlab"})
# Objective-C's marks in a `.m` file: a `.m` file without one is MATLAB's.
_OBJC_SOURCE = LazyPattern(r"^\s*(?:#(?:import|include|define|pragma)\b|@(?:interface|implementation|protocol|end|import)\b)",
                           re.M)


def from_content(path: str, language: str, text: str) -> str:
    """The language of a file once its text is known: a `.h` header written in Objective-C is
    `objc`, one in C++ `cpp`, a `.m` file written in MATLAB `matlab` (so `--lang` and `status`
    count it, and its grammar parses it); else `language`."""
    if language == "c" and path[-2:].lower() == ".h":
        if _OBJC_HEADER.search(text, 0, HEADER_SCAN):
            return "objc"
        if _CPP_HEADER.search(text, 0, HEADER_SCAN):
            return "cpp"
    if language == "objc" and path[-2:] == ".m" and not _OBJC_SOURCE.search(text, 0, HEADER_SCAN):
        return "matlab"  # an Objective-C file imports or implements something; a MATLAB script need not
    return language


def known_languages() -> list[str]:
    return sorted({lang for lang, _ in _BY_EXTENSION.values()} | {lang for lang, _ in _BY_NAME.values()}
                  | CONTENT_LANGUAGES)


# What people type for a language, mapped to the name detection gives it (`--lang py`).
ALIASES: dict[str, str] = {
    "py": "python", "python3": "python",
    "js": "javascript", "node": "javascript", "jsx": "javascript",
    "ts": "typescript", "tsx": "typescript",
    "rs": "rust",
    "golang": "go",
    "c++": "cpp", "cxx": "cpp", "cc": "cpp", "hpp": "cpp",
    "cs": "csharp", "c#": "csharp",
    "sh": "bash", "shell": "bash", "zsh": "bash",
    "rb": "ruby",
    "kt": "kotlin", "kts": "kotlin",
    "objective-c": "objc", "objectivec": "objc",
    "md": "markdown",
    "ipynb": "jupyter", "notebook": "jupyter",
    "yml": "yaml",
    "f#": "fsharp", "fs": "fsharp",
    "hs": "haskell",
    "ex": "elixir", "exs": "elixir",
    "pl": "perl",
    "ml": "ocaml",
    "erl": "erlang",
    "clj": "clojure",
    "ps1": "powershell", "pwsh": "powershell",
    "tf": "hcl", "terraform": "hcl",
    "docker": "dockerfile",
    "makefile": "make",
    "txt": "text",
    "restructuredtext": "rst",
    "latex": "tex",
    "scss": "css", "sass": "css", "less": "css", "protobuf": "proto", "sol": "solidity", "jl": "julia",
    "gql": "graphql", "vimscript": "vim", "viml": "vim", "bazel": "starlark", "bzl": "starlark",
    "heex": "eex", "hbs": "handlebars", "jinja2": "jinja", "j2": "jinja", "nunjucks": "jinja", "njk": "jinja",
    "cshtml": "razor", "jade": "pug", "tmpl": "template", "tpl": "template", "gotmpl": "template",
    "leex": "eex", "rhtml": "erb",
}


def resolve_language(name: str) -> str:
    """The canonical language for a name or alias (any case); ValueError naming the valid ones."""
    key = name.strip().lower()
    known = known_languages()
    if key in known:
        return key
    if key in ALIASES:
        return ALIASES[key]
    from difflib import get_close_matches

    close = get_close_matches(key, [*known, *ALIASES], n=1)
    guess = f"did you mean {close[0]}? " if close else ""
    raise ValueError(
        f"unknown language {name!r}; {guess}choose one of: {', '.join(known)} "
        f"(or an alias: {', '.join(sorted(ALIASES))})"
    )
