"""The persistent lexical index: a list of immutable segments plus deletions.

A refresh writes one new segment holding the changed files and marks their old documents deleted;
when segments pile up or too much is deleted, all live documents are merged into one segment
straight from the postings (no source file is read again).
"""
from __future__ import annotations

import os
from array import array
from itertools import compress

from ..store.atomic import remove_tree
from .bm25 import SegmentView
from .segment import CorruptSegment, DiskSegment, SegmentBuilder

MAX_SEGMENTS = 8
MAX_DELETED_FRACTION = 0.3
# A builder is written out as a segment once it holds this many postings, so building (and merging)
# holds a bounded amount in memory however big the tree: about 10 bytes a posting plus the terms.
SEGMENT_POSTINGS = 30_000_000


def empty_state(directory: str | None = None) -> dict:
    """A state with no documents. Segment numbers continue past any directory already there, so a
    rebuild never overwrites a segment that the committed manifest may still name."""
    used = 0
    if directory is not None:
        try:
            names = os.listdir(directory)
        except OSError:
            names = []
        for name in names:
            digits = name[4:10]
            if name.startswith("seg-") and digits.isdigit():
                used = max(used, int(digits))
    return {"segments": [], "n_docs": 0, "total_len": 0, "next_segment": used + 1}


class _SegmentWriter:
    """Adds files to a builder and writes it out as a segment whenever it reaches the budget."""

    def __init__(self, index: "LexicalIndex", state: dict):
        self.index = index
        self.state = state
        self.builder = SegmentBuilder()

    def add_file(self, path: str, language: str, kind: str, docs, generated: bool = False) -> None:
        builder = self.builder
        for start, end, counts, *meta in docs:
            builder.add(path, language, kind, start, end, counts, meta=meta[0] if meta else None, generated=generated)
        if builder.n_postings >= SEGMENT_POSTINGS:
            self.flush()

    def flush(self) -> None:
        builder, state = self.builder, self.state
        if builder.n_docs:
            name = self.index._new_name(state)
            meta = builder.write(os.path.join(self.index.directory, name))
            state["segments"].append(
                {"name": name, "n_docs": meta["n_docs"], "n_postings": builder.n_postings, "deleted": []}
            )
            state["n_docs"] += meta["n_docs"]
            state["total_len"] += meta["total_len"]
        self.builder = SegmentBuilder()


