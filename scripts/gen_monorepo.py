#!/usr/bin/env python3
"""Generate a synthetic monorepo for scale benchmarks: deterministic, standard library only.

    python scripts/gen_monorepo.py --files 50000 --out /work/scale-data/mono-50k [--seed 1] [--jobs 2]

The tree looks like a company monorepo: services/, libs/, apps/, tools/, infra/ and docs/ hold
projects, each in one main language (Python, TypeScript, JavaScript, Go, Java, Rust, C, C++) with
nested module directories, a README, a build file, some Markdown design notes and JSON/YAML config.
Identifiers are compounds (camelCase, snake_case, PascalCase) of a software vocabulary skewed like
real code (a few words everywhere, a long tail), plus coined project names, so the lexicon keeps
growing with the corpus as real ones do. File sizes follow a log-normal long tail (mean ~10 KB).

`.gitignore` files at the root and in some projects ignore generated and build output, and a few
percent of the files are written into those ignored places (plus node_modules/, which is pruned by
default), so discovery has real work to skip. `--files` counts every file written, ignored or not.

Same --seed and --files, same tree, byte for byte (file contents only depend on the seed and the
file's place in the plan; mtimes are whatever the clock says).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time

# -- vocabulary --------------------------------------------------------------------------------
# Ordered roughly by how often real code uses them: a skewed pick (see _pick) favours the front.
NOUNS = """
user id name data value config request response error result item list key type client server
service handler context file path node event message status token session state index count time
option cache query record entry table model field param header body field source target buffer
stream channel task job worker queue batch payload account order product customer invoice payment
transaction price address email password role permission group team project repo branch commit
build release version artifact package module plugin extension provider adapter registry factory
builder manager controller router route endpoint middleware filter validator serializer parser
formatter encoder decoder writer reader loader store repository schema migration column row cursor
connection pool lock mutex signal timer deadline timeout retry backoff limit quota rate metric
counter gauge histogram span trace log logger level label tag annotation selector namespace cluster
instance region zone host port socket address protocol certificate key secret credential policy
rule audit report dashboard widget component view page layout template theme style asset image
video upload download attachment document note comment thread post feed notification subscription
plan tier feature flag experiment variant cohort segment campaign coupon discount cart checkout
shipment inventory warehouse supplier vendor contract license tenant organization workspace folder
snapshot backup restore replica shard partition offset watermark checkpoint pipeline stage step
graph edge vertex tree leaf parent child sibling ancestor path prefix suffix pattern match range
window frame tick epoch interval duration date timestamp calendar schedule cron trigger hook
callback promise future result outcome reason cause detail summary digest hash checksum signature
nonce salt cipher vault envelope bundle manifest descriptor spec definition declaration statement
expression token lexer symbol scope frame stack heap pointer reference handle resource allocation
""".split()
VERBS = """
get set create update delete fetch load save parse validate render handle process build compute
resolve register init start stop run close open read write send receive emit dispatch publish
subscribe apply merge split find filter map reduce sort group collect format encode decode
serialize deserialize normalize sanitize transform convert check verify ensure assert refresh
sync flush reset clear drain enqueue dequeue schedule cancel retry acquire release lock unlock
wrap unwrap attach detach bind mount configure prepare execute invoke call notify log record
track measure report export import upload download migrate seed index search rank score lookup
""".split()
ADJECTIVES = """
default current active pending remote local async sync batch cached raw internal external public
private primary secondary new old next previous last first max min total partial empty valid
invalid stale fresh dirty shared global static dynamic lazy eager safe unsafe legacy temporary
persistent optional required custom base abstract concrete parent nested inline readonly mutable
""".split()
TYPE_SUFFIXES = """
Service Manager Handler Client Repository Config Builder Factory Error Request Response Store Cache
Queue Worker Controller Provider Adapter Resolver Validator Serializer Parser Registry Options State
Context Event Listener Middleware Policy Spec Result Info Record Model View Helper Util Loader Writer
""".split()
# Prose is mostly function words (the tokenizer drops most of them) around a few content words.
PROSE = """
the a to of and in is for that this it with as be on by not are or if we when from can should
will must may which an all any each only also then after before because so but into until while
once every either both same here there
""".split()
PROSE_CONTENT = """
returns value used uses called handles keeps stored cached given current caller empty missing
invalid valid configured option retries timeout seconds ordering note below above again case
behaviour expected unexpected otherwise whole part different whether already later earlier
instead without within across between during against toward upon unless although though since
rather beyond besides likely usually rarely always never sometimes often eventually immediately
safely quickly slowly exactly roughly partially fully lazily eagerly silently explicitly
implicitly correctly incorrectly concurrently sequentially atomically idempotent reentrant
blocking nonblocking deterministic monotonic eventual consistent durable transient recoverable
fatal retryable throttled degraded healthy unhealthy ready draining paused resumed expired
revoked granted denied accepted rejected queued running finished aborted skipped ignored
""".split()
SYLLABLES = "ka ze ri vo lu mar ten qui sol dra fen gor hal ix jun kel lor mio nar ost pax quo rav syl tor ul vex wyn yar zor".split()


def _pick(rng: random.Random, words: list[str]) -> str:
    # Squaring a uniform draw skews towards the front: a Zipf-like head and a long tail.
    return words[int(len(words) * rng.random() ** 2)]


def coined_word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3)))


class Namer:
    """Identifiers for one file. Most come from its project's symbol table (code reuses names far
    more than it coins them); the rest are fresh compounds of the project's domain words and the
    global vocabulary."""

    def __init__(self, rng: random.Random, domain: list[str], symbols: "Symbols | None" = None):
        self.rng = rng
        self.domain = domain
        self.symbols = symbols
        # A file is about a few things: most of its words come from a short list of its own.
        self.focus = [self._any_noun() for _ in range(rng.randint(6, 14))]

    def _any_noun(self) -> str:
        rng = self.rng
        return _pick(rng, self.domain) if rng.random() < 0.6 else _pick(rng, NOUNS)

    def noun(self) -> str:
        rng = self.rng
        return rng.choice(self.focus) if rng.random() < 0.75 else self._any_noun()

    def func_parts(self) -> list[str]:
        rng = self.rng
        out = [_pick(rng, VERBS)]
        if rng.random() < 0.3:
            out.append(rng.choice(ADJECTIVES))
        out.append(self.noun())
        if rng.random() < 0.4:
            out.append(self.noun())
        return out

    def type_parts(self) -> list[str]:
        rng = self.rng
        parts = []
        if rng.random() < 0.3:
            parts.append(rng.choice(ADJECTIVES))
        parts.append(self.noun())
        if rng.random() < 0.35:
            parts.append(self.noun())
        parts.append(rng.choice(TYPE_SUFFIXES).lower())
        return parts

    def var_parts(self) -> list[str]:
        rng = self.rng
        parts = [self.noun()]
        r = rng.random()
        if r < 0.2:
            parts.insert(0, rng.choice(ADJECTIVES))
        elif r < 0.4:
            parts.append(self.noun())
        return parts

    def _known(self, pool: str):
        if self.symbols is not None and self.rng.random() < KNOWN_NAME_ODDS:
            return _pick(self.rng, getattr(self.symbols, pool))
        return None

    def func(self, style: str) -> str:
        return _style(self._known("funcs") or self.func_parts(), style)

    def type(self) -> str:
        return _style(self._known("types") or self.type_parts(), "pascal")

    def var(self, style: str) -> str:
        rng = self.rng
        if rng.random() < 0.15:
            return rng.choice(("i", "n", "ctx", "err", "buf", "res", "idx", "tmp", "ok", "it"))
        return _style(self._known("vars") or self.var_parts(), style)

    def const(self) -> str:
        return _style([self.rng.choice(ADJECTIVES), self.noun(), self.noun()], "upper")

    def _prose_word(self, nouns: float) -> str:
        rng = self.rng
        r = rng.random()
        if r < nouns:
            return self.noun()
        return rng.choice(PROSE_CONTENT) if r < nouns + 0.15 else _pick(rng, PROSE)

    def sentence(self, lo: int = 6, hi: int = 16) -> str:
        words = [self._prose_word(0.3) for _ in range(self.rng.randint(lo, hi))]
        return words[0].capitalize() + " " + " ".join(words[1:]) + "."

    def message(self) -> str:
        return " ".join(self._prose_word(0.4) for _ in range(self.rng.randint(3, 8)))


# Share of names drawn from the project's symbol table rather than coined on the spot.
KNOWN_NAME_ODDS = 0.94


class Symbols:
    """A project's own names (as word lists, styled where used), more of them in bigger projects."""

    def __init__(self, seed: int, project: str, domain: tuple, size: int):
        maker = Namer(random.Random(f"{seed}:symbols:{project}"), list(domain))
        self.funcs = [maker.func_parts() for _ in range(40 + 2 * size)]
        self.types = [maker.type_parts() for _ in range(20 + size)]
        self.vars = [maker.var_parts() for _ in range(40 + size)]


