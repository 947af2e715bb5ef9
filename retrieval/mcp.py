"""`retrieval mcp`: a Model Context Protocol server on stdio for coding agents (extra `mcp`).

Tools: `search` (the fields of `retrieval query --json`) and `status` (those of `status --json`),
plus `notes`, the command's stderr notes, when it wrote any.
Each call runs the CLI's own command in this process (server/runner.py), so its answer is the one
the command line gives; the indexes stay open and the tree is watched as `retrieval serve` does.
"""
# No `from __future__ import annotations`: the SDK reads the tool signatures' annotations, which
# are imported inside build() (the extra is loaded only when the command runs).
import inspect
import io
import json
import logging
import os
import re
import sys
import threading

# Given to the SDK as is: it publishes a docstring with its indentation (before Python 3.13).
SEARCH_DESCRIPTION = (
    "Search the repository for a natural-language question, a symbol (`Router.add_route`), or a pasted "
    "error or bug report; read the returned line ranges next. "
    "Ranked code and docs spans for a query: {query, query_truncated?, retriever, results: [{rank, path, "
    "start_line, end_line, score, docid, context, confidence, language, kind, symbol; with expand, snippet_lines or "
    "max_tokens "
    "also snippet, snippet_start, snippet_end, truncated?, stale?; with pattern also match_lines; with retriever all "
    "also provenance, agreement, ranks}], notes?: [why there are no hits, ...]}."
)
INSTRUCTIONS = (
    "Search this repository's code and docs. `search` takes a natural-language question or a symbol and "
    "returns ranked spans (path, start_line, end_line, confidence); read those lines next. Use `path`, "
    "`lang` and `kind` to narrow, `pattern` to keep hits with a line matching a regular expression, `expand` "
    "or `max_tokens` to get the text itself, `files` for one hit per file."
)


MAX_ECHO_TOKENS = 100  # of the query, echoed in an answer (its head and an ellipsis past that)


class ToolFailure(RuntimeError):
    pass


