"""Orchestration shared by the CLI and the Python API: refresh a store, search it, report on it."""
from __future__ import annotations

import bisect
import datetime as _dt
import functools
import itertools
import os
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Callable

from . import __version__
from .freshness import racy, settle
from .index_options import (CONTEXTUAL, IndexOptions, chunker_for, configured_retriever, embeds, use_profile,
                            wanted_bits, wanted_context_model, wanted_model)
from .memo import Memo
from .parallel import WorkerLost
from .patterns import PatternError, compile_patterns
from .discover import (RULES_VERSION, Discovery, DiscoveryError, as_walked, require_root, root_path, string_items,
                       unwatched_changed, user_places, walk, walk_record)
from .extras import SetupError
from .progress import Tick, from_caller, raised_by_caller
from .read import BINARY, DECODER_VERSION, SYMLINK, UNDECODABLE, UNREADABLE, VANISHED, read_source
from .records import SearchHit, Unchunked
from .settings import env_float
from .verbatim import (WINDOW as VERBATIM_WINDOW, format_strings, holding_first, named_first, template_first,
                       texts_to_find, window as verbatim_window)
from .retrievers.base import REGISTRY, Released, build_retriever, check_search_args, get_spec, unknown_retriever
from .store import layout
from .store.atomic import remove_stale_temps
from .store.lock import LockBusy, LockDamaged, StoreRemoved, WriterLock, writer as lock_writer

Progress = Callable[[str], None]

# Errors that say what the asker or the machine must fix (the root, the store's disk, an extra's
# setup), not that an index is damaged: re-raised as they are, never answered by a rebuild.
# (PatternError: a -e pattern too slow for a file, raised from inside the search's filter)
_NOT_DAMAGE = (DiscoveryError, layout.StoreError, SetupError, WorkerLost, PatternError)
# What reading a damaged store file raises: a short or garbled file (ValueError, KeyError, TypeError
# from its parsing; AttributeError from valid JSON of another shape, `[]` where an object was
# written) or numbers pointing outside their arrays (IndexError).
_DAMAGE = (RuntimeError, ValueError, KeyError, TypeError, IndexError, AttributeError)


def _not_damage(exc: BaseException) -> bool:
    """Whether an exception of a _DAMAGE type says nothing of the store: one of ours that means
    something else, or one the caller's progress callback raised."""
    return isinstance(exc, _NOT_DAMAGE) or raised_by_caller(exc)


# A first build of this many files or more says so once, on a terminal or not.
FIRST_BUILD_NOTE = 1000


def _quiet(_msg: str) -> None:
    pass


def _now() -> str:
    return iso_time(time.time())


def iso_time(seconds: float) -> str:
    """A time as the store and `status` write it: ISO 8601 in UTC, to the second."""
    return _dt.datetime.fromtimestamp(seconds, _dt.timezone.utc).isoformat(timespec="seconds")


def _retriever_of(name: str, manifest: dict):
    """The retriever as the manifest's options configure it, and whether the index was written by
    a version that indexes differently (its terms, its chunker): a refresh rebuilds that one, as
    `index` would."""
    options = IndexOptions.from_json(manifest["config"]["options"])
    retriever = configured_retriever(name, options)
    use_profile(retriever, name, options.profile)
    return retriever, _config(retriever, options) != manifest["config"]


def _checked(name: str, manifest: dict, rdir: str) -> tuple[bool, str]:
    """For status: (written by a version that indexes differently, why the index cannot answer: a
    remembered model gone, a store file torn). Other failures say nothing about the index."""
    try:
        retriever, outdated = _retriever_of(name, manifest)
    except SetupError as exc:
        return False, str(exc)
    except (RuntimeError, OSError, ValueError, KeyError, TypeError):
        return False, ""
    try:
        # What a query checks before it answers (file sizes against the manifest's): a truncated
        # segment said `ready`, and the next query rebuilt it.
        retriever.check_store(rdir, manifest["state"])
    except (OSError, *_DAMAGE) as exc:
        if not _not_damage(exc):
            return outdated, (f"the index is damaged ({exc}); the next query or "
                              f"`retrieval index --retriever {name}` rebuilds it")
    return outdated, ""


def _model_changed(name: str, manifest: dict) -> bool:
    """The index was built with another model than the one asked for now: it must be rebuilt."""
    if not embeds(name) and name != CONTEXTUAL:
        return False
    remembered = IndexOptions.from_json(manifest["config"]["options"])
    if name == CONTEXTUAL:
        return wanted_context_model(name, remembered) != remembered.context_model
    return (wanted_model(name, remembered) != remembered.embed_model
            or wanted_bits(name, remembered) != remembered.turbovec_bits)


def admits_a_file(root: str, options: IndexOptions) -> bool:
    """Whether the tree holds a file these options would index: a walk, then its files read until
    one holds text (`--include '*.dat'` matching binaries only passed the walk, and the build
    replaced the index with an empty one). Nothing is written."""
    root = os.path.abspath(root)
    discovery = options.discovery(layout.store_dir(root))
    try:
        files = walk(root, discovery).files
    except (DiscoveryError, OSError):
        return True  # the build itself says what is wrong
    return any((text := read_source(f, discovery.max_bytes).text) is not None and text.strip() for f in files)


def remembered_options(root: str, name: str = "lexical") -> IndexOptions | None:
    """The options root's index of `name` was last built with; for a retriever with no readable
    index of its own, the filters its others were built with (`_inherited`); None without either."""
    store = layout.store_dir(os.path.abspath(root))
    own = _built_options(store, name)
    return own if own is not None else _inherited(store, name)


def _inherited(store: str, name: str) -> IndexOptions | None:
    """What a retriever's first build starts from: the filters the user gave an earlier `index`
    (what is walked and how it is read), taken from the lexical index, else the first other one
    built. The filters are the index's, not one retriever's: `index --include 'src/**'` and then
    `index` with an extra installed since built that extra over the whole tree, under a note saying
    the remembered filters applied. Not BM25's parameters nor the models: each retriever's own."""
    for other in dict.fromkeys(("lexical", *sorted(REGISTRY))):
        options = _built_options(store, other) if other != name else None
        if options is not None:
            return IndexOptions(include=options.include, exclude=options.exclude, max_bytes=options.max_bytes,
                                policy=options.policy, profile=options.profile)
    return None


def _built_options(store: str, name: str) -> IndexOptions | None:
    cached = _OPEN.get((store, name))
    try:
        # The manifest a query in this process just opened, when it is still the committed one.
        if cached is not None and cached[0] == _manifest_key(store, name):
            manifest = cached[1]
        else:
            manifest = read_manifest(store, name)
        return IndexOptions.from_json(manifest["config"]["options"]) if manifest else None
    except (layout.ManifestProblem, layout.StoreError, ValueError, TypeError):
        return None


@dataclass
class RefreshReport:
    retriever: str
    status: str  # indexed | up to date | skipped | failed
    chunks: int = 0  # chunks in the index after the refresh
    new_chunks: int = 0  # chunks (re)processed by this refresh
    files: int = 0
    reread: list[str] = field(default_factory=list)  # files whose bytes were read
    reprocessed: list[str] = field(default_factory=list)  # files chunked and indexed again
    empty: int = 0  # of those, files that gave no chunk (nothing but blank lines)
    removed: list[str] = field(default_factory=list)
    skipped: dict = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)  # paths the walk or the reads could not read
    unapplied: list[str] = field(default_factory=list)  # ignore files it could not read (Discovery.unapplied)
    reason: str = ""
    seconds: float = 0.0
    embedded: int | None = None  # of new_chunks, those a dense retriever embedded (the rest: vectors reused)


# File manifest entry: [size, mtime_ns, digest, language, kind, chunks, skip reason]
SIZE, MTIME, DIGEST, LANG, KIND, NCHUNKS, SKIP = range(7)


def file_table(manifest: dict) -> dict[str, list]:
    """{path: entry} from the manifest's columns (see layout.FILE_COLUMNS)."""
    columns = manifest["files"]
    return dict(zip(columns["path"], map(list, zip(*(columns[c] for c in layout.FILE_COLUMNS[1:])))))


def _file_columns(files: dict[str, list], ctimes: dict[str, int], marks: dict[str, bool | None]) -> dict:
    paths = sorted(files)
    entries = [files[p] for p in paths]
    out = {"path": paths}
    for i, name in enumerate(layout.FILE_COLUMNS[1:]):
        out[name] = [e[i] for e in entries]
    out[layout.CTIME_COLUMN] = [ctimes.get(p, 0) for p in paths]
    if any(m is not None for m in marks.values()):
        out[layout.MARKED_COLUMN] = [marks.get(p) for p in paths]
    return out


def _recorded(manifest: dict, column: str) -> dict:
    """{path: value} of an optional column of the file table ({} when the manifest has none: it
    predates ctimes, or no .gitattributes marked anything). A file whose ctime or mark changed is
    indexed again, its size, mtime and bytes unchanged."""
    columns = manifest["files"]
    values = columns.get(column)
    return dict(zip(columns["path"], values)) if values else {}


def _config(retriever, options: IndexOptions) -> dict:
    fp = getattr(retriever, "fingerprint", None)
    return {"options": options.to_json(), "retriever": fp() if fp else {}, "version": 1}


def _config_change(old, new, key: str = "") -> str:
    """The first setting in which two index configs differ, `terms.features 21, now 22`."""
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new), key=str):
            if old.get(k, _ABSENT) != new.get(k, _ABSENT):
                inner = k if key in ("", "retriever") else f"{key}.{k}"  # the retriever's own, unprefixed
                return _config_change(old.get(k, _ABSENT), new.get(k, _ABSENT), inner)
    shown = ["none" if v is _ABSENT else str(v)[:40] for v in (old, new)]
    return f"{key or 'config'} {shown[0]}, now {shown[1]}"


_ABSENT = object()


def _watch_json(discovery: Discovery) -> dict:
    return {path: list(value) for path, value in sorted(discovery.watch.items())}


