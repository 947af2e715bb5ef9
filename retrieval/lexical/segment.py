"""Immutable postings segments: built in memory, written once, read lazily.

On disk a segment is a directory:
  seg.json       counts, shard count, the byte size of every other file (a torn write shows) and
                 the CRC-32 of each file read whole (a file changed where its size does not show)
  files.json     {"path": [...], "language": [...], "kind": [...], "first": [...], "generated": [...]}:
                 per file, by file index; "first" is its first doc id (a file's docs are
                 consecutive); "generated" lists the indexes of the files a header marks as written
                 by a tool (retrieval.generated)
  docs.bin       four little-endian uint32 arrays of n_docs: file index, start line, end line, length
  post.bin       per term, its doc ids then its term frequencies (uint32 each)
  lex-NNNN.json  one shard of the lexicon: {term: [byte offset in post.bin, document frequency,
                 CRC-32 of the term's postings]} (a query reads a few terms' postings, not post.bin
                 whole, so each is checked as it is read)
  meta.bin       only when a chunker said more than lines: n_docs + 1 uint32 offsets, then per doc
                 a JSON array [context, kind, symbol, scope start, scope end, members] (a hit reads
                 its own; members are [name, scope path, kind] of the chunk's other definitions),
                 then each row's CRC-32 (uint32; checked as the row is read)
A query opens only the shards of its terms and reads only their postings.
"""
from __future__ import annotations

import json
import os
import sys
import zlib
from contextlib import nullcontext
from array import array

from ..records import member_shaped
from ..store.atomic import dumps, publish_dir, remove_tree, write_new
from .features import document_length

SEGMENT_FORMAT = 2
_LITTLE = sys.byteorder == "little"


def _to_bytes(values: array) -> bytes:
    if not _LITTLE:
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


def _from_bytes(data: bytes) -> array:
    out = array("I")
    out.frombytes(data)
    if not _LITTLE:
        out.byteswap()
    return out


def shard_of(term: str, n_shards: int) -> int:
    return zlib.crc32(term.encode("utf-8")) % n_shards


# Per-document chunk metadata a syntax-aware chunker provides (see records.Chunk)
META_COLUMNS = ("context", "kind", "symbol", "scope_start", "scope_end", "members")


class CorruptSegment(RuntimeError):
    pass


def _meta_row(row) -> tuple:
    """A stored metadata row as META_COLUMNS values; a row written before `members` has none."""
    if not isinstance(row, list) or len(row) not in (len(META_COLUMNS) - 1, len(META_COLUMNS)):
        raise ValueError("not a metadata row")
    if len(row) < len(META_COLUMNS):
        return (*row, [])
    members = row[-1]
    if not isinstance(members, list) or not all(map(_member, members)):
        raise ValueError("not a metadata row's members")
    if any(len(m) == 3 for m in members):  # written before members had lines: none to choose by
        return (*row[:-1], [m if len(m) == 5 else [*m, 0, 0] for m in members])
    return tuple(row)


def _member(m) -> bool:
    """Whether m is a stored member: a list of a member's shape, its lines in order."""
    return isinstance(m, list) and member_shaped(m) and (len(m) == 3 or m[3] <= m[4])


