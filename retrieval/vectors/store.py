"""On-disk vectors: one immutable generation per refresh, plus embedding checkpoints.

A generation `vec-NNNNNN` is three files, all written through store/atomic.py before the manifest
names them (so a reader sees the old generation or the new one, never a torn one):

  .f32   the float32 vectors, row-major, n x dim, no header (memory-mapped for exact re-scoring)
  .rows  what each row is: a small JSON header (dim, model, files, the CRC-32 of what follows it)
         then, per row, file number, start line, end line, the CRC-32 of its float32 vector
         (uint32 each) and the 16-byte key of the text that was embedded. A row's vector is checked
         whenever it is read (a query re-scores ~100, a refresh carries the others forward), so
         bytes changed where the file's size does not show are found, not copied on.
  .tv    the turbovec TurboQuantIndex of the same rows, in turbovec's own format (its CRC-32 is
         in the .rows header, checked when a query opens the generation)

`ckpt-*.emb` files hold vectors embedded by a refresh that has not committed yet (keys, vectors,
then each vector's CRC-32): a refresh killed after ten minutes of embedding resumes from them; a
vector that fails its check is embedded again, never copied on.
"""
from __future__ import annotations

import itertools
import json
import os
import struct
import zlib
from array import array

from ..store.atomic import write_bytes, write_chunks

ROWS_MAGIC = b"RVROWS1\n"
CKPT_MAGIC = b"RVCKPT1\n"
KEY_BYTES = 16
GEN_PREFIX = "vec-"
CKPT_PREFIX = "ckpt-"


class VectorStoreError(RuntimeError):
    """A generation or checkpoint that is missing, torn or of another model."""


def generation_name(number: int) -> str:
    return f"{GEN_PREFIX}{number:06d}"


def next_generation(directory: str, state: dict | None) -> int:
    """The committed state's next number: a generation that a killed writer left under it is
    replaced (nothing names it; taking a number past it, each build killed in turn left one more).
    Without a state (a rebuild), a number no file in the directory uses yet: the committed
    generation may be any of them."""
    if state and state.get("next"):
        return int(state["next"])
    used = 0
    try:
        names = os.listdir(directory)
    except OSError:
        names = []
    for name in names:
        digits = name[len(GEN_PREFIX):len(GEN_PREFIX) + 6]
        if name.startswith(GEN_PREFIX) and digits.isdigit():
            used = max(used, int(digits))
    return used + 1


def _pack(magic: bytes, header: dict, *sections: bytes) -> bytes:
    head = json.dumps(header, separators=(",", ":"), ensure_ascii=False, sort_keys=True).encode("utf-8", "surrogateescape")
    return b"".join((magic, struct.pack("<I", len(head)), head, *sections))


def unpack_header(data, magic: bytes, what: str) -> tuple[dict, int]:
    """(header, offset of the first section) of a vector file's bytes (or a map of them)."""
    if data[:len(magic)] != magic or len(data) < len(magic) + 4:
        raise VectorStoreError(f"{what} is not a vector file")
    (n,) = struct.unpack_from("<I", data, len(magic))
    start = len(magic) + 4
    try:
        header = json.loads(data[start:start + n].decode("utf-8", "surrogateescape"))
    except ValueError:
        raise VectorStoreError(f"{what} has a damaged header") from None
    return header, start + n


def write_generation(directory: str, name: str, *, model: str, dim: int, files: list, file_ids, starts, ends,
                     keys: bytes, vector_blocks, build_index) -> dict:
    """Write a generation's three files durably; returns its state entry. `vector_blocks` yields the
    float32 rows in order, a block at a time (they are streamed to disk, never held all at once);
    `build_index(vectors)` makes the turbovec bytes from the written rows, memory-mapped."""
    import numpy as np

    n = len(file_ids)
    if len(keys) != n * KEY_BYTES:
        raise ValueError("rows and keys disagree")
    f32 = os.path.join(directory, name + ".f32")
    crcs = array("I")
    write_chunks(f32, _row_bytes(vector_blocks, dim, n, crcs), durable=True)
    vectors = np.memmap(f32, dtype="<f4", mode="r", shape=(n, dim)) if n else np.zeros((0, dim), dtype="<f4")
    tv_bytes = build_index(vectors)
    del vectors
    sections = b"".join([np.asarray(c, dtype="<u4").tobytes() for c in (file_ids, starts, ends, crcs)] + [keys])
    header = {"n": n, "dim": dim, "model": model, "files": files, "row_crcs": True, "crc32": zlib.crc32(sections),
              "tv_crc32": zlib.crc32(tv_bytes), "files_crc32": _files_crc(files)}
    write_bytes(os.path.join(directory, name + ".rows"), _pack(ROWS_MAGIC, header, sections), durable=True)
    write_bytes(os.path.join(directory, name + ".tv"), tv_bytes, durable=True)
    return {"name": name, "n": n, "dim": dim, "model": model}


