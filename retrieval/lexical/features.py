"""Index-time features of a chunk beyond its words, encoded as extra terms in the same postings.

- Path terms: the words of the file's path (directories, file name without extension), so
  `websocket` finds `websockets.py` even where the body says little.
- Definition terms: `\u00a7name` for every symbol the chunk defines (class, def, func, fn, ...), so a
  query naming a symbol can prefer the chunk that defines it over the many that use it.
- Pair terms: `\u00b6a&b` for every two parts of one compound identifier (`conn_upkeep` ->
  conn&upkeep; the file's name and directories too), so a question whose words one name joins
  (`connection pool`) prefers the code that joins them over code that only uses each somewhere.
- The same pair terms for two words a string literal in code writes next to each other (stop
  words and `{placeholders}` skipped): a pasted error message (`'name' is a required property`)
  asks for the line that raises it as a question asks for the identifier that joins its words.
- Member terms: `\u00a7owner.name` for a definition inside a class-like one (`Group.invoke`, a Go
  method's receiver type), so a qualified query finds the method, not the class's first lines.
The prefix character cannot come out of the tokenizer, so feature terms never collide with words.
"""
from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import Counter
from itertools import combinations, compress, repeat

from .. import languages
from ..lazyre import LazyPattern as lazy_compile
from ..text import fold, identifier_parts, normal, split_identifier, term_counts, without_data, word_unit, words_of

DEF = "\u00a7"
PAIR = "\u00b6"
_EXACT = DEF + "="  # exact_def_term's prefix
_WEAK = DEF + "~"  # weak_def_term's prefix
PAIR_PARTS = 6  # an identifier's first parts paired (15 pairs at most); longer names are rare
QUESTION_UNITS = 12  # a question's first distinct words paired (66 pair terms at most)


def def_term(name: str) -> str:
    """The term a definition of `name` is indexed and asked under: lower case, without underscores,
    so a name asked in the other naming convention still finds it (`client_ip` -> `ClientIP`,
    `isBlank` -> `is_blank`). Its exact spelling is a second term (exact_def_term)."""
    squashed = fold(normal(name)).replace("_", "")
    return DEF + (squashed or name.lower())


def exact_def_term(name: str) -> str:
    """The term a definition is indexed under by its exact spelling, for every name: `echo` asks
    for `def echo`, not for `_echo` or `Echo`, which share its def_term."""
    return _EXACT + normal(name)


def weak_def_term(name: str) -> str:
    """The term of a weak definition (`weak_definitions`), by its exact spelling only (a module
    `Data.Aeson.Types.ToJSON` is not the function `toJSON`): asked for by a bare identifier only,
    and not counted in a chunk's length, so a sentence ranks as it would without them."""
    return _WEAK + name


# Bump when a change here changes the path or definition terms of a chunk (the index fingerprint
# carries it, with the versions of the modules it builds on).
VERSION = 40  # 21: more definition forms (_MORE_DEFS); 22: weak definitions; 23: Go interface methods;
# 24: each language's own definition keywords (_LANGUAGE_KEYWORDS), a run of them one definition;
# 25: Elixir's defprotocol and defdelegate; 26: each language's own modifiers (Rust's `const fn`,
# Kotlin's `inner class`) and owner keywords, Kotlin's extension receivers, C#'s and Dart's generic
# methods (`Serialize<T>(`); 27: C's type uses (`struct X *p`), `const` and one-line typedefs, an
# annotation on its name's line, no import bindings, no `function (...) use`, JavaScript's calls
# (`it('x', function () {`, `export default defineConfig(`), reserved words, Java's one-line and
# bodiless methods, C's and C++'s one-line functions (no conversion operator's type), annotations
# before a keyword (Scala, Swift, Kotlin, Java, TypeScript), Scala's `private[pkg]` and no Scala
# signatures (syntax trees as the oracle); 28: no Kotlin signatures (calls, supertypes, getters) and no
# bare assignments where bindings are declared, Kotlin's `const val X`, `fun<T>` and extension
# properties, a qualified namespace's last part (PHP, C#; Elixir's weakly), Go's declaration groups
# and an interface or group cut by a chunk boundary, Rust's statics and nested consts (no trait
# impl's `type Output =`, no `impl X`), TypeScript's `declare`, Elixir's `def f, do:` (no heredoc's examples);
# 29: no Rust macro template's `$name`, no Haskell `instance` nor Swift `extension`, a Haskell class
# after its context, a Haskell module's and a Ruby `class A::B`'s last part weakly (no first part), no
# Ruby heredoc's code, no C++ `operator`, no C or C++ prototype wrapped over lines (syntax trees as the oracle);
# 30: a C, C++ or C# signature after attributes on its line (`[[nodiscard]] inline bool SimpleAtoi(`), C#'s
# and Dart's expression-bodied and bodiless methods, CUDA, Metal, GLSL and HLSL read as C++ or C, the
# Lisps' `(defun`/`(defn`/`(define` forms and Tcl's `proc`; 31: MATLAB's functions and classdef; 32: a
# string continued past a line end by a backslash is one literal; 33: definitions named in any script;
# 34: a tool's file is its tool's too (`Dockerfile` -> docker, `api.Dockerfile` keeps its tool word);
# 35: a shell function named with hyphens is defined whole (`function _bash-it-help`, PowerShell's
# `function Get-Item`: `_bash` and `Get` before), and `function name {` without parentheses; Scala's
# `implicit val` members (weak, as the other member bindings); a qualified definition's last two parts
# as a member (`defmodule Phoenix.Socket`: `Phoenix.Socket`); 36: C and C++ tables a file defines
# (`const struct X name = {`), a class's name after macros (`class ABSL_LOCKABLE Mutex {`); 37: the
# members of a class with an annotation on the line above it (`@Service`, `@OptIn(...)`); 38: fields and
# properties as weak definitions (PHP, Java, C#, Dart, JavaScript, TypeScript, Ruby, Python, Go), in
# syntax-tree chunks too; 39: no locals among them (a PHP function's statics, C#'s and Dart's locals, a
# switch's `default:`, a docstring's `Note:`, what a method other than __init__ sets on self); 40: what an
# __init__ whose signature spans lines sets on self

_MODIFIERS = (
    r"(?:(?:export|default|pub(?:\([^)]*\))?|public|private|protected|internal|static|final|abstract|"
    r"async|override|open|sealed|data|inline|extern|unsafe|virtual|partial|readonly|local|"
    r"fileprivate|mutating|suspend|implicit|lazy|case|noinline|constexpr|explicit|friend)\s+)*"
)
_KEYWORDS = (
    r"(?:class|def|func|fun|function|fn|struct|interface|trait|enum|type|typealias|typedef|module|"
    r"object|record|protocol|extension|defmodule|defp|defmacro|defmacrop|defguard|defstruct|macro|"
    r"sub|namespace|union|newtype|data|instance|alias|signature|mod)"
)
# The keywords that introduce a definition, by language. One list for all read another language's
# keyword as one: a Go field `fn func() error` defined `func`, `data map[string]any` `map`, an
# Elixir `fn conn ->` `conn`, its `alias Phoenix.Controller` (an import) `Controller`. A language
# not listed here (or none given) reads them all. A run of them is one definition (`enum class
# Color`, `typedef struct node`, `type family F`, `fun interface Action`, `record struct Point`): the
# name is the word after the last, never a keyword before a space (`typedef enum {` names nothing).
_LANGUAGE_KEYWORDS: dict[str, str] = {
    "python": "class def type",
    "javascript": "class function",
    "typescript": "class function interface type enum namespace module",
    "go": "func type",
    "rust": "fn struct enum trait type mod union macro",
    "java": "class interface enum record",
    "kotlin": "fun class interface object typealias enum",
    "scala": "class object trait def type enum",
    "swift": "class struct enum protocol func typealias",
    "csharp": "class struct interface enum record namespace",
    "cpp": "class struct enum union typedef namespace",
    "haskell": "data newtype type class module family",
    "elixir": "defmodule def defp defmacro defmacrop defguard defstruct defprotocol defdelegate",
    "ruby": "class def module alias",
    "php": "class function interface trait enum namespace",
    "perl": "sub",
    "lua": "function",
    "zig": "fn",
    "bash": "function alias",
    "powershell": "function class enum",
    "dart": "class enum extension typedef",
    "groovy": "class def interface enum trait",
    "starlark": "def",
    "elm": "type alias module",
    "tcl": "proc",  # (not `namespace eval ::x`: that defined `eval`)
    "matlab": "classdef",  # its functions: _MATLAB_FUNCTION (`function y = f(` defined `y` as a keyword)
}
_LANGUAGE_KEYWORDS["vue"] = _LANGUAGE_KEYWORDS["svelte"] = _LANGUAGE_KEYWORDS["typescript"]
# a `.h` header is C's or C++'s (abseil's `namespace absl {`), and Objective-C++ shares `.mm`
_LANGUAGE_KEYWORDS["c"] = _LANGUAGE_KEYWORDS["objc"] = _LANGUAGE_KEYWORDS["cpp"]


def keyword_languages(keyword: str) -> frozenset[str]:
    """The languages whose definitions open with `keyword` (`def`: Python, Ruby, Scala, ...); empty
    for a word no language here defines with."""
    return frozenset(language for language, words in _LANGUAGE_KEYWORDS.items() if keyword in words.split())


