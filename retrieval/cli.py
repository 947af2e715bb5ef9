"""The `retrieval` command: parse options, call the service, format output. Nothing else.

stdout carries results only; progress and diagnostics go to stderr. Exit codes: 0 success (zero hits
included), 1 error (one `error: ...` line), 2 usage.
"""
from __future__ import annotations

import json
import os
import sys

import click

from . import __version__


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


def _progress_sink(always: bool):
    """Progress to stderr: always for `index`, only on a terminal for `query`."""
    if always or sys.stderr.isatty():
        return lambda message: click.echo(message, err=True)
    return lambda message: None


root_option = click.option(
    "--root", type=click.Path(file_okay=True, dir_okay=True), default=".", show_default=True,
    help="Repository root to index or search.",
)


EMBED_MODEL_HELP = ("Embedding model of the dense retrievers: a local directory, or a name already in the local "
                    "Hugging Face cache (never downloaded). Default: the bundled all-MiniLM-L6-v2. Pass the same "
                    "model to every command (or set RETRIEVAL_EMBED_MODEL): another model means another index.")


def _use_embed_model(model: str | None) -> None:
    if model:
        os.environ["RETRIEVAL_EMBED_MODEL"] = model


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="retrieval")
def main():
    """Offline code retrieval: ranked path:start-end hits for a natural-language or symbol query."""


def _describe_skips(skipped: dict) -> str:
    if not skipped:
        return ""
    return " (skipped: " + ", ".join(f"{n} {reason}" for reason, n in sorted(skipped.items())) + ")"


@main.command()
@root_option
@click.option("--retriever", "retriever_name", default="all", show_default=True,
              help="A retriever name, or 'all' for every installed one.")
@click.option("--force", is_flag=True, help="Rebuild from scratch.")
@click.option("--embed-model", default=None, metavar="DIR|NAME", help=EMBED_MODEL_HELP)
@click.option("--include", multiple=True, metavar="GLOB", help="Index only files matching GLOB (repeatable).")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Skip files and directories matching GLOB (repeatable).")
@click.option("--max-file-bytes", type=click.IntRange(min=1), default=None, help="Per-file size cap (default 1 MB).")
@click.option("--profile", type=click.Choice(["code", "prose"]), default=None,
              help="code (default): code-aware terms and ranking. prose: a collection of English documents, "
                   "one per file (Lucene's English analyzer, BM25 k1=0.9 b=0.4).")
def index(root, retriever_name, force, embed_model, include, exclude, max_file_bytes, profile):
    """Build or refresh the index of ROOT."""
    from . import service
    from .retrievers.base import get_spec

    progress = _progress_sink(always=True)
    _use_embed_model(embed_model)
    options = None
    if include or exclude or max_file_bytes or profile:
        options = service.IndexOptions(include=tuple(include), exclude=tuple(exclude), max_bytes=max_file_bytes,
                                       profile=profile or "code")
    if retriever_name == "all":
        targets = service.available_retrievers()
    else:
        try:
            spec = get_spec(retriever_name)
        except ValueError as exc:
            raise click.UsageError(str(exc))
        targets = [(retriever_name, spec.unavailable_reason())]
    lexical_failed = False
    single = retriever_name != "all"
    for name, reason in targets:
        if reason:
            if single:
                raise UserError(reason)
            click.echo(f"{name}: skipped ({reason})")
            continue
        try:
            report = service.refresh(root, name, options=options, force=force, progress=progress)
        except _expected_errors() as exc:
            if single or name == "lexical":
                lexical_failed = True
                click.echo(f"error: {name}: {str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__}", err=True)
                if single:
                    sys.exit(1)
                break  # lexical comes first and shares the store: the others would fail the same way
            click.echo(f"{name}: failed ({str(exc).splitlines()[0]})")
            continue
        if report.status == "indexed":
            click.echo(
                f"{name}: indexed {report.new_chunks} chunks from {len(report.reprocessed)} files "
                f"({report.chunks} chunks, {report.files} files in the index) in {report.seconds:.1f}s"
                + _describe_skips(report.skipped)
            )
        else:
            click.echo(f"{name}: up to date ({report.chunks} chunks, {report.files} files)")
    if lexical_failed:
        sys.exit(1)