def is_current(root: str, manifest: dict, seen: dict | None = None, thorough: bool = False) -> bool:
    """Cheap staleness check: stats only, no walk, no ignore matching.

    Every indexed (or skipped-after-reading) file is re-stat'ed; every walked directory too, since
    adding, removing or renaming an entry changes its directory's mtime; and ignore files (also
    those outside the tree, and those absent, recorded with mtime 0) and over-cap files, whose
    changes alter eligibility without touching any directory. With `thorough`, the extension-less
    files no `#!` line made eligible too (discover.walk's `unwatched`: curl's 1,980 test cases, a
    stat each, 5 ms there), which an edit in place may make a script: a server checks them after
    a change it was told of, a cold query does not.

    `seen` ({path: stat result or the OSError}), shared by the calls of one `status`: each path is
    stat'ed once however many indexes list it (one walk of the tree per index, six on a big one).
    """
    watch = manifest.get("watch")
    if not isinstance(watch, dict) or _walked_otherwise(manifest):
        return False
    files = manifest["files"]
    checked = manifest.get("checked_ns")
    now = time.time_ns()
    fd = None
    if os.stat in os.supports_dir_fd:
        # Paths relative to the open root: no joining, and a shorter lookup for the kernel.
        try:
            fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError:
            return False
        stat = functools.partial(os.stat, dir_fd=fd)
    else:  # pragma: no cover - Windows
        def stat(rel):
            return os.stat(os.path.join(root, rel))
    if seen is not None:
        stat = _remembered(stat, seen)
    try:
        for rel, (size, mtime, *ctime) in watch.items():
            try:
                st = stat(rel)
            except FileNotFoundError:
                if mtime == 0:  # an ignore file that was absent, and still is
                    continue
                return False
            if st.st_mtime_ns != mtime or (size and st.st_size != size):
                return False
            if ctime and st.st_ctime_ns != ctime[0]:  # unreadable when indexed: a chmod since?
                return False
        ctimes = files.get(layout.CTIME_COLUMN) or itertools.repeat(0)
        for rel, size, mtime, ctime in zip(files["path"], files["size"], files["mtime"], ctimes):
            st = stat(rel)
            if st.st_mtime_ns != mtime or st.st_size != size or racy(mtime, checked, now):
                return False
            if ctime and st.st_ctime_ns != ctime:  # replaced by a file of the same size and mtime
                return False
        if thorough and unwatched_changed(
                (manifest.get("walked") or {}).get("unwatched") or {},
                lambda rel, follow: os.stat(os.path.join(root, rel), follow_symlinks=follow) if fd is None or follow
                else os.stat(rel, dir_fd=fd, follow_symlinks=False)):
            return False
    except (OSError, ValueError, TypeError, KeyError):
        return False
    finally:
        if fd is not None:
            os.close(fd)
    return True


def _walked_otherwise(manifest: dict) -> str:
    """Why the index's walk is not the one this process would make, whatever its files: "version"
    (another decoder or walker: a walk may now admit more files), "user" (another HOME,
    XDG_CONFIG_HOME or GIT_CONFIG_*: other ignore rules), else ""."""
    if manifest.get("decoder") != DECODER_VERSION or manifest.get("walker", 1) != RULES_VERSION:
        return "version"
    here = user_places()
    if manifest.get("user", here) != here:  # (an index written before it was kept has none)
        return "user"
    return ""


def _remembered(stat: Callable, seen: dict) -> Callable:
    def remembered(rel):
        got = seen.get(rel)
        if got is None:
            try:
                got = seen[rel] = stat(rel)
            except OSError as exc:
                seen[rel] = exc
                raise
        if isinstance(got, OSError):
            raise got
        return got
    return remembered


def _rebuilding(progress: Progress, name: str, damage: BaseException) -> None:
    """The one diagnostic for damage found and repaired (a `note:`, as scripts read stderr)."""
    from .notes import first_line

    progress(f"note: the {name} index is damaged ({first_line(damage)}); rebuilding it")  # one line, as every note


def read_manifest(store: str, name: str) -> dict | None:
    """layout.read_manifest, its remembered options checked too (ManifestProblem when unusable)."""
    manifest = layout.read_manifest(store, name)
    if manifest is not None:
        try:
            IndexOptions.from_json(manifest["config"]["options"])
        except (ValueError, TypeError) as exc:
            raise layout.ManifestProblem(f"the {name} index is corrupt ({exc})") from None
    return manifest


def _open_manifest(store: str, name: str, progress: Progress) -> dict | None:
    try:
        return read_manifest(store, name)
    except layout.ManifestProblem as exc:
        progress(f"note: {exc}; rebuilding it")
        return None


def refresh(
    root: str | os.PathLike[str],
    name: str = "lexical",
    *,
    options: IndexOptions | None = None,
    force: bool = False,
    progress: Progress = _quiet,
    lock_timeout: float | None = None,
) -> RefreshReport:
    """Bring one retriever's index up to date with the tree. Takes the writer lock."""
    root = root_path(root)
    progress = from_caller(progress)
    if options is not None and not isinstance(options, IndexOptions):
        # Deeper down its attributes are missing, which reads as a damaged index (and rebuilt it).
        raise TypeError(f"options must be an IndexOptions, not {type(options).__name__}")
    started = time.perf_counter()
    retriever = build_retriever(name)
    store = layout.store_dir(root)
    require_root(root)
    layout.ensure_store(store)
    rdir = layout.retriever_dir(store, name)
    layout.refuse_symlink(rdir)
    try:
        os.makedirs(rdir, exist_ok=True)
        lock = WriterLock(layout.lock_path(store))
        # A query's wait (lock_timeout) counts from when the writer started: see WRITER_WAIT.
        lock.acquire(timeout=lock_timeout, on_wait=progress, since_taken=lock_timeout is not None)
    except OSError as exc:
        if raised_by_caller(exc):  # told of the wait, the caller's callback raised
            raise
        if options is None and not force and getattr(exc, "errno", None) in layout.NOT_WRITABLE:
            current = _current_report(root, store, rdir, name)
            if current is not None:  # nothing to write: a CI step checking a restored cache passes
                current.seconds = time.perf_counter() - started
                return current
        raise layout.unwritable("write", store, exc) from exc
    try:
        # Under the lock: a live writer's temp file is never taken for a dead one's.
        remove_stale_temps(store)
        remove_stale_temps(rdir, levels=2)
        layout.write_markers(store, root)
        try:
            try:
                report = _refresh_locked(root, store, rdir, name, retriever, options, force, progress)
            except _DAMAGE as exc:
                if force or _not_damage(exc):
                    raise
                # An old segment turned out damaged while being updated: rebuild from the sources.
                _rebuilding(progress, name, exc)
                report = _refresh_locked(root, store, rdir, name, retriever, options, True, progress)
        except BaseException:
            # What this write put beside the committed index goes with it: on a full disk a failed
            # refresh's segment kept the space the next one needed (freeing what it needed was not
            # enough), and `index --retriever all` failed in every retriever after the first failure.
            _collect_uncommitted(retriever, store, rdir, name)
            raise
    except OSError as exc:
        if raised_by_caller(exc):
            raise
        # Sources are read with their errors counted, so this is the store: a full disk, a
        # read-only directory. Nothing was committed; the previous index is intact.
        raise layout.unwritable("update", store, exc) from exc
    finally:
        lock.release()
    report.seconds = time.perf_counter() - started
    return report


def _current_report(root: str, store: str, rdir: str, name: str) -> RefreshReport | None:
    """An up-to-date refresh's report for an index its store cannot take a writer of (read-only)
    when a refresh would write nothing: current by the files' stats, built by this version with its
    settings, readable (what `status` calls ready); else None."""
    try:
        manifest = layout.read_manifest(store, name)
        if manifest is None or not is_current(root, manifest):
            return None
        outdated, problem = _checked(name, manifest, rdir)
        if outdated or problem:
            return None
        files = file_table(manifest)
    except (layout.ManifestProblem, layout.StoreError, DiscoveryError, OSError, *_DAMAGE):
        return None
    return RefreshReport(name, "up to date", chunks=sum(e[NCHUNKS] for e in files.values()),
                         files=sum(1 for e in files.values() if e[NCHUNKS] > 0),
                         skipped=dict(sorted((manifest.get("skipped") or {}).items())))


def _collect_uncommitted(retriever, store: str, rdir: str, name: str) -> None:
    """Remove what the committed index does not name, keeping what a build resumes from (the
    vectors' checkpoints). The committed state is read again, not assumed: a write that failed
    after its commit must not take the new index for garbage. Best effort: the next commit's
    collection clears whatever is left."""
    try:
        committed = layout.read_manifest(store, name)
        retriever.collect_garbage(rdir, committed["state"] if committed else None, keep_resumable=True)
    except (layout.ManifestProblem, layout.StoreError, OSError, KeyError, TypeError, AttributeError, ValueError):
        pass


