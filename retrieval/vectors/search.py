"""Searching a generation: turbovec finds candidates, the float vectors re-score them exactly."""
from __future__ import annotations

from dataclasses import dataclass

from .store import Generation, VectorStoreError

# Candidates taken from the quantized index per result wanted (and at least MIN_CANDIDATES):
# recall@10 of 4-bit codes against exact search is about 0.9, so the exact top 10 is almost always
# inside the quantized top 100.
OVERSAMPLE = 4
MIN_CANDIDATES = 100


def row_cosines(vectors, query):
    """Each row's dot product with the query, the same bits whatever rows share the call: a BLAS
    matrix-vector product rounds a row by where it sits among them (its position, their count),
    so a refreshed index, whose rows lie in another order, scored 1e-7 off a clean build."""
    import numpy as np

    return np.einsum("ij,j->i", vectors, query, dtype=np.float32)


@dataclass(frozen=True)
class DenseCandidate:
    score: float  # exact cosine
    row: int
    path: str
    language: str
    kind: str
    start_line: int
    end_line: int


class MemoryIndex:
    """The in-memory API's vectors (`DenseRetriever.index`): exact cosines over every row, no
    quantized index (a corpus held in memory is small enough to scan)."""

    def __init__(self, vectors, rows: list[tuple[str, str, str, int, int]]):
        self.vectors = vectors  # unit rows, float32
        self.rows = rows  # (path, language, kind, start line, end line) per vector

    def __len__(self) -> int:
        return len(self.rows)

    def candidates(self, query_vector, depth: int, allow=None) -> list[DenseCandidate]:
        import numpy as np

        if not self.rows or depth <= 0:
            return []
        scores = row_cosines(self.vectors, np.asarray(query_vector, dtype=np.float32).reshape(-1))
        if allow is not None:
            verdicts: dict[tuple, bool] = {}
            keep = np.array([verdicts.setdefault(r[:3], bool(allow(*r[:3]))) for r in self.rows], dtype=bool)
            scores = np.where(keep, scores, -np.inf)
        order = np.argsort(-scores, kind="stable")[:depth]
        return [DenseCandidate(float(scores[i]), int(i), *self.rows[i]) for i in order if np.isfinite(scores[i])]


class DenseIndex:
    def __init__(self, directory: str, state: dict):
        self.generation = Generation(directory, state["generation"])
        if self.generation.n:
            self.generation.index.prepare()

    def __len__(self) -> int:
        return self.generation.n

    def _mask(self, allow):
        """Rows whose file the filter admits (one verdict per file)."""
        import numpy as np

        gen = self.generation
        verdicts = np.array([bool(allow(p, lang, kind)) for p, lang, kind in gen.files], dtype=bool)
        return verdicts[gen.file_ids] if gen.n else np.zeros(0, dtype=bool)

    def candidates(self, query_vector, depth: int, allow=None) -> list[DenseCandidate]:
        """The `depth` rows nearest the (unit) query vector, by exact cosine, best first."""
        import numpy as np

        gen = self.generation
        if not gen.n or depth <= 0:
            return []
        mask = self._mask(allow) if allow is not None else None
        if mask is not None and not mask.any():
            return []
        wanted = min(gen.n, max(MIN_CANDIDATES, OVERSAMPLE * depth))
        q = np.ascontiguousarray(query_vector, dtype=np.float32).reshape(1, -1)
        if mask is None:
            _approx, ids = gen.index.search(q, wanted)
        else:
            _approx, ids = gen.index.search(q, wanted, mask=mask)
        ids = np.asarray(ids[0], dtype=np.int64)
        ids = ids[ids >= 0]
        rows = np.sort(ids)
        exact = row_cosines(gen.rows(rows), q[0])  # checked rows
        if not np.all(np.abs(exact) <= 1.001):  # NaN fails too
            # Unit vectors cannot give that: the float file's bytes changed where its size does not
            # show (the service rebuilds); for generations older than the rows' checksums.
            raise VectorStoreError(f"vectors {gen.name} are damaged (a cosine of {float(np.max(np.abs(exact))):g})")
        order = np.argsort(-exact, kind="stable")[:depth]
        out = []
        for i in order:
            row = int(rows[i])
            path, language, kind = gen.files[int(gen.file_ids[row])]
            start, end = int(gen.starts[row]), int(gen.ends[row])
            if not 1 <= start <= end:
                raise VectorStoreError(f"vector rows {gen.name} hold a span {start}-{end}")
            out.append(DenseCandidate(float(exact[i]), row, path, language, kind, start, end))
        return out