# Modifiers on the keyword's own line: read across lines, each line of a run of `data` lines (a
# modifier, and Haskell's keyword) was scanned on to the chunk's end.
_LINE_MODIFIERS = _MODIFIERS.replace(r")\s+)*", r")[ \t]+)*")
# Modifiers only one language writes before its keyword, read in that language only (a word that is
# one elsewhere is a name: a Go field `value T`): Rust's `const fn` and `extern "C" fn` defined
# nothing and bound `fn` (below), Kotlin's `annotation class`, `inner class`, `companion object Bar`
# nothing, TypeScript's `const enum` `enum`.
_LANGUAGE_MODIFIERS: dict[str, str] = {
    "rust": r'const|extern[ \t]+"[^"\n]*"',
    "kotlin": "annotation|companion|inner|value|expect|actual|tailrec|operator|infix|external",
    # and its ambient declarations (`declare class X`, `export declare function f(`)
    "typescript": "const|declare",
    # Scala's qualified access (`private[http4s] abstract class Cookies`, `sealed abstract private[data] trait`)
    "scala": r"private\[[^\]\n]*\]|protected\[[^\]\n]*\]",
}
# Annotations on the keyword's line, in the languages that write them there (`@inline final def apply`,
# `@discardableResult public func`, `@JvmStatic fun`, `@Component class`): the definition after them
# was missed. Not elsewhere: a C++ doc comment's `@brief namespace for X` defined `for`.
_ANNOTATION = r"@[\w.]+(?:\([^()\n]*\))?"
for _language in ("scala", "swift", "kotlin", "java", "typescript"):
    _LANGUAGE_MODIFIERS[_language] = "|".join(filter(None, (_LANGUAGE_MODIFIERS.get(_language), _ANNOTATION)))
_LANGUAGE_MODIFIERS["vue"] = _LANGUAGE_MODIFIERS["svelte"] = _LANGUAGE_MODIFIERS["typescript"]


_PREFIX = r"(?:[A-Za-z_][\w]*[.:])?"
# Kotlin's extension functions: type parameters, then a receiver type with its own arguments (`fun <T>
# Flow<T>.collectLatest(` defined nothing, `fun Promise<T>.await(` `Promise`); neither holds a
# parenthesis, a brace or `=`, so the scan ends within the line.
_LANGUAGE_PREFIXES = {
    "kotlin": r"(?:<[^\n(){}=]*?>[ \t]*)?(?:[A-Za-z_][\w.]*(?:<[^\n(){}=]*?>)?\??\.)?",
}
# C and C++: macros between the keyword and a class's name (`class ABSL_LOCKABLE Mutex {`, `struct
# GTEST_API_ TestInfo : Base`, export and attribute macros) when a body or bases follow the name;
# the macro was the definition.
_LANGUAGE_PREFIXES["c"] = _LANGUAGE_PREFIXES["cpp"] = _LANGUAGE_PREFIXES["objc"] = (
    r"(?:[A-Z][A-Z0-9_]*(?:\([^()\n]*\))?[ \t]+"
    r"(?=(?:[A-Z][A-Z0-9_]*(?:\([^()\n]*\))?[ \t]+)*(?!final\b)[A-Za-z_]\w*[ \t]*(?:final\b|:(?!:)|\{|<|$)))*"
    + _PREFIX)


def _with_modifiers(pattern: str, modifiers: str) -> str:
    """A modifier run (_MODIFIERS, _LINE_MODIFIERS) that takes a language's own modifiers too."""
    return pattern.replace("(?:(?:", f"(?:(?:{modifiers}|", 1) if modifiers else pattern


def _keyword_def(keywords: str, modifiers: str = "", prefix: str = _PREFIX, receiver: bool = True) -> str:
    """Keyword-introduced definitions, with a Go receiver or a Lua table prefix; a run of keywords
    is three at most, on one line. `modifiers`, `prefix`: the language's own (_LANGUAGE_MODIFIERS,
    _LANGUAGE_PREFIXES); `receiver`: whether a parenthesis may follow the keyword (Go's receiver;
    elsewhere it holds an anonymous function's parameters: PHP's `function ($x) use ($y) {` defined
    `use`, Lua's `function (res) return` `return`). A name followed by `,` or `}` is a list's
    (`import { type X, }`), except Elixir's one-line `def name, do: value`."""
    line_modifiers = _with_modifiers(_LINE_MODIFIERS, modifiers)
    # (a receiver is on the keyword's line: read across lines, Go's `type (` group skipped to its
    # closing parenthesis and defined the `func` after it)
    skip = r"(?:\([^)\n]*\)[ \t]*)?" if receiver else ""
    return (rf"^[ \t]*{line_modifiers}{keywords}(?:\s+|(?=<))(?:{keywords}[ \t]+){{0,2}}(?!{keywords}\s){skip}"
            rf"{prefix}((?:[^\W\d]|\$)[\w$]*[?!]?)(?![\w$]|\s*\}}|\s*,(?![ \t]*do:))")


_KEYWORD_DEF = lazy_compile(_keyword_def(_KEYWORDS), re.MULTILINE)
_KEYWORD_DEFS = {language: lazy_compile(_keyword_def(f"(?:{'|'.join(words.split())})",
                                                     _LANGUAGE_MODIFIERS.get(language, ""),
                                                     _LANGUAGE_PREFIXES.get(language, _PREFIX), language == "go"),
                                        re.MULTILINE)
                 for language, words in _LANGUAGE_KEYWORDS.items()}
# A Python function under `@overload` (typing's, or any module's `overload`) is a declaration: the
# name's definition is the implementation after it, which the declarations outranked for the name.
_OVERLOADED = lazy_compile(
    r"^[ \t]*@[ \t]*(?:[\w.]+\.)?overload[ \t]*(?:#[^\n]*)?\n(?:[ \t]*[@#][^\n]*\n)*[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)",
    re.MULTILINE,
)
# JavaScript/TypeScript methods in a class or object: an indented `name(params) {` with no keyword
# (`async`, `static`, `get`, an access modifier, a return type allowed), the line ending in `{`.
_METHOD_HEAD = (
    r"^[ \t]+(?:(?:public|private|protected|static|async|readonly|override|abstract|get|set|declare)\s+)*\*?"
    r"(?!(?:if|for|while|switch|catch|function|return|else|do|try|with|super|this)\b)"
    r"([A-Za-z_$][\w$]*)\s*(?:<[^>\n]*>)?\s*\("
)
# Its parameters hold no `function`: `it('works', function () {` is a call handing one over (it
# defined `it` and `describe` in every mocha test).
_METHOD_DEF = lazy_compile(_METHOD_HEAD + r"(?:[^;\nf]|\Bf|\bf(?!unction\b))*\)\s*(?::[^;{}\n=]+)?\{\s*$", re.MULTILINE)
# The same with its parameters wrapped onto lines of their own (prettier's style past 80 columns):
# `name(` ends the line, and the line closing the parameters is `)`, a return type, and `{`. A call
# never ends that way; `if (` and the other statements are excluded as above.
_WRAPPED_METHOD_DEF = lazy_compile(
    _METHOD_HEAD + r"\n(?:[^;\n]*\n){1,40}?[ \t]*\)\s*(?::[^;{}\n=]+)?\{[ \t]*$", re.MULTILINE)
# An object type written on one line (`opts: { a?: X; b?: Y } = {},`): its `;` separate members, they
# end no statement; read as `,` so its wrapped parameter list still defines the method.
_ONE_LINE_BRACES = lazy_compile(r"\{[^{}\n;]*;[^{}\n]*\}")
_METHOD_LANGUAGES = frozenset({"javascript", "typescript", "vue", "svelte"})
# C's and C++'s `typedef void (*dictScanFunction)(void *privdata, ...)` defines dictScanFunction; the
# keyword pattern read the return type (`void`) as its name.
_FNPTR_TYPEDEF = lazy_compile(r"^[ \t]*typedef\b[^;{}()\n]*\(\s*\*\s*([A-Za-z_]\w*)\s*\)\s*\(", re.MULTILINE)
_C_FAMILY = frozenset({"c", "cpp", "objc"})
# ... and a one-line `typedef uint32_t WORD;`, `typedef struct ring_s ring_t;`, `typedef char buf_t[16];`
# its last name (the keyword pattern read `uint32_t`, `ring_s`). The name is the word after the last
# blank or `*`, so the scan of a line backs up over it once.
_ONE_LINE_TYPEDEF = lazy_compile(
    r"^[ \t]*typedef\b[^;{}()\n]*[^\w;{}()\n]([A-Za-z_]\w*)[ \t]*(?:\[[^\]\n]*\][ \t]*)*;", re.MULTILINE)
# In C and C++ `struct`, `union`, `enum` and `class` name a type where it is used too: a parameter or
# a variable (`struct Curl_easy *data`, `static enum alpnid f(`, `struct timeval tv;`) and a forward
# declaration (`struct node;`) define nothing; what follows the name tells them from a definition.
_C_TYPE_USE = lazy_compile(r"[ \t]*(?:[*&;]|[A-Za-z_]\w*[ \t]*[*;,)=\[(])")
# Bindings define a name only at the top level: an indented `const x` is a local variable. A `const`
# before a keyword is a modifier (Rust's `const fn f`, `const unsafe fn`, TypeScript's `const enum E`),
# its name the keyword pattern's; before `val` it is Kotlin's (`const val MAX` defined `val`).
# TypeScript's ambient `declare const x: T` is a binding too, and a Kotlin extension property
# (`val ApplicationCall.locale: Locale get() =`) binds its name, not its receiver type.
# A binding to an import (`const std = @import("std")`, `var express = require('express')`) names
# another module, as the syntax tree's bindings say (definitions._IMPORT_ALIAS): it defined `std` in
# every Zig file and `express` in every test of express.
_BINDING_DEF = lazy_compile(
    rf"^{_MODIFIERS}(?:declare[ \t]+)?(?:const[ \t]+(?=va[lr][ \t]))?(?:val|var|let|const)\s+(?!(?:fn|unsafe|async|extern|enum)[ \t]+[A-Za-z_\"])"
    rf"{_LANGUAGE_PREFIXES['kotlin']}([A-Za-z_$][\w$]*)"
    r"(?![\w$]|[ \t]*=[ \t]*(?:@import|require|import)[ \t]*[(\"'])",
    re.MULTILINE,
)
# Shell functions: `name() {`, `function name() {` or `function name {` (PowerShell's `Function` and
# `filter` too, a scope prefix left out: `function global:Get-Thing`), and aliases (`alias gs=...`),
# each name whole with its hyphens, dots or colons (`_bash-it-search-help`, `cht.sh`, `Get-ChildItem`).
_SHELL_NAME = r"[A-Za-z_][\w:.-]*"
_SHELL_DEF = lazy_compile(
    rf"^[ \t]*(?:(?i:function|filter)[ \t]+(?:(?i:global|script|local|private):)?({_SHELL_NAME})(?![\w:.-])"
    rf"|({_SHELL_NAME})[ \t]*\(\)|alias[ \t]+(?:-[ \t]*)?({_SHELL_NAME})=)",
    re.MULTILINE)
