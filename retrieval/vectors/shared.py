"""Embeddings shared by every index on this machine: another checkout, a worktree, the same
repository at another commit embed only what they do not have in common.

Keyed like the per-index cache (text and model, retrieval.vectors.texts.text_key), so a vector is
found only for the very text the same model would embed. Each build that embedded something adds
one shard (the checkpoint format, written atomically); readers skip shards that are torn, of
another model, or deleted under them: the cache only saves work, it never decides an answer.
Bounded: beyond the size limit the least recently written shards go; and in number: past
MAX_SMALL_SHARDS small ones (an agent's every edit adds one of a few kilobytes: hundreds in an
afternoon, each mapped through a file descriptor of its own, and past the process's limit every
refresh failed) are merged into one. A small shard is read, not mapped: it holds no descriptor.

    RETRIEVAL_EMBED_CACHE       the directory (default $XDG_CACHE_HOME/retrieval/embeddings);
                                "off" disables it
    RETRIEVAL_EMBED_CACHE_MB    the size limit (default 1024)
"""
from __future__ import annotations

import hashlib
import os
import sys
import time

from ..store.layout import machine_cache
from ..settings import env_float
from . import store as vstore

ENV_DIR = "RETRIEVAL_EMBED_CACHE"
ENV_MB = "RETRIEVAL_EMBED_CACHE_MB"
DEFAULT_MB = 1024
SHARD_PREFIX = "shard-"
SMALL_SHARD_BYTES = 4 * 1024 * 1024  # read whole rather than mapped; merged when too many
MAX_SMALL_SHARDS = 32


