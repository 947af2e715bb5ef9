"""Ranking signals applied after first-stage BM25, each one switchable for ablations.

The first stage returns scored chunks; this stage adjusts each chunk by what its file is (tests,
examples, vendored or generated code, docs rank below source unless the query asks for them), then
aggregates evidence per file and keeps the best chunk of each file first, so the top of the list
covers as many distinct files as it can.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass, fields
from typing import Callable, Iterable

from . import languages
from .memo import Memo
from .text import _WORD, tokenize, words_of

_TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|spec|specs|testing|testdata|test_?utils?|fixtures?)(/|$)"
    r"|(^|/)test_[^/]*$|_(tests?|spec)\.[^/]+$|\.(test|spec)\.[^/]+$",
    re.IGNORECASE,
)
# A class-named test file (`FooTest.java`, `BarTests.cs`, `BazSpec.scala`): the capital matters,
# or `latest.py`, `contest.js` and `respec.ts` would be tests.
_TEST_CLASS_FILE = re.compile(r"(^|/)[^/]*(Tests?|Spec|Specs)\.[A-Za-z]+$")
# Examples, demos and benchmarks: by directory, or a benchmark by its file name as tests are
# (`bench_speed.py`, `parser_bench.go`, `benchmark_io.py`).
_EXAMPLE_PATH = re.compile(
    r"(^|/)(examples?|samples?|demos?|benchmarks?|benches|playground)(/|$)"
    r"|(^|/)(bench|benchmark)_[^/]*$|_(bench|benchmark)\.[^/]+$",
    re.IGNORECASE,
)
# Vendored: conventional directories, and copied-in libraries named with their release
# (`static/jquery-3.5.1.js`, `underscore-1.13.1.min.js`).
_VENDOR_PATH = re.compile(
    r"(^|/)(vendor|vendored|third[_-]?party|external|extern)(/|$)|[-.]v?\d+\.\d+\.\d+(\.min)?\.[a-z]+$",
    re.IGNORECASE,
)
# Generated: minified bundles, protobuf and gRPC output, and the suffixes code generators mark their
# files with (`client.gen.ts`, `zz_generated.deepcopy.go`, `model.g.dart`, `Form1.Designer.cs`), and
# the build tools' wrapper scripts their `wrapper` tasks write (`gradlew`, `mvnw`), and package
# managers' lockfiles: they name every package and matched a question about one above its code.
_GENERATED_PATH = re.compile(
    r"\.min\.[a-z]+$|\.pb\.(go|cc|h)$|_pb2(_grpc)?\.pyi?$|\.generated\.|(^|/)generated(/|$)"
    r"|\.gen\.[a-z]+$|_generated\.[a-z]+$|(^|/)zz_generated\.|\.g\.dart$|\.freezed\.dart$|\.designer\.cs$"
    r"|(^|/)(gradlew|mvnw)$"
    r"|(^|/)(package-lock\.json|npm-shrinkwrap\.json|pnpm-lock\.yaml|yarn\.lock|bun\.lockb?|deno\.lock"
    r"|Cargo\.lock|composer\.lock|Gemfile\.lock|Podfile\.lock|Package\.resolved|poetry\.lock|uv\.lock|Pipfile\.lock"
    r"|pdm\.lock|go\.sum|mix\.lock|pubspec\.lock|flake\.lock|gradle\.lockfile|packages\.lock\.json|conan\.lock)$",
    re.IGNORECASE,
)
# A language tag as a directory name: `en`, `ja`, `zh-hant`, `pt_BR`, `zh-CN`.
_LOCALE_DIR = re.compile(r"[a-z]{2}(?:[-_][A-Za-z]{2,4})?")
_DOCS_DIR = re.compile(r"(^|/)(docs?|documentation)/", re.IGNORECASE)  # doc/conf.py, docs/examples/x.py
_ASKS_FOR_TESTS = {"test", "tests", "testing", "spec", "specs", "mock", "fixture", "fixtures"}
_ASKS_FOR_EXAMPLES = {"example", "examples", "sample", "demo", "tutorial", "benchmark"}
_ASKS_FOR_DOCS = {"doc", "docs", "documentation", "readme", "guide", "changelog", "tutorial"}


@dataclass(frozen=True)
class RankingConfig:
    path_weight: int = 1  # path words added to every chunk of the file (0: off)
    definition_weight: float = 1.0  # weight of the "defines a query identifier" term (0: off)
    symbol_definition_weight: float = 3.0  # the same for a bare-identifier query
    code_definition_weight: float = 3.0  # the same for a word a question writes as code
    file_evidence: float = 0.25  # share of a file's other matching chunks added to its best (0: off)
    evidence_chunks: int = 5  # at most this many other chunks count (big hub files would win otherwise)
    diversify: bool = True  # one chunk per file before any file's second chunk
    test_penalty: float = 0.6
    example_penalty: float = 0.6
    vendor_penalty: float = 0.5
    generated_penalty: float = 0.5
    docs_penalty: float = 0.6  # prose files, when the query is not about docs
    candidates: int = 300  # first-stage depth
    file_candidates: int = 100  # at most this many of them (or a quarter of the depth) from one file
    symbol_filename_boost: float = 2.5  # bare identifier == the file's name (`Axios` -> Axios.js)
    exact_definition_weight: float = 0.5  # share of the definition weight for the exact spelling
    # The same share for a bare identifier spelled with a capital (`Deserialize`, a type's name in
    # most languages): all of it. serde's `impl Deserialize for Bound` defines `deserialize` too, whose
    # case-folded term is the trait's, and a short impl outranked the trait on length (semble-dev:
    # serde's `Serialize` and `Deserialize` 0.631 -> 1.0 in lexical, treesitter and hybrid, no other
    # query moved). For every identifier it cost express's `application` and `response` (session 47).
    capitalised_exact_weight: float = 1.0
    weak_definition_weight: float = 1.0  # share of a bare identifier's for a weak definition (features)
    exact_filename_boost: float = 1.25  # further boost when the file name has the exact spelling
    # A bare identifier asked for with a language's keyword (`def render`, `fn spawn`, `func New`):
    # the factor of a hit in a language whose definitions that keyword does not open (in rails,
    # `def render` found a bundled JavaScript file's `async render(` first).
    keyword_language_penalty: float = 0.3
    # A sentence whose words, in order, a chunk writes next to each other (a pasted message and the
    # string literal saying it): the chunk's factor is 1 + phrase_boost * the share of the
    # sentence's word pairs its longest run of them is, when that run is phrase_pairs or more. In
    # tokio, the panic message `there is no reactor running, must be called from the context of a Tokio 1.x
    # runtime` found files named `runtime.rs` and `context.rs` before the constant saying it.
    phrase_boost: float = 2.0
    phrase_pairs: int = 4
    # A shorter sentence counts when the run is all of it, of at least this many pairs (abseil's
    # `Unknown command line flag`, four words, found a header naming `CommandLineFlag` before the
    # line printing it).
    phrase_whole_pairs: int = 3
    # The share of that boost a test file gets, unless the query asks for tests: a test quotes a
    # message as printed, which the code raising it builds from pieces (`#{action}`, `" + "`), and
    # ecto's, axios's and newtonsoft's tests came before that code (literals sampled from code:
    # unchanged at top-1, lexical 0.898, treesitter 0.890; semble-dev +1 query)
    phrase_test_share: float = 0.0
    long_query_words: int = 40  # a query this long is a pasted report, not a question
    long_query_damping: bool = True  # long queries: log term counts, mentions of tests/docs don't ask for them
    long_query_title_weight: float = 6.0  # added to the weight of words on a long query's first line
    long_query_code_weight: float = 1.0  # added to words a long query writes as code
    long_query_noncode: float = 0.5  # long queries: docs, config, tests and examples
    long_query_min_idf: float = 1.0  # long queries skip words this common (idf below it)
    long_query_definer_boost: float = 0.5  # long queries: per named symbol a file defines
    # Long queries: a file's n-th further chunk competes at its score times this to the n (0: after
    # every file's best; 1: at its own score). A pasted report is about the code to change, most
    # often in its best file beside the chunk that matched best: swebench-dev's span figure rose
    # with every step from 0 to 1 for both lexical chunkers (scripts/README.md).
    long_query_repeat_discount: float = 1.0
    # Long queries: a further chunk of a file is lifted this share of the way from its own score to
    # its file's (best chunk plus evidence), so the best file's other matching chunks come before
    # the next files' weaker ones; files keep their order, so the file ranking is unchanged.
    long_query_file_share: float = 0.25
    # Questions and identifiers: the same at half weight. At 0 (every file's best chunk before any
    # second one) a big file's second chunk scoring four times the fifth file's best waited behind
    # every file that matched a word: in small repositories of long files the chunk that answers
    # fell out of the first ten (a probe's 60 agent questions on six packages, exact spans, hit@10:
    # lexical 0.833 -> 0.867, treesitter 0.767 -> 0.850); semble-dev within noise (lexical +0.0003,
    # treesitter -0.0002); 1.0 cost semble-dev 0.009 (its answers are spread over files).
    repeat_discount: float = 0.5
    filename_boost: float = 2.0  # every word of the file's name is in the query (NL queries)
    scope_boost: float = 3.0  # `Router.add_route`: a chunk whose scope path ends with that name
    identifier_pair_weight: float = 0.5  # a question's word pairs one identifier joins (0: off)
    abbreviation_weight: float = 0.5  # a question word's abbreviation (`environment`: `env`), this share (0: off)
    path_mention_boost: float = 0.5  # a file the query names by its path, as a definer (a traceback; 0: off)
    # A chunk holding the line a pasted stack frame names in that file, or defining the frame's
    # function (the line may have moved since): where the error went through (0: off).
    frame_boost: float = 1.0
    one_page_per_translation: bool = True  # docs differing only in a language directory are one result

    def replace(self, **changes) -> "RankingConfig":
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return RankingConfig(**values)


def query_words(query: str) -> list[str]:
    return words_of(query)


def is_symbol_query(query: str) -> bool:
    """A bare identifier (or a dotted/qualified one): `HTTPException`, `os.path.join`, `Foo::bar`."""
    q = query.strip()
    return bool(q) and " " not in q and len(query_words(q)) >= 1 and len(q) <= 120


_PATH_CLASSES: Memo = Memo(200_000)


def _path_classes(path: str) -> tuple[bool, bool, bool, bool]:
    """(test, example, vendored, generated) for a path; memoised, the regexes are the costly part."""
    found = _PATH_CLASSES.get(path)
    if found is None:
        found = _PATH_CLASSES.put(path, (
            bool(_TEST_PATH.search(path) or _TEST_CLASS_FILE.search(path)),
            bool(_EXAMPLE_PATH.search(path)),
            bool(_VENDOR_PATH.search(path)),
            bool(_GENERATED_PATH.search(path)),
        ))
    return found


def is_test_path(path: str) -> bool:
    return _path_classes(path)[0]


def test_words(words) -> set[str]:
    """The words among `words` that ask for tests (`test`, `specs`, `mock`, ...)."""
    return set(words) & _ASKS_FOR_TESTS


def path_prior(path: str, kind: str, words: set[str], config: RankingConfig, long: bool = False,
               marked_generated: bool = False) -> float:
    """Multiplier for a chunk's score from what its file is (`marked_generated`: its header says a
    tool wrote it, retrieval.generated)."""
    factor = 1.0
    test, example, vendored, generated = _path_classes(path)
    generated = generated or marked_generated
    if long and (test or example or kind in ("docs", "config") or _DOCS_DIR.search(path)):
        # A pasted report is answered by the source that must change, not by the docs, the
        # configuration or the tests that its words also match (an issue template matches them all).
        factor *= config.long_query_noncode
    if test and not (words & _ASKS_FOR_TESTS):
        factor *= config.test_penalty
    if example and not (words & _ASKS_FOR_EXAMPLES):
        factor *= config.example_penalty
    if vendored:
        factor *= config.vendor_penalty
    if generated:
        factor *= config.generated_penalty
    if config.docs_penalty != 1.0 and (kind == "docs" or _rendered_docs(path)) and not (words & _ASKS_FOR_DOCS):
        factor *= config.docs_penalty
    return factor


def _rendered_docs(path: str) -> bool:
    """A web page under a docs directory: documentation rendered to HTML (jazzy's, javadoc's,
    rustdoc's pages named after each type), which outranked the types' source for their names
    (alamofire's `docs/Structs/GoogleXSSIPreprocessor.html` and its docset copy first and second)."""
    return path.lower().endswith((".html", ".htm")) and bool(_DOCS_DIR.search(path))


def _squash(word: str) -> str:
    return "".join(ch for ch in word.lower() if ch.isalnum())


_NAME_WORDS: Memo = Memo(200_000)


def file_name_words(path: str) -> tuple[str, frozenset]:
    """(squashed file stem, its stemmed words) for a path: `core/AxiosHeaders.js` -> ("axiosheaders", {axio, header})."""
    found = _NAME_WORDS.get(path)
    if found is None:
        name = path.rsplit("/", 1)[-1]
        stem = name.split(".", 1)[0] if not name.startswith(".") else name
        words = frozenset(t for t in tokenize(stem)[1:] or tokenize(stem))
        found = _NAME_WORDS.put(path, (_squash(stem), words))
    return found


_LINE_SUFFIX = re.compile(r":\d+(?:[-:]\d+)?$")  # `core.py:1255`, `core.py:10-20`


_CAPITALISED_EXTENSIONS = frozenset({"Rmd", "Rmarkdown", "Qmd", "Rnw", "Rd", "Rprofile", "Rhistory"})


def file_query_stem(query: str) -> str | None:
    """The file name a query that is a path names, without its extension: `termui` for
    `src/click/termui.py` or `core.py:1255`; None for anything else (`os.path.join`)."""
    name = _LINE_SUFFIX.sub("", query.strip()).rsplit("/", 1)[-1]
    stem, dot, extension = name.rpartition(".")
    # A capitalised word after the dot of a bare name is a member, not an extension: `Phoenix.Socket`,
    # `App.Service` named a systemd unit (`.socket`), and its file-name prior went to `phoenix.js`. A
    # path (`vignettes/intro.Rmd`, `report.Rmd:20`) and R's and Quarto's own spellings stay files.
    if extension[:1].isupper() and not extension.isupper() and extension not in _CAPITALISED_EXTENSIONS \
            and "/" not in query and not _LINE_SUFFIX.search(query.strip()):
        return None
    if dot and stem and not stem.endswith(".") and "." + extension.lower() in languages.DEFAULT_EXTENSIONS:
        return stem
    return None


def queried_file_name(query: str) -> str:
    """The lower-case name of the file a query names by its name or path (`readme.md` of
    `README.md`, `conftest.py` of `tests/conftest.py:12`, a well-known name as written: `Makefile`,
    `go.mod`); '' when it names none."""
    return written_file_name(query).lower()


def written_file_name(query: str) -> str:
    """queried_file_name's name as the query writes it (`README.md`)."""
    written = query.strip()
    directory, slash, name = _LINE_SUFFIX.sub("", written).rpartition("/")
    if not written or any(c.isspace() for c in (directory if slash else name)):
        # A sentence ending in a file's name (`where is router.ts`, `... in config/database.yml`)
        # is no name of a file; a path's last name may hold spaces (`Documentation/Alamofire 2.0
        # Migration Guide.md`), a bare name may not (as likely a sentence).
        return ""
    if name in languages.DEFAULT_BASENAMES:
        return name
    if file_query_stem(query) is None:
        return ""
    extension = name.rpartition(".")[2]
    if extension.isupper() and "/" not in written and not _LINE_SUFFIX.search(written):
        return ""  # `Context.JSON`, `Foo.XML`: a member named in capitals, as likely as a file
    return name


def is_path_query(query: str) -> bool:
    """Whether a query is a file's path or `name:line` (`src/click/core.py`, `core.py:120`): it
    names a file, not a member (`core.py` alone may be either, see symbol_key)."""
    q = query.strip()
    return file_query_stem(q) is not None and ("/" in q or bool(_LINE_SUFFIX.search(q)))


_ARITY = re.compile(r"^([A-Za-z_][\w.:!?]*)/\d{1,3}$")


def without_arity(query: str) -> str:
    """Elixir's and Erlang's `Phoenix.Controller.redirect/2` names `Phoenix.Controller.redirect`:
    the `/2` is its arity, not a path (the symbol was `2`, and no scope agreed)."""
    m = _ARITY.match(query.strip())
    return m.group(1) if m else query


def symbol_key(query: str) -> str:
    """The last component of a qualified identifier: `os.path.join` -> `join`; the file name of a
    path (`src/click/core.py` -> `core`, whose file the name prior then prefers)."""
    query = without_arity(query)
    stem = file_query_stem(query)
    if stem is not None:
        return stem
    return re.split(r"\.|::|#|->|/", query.strip())[-1]


_QUALIFIER = re.compile(r"\.|::|#|->|\\")
_ARGUMENTS = re.compile(r"[<\[(].*$")  # `Vec<T>` is `Vec`


def qualified_name(query: str) -> tuple[str, ...]:
    """(`Router`, `add_route`) for `Router.add_route`, `Router::add_route`, `Router#add_route`;
    () for anything else (a bare identifier says nothing about its scope)."""
    q = without_arity(query).strip()
    # A path (`src/core.py`, `core.py:12`) names no member; `Response.json` may be either, and is
    # asked for as both (a file named after the stem is preferred too, see symbol_key).
    if not is_symbol_query(q) or "/" in q or _LINE_SUFFIX.search(q):
        return ()
    parts = tuple(p for p in _QUALIFIER.split(q) if p)
    if len(parts) < 2:
        return ()
    last = parts[-1].rstrip("'") if parts[-1][-1:] == "'" else \
        parts[-1][:-1] if parts[-1][-1:] in ("!", "?") else parts[-1]  # Ruby's `save!`, Haskell's `M.foldl'`
    return parts if all(_WORD.fullmatch(p) for p in (*parts[:-1], last)) else ()


def _scope_pieces(context: str) -> list[str]:
    """A scope path's elements. An impl head is one element whatever paths it writes (`impl<'de>
    de::IntoDeserializer<'de, E> for Unit`: cut at its `::`, it was a scope `de`, and
    `de::Deserializer` agreed with the `type Deserializer` inside it)."""
    pieces: list[str] = []
    for element in context.split("."):
        if element.startswith("impl") and element[4:5] in (" ", "<"):
            # Its type (after `for`, else after `impl<...>`), by its last path component:
            # `impl From<Error> for io::Error` is `Error`, `impl<T> Vec<T>` is `Vec`.
            head = _without_generics(element)
            named = head.split(" for ")[-1] if " for " in head else head[len("impl"):]
            pieces.append(_QUALIFIER.split((named.split() or [""])[-1])[-1])
        else:
            pieces.extend(_QUALIFIER.split(element))
    return pieces


_GENERICS = re.compile(r"<[^<>]*>")


def _without_generics(text: str) -> str:
    """text without its `<...>` groups, nested ones too (a few rounds: a head nests a few deep)."""
    for _ in range(8):
        shorter = _GENERICS.sub("", text)
        if shorter == text:
            break
        text = shorter
    return text


def scope_agrees(context: str, parts: tuple[str, ...], exact: bool = False, gaps: bool = False) -> bool:
    """Whether a chunk's scope path ends with the qualified name: `Router.add_route` agrees with
    `APIRouter`? no; with `impl Service for Router.add_route`, `app.Router.add_route`: yes. Each
    scope element counts by its last word (`impl Service for Router` is `Router`). Letter case is
    ignored unless `exact` (a query's case may be loose; Go's `Handle` and `handle` are two methods).
    With `gaps`, the name's qualifiers may have scopes between them, the last part still last:
    `Ecto.Repo.insert` agrees with `Ecto.Repo.__using__.insert` (a function a macro defines)."""
    if not context or not parts:
        return False
    names = [_ARGUMENTS.sub("", (piece.split() or [""])[-1]) for piece in _scope_pieces(context)]
    if len(names) < len(parts):
        return False
    if not exact:
        names, parts = [n.lower() for n in names], tuple(p.lower() for p in parts)
    if not gaps:
        return names[-len(parts):] == list(parts)
    if names[-1] != parts[-1]:
        return False
    rest = iter(names[:-1])
    return all(part in rest for part in parts[:-1])  # in order: `in` consumes the iterator


def member_named(query: str, context: str, symbol: str, members) -> tuple[str, str, str] | None:
    """The (name, scope path, kind) of the definition a symbol query names in a chunk holding
    several (`members`: the others than its label, context and symbol, as Chunk.members), when its label names
    another: `Context.JSON` in a chunk of merged methods labelled `Context.JSONP`. None when the
    label already names it, the query is no symbol, or no member is named in its letter case (any
    case when the query is all lower case)."""
    if not members or not is_symbol_query(query):
        return None
    # Letter case decides unless the query has none (`Serialize` is the trait, not a `serialize`).
    loose = query.islower()
    parts = qualified_name(query)  # `Response.json` is asked for as a member too (see symbol_key)
    if parts:
        if scope_agrees(context, parts, exact=True):
            return None
        found = [m for m in members if scope_agrees(m[1], parts, exact=True)]
        if not found and loose and not scope_agrees(context, parts):
            found = [m for m in members if scope_agrees(m[1], parts)]
        if not found and not scope_agrees(context, parts[-1:], exact=True):
            # `Session.send` in a chunk holding `BaseAdapter.send`, labelled `BaseAdapter`: that
            # `send` is what matched (it was told the class)
            found = [m for m in members if m[0] == parts[-1]]
        return tuple(found[0][:3]) if found else None
    if "/" in query or file_query_stem(query) is not None:
        return None  # a path names a file, not a definition
    key = symbol_key(query)
    # The label names it when its scope path ends with it: a module-level chunk's symbol is only
    # its first definition (`module context`, symbol `ShouldBindQuery`, was told as the module).
    if scope_agrees(context, (key,), exact=True):
        return None
    found = [m for m in members if m[0] == key]
    if not found and loose and not scope_agrees(context, (key,)):
        found = [m for m in members if m[0].lower() == key.lower()]
    return tuple(found[0][:3]) if found else None


_QUERY_WORD = re.compile(r"[^\W_][\w-]*")
MIN_SPELLED_NAME = 4  # shorter stems (`io`, `api`, `util`) are words a question uses anyway


def spells_file_name(query: str, path: str) -> bool:
    """Whether one word of the query is the file's name (`JsonReader` or `json_reader` for
    `src/JsonReader.cs`): the asker names the place, as a bare identifier names a definition."""
    squashed = file_name_words(path)[0]
    if len(squashed) < MIN_SPELLED_NAME:
        return False
    return any(_squash(word) == squashed for word in _QUERY_WORD.findall(query))


# A file path as a report or question writes it: `sympy/printing/str.py`, a traceback's
# `File "/usr/lib/python3/site-packages/astropy/io/fits/card.py", line 3`, `src\\app\\main.ts`,
# `routing.py:120`, a link to a file. Words are cut out first and each tested on its own: one
# pattern over the whole text backtracks quadratically on a long run of letters or slashes.
_PATH_WORD = re.compile(r"[\w.~/\\-]+")
_FILE_NAME = re.compile(r"[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,9}")  # the extension tells it from a word
# `./x.py`, `../x.py`, `/abs/x.py`, `C:/x.py`, `file:///x.py`: not a path's part
_LEADING_DIRS = re.compile(r"^(?:file://|[A-Za-z]:(?=/)|\.{1,2}/|/)+")
MAX_MENTIONS = 200


def _file_path(word: str) -> str | None:
    """A written-out path as a `/`-separated one from the tree's top (`./x.py`, `src\\app\\main.ts`,
    `/abs/x.py.`), or None when its last part is no file name."""
    path = _LEADING_DIRS.sub("", word.replace("\\", "/").rstrip("."))
    return path if _FILE_NAME.fullmatch(path.rsplit("/", 1)[-1]) else None


def file_names_only(query: str) -> str:
    """The query with each file path it writes out cut to the file's name: the directories of a
    pasted traceback's frames (`/usr/lib/python3.11/site-packages/...`) say where the reporter's
    copy lived, words no index of the repository holds."""
    def cut(match: re.Match) -> str:
        path = _file_path(match.group(0))
        return path.rsplit("/", 1)[-1] if path else match.group(0)

    return _PATH_WORD.sub(cut, query)


def path_mentions(query: str) -> tuple[str, ...]:
    """The file paths a query writes out, `/`-separated, in order of first mention."""
    found = [path for path in map(_file_path, _PATH_WORD.findall(query)) if path]
    # A pasted log may write thousands: the first ones (a report's own traceback) are enough.
    return tuple(dict.fromkeys(found))[:MAX_MENTIONS]


# A stack frame: Python's `File "x/core.py", line 12, in invoke`; the `path:line` that Go, Rust,
# JavaScript, Java, compilers and pytest print (`src/x.rs:10:5`, `(Foo.java:123)`, `x.py:12: in f`).
# The second pattern starts only where a path can (the lookbehind): tried at every letter of a long
# word, it backtracked quadratically.
_PYTHON_FRAME = re.compile(r'File "([^"\n]{1,1000})", line (\d{1,9})(?:, in (\w+))?')
_LINE_MENTION = re.compile(r"(?<![\w.~/\\-])([\w.~/\\-]+):(\d{1,9})\b")


# The function of a frame, where the trace prints one: Java's, Kotlin's, JavaScript's and C#'s
# `at pkg.Class.method(File.java:12)`, `at Class.method (/x/file.ts:12:5)`, `at Ns.C.M() in /x/C.cs:line 42`;
# Go's and Rust's print it on the line above the file's (`pkg.(*node).addRoute(...)` over `\t/x/tree.go:230`,
# `3: serde::de::MapAccess::next_value` over `at ./src/de.rs:1716:39`).
_CALL_FRAME = re.compile(
    r"\bat\s+(?:async\s+)?(?:new\s+)?([\w$.<>\[\]`]{1,300}?)\s?\((?:[^()\n]{0,300}\)\s+in\s+)?"
    r"([^()\n]{1,1000}?):(?:line\s+)?(\d{1,9})(?::\d+)?\)?")
_UNDER_FRAME = re.compile(r"^(?:\t|[ \t]+at[ \t]+)([^\s:()]{1,1000}\.(?:go|rs)):(\d{1,9})", re.MULTILINE)
_LAST_NAME = re.compile(r"([A-Za-z_]\w*)(?:::h[0-9a-f]{16})?$")  # `(*node).addRoute`, `de::next_value::h0123...`


def _function(qualified: str) -> str:
    """A frame's function without its owners: `com.x.Deserializer.handle` -> `handle`."""
    name = re.split(r"[.:]", qualified.rstrip(".:"))[-1]
    if name[-1:] in ("!", "?") and name[:-1].isidentifier():
        return name  # Ruby's and Elixir's `save!`, `valid?`
    return name if name.isidentifier() else ""


# The frame shapes that name their function elsewhere: C/C++ debuggers and sanitizers
# (`#1 0x55d in func /x/a.c:12`, gdb's `#7 0x.. in ns::C<T>::f (this=..) at /x/a.hpp:513`), Ruby
# (`x.rb:87:in 'Mod::C#save!'`), PHP (`#0 /x/File.php(507): Ns\\C->method('a')`, and the `in /x/File.php:527`
# where it was thrown), Elixir (`lib/x.ex:34: Mod.fun/1`), Swift crash reports
# (`C.f(using:) + 312 (File.swift:844)`) and Zig's panics (`src/x.zig:267:17: 0x1a2b3c4 in fn (zls)`).
_GDB_FRAME = re.compile(r"^[ \t]*#\d{1,4}[ \t]+(?:0x[0-9a-fA-F]+[ \t]+in[ \t]+)?([^\n]{1,2000}?)[ \t]+(?:at[ \t]+)?"
                        r"([^\s():]{1,1000}):(\d{1,9})(?::\d+)?[ \t]*$", re.MULTILINE)
_RUBY_FRAME = re.compile(r"(?<![^\s'\"`(])([^\s:'\"`()]{1,1000}\.rb):(\d{1,9}):in [`']"
                         r"(?:block (?:\(\d+ levels\) )?in |rescue in |ensure in )?([^'`\n]{1,300})'")
_PHP_FRAME = re.compile(r"^[ \t]*#\d{1,4}[ \t]+([^\s()]{1,1000}\.php)\((\d{1,9})\):[ \t]+([\w\\\\]+(?:->|::))?(\w+)\(",
                        re.MULTILINE)
_PHP_THROWN = re.compile(r"\bin[ \t]+([^\s()]{1,1000}\.php):(\d{1,9})\b")
_ELIXIR_FRAME = re.compile(r"(?<![^\s(])([^\s():]{1,1000}\.exs?):(\d{1,9}): (?:anonymous fn/\d+ in )?([\w.!?]+)\.([\w!?]+)/\d+")
_SWIFT_FRAME = re.compile(r"(?<![\w.<>])([\w.<>]{1,300}?)(?:\([\w:]*\))? \+ \d+ \(([^\s():]{1,1000}\.swift):(\d{1,9})\)")
_ADDRESS_FRAME = re.compile(r"(?<![^\s(])([^\s():]{1,1000}):(\d{1,9}):\d{1,9}: 0x[0-9a-fA-F]{1,16} in ([\w.]{1,300}) \(")


def _native_frames(query: str) -> list[tuple[int, str, str, str]]:
    """(offset, path, line, function) of the frames of the shapes above."""
    found = [(m.start(), m.group(1), m.group(2), "") for m in _PHP_THROWN.finditer(query)]
    for m in _GDB_FRAME.finditer(query):
        name = _LAST_NAME.search(m.group(1).split(" (", 1)[0].strip())
        found.append((m.start(), m.group(2), m.group(3), name.group(1) if name else ""))
    for m in _RUBY_FRAME.finditer(query):
        found.append((m.start(), m.group(1), m.group(2), _function(m.group(3).replace("#", "."))))
    for m in _PHP_FRAME.finditer(query):
        found.append((m.start(), m.group(1), m.group(2), m.group(4)))
    for m in _ELIXIR_FRAME.finditer(query):
        found.append((m.start(), m.group(1), m.group(2), m.group(4)))
    for m in _SWIFT_FRAME.finditer(query):
        found.append((m.start(), m.group(2), m.group(3), _function(re.sub(r"<[^<>]*>", "", m.group(1)))))
    for m in _ADDRESS_FRAME.finditer(query):
        found.append((m.start(), m.group(1), m.group(2), _function(m.group(3))))
    return found


# Where one trace of a chain ends and the next begins: Java's `Caused by:` and `Suppressed:`, .NET's
# end of an inner exception's frames, Node's error cause (`[cause]: Error`, `cause: TRPCError`), Python's
# two ways of chaining exceptions.
_CHAINED = re.compile(r"^[ \t]*(?:Caused by:|Suppressed:|--- End of inner exception stack trace ---"
                      r"|\[cause\]:|cause:[ \t]*[\w.$]*(?:Error|Exception)(?::|[ \t]*$))"
                      r"|^During handling of the above exception|^The above exception was the direct cause",
                      re.MULTILINE)


def frame_mentions(query: str) -> tuple[tuple[str, int, str, int], ...]:
    """(path, line, function or "", trace) of the stack frames a query pastes, innermost first: in
    the order they are written, reversed when they are Python's (a Python or pytest trace prints the
    innermost frame last, the other runtimes first). `trace` numbers the traces of a chained report
    (`Caused by:`) in that order: each has an innermost frame of its own."""
    written = [(m.start(), m.group(1), m.group(2), m.group(3) or "") for m in _PYTHON_FRAME.finditer(query)]
    written += _native_frames(query)
    for m in _CALL_FRAME.finditer(query):
        written.append((m.start(), m.group(2), m.group(3), _function(m.group(1))))
    for m in _UNDER_FRAME.finditer(query):
        above = query.rfind("\n", 0, max(0, m.start() - 1))
        head = query[above + 1 : m.start()].strip()[-300:]
        called = _LAST_NAME.search(head.rpartition("(")[0] if head.endswith(")") else head)
        written.append((m.start(), m.group(1), m.group(2), called.group(1) if called else ""))
    named: dict[str, list[str]] = {}  # line -> the paths of frames read with their function
    for _, p, n, f in written:
        if f:
            named.setdefault(n, []).append(p)
    # A frame read above is not read again as a bare `path:line` (from within its path: `@trpc/x.ts:3`).
    written += [(m.start(), m.group(1), m.group(2), "") for m in _LINE_MENTION.finditer(query)
                if not any(other.endswith(m.group(1)) for other in named.get(m.group(2), ()))]
    written.sort(key=lambda frame: frame[0])
    breaks = [m.start() for m in _CHAINED.finditer(query)] if written else []
    found = [(path, int(line), function, bisect_right(breaks, at)) for at, path, line, function in
             ((at, _file_path(p), n, f) for at, p, n, f in written) if path]
    if sum(languages.detect(frame[0])[0] == "python" for frame in found) * 2 > len(found):
        found.reverse()
    traces = {trace: i for i, trace in enumerate(dict.fromkeys(frame[3] for frame in found))}
    return tuple(dict.fromkeys((*frame[:3], traces[frame[3]]) for frame in found))[:MAX_MENTIONS]


def frame_spots(frames, names: dict[str, list[str]]) -> dict[str, list[tuple[int, str, int]]]:
    """{indexed path: [(line, function, depth)]} for the frames whose file the index holds (`names`:
    `paths_by_name`; a frame names the files `mention_evidence` says its path names); depth counts
    the frames of its trace before it (innermost first) that name an indexed file."""
    spots: dict[str, list[tuple[int, str, int]]] = {}
    depth, current = 0, None
    for path, line, function, trace in frames:
        if trace != current:
            depth, current = 0, trace
        named_files = mention_evidence((path,), names)
        if not named_files and function:
            # A Node trace through a package's build (`dist/.../router.mjs`) names its TypeScript
            # source by the same path (`src/.../router.ts`), but not its lines: the function only
            # (an anonymous frame names nothing there, and counted, it halved the next frame).
            for source in _compiled_from(path):
                named_files = mention_evidence((source,), names)
                if named_files:
                    line = 0
                    break
        for named in named_files:
            spots.setdefault(named, []).append((line, function, depth))
        depth += bool(named_files)
    return spots


_COMPILED_JS = frozenset({"js", "mjs", "cjs"})
_JS_SOURCES = ("ts", "tsx", "mts", "cts")


def _compiled_from(path: str) -> tuple[str, ...]:
    """The source files a compiled JavaScript file may have been built from, by its path."""
    stem, dot, extension = path.rpartition(".")
    if not dot or extension not in _COMPILED_JS or stem.endswith(".min"):
        return ()
    return tuple(f"{stem}.{source}" for source in _JS_SOURCES)


def frame_weight(spots, start: int, end: int, defines: Callable[[str], bool],
                 inside: Callable[[str], bool] = lambda function: False) -> float:
    """1 / (1 + depth) of the innermost frame a chunk holds (its line, or its function defined there),
    0 for none: the frame that raised says more than its callers, which an equal boost put first
    (an ASan trace's `ltrimCommand` above the `lpDeleteRange` that overflowed). A frame naming a
    function is held by its line or its definition alone at ONE_SIGN of that: both at once are
    surer (click's `Group.parse_args` came before the `Command.parse_args` holding the line), as is
    its line in a chunk `inside(function)` (one scoped to it: part of a long function's body)."""
    best = 0.0
    for line, function, depth in spots:
        holds = start <= line <= end
        named = bool(function) and (defines(function) or (holds and inside(function)))
        if holds or named:
            best = max(best, (1.0 if holds and (named or not function) else ONE_SIGN) / (1 + depth))
    return best


ONE_SIGN = 0.75


def paths_by_name(paths: Iterable[str]) -> dict[str, list[str]]:
    """The lookup `mention_evidence` takes, sorted paths under three keys: the file name (`str.py`),
    the last two components (`printing/str.py`) and, for a file at the top, `/` and its name."""
    names: dict[str, list[str]] = {}
    for path in sorted(set(paths)):
        parts = path.rsplit("/", 2)
        names.setdefault(parts[-1], []).append(path)
        names.setdefault("/".join(parts[-2:]) if len(parts) > 1 else "/" + path, []).append(path)
    return names


def mention_evidence(mentions, names: dict[str, list[str]]) -> dict[str, float]:
    """{path: evidence that the query names the file}, at most 1 per file; `names` is
    `paths_by_name` of the indexed files. A mention names the files whose trailing path
    components agree with it most: all of its own (`printing/str.py`), or all of the file's, or at
    least a directory and the name (`site-packages/_pytest/python.py` is `src/_pytest/python.py`,
    not `testing/python.py`). Each mention adds 1 / (the files it may name), so
    `sympy/printing/str.py` says more than `conf.py`, which a hundred files are called. Looked up
    by the last two components, not by name: a traceback through a monorepo names `__init__.py`
    in many frames, and thousands of files are so called.
    """
    evidence: dict[str, float] = {}
    for mention in mentions:
        parts = mention.split("/")
        if len(parts) == 1:
            named = names.get(mention, [])
        else:
            best, named = 0, []
            for path in names.get("/".join(parts[-2:]), ()):
                shared = 2
                for a, b in zip(reversed(parts[:-2]), reversed(path.split("/")[:-2])):
                    if a != b:
                        break
                    shared += 1
                if shared > best:
                    best, named = shared, [path]
                elif shared == best:
                    named.append(path)
            if not named:  # only the name agrees: a file at the top, which the mention ends with
                named = names.get("/" + parts[-1], [])
        for path in named:
            evidence[path] = min(1.0, evidence.get(path, 0.0) + 1.0 / len(named))
    return evidence


def name_prior(path: str, symbol: str | None, query_terms: set[str], config: RankingConfig, kind: str = "code",
               owners: tuple[str, ...] = (), owner_files: bool = False, file_named: bool = False) -> float:
    """Multiplier from the file's own name agreeing with the query. `owners`: the qualifiers of a
    qualified name (`Kleisli` of `Kleisli.andThen`); `owner_files`: whether a candidate file is
    named after its owner; `file_named`: the query is this file's name or path, extension and all."""
    squashed, words = file_name_words(path)
    if symbol is not None:
        name = path.rsplit("/", 1)[-1]
        # A query naming a file whose name has two dots (`show.html.erb`, a Rails view) names it
        # by its whole stem: its first word alone (`show`) was no match for `show.html`.
        named = bool(squashed) and (squashed == _squash(symbol) or name.rsplit(".", 1)[0].lower() == symbol.lower())
        if named and owners:
            # A qualified name's member names a file only under its nearest owner's directory
            # (tokio's `task/spawn.rs` for `task::spawn`; `active_record/` holds every file of
            # `ActiveRecord::Base.x`), or where no file is named after the owner: cats's
            # `AndThen.scala` came first for `Kleisli.andThen`, beside `Kleisli.scala`. (The owner's
            # file gets no boost: each of its chunks would have it, and a Ruby mixin or a Rust
            # submodule holds the member elsewhere.)
            directories = {_squash(part) for part in path.split("/")[:-1]}
            named = not owner_files or _squash(owners[-1]) in directories
        if not named:
            return 1.0
        test, example, _vendored, _generated = _path_classes(path)
        if (test or example or kind == "docs" or _rendered_docs(path)) and not file_named:
            # A bare identifier names the code defining it: aeson's benchmark, example and test
            # `Options.hs` ranked above its `Options` type, alamofire's rendered page for a type above it.
            return 1.0
        # The whole stem: `JToken.cs` is JToken's own file, `JToken.Async.cs` one part of it.
        exact = name.rsplit(".", 1)[0] == symbol
        return config.symbol_filename_boost * (config.exact_filename_boost if exact else 1.0)
    if words and words <= query_terms:
        return config.filename_boost
    return 1.0


def _english(path: str) -> bool:
    """Whether a page's language-tag directory says English (`docs/en/docs/a.md`)."""
    return any(part == "en" or part[:3] in ("en-", "en_") for part in path.split("/")[:-1])


# ISO 639-1's codes: a file named by one (`fr.json`, `pt-BR.yml`, `zh_Hans.po`) beside others so
# named is one message catalog in several languages.
_LANGUAGE_CODES = frozenset("""aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs
    cu cv cy da de dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia
    id ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh
    mi mk ml mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc
    sd se sg si sk sl sm sn so sq sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo
    wa wo xh yi yo za zh zu""".split())
_CATALOG_EXTENSIONS = frozenset({".json", ".yaml", ".yml", ".po", ".properties", ".toml", ".xml", ".arb", ".xliff"})


def catalog_keys(path: str) -> tuple[str, ...]:
    """("src/locales/*.json",) for `src/locales/fr.json`, a message catalog named by its language;
    () for any other file. Thirty languages' copies of the same labels filled the hits after the
    one form that used them."""
    directory, _, name = path.rpartition("/")
    stem, dot, extension = name.rpartition(".")
    if not dot or "." + extension.lower() not in _CATALOG_EXTENSIONS:
        return ()
    code = stem.replace("_", "-").split("-")[0]
    if code.lower() != code or code not in _LANGUAGE_CODES or (stem != code and not _LOCALE_DIR.fullmatch(stem)):
        return ()
    return (f"{directory}/*.{extension}",)


def translation_keys(path: str) -> tuple[str, ...]:
    """The path with each language-tag directory in turn replaced by `*`: `docs/ja/docs/a.md` ->
    ("docs/*/docs/a.md",). Two pages sharing a key are one page in two languages."""
    parts = path.split("/")
    return tuple("/".join(parts[:i] + ["*"] + parts[i + 1 :])
                 for i in range(len(parts) - 1) if _LOCALE_DIR.fullmatch(parts[i]))


def rank_files(scored: list[tuple[float, str, object]], config: RankingConfig,
               page_keys: Callable[[str], tuple] | None = None,
               repeat_discount: float = 0.0, file_share: float = 0.0) -> list[tuple[float, object]]:
    """(score, path, item) chunks -> (final score, item), best chunk of each file first.

    A file's score is its best chunk plus `file_evidence` times its next `evidence_chunks` chunks;
    its best chunk carries that score. Remaining chunks follow (when diversifying) in their own score order.
    `page_keys(path)`: files sharing a key are copies of one page (translations): only the best of
    them counts as a distinct file, the others follow every file's chunks. With a
    `repeat_discount` d > 0, a file's n-th further chunk competes with the best chunks at its score
    times d**n (and carries that score) instead of following them all. With a `file_share` f > 0, a
    further chunk's score s first becomes s + f * (its file's score - s).
    """
    by_file: dict[str, list] = {}
    for entry in scored:
        by_file.setdefault(entry[1], []).append(entry)
    firsts: list[tuple[float, str, object]] = []
    rest: list[tuple[float, str, object]] = []
    copies: list[tuple[float, str, object]] = []  # translations of a page listed once
    for path, entries in by_file.items():
        entries.sort(key=lambda e: -e[0])
        best = entries[0]
        others = entries[1 : 1 + config.evidence_chunks] if config.evidence_chunks else entries[1:]
        total = best[0] + config.file_evidence * sum(e[0] for e in others)
        firsts.append((total, path, best[2]))
        rest.extend((e[0] + file_share * (total - e[0]), e[1], e[2]) for e in entries[1:])
    if page_keys is not None and config.one_page_per_translation:
        firsts.sort(key=lambda e: -e[0])
        seen: dict[str, int] = {}  # page key -> its place in distinct
        distinct: list = []
        for entry in firsts:
            keys = page_keys(entry[1])
            slot = next((seen[k] for k in keys if k in seen), None)
            if slot is None:
                for k in keys:
                    seen[k] = len(distinct)
                distinct.append(entry)
                continue
            held = distinct[slot]
            if _english(entry[1]) and not _english(held[1]):
                # The page is shown in English, at the place its best-scoring copy earned: a shorter
                # CJK or a stemmed-alike Spanish copy often scores higher than the original.
                distinct[slot] = (held[0], entry[1], entry[2])
                for k in keys:
                    seen.setdefault(k, slot)
                entry = (entry[0], held[1], held[2])
            copies.append(entry)  # a translation of a page already listed
        firsts = distinct
    if config.diversify and repeat_discount > 0:
        repeats: dict[str, int] = {}
        discounted = []
        for entry in sorted(rest, key=lambda e: -e[0]):
            n = repeats[entry[1]] = repeats.get(entry[1], 0) + 1
            discounted.append((entry[0] * repeat_discount ** n, entry[1], entry[2]))
        # A translation says nothing its page has not: it waits behind every file's chunks.
        ordered = sorted(firsts + discounted, key=lambda e: -e[0]) + sorted(copies, key=lambda e: -e[0])
    elif config.diversify:
        ordered = sorted(firsts, key=lambda e: -e[0]) + sorted(rest + copies, key=lambda e: -e[0])
    else:
        ordered = sorted(firsts + rest + copies, key=lambda e: -e[0])
    return [(e[0], e[2]) for e in ordered]


def rank_candidates(candidates, plan, config: RankingConfig, definers: dict[str, float] | None = None,
                    mentioned: dict[str, float] | None = None,
                    generated: frozenset[str] = frozenset(),
                    languages: dict[str, str] | None = None,
                    defining: frozenset[str] | None = None) -> list[tuple[float, object]]:
    """The ranking every retriever applies once to its first-stage candidates.

    (score, path, kind, item) -> (final score, item): the query plan's path and file-name priors, for
    a pasted report the evidence that a file defines the symbols it names (`definers`), the evidence
    that the query names the file by its path (`mentioned`, from `mention_evidence`), then the best
    chunk of each file first, translated copies of a docs page counting as one page. `generated`:
    the candidates' paths whose header marks them as a tool's output (their names may not).
    `languages`: {path: language} of the candidates, for a query written with a definition keyword
    (`def render`): it asks for a definition in a language that keyword opens. `defining`: for such
    a query, or a qualified name (`Associations.has_many`), the paths that define its name (its
    member's) as written (None: not known): a file named so is no
    answer unless it is one (rails's `has_many.rb` defines `HasMany`; `def has_many` is in
    `associations.rb`; tokio's `spawn.rs` does define `fn spawn`).
    """
    terms = set(plan.weights) if plan.file_words is None else plan.file_words
    docs_paths = set()
    scored = []
    candidates = list(candidates)
    owner = _squash(plan.owners[-1]) if plan.owners else ""
    owner_files = bool(owner) and any(file_name_words(path)[0] == owner for _v, path, _k, _i in candidates)
    # A file-name query's docs page, test or example gets the name's prior only when no source
    # file among the candidates is so named (trpc's five `examples/*/router.ts` before its own).
    named_source = bool(plan.file_name) and any(
        path.rsplit("/", 1)[-1].lower() == plan.file_name and name_prior(path, plan.symbol, set(), config, kind) > 1.0
        for _v, path, kind, _i in candidates)
    for value, path, kind, item in candidates:
        if kind == "docs":
            docs_paths.add(path)
        factor = path_prior(path, kind, plan.asked, config, plan.long, path in generated)
        if plan.file_name and path.rsplit("/", 1)[-1].lower() == plan.file_name:
            # `README.md`, `conftest.py`, `docs/why.md` ask for that file, whatever it is: as a
            # bare identifier names code, a docs page or a test got no file-name prior (and
            # service.first_hits puts the files so named first); among several so named, a
            # test or an example still ranks below the source.
            factor *= name_prior(path, plan.symbol, terms, config, kind, file_named=not named_source)
        elif not (plan.keyword or plan.owners) or defining is None or path in defining:
            factor *= name_prior(path, plan.symbol, terms, config, kind, plan.owners, owner_files)
        if plan.keyword_languages and languages is not None and languages.get(path) not in plan.keyword_languages:
            factor *= config.keyword_language_penalty
        if definers:
            factor *= 1.0 + config.long_query_definer_boost * definers.get(path, 0)
        if mentioned:
            factor *= 1.0 + config.path_mention_boost * mentioned.get(path, 0)
        scored.append((value * factor, path, item))
    # A catalog is three or more languages' files among the candidates: two files named by codes
    # (`ca.yaml` beside `ml.yaml`) may be anything.
    catalog_of = {path: catalog_keys(path) for path in {entry[1] for entry in scored}}
    catalogs = Counter(key for keys in catalog_of.values() for key in keys)

    def page_keys(path: str) -> tuple:
        if path in docs_paths:
            return translation_keys(path)
        return tuple(key for key in catalog_of[path] if catalogs[key] >= 3)

    return rank_files(scored, config, page_keys,
                      config.long_query_repeat_discount if plan.long else config.repeat_discount,
                      config.long_query_file_share if plan.long else 0.0)