# C-family function or method signatures: a type, a name, an open parenthesis, not a statement
_SIGNATURE = (
    r"^[ \t]*{attributes}(?!return\b|raise\b|if\b|while\b|for\b|switch\b|else\b|new\b|throw\b|case\b|await\b|yield\b|delete\b)"
    r"[A-Za-z_](?:[\w:<>,.*&? \t]|\[\])*[\s*&>]({name}){generic}\s*\({params}$"
)
_PARAMS = r"[^;\n]*"  # the rest of the line: no statement's `;`
_SIGNATURE_DEF = lazy_compile(_SIGNATURE.format(attributes="", name=r"[A-Za-z_~]\w*", generic="", params=_PARAMS),
                              re.MULTILINE)
# C++11 and C23 attributes open a declaration (`[[nodiscard]] inline std::string Substitute(`: abseil
# writes 160 of them); elsewhere `[[` opens other things (a Lua long string, a nested array literal).
_ATTRIBUTES = r"(?:\[\[[^\[\]\n]*\]\][ \t]*)*"
# C#'s attributes likewise (`[Benchmark] public object Serialize() => ...`; Dart writes none so).
_CSHARP_ATTRIBUTES = r"(?:\[[^\[\]\n]*\][ \t]*)*"
# C and C++ also define a function with its body on the line (`void clear() { Size = 0; }`, 573 of
# the C++ functions the syntax tree finds in semble's checkouts): parameters holding no call, then
# `{` (a call's wrapped arguments `x, f(y));` and a constructor's `: x_(x) {}` stay out).
_ONE_LINE_BODY = r"(?:[^;\n]*|[^;{}()\n]*\)[^;{}()\n=]*\{[^\n]*)"
_C_SIGNATURE_DEF = lazy_compile(_SIGNATURE.format(attributes=_ATTRIBUTES, name=r"[A-Za-z_~]\w*", generic="",
                                                  params=_ONE_LINE_BODY),
                                re.MULTILINE)
# C++ also defines members out of their class, the name qualified by its owner (`void Router::add(`)
_QUALIFIED_SIGNATURE_DEF = lazy_compile(_SIGNATURE.format(attributes=_ATTRIBUTES,
                                                          name=r"(?:[A-Za-z_]\w*::)*[A-Za-z_~]\w*", generic="",
                                                          params=_ONE_LINE_BODY),
                                        re.MULTILINE)
# C# and Dart also declare a method with an expression body (`public override string ToString() =>
# Name;`) or none (an abstract or interface method, `void Write(JsonWriter writer);`): as Java's,
# parameters that hold no call, then `;`, `{` or `=>` (a wrapped call's `x, f(y));` stays out).
_DECLARED_BODY = r"(?:[^;\n]*|[^;{}()\n]*\)[^;{}()\n=]*(?:;|\{[^\n]*|=>[^\n]*))"
# C# and Dart write a generic method's type parameters after its name (`string Serialize<T>(T input)`
# defined nothing): names, commas and blanks only (`<TKey, TValue>`, `<in T>`), so the scan stops at the
# next `<` and a line's attempts stay linear. Elsewhere a name before `<...>(` is a call's (C++'s
# `x, static_cast<size_t>(n),` on a wrapped argument line, TypeScript's `key: new Set<string>(`).
_GENERIC_SIGNATURE_DEF = lazy_compile(_SIGNATURE.format(attributes=_CSHARP_ATTRIBUTES, name=r"[A-Za-z_~]\w*",
                                                        generic=r"(?:<[\w \t,]*>)?", params=_DECLARED_BODY),
                                      re.MULTILINE)
_GENERIC_SIGNATURE_LANGUAGES = frozenset({"csharp", "dart"})
_CONVERSION = lazy_compile(r"\boperator[ \t]+$")  # before a signature's name: a conversion operator
# A C or C++ signature wrapped over lines (its parameters left open on the line) is a prototype when a
# `;` ends it before any `{` opens a body (`CURLcode Curl_cf_def_send(struct Curl_cfilter *cf,` in a
# header, `int x);` on the next line): a declaration, as the one-line `int proto(int a);` is and as the
# syntax tree reads them.
_STATEMENT_OR_BODY = lazy_compile(r"[;{]")
_TYPEDEF_START = lazy_compile(r"[ \t]*typedef\b")  # `typedef void Curl_cft_close(...);` defines its type
# Java also declares a method with its body on the line (`public int size() { return size; }`), or
# none (`public abstract Object m0();` in an abstract class or an interface), and after annotations
# (`@Override public int hashCode() {`): a Java statement never starts with a type and a name
# followed by `(` (`assert check(x);` and `default: run(x);` are the exceptions, excluded), and the
# parameters of such a declaration hold no call (a wrapped argument line `property, handledType());`).
_JAVA_SIGNATURE_DEF = lazy_compile(
    r"^[ \t]*(?:@\w+(?:\([^()\n]*\))?[ \t]+)*"
    r"(?!assert\b|default\b|return\b|if\b|while\b|for\b|switch\b|else\b|new\b|throw\b|case\b|yield\b)"
    r"[A-Za-z_](?:[\w:<>,.*&? \t]|\[\])*[\s*&>]([A-Za-z_]\w*)\s*\((?:[^;\n]*|[^;{}()\n]*\)[^;{}()\n=]*(?:;|\{[^\n]*))$",
    re.MULTILINE)
# JavaScript and TypeScript write no type before a function's name: the words before it are
# modifiers, any other word is a call's context (`export default defineConfig({` in every config
# file, `date: new Date(`, `provider: playwright(),`).
_JS_SIGNATURE_DEF = lazy_compile(
    r"^[ \t]*(?:(?:export|declare|function|public|private|protected|static|async|readonly|override|abstract|get|set)"
    r"[ \t]+)+\*?[ \t]*([A-Za-z_~]\w*)\s*\([^;\n]*$", re.MULTILINE)
# Reserved words that no definition is named, read where a name stands: PHP's `static function (` and
# `get: fn () =>`, JavaScript's `f: function () {`, C's `static int (*fp)(` and
# `sizeof (`, C++'s `-> decltype(`.
_C_RESERVED = frozenset("int char void short long unsigned signed float double sizeof struct union enum".split())
_RESERVED = {
    "javascript": frozenset({"function", "extends", "typeof"}),
    "php": frozenset({"function", "fn"}),
    "c": _C_RESERVED, "objc": _C_RESERVED, "cpp": _C_RESERVED | {"decltype", "alignas", "using", "operator"},
    # C#'s constraint `where T : new()`, a tuple return type's `private static (int, T) Pair(`
    "csharp": frozenset({"new", "static"}),
    "haskell": frozenset({"instance"}),  # `data instance Fam Int`, `type instance F a = b`
}
_RESERVED["typescript"] = _RESERVED["vue"] = _RESERVED["svelte"] = _RESERVED["javascript"]
# `#define NAME`, Haskell `name ::` (or `name:: T`, not C++'s `std::string`), and top-level `NAME =
# ...` assignments. An annotation (`x: int = 3`) is on the name's line: read across lines, a C label
# (`out:`), Python's `try:`, C++'s `using ::testing::Eq;` defined themselves at the next `=` however
# far below (and each line's scan ran on).
_OTHER_DEF = lazy_compile(
    r"^#\s*define\s+([A-Za-z_]\w*)|^([a-z_][\w']*)(?:\s+::|::(?![\w:]))|^([A-Za-z_][\w.]*)[ \t]*(?::[^=\n]+)?=(?!=)",
    re.MULTILINE,
)


# Languages whose bindings are all declared (`val x =`, `var x`, `let`, a type), where a top-level
# `name = value` only assigns: a Gradle script's `description = ""` and `version = "1.0"` defined
# `description` in every Kotlin build file.
_DECLARED_BINDINGS = frozenset("kotlin java csharp go rust swift scala dart".split())
# Languages whose functions are declared by a type and a name, with no keyword; elsewhere the
# signature pattern only finds calls (a Python `x: Annotated[T, Depends(dep)]` is not a definition; a
# Scala `extends SemanticRuleSuite() {`, `val Left(_) = decoded`: its functions are all `def`s).
_SIGNATURE_LANGUAGES = frozenset(
    "c cpp objc java csharp javascript typescript php dart groovy swift vue svelte solidity".split()
)
_SHELL_LANGUAGES = frozenset({"bash", "powershell"})
# Definitions the patterns above miss, by language (a helper's sample of 800 bare names over 25
# repositories: 60 of lexical's 86 misses were forms no pattern read). Measured on semble-dev with
# more forms, which the bare names gained from (800 other names: rank 1 91.4% -> 94.5%) but the
# hybrid lost (0.8953 -> 0.8916): member properties (Swift/Kotlin `public var x`, C#'s `{ get; set; }`:
# Kotlin -0.026, C# -0.02), a qualified name read to its last part (`defmodule Ecto.Changeset.Relation`
# defines `Changeset` here; Haskell -0.017, Elixir -0.011) and C++'s `using X =` (-0.009). Their
# sentence queries' words are often such names (`value`, `name`). Kept: 91.4% -> 93.0%, hybrid +0.0004.
# Those three are weak definitions instead (`weak_definitions`): their own terms, which only a bare
# identifier asks for.
# A C typedef's name after its body (`} aeEventLoop;`)
_TYPEDEF_TAIL = lazy_compile(r"^\}[ \t]*([A-Za-z_]\w*)[ \t]*;", re.MULTILINE)
# Lua: a function bound to a name at any depth (`local on_win = function(`, `output.clear = function(`)
_LUA_FUNCTION = lazy_compile(r"^[ \t]*(?:local[ \t]+)?(?:[A-Za-z_]\w*[.:])*([A-Za-z_]\w*)[ \t]*=[ \t]*function\b",
                             re.MULTILINE)
