"""What a query asks for: its weighted terms, and what kind of query it is.

Three kinds behave differently. A bare identifier (`HTTPException`) wants the place that defines
it. A short sentence wants the files that its words describe. A long text (a pasted bug report
with prose, code and tracebacks) repeats ordinary words many times and mentions tests, docs and
configuration in passing, so its term weights are damped and those mentions do not count as
asking for tests or docs.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from .boilerplate import strip_boilerplate
from .lexical.features import def_term, exact_def_term, keyword_languages, phrase_pairs, question_pairs, weak_def_term
from .ranking import (RankingConfig, file_query_stem, frame_mentions, is_path_query, is_symbol_query, path_mentions,
                      queried_file_name, qualified_name, query_words, symbol_key)
from .text import STOPWORDS, operator_name, tokenize


# Words a report writes as code: called, dotted, snake_case or camelCase, or quoted in backticks.
# Each alternative starts where a word does: an unanchored `[A-Za-z_]\w*(?=\()` was retried from
# every letter of a long run (a hex dump in a pasted report: 40 KB took 20 s). A word before `(s)`
# is a plural a message leaves open (`flag(s)`, `file(s)`), not a call.
_CODE_WORD = re.compile(
    r"(?<!\w)[A-Za-z_]\w*(?=\()(?!\(s\))|(?<=\.)[A-Za-z_]\w*|\b\w*[a-z0-9]_\w+|\b[a-z]+[A-Z]\w*|\b[A-Z][a-z0-9]+[A-Z]\w*|(?<=`)[A-Za-z_]\w*(?=`)"
)

_HYPHENATED = re.compile(r"\w-\w")  # a name with a hyphen inside (`bash-it`, `Get-ChildItem`)


def code_words(text: str) -> list[str]:
    return _CODE_WORD.findall(text)


@dataclass(frozen=True)
class QueryPlan:
    weights: dict  # term -> weight, feature terms included
    asked: frozenset  # lower-cased words, for "does the query ask for tests/docs/examples"
    symbol: str | None  # the identifier of a bare-identifier query
    long: bool
    named: tuple = ()  # definition terms of the code words a long query names
    mentions: tuple = ()  # file paths the query writes out (`ranking.path_mentions`)
    frames: tuple = ()  # (path, line, function, trace) of the stack frames it pastes (`ranking.frame_mentions`)
    # The words a file's name may agree with (`ranking.name_prior`); None: every term
    file_words: frozenset | None = None
    # The code keyword a bare identifier came with (`def` of `def echo`: `definition_keyword`), and
    # the languages whose definitions it opens (`def`: Python, Ruby, Scala, ...; empty: any)
    keyword: str = ""
    keyword_languages: frozenset = frozenset()
    # The pair terms of the words a sentence writes next to each other (RankingConfig.phrase_pairs
    # or phrase_whole_pairs or more; none for a pasted trace): a chunk holding a long run of them quotes it
    # (`retrievers.lexical.phrase_factors`)
    phrase: tuple = ()
    # The qualifiers of a qualified name (`Kleisli` of `Kleisli.andThen`): whose file the member's is
    owners: tuple = ()
    # The file name, in lower case, of a query that is one (`readme.md` of `README.md` or
    # `docs/README.md:12`): that file is asked for whatever it is (docs, a test, configuration)
    file_name: str = ""


def plan_query(query: str, config: RankingConfig, keyword: str = "") -> QueryPlan:
    """The plan of a search text (`search_text`); `keyword`: the definition keyword the query wrote
    before it (`definition_keyword`)."""
    words = query_words(query)
    symbol = symbol_key(query) if is_symbol_query(query) else None
    path = symbol is not None and is_path_query(query)
    long = len(words) >= config.long_query_words
    title = query.strip().split("\n", 1)[0]
    counts = Counter(tokenize(query))
    if long and config.long_query_damping:
        # A report that says "array" forty times is not forty times about arrays.
        weights = {t: 1.0 + math.log(n) for t, n in counts.items()}
        if config.long_query_title_weight:
            # The first line of a report is its summary (an issue title): its words weigh more.
            for t in set(tokenize(title)):
                weights[t] += config.long_query_title_weight
    else:
        weights = {t: float(n) for t, n in counts.items()}
    code = code_words(query) if symbol is None else []
    if long:
        # In a report, only words written as code can name a definition.
        if config.long_query_code_weight:
            for term in {w.lower() for w in code}:
                if term in weights:
                    weights[term] += config.long_query_code_weight
        named = code
    elif path:
        # `src/click/core.py:120` names a file and a line: its directories, extension and line
        # number name no definition (pyproject.toml's `src = ["src"]` came first). The file is
        # found by its name and path, the line's chunk by the line (mentions and frames below).
        named = []
    elif symbol is None and all(w.lower() in STOPWORDS for w in words):
        # Nothing to search for (`for the`): not even definitions named so. Among other words a
        # stop word may name one (Java's `BooleanUtils.and`, Laravel's `to()`: measured, dropping
        # them cost three semble-dev queries).
        named = []
    else:
        named = words
    definitions: dict[str, float] = {}
    for word in named:
        definitions[word] = config.symbol_definition_weight if symbol is not None else config.definition_weight
    for word in code:
        # `parse_args`, `Foo.bar()`, `InheritDocstrings` in a question name a symbol as surely as a bare one
        definitions[word] = max(definitions.get(word, 0.0), config.code_definition_weight)
    parts = qualified_name(query) if symbol is not None else ()
    if parts and config.symbol_definition_weight:
        # `Group.invoke` asks for the member: its owner.name term, with the member's own definition,
        # outweighs the owners' definitions, which say only where to look (a class's header).
        for owner in parts[:-1]:
            definitions[owner] = config.definition_weight
        definitions[f"{parts[-2]}.{parts[-1]}"] = config.symbol_definition_weight
    if symbol is not None and symbol[-1:] in ("!", "?", "'") and config.symbol_definition_weight:
        # Ruby's `initialize!`, Elixir's `decode!`, Haskell's `foldl'` are defined under their whole
        # name. The name without its mark is another function, a relative at most: asked for as
        # strongly, pandoc's `gridTableWith` came first for `gridTableWith'`.
        _ask_whole(definitions, symbol, (symbol.rstrip("!?'"),), config)
    if symbol is not None and not path and _HYPHENATED.search(symbol) and file_query_stem(query) is None \
            and config.symbol_definition_weight:
        # A shell or PowerShell function named with hyphens (`_bash-it-search-help`, `Get-ChildItem`):
        # its words are its parts, which other functions share; its definition is named whole.
        # (`build-docs.sh` names a file.)
        _ask_whole(definitions, symbol, words, config)
    if symbol is not None and operator_name(symbol) == symbol and config.symbol_definition_weight:
        # C++'s `operator==`, `operator[]`: its words are `operator` alone; its definition is named whole.
        definitions[symbol] = config.symbol_definition_weight
    for word, weight in definitions.items():
        if not weight:
            continue
        key = def_term(word)
        weights[key] = weights.get(key, 0.0) + weight
        # A bare identifier asks for its exact spelling; a sentence only for a word written with
        # capitals (`echo` in a question is a word, `Echo` a name).
        if (symbol is not None or word != word.lower()) and config.exact_definition_weight:
            key = exact_def_term(word)
            share = config.capitalised_exact_weight if symbol is not None and word[:1].isupper() \
                else config.exact_definition_weight
            weights[key] = weights.get(key, 0.0) + weight * share
        if symbol is not None and config.weak_definition_weight:
            # A bare identifier asks for its declarations that a sentence's words would not mean.
            key = weak_def_term(word)
            weights[key] = weights.get(key, 0.0) + weight * config.weak_definition_weight
    if config.identifier_pair_weight and symbol is None and not long:
        # A question's words that one identifier joins (`connection pool` -> ConnectionPool,
        # `conn_pool_size`): the code naming that thing, not code using each word apart.
        for term in question_pairs(words):
            weights[term] = weights.get(term, 0.0) + config.identifier_pair_weight
    if config.abbreviation_weight and symbol is None and not long:
        # Code writes `env`, `max`, `dir` where a question writes the word (`which environment
        # variable`: express's `process.env.NODE_ENV` held no word of it): the word and its forms
        # (_abbreviation), at the weight of the word's own term.
        for word in sorted({w.lower() for w in words}):
            short = _abbreviation(word)
            term = tokenize(word)[-1] if short else ""
            if short and term in weights and short not in weights:
                weights[short] = weights[term] * config.abbreviation_weight
    asked = frozenset() if long and config.long_query_damping else frozenset(w.lower() for w in words)
    named_defs = tuple(dict.fromkeys(def_term(w) for w in code)) if long else ()
    mentions = path_mentions(query) if (symbol is None or path) and config.path_mention_boost else ()
    frames = frame_mentions(query) if (symbol is None or path) and config.frame_boost else ()
    keyword = keyword if symbol is not None else ""
    # (A pasted stack frame's paths are no sentence: its frames say where to look.)
    phrase = phrase_pairs(query) if symbol is None and not long and not frames and config.phrase_boost else ()
    if len(phrase) < min(config.phrase_pairs, config.phrase_whole_pairs):
        phrase = ()
    if symbol is not None and not path and config.phrase_boost and _HYPHENATED.search(symbol) \
            and file_query_stem(query) is None:
        # `tokio-rt-worker`, a thread's name in a string: its words one after another, as a string
        # writes them, whole (its two pairs; a sentence needs three). As words, tokio's every file
        # held them, and the three lines saying it were not among the first hundred hits.
        pairs = phrase_pairs(symbol)
        phrase = pairs if len(pairs) >= 2 else ()  # (one pair is two words anywhere side by side)
        for term in phrase:  # (candidates: the strings saying it are among the first ones)
            weights[term] = weights.get(term, 0.0) + config.definition_weight
    return QueryPlan(weights, asked, symbol, long, named_defs, mentions, frames, naming_words(query),
                     keyword, keyword_languages(keyword) if keyword else frozenset(),
                     phrase,
                     tuple(parts[:-1]) if parts and symbol.rstrip("!?'") == parts[-1].rstrip("!?'") else (),
                     queried_file_name(query) if symbol is not None else "")


def _ask_whole(definitions: dict[str, float], symbol: str, parts, config: RankingConfig) -> None:
    """Ask for symbol's definition under its whole name, and for its parts' (other names, relatives
    at most) no more than a plain definition's."""
    for part in parts:
        if definitions.get(part):
            definitions[part] = min(definitions[part], config.definition_weight)
    definitions[symbol] = config.symbol_definition_weight