class Searcher:
    """Runs `query`/`status` for one root, one call at a time in this process (they swap
    process-wide streams); a call that cannot start here within BUSY_WAIT seconds, behind a slow one
    (a first embedding build), runs in a process of its own, as `retrieval serve`'s clients do."""

    BUSY_WAIT = 3.0

    def __init__(self, root: str, refusal: str | None = None, root_reason: str = ""):
        self.root = os.path.abspath(root)
        self.root_reason = root_reason  # how the server found its root (status said `given`: it passes it on)
        self.refusal = refusal  # why this root is not searched: every call's answer
        self._lock = threading.Lock()
        self._warm = None
        # For a child: read now, as a command run here swaps variables for its own call and back.
        self._environment = dict(os.environ)

    def _run(self, argv: list[str], stdin: bytes = b"", on_tick=None, apart: bool = False,
             budget: int | None = None) -> dict:
        """The command's JSON; `on_tick`: told each progress count of a command run in this process;
        `apart`: run in a process of its own; `budget`: the max_tokens the answer was fitted to."""
        from .discover import root_problem

        if self.refusal:
            raise ToolFailure(self.refusal)
        problem = root_problem(self.root)  # removed since? (a fresh clone will be watched anew)
        if problem:
            raise ToolFailure(problem)
        if not apart and self._lock.acquire(timeout=self.BUSY_WAIT):
            try:
                code, out, err = self._run_here(argv, stdin, on_tick)
            finally:
                self._lock.release()
        else:
            # A lexical search or a status call waited minutes behind another call's build.
            code, out, err = _run_apart(argv, self.root, stdin, self._environment)
        lines = [_tool_words(line) for line in err.decode("utf-8", "replace").splitlines() if line.strip()]
        if code != 0:
            message = lines[-1] if lines else f"exit status {code}"  # usage errors end with the reason
            raise ToolFailure(message.removeprefix("error: ").removeprefix("Error: "))
        payload = json.loads(out)
        # What the command line says on stderr (no hits and why, filters matching nothing, an answer
        # from the previous snapshot, an index found damaged and rebuilt, a wait for another
        # writer) reaches an agent only inside the result. Off a terminal, stderr has no progress.
        notes = [line.removeprefix("note: ") for line in lines]
        if notes and budget is not None:
            # Those the command left out of its JSON for the budget ("29 more hits did not fit")
            # put the answer over it: kept while it fits, as the command keeps its own.
            from .output import printed_tokens

            fitted = {_tool_words(note) for note in payload.get("notes", ())}
            extra = [n for n, note in enumerate(notes) if note not in fitted]
            while extra and printed_tokens(json.dumps(dict(payload, notes=notes), ensure_ascii=False)) > budget:
                del notes[extra.pop()]
        if notes:
            payload["notes"] = notes
        return payload

    def _run_here(self, argv: list[str], stdin: bytes, on_tick=None):
        from .server.runner import run_cli
        from .server.warm import Warm

        if self._warm is None:
            self._warm = Warm(self.root)  # watches from the first call on
        # The MCP SDK gives the root logger a handler at INFO: libraries' INFO records (loading
        # the embedding model) reached stderr, so the notes, which the command line never shows.
        logging.disable(logging.INFO)
        try:
            from .server.warm import command_retrievers

            from contextlib import nullcontext

            from .progress import listening

            # (heard from the refresh too: edited files are re-embedded there)
            with listening(on_tick) if on_tick is not None else nullcontext():
                self._warm.freshen(command_retrievers(argv, dict(os.environ)))  # (the indexes this call opens)
                return run_cli(argv, cwd=self.root, stdin=stdin)
        finally:
            logging.disable(logging.NOTSET)

    def search(self, query: str, top_k: int | None = None, retriever: str | None = "",
               path: list[str] | str | None = None, lang: list[str] | str | None = "",
               kind: list[str] | str | None = "",
               max_tokens: int | None = None, expand: int | str | None = None, files: bool | None = False,
               min_confidence: str | None = "", snippet_lines: int | None = None, pattern: list[str] | str | None = None,
               fixed_strings: bool | None = False, ignore_case: bool | None = False, on_tick=None) -> dict:
        argv = ["query", "--root", self.root, "--json"]
        if retriever:  # absent, the command's default (RETRIEVAL_RETRIEVER, else lexical)
            argv += ["--retriever", retriever]
        if top_k is not None:  # absent, --max-tokens decides how many fit (as on the command line)
            argv += ["--top-k", str(top_k)]
        for glob in [path] if isinstance(path, str) else path or ():
            if not glob.strip():  # (the command line's words for it are about shell variables)
                raise ToolFailure("path: an empty glob: give one (src/**, *.py), or leave path out")
            argv += ["--path", glob]
        for one in [lang] if isinstance(lang, str) else lang or ():
            if one:
                argv += ["--lang", one]
        for one in [kind] if isinstance(kind, str) else kind or ():
            if one:
                argv += ["--kind", one]
        for one in [pattern] if isinstance(pattern, str) else pattern or ():
            argv += ["--regexp", one]
        if (fixed_strings or ignore_case) and not pattern:
            raise ToolFailure(f"{'fixed_strings' if fixed_strings else 'ignore_case'} applies to pattern, and none "
                              "is given" + ("" if fixed_strings else " (the query's words match in any case already)"))
        if fixed_strings:
            argv.append("--fixed-strings")
        if ignore_case:
            argv.append("--ignore-case")
        if max_tokens is None and (expand is not None or snippet_lines):
            max_tokens = EXPAND_TOKENS
            if top_k is None:  # as many as the call would get without a budget, not as many as fit
                from .options import DEFAULT_TOP_K

                argv += ["--top-k", str(DEFAULT_TOP_K)]
        if max_tokens is not None:
            argv += ["--max-tokens", str(max_tokens)]
        if expand is not None:
            argv += ["--expand", str(expand)]
            if expand == "scope":  # a namespace can be a whole file: the lines of it around the hit
                argv += ["--snippet-lines", str(MAX_EXPAND if snippet_lines is None else snippet_lines)]
        if files:
            argv.append("--files")
        if min_confidence:
            argv += ["--min-confidence", min_confidence]
        if snippet_lines is not None and expand != "scope":
            argv += ["--snippet-lines", str(snippet_lines)]
        # On stdin, as `query -` takes it: any text is the query, `-` itself included.
        stdin = query.encode("utf-8", "surrogatepass")
        # A regular expression is matched in a process of its own, whose main thread a timer can
        # interrupt: in this one's worker thread, `(a+)+$` on a long line held the interpreter's
        # lock for good, and every later call with it (patterns.py). Its index is built or
        # refreshed here first, as any call's is (the build's progress reaches the client; the
        # child finds it fresh).
        apart = bool(pattern) and not fixed_strings
        try:
            if apart:
                self._run(["query", "--root", self.root, "--json", *(["--retriever", retriever] if retriever else []),
                           "--top-k", "1", "-"], stdin=stdin, on_tick=on_tick)
            payload = self._run(argv + ["-"], stdin=stdin, on_tick=on_tick, apart=apart, budget=max_tokens)
        except ToolFailure as exc:  # the agent gave an argument; stdin is ours
            raise ToolFailure(str(exc).replace("the query on stdin is over", "the query is over")) from None
        echoed = payload.get("query")
        if isinstance(echoed, str):
            from .cli import echo_within

            # The agent wrote the query: a pasted report echoed whole (200 KB of a log) filled its
            # context a second time. Its head says which call this answers. (Cut already by the
            # command, to its own longer limit, it is cut again: the flag said nothing of how far.)
            if echoed.endswith("\u2026") and payload.get("query_truncated"):
                echoed = echoed[:-1]
            head = echo_within(echoed, MAX_ECHO_TOKENS)
            if head != echoed:
                payload["query"], payload["query_truncated"] = head, True
        return payload

    def status(self, skipped: bool | None = False) -> dict:
        # (reads only: no counts)
        payload = self._run(["status", "--root", self.root, "--json", *(["--skipped"] if skipped else [])])
        if self.root_reason and "root_reason" in payload:
            payload["root_reason"] = self.root_reason
        return payload