_SYMBOLS: dict[tuple, Symbols] = {}


def project_symbols(seed: int, project: tuple) -> Symbols:
    key = (seed, project[0])
    found = _SYMBOLS.get(key)
    if found is None:
        if len(_SYMBOLS) > 64:
            _SYMBOLS.clear()
        found = _SYMBOLS[key] = Symbols(seed, *project)
    return found


def _style(parts: list[str], style: str) -> str:
    if style == "snake":
        return "_".join(parts)
    if style == "upper":
        return "_".join(parts).upper()
    if style == "camel":
        return parts[0] + "".join(p.capitalize() for p in parts[1:])
    return "".join(p.capitalize() for p in parts)


# -- per-language writers ----------------------------------------------------------------------
# Each writer returns a list of lines. A file is a header plus definitions until it reaches its
# target size; the bodies are drawn from a few statement shapes per language.


def _wrap(text: str, width: int, prefix: str) -> list[str]:
    lines, cur = [], prefix
    for word in text.split():
        if len(cur) + len(word) + 1 > width and cur != prefix:
            lines.append(cur.rstrip())
            cur = prefix
        cur += word + " "
    if cur.strip() != prefix.strip():
        lines.append(cur.rstrip())
    return lines


class PythonWriter:
    ext = ".py"

    def header(self, nm: Namer) -> list[str]:
        rng = nm.rng
        out = ['"""' + nm.sentence() + '"""', "from __future__ import annotations", ""]
        for mod in ["dataclasses", "logging"] + rng.sample(("os", "json", "time", "re", "typing", "asyncio",
                                                            "collections", "functools", "pathlib"), rng.randint(1, 4)):
            out.append(f"import {mod}")
        for _ in range(rng.randint(0, 3)):
            out.append(f"from .{nm.noun()}_{nm.noun()} import {nm.type()}, {nm.func('snake')}")
        out += ["", "logger = logging.getLogger(__name__)", f"{nm.const()} = {rng.randint(1, 5000)}", "", ""]
        return out

    def body(self, nm: Namer, indent: str, n: int) -> list[str]:
        rng = nm.rng
        out = []
        for _ in range(n):
            r = rng.random()
            a, b = nm.var("snake"), nm.var("snake")
            if r < 0.25:
                out.append(f"{indent}{a} = {nm.func('snake')}({b}, {nm.var('snake')}={rng.randint(0, 100)})")
            elif r < 0.4:
                out += [f"{indent}if {a} is None or not {b}:",
                        f"{indent}    raise ValueError(f\"{nm.message()}: {{{a}!r}}\")"]
            elif r < 0.55:
                out += [f"{indent}for {a} in {b}.{nm.func('snake')}():",
                        f"{indent}    {nm.var('snake')}.append({a}.{nm.var('snake')})"]
            elif r < 0.65:
                out.append(f"{indent}# {nm.sentence(4, 12)}")
            elif r < 0.75:
                out.append(f"{indent}logger.{rng.choice(('debug', 'info', 'warning'))}(\"{nm.message()} %s\", {a})")
            elif r < 0.85:
                out += [f"{indent}try:", f"{indent}    {a} = {b}[\"{nm.var('snake')}\"]",
                        f"{indent}except KeyError:", f"{indent}    {a} = {nm.const()}"]
            else:
                out.append(f"{indent}{a} = {{\"{nm.var('snake')}\": {b}, \"{nm.var('snake')}\": {rng.random():.3f}}}")
        out.append(f"{indent}return {nm.var('snake')}")
        return out

    def unit(self, nm: Namer) -> list[str]:
        rng = nm.rng
        if rng.random() < 0.45:
            name = nm.type()
            out = []
            if rng.random() < 0.3:
                out.append("@dataclasses.dataclass")
            out += [f"class {name}({rng.choice(('object', nm.type(), 'Exception', 'typing.NamedTuple'))}):",
                    f'    """{nm.sentence()}', "", *_wrap(nm.sentence(10, 30), 96, "    "), '    """', ""]
            for _ in range(rng.randint(1, 3)):
                out.append(f"    {nm.var('snake')}: {rng.choice(('int', 'str', 'float', 'bool', nm.type()))} = None")
            out.append("")
            for _ in range(rng.randint(2, 6)):
                params = ", ".join(nm.var("snake") for _ in range(rng.randint(0, 3)))
                out.append(f"    def {nm.func('snake')}(self{', ' + params if params else ''}):")
                out.append(f'        """{nm.sentence()}"""')
                out += self.body(nm, "        ", rng.randint(2, 10))
                out.append("")
            return out + [""]
        params = ", ".join(f"{nm.var('snake')}: {rng.choice(('int', 'str', 'dict', nm.type()))}" for _ in range(rng.randint(0, 4)))
        prefix = "async def" if rng.random() < 0.2 else "def"
        return [f"{prefix} {nm.func('snake')}({params}) -> {rng.choice(('None', 'int', 'str', 'bool', nm.type()))}:",
                f'    """{nm.sentence()}"""', *self.body(nm, "    ", rng.randint(3, 14)), "", ""]


