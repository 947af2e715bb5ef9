"""Generate model contexts for a tree: plan, estimate, guard, then spend, caching as it goes.

Standard library only; the model is a `requester` object (see anthropic.py) with
`request(path, file_text, chunk) -> str`, `fatal(exc) -> str` (a one-line reason to stop) and,
optionally, `refused_only(exc) -> bool` (the API refused this request, not every request).

- plan(): walk and chunk the tree as `lexical+ctx` would, and keep the chunks whose context is not
  cached yet (once for identical files: their contexts are one cache entry). Files on the secret
  deny-list and files over `max_file_bytes` are never planned, so never sent.
- The estimate is printed before any request; above `max_dollars` the run is refused unless the
  caller said yes or capped the chunks.
- run(): one file at a time per worker (its chunks in order, so the first request writes the prompt
  cache and the others read it), a few workers at once. Every answer is cached as it arrives; on a
  fatal error (authentication, retries exhausted) the requests in flight finish and are kept, on
  Ctrl-C they get a few seconds to, and the next run resumes with what is missing.
"""
from __future__ import annotations

import os
import queue
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from ..discover import is_secret_name, walk
from ..output import counted
from ..progress import Tick
from ..read import read_source
from ..vectors.texts import left_to_lexical
from ..records import Chunk
from ..store import layout
from ..store.atomic import write_bytes
from .cache import ContextCache, span_key
from .prompt import PROMPT_VERSION, Estimate, dollars, prices

DEFAULT_MAX_FILE_BYTES = 200_000  # about 67k tokens: keeps each request in the lower price band
DEFAULT_MAX_DOLLARS = 1.00
DEFAULT_WORKERS = 4
INTERRUPT_GRACE = 3.0  # seconds the requests in flight get after Ctrl-C
PENDING = "PENDING"  # in the cache directory: contexts were generated since the index last used them


class CostRefused(RuntimeError):
    """The estimate is above the threshold and the caller did not accept it."""


class GenerationStopped(RuntimeError):
    """A fatal API error stopped the run; what was generated before it is kept."""


@dataclass
class Job:
    path: str
    text: str
    digest: str
    chunks: list[Chunk]


@dataclass
class Plan:
    model: str
    jobs: list[Job] = field(default_factory=list)
    cached: int = 0  # chunks whose context is already cached
    identical: int = 0  # chunks of a file whose copy (same content, same span) is asked about already
    withheld: Counter = field(default_factory=Counter)  # reason -> files never sent
    estimate: Estimate = field(default_factory=Estimate)
    # Chunks whose cached context the built index does not carry (paid for by another checkout
    # sharing the cache after this index was built): a refresh alone, finding their files
    # unchanged, never took them in.
    unindexed: int = 0

    @property
    def chunks(self) -> int:
        return sum(len(j.chunks) for j in self.jobs)

    def limit(self, max_chunks: int) -> None:
        """Keep the first max_chunks chunks (whole files first, in path order)."""
        kept, left = [], max_chunks
        for job in self.jobs:
            if left <= 0:
                break
            kept.append(Job(job.path, job.text, job.digest, job.chunks[:left]))
            left -= len(kept[-1].chunks)
        self.jobs = kept
        self._estimate()

    def _estimate(self) -> None:
        row, _known = prices(self.model)
        self.estimate = Estimate()
        for job in self.jobs:
            self.estimate.add_file(job.path, job.text, job.chunks, row)


def sendable(path: str, size: int, max_file_bytes: int) -> str:
    """'' when a file may be sent to the model; else why not."""
    if any(is_secret_name(part) for part in path.split("/")):
        return "secret-name"
    if size > max_file_bytes:
        return "too-large-to-send"
    return ""


