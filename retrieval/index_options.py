"""What an index is built with: the options the user chose at `index` time (remembered in its
manifest, so later refreshes walk the same tree and chunk it the same way) and the retriever they
configure (BM25 parameters, the embedding model, the context model, the quantization width)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Callable

from .chunking import ChunkingPolicy, chunk_lines, whole_file
from .discover import DiscoveryOptions
from .extras import SetupError
from .notebook import with_headings
from .retrievers.base import build_retriever, check_bm25, get_spec
from .settings import env_int

# Index profiles: how text becomes terms and how hits are ranked. `prose` is for a collection of
# English documents, one per file (Lucene's English analyzer and BM25 defaults).
PROFILES = ("code", "prose")


@dataclass
class IndexOptions:
    """What the user chose at `index` time; persisted so later refreshes walk the same tree."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_bytes: int | None = None
    max_total_bytes: int | None = None
    policy: ChunkingPolicy = field(default_factory=ChunkingPolicy)
    profile: str = "code"
    bm25: tuple | None = None  # (k1, b) for the retrievers that take them (lexical, pi-serini)
    embed_model: str | None = None  # the dense retrievers' model (a directory or a cached name); None: bundled
    context_model: str | None = None  # lexical+ctx: whose written contexts it takes; None: the default model
    turbovec_bits: int | None = None  # the dense retrievers' RETRIEVAL_TURBOVEC_BITS; None: the default (4)

    def __post_init__(self):
        if self.profile not in PROFILES:
            raise ValueError(f"unknown profile {self.profile!r}; choose one of: {', '.join(PROFILES)}")

    def discovery(self, store: str) -> DiscoveryOptions:
        opts = DiscoveryOptions(include_globs=tuple(self.include), exclude_globs=tuple(self.exclude), skip_paths=(store,))
        if self.max_bytes is not None:
            opts.max_bytes = self.max_bytes
        total = self.max_total_bytes
        if total is None:
            total = env_int("RETRIEVAL_MAX_TOTAL_BYTES", opts.max_total_bytes, minimum=1)
        opts.max_total_bytes = total
        return opts

    def to_json(self) -> dict:
        out = {"include": list(self.include), "exclude": list(self.exclude), "max_bytes": self.max_bytes,
               "policy": self.policy.fingerprint(), "profile": self.profile}
        if self.bm25:  # only when set: indexes built without it keep their configuration
            out["bm25"] = list(self.bm25)
        if self.embed_model:  # likewise
            out["embed_model"] = self.embed_model
        if self.context_model:  # likewise
            out["context_model"] = self.context_model
        if self.turbovec_bits:  # likewise
            out["turbovec_bits"] = self.turbovec_bits
        return out

    def retriever_kwargs(self) -> dict:
        return {"k1": self.bm25[0], "b": self.bm25[1]} if self.bm25 else {}

    @classmethod
    def from_json(cls, data: dict) -> "IndexOptions":
        """The options a manifest remembers; ValueError naming the first one of the wrong shape (a
        hand-edited manifest: a string of globs read as one glob a character, a negative size cap
        indexing nothing, a policy not a mapping crashing the chunker)."""
        def bad(key: str) -> ValueError:
            return ValueError(f"its remembered option {key} is {str(data.get(key))[:40]!r}")

        for key in ("include", "exclude"):
            if not isinstance(data.get(key, []), list) or not all(isinstance(g, str) for g in data.get(key, [])):
                raise bad(key)
        if data.get("max_bytes") is not None and not _positive_int(data["max_bytes"]):
            raise bad("max_bytes")
        policy = data.get("policy", {})
        if (not isinstance(policy, dict) or not set(policy) <= set(ChunkingPolicy().fingerprint())
                or not all(map(_positive_int, policy.values()))):
            raise bad("policy")
        bm25 = data.get("bm25")
        if bm25:
            if not isinstance(bm25, list) or len(bm25) != 2:
                raise bad("bm25")
            check_bm25(*bm25)  # as `index --bm25` checks them (ValueError or TypeError naming them)
        for key in ("embed_model", "context_model"):
            if data.get(key) is not None and not isinstance(data[key], str):
                raise bad(key)
        if not isinstance(data.get("profile", "code"), str):
            raise bad("profile")
        return cls(
            include=tuple(data.get("include", ())),
            exclude=tuple(data.get("exclude", ())),
            max_bytes=data.get("max_bytes"),
            policy=ChunkingPolicy(**data.get("policy", {})),
            profile=data.get("profile", "code"),
            bm25=tuple(data["bm25"]) if data.get("bm25") else None,
            embed_model=data.get("embed_model") or None,
            context_model=data.get("context_model") or None,
            turbovec_bits=data.get("turbovec_bits") if data.get("turbovec_bits") in (2, 4) else None,
        )

    def chunk(self, text: str, f) -> list:
        if self.profile == "prose":  # a file is one document, as in a document collection
            return whole_file(text, f.path, language=f.language, kind=f.kind)
        return with_headings(chunk_lines(text, f.path, language=f.language, kind=f.kind, policy=self.policy), text)