class CLikeWriter:
    """Shared by the brace languages: they differ in declarations, not in statement shapes."""

    def stmt(self, nm: Namer, indent: str) -> list[str]:
        rng = nm.rng
        r = rng.random()
        a, b = nm.var("camel"), nm.var("camel")
        if r < 0.3:
            return [f"{indent}{self.decl(nm, a)} = {b}.{nm.func('camel')}({nm.var('camel')}, {rng.randint(0, 64)});"]
        if r < 0.45:
            return [f"{indent}if ({a} == {self.null} || {b}.{nm.func('camel')}()) {{",
                    f"{indent}    {self.throw(nm)}", f"{indent}}}"]
        if r < 0.6:
            return [f"{indent}for ({self.loop(nm, a, b)}) {{",
                    f"{indent}    {nm.var('camel')}.{nm.func('camel')}({a});", f"{indent}}}"]
        if r < 0.72:
            return [f"{indent}// {nm.sentence(4, 12)}"]
        if r < 0.85:
            return [f"{indent}{self.log(nm, a)}"]
        return [f"{indent}{a}.{nm.var('camel')} = {b}.{nm.func('camel')}(\"{nm.message()}\");"]

    def body(self, nm: Namer, indent: str, n: int) -> list[str]:
        out = []
        for _ in range(n):
            out += self.stmt(nm, indent)
        out.append(f"{indent}return {nm.var('camel')};")
        return out

    def doc(self, nm: Namer, indent: str) -> list[str]:
        return [f"{indent}/**", *_wrap(nm.sentence(8, 24), 96, f"{indent} * "), f"{indent} */"]


class TypeScriptWriter(CLikeWriter):
    ext = ".ts"
    null = "undefined"

    def decl(self, nm, name):
        return f"const {name}"

    def throw(self, nm):
        return f"throw new {nm.type()}(`{nm.message()}`);"

    def loop(self, nm, a, b):
        return f"const {a} of {b}"

    def log(self, nm, a):
        return f"logger.{nm.rng.choice(('debug', 'info', 'warn'))}(`{nm.message()} ${{{a}}}`);"

    def header(self, nm: Namer) -> list[str]:
        rng = nm.rng
        out = [f"import {{ {nm.type()}, {nm.type()} }} from './{nm.noun()}-{nm.noun()}';" for _ in range(rng.randint(2, 6))]
        out += ["import { logger } from '../logger';", "", f"export const {nm.const()} = {rng.randint(1, 9000)};", ""]
        return out

    def unit(self, nm: Namer) -> list[str]:
        rng = nm.rng
        r = rng.random()
        if r < 0.2:
            out = self.doc(nm, "") + [f"export interface {nm.type()} {{"]
            for _ in range(rng.randint(2, 9)):
                out.append(f"  {nm.var('camel')}{'?' if rng.random() < 0.3 else ''}: "
                           f"{rng.choice(('string', 'number', 'boolean', nm.type(), nm.type() + '[]'))};")
            return out + ["}", ""]
        if r < 0.6:
            out = self.doc(nm, "") + [f"export class {nm.type()}{' extends ' + nm.type() if rng.random() < 0.3 else ''} {{"]
            for _ in range(rng.randint(1, 3)):
                out.append(f"  private {nm.var('camel')}: {nm.type()} | undefined;")
            for _ in range(rng.randint(2, 5)):
                params = ", ".join(f"{nm.var('camel')}: {nm.type()}" for _ in range(rng.randint(0, 3)))
                out += self.doc(nm, "  ")
                out.append(f"  {'async ' if rng.random() < 0.25 else ''}{nm.func('camel')}({params}): {nm.type()} {{")
                out += self.body(nm, "    ", rng.randint(2, 9)) + ["  }", ""]
            return out + ["}", ""]
        params = ", ".join(f"{nm.var('camel')}: {nm.type()}" for _ in range(rng.randint(0, 3)))
        return self.doc(nm, "") + [f"export function {nm.func('camel')}({params}): {nm.type()} {{",
                                   *self.body(nm, "  ", rng.randint(3, 12)), "}", ""]