# JavaScript/TypeScript: a named function expression anywhere (`defineGetter(req, 'query', function
# query() {`), a function bound in a body (`const transformChunk = (a, b) => {`), an object's function
# member (`text: function () {`)
_JS_FUNCTIONS = lazy_compile(
    r"\bfunction\b[ \t]*\*?[ \t]*([A-Za-z_$][\w$]*)[ \t]*\("
    r"|^[ \t]+(?:const|let|var)[ \t]+([A-Za-z_$][\w$]*)[ \t]*=[ \t]*(?:async[ \t]+)?(?:function\b|\([^()\n]*\)[ \t]*=>|[A-Za-z_$][\w$]*[ \t]*=>)"
    r"|^[ \t]+([A-Za-z_$][\w$]*)[ \t]*:[ \t]*(?:async[ \t]+)?(?:function\b|\([^()\n]*\)[ \t]*=>)",
    re.MULTILINE)
# Haskell: a class with a superclass context (`class Monoid p => FromPairs enc p | enc -> p where`)
# defines the name after `=>`, not the superclass the keyword pattern reads (_HASKELL_CONTEXT).
_HASKELL_CLASS = lazy_compile(r"^class[ \t]+[^\n=]*=>[ \t]*([A-Z]\w*)", re.MULTILINE)
_HASKELL_CONTEXT = lazy_compile(r"[^\n=]*=>")
_RUST_MACRO = lazy_compile(r"^[ \t]*macro_rules![ \t]*([A-Za-z_]\w*)", re.MULTILINE)
# Rust: a `const` or `static` item (`pub static NAME: T`, `static mut NAME: T`) at any depth (an item,
# never a local, which `let` binds: a test's `const N: usize = 64;` inside its function); its type
# follows its name, which a `const fn` lacks.
_RUST_CONST = lazy_compile(
    r"^[ \t]*(?:pub(?:\([^)\n]*\))?[ \t]+)?(?:const|static(?:[ \t]+mut)?)[ \t]+([A-Za-z_]\w*)[ \t]*:",
    re.MULTILINE)
# (A Rust `impl X`, `impl Trait for X`, defines nothing either: it adds to a type defined elsewhere, as
# the syntax tree reads it. Read as X's definition, `impl Serialize for Vec<T>` and its kind outranked
# the traits for `Serialize` and `Deserialize`: semble-dev's serde +0.026.)
# Rust: `type Output = T;` in an `impl Future for X` binds the trait's associated type, it defines no
# type of that name (as the syntax tree reads it): every Future, Iterator and Deref defined `Output`,
# `Item`, `Target`. The item around it is the last line opening one less indented above it.
_RUST_TYPE_BINDING = lazy_compile(r"^([ \t]+)type[ \t]+([A-Za-z_]\w*)[ \t]*(?:<[^\n=]*>[ \t]*)?=", re.MULTILINE)
_RUST_ITEM_LINE = lazy_compile(
    r"^([ \t]*)(?:pub(?:\([^)\n]*\))?[ \t]+)?(?:(?:unsafe|async|const|default|extern(?:[ \t]+\"[^\"\n]*\")?)[ \t]+)*"
    r"(impl|trait|mod|fn|struct|enum|union)\b([^\n]*)", re.MULTILINE)


def _rust_trait_bindings(text: str) -> set[int]:
    """Where the names of the associated type bindings of a Rust chunk's trait impls start."""
    items = [(m.start(), len(m.group(1)), m.group(2) == "impl" and " for " in m.group(3))
             for m in _RUST_ITEM_LINE.finditer(text)]
    starts = [start for start, _, _ in items]
    out = set()
    for m in _RUST_TYPE_BINDING.finditer(text):
        indent = len(m.group(1))
        i = bisect_right(starts, m.start()) - 1
        while i >= 0 and items[i][1] >= indent:
            i -= 1
        if i >= 0 and items[i][2]:
            out.add(m.start(2))
    return out
# Go: an interface's method specs declare its methods (`Read(p []byte) (n int, err error)` in `type
# Reader interface {`), as the syntax tree's method_elem does; without them a bare `Read` found an
# implementation or a generated mock (`func (m *MockReader) Read(`) first. Read only in an
# interface's body, a name followed by its parameters: an embedded interface (`io.Closer`), a type
# union (`~int | ~string`) and a comment declare nothing, and a struct's fields (`Fn func() error`)
# stay no definitions. The body is the lines up to the closing brace's (or the next interface, or
# the chunk's end): each line is read once.
_GO_INTERFACE_OPEN = lazy_compile(r"\binterface[ \t]*(\{)[ \t]*(?://[^\n]*)?\r?$", re.MULTILINE)
_GO_INTERFACE_CLOSE = lazy_compile(r"^[ \t]*\}", re.MULTILINE)
_GO_METHOD_SPEC = lazy_compile(r"^[ \t]*(?!func\b)([A-Za-z_]\w*)[ \t]*\(", re.MULTILINE)
# ... or its body on one line, the specs after `{` or `;` (`type Closer interface{ Close() error }`)
_GO_ONE_LINE_INTERFACE = lazy_compile(r"\binterface[ \t]*(\{)[^{}\n]*\}")
_GO_ONE_LINE_SPEC = lazy_compile(r"[{;][ \t]*(?!func\b)([A-Za-z_]\w*)[ \t]*\(")
# The type an interface declares, its methods' owner (`type Set[T any] interface {`, `Getter
# interface {` in a `type (` group); an anonymous one (`func f(c interface{ Close() error })`) has none.
_GO_INTERFACE_TYPE = lazy_compile(
    r"^[ \t]*(?:type[ \t]+)?([A-Za-z_]\w*)(?:\[[^\n]*\])?[ \t]+interface[ \t]*\{", re.MULTILINE)


def _go_interface_methods(text: str, carried: str = ""):
    """(name, owner) of each method spec of the interfaces in a Go chunk's text (owner "" for an
    anonymous interface); `carried`: what the file's chunks before it left open (_go_left_open)."""
    types = {m.end(): m.group(1) for m in _GO_INTERFACE_TYPE.finditer(text)}
    for m in _GO_ONE_LINE_INTERFACE.finditer(text):
        for spec in _GO_ONE_LINE_SPEC.finditer(text, m.start(1), m.end()):
            yield spec.group(1), types.get(m.end(1), "")
    opened = list(_GO_INTERFACE_OPEN.finditer(text))
    if carried and carried != _GO_GROUP:  # the chunk starts inside an interface's body
        close = _GO_INTERFACE_CLOSE.search(text, 0, opened[0].start() if opened else len(text))
        owner = "" if carried == _GO_ANONYMOUS else carried
        for spec in _GO_METHOD_SPEC.finditer(text, 0, close.start() if close else len(text)):
            yield spec.group(1), owner
    for i, m in enumerate(opened):
        start = m.end() + 1
        stop = opened[i + 1].start() if i + 1 < len(opened) else len(text)
        close = _GO_INTERFACE_CLOSE.search(text, start, stop)
        for spec in _GO_METHOD_SPEC.finditer(text, start, close.start() if close else stop):
            yield spec.group(1), types.get(m.end(1), "")


# What a Go chunk leaves open for the next (member_owners): a declaration group, an interface (its
# type's name), an anonymous interface, or nothing (""). Line chunks cut long interfaces and groups
# (gin's `IRoutes`, its MIME constants): the specs and names after the cut were lost.
_GO_GROUP = "("
_GO_ANONYMOUS = "interface"


def _go_left_open(text: str, carried: str = "") -> str:
    pos = 0
    if carried:
        close = (_GO_GROUP_CLOSE if carried == _GO_GROUP else _GO_INTERFACE_CLOSE).search(text)
        if close is None:
            return carried
        pos = close.end()
    types = {m.end(): m.group(1) for m in _GO_INTERFACE_TYPE.finditer(text, pos)}
    openers = sorted([(m.start(), m.end(), _GO_GROUP) for m in _GO_GROUP_OPEN.finditer(text, pos)] +
                     [(m.start(), m.end(), types.get(m.end(1), _GO_ANONYMOUS))
                      for m in _GO_INTERFACE_OPEN.finditer(text, pos)])
    for start, end, state in openers:
        if start < pos:  # inside a block closed already (an interface in a `type (` group)
            continue
        close = (_GO_GROUP_CLOSE if state == _GO_GROUP else _GO_INTERFACE_CLOSE).search(text, end)
        if close is None:
            return state
        pos = close.end()
    return ""


# Go: a group (`const (`, `var (`, `type (`) declares the names its members start with (`MIMEJSON =
# "application/json"`, `debugCode = iota`, `releaseCode`, `a, b = 1, 2`, `formBinding struct{}`), one
# indentation in (gofmt's tab); deeper lines are a member's value or body. The group ends at its `)`
# (or the chunk's end).
_GO_GROUP_OPEN = lazy_compile(r"^(?:const|var|type)[ \t]*\([ \t]*(?://[^\n]*)?\r?$", re.MULTILINE)
_GO_GROUP_CLOSE = lazy_compile(r"^\)", re.MULTILINE)
_GO_GROUP_MEMBER = lazy_compile(
    r"^(?:\t|    )([A-Za-z_]\w*(?:[ \t]*,[ \t]*[A-Za-z_]\w*)*)(?=[ \t]|\r?$)", re.MULTILINE)