# The child runs this package, the one this server runs, and nothing from the searched root: `-m`
# there imported the repository's own `retrieval` when it holds one (as `serve` launches itself).
# It ends with the server (retrieval.lifeline).
_APART = ("import os, sys; ours, parent = sys.argv.pop(1), int(sys.argv.pop(1)); "
          "sys.path[:] = [ours] + [p for p in sys.path if p not in ('', '.', os.getcwd())]; "
          "from retrieval.lifeline import end_with_parent; end_with_parent(parent); "
          "from retrieval.entry import main; main()")


def _run_apart(argv: list[str], root: str, stdin: bytes, environment: dict, cancelled=None):
    """(exit status, stdout, stderr) of `retrieval ARGV` in a child process: the store is safe for
    several processes at once (a writer lock, snapshots for readers). Its stderr becomes the
    call's notes: no progress lines there. `cancelled()` raises once the call is cancelled (by
    default anyio's check of the host task running this thread): the child is then killed (it ran
    on, a pattern backtracking for up to 20 s, after the client had cancelled the call)."""
    import subprocess

    from .progress import PROGRESS_LINES_ENV

    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # a .pyz's path too
    proc = subprocess.Popen([sys.executable, "-c", _APART, package_parent, str(os.getpid()), *argv],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=root,
                            env={**environment, PROGRESS_LINES_ENV: "0"})
    check = cancelled or _host_cancelled
    try:
        given = {"input": stdin}  # (once: a retry of communicate() goes on where it stopped)
        while True:
            try:
                out, err = proc.communicate(**given, timeout=CANCEL_POLL)
                return proc.returncode, out, err
            except subprocess.TimeoutExpired:
                given = {}
                check()
    except BaseException:
        proc.kill()
        proc.wait()
        raise


CANCEL_POLL = 0.25  # seconds between two looks at whether a call run apart was cancelled


def _host_cancelled() -> None:
    """Raises anyio's cancellation when the MCP call this worker thread runs was cancelled."""
    from anyio.from_thread import check_cancelled

    try:
        check_cancelled()
    except RuntimeError:  # not a thread anyio runs a call in (a test's, the API's): none can cancel it
        pass


# The command's options as the tool's arguments are named: an agent never typed `--lang`.
_OPTION = re.compile(r"'?--(retriever|lang|kind|path|top-k|max-tokens|expand|files|min-confidence|snippet-lines)\b'?")
_SHORT = {"-e": "pattern", "-F": "fixed_strings", "-i": "ignore_case"}
_SHORT_OPTION = re.compile(r"(?<![\w-])(-e|-F|-i)\b")


# A value a message quotes (as `output.shell_word` quotes it): the agent's own text.
_QUOTED = re.compile(r"""(\$?'(?:[^'\\]|\\.)*'|"[^"]*")""")


def _tool_words(line: str) -> str:
    # Not inside backquotes: a command the note says to run (`retrieval index --retriever hybrid`)
    # is run in a shell, where the options are the command's. Nor inside a quoted value (a pattern
    # `zq -e zq` was echoed as `zq pattern zq`), unless it is an option alone (click's `'--top-k'`).
    parts = line.split("`")
    parts[::2] = ["".join(piece if n % 2 and not re.fullmatch(r"""['"]?--?[\w-]+['"]?""", piece) else _options_named(piece)
                          for n, piece in enumerate(_QUOTED.split(part)))
                  for part in parts[::2]]
    return "`".join(parts)


