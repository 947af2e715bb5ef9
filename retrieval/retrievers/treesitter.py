"""`treesitter`: the lexical ranking over syntax-aware chunks (the `treesitter` extra).

Everything but the chunking is the lexical retriever's: the same terms (with the chunk's scope path
indexed beside its text, so `Router.add_route` finds the method by its scope names), the same
definition signals fed with names from the syntax tree instead of patterns, the same store and
incremental refresh. The store also remembers which files fell back to line chunks, for `status`.
"""
from __future__ import annotations

from typing import Iterable

from ..chunking.ast import chunk_source
from ..chunking.grammars import structured
from ..chunking.lines import whole_file
from ..records import Chunk, SourceFile
from .lexical import LexicalRetriever

CHUNKER_VERSION = 67  # bump when chunk boundaries or their metadata change: stores are rebuilt


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

    def chunk_file(self, text: str, source_file: SourceFile, options) -> list[Chunk]:
        """Chunks of one file as `service.refresh` asks for them (see `chunk_source`)."""
        f = source_file
        if getattr(options, "profile", "code") == "prose":
            return whole_file(text, f.path, language=f.language, kind=f.kind)
        return chunk_source(text, f.path, language=f.language, kind=f.kind, policy=options.policy)

    def indexed_context(self, chunk, path: str) -> str:
        """A scope path is indexed with the text (`Router add_route` finds the method), but not the
        label of a chunk no definition holds: `module aliases.available.bash-it.aliases` (or a
        config file's path) restated the path words the path terms already give every chunk of
        the file, and `module` matched every such chunk, so the license header, imports and
        top-level statements outranked the file's definitions and other files' code."""
        if chunk.context == path or (chunk.chunk_kind == "module" and chunk.context.startswith("module ")):
            return ""
        return chunk.context

    def update_store(self, directory: str, state: dict | None, removed_paths,
                     added: Iterable[tuple[SourceFile, list[Chunk]]], *, purge: bool = False) -> dict:
        fallback = set((state or {}).get("line_fallback", ()))
        removed_paths = list(removed_paths)
        fallback.difference_update(removed_paths)

        def noting(pairs):
            for f, chunks in pairs:
                fallback.discard(f.path)
                # A file whose language has a structure chunker but got plain line chunks fell back.
                if chunks and structured(f.language) and not chunks[0].chunk_kind:
                    fallback.add(f.path)
                yield f, chunks

        new_state = super().update_store(directory, state, removed_paths, noting(added), purge=purge)
        new_state["line_fallback"] = sorted(fallback)
        return new_state