def _go_group_names(text: str, carried: str = ""):
    """The names the `const (`, `var (` and `type (` groups of a Go chunk's text declare (`carried`
    _GO_GROUP: the chunk starts inside one)."""
    # One group after another (they do not nest), each from its opening to its `)`: a search for
    # each opening's `)` from every opening was quadratic on many unclosed ones.
    pos, inside = 0, carried == _GO_GROUP
    while True:
        if inside:
            start, inside = 0, False
        else:
            opening = _GO_GROUP_OPEN.search(text, pos)
            if opening is None:
                return
            start = opening.end()
        close = _GO_GROUP_CLOSE.search(text, start)
        for member in _GO_GROUP_MEMBER.finditer(text, start, close.start() if close else len(text)):
            for name in member.group(1).split(","):
                if name.strip() != "_":
                    yield name.strip()
        if close is None:
            return
        pos = close.end()


# Python: a top-level name whose annotation wraps (`TESTS: tuple[` ending its line, `= [...]` lines below)
_PYTHON_WRAPPED_ANNOTATION = lazy_compile(r"^([A-Za-z_]\w*)[ \t]*:[^=\n]*[\[(][ \t]*$", re.MULTILINE)
# Elixir's heredocs (`@moduledoc """`, `@doc """`) hold documentation: the example modules and
# functions they show (`defmodule User do`, `def changeset(`) define nothing (164 names over phoenix
# and ecto; strings to the syntax tree). One opens at the end of a line and closes at the start of
# one. A `"""` alone on its line opens one after a line ending in an operator (`string =`, `:html ->`)
# and closes one after a line of its text: so a chunk that starts inside one is read right too.
_ELIXIR_HEREDOC_LINE = lazy_compile(
    r'''^[ \t]*((?:"""|\'\'\')[^\n]*|[^\n]*(?:"""|\'\'\')[ \t]*\r?)$''', re.MULTILINE)
_ELIXIR_OPERATOR_END = lazy_compile(r'(?:[=(,\[{>]|\bdo)[ \t]*\r?\n[ \t\r\n]*\Z')


def _blanked(span: str) -> str:
    """A span of a chunk's text with every character but its line breaks a space: what a string
    holds defines nothing, and the offsets (and so the owners) stay where they were."""
    return re.sub(r"[^\n]", " ", span)


def _without_heredocs(text: str) -> str:
    """An Elixir chunk's text with its heredocs' lines blanked (offsets kept)."""
    out, pos = [], 0
    inside = ""  # the delimiter of the heredoc open here
    start = 0
    for i, m in enumerate(_ELIXIR_HEREDOC_LINE.finditer(text)):
        line = m.group(1).strip()
        opens, closes = line[-3:] if line[-3:] in ('"""', "'''") else "", line[:3] if line[:3] in ('"""', "'''") else ""
        if i == 0 and closes and (not opens or m.start() == 0 or not _ELIXIR_OPERATOR_END.search(text, 0, m.start())):
            inside = closes  # the chunk starts inside one
        if inside and closes == inside:
            out.append(text[pos:start])
            out.append(_blanked(text[start:m.start()]))
            pos, inside = m.start(), ""
        elif not inside and opens:
            start, inside = m.end(), opens
    if inside:
        out.append(text[pos:start])
        out.append(_blanked(text[start:]))
        pos = len(text)
    out.append(text[pos:])
    return "".join(out)


# A Ruby heredoc (`write "app.rb", <<~RUBY` ... `RUBY`) is a string: the classes and methods of the
# app file a Rails test writes are no definitions of the test's (as the syntax tree reads them).
# (the first on a line that is no comment: a doc comment's example `#   execute <<~SQL` opens none)
_RUBY_HEREDOC = lazy_compile(r"^[ \t]*[^#\s][^\n]*?<<[~-]?(['\"]?)([A-Z_][A-Z0-9_]*)\1", re.MULTILINE)


def _without_ruby_heredocs(text: str) -> str:
    """A Ruby chunk's text with the bodies of the heredocs opened in it blanked (offsets kept). Each
    body is searched for past the one before, and one left open runs to the end: linear."""
    out, pos = [], 0
    for m in _RUBY_HEREDOC.finditer(text):
        if m.start() < pos:
            continue  # in a body blanked already
        start = text.find("\n", m.end())
        if start < 0:
            break
        close = re.compile(rf"^[ \t]*{m.group(2)}[ \t]*\r?$", re.MULTILINE).search(text, start + 1)
        end = close.start() if close else len(text)
        out.append(text[pos:start + 1])
        out.append(_blanked(text[start + 1:end]))
        pos = end
        if not close:
            break
    out.append(text[pos:])
    return "".join(out)


# The Lisps: `(defun name`, `(defn- name`, `(define (name args)`, `(defmacro name`, ... at the top
# level (a line's first form); the name as written (`my-mode-setup`, `valid?`).
_LISP_DEF = lazy_compile(
    r"^\((?:def(?:n-?|un|macro|multi|method|generic|class|struct|record|type|protocol|interface|var|const|"
    r"custom|parameter|ine(?:-syntax|-record-type|-values)?|fn)?|fn)[ \t]+(?:\([ \t]*)?([^\s()\[\]{}\"';`,]+)",
    re.MULTILINE)
# Tcl: `proc name args body` (a namespaced `::pkg::name` defines its last part)
_TCL_PROC = lazy_compile(r"^[ \t]*proc[ \t]+(?:[\w:]*::)?([^\s{}:]+)", re.MULTILINE)
# MATLAB: `function name(`, `function y = name(`, `function [a, b] = name(` (not its outputs).
_MATLAB_FUNCTION = lazy_compile(r"^[ \t]*function[ \t]+(?:(?:\[[^\]\n]*\]|[A-Za-z_]\w*)[ \t]*=[ \t]*)?([A-Za-z_]\w*)",
                                re.MULTILINE)
# C and C++: a table a file defines (unindented), `const struct Curl_protocol Curl_protocol_http = {`,
# `static const char *const names[] = {`: curl's protocol tables were no definition, and the first
# hit for one's name a line using it.
_C_TABLE = lazy_compile(
    r"^(?:(?:static|const|constexpr|extern|volatile|unsigned|signed|struct|enum|union)[ \t]+)*"
    r"(?!(?:return|else|case|do|goto)\b)[A-Za-z_][\w:]*"
    r"(?:[ \t]*\*+[ \t]*|[ \t]+)(?:const[ \t]*\*?[ \t]*)?([A-Za-z_]\w*)(?:\[[^\]\n]*\])*[ \t]*=[ \t]*\{", re.MULTILINE)
_MORE_DEFS: dict[str, tuple] = {
    "matlab": (_MATLAB_FUNCTION,),
    "python": (_PYTHON_WRAPPED_ANNOTATION,),
    "c": (_TYPEDEF_TAIL, _C_TABLE), "objc": (_TYPEDEF_TAIL, _C_TABLE), "cpp": (_C_TABLE,),
    "lua": (_LUA_FUNCTION,), "javascript": (_JS_FUNCTIONS,), "typescript": (_JS_FUNCTIONS,),
    "vue": (_JS_FUNCTIONS,), "svelte": (_JS_FUNCTIONS,), "rust": (_RUST_MACRO, _RUST_CONST),
    "haskell": (_HASKELL_CLASS,),
    "clojure": (_LISP_DEF,), "commonlisp": (_LISP_DEF,), "elisp": (_LISP_DEF,), "scheme": (_LISP_DEF,),
    "racket": (_LISP_DEF,), "fennel": (_LISP_DEF,), "tcl": (_TCL_PROC,),
}
_PROSE = frozenset({"markdown", "rst", "text", "asciidoc", "org", "tex"})

# Weak definitions: names a chunk declares that a sentence's words so often are (`value`, `name`,
# `Changeset`) that counting them as definitions misled sentences, while a bare identifier asking for
# one means that declaration. A member property (a binding with an access or storage modifier, which
# no local variable takes: Swift `public var centerY`, `internal static let topMargin`; Kotlin
# `override val localAddress`, `private const val X`), C#'s `public bool IsReadable { get; set; }`,
# C++'s `using json = basic_json<>;`, and the last part of a qualified definition
# (`defmodule Ecto.Changeset.Relation`, `module Data.Aeson.Types`, `class Foo::Bar`). Bare names
# defined by the syntax tree, 800 drawn afresh over 40 repositories: rank 1 91.2% -> 92.8% (13 found
# first, aeson's `Parser` second after `module Data.Aeson.Parser`); semble-dev: no query moved.
_MEMBER_BINDING = lazy_compile(
    r"^[ \t]+(?:@\w+[ \t]+)*(?:(?:public|private|protected|internal|fileprivate|open|static|override|lazy|weak|"
    r"final|const|lateinit|required|class|nonisolated|unowned|implicit)[ \t]+)+(?:var|let|val)[ \t]+([A-Za-z_]\w*)",
    re.MULTILINE)
_CSHARP_PROPERTY = lazy_compile(
    r"^[ \t]+(?:(?:public|private|protected|internal|static|virtual|override|abstract|sealed|new|readonly|required)[ \t]+)+"
    r"[\w<>\[\]?,.]{1,100}(?:[ \t]*<[^\n>]{0,100}>)?[?\[\]]{0,4}[ \t]{1,40}([A-Za-z_]\w*)[ \t]*(?:\{[ \t]*(?:get|set|init|private|protected|internal)|=>)",
    re.MULTILINE)