def _options_named(text: str) -> str:
    return _SHORT_OPTION.sub(lambda m: _SHORT[m.group(1)], _OPTION.sub(lambda m: m.group(1).replace("-", "_"), text))


def _result(payload: dict):
    """The tool's result: its text as `query --json` prints it (a returned dict was re-serialised
    with indentation, 6-14% over the max_tokens the answer was cut to) and the same object as
    structured content (a returned string was published as {"result": "<the JSON as a string>"})."""
    from mcp.types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))],
                          structured_content=payload)


MAX_TOP_K = 100
MAX_EXPAND = 200
# A call's answer lands in a model's context: `expand` or `snippet_lines` without a budget gets this one (ten hits
# with 200 lines around each were 95,629 characters; a hundred, 990,027), and no budget is larger.
EXPAND_TOKENS = 8_000
# Below Claude Code's own cap on a tool's answer (25,000 of its tokens; more is cut or refused
# there), with a margin: four characters a token undercounts JSON and code (99,725 characters
# answered a budget of 25,000).
MAX_TOKENS = 20_000


def build(root: str, exchange: "Exchange | None" = None, refusal: str | None = None, root_reason: str = ""):
    """The MCPServer for root (not yet running); its tool calls are told to the exchange."""
    from typing import Annotated, Literal

    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
    from pydantic import Field, ValidationError

    searcher = Searcher(root, refusal, root_reason)
    from . import __version__
    from .retrievers.base import REGISTRY

    takes: dict[str, list[str]] = {}  # each tool's arguments, filled in below

    class Server(MCPServer):
        wire = None  # (reader, writer) of the protocol (_watch_stdio); None: the process's stdin and stdout

        async def run_stdio_async(self) -> None:
            # The SDK's own, given our streams: it took sys.stdin and sys.stdout otherwise, and
            # those stay the process's, for what is no message to write where no host reads.
            import anyio
            from mcp.server.stdio import stdio_server

            streams = {} if self.wire is None else {"stdin": anyio.wrap_file(self.wire[0]),
                                                     "stdout": anyio.wrap_file(self.wire[1])}
            async with stdio_server(**streams) as (read_stream, write_stream):
                await self._lowlevel_server.run(read_stream, write_stream,
                                                self._lowlevel_server.create_initialization_options())

        async def list_tools(self):
            # The schemas say what call_tool refuses: an argument the tool does not take.
            return [tool.model_copy(update={"input_schema": {**tool.input_schema, "additionalProperties": False}})
                    for tool in await super().list_tools()]

        async def call_tool(self, name, arguments, context=None):
            # An argument the tool does not take was dropped without a word: `"language": "python"`
            # answered from every language, as if it had been applied.
            unknown = [arg for arg in arguments if name in takes and arg not in takes[name]]
            if unknown:
                raise ToolError(f"Error executing tool {name}: {_unknown_arguments(unknown, takes[name])}")
            if exchange is not None:
                exchange.running(+1)
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as exc:
                # The SDK's message for a value the schema refuses was pydantic's report: several
                # lines, its error types and a link to its documentation, for an agent to read.
                cause = exc.__cause__
                if isinstance(cause, ValidationError) and not isinstance(exc, UnexpectedToolError):
                    raise ToolError(f"Error executing tool {name}: {_invalid_arguments(cause)}") from cause
                raise
            finally:
                if exchange is not None:
                    exchange.running(-1)

    # The version: a host shows it. Warnings only on stderr: the SDK logged each refused call at
    # INFO, in a drawn table, into the host's log.
    server = Server("retrieval", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")

    @server.tool(description=SEARCH_DESCRIPTION)
    def search(
        query: Annotated[str, Field(description="A question in words, a symbol, or a pasted error/bug report.")],
        # Bounded: an agent's context is the cost; a CLI user can still ask for more.
        # Strict: `"top_k": true` was taken as 1 and `"files": "yes"` as true.
        top_k: Annotated[int | None, Field(ge=1, le=MAX_TOP_K, strict=True, description="How many hits (default 10, at most "
                                           f"{MAX_TOP_K}; with max_tokens, as many as fit).")] = None,
        # null as absent, for each optional argument: agents write `"lang": null` for one they leave
        # out, which was refused here while `"top_k": null` was taken.
        # The names as an enum: a host or an agent sees the choices instead of guessing one.
        retriever: Annotated[Literal[("", "all", *sorted(REGISTRY))] | None,
                             Field(description="Retriever: lexical (BM25 over code), treesitter (the same over "
                                               "syntax-aware chunks), hybrid (lexical and embeddings), turbovec "
                                               "(embeddings), pi-serini (Lucene's BM25), lexical+ctx (chunks with a "
                                               "written context); all: every indexed one, consolidated (see status "
                                               "for the indexed ones); default (empty): RETRIEVAL_RETRIEVER of the "
                                               "server's environment, else lexical. One not indexed yet is built by "
                                               "this call (the embedding ones can take minutes, while other calls "
                                               "answer from the index as it was).")] = "",
        # One glob as a string too: agents often write `"path": "src/**"` (a list was a validation error).
        path: Annotated[list[str] | str | None, Field(description=(
            "Only files matching one of these globs, read as in .gitignore: with a slash inside, from the "
            "repository root (src/**/*.py, src/app/); without, at any depth (*.test.ts, core.py); a glob "
            "starting with ! leaves out what it names (['*.py', '!tests/']), the later one deciding."))] = None,
        # A list too, as the command line repeats --lang and --kind (any of them).
        lang: Annotated[list[str] | str | None, Field(description="Only this language, e.g. python, or any of "
                                                              "several: ['go', 'markdown'].")] = "",
        kind: Annotated[list[Literal["code", "docs", "config"]] | Literal["", "code", "docs", "config"] | None,
                        Field(description="Only this kind of file, or any of several.")] = "",
        max_tokens: Annotated[int | None, Field(ge=1, le=MAX_TOKENS, strict=True, description=(
            f"As many hits as fit in this many tokens, snippets included (at most {MAX_TOKENS:,}; with expand "
            f"or snippet_lines and no max_tokens, {EXPAND_TOKENS:,}); notes say how many more did not fit."))] = None,
        expand: Annotated[Annotated[int, Field(ge=0, le=MAX_EXPAND, strict=True)] | Literal["scope"] | None,
                          Field(description=f"Include each hit's lines plus N (at most {MAX_EXPAND}) around it, or "
                                            f"'scope': its enclosing definition (treesitter hits; at most {MAX_EXPAND} "
                                            "lines of it, around the hit).")] = None,
        files: Annotated[bool | None, Field(strict=True, description="One hit per file (its best span).")] = False,
        # The command's options the skill teaches, here too.
        min_confidence: Annotated[Literal["", "low", "medium", "high"] | None, Field(description=(
            "Only hits rated at least this (high: usually right; low: a guess); none left means nothing "
            "convincing matched."))] = "",
        snippet_lines: Annotated[int | None, Field(ge=0, le=MAX_EXPAND, strict=True, description=(
            f"Include up to N (at most {MAX_EXPAND}) lines of each hit: those holding the most of the "
            "query's words."))] = None,
        pattern: Annotated[list[str] | str | None, Field(description=(
            "Only hits with a line matching one of these regular expressions (Python's re, within a line, "
            "as grep), still ranked by the query: ['raise \\w+Error'] with the question of what raises it."))] = None,
        fixed_strings: Annotated[bool | None, Field(strict=True, description=(
            "The patterns are literal strings, not regular expressions."))] = False,
        ignore_case: Annotated[bool | None, Field(strict=True, description=(
            "The patterns match in any case (the query's words always do)."))] = False,
        ctx: Context | None = None,
    ) -> dict:
        try:
            return _result(searcher.search(query, top_k, retriever, path, lang, kind, max_tokens, expand, files,
                                           min_confidence, snippet_lines, pattern, fixed_strings, ignore_case,
                                           on_tick=_progress_to(ctx)))
        except ToolFailure as exc:
            raise ToolError(str(exc)) from None

    @server.tool()
    def status(
        skipped: Annotated[bool | None, Field(strict=True, description=(
            "Instead, list the files the index leaves out and why ({root, skipped: [{path, reason}], "
            "other_types: {extension: count} of files of types never indexed}): for a file that is never found."))] = False,
    ) -> dict:
        """Each retriever's index for this repository: state, files, chunks, languages."""
        try:
            return _result(searcher.status(skipped))
        except ToolFailure as exc:
            raise ToolError(str(exc)) from None

    takes.update({tool.__name__: [p for p in inspect.signature(tool).parameters if p != "ctx"]
                  for tool in (search, status)})
    return server


# Seconds between two progress notifications of one call: a count per file would flood the host.
PROGRESS_INTERVAL = 1.0


def _progress_to(ctx):
    """A listener sending a call's counts (a first build: files indexed) as progress notifications
    to a client that asked for them (a progress token), at most one a PROGRESS_INTERVAL: a first
    hybrid build ran for minutes in silence, and hosts that wait on progress timed out at 60 s."""
    if ctx is None:
        return None
    import time

    import anyio.from_thread

    last = [float("-inf")]
    values = RisingCounts()

    def tick(count) -> None:
        now = time.monotonic()
        if now - last[0] < PROGRESS_INTERVAL and not 0 < count.total <= count.done:  # (a count's end: said)
            return
        sent = values(count)
        if sent is None:
            return
        last[0] = now
        anyio.from_thread.run(ctx.report_progress, *sent, str(count))

    return tick


class RisingCounts:
    """A call's counts as the progress values MCP requires to rise with each notification: a
    hybrid build's files read and chunks embedded take turns, each from zero. A count of another
    kind, or one starting again, goes on from the last value sent. Called with a (done, total)
    tick, it gives (value, total) to send, total None for a count whose total is not known (0: the
    chunks embedded of those queued so far, which all done would read as a build finished); None
    for a count saying again what was sent (nothing new)."""

    def __init__(self):
        self.kind, self.done, self.base, self.sent = None, 0, 0, 0

    def __call__(self, count) -> tuple[int, int | None] | None:
        from .progress import count_kind

        kind = count_kind(count)
        if kind == self.kind and count.done == self.done:
            return None
        if kind != self.kind or count.done < self.done:
            self.kind, self.base = kind, self.sent
        self.done = count.done
        self.sent = max(self.sent + 1, self.base + count.done)  # (a count at 0 still rises)
        return self.sent, (max(self.base + count.total, self.sent) if count.total > 0 else None)


def _unknown_arguments(unknown: list[str], known: list[str]) -> str:
    """One line naming the arguments a tool does not take, the likely one meant, and those it takes."""
    from difflib import get_close_matches

    guesses = [f"{arg!r} (did you mean {close[0]!r}?)" if (close := get_close_matches(arg, known, n=1)) else repr(arg)
               for arg in unknown]
    return (f"unknown argument{'s' if len(unknown) > 1 else ''} {', '.join(guesses)}; "
            f"the arguments are: {', '.join(known) or 'none'}")


def _invalid_arguments(error) -> str:
    """A pydantic ValidationError of a tool's arguments as one line: each argument (a list's item
    by its index) and what its value should be, the alternatives of a union joined by "or"."""
    said: dict[str, list[str]] = {}
    given: dict[str, str] = {}
    for detail in error.errors(include_url=False):
        loc = detail["loc"]
        where = str(loc[0]) + "".join(f"[{part}]" for part in loc[1:] if isinstance(part, int)) if loc else "arguments"
        message = " ".join(str(detail["msg"]).split())
        message = message[:1].lower() + message[1:]
        if message not in said.setdefault(where, []):
            said[where].append(message)
        value = detail.get("input")
        # The value refused, when short, as the agent wrote it (JSON): it sees which was wrong.
        if value is None or isinstance(value, (str, int, float)) and len(repr(value)) <= 60:
            given[where] = f" (got {json.dumps(value, ensure_ascii=False)})"
    return "; ".join(f"{where}: {messages[0]}"
                     + "".join(", or " + m.removeprefix("input should be ") for m in messages[1:])
                     + given.get(where, "")
                     for where, messages in said.items())


def _only_os_error(exc: BaseException) -> OSError | None:
    """The OSError behind exc when that is all it holds (the SDK's task groups wrap what failed in
    exception groups), else None."""
    inner = getattr(exc, "exceptions", None)
    if inner is None:
        return exc if isinstance(exc, OSError) else None
    found = [_only_os_error(e) for e in inner]
    return found[0] if found and all(found) else None


# JSON may escape half of a UTF-16 pair ("\\ud83d": an emoji an agent cut in two), which the SDK's
# parser refuses: it dropped the whole message without a reply, and the agent waited for ever.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # what json.loads leaves of one (it joins pairs)


def mend_line(line: bytes) -> bytes:
    """One line of the host's JSON-RPC, its lone surrogates made U+FFFD: what the SDK makes of a
    byte that is not UTF-8, as the command line does of such an argument. Any other line as is."""
    if not _SURROGATE_ESCAPE.search(line):
        return line
    try:
        message = json.loads(line.decode("utf-8", "replace"))
        mended = _without_surrogates(message)
    except (ValueError, RecursionError):  # not JSON: the SDK says what it says of that
        return line
    if mended == message:  # an escaped backslash before "ud83d"
        return line
    return json.dumps(mended, ensure_ascii=False).encode("utf-8") + line[len(line.rstrip(b"\r\n")):]


def _without_surrogates(value):
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    return value


class Exchange:
    """The host's requests read and not yet answered, so that the end of stdin ends the server only
    once they are: the SDK ended at once and cancelled them (`printf '<initialize>\\n<call>\\n' |
    retrieval mcp` printed the handshake's reply and never the call's). A request nothing answers
    (the SDK drops some it cannot read) is given up after GRACE seconds with no call running."""

    GRACE = 2.0

    def __init__(self):
        self._changed = threading.Condition()
        self._unanswered: set = set()
        self._running = 0
        self._gone = False  # the host's end of stdout is closed: nothing more can be answered
        self.initialize_read = False  # the host asked `initialize` (the SDK refuses other requests before)

    def read(self, message: dict) -> None:
        """A message read from the host (parsed: see _parsed)."""
        if message.get("method") == "initialize":
            self.initialize_read = True
        if message.get("method") == "notifications/cancelled":  # a cancelled request gets no answer
            self._answered((message.get("params") or {}).get("requestId"))
        elif "method" in message and _key(message.get("id")) is not None:  # a request, not a notification
            with self._changed:
                self._unanswered.add(_key(message["id"]))

    def wrote(self, line: bytes) -> None:
        message = _message(line)
        if "result" in message or "error" in message:
            self._answered(message.get("id"))

    def _answered(self, request_id) -> None:
        with self._changed:
            self._unanswered.discard(_key(request_id))
            self._changed.notify_all()

    def gone(self) -> None:
        with self._changed:
            self._gone = True
            self._changed.notify_all()

    def running(self, change: int) -> None:
        """A tool call starts (+1) or ends (-1)."""
        with self._changed:
            self._running += change
            self._changed.notify_all()

    def settle(self) -> None:
        """Return once every request read is answered (or given up, or unanswerable)."""
        import time

        with self._changed:
            idle_since = time.monotonic()
            while self._unanswered and not self._gone:
                if self._running:
                    self._changed.wait()
                    idle_since = time.monotonic()
                    continue
                left = self.GRACE - (time.monotonic() - idle_since)
                if left <= 0:
                    return
                if self._changed.wait(left):
                    idle_since = time.monotonic()  # an answer, or a call's end: wait again


def _parsed(line: bytes) -> tuple[object, str]:
    """(a line's JSON value, ""), or (None, why it is no JSON)."""
    try:
        return json.loads(line.strip()), ""
    except (ValueError, RecursionError) as exc:
        return None, _first(exc)


def _message(line: bytes) -> dict:
    """A JSON-RPC line's object ({} for anything else)."""
    message, _problem = _parsed(line)
    return message if isinstance(message, dict) else {}


def _key(request_id):
    # The ids the SDK answers, strings and integers; 1 and "1" are two requests (None: no such id).
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
        return None
    return (type(request_id).__name__, request_id)


def refusal(line: bytes, parsed: tuple[object, str] | None = None) -> bytes | None:
    """The JSON-RPC error reply to a line that is no JSON-RPC 2.0 message (None for a message, or
    a blank line); `parsed`: the line's _parsed, when read already. The SDK dropped such a line
    without a reply, and its sender waited for ever."""
    if not line.strip():
        return None
    message, problem = parsed or _parsed(line)
    if problem:
        error = {"code": -32700, "message": f"Parse error: the line is not JSON ({problem})"}
        request_id = None
    else:
        from mcp_types import jsonrpc_message_adapter
        from pydantic import ValidationError

        try:
            jsonrpc_message_adapter.validate_json(line, by_name=False)
            valid = True
        except ValidationError:
            valid = False
        found = message.get("id") if isinstance(message, dict) else None
        # The SDK reads a request whose id is no string or integer (2.0, true, null, {}) as a
        # notification, which nothing answers: the sender waited for ever for its reply.
        if valid and not (isinstance(message, dict) and "method" in message and "id" in message
                          and _key(found) is None):
            return None
        error = {"code": -32600, "message": 'Invalid Request: a JSON-RPC 2.0 message has "jsonrpc": "2.0", and a '
                                            'request a "method" and an "id" (a string or an integer)'}
        request_id = found if isinstance(found, (str, int, float)) and not isinstance(found, bool) else None
    return _error_line(request_id, error)


def _error_line(request_id, error: dict) -> bytes:
    """A JSON-RPC error reply, one line as the wire carries it."""
    reply = {"jsonrpc": "2.0", "id": request_id, "error": error}
    return json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


NOT_INITIALIZED = -32002  # JSON-RPC's range for server errors; the code LSP gives the same case


def premature(message, exchange: Exchange) -> bytes | None:
    """The error reply to a request read before any `initialize` (a ping aside), else None. The
    SDK answered it `-32602 Invalid request parameters` with nothing more: no word of the handshake
    the host had skipped."""
    if (exchange.initialize_read or not isinstance(message, dict) or message.get("method") in ("initialize", "ping")
            or _key(message.get("id")) is None or not isinstance(message.get("method"), str)):
        return None
    error = {"code": NOT_INITIALIZED,
             "message": f"Server not initialized: {message['method']!r} came before `initialize`; send "
                        "`initialize`, then `notifications/initialized`, then requests"}
    return _error_line(message["id"], error)


def _first(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


class _MendedLines(io.RawIOBase):
    """The host's messages from a descriptor, each line through mend_line; a line that is no
    message is answered here with its error (refusal), and the end is read only when every request
    before it is answered (Exchange)."""

    def __init__(self, fd: int, exchange: Exchange, replies):
        self._source = open(fd, "rb", closefd=False)
        self._exchange = exchange
        self._replies = replies  # the wire's writer, shared with the SDK (one message per write)
        self._line, self._at = b"", 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while self._at == len(self._line):
            line = self._source.readline()
            if not line:
                self._exchange.settle()
                return 0
            line = mend_line(line)
            parsed = _parsed(line)  # once, for the refusal and the exchange
            refused = refusal(line, parsed) or premature(parsed[0], self._exchange)
            if refused is not None:
                self._replies.write(refused)
                self._replies.flush()
                continue
            self._exchange.read(parsed[0] if isinstance(parsed[0], dict) else {})
            self._line, self._at = line, 0
        n = min(len(buffer), len(self._line) - self._at)
        buffer[:n] = self._line[self._at:self._at + n]
        self._at += n
        return n


class _WatchedWrites(io.RawIOBase):
    """The server's messages to a descriptor, each whole line told to the Exchange once written."""

    def __init__(self, fd: int, exchange: Exchange):
        self._fd = fd
        self._exchange = exchange
        self._parts: list[bytes] = []
        self._failed = False

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        if self._failed:  # said once (the server ends on it); what is left at exit goes nowhere
            return len(data)
        try:
            n = os.write(self._fd, data)
        except OSError:
            self._failed = True
            self._exchange.gone()
            raise
        written = bytes(data[:n])
        while b"\n" in written:
            line, written = written.split(b"\n", 1)
            self._exchange.wrote(b"".join(self._parts) + line)
            self._parts = []
        if written:
            self._parts.append(written)
        return n


def _divert(fd: int, to: int) -> int:
    """A private descriptor (not inherited by children) for what fd was; fd itself then points at
    `to`, as the SDK arranges it: a child process never takes the host's messages, nor writes
    into the protocol."""
    wire = os.dup(fd)  # not inheritable (Python's default), and portable, as fcntl is not
    os.dup2(to, fd)
    return wire


def _watch_stdio(exchange: Exchange):
    """(reader, writer) of the wire: the host's messages mended and the server's, each through the
    exchange and a descriptor of its own. Descriptors 0 and 1, and so sys.stdin and sys.stdout,
    then read nothing and write to stderr: a child process never takes the host's messages, and
    a stray print never lands in the protocol."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    wire_in = _divert(0, devnull)
    os.close(devnull)
    wire_out = _divert(1, 2)
    writer = io.BufferedWriter(_WatchedWrites(wire_out, exchange))
    return (io.TextIOWrapper(io.BufferedReader(_MendedLines(wire_in, exchange, writer)), encoding="utf-8",
                             errors="replace"),
            io.TextIOWrapper(writer, encoding="utf-8"))


def run(root: str, refusal: str | None = None, root_reason: str = "") -> None:
    """Serve root over stdio; with a refusal, every tool call answers it (a host shows its server
    exiting at start as a closed connection, not why)."""
    try:
        exchange = Exchange()
        server = build(root, exchange, refusal, root_reason)
        server.wire = _watch_stdio(exchange)
        server.run("stdio")
    except Exception as exc:
        # The host closed our stdout (it went away) or the disk behind it is full: raised as the
        # OSError itself, the command ends as any other whose output fails (quietly on a closed
        # pipe), not with the SDK's exception group traceback.
        error = _only_os_error(exc)
        if error is None or error is exc:
            raise
        raise error from None