# What a pasted error's first words are: the runtime's class of it (`TypeError:`,
# `com.fasterxml.jackson.databind.exc.InvalidDefinitionException:`, `TRPCError:`) or its label
# (`error[E0277]:`, `panic:`, `Error:`), not a name of the file to look in.
_ERROR_LABEL = re.compile(
    r"(?<![\w.$])(?:[A-Za-z_$][\w$]*\.)*[A-Z][\w$]*(?:Error|Exception)(?=:\s)"
    r"|^[ \t]*(?i:error|panic|fatal|warning|exception)(?:\[[\w-]{1,20}\])?:", re.MULTILINE)


def naming_words(query: str) -> frozenset | None:
    """The words of a query that may name a file by its name: not a pasted error's class or label
    (`TypeError:` named every `types.ts`, `Error:` every `errors.go`, `HFValidationError:` the
    module defining the class, not the code raising it); None when it pastes none (every word)."""
    cut = _ERROR_LABEL.sub(" ", query)
    return None if cut == query else frozenset(tokenize(cut))


# A word and the abbreviation code writes for it. Not those that are keywords or types of some
# language (`val`, `var`, `func`, `fn`, `str`, `char`), which every file of it holds.
_ABBREVIATIONS = {
    "environment": "env", "configuration": "config", "maximum": "max", "minimum": "min", "directory": "dir",
    "number": "num", "length": "len", "parameter": "param", "argument": "arg", "message": "msg",
    "request": "req", "response": "resp", "error": "err", "initialize": "init", "temporary": "tmp",
    "authentication": "auth", "application": "app", "database": "db", "connection": "conn",
    "context": "ctx", "attribute": "attr", "information": "info", "destination": "dst", "source": "src",
    "previous": "prev", "buffer": "buf", "reference": "ref", "package": "pkg", "repository": "repo",
    "command": "cmd", "execute": "exec", "implementation": "impl", "specification": "spec", "library": "lib",
    "address": "addr", "description": "desc", "statistics": "stat", "object": "obj", "index": "idx",
    "sequence": "seq", "image": "img", "password": "passwd", "button": "btn", "millisecond": "ms",
    "temperature": "temp", "document": "doc",
    # Other words of these (their inflections are found by their endings: _abbreviation).
    "documentation": "doc", "configure": "config", "connect": "conn", "initialization": "init",
    "initialise": "init", "authenticate": "auth", "implement": "impl",
}
# A word's endings that leave one of the table's words: plurals and verb forms (`indexes`,
# `directories`, `configuring`, `connected`), not other words of its stem (`specific` is no `spec`).
_ENDINGS = (("ies", "y"), ("es", ""), ("s", ""), ("ing", ""), ("ing", "e"), ("ed", ""), ("d", ""))