def _positive_int(value) -> bool:
    return type(value) is int and value > 0


def options_given(remembered: IndexOptions | None, *, include=(), exclude=(), max_bytes=None, profile=None,
                  bm25=None) -> IndexOptions:
    """The options an `index` run builds with: each one given now replaces its remembered value,
    the others (and the embedding and context models) stay as the index remembers them."""
    base = remembered or IndexOptions()
    return replace(base, include=tuple(include) or base.include, exclude=tuple(exclude) or base.exclude,
                   max_bytes=base.max_bytes if max_bytes is None else max_bytes,
                   profile=profile or base.profile, bm25=bm25 or base.bm25)


CONTEXTUAL = "lexical+ctx"


def embeds(name: str) -> bool:
    """Whether the retriever embeds chunks with a model (and so takes `model=`)."""
    return "local" in get_spec(name).extras


def wanted_model(name: str, options: IndexOptions) -> str | None:
    """The model a dense retriever should use: the one asked for now (--embed-model, or
    RETRIEVAL_EMBED_MODEL), else the one its index was built with, else None (the bundled one)."""
    if not embeds(name):
        return None
    from .embed import model_from_environment

    return model_from_environment() or options.embed_model


def wanted_context_model(name: str, options: IndexOptions) -> str | None:
    """The model whose written contexts lexical+ctx takes: the one asked for now
    (RETRIEVAL_CONTEXT_MODEL), else the one its index was built with, else None (the default). A
    shell without the variable must not rebuild, offline, an index of paid contexts."""
    if name != CONTEXTUAL:
        return None
    from .contextual import DEFAULT_MODEL, ENV_MODEL

    model = os.environ.get(ENV_MODEL, "").strip() or options.context_model
    return None if model == DEFAULT_MODEL else model


def wanted_bits(name: str, options: IndexOptions) -> int | None:
    """A dense retriever's quantization width: RETRIEVAL_TURBOVEC_BITS when set now, else the one
    its index was built with, else None (the default). A later command without the variable (an
    agent's shell, the server) rebuilt a 2-bit index at 4 bits."""
    if not embeds(name):
        return None
    from .retrievers.dense import DEFAULT_BITS, ENV_BITS, _bits

    bits = _bits() if os.environ.get(ENV_BITS, "").strip() else options.turbovec_bits
    return None if bits == DEFAULT_BITS else bits


def configured_retriever(name: str, options: IndexOptions):
    """The retriever as these options configure it (BM25 parameters, the embedding model, the
    context model)."""
    kwargs = options.retriever_kwargs()
    if options.embed_model and embeds(name):
        kwargs["model"] = options.embed_model
    if options.context_model and name == CONTEXTUAL:
        kwargs["model"] = options.context_model
    if options.turbovec_bits and embeds(name):
        kwargs["bits"] = options.turbovec_bits
    try:
        retriever = build_retriever(name, **kwargs)
        if options.embed_model and embeds(name):
            retriever.fingerprint()  # resolves the model: a missing one fails here, with the hint below
        return retriever
    except SetupError as exc:
        from .embed import model_from_environment

        if options.embed_model and embeds(name) and not model_from_environment():
            # Given once at index time and remembered, the model has gone since: say where it comes from.
            raise SetupError(f"{exc}; the {name} index remembers this model (`retrieval index --retriever {name} "
                             f"--reset-filters` goes back to the bundled one)") from exc
        raise


def use_profile(retriever, name: str, profile: str) -> None:
    """Set a retriever's profile; `code` is every retriever's default."""
    if profile == "code":
        return
    use = getattr(retriever, "use_profile", None)
    if use is None:
        raise ValueError(f"the {name} retriever has no {profile!r} profile")
    use(profile)


def chunker_for(retriever, options: IndexOptions) -> Callable:
    """How this retriever cuts a file into chunks: its own `chunk_file(text, file, options)` (AST
    chunks, say) when it has one, else the options' line chunker. Its fingerprint covers the choice."""
    own = getattr(retriever, "chunk_file", None)
    if own is None:
        return options.chunk
    return lambda text, f: own(text, f, options)
