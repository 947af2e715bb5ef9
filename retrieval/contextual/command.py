"""`index --retriever lexical+ctx`: generate what the model owes (if it may), then refresh the index.

The only path that spends money. All-mode `index` and query-time refreshes go through
service.refresh alone, so they use the offline contextualizer and contexts already cached.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

from .. import service
from ..discover import require_root
from ..index_options import IndexOptions, wanted_context_model
from ..output import counted
from ..store import layout
from ..store.lock import WriterLock
from . import configured_model, remote_unavailable_reason
from .cache import ContextCache
from .endpoint import destination
from .generate import (DEFAULT_MAX_DOLLARS, DEFAULT_MAX_FILE_BYTES, DEFAULT_WORKERS, GenerationStopped, check_cost,
                       clear_pending, is_pending, mark_pending, plan, run)

NAME = "lexical+ctx"
MODES = ("auto", "offline", "anthropic")


@dataclass
class ContextOptions:
    mode: str = "auto"  # auto: the model when installed and keyed, else offline; anthropic: the model or an error
    yes: bool = False
    dry_run: bool = False
    max_chunks: int | None = None
    max_dollars: float = DEFAULT_MAX_DOLLARS
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    workers: int = DEFAULT_WORKERS


def refresh(root: str, *, options: IndexOptions | None = None, context: ContextOptions | None = None,
            force: bool = False, progress: Callable[[str], None] = lambda m: None, requester=None):
    """Generate the missing model contexts (after the estimate and the cost guard), then refresh the
    lexical+ctx index with them. Returns the refresh report, or None after a dry run."""
    context = context or ContextOptions()
    if context.mode not in MODES:
        raise ValueError(f"unknown contextualizer {context.mode!r}; choose one of: {', '.join(MODES)}")
    # $RETRIEVAL_CONTEXT_MODEL, else the model of the options the index is built with (given now, as
    # after --reset-filters, else remembered): the model asked is the model whose contexts it reads.
    base = options or service.remembered_options(root, NAME) or IndexOptions()
    model = wanted_context_model(NAME, base) or configured_model()
    use_model = context.mode != "offline"
    if use_model and requester is None:
        reason = remote_unavailable_reason()
        if reason and context.dry_run:
            # The estimate needs neither the SDK nor a key: see the price before getting either.
            if context.mode == "anthropic":
                progress(f"{NAME}: a real run would need the model ({reason}); the estimate of what it would send:")
            else:  # auto: a real run now goes on offline
                progress(f"{NAME}: a real run now would use the offline contextualizer ({reason}); "
                         "what it would send to the model once available:")
        elif reason:
            if context.mode == "anthropic":
                raise RuntimeError(reason)
            progress(f"{NAME}: using the offline contextualizer ({reason})")
            use_model = False
    root = os.path.abspath(root)
    store = layout.store_dir(root)
    cache = ContextCache(layout.retriever_dir(store, NAME))
    if use_model:
        try:
            _generate(root, store, model, options, context, progress, requester)
        except GenerationStopped:
            # What was paid for before the API stopped the run goes into the index now: with the key
            # still refused, a later model run never got as far as the refresh that takes it in.
            if is_pending(cache):
                service.refresh(root, NAME, options=options, force=True, progress=progress)
                clear_pending(cache)
            raise
        if context.dry_run:
            return None
    elif context.dry_run:
        progress(f"{NAME}: offline contextualizer, nothing to send")
        return None
    # Contexts generated since the index was built (a run cut short, say) are taken in by a rebuild:
    # the files they belong to have not changed, so a refresh alone would not look at them again.
    report = service.refresh(root, NAME, options=options, force=force or is_pending(cache), progress=progress)
    clear_pending(cache)
    return report


def _indexed_contexts(store: str, retriever) -> dict | None:
    """The built index's contexts by path, read as its queries read them (None: no index, or one
    that cannot be read, which the refresh after this run rebuilds anyway)."""
    try:
        manifest = layout.read_manifest(store, NAME)
        if not manifest:
            return None
        table = retriever._load_contexts(layout.retriever_dir(store, NAME), manifest["state"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError, layout.ManifestProblem, layout.StoreError):
        return None
    if not isinstance(table, dict) or not all(
            isinstance(rows, list) and all(isinstance(row, list) and len(row) == 3 and isinstance(row[2], str)
                                           for row in rows) for rows in table.values()):
        return None  # damaged: the rebuild after this run replaces it
    return table


def _generate(root, store, model, options, context, progress, requester) -> None:
    """Plan, estimate, guard and ask the model, under the writer lock (a dry run reads only)."""
    from ..retrievers.contextual import ContextualRetriever

    require_root(root)
    retriever = ContextualRetriever(model=model)
    options = options or service.remembered_options(root, NAME) or IndexOptions()
    rdir = layout.retriever_dir(store, NAME)
    layout.refuse_symlink(rdir)
    lock = None
    if not context.dry_run:  # an estimate writes nothing: no store is made for it, none is locked
        layout.ensure_store(store)
        os.makedirs(rdir, exist_ok=True)
        lock = WriterLock(layout.lock_path(store))
        # Said, not silent: behind another build's model run this waits as long as that run takes.
        lock.acquire(on_wait=progress)
    cache = ContextCache(rdir)
    try:
        if lock is not None:
            layout.write_markers(store, root)  # a store `clean` recognises
        work = plan(root, retriever, options, cache, max_file_bytes=context.max_file_bytes,
                    indexed=_indexed_contexts(store, retriever) if lock is not None else None)
        if work.unindexed:
            mark_pending(cache)  # taken in by the rebuild after this run (see refresh)
        withheld = ", ".join(f"{n} {why} file{'s' * (n != 1)}" for why, n in sorted(work.withheld.items()))
        progress(f"{NAME}: {'dry run: ' * context.dry_run}{work.estimate.describe(model)}; "
                 f"{work.cached} chunks already cached"
                 + (f"; {counted(work.identical, 'chunk')} of identical files "
                    f"{'shares' if work.identical == 1 else 'share'} those contexts" if work.identical else "")
                 + (f"; never sent: {withheld}" if withheld else ""))
        if context.max_chunks is not None and work.chunks > context.max_chunks:
            work.limit(context.max_chunks)
            progress(f"{NAME}: --max-chunks {context.max_chunks}: {work.estimate.describe(model)}")
        if context.dry_run:
            return
        check_cost(work, yes=context.yes, max_chunks=context.max_chunks, max_dollars=context.max_dollars)
        if work.jobs:
            # Said before the first request: this is the one command that sends code off the machine.
            progress(f"{NAME}: sending the text of {counted(len(work.jobs), 'file')} to {destination()} "
                     "(--contextualizer offline sends nothing)")
            if requester is None:
                from .anthropic import AnthropicContextualizer

                requester = AnthropicContextualizer(model)
            done = run(work, requester, cache, workers=context.workers, progress=progress)
            progress(f"{NAME}: {done.generated} contexts generated")
    finally:
        if lock is not None:
            lock.release()
