"""Every row's binary code held in memory: the Hamming shortlist in one numpy pass.

The `vec0` table stays the stored form (and `Index.verify` checks it against the float vectors),
but asking it costs one scan per shard through SQLite's blob reads: ~40 ms at 100k cards on
2 cores. The same 48 bytes a card, XORed and bit-counted in numpy, take ~1 ms at 100k and ~10 ms
at 1M, for 4.8 MB and 48 MB of memory. A long-lived reader (the recall service) loads them once
and again after each commit (`PRAGMA data_version`): in the request for a one-shot reader, in the
background for a long-lived one (`CodeCache`), whose old codes answer for the second that takes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from memoir.index.apsw_errors import apsw
from memoir.index.held import HeldCopy


DENSE_ROWIDS = 4  # a rowid table is kept while max rowid <= 4 x rows: deletions leave gaps, rebuilds close them


def quantize(vector: np.ndarray) -> np.ndarray:
    """sqlite-vec's `vec_quantize_binary`: bit i set when component i > 0, least significant bit first."""
    return np.packbits(np.asarray(vector) > 0, bitorder="little")


class Codes:
    """The rowids and binary codes of one index file, as read at one `data_version`."""

    def __init__(self, rowids: np.ndarray, codes: np.ndarray, version: tuple):
        self.rowids = rowids  # int64 [n]
        words = codes.view(np.uint64) if codes.shape[1] % 8 == 0 else codes
        # One contiguous array per word, not per row: summing six counts along a row is numpy's
        # slowest reduction, adding six whole columns its fastest (~0.6 ms at 100k instead of ~3.5).
        self.columns = np.ascontiguousarray(words.T)  # [dim/64, n]
        self.version = version
        self._order: tuple[np.ndarray, np.ndarray] | None = None  # argsort of `rowids` and them sorted
        self._order_lock = threading.Lock()

    @classmethod
    def read(cls, conn, dim: int, version: tuple) -> Codes:
        """Read every code: from vec0's chunk tables in one pass (~30 ms at 100k), or through the
        virtual table row by row (~1 s at 100k) when those tables are not laid out as expected."""
        width = dim // 8
        try:
            rowids, codes = _read_chunks(conn, width)
        except (ValueError, apsw.Error):
            rowids, codes = None, None
        total = conn.execute("SELECT count(*) FROM vec_cards_rowids").fetchall()[0][0] if rowids is not None else -1
        if rowids is None or len(rowids) != total:
            rows = conn.execute("SELECT rowid, embedding_bq FROM vec_cards").fetchall()
            rowids = np.fromiter((r for r, _ in rows), dtype=np.int64, count=len(rows))
            codes = np.frombuffer(b"".join(b for _, b in rows), dtype=np.uint8).reshape(len(rows), width) if rows \
                else np.zeros((0, width), dtype=np.uint8)
        return cls(rowids, np.ascontiguousarray(codes), version)

    def __len__(self) -> int:
        return len(self.rowids)

    def nearest(self, vector: np.ndarray, n: int) -> list[int]:
        """The rowids of the `n` codes nearest `vector` in Hamming distance, nearest first (ties by rowid)."""
        return self.nearest_rowids(vector, n).tolist()

    def nearest_rowids(self, vector: np.ndarray, n: int, within: np.ndarray | None = None) -> np.ndarray:
        """`nearest` as an int64 array; with `within` (sorted rowids), among those rows alone."""
        columns, rowids = self.columns, self.rowids
        if within is not None:  # a workspace's rows (index/places.py): only their codes are scanned
            at = self.positions(within)
            columns, rowids = columns[:, at], rowids[at]
        if n <= 0 or not len(rowids):
            return np.zeros(0, dtype=np.int64)
        q = quantize(vector)
        q = q.view(np.uint64) if columns.dtype == np.uint64 else q
        size = len(rowids)
        distance = np.zeros(size, dtype=np.uint16)
        xored = np.empty(size, dtype=columns.dtype)
        bits = np.empty(size, dtype=np.uint8)
        for column, word in zip(columns, q):  # in place: no array allocated per word
            np.bitwise_xor(column, word, out=xored)
            np.bitwise_count(xored, out=bits)
            np.add(distance, bits, out=distance)
        if n < len(distance):
            # Exactly n: every code nearer than the n-th distance, then those at it by rowid, so
            # the choice never depends on the order rows were read in. The n-th distance from a
            # count of each distance (at most 8 x the code's bytes), not a partition of all of them.
            cut = int(np.searchsorted(np.cumsum(np.bincount(distance)), n))
            at = np.flatnonzero(distance == cut)
            at = at[np.argsort(rowids[at], kind="stable")]
            picked = np.concatenate((np.flatnonzero(distance < cut), at))[:n]
        else:
            picked = np.arange(len(distance))
        order = np.lexsort((rowids[picked], distance[picked]))
        return rowids[picked[order]]

    def sorted_rowids(self) -> tuple[np.ndarray, np.ndarray]:
        """The argsort of `rowids` and the rowids in that order: sorted once per read (~0.1 s at 1M)."""
        with self._order_lock:
            if self._order is None:
                order = np.argsort(self.rowids, kind="stable")
                self._order = (order, self.rowids[order])
            return self._order

    def positions(self, within: np.ndarray) -> np.ndarray:
        """Where each of `within` (rowids) sits in the codes; a rowid without a code is left out."""
        order, ascending = self.sorted_rowids()  # then a binary search per rowid
        if not len(order):
            return np.zeros(0, dtype=np.intp)
        found = np.minimum(np.searchsorted(ascending, within), len(order) - 1)
        return order[found[ascending[found] == within]]