def cache_dir(model: str) -> str | None:
    """This model's shard directory, or None when the cache is off."""
    base = machine_cache("embeddings", ENV_DIR)
    if base is None:
        return None
    # One directory per model identity (a digest: identities hold paths and odd characters).
    return os.path.join(base, hashlib.blake2b(model.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest())


def _limit_bytes() -> int:
    return int(env_float(ENV_MB, DEFAULT_MB) * 1024 * 1024)


class SharedEmbeddings:
    """Looked up only when a build has something to embed, and read once then."""

    def __init__(self, model: str, dim: int):
        self.model, self.dim = model, dim
        self.directory = cache_dir(model)
        self._index: dict | None = None  # key -> (shard, row)
        self._shards: list = []

    def get(self, key: bytes):
        if self.directory is None:
            return None
        if self._index is None:
            self._load()
        found = self._index.get(key)
        # A vector failing its checksum is embedded again: the cache only saves work.
        return None if found is None else self._shards[found[0]].vector(found[1])

    def _load(self) -> None:
        """Map every readable shard of this model: its vectors are paged in only when a key is
        found there, so a large cache costs the build its keys, not its vectors."""
        self._index, self._shards = {}, []
        try:
            names = sorted((n for n in os.listdir(self.directory) if n.startswith(SHARD_PREFIX)), reverse=True)
        except OSError:
            return
        for name in names:
            try:
                sections = _read_shard(os.path.join(self.directory, name), self.model, self.dim)
            except (OSError, ValueError, KeyError, TypeError, vstore.VectorStoreError):
                continue
            if sections is None:
                continue
            number = len(self._shards)
            self._shards.append(sections)
            for i in range(len(sections)):
                self._index.setdefault(sections.key(i), (number, i))

    def add(self, keys: list[bytes], blocks) -> None:
        """Keep what this build embedded for the next one (`blocks`: the vectors, row blocks in
        key order); a cache that cannot be written (a read-only home, a full disk) is
        not an error."""
        if self.directory is None or not keys:
            return
        try:
            os.makedirs(self.directory, exist_ok=True)
            name = f"{SHARD_PREFIX}{time.time_ns():020d}-{os.getpid()}.emb"
            vstore.write_checkpoint(self.directory, name, self.model, keys, blocks, self.dim)
            trim(self.directory, _limit_bytes())
            merge_small_shards(self.directory, self.model, self.dim)
        except OSError as exc:
            _said_unwritable(exc)


def _read_shard(path: str, model: str, dim: int):
    """A shard's rows: a small one read whole (no descriptor kept), a large one mapped."""
    if os.path.getsize(path) > SMALL_SHARD_BYTES:
        return vstore.map_checkpoint(path, model, dim)
    with open(path, "rb") as fh:
        return vstore.checkpoint_sections(fh.read(), os.path.basename(path), model, dim)


def merge_small_shards(directory: str, model: str, dim: int, most: int = MAX_SMALL_SHARDS) -> None:
    """Past `most` small shards, write their rows as one (each key once, the newest vector) and
    delete them. Another process merging at once at worst writes a key twice; a reader that
    finds a shard gone skips it (the cache never decides an answer)."""
    import numpy as np

    try:
        small = sorted((n for n in os.listdir(directory) if n.startswith(SHARD_PREFIX)
                        and os.path.getsize(os.path.join(directory, n)) <= SMALL_SHARD_BYTES), reverse=True)
    except OSError:
        return
    if len(small) <= most:
        return
    keys: list[bytes] = []
    rows: list = []
    seen: set = set()
    merged: list[str] = []
    for name in small:  # newest first: a key's newest vector wins
        try:
            sections = _read_shard(os.path.join(directory, name), model, dim)
        except (OSError, ValueError, KeyError, TypeError, vstore.VectorStoreError):
            continue
        if sections is None:  # another model's (not this directory's): left alone
            continue
        merged.append(name)
        for i in range(len(sections)):
            key = sections.key(i)
            vector = sections.vector(i)
            if key not in seen and vector is not None:
                seen.add(key)
                keys.append(key)
                rows.append(vector)
    if len(merged) < 2:
        return
    # Named as the oldest it replaces (trim deletes by name, oldest first), so merging keeps the
    # cache's order of age.
    name = f"{merged[-1].removesuffix('.emb')}-merged-{os.getpid()}.emb"
    if rows:
        vstore.write_checkpoint(directory, name, model, keys, np.stack(rows).astype(np.float32), dim)
    for old in merged:
        try:
            os.unlink(os.path.join(directory, old))
        except OSError:
            pass


_SAID: set = set()


def _said_unwritable(exc: OSError) -> None:
    """Silent for the default place (a read-only home is no fault), said once for a directory the
    user named: a RETRIEVAL_EMBED_CACHE that is a file was ignored without a word."""
    chosen = os.environ.get(ENV_DIR, "").strip()
    if not chosen or chosen in _SAID:
        return
    _SAID.add(chosen)
    print(f"retrieval: the embedding cache {ENV_DIR}={chosen!r} cannot be written "
          f"({exc.strerror or exc}); embeddings are not shared between indexes", file=sys.stderr)


STALE_TEMP_SECONDS = 3600  # a temp file this old was left by a killed writer (no lock guards this directory)


def trim(directory: str, limit: int) -> None:
    """Delete the oldest shards (by name: the write time) until the rest fit in `limit` bytes,
    and temp files that killed writers left."""
    from ..store.atomic import TMP_PREFIX

    try:
        listing = os.listdir(directory)
    except OSError:
        return
    for name in listing:
        if name.startswith(TMP_PREFIX):
            path = os.path.join(directory, name)
            try:
                if time.time() - os.path.getmtime(path) > STALE_TEMP_SECONDS:
                    os.unlink(path)
            except OSError:
                pass
    names = sorted((n for n in listing if n.startswith(SHARD_PREFIX)), reverse=True)
    total = 0
    for name in names:  # newest first
        path = os.path.join(directory, name)
        try:
            total += os.path.getsize(path)
        except OSError:
            continue
        if total > limit:
            try:
                os.unlink(path)
            except OSError:
                pass