class SegmentBuilder:
    """Collects documents (term counts plus where they came from) into postings."""

    def __init__(self):
        self.files: list[list[str]] = []
        self.firsts = array("I")  # per file, its first doc
        self.generated: set[int] = set()  # the files a header marks as a tool's output
        self._file_ids: dict[str, int] = {}
        self.doc_file = array("I")
        self.starts = array("I")
        self.ends = array("I")
        self.lens = array("I")
        self.docids: list[str] = []  # only for in-memory use with arbitrary docids
        self.postings: dict[str, tuple[array, array]] = {}
        self.n_postings = 0
        self.meta: list[tuple | None] = []  # per doc: META_COLUMNS values, or None

    @property
    def n_docs(self) -> int:
        return len(self.lens)

    def add(self, path: str, language: str, kind: str, start: int, end: int, counts: dict, docid: str = "",
            meta: tuple | None = None, generated: bool = False) -> int:
        fid = self._file_ids.get(path)
        if fid is None:
            fid = self._file_ids[path] = len(self.files)
            self.files.append([path, language, kind])
            self.firsts.append(len(self.lens))
            if generated:
                self.generated.add(fid)
        doc = len(self.lens)
        self.doc_file.append(fid)
        self.starts.append(max(start, 0))
        self.ends.append(max(end, 0))
        self.lens.append(document_length(counts))
        self.docids.append(docid)
        self.meta.append(meta)
        self.n_postings += len(counts)
        postings = self.postings
        get = postings.get  # once per posting: the loop a build's main process spends most in
        for term, tf in counts.items():
            entry = get(term)
            if entry is None:
                postings[term] = (array("I", (doc,)), array("I", (tf,)))
            else:
                entry[0].append(doc)
                entry[1].append(tf)
        return doc

    def write(self, directory: str) -> dict:
        """Write this segment into a new directory (created here); returns its summary.

        The files are written durably into `<directory>.tmp`, which is then renamed into place: a
        crash or a full disk leaves no half-written segment under a name a manifest could use.
        """
        tmp = directory + ".tmp"
        if os.path.exists(tmp):
            remove_tree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        try:
            meta = self._write_files(tmp)
            if os.path.exists(directory):
                remove_tree(directory, ignore_errors=True)
            publish_dir(tmp, directory)
        except BaseException:
            remove_tree(tmp, ignore_errors=True)  # frees the space at once on a full disk
            raise
        return meta

    def _write_files(self, tmp: str) -> dict:
        terms = sorted(self.postings)
        n_shards = 1
        while n_shards < 4096 and len(terms) > n_shards * 2048:
            n_shards *= 2
        shards: list[dict] = [{} for _ in range(n_shards)]
        offset = 0
        # Streamed out term by term (the whole directory is renamed into place at the end), so
        # writing does not hold a second copy of every posting; synced before it is published.
        with open(os.path.join(tmp, "post.bin"), "xb") as fh:
            for term in terms:
                docs, tfs = self.postings[term]
                blob = _to_bytes(docs) + _to_bytes(tfs)
                fh.write(blob)
                shards[shard_of(term, n_shards)][term] = [offset, len(docs), zlib.crc32(blob)]
                offset += len(blob)
            fh.flush()
            os.fsync(fh.fileno())
        sizes = {"post.bin": offset}
        crcs: dict[str, int] = {}  # post.bin is never read whole: its terms carry theirs

        def put(name: str, data: bytes) -> None:
            sizes[name] = write_new(os.path.join(tmp, name), data)
            crcs[name] = zlib.crc32(data)

        put("docs.bin", b"".join(_to_bytes(a) for a in (self.doc_file, self.starts, self.ends, self.lens)))
        # Columns, not one list per file: they parse several times faster, and a cold query reads them.
        columns = {"path": [f[0] for f in self.files], "language": [f[1] for f in self.files],
                   "kind": [f[2] for f in self.files], "first": list(self.firsts),
                   "generated": sorted(self.generated)}
        put("files.json", dumps(columns))
        if any(self.meta):
            blobs = [dumps(list(m)) if m else b"" for m in self.meta]
            offsets = array("I", [0])
            for blob in blobs:
                offsets.append(offsets[-1] + len(blob))
            # Each row's CRC-32 ends the file: a hit reads its own row, never the file whole.
            row_crcs = array("I", map(zlib.crc32, blobs))
            put("meta.bin", _to_bytes(offsets) + b"".join(blobs) + _to_bytes(row_crcs))
        for i, shard in enumerate(shards):
            put(f"lex-{i:04d}.json", dumps(shard))
        meta = {
            "format": SEGMENT_FORMAT,
            "n_docs": self.n_docs,
            "n_terms": len(terms),
            "n_shards": n_shards,
            "total_len": sum(self.lens),
            "sizes": sizes,
            "crc32": crcs,
        }
        if "meta.bin" in sizes:
            meta["meta_row_crcs"] = True
        write_new(os.path.join(tmp, "seg.json"), dumps(meta))
        return meta


class MemorySegment:
    """A built segment searched in place (the in-memory Retriever API)."""

    def __init__(self, builder: SegmentBuilder):
        self.files = builder.files
        self.generated = frozenset(builder.generated)
        self.doc_file = builder.doc_file
        self.starts = builder.starts
        self.ends = builder.ends
        self.lens = builder.lens
        self.docids = builder.docids
        self._postings = builder.postings
        self.n_docs = builder.n_docs
        self._meta = builder.meta

    def meta(self, d: int) -> tuple | None:
        return self._meta[d]

    def meta_rows(self) -> list:
        return list(self._meta)

    def postings(self, term: str):
        return self._postings.get(term)

    def terms(self):
        return iter(sorted(self._postings))

    def terms_unordered(self):
        return iter(self._postings)


class _FileRows:
    """files[i] -> (path, language, kind), read from the columns as asked: a query looks up a few
    hundred files, so building a tuple for each of tens of thousands would be wasted."""

    def __init__(self, columns: dict):
        self._path, self._language, self._kind = columns["path"], columns["language"], columns["kind"]

    def __len__(self) -> int:
        return len(self._path)

    def __getitem__(self, i: int) -> tuple[str, str, str]:
        return self._path[i], self._language[i], self._kind[i]


class DiskSegment:
    """A written segment, opened lazily: only what a query touches is read."""

    def __init__(self, directory: str):
        self.directory = directory
        try:
            with open(os.path.join(directory, "seg.json"), encoding="utf-8") as fh:
                meta = json.load(fh)
        except (OSError, ValueError) as exc:
            raise CorruptSegment(f"unreadable segment {os.path.basename(directory)}: {exc}") from exc
        if not isinstance(meta, dict) or meta.get("format") != SEGMENT_FORMAT:
            written = meta.get("format") if isinstance(meta, dict) else None
            known = f" ({written}; this version reads {SEGMENT_FORMAT})" if type(written) is int else ""
            raise CorruptSegment(f"segment {os.path.basename(directory)} has an unknown format{known}")
        for name, size in meta["sizes"].items():
            try:
                actual = os.path.getsize(os.path.join(directory, name))
            except OSError:
                actual = -1
            if actual != size:
                raise CorruptSegment(f"segment {os.path.basename(directory)}: {name} is damaged")
        # Absent in segments written before checksums: those are read unchecked, as they were.
        self._crcs: dict = meta.get("crc32") or {}
        named = set(meta["sizes"])
        if self._crcs and not named - {"post.bin", "meta.bin"} <= set(self._crcs) <= named:
            # A changed byte in a name of the table would leave that file unchecked. (post.bin's
            # terms carry their own; meta.bin's rows did before the file had one.)
            raise CorruptSegment(f"segment {os.path.basename(directory)}: seg.json is damaged")
        self.n_docs = meta["n_docs"]
        self.n_shards = meta["n_shards"]
        if type(self.n_shards) is not int or self.n_shards < 1:  # a term's shard is its hash modulo this
            raise CorruptSegment(f"segment {os.path.basename(directory)}: seg.json is damaged")
        self._post_bytes = meta["sizes"].get("post.bin", 0)  # as checked above
        self.total_len = meta["total_len"]
        self._shards: dict[int, dict] = {}
        self._docs: tuple[array, array, array, array] | None = None
        self._files: list | None = None
        self._columns: dict | None = None
        self._generated: frozenset[int] | None = None
        self.docids = None
        self._has_meta = "meta.bin" in meta["sizes"]
        self._meta_row_crcs = bool(meta.get("meta_row_crcs"))  # absent before checksums: unchecked
        self._meta_offsets: array | None = None
        self._meta_crcs: array | None = None

    def meta(self, d: int) -> tuple | None:
        """(context, kind, symbol, scope start, scope end, members) of doc d; None when it has none. Reads
        only the offsets and that document's row: a query looks at a handful of hits."""
        if not self._has_meta:
            return None
        path = os.path.join(self.directory, "meta.bin")
        header = 4 * (self.n_docs + 1)
        try:
            with open(path, "rb") as fh:
                if self._meta_offsets is None:
                    offsets = _from_bytes(fh.read(header))
                    if len(offsets) != self.n_docs + 1:
                        raise ValueError("short offsets")
                    if self._meta_row_crcs:
                        fh.seek(header + offsets[-1])
                        crcs = _from_bytes(fh.read(4 * self.n_docs))
                        if len(crcs) != self.n_docs:
                            raise ValueError("short checksums")
                        self._meta_crcs = crcs
                    self._meta_offsets = offsets
                start, end = self._meta_offsets[d], self._meta_offsets[d + 1]
                if start == end:
                    return None
                fh.seek(header + start)
                blob = fh.read(end - start)
                if self._meta_crcs is not None and zlib.crc32(blob) != self._meta_crcs[d]:
                    raise ValueError("a row fails its checksum")
                row = _meta_row(json.loads(blob))
        except ValueError as exc:
            raise CorruptSegment(f"segment {os.path.basename(self.directory)}: meta.bin is damaged") from exc
        return row

    def _read(self, name: str) -> bytes:
        """A file of the segment, whole, checked against its recorded CRC-32."""
        with open(os.path.join(self.directory, name), "rb") as fh:
            data = fh.read()
        expected = self._crcs.get(name)
        if expected is not None and zlib.crc32(data) != expected:
            raise CorruptSegment(f"segment {os.path.basename(self.directory)}: {name} is damaged")
        return data

    def meta_rows(self) -> list:
        """Every document's metadata (None where there is none), read at once: for merging."""
        if not self._has_meta:
            return [None] * self.n_docs
        data = self._read("meta.bin")
        header = 4 * (self.n_docs + 1)
        offsets = _from_bytes(data[:header])
        trailer = 4 * self.n_docs if self._meta_row_crcs else 0
        if len(offsets) != self.n_docs + 1 or header + offsets[-1] + trailer != len(data):
            raise CorruptSegment(f"segment {os.path.basename(self.directory)}: meta.bin is damaged")
        try:
            return [_meta_row(json.loads(data[header + a : header + b])) if b > a else None
                    for a, b in zip(offsets, offsets[1:])]
        except ValueError as exc:
            raise CorruptSegment(f"segment {os.path.basename(self.directory)}: meta.bin is damaged") from exc

    def _doc_arrays(self):
        if self._docs is None:
            all_values = _from_bytes(self._read("docs.bin"))
            n = self.n_docs
            if len(all_values) != 4 * n:
                raise CorruptSegment(f"segment {os.path.basename(self.directory)}: docs.bin is damaged")
            self._docs = (all_values[:n], all_values[n : 2 * n], all_values[2 * n : 3 * n], all_values[3 * n :])
        return self._docs

    @property
    def doc_file(self):
        return self._doc_arrays()[0]

    @property
    def starts(self):
        return self._doc_arrays()[1]

    @property
    def ends(self):
        return self._doc_arrays()[2]

    @property
    def lens(self):
        return self._doc_arrays()[3]

    def _file_columns(self) -> dict:
        if self._columns is None:
            columns = self._json("files.json")
            try:
                n = len(columns["path"])
                if any(len(columns[c]) != n for c in ("language", "kind", "first")):
                    raise ValueError("columns of different lengths")
            except (KeyError, TypeError, ValueError) as exc:
                raise CorruptSegment(f"segment {os.path.basename(self.directory)}: files.json is damaged") from exc
            self._columns = columns
        return self._columns

    @property
    def files(self):
        """Per file index: (path, language, kind)."""
        if self._files is None:
            self._files = _FileRows(self._file_columns())
        return self._files

    @property
    def generated(self) -> frozenset[int]:
        """The indexes of the files a header marks as a tool's output."""
        if self._generated is None:
            listed = self._file_columns().get("generated", [])  # none before headers were read
            if not isinstance(listed, list) or not all(type(i) is int and 0 <= i < len(self.files) for i in listed):
                raise CorruptSegment(f"segment {os.path.basename(self.directory)}: files.json is damaged")
            self._generated = frozenset(listed)
        return self._generated

    def file_spans(self):
        """(path, first doc, doc count) for every file of the segment."""
        c = self._file_columns()
        firsts = c["first"]
        ends = firsts[1:] + [self.n_docs]
        return zip(c["path"], firsts, map(int.__sub__, ends, firsts))

    def _json(self, name: str):
        try:
            return json.loads(self._read(name))
        except ValueError as exc:
            raise CorruptSegment(f"segment {os.path.basename(self.directory)}: {name} is damaged") from exc

    def _shard(self, index: int) -> dict:
        shard = self._shards.get(index)
        if shard is None:
            shard = self._shards[index] = self._json(f"lex-{index:04d}.json")
        return shard

    def open_postings(self):
        """post.bin, opened for a caller reading many terms' postings (`postings(term, fh)`): a merge
        reads every term, and opening the file for each was most of its time."""
        return open(os.path.join(self.directory, "post.bin"), "rb")

    def postings(self, term: str, fh=None):
        entry = self._shard(shard_of(term, self.n_shards)).get(term)
        if entry is None:
            return None
        offset, df, *crc = entry
        if type(df) is not int or not 0 <= 8 * df <= self._post_bytes:
            # A tampered lexicon's count, read as given, asked for gigabytes (out of memory on
            # every query) or for more than an int holds.
            raise CorruptSegment(f"segment {os.path.basename(self.directory)}: a lexicon shard is damaged")
        with self.open_postings() if fh is None else nullcontext(fh) as source:
            source.seek(offset)
            data = source.read(8 * df)
        if len(data) != 8 * df or (crc and zlib.crc32(data) != crc[0]):
            raise CorruptSegment(f"segment {os.path.basename(self.directory)}: post.bin is damaged")
        values = _from_bytes(data)
        return values[:df], values[df:]

    def terms(self):
        """Every term, sorted (for merging)."""
        return iter(sorted(set(self.terms_unordered())))

    def terms_unordered(self):
        """Every term, shard by shard (a scan needing no order: sorting a large lexicon is most of it)."""
        for i in range(self.n_shards):
            yield from self._shard(i)
