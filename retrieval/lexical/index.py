"""The persistent lexical index: a list of immutable segments plus deletions.

A refresh writes one new segment holding the changed files and marks their old documents deleted;
when segments pile up or too much is deleted, all live documents are merged into one segment
straight from the postings (no source file is read again).
"""
from __future__ import annotations

import os
import shutil
from array import array

from .bm25 import SegmentView
from .segment import DiskSegment, SegmentBuilder

MAX_SEGMENTS = 8
MAX_DELETED_FRACTION = 0.3


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
    return {"segments": [], "locations": {}, "n_docs": 0, "total_len": 0, "next_segment": used + 1}


class LexicalIndex:
    def __init__(self, directory: str, state: dict):
        self.directory = directory
        self.state = state
        self._segments: dict[str, DiskSegment] = {}

    def segment(self, name: str) -> DiskSegment:
        seg = self._segments.get(name)
        if seg is None:
            seg = self._segments[name] = DiskSegment(os.path.join(self.directory, name))
        return seg

    def views(self) -> list[SegmentView]:
        return [
            SegmentView(self.segment(s["name"]), frozenset(s["deleted"]))
            for s in self.state["segments"]
        ]

    @property
    def n_docs(self) -> int:
        return self.state["n_docs"]

    @property
    def avgdl(self) -> float:
        n = self.state["n_docs"]
        return self.state["total_len"] / n if n else 0.0

    # -- writing ---------------------------------------------------------------------------

    def apply(self, removed_paths, added, *, purge: bool = False) -> dict:
        """New state after removing files and adding (path, language, kind, [(start, end, counts)]).

        Writes new segment directories; the caller commits the returned state atomically and then
        calls collect_garbage(). `purge` merges even when fragmentation is low, so that nothing of
        the removed documents stays on disk.
        """
        state = {
            "segments": [dict(s, deleted=list(s["deleted"])) for s in self.state["segments"]],
            "locations": dict(self.state["locations"]),
            "n_docs": self.state["n_docs"],
            "total_len": self.state["total_len"],
            "next_segment": self.state["next_segment"],
        }
        by_name = {s["name"]: s for s in state["segments"]}
        for path in removed_paths:
            loc = state["locations"].pop(path, None)
            if loc is None:
                continue
            name, first, count = loc
            seg_state = by_name[name]
            seg = self.segment(name)
            lens = seg.lens
            for d in range(first, first + count):
                state["n_docs"] -= 1
                state["total_len"] -= lens[d]
            seg_state["deleted"].extend(range(first, first + count))
        if added:
            builder = SegmentBuilder()
            for path, language, kind, docs in added:
                first = builder.n_docs
                for start, end, counts in docs:
                    builder.add(path, language, kind, start, end, counts)
                if builder.n_docs > first:
                    state["locations"][path] = [None, first, builder.n_docs - first]
            if builder.n_docs:
                name = self._new_name(state)
                meta = builder.write(os.path.join(self.directory, name))
                state["segments"].append({"name": name, "n_docs": meta["n_docs"], "deleted": []})
                for loc in state["locations"].values():
                    if loc[0] is None:
                        loc[0] = name
                state["n_docs"] += meta["n_docs"]
                state["total_len"] += meta["total_len"]
        # Drop segments with nothing live, then merge when fragmentation costs too much.
        state["segments"] = [s for s in state["segments"] if len(s["deleted"]) < s["n_docs"]]
        total = sum(s["n_docs"] for s in state["segments"])
        deleted = sum(len(s["deleted"]) for s in state["segments"])
        fragmented = len(state["segments"]) > MAX_SEGMENTS or (total and deleted / total > MAX_DELETED_FRACTION)
        if fragmented or (purge and deleted):
            state = self._merge(state)
        for s in state["segments"]:
            s["deleted"].sort()
        return state

    def _new_name(self, state: dict) -> str:
        name = f"seg-{state['next_segment']:06d}"
        state["next_segment"] += 1
        return name

    def _merge(self, state: dict) -> dict:
        views = [
            (self.segment(s["name"]), frozenset(s["deleted"])) for s in state["segments"]
        ]
        builder = SegmentBuilder()
        remaps: list[dict[int, int]] = []
        locations: dict[str, list] = {}
        for seg, deleted in views:
            remap: dict[int, int] = {}
            files, doc_file, starts, ends, lens = seg.files, seg.doc_file, seg.starts, seg.ends, seg.lens
            for d in range(seg.n_docs):
                if d in deleted:
                    continue
                path, language, kind = files[doc_file[d]]
                new = builder.add(path, language, kind, starts[d], ends[d], {})
                builder.lens[new] = lens[d]
                remap[d] = new
                loc = locations.get(path)
                if loc is None:
                    locations[path] = [None, new, 1]
                else:
                    loc[2] += 1
            remaps.append(remap)
        terms: set[str] = set()
        for seg, _ in views:
            terms.update(seg.terms())
        for term in sorted(terms):
            new_docs, new_tfs = array("I"), array("I")
            for (seg, _), remap in zip(views, remaps):
                plist = seg.postings(term)
                if plist is None:
                    continue
                for d, tf in zip(*plist):
                    nd = remap.get(d)
                    if nd is not None:
                        new_docs.append(nd)
                        new_tfs.append(tf)
            if new_docs:
                builder.postings[term] = (new_docs, new_tfs)
        merged = {
            "segments": [],
            "locations": locations,
            "n_docs": 0,
            "total_len": 0,
            "next_segment": state["next_segment"],
        }
        if builder.n_docs:
            name = self._new_name(merged)
            meta = builder.write(os.path.join(self.directory, name))
            merged["segments"].append({"name": name, "n_docs": meta["n_docs"], "deleted": []})
            for loc in locations.values():
                loc[0] = name
            merged["n_docs"] = meta["n_docs"]
            merged["total_len"] = meta["total_len"]
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
                shutil.rmtree(os.path.join(self.directory, name), ignore_errors=True)