def _refresh_locked(root, store, rdir, name, retriever, options, force, progress) -> RefreshReport:
    manifest = _open_manifest(store, name, progress)
    if manifest is not None and not force:
        try:
            retriever.check_store(rdir, manifest["state"])
        except (OSError, *_DAMAGE) as exc:
            if _not_damage(exc):
                raise
            _rebuilding(progress, name, exc)
            force = True
    if options is None:
        options = IndexOptions.from_json(manifest["config"]["options"]) if manifest else (
            _inherited(store, name) or IndexOptions())
    if options.bm25 and not get_spec(name).bm25:
        options = replace(options, bm25=None)  # given to every retriever by `index --bm25` in all-mode
    # The models asked for now, or the defaults again: remembered from here on.
    options = replace(options, embed_model=wanted_model(name, options),
                      context_model=wanted_context_model(name, options), turbovec_bits=wanted_bits(name, options))
    if options.bm25 or options.embed_model or options.context_model or options.turbovec_bits:
        retriever = configured_retriever(name, options)
    use_profile(retriever, name, options.profile)
    config = _config(retriever, options)
    rebuilt = False  # an index there is rebuilt (forced, or its settings changed): no first build
    if manifest is not None and (force or manifest.get("config") != config):
        if not force and manifest["config"].get("options") == config["options"]:
            # Not options given now: the index was written by another version of this code (an
            # older or a newer one) or under another setting; rebuilt, and said, not silently.
            progress(f"note: the {name} index was built by another version of retrieval or with other "
                     f"settings ({_config_change(manifest['config'], config)}); rebuilding it")
        # Builds killed before committing left their segments, versions or generations beside the
        # committed index (a next number each: ten kills, five times the files): none is named by
        # it, and none is resumed but the vectors' checkpoints.
        try:
            retriever.collect_garbage(rdir, manifest["state"], keep_resumable=True)
        except (KeyError, TypeError, AttributeError, ValueError):
            pass  # a damaged state names nothing reliably: the commit's collection clears them
        rebuilt = True
        manifest = None  # options changed: start from nothing, old segments are collected below
    walk_options = options.discovery(store)
    # Under another decoder every file is read again: those it refused this one may take, and one
    # it read otherwise (lines ending in a lone CR: read.DECODER_VERSION) is indexed again.
    undecided = () if manifest and manifest.get("decoder") == DECODER_VERSION else (BINARY, UNDECODABLE)
    checked = time.time_ns()  # before any stat: what the entries recorded below are judged against
    # The last walk's findings when nothing it saw has changed (stats only: a walk lists every
    # directory and matches every name against the rules), else a walk.
    discovery = _as_walked(root, manifest, walk_options) if manifest is not None and not undecided else None
    if discovery is None:
        discovery = walk(root, walk_options)
        walked = walk_record(discovery, checked)
    else:
        walked = manifest["walked"]
    report = RefreshReport(name, "up to date", skipped=dict(discovery.skipped), unreadable=list(discovery.unreadable),
                           unapplied=list(discovery.unapplied))
    old_files = file_table(manifest) if manifest else {}
    new_files: dict[str, list] = {}
    skip_counts: Counter = Counter(discovery.skipped)
    # Pass 1, stats only: a file whose size, mtime and ctime match its entry is taken as unchanged.
    # The ctime catches a file replaced by one of the same size and mtime (`mv`, `cp -p`, archives
    # with whole-second times); an index written before ctimes were kept has none to compare.
    to_read: list[tuple] = []
    old_checked = manifest.get("checked_ns") if manifest else None
    old_ctimes = _recorded(manifest, layout.CTIME_COLUMN) if manifest else {}
    old_marks = _recorded(manifest, layout.MARKED_COLUMN) if manifest else {}
    for f in discovery.files:
        entry = old_files.get(f.path)
        if (entry is not None and entry[SIZE] == f.size and entry[MTIME] == f.mtime_ns
                and old_ctimes.get(f.path, f.ctime_ns) == f.ctime_ns and old_marks.get(f.path) == f.marked
                and not racy(f.mtime_ns, old_checked, checked) and not undecided):
            new_files[f.path] = entry
            if entry[SKIP]:
                skip_counts[entry[SKIP]] += 1
        else:
            to_read.append((f, entry))
    discovered = {f.path for f in discovery.files}
    gone = [p for p in old_files if p not in discovered]
    watch = _watch_json(discovery)
    # A manifest without the walk's record (written before it was kept), or whose walk's stats
    # proved nothing (walk_record: `settled`), is written again with this walk's.
    if (manifest is not None and not to_read and not gone and manifest.get("watch") == watch and not undecided
            and manifest.get("user") == discovery.user and manifest.get("walker", 1) == RULES_VERSION
            and manifest.get("walked") == walked):
        # Nothing to commit, but a writer killed earlier may have left segments behind.
        retriever.collect_garbage(rdir, manifest["state"])
        report.skipped = dict(sorted(skip_counts.items()))
        report.files = sum(1 for e in new_files.values() if e[NCHUNKS] > 0)
        report.chunks = sum(e[NCHUNKS] for e in new_files.values())
        return report
    # Pass 2: read, chunk and hand each changed file to the retriever as it goes, so memory holds
    # one file's text at a time, not the whole tree's.
    changed = manifest is None or any(old_files[p][NCHUNKS] > 0 for p in gone)  # the index itself
    total = len(to_read)
    max_bytes = walk_options.max_bytes
    chunk = chunker_for(retriever, options)
    # A retriever that chunks in its worker processes gets the text, and says how many chunks came.
    in_workers = getattr(retriever, "chunks_in_workers", False)

    # A first build indexes files; a refresh re-reads the changed ones.
    verb, noun = ("indexed", "files") if manifest is None else ("re-read", "changed files")
    if manifest is None and total >= FIRST_BUILD_NOTE:
        # Said once, whatever stderr is: off a terminal (an agent's shell) a first query on a large
        # repository was half a minute of silence.
        progress(f"{name}: rebuilding the index of {total} files" if rebuilt else
                 f"{name}: building the index of {total} files (once: later runs re-read only what changed)")

    finished = 0  # files read and, when chunked in workers, chunked
    last_note, counting = time.monotonic(), False

    def one_done() -> None:
        """Count a file finished; say the count now and then, and the last one once any was said
        (an MCP client heard one count, 64 of 70, and none while the workers chunked the files read
        long before; a count over in a tenth of a second says nothing, as before)."""
        nonlocal finished, last_note, counting
        finished += 1
        if (finished == total and counting) or time.monotonic() - last_note > 0.1:
            progress(Tick(f"{name}: {verb} {finished}/{total} {noun}", finished, total))
            last_note, counting = time.monotonic(), True

    def counted(entry: list, had_chunks: bool, n: int) -> bool:
        """Record a read file's chunk count; whether the index must hear of the file."""
        nonlocal changed
        entry[NCHUNKS] = n
        report.new_chunks += n
        report.empty += not n
        one_done()
        if n or had_chunks:
            changed = True
            return True
        return False

    def changes():
        nonlocal changed
        for f, entry in to_read:
            content = read_source(f, max_bytes)
            report.reread.append(f.path)
            had_chunks = entry is not None and entry[NCHUNKS] > 0
            if (entry is not None and content.digest and entry[DIGEST] == content.digest
                    and entry[SKIP] not in undecided and not (undecided and content.relined)
                    and entry[SKIP] == content.skip_reason and old_marks.get(f.path) == f.marked):
                # Touched but identical: record the new stat, re-process nothing.
                new_files[f.path] = [f.size, f.mtime_ns] + entry[DIGEST:]
                if entry[SKIP]:
                    skip_counts[entry[SKIP]] += 1
                one_done()
                continue
            if content.text is None:
                skip_counts[content.skip_reason] += 1
                # A file that vanished, became a link or could not be opened is not recorded: the
                # next refresh looks again. A chmod making it readable changes neither size nor
                # mtime, only the inode's ctime: watched, so that a query sees it.
                if content.skip_reason == UNREADABLE:
                    watch[f.path] = [f.size, f.mtime_ns, f.ctime_ns]
                    report.unreadable.append(f.path)
                if content.skip_reason not in (VANISHED, UNREADABLE, SYMLINK):
                    new_files[f.path] = [f.size, f.mtime_ns, content.digest, f.language, f.kind, 0, content.skip_reason]
                one_done()
                if had_chunks:
                    changed = True
                    yield f, []  # its old chunks go
                continue
            f = content.file  # its language as its text tells it (a C++ `.h` header)
            entry = new_files[f.path] = [f.size, f.mtime_ns, content.digest, f.language, f.kind, 0, ""]
            report.reprocessed.append(f.path)
            if in_workers:
                yield f, Unchunked(content.text, options, functools.partial(counted, entry, had_chunks))
            else:
                chunks = chunk(content.text, f)
                if counted(entry, had_chunks, len(chunks)):
                    yield f, chunks

    removed_paths = [p for p in gone if old_files[p][NCHUNKS] > 0]
    # A file still on disk but no longer eligible (ignored or excluded now) must leave no trace in
    # the store, not even as deleted postings: its segments are rewritten without it.
    purge = any(os.path.lexists(os.path.join(root, p)) for p in removed_paths)
    state = retriever.update_store(rdir, manifest["state"] if manifest else None, removed_paths, changes(),
                                   purge=purge)
    report.removed = [p for p in old_files if p not in new_files]
    report.skipped = dict(sorted(skip_counts.items()))
    report.files = sum(1 for e in new_files.values() if e[NCHUNKS] > 0)
    now = _now()
    new_manifest = {
        "schema": layout.SCHEMA,
        "retriever": name,
        "tool_version": __version__,
        "root": root,
        "created": manifest["created"] if manifest else now,
        "updated": now,
        "config": config,
        "files": _file_columns(new_files, {f.path: f.ctime_ns for f in discovery.files},
                               {f.path: f.marked for f in discovery.files}),
        "skipped": report.skipped,
        "unapplied": sorted(set(discovery.unapplied)),  # said to every query (see _unapplied_note)
        "decoder": DECODER_VERSION,
        "walker": RULES_VERSION,
        "watch": watch,
        "user": discovery.user,
        "walked": walked,
        "checked_ns": checked,
        "state": state,
    }
    _settle_racy(root, new_manifest, new_files, discovery, max_bytes)
    # Again: a `git clean -fdx` during the build removed them, and the store it finished was
    # untracked in `git status` and refused by `clean` as not an index.
    layout.write_markers(store, root)
    layout.commit_manifest(store, name, new_manifest)
    retriever.collect_garbage(rdir, state)
    report.status = "indexed" if changed or report.removed else "up to date"
    report.chunks = sum(e[NCHUNKS] for e in new_files.values())
    dense = state.get("dense", state) if isinstance(state, dict) else None  # hybrid's or turbovec's
    if isinstance(dense, dict) and isinstance(dense.get("embedded"), int):
        report.embedded = dense["embedded"]
    return report


def _as_walked(root: str, manifest: dict, walk_options) -> Discovery | None:
    """discover.as_walked() for the tree this manifest indexed (None: walk)."""
    walked = manifest.get("walked")
    if (walked is None or manifest.get("root") != root or manifest.get("walker") != RULES_VERSION
            or manifest.get("user") != user_places()):
        return None
    columns = manifest["files"]
    marks = columns.get(layout.MARKED_COLUMN) or [None] * len(columns["path"])
    return as_walked(root, walk_options, walked, manifest.get("watch"), (columns["path"], marks))