def _abbreviation(word: str) -> str | None:
    """The abbreviation of the table's word that a lower-case `word` is, or is a form of, else None."""
    if word in _ABBREVIATIONS:
        return _ABBREVIATIONS[word]
    for ending, base in _ENDINGS:
        if word.endswith(ending) and (root := word[: -len(ending)] + base) in _ABBREVIATIONS:
            return _ABBREVIATIONS[root]
    return None


# Keywords that open a definition and are no English word a question starts with: `def echo`,
# `fn spawn`, `func NewRouter` ask for that definition.
_CODE_KEYWORDS = frozenset("def defn defp fn func".split())
# Keywords that are English words too: `class Router` asks for a definition, `class hierarchy` does
# not, so the name must be written as code (a capital, an underscore or a digit in it).
_WORD_KEYWORDS = frozenset("class struct interface trait enum type typedef function fun module object record protocol "
                           "impl union namespace package const let var val".split())
_NAME_AS_CODE = re.compile(r"[A-Z_0-9]")


def search_text(query: str) -> str:
    """What every retriever searches for: the query without a pasted report's boilerplate
    (retrieval.boilerplate); and for `def echo`, `fn spawn`, `class Router` the identifier alone,
    which the ranking reads as a bare identifier (its definition first, its exact spelling before
    other spellings). As two words of a sentence, `def echo` ranked a class whose methods call
    `self._echo` six times above `def echo`."""
    return split_keyword(query)[1]


def definition_keyword(query: str) -> str:
    """The code keyword a query writes before the identifier it asks for (`def` of `def echo`,
    `fn` of `fn spawn`); '' for any other query, `class Router` among them (a word of English)."""
    return split_keyword(query)[0]


def split_keyword(query: str) -> tuple[str, str]:
    """(`definition_keyword`, `search_text`) of a query, read once: ('def', 'echo') for `def echo`,
    ('', 'Router') for `class Router`, ('', the query) when it is no keyword and identifier."""
    query = strip_boilerplate(query)
    parts = query.split()
    if len(parts) != 2:
        return "", query
    keyword, name = parts
    if not is_symbol_query(name) or not (name[:1].isalpha() or name[:1] == "_"):
        return "", query
    if keyword in _CODE_KEYWORDS:
        return keyword, name
    if keyword in _WORD_KEYWORDS and _NAME_AS_CODE.search(name):
        return "", name
    return "", query