_USING_DEF = lazy_compile(r"^[ \t]*(?:template\s*<[^\n]*>\s*)?using\s+([A-Za-z_]\w*)\s*=", re.MULTILINE)
# What follows a keyword definition's name when it is qualified (`::`, `.`, PHP's `\`): its last part
_QUALIFIER = re.compile(r"::|\.|\\")
_QUALIFIED_HEAD = lazy_compile(r"(?<![\w.:\\])(?:[A-Za-z_]\w*(?:::|\.|\\))+$")  # `Phoenix.` before `Socket`
_QUALIFIED_TAIL = lazy_compile(r"(?:(?:::|\.|\\)[A-Za-z_]\w*)*(?:::|\.|\\)([A-Za-z_]\w*[?!]?)(?![\w$])")
# A name qualified twice or more (`namespace Newtonsoft.Json.Tests`; once, the prefix reads its last
# part already), by language where measured: its last part (True), or none with the last part a weak
# definition (False); elsewhere its second part, as the prefix leaves it. The syntax tree's answer is
# the last part. A PHP or C# namespace follows its directory (`Illuminate\Support\Facades` in
# `Support/Facades/`): as a definition its last part helps a question about that directory
# (semble-dev: 6 laravel and guzzle questions up, 1 down; 1 newtonsoft up). An Elixir module's did
# not (2 phoenix and 1 ecto questions down, as the weak definitions above say), and its second part
# (`Tasks` in every Mix task) helped none (1 phoenix question up without it). Haskell's `module
# Text.Pandoc.Readers.LaTeX` defined `Pandoc` in every pandoc module; as Elixir's, its last part is
# weak (semble-dev: 3 pandoc questions moved, 1 up and 2 down, pandoc's mean -0.0004). Ruby's `class
# ActiveStorage::Blob` (`::` is no prefix) defined `ActiveStorage`, its last part weakly already: only
# that (no question moved, nor with `Blob` a definition).
_QUALIFIED_NAMES = {"php": True, "csharp": True, "elixir": False, "haskell": False, "ruby": False}
# A class's fields and properties, where a default or a setting is kept (guzzle's `public static
# $defaultSettings = [...]` was 14th for its own name, behind the code using it): weak definitions
# too. PHP's properties and constants; Java's, C#'s and Dart's fields (modifiers, a type, the name,
# then `=` or `;`: a method has its parenthesis first); JavaScript's and TypeScript's class fields
# (a modifier or a type annotation: a bare `x = 1` is a statement); a Ruby constant in a class
# (upper case); a Python class attribute with a type (`timeout: float = 30`) and what `__init__`
# sets on `self` (`self.max_redirects = ...`, read in _weak_names); a Go struct's fields.
_PHP_PROPERTY = lazy_compile(  # (a function's `static $count = 0;` is a local)
    r"^[ \t]+(?=(?:(?:static|readonly|final)[ \t]+)*(?:public|private|protected|var|const)[ \t])"
    r"(?:(?:public|private|protected|static|readonly|var|final)[ \t]+)*(?:const[ \t]+)?"
    r"(?:\??[A-Za-z_\\|]\w*[ \t]+)?\$?([A-Za-z_]\w*)[ \t]*[=;]", re.MULTILINE)
_FIELD = lazy_compile(  # (`final`, `const` or `late` alone is a local's; bounded runs: a line of spaces)
    r"^[ \t]+(?=(?:(?:final|const|late)[ \t]+)*(?:public|private|protected|internal|static|readonly|volatile|transient)[ \t])"
    r"(?:(?:public|private|protected|internal|static|final|const|readonly|volatile|transient|late)[ \t]+)+"
    r"[A-Za-z_][\w<>\[\],.? ]{0,100}?[?\]>]?[ \t]{1,40}([A-Za-z_]\w*)[ \t]*(?:=(?!=)|;)", re.MULTILINE)
_CLASS_FIELD = lazy_compile(
    r"^[ \t]+(?:(?:(?:static|readonly|private|public|protected|declare|override|abstract|accessor)[ \t]+)+#?"
    r"([A-Za-z_$][\w$]*)[ \t]*[?!]?[ \t]*(?::[^=;\n]+)?(?:=(?![=>])|;)"
    r"|#?([A-Za-z_$][\w$]*)[ \t]*[?!]?:[ \t]*[^=;,\n(){}]+(?:=(?![=>])|;)|#([A-Za-z_$][\w$]*)[ \t]*(?:=(?![=>])|;))",
    re.MULTILINE)
_RUBY_CONSTANT = lazy_compile(r"^[ \t]+([A-Z][A-Z0-9_]+)[ \t]*=(?![=~>])", re.MULTILINE)
# (A type is a name, subscripted or a union of such: a docstring's `Note: this is not thread safe` is none.)
_PYTHON_TYPE = r"[A-Za-z_][\w.]*(?:\[[^\]\n]*\])?"
_PYTHON_ATTRIBUTE = lazy_compile(
    rf"^[ \t]+([A-Za-z_]\w*)[ \t]*:[ \t]*{_PYTHON_TYPE}(?:[ \t]*\|[ \t]*{_PYTHON_TYPE})*[ \t]*(?:=(?!=)|$)", re.MULTILINE)
_PYTHON_SELF = lazy_compile(r"^[ \t]+self\.([A-Za-z_]\w*)[ \t]*(?::[^=\n]+)?=(?!=)", re.MULTILINE)
_PYTHON_INIT = lazy_compile(r"^([ \t]*)def __init__\(", re.MULTILINE)
_SIGNATURE_END = lazy_compile(r"\)[ \t]*(?:->[^\n:]*)?:[ \t]*(?:#[^\n]*)?$", re.MULTILINE)
_NOT_FIELDS = frozenset({"default", "case", "return", "break", "continue", "else"})  # `default: return x;` in a switch
_GO_STRUCT = lazy_compile(r"^type[ \t]+\w+(?:\[[^\]\n]*\])?[ \t]+struct[ \t]*\{\n(.*?)^\}", re.MULTILINE | re.DOTALL)
_GO_FIELD = lazy_compile(r"^[ \t]+([A-Za-z_]\w*)(?:[ \t]*,[ \t]*\w+)*[ \t]+[*\[\]\w.]", re.MULTILINE)
_WEAK_DEFS: dict[str, tuple] = {
    "swift": (_MEMBER_BINDING,), "kotlin": (_MEMBER_BINDING,), "scala": (_MEMBER_BINDING,),
    "csharp": (_CSHARP_PROPERTY, _FIELD), "cpp": (_USING_DEF,), "php": (_PHP_PROPERTY,), "java": (_FIELD,),
    "dart": (_FIELD,), "javascript": (_CLASS_FIELD,), "typescript": (_CLASS_FIELD,), "ruby": (_RUBY_CONSTANT,),
}


def _weak_names(text: str, language: str) -> set[str]:
    """The weak definitions the patterns read in a chunk (definitions among them too)."""
    found = {name for pattern in _WEAK_DEFS.get(language, ())
             for m in pattern.finditer(text) for name in m.groups() if name and name not in _NOT_FIELDS}
    if language == "python":
        if ":" in text:
            found.update(m.group(1) for m in _PYTHON_ATTRIBUTE.finditer(text) if _class_level(text, m.start()))
        init = _PYTHON_INIT.search(text) if "def __init__(" in text else None
        if init is not None:  # what __init__'s body sets, to the next line indented no deeper than its `def`
            indent = len(init.group(1))
            # (Its body starts after the signature, which may close on a line of its own: `    ) -> None:`.)
            closed = _SIGNATURE_END.search(text, init.end())
            body = text.find("\n", closed.end() if closed else init.end()) + 1
            end = re.compile(rf"^[ \t]{{0,{indent}}}\S", re.MULTILINE).search(text, body) if body else None
            found.update(m.group(1) for m in _PYTHON_SELF.finditer(text, init.end(), end.start() if end else len(text)))
    elif language == "go" and "struct" in text:
        for struct in _GO_STRUCT.finditer(text):
            found.update(m.group(1) for m in _GO_FIELD.finditer(struct.group(1)))
    return found


def _class_level(text: str, at: int) -> bool:
    """Whether a Python line at offset `at` is in a class's body, not a function's: the nearest
    line above it indented less opens a class."""
    indent = len(text[at:]) - len(text[at:].lstrip(" \t"))
    for line in reversed(text[:at].splitlines()):
        stripped = line.lstrip(" \t")
        if stripped and not stripped.startswith(("#", "@")) and len(line) - len(stripped) < indent:
            return stripped.startswith("class ")
    return False


def weak_definitions(text: str, language: str = "") -> set[str]:
    """The weak definitions of a chunk's text (above) that are not its definitions too."""
    weak: set[str] = set()
    definitions_and_members(text, language, weak=weak)
    return weak


def defined_names(text: str, language: str = "") -> set[str]:
    return definitions_and_members(text, language)[0]


# Languages written as another one's dialect, read by that one's patterns: CUDA and Metal are C++
# with kernels, GLSL and HLSL C-like shaders.
_DIALECTS = {"cuda": "cpp", "metal": "cpp", "glsl": "c", "hlsl": "c"}


