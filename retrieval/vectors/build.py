"""A refresh of the vector store: embed only what is new, carry the rest over, write a generation.

Vectors are cached by the key of the text they embed (retrieval.vectors.texts.text_key): rows of
unchanged files are copied from the previous generation, a changed file's chunks are looked up in
that generation and in checkpoints of killed refreshes before anything is embedded, and identical
texts are embedded once. Embedding streams: a bounded batch of texts at a time, a checkpoint now
and then, progress (chunks/s, ETA) on a terminal.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Callable, Iterable

from ..embed import BATCH_SIZE as MODEL_BATCH, NUMPY_MAX_TEXTS
from ..progress import Tick, redraws, tell_listener
from ..records import Chunk, SourceFile
from ..settings import env_float, env_int
from . import store as vstore
from .shared import SharedEmbeddings
from .texts import embed_text, text_key, worth_embedding

EMBED_BATCH = 256  # texts handed to the model at once (it sorts them by length: less padding)
CHECKPOINT_SECONDS = 30.0
# Rows copied, written and quantized at a time when a generation is assembled: with the embedded
# vectors read back from their checkpoint files, a build's memory does not grow with the vectors.
BLOCK_ROWS = 8192


CALIBRATION_ROWS = 2048
# Fewer rows than this are not calibrated: a fit needs a representative sample, and a query
# re-scores the top 100 candidates exactly anyway, which covers all of so small an index.
MIN_CALIBRATION_ROWS = 256


class TerminalProgress:
    """`turbovec: embedded 1200/5400 chunks, 41.3 chunks/s, ETA 1m42s` on one rewritten line of
    stderr, at most twice a second. Off a terminal, one line when a long embedding starts (a whole
    batch to embed): a command that runs for minutes (a first query that has to build its vectors)
    says why, so the agent or script that called it does not take it for a hang."""

    def __init__(self, label: str, stream=None):
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = redraws(self.stream)  # a terminal that can rewrite a line (not TERM=dumb)
        self.started = time.monotonic()
        self.last = 0.0
        self.shown = False
        self.announced = False

    def begin(self) -> None:
        """A long embedding is about to start (called before each full batch; says so once). On a
        terminal too: the first count comes only once a batch is embedded (a minute on 2 cores)."""
        if self.announced:
            return
        self.announced = True
        if self.enabled:
            self.started = time.monotonic()
            self.stream.write(f"\r{self.label}: embedding the first batch of chunks no cache holds yet...\x1b[K")
        else:
            self.stream.write(f"{self.label}: embedding chunks no cache holds yet; this can take minutes, "
                              f"and what is embedded is kept if the command is interrupted\n")
        self.stream.flush()

    def __call__(self, done: int, todo: int, final: bool = False) -> None:
        # (no total: `todo` counts the chunks queued so far, all done reads as a build finished)
        tell_listener(Tick(f"{self.label}: embedded {done} chunks, {max(todo - done, 0)} queued", done, 0))
        if not self.enabled:
            return
        now = time.monotonic()
        if not final and now - self.last < 0.5:
            return
        self.last = now
        rate = done / max(now - self.started, 1e-6)
        left = max(todo - done, 0)
        # `todo` counts the chunks queued so far (files are chunked as they are read): never
        # printed as a total, which read `256/256` as if the build were done.
        eta = f", {left} queued, ETA for those {_duration(left / rate)}" if rate > 0 and left and not final else ""
        self.stream.write(f"\r{self.label}: embedded {done} chunks, {rate:.1f} chunks/s{eta}\x1b[K")
        if final:
            self.stream.write("\n")
        self.stream.flush()
        self.shown = True


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def sample_rows(n: int, size: int = CALIBRATION_ROWS, keys: bytes | None = None) -> list[int]:
    """A deterministic, evenly spread draw of rows (turbovec's calibration wants a representative
    sample, not a prefix of one directory's chunks). Given the rows' text keys (hashes, so evenly
    spread), the rows whose keys come first: the same vectors whatever order the rows are in (a
    refresh appends its files' rows, a clean build has them in the walk's order), so both quantize
    alike; drawn by position, the sample and with it the candidates differed."""
    if n <= size:
        return list(range(n))
    if keys is not None:
        import numpy as np

        # The keys in byte order: as two big-endian halves, most significant last for lexsort.
        halves = np.frombuffer(keys, dtype=">u8").reshape(n, vstore.KEY_BYTES // 8)
        return sorted(np.lexsort(halves.T[::-1])[:size].tolist())
    import random

    return sorted(random.Random(n).sample(range(n), size))


def build_turbovec(vectors, bits: int, keys: bytes | None = None) -> bytes:
    """The quantized index of `vectors` (an array or a memory map), added a block at a time: the
    same bytes as one add, without a second copy of every row in memory. `keys`: the rows' text
    keys, which choose the calibration sample (sample_rows)."""
    import numpy as np
    import turbovec

    dim = vectors.shape[1]
    index = turbovec.TurboQuantIndex(dim, bits)
    if len(vectors) >= MIN_CALIBRATION_ROWS:
        index.calibrate(np.ascontiguousarray(vectors[sample_rows(len(vectors), keys=keys)], dtype=np.float32))
    for lo in range(0, len(vectors), BLOCK_ROWS):
        index.add(np.ascontiguousarray(vectors[lo:lo + BLOCK_ROWS], dtype=np.float32))
    return index.to_bytes()


def update(
    directory: str,
    state: dict | None,
    removed_paths: Iterable[str],
    added: Iterable[tuple[SourceFile, list[Chunk]]],
    *,
    embedder,
    bits: int,
    label: str = "turbovec",
    progress: Callable | None = None,
) -> dict:
    """The new state after removing files and replacing each added file's chunks. Writes a new
    generation (the caller commits the state, then collects garbage)."""
    import numpy as np

    model = embedder.identity
    previous = (state or {}).get("generation") or {}
    # Known from the store when the model is the same: a refresh that embeds nothing (a deleted
    # file, a touched one) never loads the model.
    dim = previous["dim"] if previous.get("model") == model else embedder.dimension()
    old = None
    if state and state.get("generation"):
        old = vstore.Generation(directory, state["generation"], load_index=False)
        if old.model != model or old.dim != dim:
            old = None
    gone = set(removed_paths)
    # Rows: (path, language, kind, start, end, key); vectors come from `cached` or `fresh`.
    replaced: set[str] = set()
    new_rows: list[tuple] = []
    cached: dict[bytes, object] = {}
    if old is not None:
        for row in range(old.n):
            cached.setdefault(old.key(row), row)
    checkpointed = vstore.read_checkpoints(directory, model, dim)
    donors = _donors(directory, model, dim)
    shared = SharedEmbeddings(model, dim)
    embedded: list[bytes] = []  # this run's (and its killed predecessors'), for the shared cache
    pending: dict[bytes, str] = {}  # key -> text still to embed
    fresh: dict[bytes, object] = {}
    show = progress or TerminalProgress(label)
    batch = env_int("RETRIEVAL_EMBED_BATCH", EMBED_BATCH, minimum=1)
    every = env_float("RETRIEVAL_EMBED_CHECKPOINT_SECONDS", CHECKPOINT_SECONDS)
    counts = {"done": 0, "todo": 0, "shared": 0}
    unsaved: list[bytes] = []
    last_checkpoint = [time.monotonic()]
    checkpoint_no = [0]

    def embed_pending() -> None:
        # Longest first, as the model orders a batch (less padding), and handed over one model
        # batch at a time, each kept as it comes: a Ctrl-C inside one call of 256 texts lost every
        # vector computed in it (15-40 s on two cores), though the progress line promises them.
        keys = sorted(pending, key=lambda k: -len(pending[k]))
        texts = [pending[k] for k in keys]
        pending.clear()
        if len(texts) >= batch and hasattr(show, "begin"):
            show.begin()  # a whole batch, and more may follow: minutes, not seconds
        part = len(texts) > NUMPY_MAX_TEXTS  # slices of a real batch go through the model
        for lo in range(0, len(texts), MODEL_BATCH):
            some = keys[lo:lo + MODEL_BATCH]
            vectors = embedder.embed(texts[lo:lo + MODEL_BATCH], part=part)
            for k, v in zip(some, vectors):
                fresh[k] = v
            unsaved.extend(some)
            embedded.extend(some)
            counts["done"] += len(some)
            show(counts["done"], counts["todo"])
            # Timed per model batch, not per batch handed over: with RETRIEVAL_EMBED_BATCH large
            # (a whole repository's texts), a build wrote its first checkpoint only at the end.
            if time.monotonic() - last_checkpoint[0] >= every:
                checkpoint()

    def checkpoint() -> None:
        if unsaved:
            checkpoint_no[0] += 1
            name = f"{vstore.CKPT_PREFIX}{os.getpid()}-{checkpoint_no[0]:05d}.emb"
            vstore.write_checkpoint(directory, name, model, unsaved, (np.stack([fresh[k] for k in unsaved]),), dim)
            # From now on these vectors are read from the file (paged in when the generation is
            # written): memory holds the batches since the last checkpoint, not the whole build.
            try:
                sections = vstore.map_checkpoint(os.path.join(directory, name), model, dim)
            except (OSError, vstore.VectorStoreError, ValueError):
                sections = None
            if sections is not None:  # the bytes just written: read back unchecked
                for i, k in enumerate(unsaved):
                    fresh[k] = sections.vectors[i]
            unsaved.clear()
        last_checkpoint[0] = time.monotonic()

    try:
        for f, chunks in added:
            replaced.add(f.path)
            if not worth_embedding(f.path, f.kind, f.generated):
                continue
            for c in chunks:
                key = text_key(embed_text(f.path, c.text, c.context), model)
                new_rows.append((f.path, f.language, f.kind, c.start_line, c.end_line, key))
                if key in cached or key in fresh or key in pending:
                    continue
                if key in checkpointed:
                    fresh[key] = checkpointed[key]
                    # Embedded by a run cut short, which kept them for this one only: the shared
                    # cache gets them now (another checkout embedded 1,344 chunks again).
                    embedded.append(key)
                    continue
                donor = donors.get(key)
                if donor is not None:
                    try:
                        fresh[key] = donor[0].row(donor[1])
                        continue
                    except vstore.VectorStoreError:
                        # A damaged row of the other index is its own to repair (its next query
                        # rebuilds it); this one embeds the chunk again rather than fail.
                        donors.pop(key)
                known = shared.get(key)
                if known is not None:
                    fresh[key] = known
                    counts["shared"] += 1
                    continue
                pending[key] = embed_text(f.path, c.text, c.context)
                counts["todo"] += 1
                if len(pending) >= batch:
                    embed_pending()
        if pending:
            embed_pending()
    except BaseException:
        # Ctrl-C or a failure mid-build: what was embedded since the last checkpoint is kept for
        # the next run, as the progress line promises; then the build stops as it would have.
        try:
            checkpoint()
        except Exception:  # noqa: BLE001 - a full disk: the original error is the one to report
            pass
        raise
    checkpoint()
    if counts["todo"]:
        show(counts["done"], counts["todo"], final=True)

    files: list[list[str]] = []
    file_no: dict[str, int] = {}
    file_ids, starts, ends, keys = [], [], [], []
    old_rows: list[int] = []
    if old is not None:
        drop = gone | replaced
        for row in range(old.n):
            path = old.path(row)
            if path in drop:
                continue
            fid = file_no.get(path)
            if fid is None:
                fid = file_no[path] = len(files)
                files.append(list(old.files[int(old.file_ids[row])]))
            file_ids.append(fid)
            starts.append(int(old.starts[row]))
            ends.append(int(old.ends[row]))
            keys.append(old.key(row))
            old_rows.append(row)
    for path, language, kind, start, end, key in new_rows:
        fid = file_no.get(path)
        if fid is None:
            fid = file_no[path] = len(files)
            files.append([path, language, kind])
        file_ids.append(fid)
        starts.append(start)
        ends.append(end)
        keys.append(key)

    def vector(key: bytes):
        hit = fresh.get(key)
        return hit if hit is not None else old.row(cached[key])

    def vector_blocks():
        for lo in range(0, len(old_rows), BLOCK_ROWS):
            yield old.rows(old_rows[lo:lo + BLOCK_ROWS])
        for lo in range(0, len(new_rows), BLOCK_ROWS):
            yield np.stack([vector(row[-1]) for row in new_rows[lo:lo + BLOCK_ROWS]])

    number = vstore.next_generation(directory, state)
    keys = b"".join(keys)
    entry = vstore.write_generation(
        directory, vstore.generation_name(number), model=model, dim=dim, files=files, file_ids=file_ids,
        starts=starts, ends=ends, keys=keys, vector_blocks=vector_blocks(),
        build_index=lambda vectors: build_turbovec(vectors, bits, keys),
    )
    entry["bits"] = bits
    shared.add(embedded, (np.stack([fresh[k] for k in embedded[lo:lo + BLOCK_ROWS]])
                          for lo in range(0, len(embedded), BLOCK_ROWS)))
    return {"generation": entry, "next": number + 1, "embedded": counts["done"], "shared": counts["shared"]}


def _donors(directory: str, model: str, dim: int) -> dict[bytes, tuple]:
    """{key: (generation, row)} from the other dense indexes of the same store (`turbovec` and
    `hybrid` embed the same chunks the same way): building the second costs no embedding. Read
    under the store's writer lock, so their committed generations cannot change meanwhile."""
    import json

    store = directory
    for _ in range(3):  # <store>/turbovec or <store>/hybrid/dense
        store = os.path.dirname(store)
        if os.path.exists(os.path.join(store, "STORE.json")):
            break
    else:
        return {}
    out: dict[bytes, tuple] = {}
    for name in sorted(os.listdir(store)):
        try:
            with open(os.path.join(store, name, "manifest.json"), "rb") as fh:
                state = json.load(fh).get("state") or {}
        except (OSError, ValueError, AttributeError):
            continue
        for sub, entry_state in (("", state), ("dense", state.get("dense") if isinstance(state, dict) else None)):
            entry = entry_state.get("generation") if isinstance(entry_state, dict) else None
            if not isinstance(entry, dict) or entry.get("model") != model or entry.get("dim") != dim:
                continue
            gen_dir = os.path.join(store, name, sub) if sub else os.path.join(store, name)
            if os.path.abspath(gen_dir) == os.path.abspath(directory):
                continue  # our own previous generation is the main cache already
            try:
                gen = vstore.Generation(gen_dir, entry, load_index=False)
            except (OSError, vstore.VectorStoreError, KeyError, ValueError):
                continue
            for row in range(gen.n):
                out.setdefault(gen.key(row), (gen, row))
    return out
