"""The `retrieval` command: parse options, call the service, format output. Nothing else.

stdout carries results only; progress and diagnostics go to stderr. Exit codes: 0 success (zero hits
included), 1 error (one `error: ...` line), 2 usage.
"""
from __future__ import annotations

import errno
import json
import os
import re
import sys
from dataclasses import replace

import click

from . import __version__
from .options import DEFAULT_TOP_K, RootPath
from .shell import ShellGroup


class UserError(click.ClickException):
    exit_code = 1

    def show(self, file=None):
        click.echo(f"error: {self.format_message()}", err=True)


def _fail(exc: BaseException) -> UserError:
    message = str(exc) or exc.__class__.__name__
    return UserError(message.splitlines()[0])


def _expected_errors():
    from .discover import DiscoveryError
    from .store.layout import StoreError
    from .store.lock import LockBusy

    return (DiscoveryError, StoreError, LockBusy, RuntimeError, ValueError, OSError)


# Line separators JSON lets stand raw inside a string, which a reader splitting lines (Python's
# splitlines, many editors) would cut a record at: written as escapes.
_LINE_SEPARATORS = {"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_SURROGATE = re.compile("[\ud800-\udfff]")


def _json(obj) -> str:
    """One JSON document on one line, UTF-8 as it is, except the line separators above and lone
    surrogates (a root whose name is not UTF-8): escaped, or the line would not be UTF-8. To a
    stdout that cannot write every character (PYTHONIOENCODING=latin-1) all of it is ASCII: `\u2713`
    reads back as the same text, a backslash escape of the stream's making would not (`\U0001f600`)."""
    from .streams import holds_unicode

    text = json.dumps(obj, ensure_ascii=not holds_unicode(sys.stdout))
    if not text.isascii():
        for raw, escaped in _LINE_SEPARATORS.items():
            text = text.replace(raw, escaped)
        text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


def _no_empty_glob(globs: tuple[str, ...]) -> tuple[str, ...]:
    if "" in globs:  # it matched nothing and was ignored: every hit came back
        raise click.BadParameter("is empty (an unset variable?): give a glob, or leave the option out")
    from .ignore import BraceError, expand_braces

    for glob in globs:
        try:
            expand_braces(glob)
        except BraceError as exc:  # (not some of them silently: a `!` would let files back in)
            raise click.BadParameter(f"{exc}: give several globs, or fewer alternatives") from None
    return globs


def _rooted_globs(globs, root: str) -> tuple[str, ...]:
    """Globs as the root sees them. A path a shell user means from where they stand (`./x.py` in
    a subdirectory of the root, `./repo/x.py` beside it, or an absolute path inside it) is made
    relative to the root; anything else is already a glob over root-relative paths."""
    from .ignore import literal_glob

    real_root = os.path.realpath(root)
    try:
        # Both resolved: getcwd() is a real path, a --root given through a link is not.
        cwd = os.path.realpath(os.getcwd())
        here = os.path.relpath(cwd, real_root)
    except (OSError, ValueError):
        cwd, here = None, ".."
    out = []
    for glob in globs:
        negated, body = (glob[:1] == "!", glob[1:] if glob[:1] == "!" else glob)
        if body in (".", ".."):
            body += "/"  # this directory (or its parent), as `./` says it
        inside = None
        if os.path.isabs(body):
            inside = os.path.relpath(os.path.realpath(body), real_root).replace(os.sep, "/")
        elif body.startswith(("./", "../")):
            if not _climbs(here):
                # The directory they stand in is a name, not a glob (`app/[slug]`): escaped.
                inside = os.path.normpath(os.path.join(literal_glob(here), body)).replace(os.sep, "/")
            if cwd is not None and (inside is None or _climbs(inside)):
                # From outside the root (the directory holding it, one beside it), or out of it and
                # back (`../repo/x.py`): what lies below the root is the glob's own part, no name of
                # where they stand. `./x` leading elsewhere is that absolute path (a note says so).
                target = os.path.normpath(os.path.join(cwd, body))
                inside = os.path.relpath(target, real_root).replace(os.sep, "/")
                if _climbs(inside) and set(inside.split("/")) != {".."} and body.startswith("./"):
                    body = target + ("/" if body.endswith("/") else "")
        if inside is not None and set(inside.split("/")) == {".."}:
            body = "./."  # a directory holding the root: every file of it, as the root itself
        elif inside is not None and not _climbs(inside):
            body = "./" + inside
        slash = "/" if glob.endswith("/") and not body.endswith("/") else ""  # normpath drops it
        if body == "./.":
            # The root itself (`.` there, `..` from a directory below, the root's absolute path):
            # everything under it; as `./.` it named a file called `.`, matching nothing.
            body, slash = "./**", ""
        out.append(("!" if negated else "") + body + slash)
    return tuple(out)


def _progress_sink(always: bool = True):
    """Progress on stderr: counts only on a terminal, as one line rewritten in place; other messages
    (an index found damaged and rebuilt) always, or with `always=False` only on a terminal."""
    from .progress import Reporter

    return Reporter(messages=always)


def _retriever_names() -> list[str]:
    from .retrievers.base import REGISTRY

    return sorted(REGISTRY, key=lambda n: (n != "lexical", n))


def _language_help() -> str:
    from .languages import known_languages

    return ("Only hits in this language: " + ", ".join(known_languages())
            + ". Common aliases work too (py, js, ts, rs, golang, c++, cs, sh, rb, kt, ...).")


class EnvOption(click.Option):
    """An option an environment variable may also set: its errors name the variable only when the
    value came from it (click names it always, so a typo on the command line blamed the environment)."""

    def get_error_hint(self, ctx) -> str:
        hint = click.Parameter.get_error_hint(self, ctx)
        if ctx is not None and ctx.get_parameter_source(self.name) == click.core.ParameterSource.ENVIRONMENT:
            hint += f" (from {self.envvar})"
        return hint


class LanguageName(click.ParamType):
    """A language name or alias, resolved to the name detection uses; unknown names are refused."""

    name = "language"

    def convert(self, value, param, ctx):
        from .languages import resolve_language

        if not value:
            self.fail("is empty: name a language (or leave the option out)", param, ctx)
        try:
            return resolve_language(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)

    def shell_complete(self, ctx, param, incomplete):
        from click.shell_completion import CompletionItem

        from .languages import known_languages

        return [CompletionItem(name) for name in known_languages()
                if name.startswith(incomplete.lower())]


class ByteSize(click.ParamType):
    """A count of bytes, positive: `2000000`, or with a unit as `--help` writes sizes (`500K`, `2M`,
    `1.5MB`, `1G`: decimal, as the default's "1 MB" is; `2MiB`, `512Ki`: binary)."""

    name = "bytes"
    _SIZE = re.compile(r"\s*([0-9]{1,16})(?:\.([0-9]{1,9}))?\s*(?:([KMGT])(i?))?B?\s*", re.IGNORECASE)
    LARGEST = 10**15  # a petabyte: past any file's size, and a number every reader of it handles

    def convert(self, value, param, ctx):
        m = self._SIZE.fullmatch(str(value))
        size = 0
        if m and (m.group(3) or not m.group(2)):  # a fraction of a byte is no size
            whole, fraction, unit, binary = m.groups()
            scale = (1024 if binary else 1000) ** ("KMGT".index(unit.upper()) + 1) if unit else 1
            # In integers: a float turned 400 digits into inf, and big counts lost their last digits.
            size = int(whole) * scale + int(fraction or "0") * scale // 10 ** len(fraction or "")
        if not 1 <= size <= self.LARGEST:
            self.fail(f"{value!r} is not a size in bytes (a positive number up to 1 PB, or with a unit: "
                      "500K, 2M, 1G, 2MiB)", param, ctx)
        return size


class RetrieverName(click.Choice):
    """A retriever's name, or `all`; a near miss is told the name it was probably meant to be."""

    def __init__(self):
        super().__init__(_retriever_names() + ["all"])

    def convert(self, value, param, ctx):
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            from .retrievers.base import unknown_retriever

            # In the words eval, the MCP tools and the API use (three wordings of one mistake).
            self.fail(str(unknown_retriever(value, "all")), param, ctx)


class _Expand(click.ParamType):
    """`--expand`: a number of lines (>= 0) or `scope`."""

    name = "N|scope"

    def convert(self, value, param, ctx):
        if isinstance(value, int) or value == "scope":
            return value
        text = str(value).strip()
        if text.lower() == "scope":  # as --lang and --retriever take any case
            return "scope"
        if text.isascii() and text.isdigit():  # '²' is a digit to isdigit(), not to int()
            return int(text)
        if text.startswith("-") and text[1:].isascii() and text[1:].isdigit():
            self.fail(f"{value!r}: the lines to add around a hit are 0 or more (or 'scope')", param, ctx)
        self.fail(f"{value!r} is neither a number of lines nor 'scope'", param, ctx)


root_option = click.option(
    "--root", type=RootPath(), default=None, metavar="DIR",
    help="Repository root. Default: the nearest directory at or above the current one that has an "
         "index, else the repository (.git) root, else the current directory.",
)


def found_root(root: str | None):
    """retrieval.roots.find_root, its failure one line (every command alike: `status` and `serve`
    said `[Errno 2] No such file or directory` from a removed directory)."""
    from .roots import find_root
    from .store.layout import StoreError, store_dir

    try:
        found = find_root(root)
        store_dir(found.path)  # a RETRIEVAL_INDEX_DIR it cannot use: refused by every command alike
        return found
    except OSError as exc:  # the current directory was removed
        if isinstance(exc, FileNotFoundError) and (root is None or not os.path.isabs(root)):
            raise _fail("the current directory no longer exists (cd somewhere, or give --root)")
        raise _fail(exc)
    except StoreError as exc:
        raise _fail(exc)


def _root(root: str | None, builds: bool = False, searches: bool = False) -> str:
    """The root a command works on (see retrieval.roots). `builds`: the command may index it, so a
    home directory or `/` that nothing but the current directory chose is refused."""
    from .discover import root_problem
    from .output import shown_path
    from .roots import too_broad

    found = found_root(root)
    problem = root_problem(found.path, shown_path(found.path))
    if problem:
        # Said once, by every command alike (`index` named one retriever, serve/mcp/eval were usage errors);
        # escaped, or a newline in the name cut the message at it.
        raise _fail(problem)
    refusal = too_broad(found) if builds else None
    if refusal:
        raise UserError(refusal)
    if searches:
        _note_index_above(found)
    if builds and found.reason == "cwd":
        # No index at or above it and no repository around it: the index about to be built covers
        # this directory only, which from a subdirectory of a plain folder is easy to miss.
        click.echo(f"note: no repository or index at or above {shown_path(found.path)}: indexing this directory "
                   "(--root chooses another)", err=True)
    return found.path


def _note_index_above(found) -> None:
    """The note for a plain directory's own index when the project's index above holds it too."""
    from .output import shell_word, shown_path
    from .roots import index_above

    above = index_above(found)
    if above is not None:
        click.echo(f"note: the index of {shown_path(found.path)} answers here; the one of {shown_path(above)} above "
                   f"it holds it too (--root {shell_word(above)} searches that; `retrieval clean` here removes this "
                   "one)", err=True)


# The retriever `query` uses unless --retriever names one: set it once (in the shell, an agent's
# environment, the MCP server's) instead of on every call.
ENV_RETRIEVER = "RETRIEVAL_RETRIEVER"
EMBED_MODEL_HELP = ("Embedding model of the dense retrievers: a local directory, or a name already in the local "
                    "Hugging Face cache (never downloaded). Default: the bundled all-MiniLM-L6-v2. Given "
                    "once, the index remembers it (as RETRIEVAL_EMBED_MODEL would set it); another model means another index.")


def _use_embed_model(model: str | None, retriever_name: str) -> None:
    if model is not None and not model.strip():  # `--embed-model "$UNSET"` was ignored without a word
        raise click.BadParameter("is empty (an unset variable?): give a model directory or name, or leave the "
                                 "option out", param_hint="'--embed-model'")
    from .index_options import embeds
    from .retrievers.base import REGISTRY

    if model and retriever_name in REGISTRY and not embeds(retriever_name):
        # Ignored, a model directory mistyped (or meant for another command) looked taken.
        dense = ", ".join(name for name in _retriever_names() if embeds(name))
        raise click.UsageError(f"--embed-model applies to the dense retrievers ({dense}), not to {retriever_name}")
    if model:
        # A directory is remembered by the index as an absolute path (later commands run elsewhere).
        os.environ["RETRIEVAL_EMBED_MODEL"] = os.path.abspath(model) if os.path.isdir(model) else model


@click.group(cls=ShellGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="retrieval")
def main():
    """Offline code retrieval: ranked path:start-end hits for a natural-language or symbol query.

    \b
    Examples:
      retrieval query how are routes registered      # builds the index on first use
      retrieval query APIRouter --snippet-lines 20   # a symbol: its definition first
      retrieval query - --json < bug-report.txt      # a whole report as the query

    Without --root, commands use the nearest directory above with an index, else the repository
    root, else the current directory; paths in results are relative to that root.
    """
    from . import streams
    from .streams import refuse_closed_stdout, tolerant_output

    streams.COMMAND_LINE = True
    tolerant_output()  # (`python -m retrieval.cli`, and a server running the command)
    refuse_closed_stdout(click.get_current_context().invoked_subcommand)


def _skip_counts(skipped: dict) -> str:
    """`1 binary, 2 ignored`: what a build left out, by reason."""
    return ", ".join(f"{n} {reason}" for reason, n in sorted(skipped.items()))


def _describe_skips(skipped: dict) -> str:
    return f" (skipped: {_skip_counts(skipped)})" if skipped else ""


def _report(line: str) -> None:
    """One line of what `index` built, on stdout. A reader gone (`index | head -1`) stops the output,
    not the build: it ended the command there with exit 0, the other retrievers left stale."""
    try:
        click.echo(line)
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        from .streams import discard_stdout

        discard_stdout()


def _bm25(value: str | None):
    """'K1,B' -> (k1, b)."""
    if value is None:
        return None
    if not value.strip():  # `--bm25 "$UNSET"` was ignored without a word, like an empty --include
        raise click.BadParameter("is empty (an unset variable?): give K1,B such as 0.9,0.4, or leave the option out",
                                 param_hint="'--bm25'")
    try:
        k1, b = (float(part) for part in value.split(","))
    except ValueError:
        raise click.BadParameter("expected K1,B such as 0.9,0.4", param_hint="'--bm25'")
    # k1 scales term frequency and b the length normalisation: outside these ranges scores turn
    # negative, infinite or NaN, and the ranking with them.
    if not (0 <= k1 <= 100 and 0 <= b <= 1):  # also false for NaN
        raise click.BadParameter(f"{value!r}: K1 must be between 0 and 100 and B between 0 and 1",
                                 param_hint="'--bm25'")
    return (k1, b)


@main.command(short_help="Build or refresh the index.")
@root_option
@click.option("--retriever", "retriever_name", default="all", show_default=True,
              type=RetrieverName(),
              help="The retriever to index for, or 'all' for every installed one (lexical+ctx is built by name only).")
@click.option("--force", is_flag=True, help="Rebuild from scratch (remembered filters are kept).")
@click.option("--embed-model", default=None, metavar="DIR|NAME", help=EMBED_MODEL_HELP)
@click.option("--include", multiple=True, metavar="GLOB", callback=lambda ctx, param, globs: _no_empty_glob(globs),
              help="Index only files matching GLOB (repeatable). Remembered for later refreshes.")
@click.option("--exclude", multiple=True, metavar="GLOB", callback=lambda ctx, param, globs: _no_empty_glob(globs),
              help="Skip files and directories matching GLOB (repeatable). Remembered for later refreshes.")
@click.option("--max-file-bytes", type=ByteSize(), default=None, metavar="N",
              help="Per-file size cap in bytes (default 1 MB; 500K, 2M accepted). Remembered for later refreshes.")
@click.option("--profile", type=click.Choice(["code", "prose"]), default=None,
              help="code (default): code-aware terms and ranking. prose: a collection of English documents, "
                   "one per file (Lucene's English analyzer, BM25 k1=0.9 b=0.4). Remembered.")
@click.option("--bm25", default=None, metavar="K1,B",
              help="BM25 parameters of the BM25 retrievers (lexical, lexical+ctx, treesitter, pi-serini; "
                   "remembered), e.g. 0.9,0.4.")
@click.option("--reset-filters", is_flag=True,
              help="Forget the remembered --include/--exclude/--max-file-bytes/--profile/--bm25/--embed-model "
                   "(and RETRIEVAL_TURBOVEC_BITS, RETRIEVAL_CONTEXT_MODEL) and index with the defaults (or with the "
                   "ones given now).")
@click.option("--contextualizer", type=click.Choice(["auto", "offline", "anthropic"]), default="auto",
              show_default=True, help="lexical+ctx only: who writes chunk contexts (auto: an Anthropic model "
                                      "when installed and ANTHROPIC_API_KEY is set, else offline).")
@click.option("--yes", is_flag=True, help="lexical+ctx: accept the estimated model cost above the threshold.")
@click.option("--dry-run", is_flag=True, help="lexical+ctx: print the model cost estimate, send nothing.")
@click.option("--max-chunks", type=click.IntRange(min=0), default=None, metavar="N",
              help="lexical+ctx: send at most N chunks to the model this run (the rest later).")
def index(root, retriever_name, force, embed_model, include, exclude, max_file_bytes, profile, bm25, reset_filters, contextualizer,
          yes, dry_run, max_chunks):
    """Build or refresh the index of the root (--root DIR).

    --include, --exclude, --max-file-bytes, --profile and --bm25 persist: later refreshes (and the
    ones `query` makes) use them; giving one again replaces only that one; --reset-filters drops them all.
    """
    from . import service
    from .index_options import options_given
    from .notes import remembered_note
    from .retrievers.base import get_spec, not_installed

    root = _root(root, builds=True)
    progress = _progress_sink()
    _use_embed_model(embed_model, retriever_name)
    given = bool(include or exclude or max_file_bytes or profile or bm25 or reset_filters)
    bm25_values = _bm25(bm25)
    context_flags = [flag for flag, used in (("--dry-run", dry_run), ("--yes", yes), ("--max-chunks", max_chunks is not None),
                                             ("--contextualizer", contextualizer != "auto")) if used]
    if context_flags and retriever_name != "lexical+ctx":
        # Ignored, a --dry-run would have built every index for real.
        raise click.UsageError(f"{', '.join(context_flags)} applies to --retriever lexical+ctx only")
    outside_built: list[str] = []
    hybrid_existed = service.is_built(root, "hybrid")
    lexical_existed = service.is_built(root, "lexical")
    if retriever_name == "all":
        targets = service.available_retrievers()
        # One built on request is kept current with the others (from its cached contexts and the
        # offline ones: only `index --retriever lexical+ctx` asks a model); it was left stale.
        outside_built = [name for name in service.retrievers_outside_all() if service.is_built(root, name)]
        targets += [(name, get_spec(name).unavailable_reason()) for name in outside_built]
    else:
        try:
            spec = get_spec(retriever_name)
        except ValueError as exc:
            raise click.UsageError(str(exc))
        if bm25 and not spec.bm25:
            bm25_names = ", ".join(n for n in _retriever_names() if get_spec(n).bm25)
            raise click.UsageError(f"--bm25 applies to the BM25 retrievers ({bm25_names}), not to {retriever_name}")
        targets = [(retriever_name, spec.unavailable_reason())]
    lexical_failed = False
    others_failed: list[str] = []
    single = retriever_name != "all"
    built: list[str] = []
    said: set[str] = set()  # the same remembered filters are said once, not once per retriever
    checked_include = False
    from .output import counted, shell_word, shown_path

    shown_include = " ".join(f"--include {shell_word(g)}" for g in include)
    # Those not installed are said in one line, with one install command (as `query --retriever all`
    # says them): a core-only installation printed four long install commands on every `index`.
    uninstalled = [name for name, reason in targets if reason and get_spec(name).missing()]
    for name, reason in targets:
        if reason:
            if single:
                raise UserError(reason)
            if name not in uninstalled:
                click.echo(f"{name}: skipped ({reason})", err=True)  # a diagnostic: stdout says what was built
            elif name == uninstalled[0]:
                click.echo(not_installed(uninstalled), err=True)
            continue
        # Each option given now replaces its remembered value; the others stay remembered (and are said).
        remembered = None if reset_filters else service.remembered_options(root, name)
        options = None
        if given:
            options = options_given(remembered, include=include, exclude=exclude, max_bytes=max_file_bytes,
                                    profile=profile, bm25=bm25_values)
        if remembered is not None:
            kept = replace(remembered, include=() if include else remembered.include,
                           exclude=() if exclude else remembered.exclude,
                           max_bytes=None if max_file_bytes else remembered.max_bytes,
                           profile="code" if profile else remembered.profile,
                           bm25=None if bm25 else remembered.bm25)
            note = remembered_note(kept, "index")
            if note and note not in said:
                said.add(note)
                click.echo(f"note: {note}", err=True)
        if (include or exclude or max_file_bytes) and not checked_include:
            checked_include = True
            if not service.admits_a_file(root, options):
                # Refused before anything is written: a build would replace a good index with an
                # empty one and remember the pattern, and every later query would blame the tree.
                if max_file_bytes and service.admits_a_file(root, replace(options, max_bytes=None)):
                    # (`--max-file-bytes 10`, thinking in kilobytes: an empty index, remembered)
                    raise UserError(f"--max-file-bytes {max_file_bytes} leaves no indexable file under "
                                    f"{shown_path(root)}: each is larger (the limit is in bytes); nothing was changed")
                if include and not service.admits_a_file(root, replace(options, exclude=())):
                    hint = ""
                    slashed = tuple(g.replace("\\", "/") for g in include)
                    if slashed != include and service.admits_a_file(root, replace(options, include=slashed)):
                        # Windows' separator: a backslash escapes the next character in a glob.
                        hint = " (directories are separated by /: " + " ".join(
                            f"--include {shell_word(g)}" for g in slashed) + ")"
                    raise UserError(f"{shown_include} matches no indexable file under {shown_path(root)}; "
                                    f"nothing was changed{hint}")
                if service.admits_a_file(root, replace(options, exclude=())):  # not an empty tree
                    # The excludes leave nothing (an --include matching files was blamed). Either
                    # side may be a remembered one, which the line did not name.
                    shown_exclude = " ".join(f"--exclude {shell_word(g)}" for g in options.exclude)
                    includes = " ".join(f"--include {shell_word(g)}" for g in options.include)
                    if not exclude:
                        shown_exclude = f"the remembered {shown_exclude}"
                    if include:
                        met = f" that {includes} matches"
                    elif options.include:
                        met = f" with the remembered {includes}"
                    else:
                        met = ""
                    reset = " (`--reset-filters` drops it)" if not (exclude and (include or not options.include)) else ""
                    raise UserError(f"{shown_exclude} leaves no indexable file under {shown_path(root)}{met}{reset}; "
                                    "nothing was changed")
        try:
            if name == "lexical+ctx" and single:  # the only way a model is asked (cost guard first)
                from .contextual.command import ContextOptions, refresh as refresh_ctx

                report = refresh_ctx(root, options=options, force=force, progress=progress, context=ContextOptions(
                    mode=contextualizer, yes=yes, dry_run=dry_run, max_chunks=max_chunks))
                if report is None:
                    continue
            else:
                report = service.refresh(root, name, options=options, force=force, progress=progress)
        except _expected_errors() as exc:
            progress.close()
            if single or name == "lexical":
                lexical_failed = True
                click.echo(f"error: {name}: {str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__}", err=True)
                if single:
                    sys.exit(1)
                break  # what stopped lexical (the root, the store) stops every other retriever too
            else:
                click.echo(f"{name}: failed ({str(exc).splitlines()[0]})", err=True)  # a diagnostic: stderr
                others_failed.append(name)
            continue
        progress.close()
        built.append(name)
        if report.status == "indexed":
            # Files with nothing but blank lines are counted apart: the index holds no chunk of theirs.
            files = len(report.reprocessed) - report.empty
            aside = [f"and {report.empty} empty"] if report.empty else []
            if report.embedded is not None and report.embedded < report.new_chunks:
                # A resumed build, or vectors another index or the cache had: say it did not redo them.
                aside.append(f"{report.embedded} embedded, {report.new_chunks - report.embedded} already had vectors")
            if (report.new_chunks, files) != (report.chunks, report.files):  # a refresh: the whole index too
                aside.append(f"{counted(report.chunks, 'chunk')}, {counted(report.files, 'file')} in the index")
            _report(f"{name}: indexed {counted(report.new_chunks, 'chunk')} from {counted(files, 'file')}"
                       + (f" ({'; '.join(aside)})" if aside else "") + f" in {report.seconds:.1f}s"
                       + _describe_skips(report.skipped))
        else:
            _report(f"{name}: up to date ({counted(report.chunks, 'chunk')}, {counted(report.files, 'file')})"
                       + _describe_skips(report.skipped))
        if (report.unreadable or report.unapplied) and name == built[0]:  # the same walk for every retriever: said once
            click.echo(f"note: {service.unreadable_note(report)}", err=True)
        if include and not report.files and name == built[0]:
            # The walk found files, but none held text (binaries by content, empty files).
            click.echo(f"note: {shown_include} matched no indexable file; `retrieval index --reset-filters` drops it",
                       err=True)
    if lexical_failed:
        sys.exit(1)
    if "hybrid" in built and not hybrid_existed and not os.environ.get(ENV_RETRIEVER):
        # `query` stays lexical unless told: its automatic refresh after a large checkout would
        # otherwise embed every changed chunk before answering. Said once, when the index is first
        # built, so it gets used (said on every `index` it was noise).
        click.echo("note: `retrieval query` uses lexical unless told: `--retriever hybrid` (or "
                   f"{ENV_RETRIEVER}=hybrid) adds the embeddings", err=True)
    if not single and not lexical_existed:
        for name in service.retrievers_outside_all():
            if name not in outside_built:
                # Said so a user who wanted every index knows this one is built on request only; once,
                # at the first build (said on every `index` it was noise).
                click.echo(f"{name}: not part of all (build it on its own: retrieval index --retriever {name})",
                           err=True)
    if others_failed:
        # The others were built (as `make -k` goes on), but a script must be able to tell: a
        # retriever that failed is not one that was skipped for a missing extra.
        click.echo(f"error: not built: {', '.join(others_failed)} (see above); the others are up to date", err=True)
        sys.exit(1)


def _read_query(words: tuple[str, ...]) -> str:
    # Unquoted words are one query, as `git grep` takes them; a lone '-' reads stdin.
    if len(words) > 1 and "-" in (words[0], words[-1]):
        # (`echo APIRouter | retrieval query - extra` searched for "- extra", stdin unread; a dash
        # between two words may be one, `a - b`)
        raise click.UsageError("'-' reads the query from stdin and takes no other words: give `-` alone, "
                               "or a query that starts with a dash after `--` (`query -- '- item'`)")
    query = " ".join(words)
    if query == "-":
        # Bytes, not text: a pasted log may hold bytes that are not UTF-8; they match nothing anyway.
        from .streams import MAX_QUERY_BYTES, read_stdin_query

        data = read_stdin_query()
        if len(data) > MAX_QUERY_BYTES:
            raise click.UsageError(f"the query on stdin is over {MAX_QUERY_BYTES:,} bytes: give the part that "
                                   "says what to look for")
        from .read import decode

        # As a file is read: a byte-order mark (Notepad's) dropped, UTF-16 behind one; else lossily
        # as UTF-8 (not read.decode_shown: `\xff\xfe` before UTF-8 words is no UTF-16 to read).
        text = decode(data)[0]  # "" for a byte-order mark alone: an empty query, not its bytes
        if text is None and b"\x00" in data:
            # (a NUL is no text to search for, and made ASCII read as "not UTF-8")
            click.echo("note: the query on stdin holds NUL bytes (UTF-16 without a byte-order mark, or binary?): "
                       "they read as spaces", err=True)
            data = data.replace(b"\x00", b" ")
            text = decode(data)[0]
        if text is None:
            click.echo("note: the query on stdin is not UTF-8 (nor mostly ASCII): its other bytes read as \ufffd",
                       err=True)
        query = text if text is not None else data.decode("utf-8", "replace").removeprefix("\ufeff")
        query = query.rstrip("\r\n")  # the newline `echo` or a file ends with is not part of the query
    else:
        # An argument that is not UTF-8 arrives with lone surrogates, which cannot be printed back.
        query = query.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if not query.strip():
        raise click.UsageError("the query is empty")
    return query


FILES_MAX_DEPTH = 2000  # hits `--files` reads at most to find its distinct files


def _note_path_words(words: tuple[str, ...], root: str, path_globs: tuple[str, ...]) -> None:
    """`retrieval query trusted proxies binding/`, as rg takes `PATTERN PATH`: the last words name
    files or directories here, and are read as words of the query; said, with the filter that
    searches only there (not for a path outside the root, which no filter finds, nor when a
    --path is given)."""
    if len(words) < 2 or path_globs:
        return
    named = []
    real, given = os.path.realpath(root) + os.sep, os.path.abspath(root).rstrip(os.sep) + os.sep
    for word in reversed(words[1:]):
        # Inside the root both as written and resolved: --path reads it as written (a link out of
        # the root, or into it from outside, names no file there).
        if not (("/" in word or os.path.isfile(word)) and os.path.exists(word)
                and (os.path.realpath(word) + os.sep).startswith(real)
                and (os.path.abspath(word) + os.sep).startswith(given)):
            break
        named.insert(0, word)
    if named:
        from .output import shell_word

        # (quoted on one line, control and bidi characters escaped, as every note quotes a path)
        filters = " ".join(f"--path {shell_word(_path_filter(w, root))}" for w in named)
        click.echo(f"note: {', '.join(map(shell_word, named))} {'was' if len(named) == 1 else 'were'} read as "
                   f"{'a word' if len(named) == 1 else 'words'} of the query; to search only there: {filters}",
                   err=True)


def _path_filter(word: str, root: str) -> str:
    """The --path that searches only the file or directory `word` names (from here, as typed): the
    word as written when nothing in it is read otherwise; else the path to what it names (through
    links, which are not indexed) from here, or from the root's own path when here is outside the
    root, escaped below the root only (`a[1].py` as a glob also matched `a1.py`; escaped whole, a
    root named `t[1]` named nothing)."""
    from .ignore import literal_glob

    shown = word if os.path.isabs(word) or word.startswith("./") else "./" + word
    slash = "/" if word.endswith("/") else ""
    target, real_root = os.path.realpath(word), os.path.realpath(root)
    here = os.path.realpath(os.getcwd())
    from_here = here == real_root or here.startswith(real_root + os.sep)  # read from here (see _rooted_globs)
    # As written when nothing in it is read otherwise: no glob character, no link on the way (links
    # are not indexed: the file it leads to is), and read from here.
    if literal_glob(shown) == shown and os.path.abspath(word).rstrip(os.sep) == target and from_here:
        return shown
    if from_here:
        rel = os.path.relpath(target, here)
        return ("" if _climbs(rel) else "./") + literal_glob(rel) + slash
    return os.path.join(real_root, literal_glob(os.path.relpath(target, real_root))) + slash


def _climbs(rel: str) -> bool:
    """Whether a relative path starts by going up (`..`, `../x`; not a name like `..d`)."""
    return rel == ".." or rel.startswith(".." + os.sep)


def _distinct_files(hits):
    """First (best) hit of each file, ranks renumbered."""
    seen: set[str] = set()
    out = []
    for hit in hits:
        if hit.source_path not in seen:
            seen.add(hit.source_path)
            out.append(replace(hit, rank=len(out) + 1))
    return out


# Under --max-tokens the echoed query takes at most this fraction of the budget: an agent that
# pasted a bug report as the query got it back in full and one hit, the report eating the budget.
ECHO_SHARE = 10
ECHO_MAX_TOKENS = 5000  # --json's echo of a query with no --max-tokens: a whole issue, not a whole log


def echo_within(query: str, tokens: int) -> str:
    """The query as --json echoes it under a budget: whole when its echo costs at most `tokens`,
    else its head and an ellipsis, priced as printed (escapes included)."""
    from .output import printed_tokens

    if printed_tokens(_json(query)) <= tokens:
        return query
    keep = min(len(query), tokens * 4)
    while keep > 0 and printed_tokens(_json(query[:keep] + "\u2026")) > tokens:
        keep = keep * 3 // 4
    return query[:keep] + "\u2026"


def _frame_lines(query: str, hits) -> dict:
    """{docid: the line of a stack frame the query pastes} of the hits holding one (the innermost),
    which their snippets and --vimgrep show first: a PHP trace's hit showed the line holding the
    most of its words, not the frame's line in it."""
    from .ranking import frame_mentions, frame_spots, paths_by_name

    frames = frame_mentions(query)
    if not frames:
        return {}
    spots = frame_spots(frames, paths_by_name(h.source_path for h in hits))
    lines = {}
    for h in hits:
        inside = sorted((depth, line) for line, _function, depth in spots.get(h.source_path, ())
                        if h.start_line is not None and h.start_line <= line <= (h.end_line or 0))
        if inside:
            lines[h.docid] = inside[0][1]
    return lines


def _match_lines(hit, matcher) -> list[int]:
    """The lines of a hit's span its -e patterns matched."""
    return sorted(n for n in matcher.matching_lines(hit.source_path) if hit.start_line <= n <= hit.end_line)


def _each_match(hits, matcher, wanted: bool) -> dict | None:
    """{docid: matched lines} of the hits with a span, for --vimgrep to show each; None unless `wanted`."""
    if not wanted or matcher is None:
        return None
    return {h.docid: _match_lines(h, matcher) for h in hits if h.start_line is not None and h.end_line is not None}


def _hit_json(hit, snippets: dict | None, truncated: set = frozenset(), matcher=None, moved: bool = False) -> dict:
    row = {
        "rank": hit.rank,
        "path": hit.source_path,
        "start_line": hit.start_line,
        "end_line": hit.end_line,
        "score": round(hit.score, 6),
        "docid": hit.docid,
        "context": hit.context,
        "confidence": hit.confidence,
        "language": hit.language,
        "kind": hit.kind,
        "symbol": hit.symbol,
    }
    if hit.extra:  # `--retriever all`: provenance, agreement, ranks
        row.update(hit.extra)
    if matcher is not None and hit.start_line is not None and hit.end_line is not None:
        # The lines -e matched (rg's and ColGREP's JSON say them): an agent reads those first.
        row["match_lines"] = _match_lines(hit, matcher)
    if snippets is not None:
        snippet = snippets.get(hit.docid)
        row["snippet"] = snippet.text if snippet else ""
        row["snippet_start"] = snippet.start_line if snippet else None
        row["snippet_end"] = snippet.end_line if snippet else None
        if snippet and snippet.stale:
            row["stale"] = True
        if hit.docid in truncated or (snippet and snippet.cut_lines):
            row["truncated"] = True  # not all of its lines: cut to fit --max-tokens, or a long line shortened
    elif moved:
        row["stale"] = True
    return row


@main.command(short_help="Search the index (built on first use).")
@click.argument("words", nargs=-1, required=True, metavar="QUERY...")
@root_option
@click.option("--retriever", "retriever_name", cls=EnvOption, default="lexical", show_default=True,
              envvar=ENV_RETRIEVER, show_envvar=True, type=RetrieverName(),
              help="The retriever to search with, or 'all': every indexed one's hits merged, with provenance. "
                   f"{ENV_RETRIEVER} sets another default (e.g. `hybrid`, once its index is built).")
@click.option("--embed-model", default=None, metavar="DIR|NAME", help=EMBED_MODEL_HELP)
@click.option("--top-k", "-k", type=click.IntRange(min=1), default=DEFAULT_TOP_K, show_default=True, metavar="N",
              help="How many hits to return (with --max-tokens and no --top-k: as many as fit, at most 100).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object with all results.")
@click.option("--jsonl", "as_jsonl", is_flag=True, help="One JSON object per hit, one per line.")
@click.option("--snippet-lines", type=click.IntRange(min=0), default=0, metavar="N", help="Include up to N lines of each hit: those holding the most of the query's words (default 0: no snippets).")
@click.option("--expand", type=_Expand(), default=None, metavar="N|scope",
              help="Snippets of each hit with N lines before and after it, or its whole enclosing scope "
                   "(`scope`: the class around a method; treesitter hits) (implies snippets).")
@click.option("--stale-ok", is_flag=True, help="Do not refresh a stale index first.")
@click.option("--path", "path_globs", multiple=True, metavar="GLOB", callback=lambda ctx, param, globs: _no_empty_glob(globs), help="Only hits whose path matches GLOB, read as in .gitignore (with a slash inside: from the root; without: at any depth; ./x or an absolute path: from here; braces are alternatives: '*.{ts,tsx}'; repeatable: any of them, a leading ! leaves out).")
@click.option("--lang", type=LanguageName(), multiple=True, metavar="LANG",
              help="(Repeatable: any of them.) " + _language_help())
@click.option("--kind", type=click.Choice(["code", "docs", "config"], case_sensitive=False), multiple=True,
              help="Only hits in files of this kind (repeatable: any of them).")
@click.option("-e", "--regexp", "patterns", multiple=True, metavar="PATTERN",
              help="Only hits with a line matching PATTERN, a regular expression (Python's re, matched within "
                   "a line as grep does; repeatable: any of them), still ranked by QUERY: "
                   "-e 'except\\b' 'where a failed upload is retried'.")
@click.option("-F", "--fixed-strings", is_flag=True, help="-e patterns are literal strings, not regular expressions.")
@click.option("-i", "--ignore-case", is_flag=True, help="-e patterns match in any case (QUERY's words always do).")
@click.option("--files", "files_only", is_flag=True, help="Ranked distinct files, each with its best span.")
@click.option("-l", "--files-with-matches", "paths_only", is_flag=True,
              help="Only the paths of the ranked distinct files, one a line (as rg -l); with --json or --jsonl, "
                   "as --files.")
@click.option("-0", "--null", "null_paths", is_flag=True,
              help="With -l: each path ends in a NUL byte instead of a newline, written exactly (not escaped), "
                   "for xargs -0.")
@click.option("--vimgrep", is_flag=True,
              help="One line per hit as path:line:column:text, its line holding the most of the query's words "
                   "(vim's :cexpr, an editor's quickfix list; with -e, each line a pattern matched, one under "
                   "--max-tokens; with --snippet-lines or --expand, each line shown).")
@click.option("--max-tokens", type=click.IntRange(min=1), default=None, metavar="N",
              help="Return the hits that fit this many tokens, snippets included (implies snippets): whole "
                   "hits while they fit, then the next one's snippet cut to the room left (its lines holding the query's "
                   "words).")
@click.option("--min-confidence", type=click.Choice(["low", "medium", "high"]), default=None,
              help="Only hits at this confidence or above (possibly none).")
def query(words, root, retriever_name, embed_model, top_k, as_json, as_jsonl, snippet_lines, expand, stale_ok, path_globs, lang,
          kind, patterns, fixed_strings, ignore_case, files_only, paths_only, null_paths, vimgrep, max_tokens,
          min_confidence):
    """Search the repository for QUERY: words (quoted or not) or a symbol; '-' reads the query from stdin."""
    from . import service
    from .notes import remembered_note

    if as_json and as_jsonl:
        raise click.UsageError("choose one of --json and --jsonl")
    if null_paths and (not paths_only or as_json or as_jsonl):
        raise click.UsageError("-0 ends the paths -l prints: give it with -l, and not with --json or --jsonl")
    if vimgrep and (as_json or as_jsonl or paths_only):
        raise click.UsageError("--vimgrep is an output format of its own: not with --json, --jsonl or -l")
    if paths_only and (snippet_lines or expand is not None):
        # (they were dropped without a word: the lines asked for never came)
        raise click.UsageError("-l prints paths alone: not with --snippet-lines or --expand (--files shows "
                               "each file's best span, with them)")
    # With -e and no lines asked for, --vimgrep shows every line a pattern matched (as rg does);
    # under --max-tokens, one line a hit (every line priced the first hit out of the budget).
    each_match = vimgrep and bool(patterns) and not snippet_lines and expand is None and not max_tokens
    if vimgrep and not snippet_lines and expand is None:
        snippet_lines = 1  # the hit's line: the one holding the most of the query's words
    if (fixed_strings or ignore_case) and not patterns:
        raise click.UsageError("-F applies to -e patterns, and none is given" if fixed_strings else
                               "-i applies to -e patterns, and none is given (QUERY's words match in any case already)")
    files_only = files_only or paths_only
    text = _read_query(words)
    root = _root(root, builds=True, searches=True)
    _note_path_words(words, root, path_globs)
    _use_embed_model(embed_model, retriever_name)
    from .patterns import PatternError

    try:
        filters = service.QueryFilter(paths=_rooted_globs(path_globs, root), typed_paths=path_globs,
                                      language=lang, kind=kind, patterns=patterns, fixed_strings=fixed_strings, ignore_case=ignore_case)
    except PatternError as exc:
        raise click.UsageError(str(exc)) from None
    budget_decides = bool(max_tokens) and click.get_current_context().get_parameter_source("top_k").name == "DEFAULT"
    if budget_decides:
        top_k = 100  # the budget, not the default count, decides how many hits fit
    progress = _progress_sink()
    try:
        search = service.search
        if retriever_name == "all":  # every usable retriever, consolidated (retrieval.multi)
            from .multi import search_all as search
        asked = top_k
        notes: list[str] = []
        unlooked = stale_ok  # (the rounds below --files asks for take the first round's snapshot)
        while True:
            result = search(
                root, text, retriever=retriever_name, top_k=asked, filters=filters or None,
                stale_ok=stale_ok, min_confidence=min_confidence, progress=progress,
            )
            notes += [note for note in result.notes if note not in notes]
            # --files wants top_k distinct files: a pasted report's answer holds several chunks of
            # its best files, so top_k hits can name fewer; ask deeper until they do or run out.
            if (not files_only or len(result.hits) < asked or asked >= FILES_MAX_DEPTH
                    or len({h.source_path for h in result.hits}) >= top_k):
                break
            asked = min(asked * 4, FILES_MAX_DEPTH)
            # The first round checked the index (and refreshed it): asking the same snapshot deeper
            # needs no second stat of every file (190 ms a round at 50,000 files).
            stale_ok = True
        result.notes[:] = notes  # a first round's note (an older snapshot answered) still applies
    except _expected_errors() as exc:
        progress.close()
        raise _fail(exc)
    progress.close()
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    noted = "lexical" if retriever_name == "all" else retriever_name  # all-mode: the lexical index speaks for it
    # (why a query has no hit, retrieval.notes.no_hits, is among the result's notes)
    remembered = service.remembered_options(root, noted)
    note = remembered_note(remembered, "query")
    if note:
        click.echo(f"note: {note}", err=True)
    # The filters an earlier `index` left, which keep files out of every answer (not all-mode's: the
    # lexical index speaks for it, its hits come from all): --json says them, and a budget prices them.
    index_filters = None
    if note and retriever_name != "all" and as_json:
        from .notes import kept_filters

        index_filters = kept_filters(remembered)
    told: list[str] = []  # the notes on what is printed, not on the search: --json's notes hold them too

    def say(note: str) -> None:
        click.echo(f"note: {note}", err=True)
        told.append(note)

    hits = result.hits
    matcher = result.matcher  # a pattern's lines, which snippets and --vimgrep show first
    if files_only:
        hits = _distinct_files(hits)[:top_k]
    snippets = None
    cut_scopes: set[str] = set()  # the hits whose scope shows only the lines around them
    terms, define = frozenset(), ""
    bare_paths = paths_only and not (as_json or as_jsonl)  # -l's text: no lines shown, none priced
    if (snippet_lines or expand is not None or max_tokens) and not bare_paths:
        from .snippets import MAX_SCOPE_LINES, defined_name, read_snippet
        from .text import tokenize

        # The lines of a long hit that --snippet-lines shows, or --max-tokens cuts it to: those
        # holding the query's words; and a line too long to show whole, around its first of them.
        terms = focus = frozenset(tokenize(text))
        define = defined_name(text)
        snippets = {}
        read: dict = {}  # each file read, hashed and split once for all its hits
        scope_lines = snippet_lines or MAX_SCOPE_LINES
        frame_lines = _frame_lines(text, hits) if not matcher else {}
        for h in hits:
            shown = h
            if expand == "scope" and h.scope and not (snippet_lines and snippet_lines < h.end_line - h.start_line + 1):
                # (fewer lines asked for than the hit has: its lines holding the query's words, as
                # without `scope`; centred on the hit they showed its first lines, words or not)
                first, last = h.scope
                if last - first + 1 > scope_lines:
                    # A scope longer than the lines asked for: those of it around the hit, not its first.
                    margin = max(0, (scope_lines - (h.end_line - h.start_line + 1)) // 2)
                    first = max(first, min(h.start_line - margin, last - scope_lines + 1))
                    last = first + scope_lines - 1
                    if not snippet_lines:
                        cut_scopes.add(h.docid)
                shown = replace(h, start_line=first, end_line=last)  # the snippet's span only
            first = matcher.first_in(h.source_path, h.start_line, h.end_line) if matcher and h.start_line else \
                frame_lines.get(h.docid)
            snippet = read_snippet(root, shown, expand=expand if isinstance(expand, int) else 0,
                                   max_lines=snippet_lines or None, indexed=result.indexed.get(h.source_path),
                                   focus=focus, define=define, files=read, anchor=first)
            if snippet is not None:
                snippets[h.docid] = snippet
        if expand == "scope" and hits and not any(h.scope for h in hits) and retriever_name != "treesitter" \
                and not any("treesitter" in h.extra.get("provenance", ()) for h in hits):
            # Only tree-sitter chunks know their scope: without a word, `scope` looked like it did nothing.
            from .extras import install_hint, missing_modules

            where = (f"its extra is not installed: {install_hint('treesitter')}" if missing_modules("treesitter")
                     else "--retriever treesitter")
            say("--expand scope: no hit has an enclosing scope (scopes come from the treesitter "
                f"retriever's chunks: {where}); each shows its own lines")
    truncated: set = set()
    echoed = text
    early = len(told)  # the notes said before --max-tokens prices the envelope holding them
    spare = None  # the tokens the budget leaves after the hits, for the notes said after them
    if max_tokens:
        from .output import counted, printed_tokens, text_lines, within_budget

        def note_cost(note: str) -> int:  # as printed among the notes: `"...", ` (the key's cost, if first)
            return printed_tokens(_json(note)) + 1 + (0 if result.notes or told[:early] else 4)

        def unfitted(n: int) -> str:
            return (f"{counted(n, 'more hit')} did not fit in --max-tokens {max_tokens} "
                    f"(a larger budget{'' if bare_paths else ', or fewer lines around each hit,'} shows them)")

        if as_json or as_jsonl:  # priced as printed: its fields, escapes and all
            def render(h, shown, cut):
                row = _hit_json(h, shown, cut, matcher)
                if as_jsonl and result.stale:  # each row says it, as printed below
                    row["stale"] = True
                return _json(row)
        elif bare_paths:  # its path alone
            from .output import path_from_here, shown_path

            def render(h, shown, cut):
                return shown_path(path_from_here(root, h.source_path))
        elif vimgrep:  # its lines, each with its path, line and column
            from .output import vimgrep_lines

            def render(h, shown, cut):
                return "\n".join(vimgrep_lines([h], shown, terms, root, matcher.patterns if matcher else None, cut,
                                                _each_match([h], matcher, each_match), define=define))
        else:  # its header, and each line with its number
            def render(h, shown, cut):
                return "\n".join(text_lines([h], shown, cut))

        def cost(h, snippet, cut):
            shown = {h.docid: snippet} if snippet is not None else {}
            return printed_tokens(render(h, shown, {h.docid} if cut else ())) + 1  # and its separator

        envelope = 0  # what --json prints around the results
        if as_json:
            around = {"query": text, "retriever": result.retriever, "results": []}
            if result.stale:  # printed after the results, and priced with the envelope
                around["stale"] = True
            if result.notes or told:  # the notes so far (those said once the hits are fitted: see below)
                around["notes"] = result.notes + told
            if index_filters is not None:
                around["index_filters"] = index_filters
            envelope = printed_tokens(_json(around)) + 1
            head = echo_within(text, max_tokens // ECHO_SHARE)
            if head != text:
                shorter = printed_tokens(_json(dict(around, query=head, query_truncated=True))) + 1
                if shorter < envelope:  # the flag costs tokens too: a cut saving none only loses the query
                    echoed, envelope = head, shorter
        asked = len(hits)
        anchors = {h.docid: matcher.first_in(h.source_path, h.start_line, h.end_line) for h in hits
                   if h.start_line} if matcher else None  # (a pattern's matching lines are what a cut keeps)
        fitted, truncated = within_budget(hits, {} if snippets is None else snippets, max(0, max_tokens - envelope),
                                          cost, terms, define, anchors)
        if as_json and len(fitted) < asked and not budget_decides and (
                len(fitted) >= 2 or note_cost(unfitted(asked)) * 4 <= max_tokens):
            # The cut is said in the notes too: room for it is taken from the hits after the first,
            # or from the first's lines when it takes at most a quarter of the budget (in a small
            # budget the lines are worth more than the note, which stderr has anyway).
            fitted, truncated = within_budget(hits, {} if snippets is None else snippets,
                                              max(0, max_tokens - envelope - note_cost(unfitted(asked))), cost,
                                              terms, define, anchors)
        hits = fitted
        spare = max_tokens - envelope - sum(cost(h, (snippets or {}).get(h.docid), h.docid in truncated) for h in hits)
        if hits:
            took = envelope + cost(hits[0], (snippets or {}).get(hits[0].docid), hits[0].docid in truncated) - 1
            if took > max_tokens:  # (an agent's budget of 10 got ~125 tokens, unsaid)
                say(f"the first hit alone takes about {took} tokens as printed, over --max-tokens "
                    f"{max_tokens}: it is shown anyway (the best hit always is)")
                spare = None  # over the budget already: the notes say why, whatever room they take
        if len(hits) < asked and not budget_decides:  # (with no -k, as many as fit was the question)
            say(unfitted(asked - len(hits)))
    from .output import counted, shown_path

    def listed(paths: list[str]) -> str:
        return ", ".join(map(shown_path, paths[:3])) + (", ..." if len(paths) > 3 else "")

    moved: set[str] = set()  # hits whose file changed since the index --stale-ok answered from
    if snippets is None and unlooked:
        from .snippets import changed_since_indexing

        # No lines were read to tell them by: the hits' files are (a span 300 lines past a
        # truncated file's end read as an answer, unsaid).
        changed = sorted(path for path in dict.fromkeys(h.source_path for h in hits)  # (each file read once)
                         if changed_since_indexing(root, path, result.indexed.get(path)))
        if changed:
            say(f"{counted(len(changed), 'file')} changed since indexing ({listed(changed)}); "
                "--stale-ok answered from the index as it was" +
                ("" if bare_paths else ": spans there may have moved") +
                ("" if paths_only else " (--snippet-lines N shows the current lines)"))
            moved = {h.docid for h in hits if h.source_path in changed}
    if snippets is not None:
        # Said of the hits printed: --max-tokens may have left most of those read out.
        cut = sum(h.docid in cut_scopes for h in hits)
        if cut:
            say(f"{counted(cut, 'scope')} longer than {MAX_SCOPE_LINES} lines "
                f"{'shows' if cut == 1 else 'show'} the {MAX_SCOPE_LINES} lines around "
                f"{'its hit' if cut == 1 else 'their hits'} (--snippet-lines N for more)")

        changed = {(h.source_path, snippets[h.docid].missing) for h in hits
                   if h.docid in snippets and snippets[h.docid].stale}
        stale = sorted({path for path, missing in changed if not missing})
        gone = sorted({path for path, missing in changed if missing})
        if stale:
            say(f"{counted(len(stale), 'file')} changed since indexing ({listed(stale)}); "
                f"{'its' if len(stale) == 1 else 'their'} snippets show the current lines of each span, "
                "which may have moved")
        if gone:  # no current lines to show (it said they were shown)
            say(f"{counted(len(gone), 'file')} changed since indexing and not readable now (deleted, or too "
                f"large to show) ({listed(gone)}): no lines to show")
    result.hits = hits
    if as_json and not max_tokens:
        # Without a budget too: a pasted 680 KB log came back whole in "query", ahead of the hits.
        echoed = echo_within(text, ECHO_MAX_TOKENS)
    if as_json:
        payload = {
            "query": echoed,
            "retriever": result.retriever,
            "results": [_hit_json(h, snippets, truncated, matcher, h.docid in moved) for h in result.hits],
        }
        if echoed != text:
            payload["query_truncated"] = True
        if result.stale:  # the note says why, on stderr; a pipeline reading stdout sees it too
            payload["stale"] = True
        shown = told[:early]  # the notes stderr has: an agent reading only stdout took a typo's look-alike
        # hits, or an empty list, for an answer, and a budget's cut answer for all there is; those said
        # after the hits were fitted, as far as the budget has room for them (all are on stderr)
        for late in told[early:]:
            if spare is not None:
                if note_cost(late) > spare:
                    continue
                spare -= note_cost(late)
            shown.append(late)
        if result.notes or shown:
            payload["notes"] = result.notes + shown
        if index_filters is not None:
            payload["index_filters"] = index_filters
        click.echo(_json(payload))
    elif as_jsonl:
        for h in result.hits:
            row = _hit_json(h, snippets, truncated, matcher, h.docid in moved)
            if result.stale:  # no envelope to say it in: each hit says it came from the previous snapshot
                row["stale"] = True
            click.echo(_json(row))
    elif paths_only:
        from .output import path_from_here, shown_path

        if result.hits and null_paths:  # exact, each ended by NUL: xargs -0 takes any name
            sys.stdout.flush()
            sys.stdout.buffer.write(b"".join(os.fsencode(path_from_here(root, h.source_path)) + b"\0"
                                             for h in result.hits))
            sys.stdout.buffer.flush()
        elif result.hits:  # from here, as rg -l prints them: for xargs, for an editor
            click.echo("\n".join(shown_path(path_from_here(root, h.source_path)) for h in result.hits))
        if not patterns:
            from .notes import files_without_identifier

            unheld = files_without_identifier(root, [h.source_path for h in result.hits], text)
            if unheld:
                click.echo(f"note: {unheld}", err=True)
    elif vimgrep:
        from .output import vimgrep_lines

        shown = list(vimgrep_lines(result.hits, snippets or {}, terms, root, matcher.patterns if matcher else None,
                                   truncated, _each_match(result.hits, matcher, each_match), define=define))
        if shown:
            click.echo("\n".join(shown))
    if (vimgrep or paths_only) and patterns and len(result.hits) == top_k and not max_tokens:
        # A list of every line or file (a function's callers) cut at -k read as complete: 142 of
        # a name's 491 calls, with no word.
        click.echo(f"note: the answer stops at -k {top_k}: more chunks may hold a line matching -e "
                   "(a larger -k lists them)", err=True)
    if not (as_json or as_jsonl or paths_only or vimgrep):
        from .output import text_lines, use_colour

        colour = use_colour(sys.stdout)
        shown = list(text_lines(result.hits, snippets, truncated, colour=colour))
        if shown:  # one write: click.echo flushes after each call
            click.echo("\n".join(shown), color=colour)


@main.command(short_help="Remove the index.")
@root_option
def clean(root):
    """Remove the root's index (--root DIR), and nothing else."""
    from . import service
    from .output import shown_path

    root = _root(root)  # a directory, or one error line
    from .server import serve

    try:
        # Its server first, at once: left to notice its store gone, it lived on for seconds.
        serve.stop(root, timeout=5.0)
    except (RuntimeError, OSError):
        pass  # one that does not stop still exits when it sees its store gone
    try:
        removed = service.clean(root, progress=_progress_sink())
    except _expected_errors() as exc:
        raise _fail(exc)
    shown = shown_path(root)
    click.echo(f"removed the index of {shown}" if removed else f"no index to remove at {shown}", err=True)


@main.command(short_help="Show the index: root, size, filters, state.")
@root_option
@click.option("--json", "as_json", is_flag=True,
              help='One JSON object: {"root", "root_reason", "retrievers": [...], "server", "writer"}.')
@click.option("--skipped", "list_skipped", is_flag=True,
              help="List the files the index leaves out and why (one `REASON<TAB>PATH` a line; with --json, "
                   '{"root", "skipped": [{"path", "reason"}], "other_types": {".log": N, ...}}, the files of '
                   'types never read counted by extension): the answer to "why is my file never found?".')
def status(root, as_json, list_skipped):
    """Show the root in use and each retriever's index: state (ready / stale / missing / error /
    unavailable, with the reason: its extra is not installed), size, languages and the remembered
    index filters."""
    from . import service
    from .notes import filters_json, filters_text, no_index_hint
    from .roots import DESCRIPTIONS, too_broad

    found = found_root(root)
    if list_skipped:
        _list_skipped(found.path, as_json)
        return
    try:
        rows = service.status(found.path)
    except _expected_errors() as exc:
        raise _fail(exc)
    root = found.path
    _note_index_above(found)
    for row in rows:  # every row has the key, {} without an index: one schema for scripts
        row["filters"] = filters_json(service.remembered_options(root, row["retriever"])) if row["state"] != "missing" else {}
    hint = no_index_hint(root, rows)
    refusal = too_broad(found)
    if hint and refusal:  # the commands the hint names would refuse this root
        hint = refusal
    from .server.client import not_here, probe, serves_here, stopped_server, store_dir

    stopped = stopped_server(store_dir(root))  # it holds the root's server lock and answers nothing
    server = {"pid": stopped, "stopped": True} if stopped is not None else \
        probe(store_dir(root), reply_timeout=2.0, busy=True)
    if server is not None and stopped is None and not server.get("busy"):
        # A server of other code or settings answers none of this shell's commands (they run in process).
        server = dict(server, used=bool(server.get("starting")) or serves_here(server))
        if isinstance(server.get("started"), (int, float)):  # written as `created` and a writer's `since` are
            server["started"] = service.iso_time(server["started"])
    writer = service.writer(root)
    if hint and writer and not refusal:  # "builds one" sent users to wait on the lock of the build under way
        hint = f"no index yet: {service.writer_named(writer)} is building one; a query waits for it"
    elif hint and not refusal and _unwritable(store_dir(root)):
        # "the first query builds one" sent users to a query failing to write it
        from .output import shown_path
        from .store.layout import elsewhere

        hint = f"no index yet, and none can be written at {shown_path(store_dir(root))}: {elsewhere()}"
    if as_json:
        click.echo(_json({"root": root, "root_reason": found.reason, "retrievers": rows, "server": server,
                          "writer": writer}))
        if hint:
            click.echo(f"note: {hint}", err=True)
        return
    from .output import counted, shell_word, shown_path

    click.echo(f"root: {shown_path(root)} ({DESCRIPTIONS[found.reason]})")
    for row in rows:
        if row["state"] in ("missing", "unavailable", "error") and not row["files"] and not row["store_bytes"]:
            # Nothing built, or nothing readable: a row of zeros says less than what to do about it.
            # With its root: run from elsewhere, the bare command would index another tree.
            command = f"retrieval index --retriever {row['retriever']} --root {shell_word(root)}"
            why = row.get("reason") or f"build it with `{command}`"
            click.echo(f"{row['retriever']}: {row['state']} ({why})")
            continue
        line = (
            f"{row['retriever']}: {row['state']}, {counted(row['files'], 'file')}, {counted(row['chunks'], 'chunk')}, "
            f"~{counted(row['tokens'], 'token')}, {counted(row['store_bytes'], 'byte')}"
        )
        if row["primary_language"]:
            line += f", mostly {row['primary_language']}"
        if row["profile"] not in (None, "code"):
            line += f", {row['profile']} profile"
        if row.get("reason"):
            line += f" ({row['reason']})"
        if row.get("filters"):
            line += f"; remembered filters: {filters_text(row['filters'])}"
        if row.get("chunking"):
            line += "; chunking: " + ", ".join(f"{lang} {how}" for lang, how in row["chunking"].items())
        if row.get("skipped"):
            line += "; skipped: " + _skip_counts(row["skipped"])
        click.echo(line)
    if writer:
        who = service.writer_named(writer)
        since = writer["since"][11:19]  # the time of day (UTC) is what a user compares
        click.echo(f"writer: {who} has been writing the index since {since} UTC (an `index` or a "
                   "refreshing query; the rows above are the last finished state)")
    if stopped is not None:
        click.echo(f"server: stopped (pid {stopped}; `kill -CONT {stopped}`, or `retrieval serve --stop`)")
    elif server and server.get("busy"):  # (what it is and serves is not known: it answers nothing meanwhile)
        click.echo(f"server: running (pid {server['pid']}), busy with another command")
    elif server:
        click.echo(f"server: running (pid {server['pid']})" + ("" if server["used"] else f"; {not_here()}"))
    if hint:
        click.echo(f"note: {hint}", err=True)


def _unwritable(store: str) -> bool:
    """Whether no index can be written at `store`: its nearest existing directory is not writable."""
    existing = store
    while not os.path.lexists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    return not os.access(existing, os.W_OK | os.X_OK)


def _list_skipped(root: str, as_json: bool) -> None:
    from . import service
    from .output import shown_path

    notes: list[str] = []
    other_types: dict[str, int] = {}
    try:
        skipped = service.skipped_files(root, notes, other_types)
    except _expected_errors() as exc:
        raise _fail(exc)
    if other_types:
        notes.append(_other_types_note(other_types))
    for note in notes:
        click.echo(f"note: {note}", err=True)
    if as_json:
        click.echo(_json({"root": root, "skipped": [{"path": p, "reason": r} for p, r in skipped],
                          "other_types": other_types}))
        return
    for path, reason in skipped:
        click.echo(f"{reason}\t{shown_path(path, escaped=reason == 'undecodable-name')}")
    if not skipped and not other_types and not any(note.startswith("no index") for note in notes):
        click.echo("note: the index leaves out no file", err=True)


def _other_types_note(counts: dict[str, int], shown: int = 8) -> str:
    """What a listing of skips leaves out: files never eligible for their type (`.log`, `NOTES`)."""
    total = sum(counts.values())
    parts = [f"{ext or '(no extension)'} {n:,}" for ext, n in list(counts.items())[:shown]]
    if len(counts) > shown:
        parts.append(f"{len(counts) - shown} more types")
    return (f"{total:,} file{'s' if total != 1 else ''} of types retrieval does not read, not listed: "
            f"{', '.join(parts)}; `retrieval index --include GLOB` indexes the files GLOB matches "
            "(and only those; repeat it for each pattern)")


@main.command(short_help="Print or install the agent skill file.")
@click.option("--install", "install_dir", is_flag=False, flag_value="~/.claude/skills/retrieval", default=None,
              metavar="[DIR]",
              help="Write SKILL.md into DIR instead of printing it (DIR defaults to ~/.claude/skills/retrieval, "
                   "where Claude Code looks for skills).")
def skill(install_dir):
    """Print the agent skill file (SKILL.md) that tells a coding agent when and how to use retrieval,
    or install it where the agent reads skills."""
    from . import skill as agent_skill

    if install_dir is None:
        if sys.stdout is None:  # started `>&-`: printing is all it does (it said nothing and exited 0)
            raise UserError("`retrieval skill` prints the skill file on stdout, which is closed "
                            "(`--install` writes it to a file)")
        click.echo(agent_skill.text(), nl=False)
        return
    if not install_dir:  # `--install "$DIR"` with DIR unset: a usage error, as the other empty options
        raise click.BadParameter("is empty (an unset variable?): give a directory, or no value for the default",
                                 param_hint="'--install'")
    try:
        path, what, backup = agent_skill.install(install_dir)
    except OSError as exc:
        raise _fail(exc)
    click.echo(f"{what} {path}" + (f" (the one there kept as {backup})" if backup else ""), err=True)


from .evaluation.cli import eval_command  # noqa: E402
from .server.commands import mcp_command, serve_command  # noqa: E402

main.add_command(eval_command)
main.add_command(serve_command)
main.add_command(mcp_command)

if __name__ == "__main__":  # pragma: no cover
    main()