def definitions_and_members(text: str, language: str = "", owners: list[tuple[int, str]] | None = None,
                            weak: set[str] | None = None) -> tuple[set[str], set[str]]:
    """(names the chunk defines, its `owner.name` pairs), in one pass of the patterns. `owners`:
    where its lines change owner (member_owners), None when it has none. `weak`, when given,
    receives its weak definitions that are not its definitions too."""
    language = _DIALECTS.get(language, language)
    names: set[str] = set()
    members: set[str] = set()
    if language == "elixir" and ('"""' in text or "'''" in text):
        text = _without_heredocs(text)
    elif language == "ruby" and "<<" in text:
        text = _without_ruby_heredocs(text)
    go = language == "go"
    # A Go chunk's owners say only what the chunks before it left open (member_owners): its
    # methods name their owner on the receiver.
    carried = owners[0][1] if go and owners else ""
    at = [offset for offset, _ in owners] if owners and not go else []

    def member(name: str, offset: int) -> str:
        """Record `owner.name` for a definition at offset; its owner's name ("" for none)."""
        i = bisect_right(at, offset) - 1
        owner = owners[i][1] if i >= 0 else ""
        if go:
            m = _GO_RECEIVER.match(text, offset)
            if m:
                owner = m.group(1)
        if owner:
            members.add(f"{owner}.{name}")
        return owner

    declared = {m.start(1) for m in _OVERLOADED.finditer(text)} if language == "python" and "overload" in text else \
        _rust_trait_bindings(text) if language == "rust" and "type" in text else ()
    pointers = {}  # where a function-pointer typedef starts -> the name it defines
    c_family = language in _C_FAMILY
    if (not language or c_family) and "typedef" in text:
        pointers = {m.start(): m.group(1) for m in _FNPTR_TYPEDEF.finditer(text)}
        if c_family:
            pointers.update((m.start(), m.group(1)) for m in _ONE_LINE_TYPEDEF.finditer(text))
        names.update(pointers.values())
    shell = language in _SHELL_LANGUAGES
    for m in _KEYWORD_DEFS.get(language, _KEYWORD_DEF).finditer(text):
        if shell and _SHELL_DEF.match(text, text.rfind("\n", 0, m.start(1)) + 1):
            continue  # the shell pattern reads this line's name whole (`function _bash-it-help`, not `_bash`)
        if m.start(1) in declared or m.start() in pointers or c_family and _C_TYPE_USE.match(text, m.end(1)) \
                or language == "haskell" and _HASKELL_CONTEXT.match(text, m.end(1)):
            continue
        # A qualified name (`defmodule Mix.Tasks.Phx.New`, `namespace Illuminate\Support\Facades;`) was
        # read to its second part (the prefix takes one), which it does not define (_QUALIFIED_NAMES).
        name = m.group(1)
        tail = _QUALIFIED_TAIL.match(text, m.end(1))
        before = _QUALIFIED_HEAD.search(text, max(0, m.start(1) - 120), m.start(1))
        if tail is not None or before is not None:
            # `defmodule Phoenix.Socket` defines the member `Phoenix.Socket` whatever its parts
            # count as alone: the qualified query asks for it (a JavaScript bundle defining a
            # `Phoenix` and a `Socket` came first, rated high). (Some prefixes take a first part.)
            parts = _QUALIFIER.split(text[before.start() if before else m.start(1):tail.end() if tail else m.end(1)])
            members.add(f"{parts[-2]}.{parts[-1]}")
        if tail is not None and language in _QUALIFIED_NAMES:
            name = tail.group(1) if _QUALIFIED_NAMES[language] else ""
        if name:
            names.add(name)
        if weak is not None and tail and tail.group(1) != name:
            weak.add(tail.group(1))
        if owners is not None and name:
            member(name, m.start())
    # C's and C++'s `const` qualifies a type (`const char *name`): no binding (it defined `char`)
    for m in _BINDING_DEF.finditer(text) if language not in _C_FAMILY else ():
        names.add(m.group(1))
    if not language or language in _SIGNATURE_LANGUAGES:
        signature = _QUALIFIED_SIGNATURE_DEF if language in ("cpp", "objc") else _C_SIGNATURE_DEF if language == "c" else \
            _GENERIC_SIGNATURE_DEF if language in _GENERIC_SIGNATURE_LANGUAGES else \
            _JS_SIGNATURE_DEF if language in _METHOD_LANGUAGES else \
            _JAVA_SIGNATURE_DEF if language == "java" else _SIGNATURE_DEF
        stops = None  # where each `;` or `{` is (a C or C++ chunk's), found once for every signature
        for m in signature.finditer(text):
            if _CONVERSION.search(text, max(0, m.start(1) - 12), m.start(1)):
                continue  # `operator bool() const {` converts to a type, it does not define it
            line = m.group(0)
            if c_family and "{" not in line and line.count("(") > line.count(")") and not _TYPEDEF_START.match(line):
                if stops is None:
                    stops = [(stop.start(), stop.group(0)) for stop in _STATEMENT_OR_BODY.finditer(text)]
                i = bisect_left(stops, (m.end(), ""))
                if i < len(stops) and stops[i][1] == ";":
                    continue  # a prototype
            qualifier, _, name = m.group(1).rpartition("::")
            if qualifier:  # C++'s out-of-class definition names its owner: `void Router::add(`
                owner = qualifier.rpartition("::")[2]
                members.add(f"{owner}.{name}")
            else:
                owner = member(name, m.start()) if owners is not None else ""
            # A constructor (`public HashCodeBuilder(`, `Router::Router(`) is its class's member, not
            # a definition of the class's name: that made the short constructor the class's hit.
            if owner != name:
                names.add(name)
    if language in _METHOD_LANGUAGES:
        # (the same length, so offsets into it are offsets into text)
        typed = _ONE_LINE_BRACES.sub(lambda b: b.group(0).replace(";", ","), text) if ";" in text else text
        for pattern, source in ((_METHOD_DEF, text), (_WRAPPED_METHOD_DEF, typed)):
            for m in pattern.finditer(source):
                names.add(m.group(1))
                if owners is not None:
                    member(m.group(1), m.start())
    if not language or language in _SHELL_LANGUAGES:
        for m in _SHELL_DEF.finditer(text):
            names.add(m.group(1) or m.group(2) or m.group(3))
    for m in _OTHER_DEF.finditer(text):
        # (Tcl's `proc ::ns::name` and `namespace eval ::ns` are no `name ::` signatures)
        name = m.group(1) or (m.group(2) if language != "tcl" else None) or \
            (m.group(3) if language not in _DECLARED_BINDINGS else None)
        if name:
            names.add(name.rsplit(".", 1)[-1])
    for pattern in _MORE_DEFS.get(language, ()):
        for m in pattern.finditer(text):
            name = next(g for g in m.groups() if g)
            names.add(name)
            if owners is not None:
                member(name, m.start())
    if go and ("(" in text or carried):
        names.update(_go_group_names(text, carried))
    if go and ("interface" in text or carried):
        for name, owner in _go_interface_methods(text, carried):
            names.add(name)
            if owner and owners is not None:
                members.add(f"{owner}.{name}")
    if weak is not None:
        weak.update(_weak_names(text, language))
        weak -= names
    if language == "rust" and "$" in text:
        # a `macro_rules!` template's `fn $name(` or `struct $t` names a macro argument, nothing defined
        names = {name for name in names if "$" not in name}
        members = {pair for pair in members if "$" not in pair}
    names -= _RESERVED.get(language, frozenset())
    return names, members


def path_words(path: str) -> list[str]:
    """The words of a path, its file's extension left out, unless that names a tool's file
    (`migrate.Dockerfile`)."""
    name = path.rsplit("/", 1)[-1]
    if "." in name and not languages.tool_file(name.rsplit(".", 1)[1]):
        path = path.rsplit(".", 1)[0]
    return re.findall(r"[^\W_](?:\w*[^\W_])?", path)


def path_terms(path: str) -> list[str]:
    out: list[str] = []
    for word in path_words(path):
        out.extend(split_identifier(word))
        if languages.tool_file(word):  # `Dockerfile` is also `docker`'s file, `Jenkinsfile` jenkins'
            out.extend(split_identifier(word[:-4]))
    return out


def chunk_terms(path: str, text: str, context: str = "", path_weight: int = 1, language: str = "",
                definitions=None, owners=None, pairs: bool = True) -> Counter:
    """Every term a chunk is indexed under: words, path words, definitions and members, and with
    `pairs` the pair terms of its identifiers (the scope path's too).
    `definitions` are the names a syntax tree says the chunk defines (its scope path is its
    context); None finds them with the patterns above, and with `owners` (member_owners) the
    `owner.name` pairs of those inside a class-like definition."""
    text = without_data(text)
    body = f"{context}\n{text}" if context else text
    words = words_of(body)
    counts = term_counts(body, words)
    if pairs:
        counts.update(pair_terms(body, words))
        if language in _LITERAL_LANGUAGES:
            counts.update(literal_pairs(text, language))
    if path_weight:
        for term in path_terms(path):
            counts[term] += path_weight
        if pairs:  # a file named `connection_pool.py` joins those words too
            counts.update(pair_terms("", path_words(path)))
    if definitions is None and language in _PROSE:
        # A code block in a page defines nothing: the page outranked the source it quotes.
        names, members = (), ()
    elif definitions is None:
        weak = set()
        names, members = definitions_and_members(text, language, owners, weak)
        for name in weak:
            counts[weak_def_term(name)] += 1
    else:
        names, members = set(definitions), ()  # its scope path (context) places it: see scope_factors
        for name in _weak_names(text, language) - names:  # (fields, aliases: what the tree names no definition)
            counts[weak_def_term(name)] += 1
    # Each with its exact spelling too: `Vitest` prefers `class Vitest` over `const vitest`,
    # `Sinatra::Helpers` the module over the method `Sinatra.helpers`, and `echo` click's `def echo`
    # over a class calling its own `_echo` six times (lower-case names had no exact term until then).
    for name in (*names, *members):
        counts[def_term(name)] += 1
        counts[exact_def_term(name)] += 1
    return counts


def document_length(counts: dict) -> int:
    """The length BM25 normalises a chunk by: its terms, less its pair terms, exact spellings of
    definitions and weak definitions (they restate words and definitions already counted, and a
    pasted report or a bare identifier, which ask for no pair, or a sentence, which asks for no
    weak definition, rank as they did without them)."""
    # Summed in the interpreter's C loops (a build asks this of every chunk, in its main process).
    restated = compress(counts.values(), map(str.startswith, counts, repeat(_RESTATED)))
    return sum(counts.values()) - sum(restated)