def _settle_racy(root, manifest, files, discovery, max_bytes) -> None:
    """Record a later check time when the few racy entries verify (see freshness.settle)."""
    checked = manifest["checked_ns"]
    now = time.time_ns()
    racy_entries = {p: (e[MTIME], e[DIGEST]) for p, e in files.items() if racy(e[MTIME], checked, now)}
    if racy_entries:
        by_path = {f.path: f for f in discovery.files if f.path in racy_entries}
        manifest["checked_ns"] = settle(
            racy_entries, checked, lambda p: read_source(by_path[p], max_bytes).digest if p in by_path else None)


ASIDE = ".removing-"  # a store being removed is moved into <store>.removing-<pid>/ first (see clean)


def clean(root: str | os.PathLike[str], *, progress: Progress = _quiet) -> bool:
    """Remove the store of root (and nothing else). True when there was one."""
    progress = from_caller(progress)
    store = layout.store_dir(root_path(root))
    if os.path.islink(store):
        # Never ours to follow (see refuse_symlink): its lock was taken through it, then rmtree
        # failed with "Cannot call rmtree on a symbolic link". The link may be the user's.
        raise layout.StoreError(f"refusing to remove {store}: it is a symbolic link, not an index "
                                "(remove the link yourself; what it points to is left alone)")
    if not os.path.isdir(store):
        # A clean killed half way left its store aside (below), and no store names it now.
        return _remove_aside(store)
    try:
        os.lstat(os.path.join(store, "STORE.json"))
    except (FileNotFoundError, NotADirectoryError):
        raise layout.StoreError(f"{store} does not look like a retrieval index; not removing it") from None
    except OSError as exc:  # an unreadable store is not a foreign one (it said so)
        raise layout.unwritable("remove", store, exc) from exc
    try:
        foreign = layout.foreign_names(store)
    except OSError as exc:
        raise layout.unwritable("remove", store, exc) from exc
    if foreign:
        # Put there since it was made ours (a build refuses a directory holding them): removed with
        # the store, a user's notes were gone.
        raise layout.StoreError(f"refusing to remove {store}: it holds {foreign[0]}, which retrieval did not write "
                                "(move that away, then clean again)")
    from .store.atomic import remove_tree

    # Under the writer lock: a build going on finishes first (removed under it, it recreated parts
    # of the store and said it succeeded), and one waiting for the lock sees the store gone.
    lock = WriterLock(layout.lock_path(store))
    try:
        lock.acquire(on_wait=progress)
    except LockDamaged:
        lock = None  # no writer can hold a lock that is not a file: nothing to wait for
    except OSError as exc:
        if raised_by_caller(exc):
            raise
        raise layout.unwritable("remove", store, exc) from exc
    try:
        # Moved aside first, then removed: a writer starting meanwhile (`index --retriever all`
        # going on to its next retriever) recreated the lock in the store being removed, took it
        # and wrote there, so the removal failed half done ("Directory not empty") or deleted an
        # index that writer reported built. Now it builds a new store, and one that waited on this
        # lock finds it removed. Aside, the store keeps its name, which walks prune: a clean
        # killed half way leaves nothing a build would index (and the next clean removes it).
        _remove_aside(store)
        aside = f"{store}{ASIDE}{os.getpid()}"
        try:
            os.mkdir(aside)
            os.rename(store, os.path.join(aside, os.path.basename(store)))
        except OSError as exc:
            raise layout.unwritable("remove", store, exc) from exc
        try:
            remove_tree(aside)
        except OSError as exc:
            _put_back(store, aside, root_path(root), exc)
    finally:
        if lock is not None:
            lock.release()
    return True


def _put_back(store: str, aside: str, root: str, exc: OSError) -> None:
    """After a removal that failed part way (a directory made read-only, `chattr +i`): what is left
    of the store goes back in its place, marked as the store (its .gitignore may be gone), not left
    in a `.retrieval.removing-N/` the user never heard of, which git listed and the error did not
    name. Raises the error saying which."""
    why = f"{exc.strerror or exc}" + (f" ({exc.filename})" if isinstance(exc.filename, str) else "")
    try:
        if os.path.lexists(store):  # a writer began a new store meanwhile: never put back over it
            raise FileExistsError(store)
        os.rename(os.path.join(aside, os.path.basename(store)), store)
    except OSError:
        raise layout.StoreError(f"cannot remove the index at {store}: {why}; what is left of it is in "
                                f"{aside} (remove it yourself)") from exc
    try:
        os.rmdir(aside)
        layout.write_markers(store, root)
    except (OSError, layout.StoreError):
        pass  # (what is left is in place; an empty aside directory is removed by the next clean)
    raise layout.StoreError(f"cannot remove all of the index at {store}: {why}; what is left of it stays there "
                            "(a query rebuilds what is missing)") from exc


def _remove_aside(store: str) -> bool:
    """Remove the stores a killed clean left aside beside `store` (<store>.removing-<pid>/); True
    when there was one."""
    from .store.atomic import remove_tree

    parent, name = os.path.split(store)
    try:
        leftovers = [entry for entry in os.listdir(parent) if entry.startswith(name + ASIDE)]
    except OSError:
        return False
    for leftover in leftovers:
        remove_tree(os.path.join(parent, leftover), ignore_errors=True)
    return bool(leftovers)


# -- searching ---------------------------------------------------------------------------------


def _strings(value, field: str, noun: str) -> tuple[str, ...]:
    """A filter's collection of strings as a tuple: one string is refused (it was taken character by
    character: `"docs/*"` as `*`, every file), and so is anything that is no string."""
    return tuple(string_items(value, field, noun, lambda one: f"({one!r},)"))