# The keys a .rows header may have (written by this version or an earlier one): another is a
# changed byte in a name (a checksum's key renamed leaves what it covers unchecked), or a newer format.
ROWS_HEADER_KEYS = {"n", "dim", "model", "files", "row_crcs", "crc32", "tv_crc32", "files_crc32"}


def _files_crc(files) -> int:
    """The CRC-32 of the rows' file table (paths, languages, kinds), which the sections' does not cover."""
    return zlib.crc32(json.dumps(files, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogateescape"))


class Generation:
    """A committed generation, opened read-only: rows in memory, vectors memory-mapped."""

    def __init__(self, directory: str, entry: dict, *, load_index: bool = True):
        import numpy as np

        self.name = entry["name"]
        base = os.path.join(directory, self.name)
        try:
            with open(base + ".rows", "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            raise VectorStoreError(f"vector rows {self.name} are missing") from None
        header, at = unpack_header(data, ROWS_MAGIC, self.name)
        n, dim = header["n"], header["dim"]
        if n != entry["n"] or dim != entry["dim"] or header["model"] != entry["model"]:
            raise VectorStoreError(f"vector rows {self.name} do not match the manifest")
        # Generations written before checksums have neither: read unchecked, as they were.
        columns = 4 if header.get("row_crcs") else 3
        if len(data) != at + n * (4 * columns + KEY_BYTES):
            raise VectorStoreError(f"vector rows {self.name} are torn")
        # Rows with checksums came with the file's own: without it, a changed byte in its name.
        if ("crc32" in header or columns == 4) and zlib.crc32(memoryview(data)[at:]) != header.get("crc32"):
            raise VectorStoreError(f"vector rows {self.name} are damaged")
        # The file table names each hit's path and kind: edited, hits went to other files, or to none.
        if not set(header) <= ROWS_HEADER_KEYS or (
                "files_crc32" in header and _files_crc(header["files"]) != header["files_crc32"]):
            raise VectorStoreError(f"vector rows {self.name} are damaged (their file table)")
        self.n, self.dim, self.model = n, dim, header["model"]
        self.files: list[list[str]] = header["files"]  # [path, language, kind]
        self.file_ids = np.frombuffer(data, "<u4", n, at)
        self.starts = np.frombuffer(data, "<u4", n, at + 4 * n)
        self.ends = np.frombuffer(data, "<u4", n, at + 8 * n)
        self.crcs = np.frombuffer(data, "<u4", n, at + 12 * n) if columns == 4 else None
        self.keys = data[at + 4 * columns * n:]
        expected = n * dim * 4
        if os.path.getsize(base + ".f32") != expected:
            raise VectorStoreError(f"vectors {self.name} are torn")
        self.vectors = (np.memmap(base + ".f32", dtype="<f4", mode="r", shape=(n, dim))
                        if n else np.zeros((0, dim), dtype=np.float32))
        self.index = None
        if load_index:
            import turbovec

            try:
                with open(base + ".tv", "rb") as fh:
                    tv_bytes = fh.read()  # read once: checked, then parsed from memory
                if "tv_crc32" in header and zlib.crc32(tv_bytes) != header["tv_crc32"]:
                    # A damaged index loads and answers: it would lose candidates in silence.
                    raise VectorStoreError(f"turbovec index {self.name} is damaged")
                self.index = turbovec.TurboQuantIndex.from_bytes(tv_bytes)
            except (ValueError, OSError) as exc:
                raise VectorStoreError(f"turbovec index {self.name} is unreadable: {exc}") from None
            if len(self.index) != n:
                raise VectorStoreError(f"turbovec index {self.name} does not match its rows")

    def rows(self, rows):
        """The float32 vectors of `rows` (row numbers, in the order wanted), each checked against
        its CRC-32."""
        import numpy as np

        block = np.ascontiguousarray(self.vectors[rows], dtype="<f4")
        if self.crcs is not None:
            for row, crc in zip(rows, _row_crcs(block)):
                if crc != self.crcs[row]:
                    raise VectorStoreError(f"vectors {self.name} are damaged (row {int(row)})")
        return block

    def row(self, row: int):
        return self.rows([row])[0]

    def key(self, row: int) -> bytes:
        return self.keys[row * KEY_BYTES:(row + 1) * KEY_BYTES]

    def path(self, row: int) -> str:
        return self.files[int(self.file_ids[row])][0]


def _row_crcs(block):
    """The CRC-32 of each float32 row of a C-contiguous (n, dim) block, as written to disk."""
    data = memoryview(block).cast("B")
    width = block.shape[-1] * 4 if block.size else 1
    return (zlib.crc32(data[i:i + width]) for i in range(0, len(data), width))


def _row_bytes(blocks, dim: int, n: int, crcs: array | None = None):
    """float32 rows as bytes, a block at a time (each row's CRC-32 appended to `crcs`). Raises
    ValueError, before the writer publishes anything, when a block is of another width or the
    blocks do not hold exactly n rows."""
    import numpy as np

    rows = 0
    for block in blocks:
        block = np.ascontiguousarray(block, dtype="<f4")
        if block.shape[-1:] != (dim,):
            raise ValueError("vectors of the wrong dimension")
        rows += block.size // dim
        if crcs is not None:
            crcs.extend(_row_crcs(block))
        yield block.tobytes()
    if rows != n:
        raise ValueError("rows and vectors disagree")


def write_checkpoint(directory: str, name: str, model: str, keys: list[bytes], blocks, dim: int) -> None:
    """keys and their vectors, given as row blocks in key order (an array is its rows), then the
    vectors' CRC-32s (known once the rows are written: they end the file)."""
    head = _pack(CKPT_MAGIC, {"n": len(keys), "dim": dim, "model": model, "row_crcs": True}, b"".join(keys))
    crcs = array("I")

    def trailer():
        yield struct.pack(f"<{len(crcs)}I", *crcs)

    write_chunks(os.path.join(directory, name),
                 itertools.chain((head,), _row_bytes(blocks, dim, len(keys), crcs), trailer()), durable=True)


class CheckpointRows:
    """A checkpoint's keys and vectors (memory-mapped when read through map_checkpoint)."""

    def __init__(self, keys, vectors, crcs):
        self.keys, self.vectors, self.crcs = keys, vectors, crcs

    def __len__(self) -> int:
        return len(self.vectors)

    def key(self, i: int) -> bytes:
        return self.keys[i * KEY_BYTES:(i + 1) * KEY_BYTES]

    def vector(self, i: int):
        """Row i's vector, or None when it fails its CRC-32 (checkpoints written before the
        checksums are taken as they are)."""
        row = self.vectors[i]
        if self.crcs is not None and next(_row_crcs(row.reshape(1, -1))) != self.crcs[i]:
            return None
        return row


def checkpoint_sections(data, name: str, model: str, dim: int) -> CheckpointRows | None:
    """The rows of a checkpoint's bytes (or a map of them); None when it is of another model or
    size. Raises VectorStoreError (or KeyError, TypeError) when it is damaged."""
    import numpy as np

    header, at = unpack_header(data, CKPT_MAGIC, name)
    n = header["n"]
    size = at + n * (KEY_BYTES + 4 * dim)
    checked = bool(header.get("row_crcs"))
    if header["model"] != model or header["dim"] != dim or len(data) != size + (4 * n if checked else 0):
        return None
    vectors = np.frombuffer(data, "<f4", n * dim, at + n * KEY_BYTES).reshape(n, dim)
    crcs = np.frombuffer(data, "<u4", n, size) if checked else None
    return CheckpointRows(data[at:at + n * KEY_BYTES], vectors, crcs)


def map_checkpoint(path: str, model: str, dim: int):
    """checkpoint_sections of a file read through mmap: its vectors stay on disk (paged in when
    used), so resuming a build of half a million chunks does not hold them all in memory."""
    import mmap

    with open(path, "rb") as fh:
        data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)  # ValueError when empty
    return checkpoint_sections(data, os.path.basename(path), model, dim)


def read_checkpoints(directory: str, model: str, dim: int) -> dict[bytes, object]:
    """{key: vector} from every readable checkpoint of this model; damaged ones are ignored (a
    checkpoint only saves work, it never decides an answer)."""
    out: dict[bytes, object] = {}
    try:
        names = sorted(n for n in os.listdir(directory) if n.startswith(CKPT_PREFIX))
    except OSError:
        return out
    for name in names:
        try:
            sections = map_checkpoint(os.path.join(directory, name), model, dim)
        except (OSError, VectorStoreError, KeyError, TypeError, ValueError):
            continue
        for i in range(len(sections or ())):
            vector = sections.vector(i)
            if vector is not None:
                out[sections.key(i)] = vector
    return out


def collect_garbage(directory: str, state: dict, *, keep_checkpoints: bool = False) -> None:
    """Remove generations the state does not name and every checkpoint (the state holds their
    vectors now); called after the commit, under the writer lock. Before a rebuild, with
    `keep_checkpoints`: what a killed build embedded is resumed from, not embedded again."""
    live = state.get("generation", {}).get("name") if state else None
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        stem = name.split(".", 1)[0]
        if (name.startswith(GEN_PREFIX) and stem != live) or (name.startswith(CKPT_PREFIX) and not keep_checkpoints):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass
