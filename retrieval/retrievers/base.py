"""The retriever protocol, the registry, and the one place availability of an extra is probed."""
from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Protocol, runtime_checkable

from ..extras import install_hint, missing_modules
from ..records import Document, SearchHit, member_shaped

NOT_INDEXED = "call index() before search()"


class Released(RuntimeError):
    """A search on an engine that was released for a newer snapshot of its index (by another
    thread's refresh): open the index again (service.open_index)."""


def check_search_args(query, top_k) -> None:
    """A wrong argument is the caller's error, said as such: deeper down it would surface as an
    internal TypeError (which the service would even take for a damaged index)."""
    if not isinstance(query, str):
        raise TypeError(f"query must be a str, not {type(query).__name__}")
    if isinstance(top_k, bool) or not isinstance(top_k, int):
        raise TypeError(f"top_k must be an int, not {type(top_k).__name__}")
    if top_k < 0:
        raise ValueError(f"top_k must be 0 or more, not {top_k}")


def check_documents(documents) -> list[Document]:
    """The documents to index, as a list of Documents: another record (a str, a Chunk, a dict)
    failed deep inside indexing with an AttributeError. Checked before any state is replaced."""
    if isinstance(documents, (str, bytes, Document)) or not isinstance(documents, Iterable):
        raise TypeError(f"documents must be an iterable of Document, not {type(documents).__name__}")
    documents = list(documents)
    for doc in documents:
        if not isinstance(doc, Document):
            raise TypeError(f"documents must be Document records, not {type(doc).__name__}")
        # A field of another type (text None, an int docid, a line number as a str) failed deep
        # inside too, as an AttributeError, or as "docs.json is damaged" (pi-serini).
        for name in _TEXT_FIELDS:
            value = getattr(doc, name)
            if not isinstance(value, str):
                raise TypeError(f"Document {doc.docid!r}: {name} must be a str, not {type(value).__name__}")
        for name in ("start_line", "end_line"):
            value = getattr(doc, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise TypeError(f"Document {doc.docid!r}: {name} must be an int or None, not {type(value).__name__}")
        _check_span(doc)
    # A docid names one document: given twice, a search returned it twice (once from pi-serini).
    seen: set[str] = set()
    for doc in documents:
        if doc.docid in seen:
            raise ValueError(f"Document {doc.docid!r} is given twice: a docid names one document")
        seen.add(doc.docid)
    return documents


_TEXT_FIELDS = ("docid", "text", "url", "source_path", "context", "language", "kind", "symbol", "chunk_kind")


def _line(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _check_span(doc: Document) -> None:
    """Lines, scope, definitions and members of the shapes a chunker gives them: a member without
    its kind, a scope as text or lines 5-2 were indexed, then failed every search (an unpacking
    error, a damaged-segment message about an index in memory), or were read letter by letter."""
    start, end = doc.start_line, doc.end_line
    if (start is None) != (end is None) or (start is not None and not (_line(start) and _line(end) and start <= end)):
        raise ValueError(f"Document {doc.docid!r}: start_line and end_line must both be None or lines "
                         f"1 <= start_line <= end_line, not {start!r} and {end!r}")
    if doc.scope is not None and not (isinstance(doc.scope, tuple) and len(doc.scope) == 2
                                      and _line(doc.scope[0]) and _line(doc.scope[1]) and doc.scope[0] <= doc.scope[1]):
        raise ValueError(f"Document {doc.docid!r}: scope must be None or (first line, last line), not {doc.scope!r}")
    if doc.definitions is not None and (isinstance(doc.definitions, str) or not isinstance(doc.definitions, (tuple, list))
                                        or not all(isinstance(n, str) for n in doc.definitions)):
        raise TypeError(f"Document {doc.docid!r}: definitions must be None or a tuple of names, not {doc.definitions!r}")
    if isinstance(doc.members, str) or not isinstance(doc.members, (tuple, list)) or not all(
            map(member_shaped, doc.members)):
        raise TypeError(f"Document {doc.docid!r}: members must be (name, scope path, kind[, first line, last "
                        f"line]) tuples, not {doc.members!r}")


def marked_paths(documents: list[Document]) -> frozenset[str]:
    """The files among in-memory documents a tool wrote, told as the store tells them
    (retrieval.read), code and config only: by the opening comments of the text from their first
    line, or as a bundler's output by their texts in line order."""
    from ..generated import bundled, marked_generated

    files: dict[str, list[Document]] = {}
    for d in documents:
        if d.kind != "docs":
            files.setdefault(d.source_path or d.docid, []).append(d)
    marked = set()
    for path, docs in files.items():
        docs = sorted(docs, key=lambda d: (d.start_line or 1, d.end_line or 0))
        if (docs[0].start_line or 1) == 1 and marked_generated(docs[0].text):
            marked.add(path)
        elif bundled("\n".join(d.text for d in docs), docs[0].language):
            marked.add(path)
    return frozenset(marked)


def term_versions() -> dict:
    """What a document's code-aware terms (lexical.features, with text's and stem's rules) depend
    on: an index of them says so in its fingerprint, and is rebuilt when one changes."""
    from .. import stem, text
    from ..lexical import features

    return {"features": features.VERSION, "text": text.VERSION, "stem": stem.VERSION, "stemming": text.STEM}


def check_bm25(k1, b, *, none_is_default: bool = False) -> None:
    """BM25's own ranges (as `index --bm25` takes them): outside them a score divides by zero
    (k1=-1), turns NaN (no hits at all) or negative (the ranking upside down)."""
    for name, value, top in (("k1", k1, 100), ("b", b, 1)):
        if value is None and none_is_default:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a number, not {type(value).__name__}")
        if not 0 <= value <= top:  # also false for NaN
            raise ValueError(f"{name} must be a number from 0 to {top}, not {value!r}")


@runtime_checkable
class Retriever(Protocol):
    name: str

    def index(self, documents: Iterable[Document]) -> None: ...

    def search(self, query: str, top_k: int = 10) -> list[str]: ...

    def search_detailed(self, query: str, top_k: int = 10) -> list[SearchHit]: ...


@dataclass(frozen=True)
class RetrieverSpec:
    """How to build a retriever and what it needs installed."""

    name: str
    factory: str  # "module:attribute", imported only when the retriever is asked for
    extras: tuple[str, ...] = ()  # extras it needs (retrieval.extras.EXTRAS names)
    description: str = ""
    # "module:function" returning '' or a reason it cannot run although its extras import (no Java, ...)
    probe: str = ""
    # False: built only when asked for by name, never by `index` / `eval` with `all`
    in_all: bool = True
    # Scores with BM25 and takes `index --bm25 K1,B` (its factory accepts k1= and b=)
    bm25: bool = False

    def missing(self) -> list[str]:
        return [m for extra in self.extras for m in missing_modules(extra)]

    def unavailable_reason(self) -> str:
        """'' when usable; otherwise the one-line reason, with the install hint."""
        missing = self.missing()
        if missing:
            return f"the {self.name!r} retriever needs {', '.join(missing)}: {install_hint(*self.extras)}"
        if self.probe:
            module_name, attr = self.probe.split(":")
            return getattr(importlib.import_module(module_name), attr)()
        return ""


REGISTRY: dict[str, RetrieverSpec] = {}


def register(spec: RetrieverSpec) -> None:
    REGISTRY[spec.name] = spec


register(
    RetrieverSpec(
        name="lexical",
        bm25=True,
        factory="retrieval.retrievers.lexical:LexicalRetriever",
        description="BM25 with a code-aware tokenizer (standard library only)",
    )
)

register(
    RetrieverSpec(
        name="lexical+ctx",
        bm25=True,
        factory="retrieval.retrievers.contextual:ContextualRetriever",
        description="BM25 over each chunk plus a context situating it in its file (offline, or an "
                    "Anthropic model's with the remote extra: `index --retriever lexical+ctx`)",
        in_all=False,  # a second full index, and model contexts must never be bought implicitly
    )
)


register(
    RetrieverSpec(
        name="treesitter",
        bm25=True,
        factory="retrieval.retrievers.treesitter:TreesitterRetriever",
        extras=("treesitter",),
        description="BM25 over tree-sitter chunks: whole definitions with their scope",
    )
)


register(
    RetrieverSpec(
        name="pi-serini",
        bm25=True,
        factory="retrieval.retrievers.pyserini:PyseriniRetriever",
        extras=("pyserini",),
        description="BM25 computed by Lucene (Anserini via Pyserini), then the lexical ranking signals",
        probe="retrieval.lucene.jvm:problem",
    )
)


# Dense retrieval: a local sentence-transformers model (`local`) and quantized vectors (`turbovec`).
register(
    RetrieverSpec(
        name="turbovec",
        factory="retrieval.retrievers.dense:DenseRetriever",
        extras=("local", "turbovec"),
        description="local embeddings (all-MiniLM-L6-v2) in a turbovec index, re-scored exactly",
        probe="retrieval.retrievers.dense:probe",
    )
)
register(
    RetrieverSpec(
        name="hybrid",
        factory="retrieval.retrievers.hybrid:HybridRetriever",
        extras=("local", "turbovec"),
        description="lexical and turbovec candidates fused, then ranked once",
        probe="retrieval.retrievers.dense:probe",
    )
)


def get_spec(name: str) -> RetrieverSpec:
    spec = REGISTRY.get(name)
    if spec is None:
        raise unknown_retriever(name)
    return spec


def not_installed(names) -> str:
    """One line for retrievers whose extras are missing: their names and one command installing
    them all (a core-only installation said four install commands, one per extra, on every run)."""
    extras = sorted({extra for name in names for extra in REGISTRY[name].extras})
    return f"{', '.join(names)}: skipped (not installed here: {install_hint(*extras)})"


def unknown_retriever(name: str, *also: str) -> ValueError:
    """The error for a name no retriever has, with the one it was probably meant to be; `also`: the
    other names the caller takes (`all`)."""
    choices = [*also, *sorted(REGISTRY)]
    close = closest_name(name, choices)
    if close:
        return ValueError(f"unknown retriever {name!r}; did you mean {close!r}? (one of: {', '.join(choices)})")
    return ValueError(f"unknown retriever {name!r}; choose one of: {', '.join(choices)}")


def closest_name(value: str, choices) -> str | None:
    """The choice a mistyped value was probably meant to be (`lexcal`: lexical), or None."""
    from difflib import get_close_matches

    close = get_close_matches(str(value).lower(), list(choices), n=1, cutoff=0.5)
    return close[0] if close else None


def build_retriever(name: str, **kwargs) -> Retriever:
    """A new retriever by registry name; ValueError for unknown names, RuntimeError when its
    dependencies are missing."""
    spec = get_spec(name)
    reason = spec.unavailable_reason()
    if reason:
        raise RuntimeError(reason)
    module_name, attr = spec.factory.split(":")
    factory: Callable = getattr(importlib.import_module(module_name), attr)
    try:
        return factory(**kwargs)
    except TypeError as exc:
        # Said of the retriever asked for, not of a class behind it (`DenseRetriever.__init__() got
        # an unexpected keyword argument 'k1'` for `hybrid`).
        unexpected = _UNEXPECTED.search(str(exc))
        if unexpected is None or unexpected.group(1).strip("'") not in kwargs:
            raise
        raise TypeError(f"the {name} retriever takes no {unexpected.group(1)} argument") from None


_UNEXPECTED = re.compile(r"got an unexpected keyword argument ('[^']*')")