class JavaScriptWriter(TypeScriptWriter):
    ext = ".js"

    def header(self, nm: Namer) -> list[str]:
        rng = nm.rng
        out = ["'use strict';", ""]
        out += [f"const {{ {nm.func('camel')} }} = require('./{nm.noun()}_{nm.noun()}');" for _ in range(rng.randint(1, 5))]
        return out + ["const logger = require('../logger');", "", f"const {nm.const()} = {rng.randint(1, 9000)};", ""]

    def unit(self, nm: Namer) -> list[str]:
        rng = nm.rng
        if rng.random() < 0.4:
            out = self.doc(nm, "") + [f"class {nm.type()} {{"]
            for _ in range(rng.randint(2, 5)):
                params = ", ".join(nm.var("camel") for _ in range(rng.randint(0, 3)))
                out += [f"  {nm.func('camel')}({params}) {{", *self.body(nm, "    ", rng.randint(2, 9)), "  }", ""]
            return out + ["}", f"module.exports.{nm.type()} = {nm.type()};", ""]
        params = ", ".join(nm.var("camel") for _ in range(rng.randint(0, 3)))
        return self.doc(nm, "") + [f"function {nm.func('camel')}({params}) {{",
                                   *self.body(nm, "  ", rng.randint(3, 12)), "}", ""]


class GoWriter(CLikeWriter):
    ext = ".go"
    null = "nil"

    def decl(self, nm, name):
        return f"{name} :="

    def stmt(self, nm: Namer, indent: str) -> list[str]:
        rng = nm.rng
        r = rng.random()
        a, b = nm.var("camel"), nm.var("camel")
        if r < 0.3:
            return [f"{indent}{a}, err := {b}.{nm.func('pascal')}(ctx, {nm.var('camel')})",
                    f"{indent}if err != nil {{",
                    f"{indent}\treturn nil, fmt.Errorf(\"{nm.message()}: %w\", err)", f"{indent}}}"]
        if r < 0.45:
            return [f"{indent}for _, {a} := range {b}.{nm.func('pascal')}() {{",
                    f"{indent}\t{nm.var('camel')} = append({nm.var('camel')}, {a})", f"{indent}}}"]
        if r < 0.6:
            return [f"{indent}// {nm.sentence(4, 12)}"]
        if r < 0.75:
            return [f"{indent}log.Printf(\"{nm.message()}: %v\", {a})"]
        return [f"{indent}{a}.{nm.func('pascal')}({b}, {rng.randint(0, 128)})"]

    def body(self, nm: Namer, indent: str, n: int) -> list[str]:
        out = []
        for _ in range(n):
            out += self.stmt(nm, indent)
        return out + [f"{indent}return {nm.var('camel')}, nil"]

    def header(self, nm: Namer) -> list[str]:
        rng = nm.rng
        imports = rng.sample(('"context"', '"fmt"', '"log"', '"net/http"', '"sync"', '"time"', '"errors"',
                              '"encoding/json"', '"strings"'), rng.randint(3, 6))
        pkg, text = nm.noun(), nm.sentence(6, 14)
        return [f"// Package {pkg} {text[0].lower()}{text[1:]}",
                f"package {pkg}", "", "import (", *(f"\t{i}" for i in sorted(imports)), ")", ""]

    def unit(self, nm: Namer) -> list[str]:
        rng = nm.rng
        if rng.random() < 0.35:
            name = nm.type()
            out = [f"// {name} {nm.sentence()[0].lower()}{nm.sentence()[1:]}", f"type {name} struct {{"]
            for _ in range(rng.randint(2, 8)):
                out.append(f"\t{nm.var('pascal')} {rng.choice(('string', 'int64', 'bool', 'time.Duration', '*' + nm.type()))}"
                           f" `json:\"{nm.var('snake')}\"`")
            return out + ["}", ""]
        name = nm.func("pascal")
        recv = f"({nm.rng.choice('schm')} *{nm.type()}) " if rng.random() < 0.6 else ""
        params = ", ".join(f"{nm.var('camel')} {nm.type()}" for _ in range(rng.randint(0, 3)))
        return [f"// {name} {nm.sentence()[0].lower()}{nm.sentence()[1:]}",
                f"func {recv}{name}(ctx context.Context{', ' + params if params else ''}) (*{nm.type()}, error) {{",
                *self.body(nm, "\t", rng.randint(2, 10)), "}", ""]