def _read_query(query: str) -> str:
    if query == "-":
        # Bytes, not text: a pasted log may hold bytes that are not UTF-8; they match nothing anyway.
        query = sys.stdin.buffer.read().decode("utf-8", "replace")
    else:
        # An argument that is not UTF-8 arrives with lone surrogates, which cannot be printed back.
        query = query.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if not query.strip():
        raise click.UsageError("the query is empty")
    return query


def _distinct_files(hits):
    """First (best) hit of each file, ranks renumbered."""
    from dataclasses import replace

    seen: set[str] = set()
    out = []
    for hit in hits:
        if hit.source_path not in seen:
            seen.add(hit.source_path)
            out.append(replace(hit, rank=len(out) + 1))
    return out


def _estimate_tokens(text: str) -> int:
    # About four characters per token, plus the fields around each hit.
    return len(text) // 4 + 24


def _within_budget(hits, snippets: dict, budget: int):
    """The longest prefix of hits whose snippets fit the token budget (never a partial hit)."""
    out, used = [], 0
    for hit in hits:
        snippet = snippets.get(hit.docid)
        cost = _estimate_tokens(snippet.text if snippet else "")
        if used + cost > budget:
            break
        used += cost
        out.append(hit)
    return out


def _hit_json(hit, snippets: dict | None) -> dict:
    row = {
        "rank": hit.rank,
        "path": hit.source_path,
        "start_line": hit.start_line,
        "end_line": hit.end_line,
        "score": round(hit.score, 6),
        "docid": hit.docid,
        "context": hit.context,
        "confidence": hit.confidence,
    }
    if hit.extra:  # `--retriever all`: provenance, agreement, ranks
        row.update(hit.extra)
    if snippets is not None:
        snippet = snippets.get(hit.docid)
        row["snippet"] = snippet.text if snippet else ""
        row["snippet_start"] = snippet.start_line if snippet else None
        row["snippet_end"] = snippet.end_line if snippet else None
        if snippet and snippet.stale:
            row["stale"] = True
    return row


@main.command()
@click.argument("query")
@root_option
@click.option("--retriever", "retriever_name", default="lexical", show_default=True,
              help="A retriever name, or 'all': every indexed one's hits merged, with provenance.")