@dataclass
class QueryFilter:
    """What a search keeps: paths matching any of these globs (as --path reads them), files of
    this language (a name or alias, any case; or any of several) and of this kind (code, docs or
    config; or any of several); with `patterns`, hits with a line matching any of these regular
    expressions (`query -e`; literal strings with `fixed_strings`, any case with `ignore_case`:
    retrieval.patterns)."""

    paths: tuple[str, ...] = ()
    language: str | tuple[str, ...] = ""
    kind: str | tuple[str, ...] = ""
    patterns: tuple[str, ...] = ()
    fixed_strings: bool = False
    ignore_case: bool = False
    # The globs as given where the command ran, one for each of paths (`./Docx/x.hs` in a
    # subdirectory, which paths holds as `./src/Docx/x.hs`): what notes name, so that a glob they
    # suggest works where it is typed. Empty: paths as they are.
    typed_paths: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self._check_patterns()
        self.typed_paths = _strings(self.typed_paths, "typed_paths", "globs")
        # Checked as the command line checks --path, --lang and --kind: a lone string was taken
        # glob by glob, letter by letter (`"docs/*"` as `*`: every file), and a language alias
        # (`py`) or an unknown language or kind matched nothing, silently.
        from .languages import CODE, CONFIG, DOCS, resolve_language

        self.paths = _strings(self.paths, "paths", "globs")
        for name in ("language", "kind"):
            value = getattr(self, name)
            values = tuple(value) if isinstance(value, (tuple, list)) else (value,)
            for one in values:
                if not isinstance(one, str):
                    raise TypeError(f"{name} must be a str or a tuple of them, not {type(one).__name__}")
            if name == "language":
                values = tuple(resolve_language(v) for v in values if v)
            else:
                wrong = next((v for v in values if v not in ("", CODE, DOCS, CONFIG)), None)
                if wrong is not None:
                    raise ValueError(f"kind must be one of {CODE}, {DOCS}, {CONFIG}, not {wrong!r}")
            values = tuple(dict.fromkeys(v for v in values if v))  # (repeats once; the order given)
            # One value stays a string: what callers and older code read it as.
            setattr(self, name, values[0] if len(values) == 1 else values if values else "")

    def _check_patterns(self) -> None:
        self.patterns = _strings(self.patterns, "patterns", "patterns")
        for name in ("fixed_strings", "ignore_case"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, not {type(getattr(self, name)).__name__}")
        self._regex = compile_patterns(self.patterns, fixed=self.fixed_strings, ignore_case=self.ignore_case) \
            if self.patterns else None

    def __bool__(self) -> bool:
        return bool(self.paths or self.language or self.kind or self.patterns)

    def line_matcher(self, root: str):
        """The lines of root's files the patterns match (retrieval.patterns.LineMatcher), read
        once per search; None without patterns."""
        if not self.patterns:
            return None
        from .output import shell_word
        from .patterns import LineMatcher

        return LineMatcher(root, self._regex, " or ".join(f"-e {shell_word(p)}" for p in self.patterns))

    def compile(self) -> Callable[[str, str, str], bool]:
        from .ignore import compile_selection, selector
        from .notebook import JUPYTER, is_notebook

        rules = compile_selection(self.paths)
        selects = selector(rules) if rules else None
        languages = frozenset(v.lower() for v in self.languages)
        kinds = frozenset(self.kinds)
        notebooks = JUPYTER in languages

        def allow(path: str, lang: str, k: str) -> bool:
            # `jupyter` is every notebook, whatever language its kernel gave its cells.
            if languages and lang not in languages and not (notebooks and is_notebook(path)):
                return False
            if kinds and k not in kinds:
                return False
            return selects(path) if selects else True

        # What the verdicts depend on: an open index keeps them per filter (retrievers.lexical).
        allow.verdict_key = (tuple(self.paths), tuple(sorted(languages)), tuple(sorted(kinds)))
        return allow

    @property
    def languages(self) -> tuple[str, ...]:
        return self.language if isinstance(self.language, tuple) else (self.language,) if self.language else ()

    @property
    def kinds(self) -> tuple[str, ...]:
        return self.kind if isinstance(self.kind, tuple) else (self.kind,) if self.kind else ()


def check_query(query, top_k, filters=None, min_confidence=None) -> None:
    """A search's arguments (service.search, multi.search_all), checked before any index is opened
    or built: a wrong argument is the caller's error, never a damaged index."""
    check_search_args(query, top_k)
    if filters is not None and not isinstance(filters, QueryFilter):
        raise TypeError(f"filters must be a QueryFilter, not {type(filters).__name__}")
    if min_confidence is not None:
        from .confidence import LEVELS

        if min_confidence not in LEVELS:
            raise ValueError(f"min_confidence must be one of {', '.join(LEVELS)}, not {min_confidence!r}")


MIN_CONFIDENCE_DEPTH = 100  # hits examined when filtering on confidence (medium needs 0.8 of the best)
# Hits examined first for a pattern's lines (QueryFilter.patterns), and at most: a file holding a
# match is let through whole, most of its chunks without one.
PATTERN_DEPTH = 50
PATTERN_MAX_DEPTH = 3200


def matching_lines(fetch, wanted: int, matcher, allow=None, notes: list[str] | None = None) -> list[SearchHit]:
    """The first `wanted` hits of `fetch(depth, allow)` with a line `matcher` (a LineMatcher)
    matches, ranks renumbered from 1: only files holding a match are ranked, and the search asks
    deeper while fewer hits hold one and the retriever has more, up to PATTERN_MAX_DEPTH (said in
    `notes` when reached short)."""
    allow = matcher.restrict(allow)
    asked = max(wanted, PATTERN_DEPTH)
    while True:
        found = fetch(asked, allow=allow)
        kept = [h for h in found if matcher.in_span(h)]
        if len(kept) >= wanted or len(found) < asked:
            break
        if asked >= PATTERN_MAX_DEPTH:
            if notes is not None:  # (an empty answer said no chunk held both, of one it had not looked at)
                notes.append(f"{matcher.said or '-e'}: the query's first {asked:,} hits in the files holding a match "
                             f"were looked at and {len(kept)} of them {'has' if len(kept) == 1 else 'have'} one; "
                             "deeper ones may too (--path, or more words of the query, narrows the search)")
            break
        asked = min(asked * 4, PATTERN_MAX_DEPTH)
    return [replace(h, rank=n) for n, h in enumerate(kept[:wanted], start=1)]


def first_hits(root, query: str, fetch, depth: int, matcher=None, allow=None,
               notes: list[str] | None = None) -> list[SearchHit]:
    """The first `depth` hits of `fetch(asked, allow=...)` for query, as `search` and `search_all`
    give them: with -e patterns (a LineMatcher), those with a matching line (matching_lines); for
    a file's name or path, the hits of files so named first; for text to find word for word
    (retrieval.verbatim), those whose lines hold it first; either among the same first hits
    however many are asked for (verbatim.window); else as ranked."""
    if matcher is not None:
        return matching_lines(fetch, depth, matcher, allow, notes)
    from .query import search_text
    from .ranking import queried_file_name

    searched = search_text(query)  # (without a log line's time stamp, colour codes, a template's comments)
    name = queried_file_name(searched)
    texts = [] if name else texts_to_find(searched)  # (a pasted output's lines, in turn)
    if not name and not texts:
        return fetch(depth)
    # The same hits are looked at however many are asked for (verbatim.window): a deeper look for a
    # larger -k lifted a hit the smaller one had not, and the first hit changed with -k.
    hits = fetch(max(depth, VERBATIM_WINDOW))
    chosen = verbatim_window(hits)
    if name:
        first = named_first(hits, name, chosen)
    else:
        from .snippets import current_text

        base = root_path(root)
        undiscounted = _undiscounted(searched)

        def liftable(hit) -> bool:
            return hit.docid in chosen and undiscounted(hit)

        def of_files(paths: frozenset) -> list[SearchHit]:  # (within the query's own filters)
            return fetch(VERBATIM_WINDOW, allow=lambda path, lang, kind: path in paths and (
                allow is None or allow(path, lang, kind)))

        strings: dict[str, list] = {}  # (each file read and scanned once for every line looked for)

        def strings_of(path: str) -> list:
            if path not in strings:
                body = current_text(base, path)
                strings[path] = format_strings(body) if body else []
            return strings[path]

        # Those whose lines hold the text first; else those holding a format string that printed it
        # (a message as printed has its values filled in).
        first = None
        for text in texts:
            first = holding_first(hits, text, lambda path, word: current_text(base, path, word), liftable) \
                or template_first(hits, text, strings_of, liftable, of_files)
            if first:
                break
    return (first or hits)[:depth]


def _undiscounted(query: str) -> Callable[[SearchHit], bool]:
    """Whether a hit is in a file the ranking takes at its word (ranking.path_prior): not a test, an
    example, docs, vendored or generated code the query does not ask for."""
    from .languages import detect
    from .ranking import RankingConfig, path_prior, query_words

    words = frozenset(w.lower() for w in query_words(query))
    config = RankingConfig()
    return lambda hit: path_prior(hit.source_path, detect(hit.source_path)[1] or "code", words, config) == 1.0


@dataclass
class SearchResult:
    query: str
    retriever: str
    hits: list[SearchHit]
    notes: list[str] = field(default_factory=list)
    # (size, mtime_ns, digest) of each hit's file as indexed: snippets tell a changed file by it
    indexed: dict[str, tuple] = field(default_factory=dict)
    # With -e patterns, the search's LineMatcher: the lines it matched, for snippets to show
    # without reading the hits' files again.
    matcher: object = field(default=None, repr=False, compare=False)

    @property
    def stale(self) -> bool:
        """Answered from an index older than the tree (another writer, a full disk)."""
        return any(PREVIOUS_SNAPSHOT in note for note in self.notes)


PREVIOUS_SNAPSHOT = "answering from the previous snapshot"
# A query that finds another process refreshing the index waits until that writer has been at it
# this long (then refreshes what that one missed), so an edit saved before a query is in its answer;
# past it, a long rebuild is under way and the query answers from the previous snapshot at once,
# saying so (every query during a build of minutes waited the whole time again). Seconds;
# RETRIEVAL_WRITER_WAIT overrides it.
WRITER_WAIT = 10.0


def writer_wait() -> float:
    return env_float("RETRIEVAL_WRITER_WAIT", WRITER_WAIT)


# Indexes this process has opened, reused while the committed manifest is the very same file (an
# atomic replace always makes a new inode): a long-lived caller parses the manifest and opens the
# segments once, not on every query.
# Bounded, least recently used first out: a process that queries many roots does not grow.
class _OpenIndexes(Memo):
    """A Memo of (manifest key, manifest, engine) whose engines are released when replaced by a newer
    snapshot or dropped for room: an engine holding resources outside Python (pi-serini's Lucene
    readers) frees them then, not never."""

    __slots__ = ()

    def __setitem__(self, key, value):
        old = self.get(key)
        super().__setitem__(key, value)
        if old is not None and old[2] is not value[2]:
            _release(old[2])

    def __delitem__(self, key):
        old = self.get(key)
        super().__delitem__(key)
        if old is not None:
            _release(old[2])


def unreadable_note(report: RefreshReport) -> str:
    """One line naming what the refresh could not read ('' when it read everything): its ignore
    files (unapplied_note), and its files, missing from every answer, which a count in `status`
    alone did not make plain."""
    return "; ".join(note for note in (unapplied_note(report.unapplied), unread_files_note(report.unreadable)) if note)


def _listed(paths: list[str]) -> str:
    from .output import shown_path

    return ", ".join(shown_path(p) for p in paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")


def unread_files_note(unreadable: list[str]) -> str:
    paths = sorted(set(unreadable))
    return f"could not read {_listed(paths)}: left out of the index" if paths else ""


def unapplied_note(unapplied: list[str]) -> str:
    """The ignore files a walk could not read: the files their rules leave out are in every
    answer, the user's exclusions undone."""
    rules = sorted(set(unapplied))
    if not rules:
        return ""
    return f"could not read {_listed(rules)}: {'its' if len(rules) == 1 else 'their'} ignore rules are not applied"


def _unapplied_note(manifest: dict, notes: list[str]) -> None:
    """Say, at every query, the ignore files the index's walk could not read: said only by the
    query that refreshed, later queries handed the files they leave out to agents without a word."""
    rules = manifest.get("unapplied") if isinstance(manifest, dict) else None
    if rules and isinstance(rules, list):
        _note_once(notes, unapplied_note([r for r in rules if isinstance(r, str)]))


def _note_once(notes: list[str], note: str) -> None:
    """A note about the store, said once for all its indexes (`--retriever all` opens each)."""
    if note not in notes:
        notes.append(note)


def _release(engine) -> None:
    release = getattr(engine, "release", None)
    if release is not None:
        release()


_OPEN: Memo = _OpenIndexes(8)
# A long-lived caller that watches the tree (retrieval/server/warm.py) vouches here that the index
# with this manifest key is current: open_index then skips the stat of every file.
VOUCHED: dict[tuple[str, str], tuple] = {}


REPLACED_RETRIES = 20  # snapshots a writer may commit under one open before it counts as a failed attempt


def _manifest_key(store: str, name: str) -> tuple | None:
    try:
        st = os.stat(layout.manifest_path(store, name))
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def open_index(
    root: str | os.PathLike[str],
    name: str = "lexical",
    *,
    stale_ok: bool = False,
    progress: Progress = _quiet,
    notes: list[str] | None = None,
    wait_until: float | None = None,
    thorough: bool = False,
):
    """A retriever attached to root's up-to-date index, building or refreshing it if needed.
    `wait_until` (time.monotonic()): when to stop waiting for another writer, for callers opening
    several indexes of one store (its one lock) within one wait. `thorough`: is_current's."""
    root = root_path(root)
    progress = from_caller(progress)
    require_root(root)
    spec = get_spec(name)
    reason = spec.unavailable_reason()
    if reason:
        raise RuntimeError(reason)
    store = layout.store_dir(root)
    # Refused for reading as for writing: through a link (a `.retrieval` committed to a cloned
    # repository) a query answered from whatever index it pointed at, marked only "stale".
    layout.refuse_symlink(store)
    layout.refuse_symlink(layout.retriever_dir(store, name))
    layout.refuse_untrusted(store, root)
    notes = notes if notes is not None else []
    attempt, replaced = -1, 0
    while attempt < 2:
        attempt += 1
        key = _manifest_key(store, name)
        cached = _OPEN.recall((store, name))
        if cached is not None and key is not None and cached[0] == key and not _model_changed(name, cached[1]):
            if stale_ok or VOUCHED.get((store, name)) == key or is_current(root, cached[1], thorough=thorough):
                _unapplied_note(cached[1], notes)
                return cached[2]
        # Quiet: a damaged manifest is said once, by the refresh that follows and rebuilds it.
        manifest = _open_manifest(store, name, _quiet)
        if manifest is not None and _model_changed(name, manifest):
            refresh(root, name, progress=progress)  # another model means another index
            continue
        built = None  # the manifest's retriever, built once: to judge the index and to open it
        current = manifest is not None and (stale_ok or is_current(root, manifest, thorough=thorough))
        if current:  # with --stale-ok too: stale files are allowed, terms of another version are not
            built = _retriever_of(name, manifest)
            current = not built[1]
        if not current:
            built = None  # the manifest is read again below
            wait = writer_wait()
            left = wait if wait_until is None else max(0.0, min(wait, wait_until - time.monotonic()))
            # (A first build of lexical+ctx has no model contexts; a rebuild reads those cached.)
            first = manifest is None and name == CONTEXTUAL and not os.path.isdir(layout.retriever_dir(store, name))
            try:
                report = refresh(root, name, progress=progress, lock_timeout=left if manifest is not None else None)
                if report.unreadable:  # (its ignore files not applied: from the manifest, below)
                    _note_once(notes, unread_files_note(report.unreadable))
                if first:
                    # (a query never buys anything: with a key set, the build's silence read as the model's contexts)
                    _note_once(notes, f"{CONTEXTUAL} was built with offline contexts; `retrieval index --retriever "
                                      f"{CONTEXTUAL}` asks the Anthropic model for them")
            except LockBusy:
                # (The writer may be this process's own: an MCP server building an index for another
                # call. Said alike for every index a consolidated query opens: said once.)
                _note_once(notes, f"another process is still updating the index (this waited up to {wait:g} s for "
                                  f"it; a first build with embeddings takes minutes); {PREVIOUS_SNAPSHOT}")
            except (layout.StoreError, WorkerLost) as exc:
                if isinstance(exc.__cause__, StoreRemoved) and attempt < 2:
                    continue  # `clean` removed the store while this waited to write: a new one, as at first use
                if manifest is None:
                    raise
                if _retriever_of(name, manifest)[1]:
                    # Its terms or chunks were made another way (another version's index in a
                    # read-only checkout): answering from it would be wrong hits, not stale ones.
                    raise layout.StoreError(f"{exc}; the index there was built by another version of retrieval "
                                            "or with other settings, so it cannot answer") from exc
                # A full disk, a read-only store or a build worker killed (out of memory) must not
                # stop a query the old snapshot can answer.
                _note_once(notes, f"{exc}; {PREVIOUS_SNAPSHOT}")
            key = _manifest_key(store, name)
            manifest = _open_manifest(store, name, _quiet)
            if manifest is None:
                if attempt < 2:  # built, then removed by a `clean` before it was opened: again
                    continue
                raise layout.StoreError(f"the {name} index could not be built")
        retriever = (built or _retriever_of(name, manifest))[0]
        try:
            engine = retriever.open_store(layout.retriever_dir(store, name), manifest["state"])
            if key is not None:
                _OPEN.put((store, name), (key, manifest, engine))
            _unapplied_note(manifest, notes)
            return engine
        except (OSError, *_DAMAGE) as exc:
            if _not_damage(exc):
                raise
            if replaced < REPLACED_RETRIES and _manifest_key(store, name) not in (key, None):
                # A writer committed a newer snapshot, and collected this one's files, between our
                # reads of its manifest and of them: no damage, and no attempt spent (threads searching
                # beside a loop of refreshes ran out of attempts, a rebuild among them, and failed).
                replaced += 1
                attempt -= 1
                continue
            # The store is damaged: retry, and on the last attempt rebuild.
            if attempt == 1:
                _rebuilding(progress, name, exc)
                refresh(root, name, force=True, progress=progress)
    raise layout.StoreError(f"the {name} index could not be opened")


def search(
    root: str | os.PathLike[str],
    query: str,
    *,
    retriever: str = "lexical",
    top_k: int = 10,
    filters: QueryFilter | None = None,
    stale_ok: bool = False,
    min_confidence: str | None = None,
    progress: Progress = _quiet,
) -> SearchResult:
    """The top_k hits for query; with `min_confidence`, the top_k of those at that level or above
    (ranks renumbered from 1), possibly fewer or none. `retriever="all"`: every usable retriever's
    hits consolidated (`retrieval.multi.search_all`), as `query --retriever all` gives them."""
    if retriever == "all":
        from .multi import search_all

        return search_all(root, query, top_k=top_k, filters=filters, stale_ok=stale_ok,
                          min_confidence=min_confidence, progress=progress)
    if retriever not in REGISTRY:  # here "all" is a choice too
        raise unknown_retriever(retriever, "all")
    check_query(query, top_k, filters, min_confidence)
    progress = from_caller(progress)
    notes: list[str] = []
    engine = open_index(root, retriever, stale_ok=stale_ok, progress=progress, notes=notes)
    allow = filters.compile() if filters else None
    matcher = filters.line_matcher(root_path(root)) if filters else None
    # A hit's level does not depend on how many are asked for, so look deeper and filter.
    depth = max(top_k, MIN_CONFIDENCE_DEPTH) if min_confidence else top_k
    opened = [engine]

    def fetch(asked: int, allow=allow) -> list[SearchHit]:
        hits, opened[0] = search_repairing(root, retriever, opened[0], query, asked, allow=allow,
                                           progress=progress, notes=notes)
        return hits

    short: list[str] = []  # a search -e's depth cut short: why an empty answer is empty
    hits = first_hits(root, query, fetch, depth, matcher, allow, short)
    notes += short
    engine = opened[0]
    resemble = resemblance_note(root, retriever, engine, query, filters, stale_ok) if hits else None
    if resemble:
        hits = only_resembling(hits, query)
    if min_confidence and hits and not any(h.confidence for h in hits):
        # A dense retriever's hits have no lexical evidence to grade: filtering would drop them all.
        notes.append(f"--min-confidence does not apply to {retriever} (its hits carry no confidence level)")
        hits = hits[:top_k]
    elif min_confidence:
        from .confidence import keep_at_least

        hits = keep_at_least(hits, min_confidence, top_k)
    if not hits and top_k and not short:  # (none asked for: no reason to give)
        say_why_empty(root, retriever, filters, min_confidence, query, notes, matcher, engine=engine,
                      stale_ok=stale_ok)
    elif hits and resemble:
        notes.append(resemble)
    indexed = _indexed_files(root, retriever, engine, hits)
    return SearchResult(query, retriever, _labelled(root, engine, query, hits, indexed), notes, indexed, matcher)


def resemblance_note(root, retriever: str, engine, query: str, filters, stale_ok: bool) -> str | None:
    """The note on hits for an identifier or a file name that no indexed file holds: they only
    resemble it (with a spelling the index defines, and files left out that might hold it)."""
    from .notes import left_out

    absent = _absent_identifier(engine, query)
    missing = None if absent else _absent_file(engine, query)
    stale = _STALE_OK_NOTE if stale_ok else ""
    if absent:
        return (f"{_named(absent)} is in no indexed file, in any naming style: these hits only resemble it"
                + ("" if filters else _did_you_mean(engine, absent) + left_out(root_path(root), retriever)) + stale)
    if missing:
        return (f"no indexed file is named {_named(missing)}: these hits only resemble it"
                + ("" if filters else left_out(root_path(root), retriever)) + stale)
    return None


NAME_SHOWN = 80  # the longest name a note quotes whole


def _named(name: str) -> str:
    """A name quoted in a note, its start and its end only when long (a file name's extension): a
    pasted 24,000-character word came back whole in the note, on stderr and in --json, far over
    --max-tokens."""
    if len(name) <= NAME_SHOWN:
        return repr(name)
    return f"{name[:40] + '...' + name[-12:]!r} ({len(name):,} characters)"


def only_resembling(hits: list[SearchHit], query: str) -> list[SearchHit]:
    """The hits of a query asking for a name no indexed file holds (resemblance_note), none rated
    above `low`: its words' stems matched (`isTrustedProxi` rated `medium` a chunk defining
    `isTrustedProxy`), the name did not. Of a pasted trace, as they were: its frames say where it
    went, the name is its error's (a `NameError`, no file's, left its own frame's chunk `low`)."""
    from .query import search_text
    from .ranking import frame_mentions

    if frame_mentions(search_text(query)):
        return hits
    return [replace(h, confidence="low") if h.confidence not in ("", "low") else h for h in hits]


# (a word may be in a file saved since indexing: --stale-ok did not look)
_STALE_OK_NOTE = "; --stale-ok: files changed since indexing were not looked at"


def _lexical_of(engine):
    """The lexical index an engine searches (itself, or a hybrid's lexical arm), None for one
    without (a dense one): what holds the words and names a query's notes are judged by."""
    lexical = engine if hasattr(engine, "term_weights") else getattr(engine, "lexical", None)
    return lexical if hasattr(lexical, "term_weights") else None


def _did_you_mean(engine, word: str) -> str:
    """`; did you mean `expireGenericCommand`?` for a misspelt identifier the index defines in a
    spelling a letter or two off, else "": the hits of a typo resembled nothing, and an agent reading
    "in no indexed file" had no name to ask for next."""
    lexical = _lexical_of(engine)
    if lexical is None:
        return ""
    try:
        names = lexical.spelt_like(word)
    except (OSError, RuntimeError, *_DAMAGE):  # (a snapshot a refresh collected meanwhile)
        return ""
    if not names:
        return ""
    return "; did you mean " + " or ".join(f"`{name}`" for name in names) + "?"


def _absent_identifier(engine, query: str) -> str | None:
    """The identifier a query names that no indexed chunk holds, else None: its hits then only
    resemble it, which read as an answer (an agent took them for one after the only file defining
    it was deleted). A compound one (`PlatypusLimiter`, `load_config_file`) counts as held whole,
    in its spelling or squashed (`client_ip`: `ClientIP`), or defined in any naming style
    (`getParams`: `def get_params`); a single word (`splitlnk`, the `convrt` of `ParamType.convrt`)
    by its indexed terms. In a sentence, the compound names it writes as code
    (`where is should_strp_auth called`)."""
    from .confidence import word_forms
    from .lexical.features import def_term
    from .query import code_words, search_text
    from .ranking import is_symbol_query, queried_file_name, query_words
    from .text import split_identifier, tokenize

    text = search_text(query)
    lexical = _lexical_of(engine)
    if lexical is None or queried_file_name(text):  # (`app.py:8` names a file: `py` is no identifier)
        return None
    symbol = is_symbol_query(text)
    # (A path's parts are no names it asks for: every Node trace was told `node_modules` is in no file.)
    for word in query_words(text) if symbol else code_words(_without_paths(text)):
        (forms, compound), = word_forms([word], split_identifier) or [((), False)]
        if compound:
            terms = [forms[0], forms[0].replace("_", ""), def_term(word)]
        else:
            terms = tokenize(word)
            if not symbol or not terms:  # (a word the index keeps no term of says nothing)
                continue
            terms = [*terms, def_term(word)]
        try:
            if not lexical.term_weights(terms):
                return word
        except (OSError, RuntimeError, *_DAMAGE):  # (a snapshot a refresh collected meanwhile)
            return None
    return None


def _absent_file(engine, query: str) -> str | None:
    """The file name a query is (`frobnicator.py`, `src/x/frobnicator.py:12`) when no indexed file
    is so named, else None: its hits only resemble it (as for an identifier in no file)."""
    from .query import search_text
    from .ranking import written_file_name

    name = written_file_name(search_text(query))
    lexical = _lexical_of(engine)
    if not name or lexical is None or not hasattr(lexical, "_paths_by_name"):
        return None
    try:
        names = lexical._paths_by_name()
    except (OSError, RuntimeError, *_DAMAGE):  # (a snapshot a refresh collected meanwhile)
        return None
    if any(key.lower() == name.lower() for key in names if "/" not in key):
        return None
    return name


_WORDS = re.compile(r"[^\s()\[\]<>\"'`]+")


def _without_paths(text: str) -> str:
    """text with each word holding a `/` or `\\` (`/srv/app/node_modules/x.js:12:3`) blanked. Word by
    word: a pattern looking for the slash inside a word searched a long word without one again from
    each of its characters (a pasted 53 KB stylesheet took 18 s)."""
    return _WORDS.sub(lambda m: " " if "/" in m.group() or "\\" in m.group() else m.group(), text)


def _labelled(root: str, engine, query: str, hits: list[SearchHit], indexed: dict) -> list[SearchHit]:
    """hits, those of packed chunks labelled by the member their query's words are in
    (retrieval.labels), read from files unchanged since indexing. A label is no ranking: when the
    weights cannot be had (a refresh collected the snapshot meanwhile) the hits keep theirs."""
    if not any(h.members for h in hits) or not hasattr(engine, "term_weights"):
        return hits
    from .labels import named_identifiers, relabel
    from .query import search_text
    from .read import split_lines
    from .snippets import read_snippet
    from .text import tokenize

    try:
        weights = engine.term_weights(tokenize(search_text(query)))
    except (OSError, Released, *_DAMAGE):
        return hits
    named = named_identifiers(query)
    pasted = texts_to_find(search_text(query))  # (the line of a hit's member holding one names the hit)
    last: dict[str, int] = {}  # each file is read once, up to the last line of its hits
    for h in hits:
        if h.members and h.source_path in indexed and h.end_line:
            last[h.source_path] = max(last.get(h.source_path, 0), h.end_line)
    files = {}
    for h in hits:
        if h.source_path in last and h.source_path not in files:
            snippet = read_snippet(root, replace(h, start_line=1, end_line=last[h.source_path]),
                                   indexed=indexed[h.source_path])
            files[h.source_path] = split_lines(snippet.text) if snippet is not None and not snippet.stale else None
    out = []
    for h in hits:
        lines = files.get(h.source_path)
        if h.members and lines and h.end_line:
            # (a short slice: the label stays)
            h = relabel(h, lines[h.start_line - 1 : h.end_line], weights, named, pasted)
        out.append(h)
    return out


def say_why_empty(root: str, retriever: str, filters, min_confidence, query: str, notes: list[str],
                  matcher=None, *, engine=None, stale_ok: bool = False) -> None:
    """Add why a search came back empty (retrieval.notes.no_hits): an empty list said nothing to a
    caller of this API (the command line alone said it, on stderr). With the `engine` that found
    nothing, a name the query asks for that no indexed file holds is named too."""
    from .notes import NO_WORD, no_hits

    note = no_hits(root_path(root), retriever, filters, min_confidence, query, matcher)
    if not note or note in notes:
        return
    # Offered only where the word is why (not a filter), from every indexed file (no filter).
    if note.startswith(NO_WORD) and not filters and engine is not None:
        absent = _absent_identifier(engine, query)
        missing = None if absent else _absent_file(engine, query)
        if absent:
            note = NO_WORD + _did_you_mean(engine, absent) + note[len(NO_WORD):]
        elif missing:  # (said beside hits that only resemble it: as much so without any)
            note = NO_WORD + f", nor is an indexed file named {_named(missing)}" + note[len(NO_WORD):]
    if note.startswith("no hits: no indexed text") and stale_ok:
        note += _STALE_OK_NOTE
    notes.append(note)


def search_repairing(root: str, retriever: str, engine, query: str, depth: int, *, allow=None,
                     progress: Progress = _quiet, notes: list[str] | None = None) -> tuple[list[SearchHit], object]:
    """(engine's hits, the engine that gave them): a snapshot a writer replaced under us is opened
    again, and a store damaged where opening did not show it is rebuilt once; damaged again, one
    StoreError line."""
    replaced = 0
    for attempt in range(3):
        try:
            while True:
                try:
                    hits = engine.search_detailed(query, depth, allow=allow)
                    if any(_outside_the_root(h.source_path) for h in hits):
                        raise ValueError("a hit names a path outside the root")
                    return hits, engine
                except Released:
                    # Another thread's refresh released this snapshot for a newer one: no damage,
                    # search that one (a few times at most, should refreshes keep coming).
                    replaced += 1
                    fresh = open_index(root, retriever, stale_ok=True, progress=progress, notes=notes)
                    if fresh is engine or replaced > 10:
                        raise
                    engine = fresh
        except (OSError, *_DAMAGE) as exc:
            if _not_damage(exc):
                raise
            if attempt == 2:  # damaged again after a rebuild: one line, not the parser's traceback
                raise layout.StoreError(f"the {retriever} index cannot be searched ({type(exc).__name__}: "
                                        f"{str(exc).splitlines()[0] if str(exc) else ''})") from exc
            _OPEN.pop((layout.store_dir(os.path.abspath(root)), retriever), None)
            if attempt == 1:
                # Not a writer replacing the snapshot under us: a file damaged in a way its size does
                # not show (the open checks sizes only). Rebuild, as for damage found at open.
                _rebuilding(progress, retriever, exc)
                refresh(root, retriever, force=True, progress=progress)
            engine = open_index(root, retriever, stale_ok=True, progress=progress, notes=notes)
    raise AssertionError("unreachable")


def _outside_the_root(path) -> bool:
    """A hit's path that is no plain path below the root. The walk records none; a store committed
    to a repository can (`/etc/passwd`, `../../.ssh/id_rsa`), and its hits were printed after every
    refresh, which drops only the files its manifest names: the store is damaged."""
    return not isinstance(path, str) or not path or path.startswith("/") or "\0" in path or "/../" in f"/{path}/"


def _indexed_files(root: str, name: str, engine, hits) -> dict[str, tuple]:
    store = layout.store_dir(os.path.abspath(root))
    cached = _OPEN.get((store, name))
    if cached is not None and cached[2] is engine:
        manifest = cached[1]
    else:
        try:
            manifest = layout.read_manifest(store, name)
        except (layout.ManifestProblem, layout.StoreError):
            manifest = None
    if not manifest:
        return {}
    columns = manifest["files"]
    paths = columns["path"]  # sorted (see _file_columns): find each hit's row by bisection
    names = layout.FILE_COLUMNS[1:]
    out = {}
    for h in hits:
        row = bisect.bisect_left(paths, h.source_path)
        if row < len(paths) and paths[row] == h.source_path:
            out[h.source_path] = tuple(columns[names[c]][row] for c in range(SIZE, DIGEST + 1))
    return out


# -- status ------------------------------------------------------------------------------------


def skipped_files(root: str | os.PathLike[str], notes: list[str] | None = None,
                  other_types: dict[str, int] | None = None) -> list[tuple[str, str]]:
    """(path, reason) of each file the index leaves out, by path: those its walk skips (walked now,
    with the index's remembered filters; a directory pruned whole as `dir/`), those its last refresh
    read and skipped (binary, another encoding, a private key inside: its manifest's), and those it
    could not read. `notes` gets what makes the list partial (no index yet, a stale one);
    `other_types` the count of files of each name extension ("" for none) of no type the index
    reads, most first (not listed one by one: a tree of data files has thousands)."""
    root = root_path(root)
    require_root(root)
    store = layout.store_dir(root)
    layout.refuse_symlink(store)
    layout.refuse_blocked(store)  # (else the file in the way was listed as one of a type never read)
    layout.refuse_untrusted(store, root)
    notes = notes if notes is not None else []
    name = next((n for n in dict.fromkeys(("lexical", *sorted(REGISTRY)))
                 if _built_options(store, n) is not None), "lexical")
    options = remembered_options(root, name) or IndexOptions()
    discovery = walk(root, options.discovery(store), record_skips=True)
    # A name no file system encoding decodes is listed as written with `\xff` escapes, which a real
    # name may spell too: kept apart from the paths a manifest's entries could overwrite.
    undecodable = [entry for entry in discovery.skipped_files if entry[1] == "undecodable-name"]
    found = dict(entry for entry in discovery.skipped_files if entry[1] != "undecodable-name")
    if discovery.unapplied:  # the answer to "why is my ignored file found?" (its count read as a file left out)
        notes.append(unapplied_note(discovery.unapplied))
    if other_types is not None:
        other_types.update(sorted(discovery.other_types.items(), key=lambda kv: (-kv[1], kv[0])))
    try:
        manifest = read_manifest(store, name)
    except (layout.ManifestProblem, layout.StoreError):
        manifest = None
    if manifest is None:
        notes.append("no index yet: the files skipped when read (binary, in another encoding, holding a "
                     "private key) are listed once one is built")
        return sorted([*found.items(), *undecodable])
    table = file_table(manifest)
    found.update((path, entry[SKIP]) for path, entry in table.items() if entry[SKIP])
    for f in discovery.files:  # files no refresh could read are left out of the manifest, to be tried again
        if f.path not in table:
            try:
                with open(f.abspath, "rb"):
                    pass
            except OSError:
                found[f.path] = UNREADABLE
    if not is_current(root, manifest):
        notes.append(f"the {name} index is stale: the next query refreshes it, and this list may change")
    return sorted([*found.items(), *undecodable])


def status(root: str | os.PathLike[str]) -> list[dict]:
    """One row per registered retriever (lexical first): its index's state, size and languages, the
    rows of `retrieval status --json`."""
    root = root_path(root)
    require_root(root)
    store = layout.store_dir(root)
    # A linked store is refused by every command (one line): read through it, status said `ready`
    # for an index no query would answer from.
    layout.refuse_symlink(store)
    layout.refuse_blocked(store)
    layout.refuse_foreign(store)
    layout.refuse_untrusted(store, root)
    rows = []
    seen: dict = {}  # stat results, shared by the indexes' checks (see is_current)
    building = writer(root)
    for name, spec in sorted(REGISTRY.items(), key=lambda kv: (kv[0] != "lexical", kv[0])):  # lexical first
        # Every key in every row (`reason` null when there is none to give, `chunking` {} unless a
        # structure-aware chunker built it): one schema for scripts reading `status --json`.
        row: dict = {"retriever": name, "state": "missing", "reason": None, "profile": None, "files": 0, "chunks": 0,
                     "tokens": 0, "primary_language": None, "languages": {}, "chunking": {}, "created": None,
                     "updated": None, "store_bytes": 0, "skipped": {}}
        reason = spec.unavailable_reason()
        if reason:
            row["state"], row["reason"] = "unavailable", reason
        try:
            # Refused as a query refuses it (see open_index): read through it, status said `ready`.
            layout.refuse_symlink(layout.retriever_dir(store, name))
            manifest = read_manifest(store, name)
        except (layout.ManifestProblem, layout.StoreError) as exc:
            row["state"], row["reason"] = "error", str(exc)
            if isinstance(exc, layout.ManifestProblem):
                row["reason"] += f"; the next query or `retrieval index --retriever {name}` rebuilds it"
            rows.append(row)
            continue
        if manifest is None:
            if row["state"] == "missing":  # what to do about it, in JSON as in the text (with its root:
                from .output import shell_word  # run from elsewhere, the bare command indexes another tree)

                row["reason"] = f"build it with `retrieval index --retriever {name} --root {shell_word(root)}`"
                if building and os.path.isdir(layout.retriever_dir(store, name)):
                    # Its directory and no manifest: a build of it began, perhaps the writer's (or
                    # one waiting for it, or one killed). "Build it with" sent the user to wait on
                    # the lock of the build under way.
                    row["reason"] = f"not built yet; {writer_named(building)} is writing the store, perhaps building it"
            rows.append(row)
            continue
        try:
            _status_row(root, store, name, manifest, reason, row, seen)
        except _DAMAGE as exc:  # a manifest of the right shape holding values of the wrong type
            row["state"] = "error"
            row["reason"] = (f"the index is damaged ({type(exc).__name__}); the next query or "
                             f"`retrieval index --retriever {name}` rebuilds it")
        rows.append(row)
    return rows


def writer_named(found: dict) -> str:
    """How a note names the process `writer` found: `process N`, else `another process`."""
    return f"process {found['pid']}" if found["pid"] else "another process"


def writer(root: str) -> dict | None:
    """{"pid", "since"} of the process writing the root's store now (an `index`, a refreshing query,
    a server's refresh), else None: while a first build runs its rows still read `missing`."""
    found = lock_writer(layout.lock_path(layout.store_dir(root_path(root))))
    if found is None:
        return None
    pid, since = found
    return {"pid": pid, "since": iso_time(since)}


def _primary_language(langs: Counter) -> str | None:
    """The language of most files among those of code (else among all): redis, 402 JSON command
    specifications beside 225 C files, was "mostly json". Ties go to the name first in order."""
    from .languages import CODE, languages_of

    code = languages_of(CODE)
    pool = {lang: n for lang, n in langs.items() if lang in code} or langs
    return min(pool, key=lambda lang: (-pool[lang], lang)) if pool else None


def _status_row(root: str, store: str, name: str, manifest: dict, reason: str, row: dict, seen: dict) -> None:
    """Fill `row` from a committed manifest (values of the wrong type raise as parsing them would)."""
    langs: Counter = Counter()
    tokens = 0
    files = manifest["files"]
    for size, language, chunks in zip(files["size"], files["language"], files["chunks"]):
        if chunks > 0:
            langs[language] += 1
            tokens += (size + 3) // 4
    row.update(
        profile=manifest["config"]["options"].get("profile", "code"),
        files=sum(langs.values()),
        chunks=sum(files["chunks"]),
        tokens=tokens,
        primary_language=_primary_language(langs),
        languages=dict(sorted(langs.items(), key=lambda kv: (-kv[1], kv[0]))),
        created=manifest.get("created"),
        updated=manifest.get("updated"),
        store_bytes=layout.directory_size(layout.retriever_dir(store, name)),
        # What the last refresh left out and why: a first build done by `query` says it nowhere else.
        skipped=dict(manifest.get("skipped") or {}),
    )
    state = manifest.get("state")
    if isinstance(state, dict) and "line_fallback" in state:  # a structure-aware chunker's store
        from .chunking.grammars import chunking_by_language

        row["chunking"] = chunking_by_language(files, state["line_fallback"])
    if not reason:
        try:
            row["state"] = "ready" if is_current(root, manifest, seen) else "stale"
        except DiscoveryError as exc:
            row["state"], row["reason"] = "error", str(exc)
        outdated, problem = (_checked(name, manifest, layout.retriever_dir(store, name)) if row["state"] != "error"
                             else (False, ""))
        if problem:  # every query would fail: not ready
            row["state"], row["reason"] = "error", problem
        elif row["state"] == "ready" and outdated:
            row["state"] = "stale"
            # Another version, or a setting of the environment that shapes the index (RETRIEVAL_TURBOVEC_BITS).
            row["reason"] = STALE_VERSION
        elif row["state"] == "stale":
            # (a file written within the file system's clock tick of the last refresh stays stale until
            # a refresh a tick later has read it: `stale` with no word looked like a fault)
            # Not only files: status said "files changed" of an older version's index, and of one
            # built under another HOME.
            walked = "version" if outdated else _walked_otherwise(manifest)
            row["reason"] = STALE_VERSION if walked == "version" else STALE_USER if walked == "user" else STALE_FILES
            if walked not in ("version", "user") and isinstance(manifest.get("root"), str) and manifest["root"] != root:
                # (moved or copied: the files' stats said nothing of it, only the paths outside it)
                row["reason"] = (f"last refreshed at {manifest['root']} (the tree moved or was copied here); "
                                 "the next query refreshes it")
        if row["state"] == "stale" and not os.access(layout.retriever_dir(store, name), os.W_OK):
            # A read-only store (a mount, a checkout of another user's) is never refreshed: "the next
            # query refreshes it" was not so. Nor does another version's index answer from it.
            row["reason"] = row["reason"].rsplit("; ", 1)[0] + "; " + (
                READ_ONLY_OUTDATED if row["reason"] == STALE_VERSION else READ_ONLY_STORE)


STALE_VERSION = "built by another version or with other index settings; the next query rebuilds it"
STALE_USER = ("built under another HOME, XDG_CONFIG_HOME or GIT_CONFIG_* (other ignore rules may apply here); "
              "the next query refreshes it")


READ_ONLY_OUTDATED = (f"the store is not writable, so no query answers from it until it is rebuilt "
                      f"({layout.ENV_INDEX_DIR}=/a/writable/directory keeps indexes elsewhere)")
READ_ONLY_STORE = (f"the store is not writable, so queries answer from this snapshot ({layout.ENV_INDEX_DIR}="
                   "/a/writable/directory keeps indexes elsewhere)")
STALE_FILES = ("files changed since its last refresh, or were written too close to it to tell; "
               "the next query refreshes it")


def available_retrievers() -> list[tuple[str, str]]:
    """(name, unavailable reason or '') for every registered retriever that `all` covers, sorted
    with lexical first."""
    names = sorted((n for n in REGISTRY if REGISTRY[n].in_all), key=lambda n: (n != "lexical", n))
    return [(n, REGISTRY[n].unavailable_reason()) for n in names]


def is_built(root: str, name: str) -> bool:
    """Whether the retriever's index under root has been committed at least once."""
    return os.path.exists(layout.manifest_path(layout.store_dir(os.path.abspath(root)), name))


def retrievers_outside_all() -> list[str]:
    """Registered retrievers that `all` never builds (each says why in its spec), sorted."""
    return sorted(n for n in REGISTRY if not REGISTRY[n].in_all)


def stderr_progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