class JavaWriter(CLikeWriter):
    ext = ".java"
    null = "null"

    def decl(self, nm, name):
        return f"final {nm.type()} {name}"

    def throw(self, nm):
        return f"throw new IllegalStateException(\"{nm.message()}\");"

    def loop(self, nm, a, b):
        return f"{nm.type()} {a} : {b}"

    def log(self, nm, a):
        return f"LOG.{nm.rng.choice(('debug', 'info', 'warn'))}(\"{nm.message()} {{}}\", {a});"

    def header(self, nm: Namer) -> list[str]:
        rng = nm.rng
        pkg = f"com.example.{nm.noun()}.{nm.noun()}"
        out = [f"package {pkg};", ""]
        out += [f"import com.example.{nm.noun()}.{nm.type()};" for _ in range(rng.randint(2, 7))]
        return out + ["import java.util.List;", "import java.util.Map;", ""]

    def unit(self, nm: Namer) -> list[str]:
        rng = nm.rng
        name = nm.type()
        out = self.doc(nm, "") + [f"public class {name}{' implements ' + nm.type() if rng.random() < 0.4 else ''} {{",
                                  f"    private static final Logger LOG = LoggerFactory.getLogger({name}.class);", ""]
        for _ in range(rng.randint(1, 4)):
            out.append(f"    private final {nm.type()} {nm.var('camel')};")
        out.append("")
        for _ in range(rng.randint(2, 7)):
            params = ", ".join(f"{nm.type()} {nm.var('camel')}" for _ in range(rng.randint(0, 3)))
            out += self.doc(nm, "    ")
            if rng.random() < 0.3:
                out.append("    @Override")
            out.append(f"    public {nm.type()} {nm.func('camel')}({params}) {{")
            out += self.body(nm, "        ", rng.randint(2, 9)) + ["    }", ""]
        return out + ["}", ""]


class RustWriter(CLikeWriter):
    ext = ".rs"
    null = "None"

    def stmt(self, nm: Namer, indent: str) -> list[str]:
        rng = nm.rng
        r = rng.random()
        a, b = nm.var("snake"), nm.var("snake")
        if r < 0.3:
            return [f"{indent}let {a} = {b}.{nm.func('snake')}(&{nm.var('snake')})?;"]
        if r < 0.45:
            return [f"{indent}for {a} in {b}.iter() {{", f"{indent}    {nm.var('snake')}.push({a}.clone());", f"{indent}}}"]
        if r < 0.6:
            return [f"{indent}// {nm.sentence(4, 12)}"]
        if r < 0.72:
            return [f"{indent}tracing::{rng.choice(('debug', 'info', 'warn'))}!(\"{nm.message()}: {{:?}}\", {a});"]
        return [f"{indent}if {a}.is_none() {{",
                f"{indent}    return Err({nm.type()}::{nm.type()}(\"{nm.message()}\".into()));", f"{indent}}}"]

    def body(self, nm, indent, n):
        out = []
        for _ in range(n):
            out += self.stmt(nm, indent)
        return out + [f"{indent}Ok({nm.var('snake')})"]

    def header(self, nm: Namer) -> list[str]:
        rng = nm.rng
        out = [f"//! {nm.sentence()}", ""]
        out += [f"use crate::{nm.noun()}::{{{nm.type()}, {nm.type()}}};" for _ in range(rng.randint(1, 4))]
        return out + ["use std::collections::HashMap;", ""]

    def unit(self, nm: Namer) -> list[str]:
        rng = nm.rng
        name = nm.type()
        if rng.random() < 0.4:
            out = [f"/// {nm.sentence()}", "#[derive(Debug, Clone)]", f"pub struct {name} {{"]
            for _ in range(rng.randint(2, 7)):
                out.append(f"    pub {nm.var('snake')}: {rng.choice(('String', 'u64', 'bool', 'Vec<' + nm.type() + '>', 'Option<' + nm.type() + '>'))},")
            return out + ["}", ""]
        out = [f"impl {name} {{"]
        for _ in range(rng.randint(1, 5)):
            params = ", ".join(f"{nm.var('snake')}: &{nm.type()}" for _ in range(rng.randint(0, 3)))
            out += [f"    /// {nm.sentence()}",
                    f"    pub fn {nm.func('snake')}(&self{', ' + params if params else ''}) -> Result<{nm.type()}, {nm.type()}> {{",
                    *self.body(nm, "        ", rng.randint(2, 9)), "    }", ""]
        return out + ["}", ""]


class CWriter(CLikeWriter):
    ext = ".c"
    null = "NULL"

    def decl(self, nm, name):
        return f"{nm.rng.choice(('int', 'size_t', 'const char *', 'struct ' + nm.var('snake') + ' *'))} {name}"

    def stmt(self, nm: Namer, indent: str) -> list[str]:
        rng = nm.rng
        r = rng.random()
        a, b = nm.var("snake"), nm.var("snake")
        if r < 0.3:
            return [f"{indent}{self.decl(nm, a)} = {nm.func('snake')}({b}, {rng.randint(0, 255)});"]
        if r < 0.45:
            return [f"{indent}if ({a} == NULL) {{", f"{indent}    return -{rng.choice(('EINVAL', 'ENOMEM', 'EIO'))};", f"{indent}}}"]
        if r < 0.6:
            return [f"{indent}for (size_t i = 0; i < {b}->{nm.var('snake')}; i++) {{",
                    f"{indent}    {a}[i] = {nm.func('snake')}({b}, i);", f"{indent}}}"]
        if r < 0.75:
            return [f"{indent}/* {nm.sentence(4, 12)} */"]
        return [f"{indent}{a}->{nm.var('snake')} = {b};"]

    def body(self, nm, indent, n):
        out = []
        for _ in range(n):
            out += self.stmt(nm, indent)
        return out + [f"{indent}return 0;"]

    def header(self, nm: Namer) -> list[str]:
        rng = nm.rng
        out = ["/*", *_wrap(nm.sentence(10, 30), 90, " * "), " */", ""]
        out += [f"#include <{h}>" for h in rng.sample(("stdio.h", "stdlib.h", "string.h", "stdint.h", "errno.h", "pthread.h"), 3)]
        out += [f"#include \"{nm.noun()}_{nm.noun()}.h\"" for _ in range(rng.randint(1, 4))]
        return out + ["", f"#define {nm.const()} {rng.randint(1, 4096)}", ""]

    def unit(self, nm: Namer) -> list[str]:
        rng = nm.rng
        if rng.random() < 0.25:
            out = self.doc(nm, "") + [f"struct {nm.var('snake')} {{"]
            for _ in range(rng.randint(2, 8)):
                out.append(f"    {rng.choice(('int', 'uint32_t', 'char *', 'size_t', 'void *'))} {nm.var('snake')};")
            return out + ["};", ""]
        params = ", ".join(f"{rng.choice(('int', 'const char *', 'size_t'))} {nm.var('snake')}" for _ in range(rng.randint(1, 4)))
        return self.doc(nm, "") + [f"{rng.choice(('static ', ''))}int {nm.func('snake')}({params})", "{",
                                   *self.body(nm, "    ", rng.randint(3, 12)), "}", ""]