_RESTATED = (PAIR, _EXACT, _WEAK)  # document_length's prefixes


def pair_term(a: str, b: str) -> str:
    return f"{PAIR}{a}&{b}" if a < b else f"{PAIR}{b}&{a}"


def pair_terms(text: str, words: list[str] | None = None) -> Counter:
    """The pair terms of a text: every two parts of each compound identifier, once per occurrence
    (`words`: the text's words_of, when the caller has them)."""
    counts: Counter = Counter()
    for word, n in Counter(words_of(text) if words is None else words).items():
        if word.isalpha() and word.isascii() and (word.isupper() or word[1:].islower()):
            continue  # `self`, `Config`, `HTTP`: one part (most words; the split is not needed)
        parts = identifier_parts(word)[:PAIR_PARTS]
        for a, b in combinations(parts, 2):
            counts[pair_term(a, b)] += n
    return counts


# A string in code, on one line (or continued past a line end by a backslash, as Rust's and C's
# long messages are written), of 6 characters or more (shorter ones are keys and characters, not
# messages). Its end is found by scanning, never by backtracking.
_QUOTED = r'"(?:[^"\\\n]|\\[\s\S]){6,400}"|\'(?:[^\'\\\n]|\\[\s\S]){6,400}\''
_LITERAL = lazy_compile(_QUOTED)
# JavaScript's template literals and Go's raw strings too (`No "${type}"-procedure on path "${path}"`):
# found first, the quotes inside one are its text.
_LITERAL_OR_BACKTICKED = lazy_compile(_QUOTED + r'|`(?:[^`\\\n]|\\.){6,400}`')
_BACKTICK_LANGUAGES = frozenset({"javascript", "typescript", "vue", "svelte", "go"})
# What a program fills in before a message is shown: `{value!r}`, `%s`, `%(name)d`, `${name}`.
_PLACEHOLDER = lazy_compile(r"\$?\{[^{}]*\}|%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[a-zA-Z]")
_LETTERS = lazy_compile(r"[A-Za-z]+")
LITERAL_PAIRS = 16  # of one string: a message's words, not a long text's
# Only code's strings are messages; a data file's strings are its contents (and in prose quotes are
# punctuation).
_LITERAL_LANGUAGES = languages.languages_of(languages.CODE)


def literal_pairs(text: str, language: str = "") -> Counter:
    """Pair terms of every two words a string literal writes next to each other."""
    counts: Counter = Counter()
    for m in (_LITERAL_OR_BACKTICKED if language in _BACKTICK_LANGUAGES else _LITERAL).finditer(text):
        body = _PLACEHOLDER.sub(" ", m.group(0)[1:-1])
        units = [u for u in map(word_unit, _LETTERS.findall(body)) if u]
        for a, b in zip(units, units[1:LITERAL_PAIRS + 1]):
            if a != b:
                counts[pair_term(a, b)] += 1
    return counts


def phrase_pairs(text: str) -> tuple[str, ...]:
    """The pair terms of every two words a text writes next to each other, as `literal_pairs` reads
    a string's (stop words and single letters skipped), each once, in order: a pasted message asks
    under these for the literal that says it."""
    units = [u for u in map(word_unit, _LETTERS.findall(_PLACEHOLDER.sub(" ", text))) if u]
    return tuple(dict.fromkeys(pair_term(a, b) for a, b in zip(units, units[1:]) if a != b))


def question_pairs(words) -> list[str]:
    """The pair terms a question asks under: every two of its distinct words (a compound word's
    parts each count as one), as an identifier's parts are paired."""
    units: dict[str, None] = {}  # (the first QUESTION_UNITS, in order: a pasted hex dump has 200,000)
    for word in words:
        for unit in identifier_parts(word) or (word_unit(word),):
            if unit:
                units[unit] = None
                if len(units) == QUESTION_UNITS:
                    return [pair_term(a, b) for a, b in combinations(units, 2)]
    return [pair_term(a, b) for a, b in combinations(units, 2)]


# Definitions that own members: a method defined below one (indented, or up to its closing brace)
# is that owner's.
_OWNER_KEYWORDS = "class|struct|interface|trait|enum|object|record|protocol|extension|module|namespace|defmodule"
_IMPL = r"impl(?:<[^\n{]*?>)?(?:\s+[\w:]+(?:<[^\n{]*?>)?\s+for)?"


def _owner_line(keywords: str, modifiers: str = "") -> str:
    """A line opening an owner: its indentation, the owner's name (a qualified one's last part)."""
    return rf"^([ \t]*){_with_modifiers(_MODIFIERS, modifiers)}(?:{keywords})\s+(?:[A-Za-z_][\w]*(?:\.|::))*([A-Za-z_$][\w$]*)"


_OWNER_LINE = lazy_compile(_owner_line(f"{_OWNER_KEYWORDS}|{_IMPL}"), re.MULTILINE)
# By language, its definition keywords that own (_LANGUAGE_KEYWORDS): one list for all made a line
# starting with another language's owner keyword an owner of the definitions below it (a C# method
# returning `object` its body's, Elixir's doc line `module to the list` `to` of the example after it;
# 700 such lines over semble's 40 repositories). A language with none has no owner lines (Go's
# methods name theirs on the receiver).
_LANGUAGE_OWNERS = {
    language: [w for w in words.split() if w in _OWNER_KEYWORDS.split("|")] + ([_IMPL] if language == "rust" else [])
    for language, words in _LANGUAGE_KEYWORDS.items()}
_OWNER_LINES = {language: lazy_compile(_owner_line("|".join(words), _LANGUAGE_MODIFIERS.get(language, "")), re.MULTILINE)
                if words else None for language, words in _LANGUAGE_OWNERS.items()}
# MULTILINE: matched at a line's start inside a chunk (`^` alone matches only at the text's
# start); the receiver's name is optional (`func (jsonBinding) Bind` is jsonBinding's).
_GO_RECEIVER = lazy_compile(r"^func\s*\(\s*(?:\w+\s+)?\*?\s*([A-Za-z_]\w*)", re.MULTILINE)
_OWNER_HINT = re.compile(rf"\b(?:{_OWNER_KEYWORDS}|impl)\b")  # cheap: does a chunk open any owner


def member_owners(texts: list[str], language: str = "") -> list[list[tuple[int, str]] | None]:
    """For a file's consecutive chunks, where each chunk's lines change owner: [(offset, name of
    the innermost owning definition from there on, or "")], by indentation, which every
    mainstream style keeps (an Allman brace on its own line stays with its owner); None for a
    chunk with no owner anywhere. A Go method names its owner on its receiver instead: a Go chunk's
    list is [(0, the interface or group the chunks before it left open)] or []. Work is
    per owner opened or closed, not per line: a few regex scans a chunk."""
    language = _DIALECTS.get(language, language)
    owners: list[tuple[int, str]] = []  # (indentation, name), innermost last
    out: list[list[tuple[int, str]] | None] = []
    go = language == "go"
    owner_line = _OWNER_LINES.get(language, _OWNER_LINE)
    carried = ""  # Go: what the chunks so far left open (_go_left_open)
    for text in texts:
        if go:  # no owner lines: a method names its owner on its receiver
            out.append([(0, carried)] if carried else [])
            carried = _go_left_open(text, carried)
            continue
        end = len(text) + 1
        opened = [(m.start(), len(m.group(1)), m.group(2), m.end()) for m in owner_line.finditer(text)] \
            if owner_line is not None and _OWNER_HINT.search(text) else []
        if not owners and not opened:
            out.append(None)
            continue
        changes = [(0, owners[-1][1] if owners else "")]
        pos, i = 0, 0
        while True:
            next_open = opened[i][0] if i < len(opened) else end
            next_pop = end
            if owners:
                m = _closing_line(owners[-1][0]).search(text, pos)
                next_pop = m.start() if m else end
            if next_open == end and next_pop == end:
                break
            if next_pop < next_open:  # a line at or left of the innermost owner's indentation ends it
                owners.pop()
                changes.append((next_pop, owners[-1][1] if owners else ""))
                pos = next_pop
                continue
            start, indent, name, named_at = opened[i]
            i += 1
            while owners and indent <= owners[-1][0]:  # a sibling or an outer definition opens
                owners.pop()
            changes.append((start, owners[-1][1] if owners else ""))  # its own line is its owner's
            owners.append((indent, name))
            # Its body begins after the line naming it: an annotation's line above (`@Service`,
            # `@OptIn(...)`) starts the match, and the header's own line closed the owner at once.
            line_end = text.find("\n", named_at)
            pos = end - 1 if line_end < 0 else line_end + 1
            changes.append((pos, name))
        out.append(changes if any(name for _, name in changes) else None)
    return out


_CLOSING: dict[int, re.Pattern] = {}


def _closing_line(indent: int) -> re.Pattern:
    """A non-blank line indented `indent` or less that does not continue a definition's header
    (`)`, `]`, `>`, an Allman `{`) and is no preprocessor line or label."""
    pattern = _CLOSING.get(indent)
    if pattern is None:
        # Not a preprocessor line (`#if DEBUG`, `#endif`) nor a label (`retry:`), which stand at
        # column 0 inside any definition.
        pattern = _CLOSING[indent] = re.compile(
            rf"^[ \t]{{0,{indent}}}(?=[^ \t\r\n)\]>{{#])(?![A-Za-z_]\w*:[ \t]*\r?$)", re.MULTILINE)
    return pattern


def member_definitions(texts: list[str], language: str = "") -> list[set[str]]:
    """Each chunk's `owner.name` pairs (what chunk_terms indexes as members)."""
    return [definitions_and_members(text, language, owners)[1]
            for text, owners in zip(texts, member_owners(texts, language))]