class LexicalIndex:
    def __init__(self, directory: str, state: dict):
        self.directory = directory
        self.state = state
        self._segments: dict[str, DiskSegment] = {}

    def segment(self, name: str) -> DiskSegment:
        seg = self._segments.get(name)
        if seg is None:
            if not isinstance(name, str) or not name.startswith("seg-") or "/" in name or os.sep in name:
                # Only a tampered manifest names one elsewhere (`../../other/.retrieval/lexical/seg-000001`):
                # that index was searched as this root's.
                raise CorruptSegment(f"the manifest names a segment outside the index: {name!r}")
            seg = self._segments[name] = DiskSegment(os.path.join(self.directory, name))
        return seg

    def locations(self) -> dict[str, tuple[str, int, int]]:
        """{path: (segment, first doc, doc count)} for every file with live documents.

        Read from the segments rather than kept in the manifest, which every query parses: a
        file's documents are consecutive in one segment, and all of them are deleted together.
        """
        out: dict[str, tuple[str, int, int]] = {}
        for s in self.state["segments"]:
            name = s["name"]
            deleted = set(s["deleted"])
            for path, first, count in self.segment(name).file_spans():
                if first not in deleted:
                    out[path] = (name, first, count)
        return out

    def views(self) -> list[SegmentView]:
        """The segments, opened and checked against the manifest's counts (see `_verify`)."""
        views = [
            SegmentView(self.segment(s["name"]), frozenset(s["deleted"]))
            for s in self.state["segments"]
        ]
        self._verify(views)
        return views

    def _verify(self, views: list[SegmentView]) -> None:
        """The manifest's numbers against the segments' own (their seg.json, read on open anyway): a
        number changed in either, or a segment of another build put in its place, ranked silently
        (BM25's collection statistics) or emptied every answer. Damage the counts cannot show
        needs checksums; this costs no read beyond what opening does."""
        live = upper = 0
        exact = True
        for s, view in zip(self.state["segments"], views):
            seg = view.segment
            if seg.n_docs != s["n_docs"] or any(not 0 <= d < seg.n_docs for d in view.deleted):
                raise CorruptSegment(f"segment {s['name']} does not match the manifest")
            live += seg.n_docs - len(view.deleted)
            upper += seg.total_len
            exact = exact and not view.deleted
        total = self.state["total_len"]
        if self.state["n_docs"] != live or not 0 <= total <= upper or (exact and total != upper):
            raise CorruptSegment("the manifest's document counts do not match its segments")

    @property
    def n_docs(self) -> int:
        return self.state["n_docs"]

    @property
    def avgdl(self) -> float:
        n = self.state["n_docs"]
        return self.state["total_len"] / n if n else 0.0

    # -- writing ---------------------------------------------------------------------------

    def apply(self, removed_paths, added, *, purge: bool = False) -> dict:
        """New state after removing files and adding (path, language, kind, [(start, end, counts[, meta])][,
        generated]).

        `added` is consumed once, lazily (one file in memory at a time); a path that already has
        documents is replaced, and an empty document list just removes them. Writes new segment
        directories; the caller commits the returned state atomically and then calls
        collect_garbage(). `purge` rewrites every segment holding removed documents, so that
        nothing of them stays on disk.
        """
        state = {
            "segments": [dict(s, deleted=list(s["deleted"])) for s in self.state["segments"]],
            "n_docs": self.state["n_docs"],
            "total_len": self.state["total_len"],
            "next_segment": self.state["next_segment"],
        }
        by_name = {s["name"]: s for s in state["segments"]}
        locations = self.locations()

        def delete(path: str) -> None:
            loc = locations.pop(path, None)
            if loc is None:
                return
            name, first, count = loc
            lens = self.segment(name).lens
            for d in range(first, first + count):
                state["n_docs"] -= 1
                state["total_len"] -= lens[d]
            by_name[name]["deleted"].extend(range(first, first + count))

        for path in removed_paths:
            delete(path)
        writer = _SegmentWriter(self, state)
        for path, language, kind, docs, *generated in added:
            delete(path)
            writer.add_file(path, language, kind, docs, bool(generated and generated[0]))
        writer.flush()
        # Drop segments with nothing live, then merge where fragmentation costs too much.
        state["segments"] = [s for s in state["segments"] if len(s["deleted"]) < s["n_docs"]]
        for group in self._merge_groups(state["segments"], purge=purge):
            state = self._merge(state, group)
        for s in state["segments"]:
            s["deleted"].sort()
        return state

    def _new_name(self, state: dict) -> str:
        name = f"seg-{state['next_segment']:06d}"
        state["next_segment"] += 1
        return name

    @staticmethod
    def _live_postings(s: dict) -> int:
        n_postings = s.get("n_postings", 100 * s["n_docs"])  # states written before it was recorded
        return n_postings * (s["n_docs"] - len(s["deleted"])) // max(s["n_docs"], 1)

    def _merge_groups(self, segments: list[dict], purge: bool = False) -> list[list[str]]:
        """Names of segments to merge, in groups that each fit one segment's budget.

        Segments with too much deleted are rewritten; beyond MAX_SEGMENTS, the small segments are
        folded together, the largest of them only when the others outweigh it. Full-size segments
        are only ever rewritten for deletions, so a merge never
        holds more than about one segment's budget in memory.
        """
        limit = (lambda s: 0) if purge else (lambda s: MAX_DELETED_FRACTION * s["n_docs"])
        picked = [s for s in segments if len(s["deleted"]) > limit(s)]
        small = sorted(
            (s for s in segments if s not in picked and self._live_postings(s) < SEGMENT_POSTINGS // 2),
            key=lambda s: (self._live_postings(s), s["name"]),
        )
        if len(segments) > MAX_SEGMENTS and small:
            # Tiered: the smaller ones fold together, the largest with them only once they outweigh
            # it (taken every time, a one-file refresh rewrote the whole index at every eighth).
            largest = max(small, key=lambda s: (self._live_postings(s), s["name"]))
            rest = [s for s in small if s is not largest]
            if self._live_postings(largest) > sum(map(self._live_postings, rest)):
                small = rest
            picked += small
        groups: list[list[str]] = []
        size = SEGMENT_POSTINGS
        for s in sorted(picked, key=lambda s: (self._live_postings(s), s["name"])):
            if size + self._live_postings(s) > SEGMENT_POSTINGS:
                groups.append([])
                size = 0
            groups[-1].append(s["name"])
            size += self._live_postings(s)
        return groups

    def _merge(self, state: dict, names: list[str]) -> dict:
        """State with the named segments replaced by one segment of their live documents, built
        straight from their postings."""
        chosen = [s for s in state["segments"] if s["name"] in names]
        views = [(self.segment(s["name"]), frozenset(s["deleted"])) for s in chosen]
        builder = SegmentBuilder()
        remaps: list[array] = []  # per segment, each doc's new id (-1: deleted)
        for seg, deleted in views:
            remap = array("l", [-1]) * seg.n_docs
            files, doc_file, starts, ends, lens = seg.files, seg.doc_file, seg.starts, seg.ends, seg.lens
            metas = seg.meta_rows()
            generated = seg.generated
            for d in range(seg.n_docs):
                if d in deleted:
                    continue
                path, language, kind = files[doc_file[d]]
                new = builder.add(path, language, kind, starts[d], ends[d], {}, meta=metas[d],
                                  generated=doc_file[d] in generated)
                builder.lens[new] = lens[d]
                remap[d] = new
            remaps.append(remap)
        terms: set[str] = set()
        for seg, _ in views:
            terms.update(seg.terms())
        # Each segment's post.bin is opened once for all its terms, and a term's postings are
        # renumbered by the interpreter's C loops, not one Python step per posting.
        readers = [seg.open_postings() for seg, _ in views]
        try:
            for term in sorted(terms):
                new_docs, new_tfs = array("I"), array("I")
                for (seg, deleted), remap, fh in zip(views, remaps, readers):
                    plist = seg.postings(term, fh)
                    if plist is None:
                        continue
                    docs, tfs = plist
                    mapped = list(map(remap.__getitem__, docs))
                    if deleted:
                        live = [nd >= 0 for nd in mapped]
                        mapped, tfs = list(compress(mapped, live)), compress(tfs, live)
                    new_docs.extend(mapped)
                    new_tfs.extend(tfs)
                if new_docs:
                    builder.postings[term] = (new_docs, new_tfs)
                    builder.n_postings += len(new_docs)
        finally:
            for fh in readers:
                fh.close()
        merged = dict(state, segments=[s for s in state["segments"] if s["name"] not in names])
        if builder.n_docs:
            name = self._new_name(merged)
            meta = builder.write(os.path.join(self.directory, name))
            merged["segments"].append(
                {"name": name, "n_docs": meta["n_docs"], "n_postings": builder.n_postings, "deleted": []}
            )
        return merged

    def collect_garbage(self, state: dict) -> None:
        """Remove segment directories the committed state no longer names."""
        live = {s["name"] for s in state["segments"]}
        try:
            names = os.listdir(self.directory)
        except OSError:
            return
        for name in names:
            if name.startswith("seg-") and name not in live:
                remove_tree(os.path.join(self.directory, name), ignore_errors=True)
