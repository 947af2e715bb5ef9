"""`treesitter`: the lexical ranking over syntax-aware chunks (the `treesitter` extra).

Everything but the chunking is the lexical retriever's: the same terms (with the chunk's scope path
indexed beside its text, so `Router.add_route` finds the method by its scope names), the same
definition signals fed with names from the syntax tree instead of patterns, the same store and
incremental refresh. The store also remembers which files fell back to line chunks, for `status`.
"""
from __future__ import annotations

from collections import deque
from typing import Iterable

from ..chunking.ast import MISHANDLED, chunk_source
from ..chunking.grammars import structured
from ..chunking.lines import whole_file
from ..lexical.index import LexicalIndex, empty_state
from ..parallel import ordered_map
from ..records import Chunk, SourceFile, Unchunked
from .lexical import LexicalRetriever, _file_documents, file_item

CHUNKER_VERSION = 110  # bump when chunk boundaries or their metadata change: stores are rebuilt


class TreesitterRetriever(LexicalRetriever):
    name = "treesitter"
    # A syntax chunk can be a few lines (a split function's 8-line middle, a doc comment's 4-line
    # tail, a file's `require` lines) that BM25's length normalisation lifted above whole
    # definitions on one or two words (a helper's audit: treesitter's top 10s held 162 hits of six
    # lines or fewer on semble-dev, 36 of them right; lexical's 60). Read as 40 terms at least:
    # semble-dev treesitter 0.8788 -> 0.8793 (curl, vitest, rails up; no query down; 25 terms: no
    # change, 50: one serde query down, 75: 7 up and 5 down). Line chunks are not that short.
    length_floor = 40

    def fingerprint(self) -> dict:
        return dict(super().fingerprint(), chunker="ast", chunker_version=CHUNKER_VERSION)

    def chunking(self) -> dict:
        return dict(super().chunking(), ast=CHUNKER_VERSION)  # files without a grammar take line chunks

    # A file's text (records.Unchunked) is chunked in the worker process that extracts its terms:
    # chunking was some 40% of the CPU time of this process, the one reading the files and building
    # the postings (fastapi: 3.7 s of it, then 2.2 s).
    chunks_in_workers = True

    def chunk_file(self, text: str, source_file: SourceFile, options) -> list[Chunk]:
        """Chunks of one file as `service.refresh` asks for them (see `chunk_source`)."""
        f = source_file
        return _chunks(text, f.path, f.language, f.kind, getattr(options, "profile", "code"), options.policy)

    def indexed_context(self, chunk, path: str) -> str:
        return _indexed_context(chunk, path)

    def update_store(self, directory: str, state: dict | None, removed_paths,
                     added: Iterable[tuple[SourceFile, list[Chunk] | Unchunked]], *, purge: bool = False) -> dict:
        """As the lexical retriever's; a file may come as its text (Unchunked), chunked on the way."""
        fallback = set((state or {}).get("line_fallback", ()))
        removed_paths = list(removed_paths)
        fallback.difference_update(removed_paths)
        index = LexicalIndex(directory, state or empty_state(directory))
        new_state = index.apply(removed_paths, self._documents(added, fallback), purge=purge)
        new_state["line_fallback"] = sorted(fallback)
        return new_state

    def _documents(self, added, fallback: set):
        """What LexicalIndex.apply takes for each file of `added` the index hears of, in order; the
        paths of those that fell back to line chunks are noted in `fallback`."""
        weight, pairs, profile = self.ranking.path_weight, self._pairs(), self.profile
        sent: deque = deque()  # (file, its Unchunked.chunked or None) per item given to the workers

        def items():
            for f, chunks in added:
                if isinstance(chunks, Unchunked):
                    sent.append((f, chunks.chunked))
                    options = chunks.options
                    yield (_TEXT, chunks.text, getattr(options, "profile", "code"), options.policy,
                           (f.path, f.language, f.kind, weight, pairs, profile, f.generated))
                else:
                    sent.append((f, None))
                    yield (_CHUNKS, len(chunks), _fell_back(chunks, f.language),
                           file_item(f.path, f.language, f.kind, chunks, self.indexed_context, weight, pairs,
                                     profile, f.generated))

        for n, fell_back, mishandled, documents in ordered_map(_file_chunks_documents, items(), jobs=self.jobs):
            f, chunked = sent.popleft()
            if mishandled:  # a worker's list is its own: kept here, where the tests look
                MISHANDLED.extend(mishandled[:max(0, 100 - len(MISHANDLED))])
            if chunked is not None and not chunked(n):
                continue
            fallback.discard(f.path)
            if fell_back:
                fallback.add(f.path)
            yield documents


_TEXT, _CHUNKS = "text", "chunks"


def _file_chunks_documents(item) -> tuple[int, bool, list[str], tuple]:
    """(chunks, whether they fell back to lines, the trees the chunker mishandled, what
    LexicalIndex.apply takes) of one file: chunked here when it comes as its text. Runs in a
    worker process: `item` and the answer pickle."""
    if item[0] == _CHUNKS:
        _, n, fell_back, work = item
        return n, fell_back, [], _file_documents(work)
    _, text, chunk_profile, policy, (path, language, kind, weight, pairs, profile, generated) = item
    before = len(MISHANDLED)
    chunks = _chunks(text, path, language, kind, chunk_profile, policy)
    # Handed back (and taken out of this process's list, which is the caller's own without workers).
    mishandled = MISHANDLED[before:]
    del MISHANDLED[before:]
    work = file_item(path, language, kind, chunks, _indexed_context, weight, pairs, profile, generated)
    return len(chunks), _fell_back(chunks, language), mishandled, _file_documents(work)


def _chunks(text: str, path: str, language: str, kind: str, profile: str, policy) -> list[Chunk]:
    if profile == "prose":
        return whole_file(text, path, language=language, kind=kind)
    return chunk_source(text, path, language=language, kind=kind, policy=policy)


def _fell_back(chunks: list[Chunk], language: str) -> bool:
    """A file whose language has a structure chunker but got plain line chunks fell back."""
    return bool(chunks) and structured(language) and not chunks[0].chunk_kind


def _indexed_context(chunk, path: str) -> str:
    """A scope path is indexed with the text (`Router add_route` finds the method), but not the
    label of a chunk no definition holds: `module aliases.available.bash-it.aliases` (or a
    config file's path) restated the path words the path terms already give every chunk of
    the file, and `module` matched every such chunk, so the license header, imports and
    top-level statements outranked the file's definitions and other files' code."""
    if chunk.context == path or (chunk.chunk_kind == "module" and chunk.context.startswith("module ")):
        return ""
    return chunk.context