@click.option("--embed-model", default=None, metavar="DIR|NAME", help=EMBED_MODEL_HELP)
@click.option("--top-k", "-k", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON object with all results.")
@click.option("--jsonl", "as_jsonl", is_flag=True, help="One JSON object per hit, one per line.")
@click.option("--snippet-lines", type=click.IntRange(min=0), default=0, help="Include up to N lines of each hit.")
@click.option("--expand", type=click.IntRange(min=0), default=None, metavar="N",
              help="Snippets of each hit with N lines before and after it (implies snippets).")
@click.option("--stale-ok", is_flag=True, help="Do not refresh a stale index first.")
@click.option("--path", "path_globs", multiple=True, metavar="GLOB", help="Only hits whose path matches GLOB.")
@click.option("--lang", default="", help="Only hits in this language (e.g. python).")
@click.option("--kind", type=click.Choice(["code", "docs", "config"]), default=None)
@click.option("--files", "files_only", is_flag=True, help="Ranked distinct files, each with its best span.")
@click.option("--max-tokens", type=click.IntRange(min=1), default=None,
              help="Return as many hits as fit this many tokens, snippets included (implies snippets).")
@click.option("--min-confidence", type=click.Choice(["low", "medium", "high"]), default=None,
              help="Only hits at this confidence or above (possibly none).")
def query(query, root, retriever_name, embed_model, top_k, as_json, as_jsonl, snippet_lines, expand, stale_ok, path_globs, lang,
          kind, files_only, max_tokens, min_confidence):
    """Search ROOT for QUERY ('-' reads it from stdin)."""
    from . import service
    from .retrievers.base import get_spec

    if as_json and as_jsonl:
        raise click.UsageError("choose one of --json and --jsonl")
    text = _read_query(query)
    _use_embed_model(embed_model)
    try:
        if retriever_name != "all":
            get_spec(retriever_name)
    except ValueError as exc:
        raise click.UsageError(str(exc))
    filters = service.QueryFilter(paths=tuple(path_globs), language=lang, kind=kind or "")
    if max_tokens and click.get_current_context().get_parameter_source("top_k").name == "DEFAULT":
        top_k = 100  # the budget, not the default count, decides how many hits fit
    try:
        search = service.search
        if retriever_name == "all":  # every usable retriever, consolidated (retrieval.multi)
            from .multi import search_all as search
        result = search(
            root, text, retriever=retriever_name, top_k=top_k, filters=filters or None,
            stale_ok=stale_ok, min_confidence=min_confidence, progress=_progress_sink(always=False),
        )
    except _expected_errors() as exc:
        raise _fail(exc)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    abs_root = os.path.abspath(root)
    hits = result.hits
    if files_only:
        hits = _distinct_files(hits)
    snippets = None
    if snippet_lines or expand is not None or max_tokens:
        from .snippets import read_snippet

        snippets = {}
        for h in hits:
            snippet = read_snippet(abs_root, h, expand=expand or 0, max_lines=snippet_lines or None,
                                   indexed=result.indexed.get(h.source_path))
            if snippet is not None:
                snippets[h.docid] = snippet
        stale = sorted({h.source_path for h in hits if h.docid in snippets and snippets[h.docid].stale})
        if stale:
            click.echo(f"note: {len(stale)} file(s) changed since indexing ({', '.join(stale[:3])}"
                       f"{', ...' if len(stale) > 3 else ''}); their snippets show the current lines of "
                       "each span, which may have moved", err=True)
    if max_tokens:
        hits = _within_budget(hits, snippets, max_tokens)
    result.hits = hits
    if as_json:
        payload = {
            "query": text,
            "retriever": result.retriever,
            "results": [_hit_json(h, snippets) for h in result.hits],
        }
        click.echo(json.dumps(payload, ensure_ascii=False))
    elif as_jsonl:
        for h in result.hits:
            click.echo(json.dumps(_hit_json(h, snippets), ensure_ascii=False))
    else:
        for h in result.hits:
            span = f"{h.source_path}:{h.start_line}-{h.end_line}" if h.start_line else h.source_path
            click.echo(span)
            snippet = snippets.get(h.docid) if snippets else None
            if snippet and snippet.text:
                click.echo("".join("    " + line for line in snippet.text.splitlines(keepends=True)).rstrip("\n"))


@main.command()
@root_option
def clean(root):
    """Remove ROOT's index (and nothing else)."""
    from . import service

    try:
        removed = service.clean(root)
    except _expected_errors() as exc:
        raise _fail(exc)
    click.echo("removed the index" if removed else "no index to remove", err=True)


@main.command()
@root_option
@click.option("--json", "as_json", is_flag=True)
def status(root, as_json):
    """Show each retriever's index: size, languages, state (ready / stale / missing / error)."""
    from . import service

    try:
        rows = service.status(root)
    except _expected_errors() as exc:
        raise _fail(exc)
    if as_json:
        click.echo(json.dumps({"root": os.path.abspath(root), "retrievers": rows}, ensure_ascii=False))
        return
    for row in rows:
        line = (
            f"{row['retriever']}: {row['state']}, {row['files']} files, {row['chunks']} chunks, "
            f"~{row['tokens']} tokens, {row['store_bytes']} bytes"
        )
        if row["primary_language"]:
            line += f", mostly {row['primary_language']}"
        if row["profile"] not in (None, "code"):
            line += f", {row['profile']} profile"
        if row.get("reason"):
            line += f" ({row['reason']})"
        click.echo(line)


from .evaluation.cli import eval_command  # noqa: E402

main.add_command(eval_command)

if __name__ == "__main__":  # pragma: no cover
    main()