def plan(root: str, retriever, options, cache: ContextCache, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
         files=None, indexed: dict | None = None) -> Plan:
    """What is left to generate under root (or for the given SourceFiles only). `indexed`: the built
    index's contexts ({path: [[start, end, context], ...]}), to count the cached ones it lacks."""
    from ..retrievers.contextual import text_digest

    root = os.path.abspath(root)
    store = layout.store_dir(root)
    walk_options = options.discovery(store)
    if files is None:
        files = walk(root, walk_options).files
    out = Plan(retriever.model)
    asked: dict[str, set[str]] = {}  # content digest -> spans planned: a copy's contexts are the same cache entries
    for f in sorted(files, key=lambda f: f.path):
        reason = sendable(f.path, f.size, max_file_bytes)
        if reason:
            out.withheld[reason] += 1
            continue
        content = read_source(f, walk_options.max_bytes)
        if content.text is None:
            continue
        left = left_to_lexical(f.path, f.kind, content.file.generated)
        if left:
            # What no model reads for the dense index either: a lock file or a mock is hundreds of
            # chunks of dollars for files the ranking puts last (they keep the offline context).
            out.withheld[left] += 1
            continue
        if len(content.text.encode("utf-8", "surrogatepass")) > max_file_bytes:
            out.withheld["too-large-to-send"] += 1
            continue
        chunks = [c for c in retriever.base_chunks(content.text, content.file, options) if c.text.strip()]
        digest = text_digest(content.text)
        have = cache.get(retriever.model, PROMPT_VERSION, digest)
        todo = [c for c in chunks if span_key(c.start_line, c.end_line) not in have]
        out.cached += len(chunks) - len(todo)
        if indexed is not None and len(todo) < len(chunks):
            carried = {span_key(start, end): context for start, end, context in indexed.get(f.path, ())}
            spans = (span_key(c.start_line, c.end_line) for c in chunks)
            out.unindexed += sum(1 for key in spans if key in have and not carried.get(key, "").startswith(have[key]))
        spans = asked.setdefault(digest, set())
        copies = [c for c in todo if span_key(c.start_line, c.end_line) in spans]
        todo = [c for c in todo if span_key(c.start_line, c.end_line) not in spans]
        spans.update(span_key(c.start_line, c.end_line) for c in todo)
        out.identical += len(copies)
        if todo:
            out.jobs.append(Job(f.path, content.text, digest, todo))
    out._estimate()
    return out


def check_cost(p: Plan, *, yes: bool, max_chunks: int | None, max_dollars: float = DEFAULT_MAX_DOLLARS) -> None:
    """Raise CostRefused when the run would cost more than max_dollars and nobody accepted it. A
    plan cut by --max-chunks is judged by what is left of it: a cap is no acceptance (a cap above
    the chunk count would otherwise wave any bill through)."""
    if yes or p.estimate.dollars <= max_dollars:
        return
    if max_chunks is not None:
        raise CostRefused(
            f"estimated {dollars(p.estimate.dollars)} for the {p.chunks} chunks of --max-chunks {max_chunks} is "
            f"above {dollars(max_dollars)}: pass --yes to accept it, or a smaller --max-chunks"
        )
    raise CostRefused(
        f"estimated {dollars(p.estimate.dollars)} is above {dollars(max_dollars)}: pass --yes to accept it, "
        f"or --max-chunks N to contextualize only N chunks now (the rest on later runs)"
    )


@dataclass
class RunReport:
    generated: int = 0
    empty: int = 0  # answers with no context (no text, a refusal, the chunk repeated back): not kept
    empty_files: set = field(default_factory=set)  # the files those came from
    refused: int = 0  # chunks of files the API refused a request for (a prompt too long, say): not asked
    refused_files: int = 0
    refused_in_a_row: int = 0  # files refused since the last answer
    refusal: str = ""  # the first refusal's reason
    stopped: str = ""  # the fatal reason, when the run stopped early
    interrupted: bool = False  # Ctrl-C: requests still in flight after the grace are abandoned


def mark_pending(cache: ContextCache) -> None:
    os.makedirs(cache.directory, exist_ok=True)
    write_bytes(os.path.join(cache.directory, PENDING), b"")


def is_pending(cache: ContextCache) -> bool:
    return os.path.exists(os.path.join(cache.directory, PENDING))


def clear_pending(cache: ContextCache) -> None:
    try:
        os.unlink(os.path.join(cache.directory, PENDING))
    except FileNotFoundError:
        pass


# A refused request (400, 413) costs its file's remaining chunks; this many files refused in a row,
# with no answer between them, is a setting every request carries (a wrong parameter, the credit
# balance spent mid-run): the run stops.
REFUSED_FILES_TO_STOP = 3
# Likewise empty answers from this many files before any context: a model or endpoint that answers
# nothing usable (thinking only, refusals, echoes) would otherwise be paid for every chunk of the tree.
EMPTY_FILES_TO_STOP = 3
QUIET_NOTE_SECONDS = 30.0  # without an answer this long, a note says the run is waiting (again each period)