class CppWriter(CWriter):
    ext = ".cpp"

    def header(self, nm: Namer) -> list[str]:
        rng = nm.rng
        out = [f"// {nm.sentence()}", ""]
        out += [f"#include <{h}>" for h in rng.sample(("memory", "string", "vector", "map", "mutex", "optional"), 3)]
        out += [f"#include \"{nm.noun()}/{nm.noun()}_{nm.noun()}.h\"" for _ in range(rng.randint(1, 4))]
        return out + ["", f"namespace {nm.noun()} {{", ""]

    def unit(self, nm: Namer) -> list[str]:
        rng = nm.rng
        name = nm.type()
        if rng.random() < 0.4:
            out = self.doc(nm, "") + [f"class {name} : public {nm.type()} {{", " public:"]
            for _ in range(rng.randint(2, 6)):
                out.append(f"  {nm.type()} {nm.func('pascal')}(const {nm.type()}& {nm.var('snake')}) const;")
            out.append(" private:")
            for _ in range(rng.randint(1, 4)):
                out.append(f"  std::unique_ptr<{nm.type()}> {nm.var('snake')}_;")
            return out + ["};", ""]
        return self.doc(nm, "") + [f"{nm.type()} {name}::{nm.func('pascal')}(const {nm.type()}& {nm.var('snake')}) {{",
                                   *self.body(nm, "  ", rng.randint(3, 12)), "}", ""]


class MarkdownWriter:
    ext = ".md"

    def header(self, nm: Namer) -> list[str]:
        return [f"# {nm.type()}", "", *_wrap(" ".join(nm.sentence() for _ in range(3)), 100, ""), ""]

    def unit(self, nm: Namer) -> list[str]:
        rng = nm.rng
        out = [f"## {nm.sentence(2, 5)[:-1]}", ""]
        for _ in range(rng.randint(1, 3)):
            out += _wrap(" ".join(nm.sentence() for _ in range(rng.randint(2, 6))), 100, "") + [""]
        r = rng.random()
        if r < 0.3:
            out += ["```", f"{nm.func('snake')} --{nm.var('snake')}={rng.randint(1, 99)} {nm.noun()}/", "```", ""]
        elif r < 0.55:
            out += [f"- `{nm.func('camel')}`: {nm.sentence(4, 10)}" for _ in range(rng.randint(2, 6))] + [""]
        return out


class JsonWriter:
    ext = ".json"

    def record(self, nm: Namer) -> dict:
        rng = nm.rng
        return {nm.var("camel"): rng.choice((rng.randint(0, 10**6), nm.message(), rng.random() < 0.5, nm.type()))
                for _ in range(rng.randint(3, 8))}

    def render(self, nm: Namer, target: int) -> str:
        rng = nm.rng
        data = {"name": f"@{nm.noun()}/{nm.noun()}-{nm.noun()}", "version": f"{rng.randint(0, 9)}.{rng.randint(0, 40)}.0",
                "description": nm.sentence(), "settings": self.record(nm), "items": []}
        size = 200
        while size < target:
            rec = self.record(nm)
            data["items"].append(rec)
            size += 40 + sum(len(str(k)) + len(str(v)) + 6 for k, v in rec.items())
        return json.dumps(data, indent=2) + "\n"


class YamlWriter:
    ext = ".yaml"

    def header(self, nm: Namer) -> list[str]:
        return [f"# {nm.sentence()}", "apiVersion: apps/v1", "kind: Deployment", "metadata:",
                f"  name: {nm.noun()}-{nm.noun()}", f"  namespace: {nm.noun()}", "spec:"]

    def unit(self, nm: Namer) -> list[str]:
        rng = nm.rng
        out = [f"  {nm.var('snake')}:", f"    # {nm.sentence(4, 10)}"]
        for _ in range(rng.randint(2, 8)):
            out.append(f"    {nm.var('snake')}: {rng.choice((str(rng.randint(0, 9999)), 'true', 'false', nm.noun() + '-' + nm.noun()))}")
        return out


WRITERS = {
    "python": PythonWriter(), "typescript": TypeScriptWriter(), "javascript": JavaScriptWriter(), "go": GoWriter(),
    "java": JavaWriter(), "rust": RustWriter(), "c": CWriter(), "cpp": CppWriter(), "markdown": MarkdownWriter(),
    "json": JsonWriter(), "yaml": YamlWriter(),
}
# Main language of a project, weighted like a polyglot company monorepo.
PROJECT_LANGUAGES = [("python", 24), ("typescript", 22), ("go", 16), ("java", 12), ("javascript", 8),
                     ("rust", 7), ("cpp", 6), ("c", 5)]