def rescore(found: list[tuple[str, bytes]], vector: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The `k` best of `found` (card id, float32 blob as stored) by exact cosine with `vector`, ties by
    id. A blob of another length is skipped (`memoir index check` finds it), never a crash."""
    found = [(i, b) for i, b in found if len(b) == 4 * len(vector)]
    if not found:
        return []
    ids = [i for i, _ in found]
    scores = np.frombuffer(b"".join(b for _, b in found), dtype=np.float32).reshape(len(found), -1) @ vector
    order = sorted(range(len(ids)), key=lambda j: (-scores[j], ids[j]))[:k]
    return [(ids[j], float(scores[j])) for j in order]


def best_first(scores: np.ndarray, n: int) -> np.ndarray:
    """`np.argsort(-scores, kind="stable")[:n]`: the n highest, ties in input order, without sorting
    all of them (4096 shortlisted scores for 32: ~0.03 ms instead of ~0.24)."""
    negated = -scores
    if n <= 0:
        return np.zeros(0, dtype=np.intp)
    if n >= len(negated):
        return np.argsort(negated, kind="stable")
    cut = np.partition(negated, n - 1)[n - 1]
    # Every score at or above the n-th, in input order: a stable sort of them breaks ties as the full one would.
    held = np.flatnonzero(negated <= cut)
    return held[np.argsort(negated[held], kind="stable")][:n]


class Scaled:
    """Every row's float vector as int8 with one scale per row (384 B a card: 38 MB at 100k), read at
    one `data_version`: it re-scores a Hamming shortlist eight times longer than SQLite could fetch
    in the time (~1 ms for 2048 rows instead of ~12), so the few rows re-scored exactly from the
    file are the true nearest ones: recall@10 .904 -> >= .99 at 100k (bench.index prints it)."""

    def __init__(self, rowids: np.ndarray, values: np.ndarray, scales: np.ndarray, version: tuple):
        self.rowids = rowids  # int64 [n], ascending
        self.values = values  # int8 [n, dim]
        self.scales = scales  # float32 [n]
        self.version = version
        # rowid -> row, one gather instead of a binary search per shortlisted rowid (~0.4 ms of
        # ~1.4 at 100k: 4096 searches that each miss the cache). Only where rowids are dense enough
        # for a table of 4 bytes a slot to stay within twice the int8 copy's row count.
        top = int(rowids[-1]) + 1 if len(rowids) else 0
        self._row_of = None
        if len(rowids) and rowids[0] >= 0 and top <= DENSE_ROWIDS * len(rowids) + 1024:
            self._row_of = np.full(top, -1, dtype=np.int32)
            self._row_of[rowids] = np.arange(len(rowids), dtype=np.int32)

    @classmethod
    def read(cls, conn, dim: int, version: tuple) -> Scaled:
        """Read and quantize every stored vector (~0.5 s of CPU at 100k cards); a row whose blob has
        another length is left out (recall then never shortlists it; `memoir index check` finds it)."""
        rowids, blobs = [], []
        for n, blob in conn.execute("SELECT n, embedding FROM cards ORDER BY n"):
            if len(blob) == 4 * dim:
                rowids.append(n)
                blobs.append(blob)
        if not blobs:
            return cls(np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.int8), np.zeros(0, np.float32), version)
        values = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), dim)
        scales = np.maximum(np.abs(values).max(axis=1), 1e-12) / 127.0
        quantized = np.rint(values / scales[:, None]).astype(np.int8)
        return cls(np.asarray(rowids, dtype=np.int64), quantized, scales.astype(np.float32), version)

    def scores(self, rowids: np.ndarray, vector: np.ndarray) -> np.ndarray:
        """Approximate cosine of each of `rowids` with `vector` (-inf for a rowid not held)."""
        if not len(self.rowids):
            return np.full(len(rowids), -np.inf, dtype=np.float32)
        if self._row_of is not None:
            inside = (rowids >= 0) & (rowids < len(self._row_of))
            at = self._row_of[np.where(inside, rowids, 0)]
            held = inside & (at >= 0)
            at = np.where(held, at, 0)
        else:
            at = np.minimum(np.searchsorted(self.rowids, rowids), len(self.rowids) - 1)
            held = self.rowids[at] == rowids
        # einsum, not `@`: BLAS would hand 4096 rows to its threads, which then spin on the cores
        # the other requests and the model need (CPU twice the wall time on 2 cores).
        out = np.einsum("ij,j->i", self.values[at].astype(np.float32), vector) * self.scales[at]
        return np.where(held, out, -np.inf)


def _read_chunks(conn, width: int) -> tuple[np.ndarray, np.ndarray]:
    """sqlite-vec 0.1's storage: each chunk row holds `size` slots, a validity bitmap and the slots'
    rowids (int64); the vector chunk of the same id holds their codes. Empty slots are skipped."""
    ids, codes = [], []
    for size, validity, rowids, vectors in conn.execute(
            "SELECT c.size, c.validity, c.rowids, v.vectors FROM vec_cards_chunks AS c "
            "JOIN vec_cards_vector_chunks00 AS v ON v.rowid = c.chunk_id ORDER BY c.chunk_id"):
        if len(rowids) != 8 * size or len(vectors) != width * size or 8 * len(validity) < size:
            raise ValueError("unexpected vec0 chunk layout")
        valid = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")[:size].astype(bool)
        ids.append(np.frombuffer(rowids, dtype=np.int64)[valid])
        codes.append(np.frombuffer(vectors, dtype=np.uint8).reshape(size, width)[valid])
    if not ids:
        return np.zeros(0, dtype=np.int64), np.zeros((0, width), dtype=np.uint8)
    return np.concatenate(ids), np.concatenate(codes)


class ScaledCopy(HeldCopy):
    """The int8 copy a long-lived reader keeps (`Index.warm`): read at warm-up, then again in the
    background after each commit, on a connection of its own (`connect()` opens one), so the
    requests' connection stays free and no request waits the ~0.5 s the read takes at 100k cards."""

    thread_name = "memoir-index-vectors"

    def __init__(self, connect, dim: int):
        super().__init__(connect)
        self._dim = dim

    def load(self, conn, version: tuple, held: bool) -> Scaled:
        return Scaled.read(conn, self._dim, version)

    def at(self, version: tuple) -> Scaled | None:
        """The copy read at `version`, or None: not kept, or stale and being read again (KNN then
        re-scores from the file: slower, never stale)."""
        if not self.keep:
            return None
        with self._lock:
            if (fresh := self._fresh(version)) is not None:
                return fresh
            if self.loading != version:
                self.current = None  # never two copies at once
                self._refresh_aside(version)
            return None


class CodeCache(HeldCopy):
    """The `Codes` a reader holds. A one-shot reader (`memoir recall`, `memoir search`) reads them in
    its first KNN, and again in the first after any commit, on the request's connection. A long-lived
    reader (`Index.warm`, `keep`) reads them at warm-up and, after a commit, again in the background
    on a connection of its own, as `ScaledCopy` does the int8 copy: 147-247 ms at 1M rows, half a
    prompt's 300 ms deadline, no longer in the request.

    Until the new codes are held the old ones answer, with the int8 copy of their own version
    (`ScaledCopy.at(codes.version)`): a card committed since is in no shortlist for the second the
    read takes. The rowids kept for the exact re-score are read from the file (`Index.knn`): one
    whose card was removed finds no row and is skipped, and one SQLite reused for a new card gives
    that card, scored by its own vector and judged by the recall gates on its own fields, never the
    removed card's. Old and new are held together for that second (48 MB each at 1M). A failed
    background read drops the old codes: the next request reads in the request and its own failure
    says why."""

    thread_name = "memoir-index-codes"
    retry_after_failure = True

    def __init__(self, connect: Callable, dim: int):
        super().__init__(connect)
        self._dim = dim

    def load(self, conn, version: tuple, held: bool) -> Codes:
        codes = Codes.read(conn, self._dim, version)
        return _held(codes) if held else codes

    def load_aside(self, conn, version: tuple) -> Codes:
        with conn:  # one read transaction: the chunk scan and its row count see one snapshot
            return self.load(conn, version, held=True)

    def get(self, conn, version: tuple) -> Codes:
        """The codes at `version`, or a long-lived reader's last ones while those are read; raises apsw.Error."""
        with self._lock:
            if (fresh := self._fresh(version)) is not None:
                return fresh
            if self.keep and self.current is not None:
                self._refresh_aside(version)
                return self.current
            # A one-shot reader, or a long-lived one holding none yet (reopened after a rebuild's
            # swap, or its background read failed): read in the request, as nothing else can answer.
            return self._read_in_request(conn, version)

    def drop(self) -> None:
        """After a write on the reader's own connection: a one-shot reader lets its codes go now; a
        long-lived one answers from them until the background read holds the new ones."""
        if not self.keep:
            self.current = None


def _held(codes: Codes) -> Codes:
    """Codes a long-lived reader will hold, sorted by rowid now, off the request (a scope's first search)."""
    codes.sorted_rowids()
    return codes