def run(p: Plan, requester, cache: ContextCache, *, workers: int = DEFAULT_WORKERS,
        progress: Callable[[str], None] = lambda m: None) -> RunReport:
    """Ask the model for every planned chunk; each answer is cached before the next is asked.

    Workers are daemon threads: on Ctrl-C the requests in flight get INTERRUPT_GRACE seconds to
    land in the cache, then the run stops without them (an SDK retrying a rate limit or a silent
    endpoint would otherwise hold the process, and the store's writer lock, for minutes or hours).
    An empty answer (a refusal, say) is not a context: it is counted, not cached, and asked again
    on the next run."""
    report = RunReport()
    if not p.jobs:
        return report
    stop = threading.Event()
    marked = []  # whether PENDING is written: before the first context, not for a run that gets none
    lock = threading.Lock()
    total = p.chunks
    jobs = queue.SimpleQueue()
    for job in p.jobs:
        jobs.put(job)

    answered = [time.monotonic()]  # when the last answer came (or the run began)
    refused_only = getattr(requester, "refused_only", lambda exc: False)

    def do(job: Job) -> None:
        for done, chunk in enumerate(job.chunks):
            if stop.is_set():
                return
            try:
                text = requester.request(job.path, job.text, chunk)
                answered[0] = time.monotonic()
            except Exception as exc:
                reason = requester.fatal(exc)
                with lock:
                    # One file the API will not take (its prompt too long, a policy refusal) had
                    # stopped every run a few files in: its chunks are counted and the others go on.
                    if refused_only(exc) and report.refused_in_a_row + 1 < REFUSED_FILES_TO_STOP:
                        report.refused += len(job.chunks) - done
                        report.refused_files += 1
                        report.refused_in_a_row += 1
                        report.refusal = report.refusal or reason
                        return
                    if not report.stopped:
                        report.stopped = reason
                stop.set()
                return
            if not text:
                with lock:
                    report.empty += 1
                    report.empty_files.add(job.path)
                    if not report.generated and len(report.empty_files) >= EMPTY_FILES_TO_STOP:
                        report.stopped = report.stopped or (
                            f"the model's answers about the first {EMPTY_FILES_TO_STOP} files held no context (no "
                            f"text, a refusal, or the chunk repeated back): check the model and the endpoint")
                        stop.set()
                        return
                continue
            with lock:  # held while writing: once the run gives up (interrupted), nothing more is written
                if report.interrupted:
                    return  # answered too late: the store's writer lock may be another process's by now
                if not marked:  # the index must be rebuilt with these, even if this run is cut short
                    mark_pending(cache)
                    marked.append(True)
                cache.put(p.model, PROMPT_VERSION, job.digest, span_key(chunk.start_line, chunk.end_line), text)
                report.generated += 1
                report.refused_in_a_row = 0
                n = report.generated
            # A count: rewritten in place on a terminal, not a line per answer in a log.
            progress(Tick(f"lexical+ctx: {n}/{total} contexts generated", n, total))

    failures: list[BaseException] = []  # what a worker could not handle (the cache unwritable): re-raised

    def worker() -> None:
        try:
            while not stop.is_set():
                try:
                    job = jobs.get_nowait()
                except queue.Empty:
                    return
                do(job)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread, which raises it
            with lock:
                failures.append(exc)
            stop.set()

    threads = [threading.Thread(target=worker, name=f"contextualize-{n}", daemon=True)
               for n in range(max(1, min(workers, len(p.jobs))))]
    for thread in threads:
        thread.start()
    said = [0.0]  # when the last "no answer" note was given

    def quiet_note() -> None:
        # An endpoint that accepts connections and never answers costs minutes of retried timeouts:
        # say so, rather than look hung.
        now = time.monotonic()
        quiet = now - answered[0]
        if quiet >= QUIET_NOTE_SECONDS and now - said[0] >= QUIET_NOTE_SECONDS:
            said[0] = now
            progress(f"lexical+ctx: no answer from the model for {int(quiet)} s (a request that times out is "
                     f"retried; Ctrl-C stops and keeps the {report.generated} contexts generated so far)")

    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(0.2)  # in slices: the main thread stays interruptible
                quiet_note()
    except BaseException:
        # Ctrl-C (or a bug): start no new request, let those in flight land for a moment.
        stop.set()
        deadline = time.monotonic() + INTERRUPT_GRACE
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        with lock:
            report.interrupted = True
            kept = report.generated
        progress(f"lexical+ctx: interrupted; {kept} of {total} contexts generated and kept, run again to resume")
        raise
    if failures:
        raise failures[0]
    if report.empty:
        progress(f"lexical+ctx: {report.empty} empty answers were not kept (asked again next run)")
    if report.refused and not report.stopped:
        if not report.generated:  # every file asked was refused: nothing says the next one would not be
            report.stopped = report.refusal
        else:
            progress(f"lexical+ctx: the API refused {counted(report.refused, 'chunk')} of {counted(report.refused_files, 'file')}, "
                     f"which keep their offline context (asked again next run; first: {report.refusal})")
    if report.stopped:
        raise GenerationStopped(
            f"{report.stopped}; {report.generated} of {total} contexts generated and kept, "
            f"run again to resume"
        )
    return report