AREAS = ["services", "libs", "apps", "tools", "platform", "infra"]
SRC_DIR = {"python": "", "typescript": "src", "javascript": "lib", "go": "internal", "java": "src/main/java/com/example",
           "rust": "src", "cpp": "src", "c": "src"}
BUILD_FILE = {"python": ("pyproject.toml", "toml"), "typescript": ("package.json", "json"),
              "javascript": ("package.json", "json"), "go": ("go.mod", "go"), "java": ("pom.xml", "xml"),
              "rust": ("Cargo.toml", "toml"), "cpp": ("CMakeLists.txt", "cmake"), "c": ("Makefile", "make")}
# Where ignored output lands, and the .gitignore line that ignores it. None of these names is in
# the tool's built-in pruned set, so only the ignore files keep them out.
IGNORED_OUTPUT = [("generated", "generated/"), (".artifacts", ".artifacts/"), ("gen-out", "gen-out/"),
                  ("snapshots", "/snapshots/")]

# -- the plan: which file goes where -----------------------------------------------------------


def _lognormal_size(rng: random.Random, median: float, sigma: float, cap: int) -> int:
    return max(120, min(cap, int(rng.lognormvariate(math.log(median), sigma))))


def make_plan(n_files: int, seed: int) -> list[tuple]:
    """[(relpath, writer name or "raw", target bytes, (project, domain words, size), raw text)], n_files long."""
    rng = random.Random(f"plan:{seed}")
    plan: list[tuple] = []
    root_ignore = "# build output and local state\n*.log\n*.tmp\n.artifacts/\ngenerated/\n/tmp/\n"
    plan.append((".gitignore", "raw", 0, None, root_ignore))
    plan.append(("README.md", "markdown", 6000, ("", tuple(NOUNS[:40]), 10), None))
    used_names: set[str] = set()
    n_projects = 0
    while len(plan) < n_files:
        remaining = n_files - len(plan)
        lang = rng.choices([l for l, _ in PROJECT_LANGUAGES], [w for _, w in PROJECT_LANGUAGES])[0]
        # Project sizes have a long tail too: many small libraries, a few giant services.
        size = min(remaining, max(8, n_files // 10), max(8, int(rng.lognormvariate(math.log(60), 1.1))))
        coined = [coined_word(rng) for _ in range(rng.randint(2, 6))]
        domain = tuple(coined + rng.sample(NOUNS, 24))
        name = f"{coined[0]}-{rng.choice(NOUNS)}"
        while name in used_names:
            name = f"{name}-{rng.randint(2, 99)}"
        used_names.add(name)
        project = (name, domain, size)
        area = AREAS[n_projects % len(AREAS)] if n_projects < len(AREAS) else rng.choice(AREAS)
        n_projects += 1
        base = f"{area}/{name}"
        plan.append((f"{base}/README.md", "markdown", _lognormal_size(rng, 3000, 0.6, 40_000), project, None))
        build_name, _build_kind = BUILD_FILE[lang]
        plan.append((f"{base}/{build_name}", "raw", 0, domain, _build_text(rng, lang, name)))
        ignored_dir = None
        if rng.random() < 0.35:
            ignored_dir, line = rng.choice(IGNORED_OUTPUT)
            plan.append((f"{base}/.gitignore", "raw", 0, domain, f"{line}\n*.generated.*\n"))
        # Module directories: nested 1-3 levels, named from the project's domain.
        modules = []
        for _ in range(max(1, size // 12)):
            depth = rng.choice((1, 1, 2, 2, 3))
            parts = [rng.choice(domain) for _ in range(depth)]
            modules.append("/".join(p for p in (SRC_DIR[lang], *parts) if p))
        if lang == "python":
            modules = [f"{name.replace('-', '_')}/{m}" for m in modules]
        writer = WRITERS[lang]
        produced = 3
        while produced < size and len(plan) < n_files:
            r = rng.random()
            if r < 0.05:
                path = f"{base}/docs/{rng.choice(domain)}-{rng.choice(NOUNS)}.md"
                plan.append((path, "markdown", _lognormal_size(rng, 4000, 0.8, 120_000), project, None))
            elif r < 0.08:
                kind = rng.choice(("json", "yaml"))
                path = f"{base}/config/{rng.choice(domain)}-{rng.choice(NOUNS)}.{kind}"
                plan.append((path, kind, _lognormal_size(rng, 2500, 1.2, 600_000), project, None))
            elif r < 0.11 and ignored_dir:
                path = f"{base}/{ignored_dir}/{rng.choice(domain)}_{rng.choice(NOUNS)}{writer.ext}"
                plan.append((path, lang, _lognormal_size(rng, 9000, 1.0, 300_000), project, None))
            elif r < 0.12 and lang in ("typescript", "javascript"):
                path = f"{base}/node_modules/{rng.choice(NOUNS)}/index.js"
                plan.append((path, "javascript", _lognormal_size(rng, 9000, 1.0, 300_000), project, None))
            else:
                module = rng.choice(modules)
                stem = "_".join((rng.choice(domain), rng.choice(NOUNS))) if lang in ("python", "rust", "c", "cpp", "go") \
                    else rng.choice(domain).capitalize() + rng.choice(TYPE_SUFFIXES)
                if rng.random() < 0.1:
                    stem = "test_" + stem if lang == "python" else stem + ("_test" if lang in ("go", "rust") else ".test")
                ext = writer.ext
                if lang in ("c", "cpp") and rng.random() < 0.3:
                    ext = ".h" if lang == "c" else ".hpp"
                # Median ~5.5 KB, sigma 1.1: mean ~10 KB with a long tail; a rare file passes the
                # tool's 1 MB cap (generated tables do).
                cap = 2_000_000 if rng.random() < 0.0005 else 400_000
                plan.append((f"{base}/{module}/{stem}{ext}", lang, _lognormal_size(rng, 5500, 1.1, cap), project, None))
            produced += 1
    # Same path drawn twice: keep the first, give the later ones a numbered name.
    seen: set[str] = set()
    out = []
    for i, entry in enumerate(plan[:n_files]):
        path = entry[0]
        if path in seen:
            stem, dot, ext = path.rpartition(".")
            path = f"{stem}_{i}.{ext}" if dot and "/" not in ext else f"{path}_{i}"
        seen.add(path)
        out.append((path, *entry[1:]))
    return out


def _build_text(rng: random.Random, lang: str, name: str) -> str:
    deps = [f"{rng.choice(NOUNS)}-{rng.choice(NOUNS)}" for _ in range(rng.randint(2, 8))]
    if lang in ("typescript", "javascript"):
        return json.dumps({"name": f"@mono/{name}", "version": "1.0.0", "main": "lib/index.js",
                           "scripts": {"build": "tsc -p .", "test": "jest"},
                           "dependencies": {d: f"^{rng.randint(0, 9)}.{rng.randint(0, 20)}.0" for d in deps}}, indent=2) + "\n"
    if lang == "python":
        return f'[project]\nname = "{name}"\nversion = "0.1.0"\ndependencies = [{", ".join(repr(d) for d in deps)}]\n'
    if lang == "go":
        return f"module example.com/mono/{name}\n\ngo 1.21\n\nrequire (\n" + "".join(f"\texample.com/{d} v0.{rng.randint(1, 9)}.0\n" for d in deps) + ")\n"
    if lang == "rust":
        return f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n' + "".join(f'{d} = "0.{rng.randint(1, 9)}"\n' for d in deps)
    if lang == "java":
        return "<project>\n  <artifactId>" + name + "</artifactId>\n  <dependencies>\n" + "".join(
            f"    <dependency><artifactId>{d}</artifactId></dependency>\n" for d in deps) + "  </dependencies>\n</project>\n"
    if lang == "cpp":
        return f"project({name.replace('-', '_')} CXX)\nadd_library({name.replace('-', '_')} " + " ".join(f"src/{d}.cpp" for d in deps) + ")\n"
    return f"CFLAGS += -O2 -Wall\nOBJS = {' '.join(d + '.o' for d in deps)}\n\nall: $(OBJS)\n\t$(CC) -o {name} $(OBJS)\n"


# -- writing -----------------------------------------------------------------------------------


def render(entry: tuple, seed: int) -> str:
    path, writer_name, target, project, raw = entry
    if raw is not None:
        return raw
    rng = random.Random(f"{seed}:{path}")
    nm = Namer(rng, list(project[1]), project_symbols(seed, project))
    writer = WRITERS[writer_name]
    if writer_name == "json":
        return writer.render(nm, target)
    lines = writer.header(nm)
    size = sum(len(line) + 1 for line in lines)
    while size < target:
        unit = writer.unit(nm)
        lines.extend(unit)
        size += sum(len(line) + 1 for line in unit)
    if writer_name in ("cpp",) and not path.endswith((".h", ".hpp")):
        lines.append("}  // namespace")
    return "\n".join(lines) + "\n"


def write_entries(args: tuple) -> tuple[int, int]:
    out, seed, entries = args
    made: set[str] = set()
    total = 0
    for entry in entries:
        full = os.path.join(out, entry[0])
        parent = os.path.dirname(full)
        if parent not in made:
            os.makedirs(parent, exist_ok=True)
            made.add(parent)
        data = render(entry, seed).encode("utf-8")
        with open(full, "wb") as fh:
            fh.write(data)
        total += len(data)
    return len(entries), total


def generate(out: str, n_files: int, seed: int, jobs: int = 1, progress=None) -> tuple[int, int]:
    """Write the tree; returns (files, bytes)."""
    plan = make_plan(n_files, seed)
    os.makedirs(out, exist_ok=True)
    batches = [(out, seed, plan[i:i + 500]) for i in range(0, len(plan), 500)]
    files = total = 0
    if jobs > 1:
        import multiprocessing

        with multiprocessing.Pool(jobs) as pool:
            for n, b in pool.imap_unordered(write_entries, batches):
                files, total = files + n, total + b
                if progress:
                    progress(files, total)
            # Let the workers finish on their own: leaving the block terminates them with SIGTERM,
            # which a worker forked from a process hosting a JVM ignores (the suite hung there).
            pool.close()
            pool.join()
    else:
        for batch in batches:
            n, b = write_entries(batch)
            files, total = files + n, total + b
            if progress:
                progress(files, total)
    return files, total


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, required=True, help="number of files to write (ignored ones included)")
    ap.add_argument("--out", required=True, help="directory to create (must be empty or absent)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1, help="writer processes (the output does not depend on it)")
    args = ap.parse_args(argv)
    if args.files < 1:
        ap.error("--files must be at least 1")
    if os.path.isdir(args.out) and os.listdir(args.out):
        ap.error(f"{args.out} is not empty")
    started = time.perf_counter()
    last = [0.0]

    def progress(files, total):
        if time.perf_counter() - last[0] > 5:
            last[0] = time.perf_counter()
            print(f"  {files}/{args.files} files, {total / 1e6:.0f} MB", file=sys.stderr, flush=True)

    files, total = generate(args.out, args.files, args.seed, args.jobs, progress)
    print(f"wrote {files} files, {total / 1e6:.1f} MB to {args.out} in {time.perf_counter() - started:.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
