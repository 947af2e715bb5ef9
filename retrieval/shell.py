"""Shell manners for the command group: a closed stdout (`| head -1`) ends the command quietly with
exit 0, as ripgrep does; Ctrl-C exits 130 and SIGTERM 143, without a traceback or click's
"Aborted!", after the same cleanup (a SIGTERM from `timeout` or a CI runner stops a command as Ctrl-C
does: model contexts in flight are kept, locks released)."""
from __future__ import annotations

import errno
import os
import re
import shlex
import signal
import sys
import threading

import click

from .progress import redraws
from .streams import discard_stdout

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C
EXIT_TERMINATED = 143  # 128 + SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command is, so every Ctrl-C cleanup path runs for it too."""


def _raise_terminated(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the cleanup too
    raise Terminated()


def _catch_sigterm():
    """Install the SIGTERM handler when nobody else has one (a server running the CLI in process
    keeps its own); the previous handler, or None when not installed."""
    if threading.current_thread() is not threading.main_thread():
        return None
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return None
    return signal.signal(signal.SIGTERM, _raise_terminated)


def _output_failed(exc: OSError):
    """A closed pipe ends the command quietly with exit 0; any other failure to write stdout (a full
    disk, > /dev/full) is one error line and exit 1. What a command does not report itself."""
    discard_stdout()
    if exc.errno == errno.EPIPE:
        raise click.exceptions.Exit(0)
    click.echo(f"error: cannot write the output: {exc.strerror or exc}", err=True)
    raise click.exceptions.Exit(1)


_EXTRA_ARGUMENTS = re.compile(r"^Got unexpected extra arguments? \((.*)\)$", re.DOTALL)


# Options of grep-family tools (ripgrep, grep, ck, ColGREP, semble) a user switching types first, and
# what says it here; click's guesses go by spelling (`--type` -> `--top-k`, `--include` -> `--files`).
_FAMILIAR = {
    "query": {
        **dict.fromkeys(("-g", "--glob", "--iglob", "--include"), "--path GLOB"),
        **dict.fromkeys(("--exclude", "--exclude-dir"), "--path '!GLOB' (a leading ! leaves GLOB out)"),
        **dict.fromkeys(("-t", "--type"), "--lang LANG (or --kind code|docs|config)"),
        **dict.fromkeys(("-T", "--type-not"), "--path '!*.EXT'"),
        **dict.fromkeys(("-m", "--max-count", "--limit", "--topk", "--top", "--max-results"), "-k N"),
        **dict.fromkeys(("-C", "-A", "-B", "--context", "--after-context", "--before-context"),
                        "--expand N (N lines around each hit) or --snippet-lines N"),
        **dict.fromkeys(("--mode", "--sem", "--semantic", "--hybrid", "--lex", "--lexical"),
                        "--retriever lexical|hybrid|treesitter|..."),
        **dict.fromkeys(("-w", "--word-regexp"), "-e '\\bWORD\\b' (a pattern's word boundaries)"),
        **dict.fromkeys(("-P", "--pcre2", "--regex", "-E", "--extended-regexp"),
                        "-e PATTERN (Python's regular expressions)"),
        **dict.fromkeys(("-S", "--smart-case"), "-i (for -e patterns: the query's words match in any case already)"),
        **dict.fromkeys(("--color", "--colour"), "NO_COLOR=1 or FORCE_COLOR=1 in the environment"),
        **dict.fromkeys(("--hidden", "-.", "-u", "--no-ignore", "-uu", "-uuu"),
                        "nothing: hidden files are searched; ignore rules always apply "
                        "(`retrieval status --skipped` lists what they leave out)"),
        **dict.fromkeys(("--reindex", "--rebuild"), "`retrieval index --force`"),
        **dict.fromkeys(("--format", "--output", "--output-format"),
                        "--json, --jsonl, -l or --vimgrep (text without any)"),
    },
    "index": {
        **dict.fromkeys(("--reindex", "--rebuild"), "--force"),
    },
}


def _familiar_hint(command: str, option: str) -> str | None:
    name = option.split("=", 1)[0]
    return _FAMILIAR.get(command, {}).get(name)


class RootCommand(click.Command):
    """A command whose root is an option: a directory given as an argument (`retrieval index ~/repo`,
    a newcomer's first try) is told how to say it, not only that the argument was unexpected. An
    option of grep's family is told what says it here."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        given = list(args)  # the parser consumes the list it is given
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            hint = _familiar_hint(self.name or "", exc.option_name)
            if hint is None and self.name == "query" and not exc.possibilities:
                # `retrieval query what does --force do`: a word of the question, not an option
                raise click.UsageError(f"No such option '{exc.option_name}'; a query holding a word that starts with "
                                       f"- is quoted whole (`retrieval query '... {exc.option_name} ...'`) or given "
                                       "after --", ctx) from None
            if hint is None:
                raise
            raise click.UsageError(f"No such option '{exc.option_name}'; here: {hint}", ctx) from None
        except click.UsageError as exc:
            extra = _EXTRA_ARGUMENTS.match(exc.message)
            directory = next((a for a in given if a in (extra.group(1) if extra else "").split(" ")
                              and os.path.isdir(a)), None)
            rooted = any(a == "--root" or a.startswith("--root=") for a in given)
            if directory is None or rooted or not any(p.name == "root" for p in self.params):
                raise
            raise click.UsageError(f"{exc.message}: a root is given as --root {shlex.quote(directory)}", ctx) from None


# Verbs other search tools use for what `query` does (semble's and the MCP tool's `search`).
ALIASES = {"search": "query"}


class ShellGroup(click.Group):
    command_class = RootCommand

    def get_command(self, ctx: click.Context, cmd_name: str):
        # An alias runs the command it names; `--help` lists only the names.
        return super().get_command(ctx, ALIASES.get(cmd_name, cmd_name))

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        given = list(args)  # the parser consumes the list it is given
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            # `retrieval --root ~/repo query x`, `retrieval --json query x`: a command's option before
            # the command was "No such option" (for --json: "Did you mean '--version'?").
            name = exc.option_name.split("=", 1)[0]
            commands = self.list_commands(ctx)
            owners = [c for c in commands if any(name in p.opts or name in p.secondary_opts
                                                 for p in self.get_command(ctx, c).params)]
            if not owners:
                raise
            named = next((ALIASES.get(a, a) for a in given if ALIASES.get(a, a) in commands), None)
            if named is not None and named not in owners:
                # (`retrieval --force query x`: `eval --force` is no query)
                raise click.UsageError(f"No such option '{exc.option_name}': `retrieval {named}` has none either "
                                       f"(it is an option of {', '.join(owners)})", ctx) from None
            command = named or ("query" if "query" in owners else owners[0])
            raise click.UsageError(f"No such option '{exc.option_name}' before the command: a command's options "
                                   f"follow it (`retrieval {command} {name} ...`)", ctx) from None

    def resolve_command(self, ctx: click.Context, args: list[str]):
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            # `retrieval where are routes registered`, as rg and ck are called: a query, not a command.
            if not args or args[0].startswith("-") or self.get_command(ctx, "query") is None:
                raise
            import difflib

            message = exc.message.rstrip(".")
            if difflib.get_close_matches(args[0], ["help"], n=1, cutoff=0.75):  # (git's and pip's way to ask)
                raise click.UsageError(f"{message}; `retrieval --help` lists the commands, "
                                       "`retrieval COMMAND --help` tells one", ctx) from None
            near = difflib.get_close_matches(args[0], [*self.list_commands(ctx), *ALIASES], n=1, cutoff=0.75)
            if near:
                raise click.UsageError(f"{message}; did you mean `{near[0]}`?", ctx) from None
            raise click.UsageError(f"{message}; a search is `retrieval query {shlex.join(args[:6])}"
                                   f"{' ...' if len(args) > 6 else ''}`", ctx) from None

    def make_context(self, *args, **kwargs) -> click.Context:
        # The group's own --version and --help print here, while its options are parsed.
        try:
            return super().make_context(*args, **kwargs)
        except OSError as exc:
            _output_failed(exc)
        except KeyboardInterrupt:  # Ctrl-C while parsing: as while running (click said "Aborted!", exit 1)
            sys.exit(EXIT_INTERRUPTED)

    def invoke(self, ctx: click.Context):
        previous = _catch_sigterm()
        try:
            value = super().invoke(ctx)
            if sys.stdout is not None:  # None: started with stdout closed (`>&-`); nothing was printed
                sys.stdout.flush()  # a closed pipe shows here, not at exit
            return value
        except OSError as exc:
            _output_failed(exc)
        except MemoryError:  # a memory limit (ulimit -v, a container's): one line, not a traceback
            click.echo("error: out of memory", err=True)
            ctx.exit(1)
        except KeyboardInterrupt as exc:
            if redraws(sys.stderr):
                sys.stderr.write("\r\x1b[K")  # no half-drawn progress line left behind
            ctx.exit(EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED)
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
