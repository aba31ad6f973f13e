"""The derived index: one SQLite file (apsw + sqlite-vec) with card rows, vectors and FTS5.

Card files are the source of truth; every row here can be thrown away and rebuilt from them.
Vector search is two-pass: a Hamming-distance shortlist over the binary-quantized vectors the
`vec0` table stores (scanned in memory, index/codes.py), then exact cosine over the shortlist's
float vectors, which is ~100x faster than exact float KNN at 100k cards and loses almost nothing
in recall (`bench/index.py` prints both).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from memoir.cards.values import Card
from memoir.cards.private import private_db_file
from memoir.index.apsw_errors import apsw, translate
from memoir.index.errors import (
    IndexBusy,
    IndexCorrupt,
    IndexUnavailable,
    IndexWriteFailed,
    ModelMismatch,
)
from memoir.index.files import INDEX_FILE
from memoir.index.candidates import fts_search
from memoir.index.card_fields import STAMP_KEY, TABLE_SQL as CARD_FIELDS_SQL, parser_stamp, put_fields
from memoir.index.codes import CodeCache, Codes, ScaledCopy, best_first, rescore
from memoir.index.places import PLACES_SQL, PlaceCache, PlaceTest, drop_place, put_place
from memoir.index.plan import retrieval_text
from memoir.index.rows import COLUMNS, IndexRow, card_values, chunks, row_hash, row_of, schema_sql

SCHEMA_VERSION = "2"  # bump when tables or retrieval_text change: a mismatch forces a rebuild (2: title)
SHARDS = 16  # vec0 partitions; kept in the schema (a change forces a rebuild), unused by `knn` since codes.py
SHORTLIST = 256  # Hamming candidates re-scored exactly from the file when no int8 copy is held
# With the int8 copy (a long-lived reader, `Index.warm`): WIDE_SHORTLIST Hamming candidates
# re-scored in memory, the best EXACT_RESCORE (2 k at least) of them exactly from the file. At 100k
# (bench.recall's vectors) the Hamming shortlist alone holds the true top 10 at .904 (256), .979
# (1024), .991 (2048); 4096 re-scored so gives .9987 (300 queries; 96 rows exact gave the same).
WIDE_SHORTLIST = 4096
EXACT_RESCORE = 32
PAGE_SIZE = 16384
DEFAULT_BUSY_MS = 5000  # a nightly write may wait this long for a reader's lock, then queues

META_KEYS = ("schema_version", "model", "dim", "shards", "card_count", "built_at", "updated_at")
TABLES = ("meta", "cards", "vec_cards", "fts_cards", "fts_vocab")


@dataclass(frozen=True, slots=True)
class ApplyReport:
    """What one `Index.apply` did: ids written anew, rewritten, and skipped by content hash."""

    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    encoded: int = 0  # texts the model embedded (a changed card whose text did not change needs none)

    @property
    def embedded(self) -> int:
        return len(self.added) + len(self.updated)


def now_utc() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def connect(path: Path, *, busy_timeout_ms: int = DEFAULT_BUSY_MS, readonly: bool = False):
    """An apsw connection with sqlite-vec loaded; errors say which piece is missing."""
    if apsw is None:
        raise IndexUnavailable("apsw is not installed; `pip install apsw` (stdlib sqlite3 here "
                               "cannot load extensions)")
    try:
        import sqlite_vec  # deferred: start-up
    except ImportError as exc:
        raise IndexUnavailable(f"sqlite-vec is not installed ({exc}); `pip install sqlite-vec`") from exc
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    try:
        conn = apsw.Connection(str(path), flags=flags)
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
    except apsw.ExtensionLoadingError as exc:
        raise IndexUnavailable(f"sqlite-vec could not be loaded: {exc}; reinstall sqlite-vec") from exc
    except apsw.Error as exc:
        raise translate(exc, path) from exc
    conn.set_busy_timeout(busy_timeout_ms)
    return conn


def tables(conn) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table')")}


def read_meta(conn) -> dict[str, str]:
    return {k: v for k, v in conn.execute("SELECT key, value FROM meta")}


class Index:
    """An open index file. Use `open_index`; methods raise the typed errors of `index.errors`."""

    def __init__(self, conn, path: Path, embedder):
        self.conn = conn
        self.path = path
        self.embedder = embedder
        self.dim = int(embedder.dim)
        self._writes = 0  # commits through this connection (`data_version` counts only the others')

        def aside():  # a connection of their own for the background reads
            return connect(path, busy_timeout_ms=DEFAULT_BUSY_MS, readonly=True)

        self._code_cache = CodeCache(aside, self.dim)
        self._scaled = ScaledCopy(aside, self.dim)
        self._places = PlaceCache(aside)

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _write(self, fn):
        """Run `fn` in one transaction; SQLite failures become typed index errors."""
        try:
            with self.conn:
                return fn()
        except apsw.Error as exc:
            raise translate(exc, self.path) from exc
        finally:
            self._writes += 1
            self._code_cache.drop()

    # -- reads --------------------------------------------------------------------------------

    def meta(self) -> dict[str, str]:
        return read_meta(self.conn)

    def count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM cards").fetchall()[0][0]

    def hashes(self) -> dict[str, str]:
        """Card id -> the file hash its row was built from."""
        return dict(self.conn.execute("SELECT id, file_hash FROM cards"))

    def rows(self) -> list[IndexRow]:
        """Every row, sorted by card id, without vectors."""
        cols = ", ".join(COLUMNS)
        return [row_of(r) for r in self.conn.execute(f"SELECT {cols} FROM cards ORDER BY id")]

    def get(self, ids: Iterable[str]) -> dict[str, IndexRow]:
        cols = ", ".join(COLUMNS)
        out: dict[str, IndexRow] = {}
        for part in chunks(list(ids)):
            sql = f"SELECT {cols} FROM cards WHERE id IN ({','.join('?' * len(part))})"
            out.update((r[0], row_of(r)) for r in self.conn.execute(sql, tuple(part)))
        return out

    def vectors(self, ids: Iterable[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for part in chunks(list(ids)):
            sql = f"SELECT id, embedding FROM cards WHERE id IN ({','.join('?' * len(part))})"
            out.update((i, np.frombuffer(b, dtype=np.float32)) for i, b in self.conn.execute(sql, tuple(part)))
        return out

    def _query_vector(self, vector) -> np.ndarray:
        q = np.ascontiguousarray(np.asarray(vector, dtype=np.float32).reshape(-1))
        if q.shape[0] != self.dim:
            raise ValueError(f"query vector has {q.shape[0]} dimensions, the index {self.dim}")
        return q

    def knn(self, vector, k: int = 10, *, shortlist: int = SHORTLIST, exact: bool = False,
            wide: int = WIDE_SHORTLIST, within: np.ndarray | None = None) -> list[tuple[str, float]]:
        """Nearest cards by cosine similarity (higher is closer), best first, ties by id.

        Args:
            vector: a unit-length query vector from the same embedder.
            k: how many neighbours.
            shortlist: Hamming candidates to re-score exactly; more is slower and closer to exact.
            wide: Hamming candidates to re-score in memory first, when the int8 copy is held.
            exact: skip the quantized pass and scan every float vector (reference for recall).
            within: only these rows (sorted rowids, `scope`): a workspace's question, its rows alone.
        """
        q = self._query_vector(vector)
        if k <= 0:
            return []
        if exact:
            sql = ("SELECT id, 1.0 - vec_distance_cosine(embedding, ?) AS s FROM cards "
                   "ORDER BY s DESC, id LIMIT ?")
            return [(i, float(s)) for i, s in self.conn.execute(sql, (q.tobytes(), k))]
        codes = self._codes()
        scaled = self._scaled.at(codes.version)
        if scaled is not None:
            wide = codes.nearest_rowids(q, max(wide, shortlist, k), within)
            approx = scaled.scores(wide, q)
            best = best_first(approx, max(EXACT_RESCORE, 2 * k))
            rowids = wide[best[np.isfinite(approx[best])]].tolist()
        else:
            rowids = codes.nearest_rowids(q, max(shortlist, k), within).tolist()
        # Codes read before a commit (`CodeCache`) may name a rowid with no row now (not found, so
        # skipped) or one reused for another card (that card, as stored, scored by its own vector).
        found = self.conn.execute(
            "SELECT id, embedding FROM cards WHERE n IN (SELECT value FROM json_each(?))",
            (json.dumps(rowids),)).fetchall() if rowids else []
        return rescore(found, q, k)

    def warm(self) -> None:
        """Read what the first KNN and scope would (codes, int8 copy, place grouping), so a long-lived reader's
        first prompt does not pay; after a commit all three are read again in the background."""
        try:
            codes = self._code_cache.read_now(self.conn, self._version())
            self._scaled.read_now(self.conn, codes.version)
            self._places.read_now(self.conn, codes.version)
        except apsw.Error as exc:
            raise translate(exc, self.path) from exc

    def keep_scaled(self) -> None:
        """Keep the codes, int8 copy and place grouping, read again in the background (a reopened long-lived reader)."""
        self._code_cache.keep = self._scaled.keep = self._places.keep = True

    @property
    def keeps_scaled(self) -> bool:
        return self._scaled.keep

    def _version(self) -> tuple:  # the file's state: commits by other connections and by this one
        return (self.conn.execute("PRAGMA data_version").fetchall()[0][0], self._writes)

    def scope(self, test: PlaceTest) -> np.ndarray | None:
        """The sorted rowids of the rows `test` accepts and of rows of no known place; None: search every row."""
        return self._places.rows(self.conn, self._version(), self.path, test)

    def _codes(self) -> Codes:
        """The binary codes in memory, read again after a commit (here or by another process): in the
        request, or for a long-lived reader in the background while its last ones answer (`CodeCache`)."""
        return self._code_cache.get(self.conn, self._version())

    def fts(self, query: str, k: int = 10, *, within: np.ndarray | None = None) -> list[tuple[str, float]]:
        """Lexical matches by bm25 (higher is better), among `within`'s rows if given; any user text is safe."""
        return fts_search(self.conn, query, k, within)

    # -- writes -------------------------------------------------------------------------------

    def apply(self, cards: Sequence[Card], hashes: dict[str, str]) -> ApplyReport:
        """Upsert cards whose file hash changed; a card whose hash is already indexed is not re-embedded.

        Args:
            cards: parsed card files.
            hashes: card id -> `content_hash` of the file the card was parsed from.
        """
        indexed = self._indexed_hashes([c.id for c in cards])
        todo = [c for c in cards if indexed.get(c.id) != hashes[c.id]]
        skipped = tuple(sorted(c.id for c in cards if indexed.get(c.id) == hashes[c.id]))
        if not todo:
            return ApplyReport(skipped=skipped)
        # Embed before taking the write lock: readers and other writers never wait on the model.
        # One vector per distinct text: a card whose file changed but whose retrieval text did not
        # (a merge adding a source, a status change) keeps its stored vector, and two cards with
        # the same text share one encode.
        texts = [retrieval_text(c) for c in todo]
        known = self._stored_vectors([c.id for c in todo if c.id in indexed])
        by_text = {known[c.id][0]: known[c.id][1] for c in todo if c.id in known}
        missing = sorted({t for t in texts if t not in by_text})
        if missing:
            by_text.update(zip(missing, self.embedder.encode(missing)))
        self.write_rows(todo, hashes, np.stack([by_text[t] for t in texts]))
        added = tuple(sorted(c.id for c in todo if c.id not in indexed))
        updated = tuple(sorted(c.id for c in todo if c.id in indexed))
        return ApplyReport(added, updated, skipped, encoded=len(missing))

    def _stored_vectors(self, ids: list[str]) -> dict[str, tuple[str, np.ndarray]]:
        """Card id -> (retrieval text, vector) of rows still matching their row hash (no damaged vector is reused)."""
        cols = ", ".join(COLUMNS)
        out: dict[str, tuple[str, np.ndarray]] = {}
        text_at, blob_at = COLUMNS.index("retrieval_text"), COLUMNS.index("embedding")
        for part in chunks(ids):
            sql = f"SELECT {cols} FROM cards WHERE id IN ({','.join('?' * len(part))})"
            for values in self.conn.execute(sql, tuple(part)):
                if row_hash(values[:-1]) == values[-1] and len(values[blob_at]) == 4 * self.dim:
                    out[values[0]] = (values[text_at], np.frombuffer(values[blob_at], dtype=np.float32))
        return out

    def _indexed_hashes(self, ids: list[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for part in chunks(ids):
            sql = f"SELECT id, file_hash FROM cards WHERE id IN ({','.join('?' * len(part))})"
            out.update(self.conn.execute(sql, tuple(part)))
        return out

    def write_rows(self, cards: Sequence[Card], hashes: dict[str, str], vectors: np.ndarray) -> None:
        """Upsert rows whose vectors are already computed, in one transaction (rebuild feeds this)."""
        if len(cards) != len(vectors):
            raise ValueError(f"{len(cards)} cards but {len(vectors)} vectors")

        def write() -> None:
            cur = self.conn.cursor()
            cur.execute(CARD_FIELDS_SQL)  # an index from before the table gains it with its next write
            cur.execute(PLACES_SQL)
            placeholders = ", ".join("?" * len(COLUMNS))
            updates = ", ".join(f"{c} = excluded.{c}" for c in COLUMNS[1:])
            for card, vec in zip(cards, vectors):
                values = card_values(card, hashes[card.id], vec)
                (n,) = cur.execute(
                    f"INSERT INTO cards ({', '.join(COLUMNS)}) VALUES ({placeholders}) "
                    f"ON CONFLICT(id) DO UPDATE SET {updates} RETURNING n", values).fetchall()[0]
                # vec0 has no upsert and a partition key cannot change: delete, then insert.
                cur.execute("DELETE FROM vec_cards WHERE rowid = ?", (n,))
                cur.execute("INSERT INTO vec_cards (rowid, shard, embedding_bq) "
                            "VALUES (?, ?, vec_quantize_binary(?))", (n, n % SHARDS, values[-2]))
                cur.execute("INSERT OR REPLACE INTO fts_cards (rowid, retrieval_text) VALUES (?, ?)",
                            (n, values[COLUMNS.index("retrieval_text")]))
                # The parsed card rides along, so recall reads it instead of parsing the file again
                # while the file still hashes to `file_hash` (index/card_fields.py).
                put_fields(cur, n, card, hashes[card.id])
                put_place(cur, n, card.workspace, card.project)
            self._touch(cur)

        self._write(write)

    def store_fields(self, cards: Sequence[Card], hashes: dict[str, str]) -> int:
        """Store these cards as parsed beside their rows, nothing else touched; returns how many had a row."""
        def write() -> int:
            cur = self.conn.cursor()
            cur.execute(CARD_FIELDS_SQL)
            done = 0
            for card in cards:
                for (n,) in cur.execute("SELECT n FROM cards WHERE id = ?", (card.id,)).fetchall():
                    put_fields(cur, n, card, hashes[card.id])
                    done += 1
            return done

        return self._write(write) if cards else 0

    def remove(self, ids: Iterable[str]) -> int:
        """Drop the rows of cards whose files are gone; returns how many rows went."""
        ids = list(ids)

        def delete() -> int:
            cur = self.conn.cursor()
            cur.execute(CARD_FIELDS_SQL)
            cur.execute(PLACES_SQL)
            gone = 0
            for part in chunks(ids):
                marks = ",".join("?" * len(part))
                ns = [n for (n,) in cur.execute(f"SELECT n FROM cards WHERE id IN ({marks})", tuple(part))]
                for n in ns:
                    cur.execute("DELETE FROM vec_cards WHERE rowid = ?", (n,))
                    cur.execute("DELETE FROM fts_cards WHERE rowid = ?", (n,))
                    cur.execute("DELETE FROM card_fields WHERE n = ?", (n,))
                    drop_place(cur, n)
                    cur.execute("DELETE FROM cards WHERE n = ?", (n,))
                gone += len(ns)
            self._touch(cur)
            return gone

        return self._write(delete) if ids else 0

    def _touch(self, cur) -> None:
        count = cur.execute("SELECT count(*) FROM cards").fetchall()[0][0]
        cur.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                        [("card_count", str(count)), ("updated_at", now_utc())])

    def set_meta(self, **values: str) -> None:
        self._write(lambda: self.conn.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", list(values.items())))

    # -- self-check ---------------------------------------------------------------------------

    def verify(self, *, quick: bool = False) -> list[str]:
        """Problems that mean the file is damaged (empty list: sound). Never repairs anything.

        Raises IndexBusy when another process holds the write lock past the busy timeout.

        Beyond SQLite's own check: the three tables agree row for row, every row still hashes to
        its stored row hash, and every quantized vector is the quantization of its float vector,
        because garbage inside a blob passes `integrity_check` unnoticed.
        """
        problems: list[str] = []
        try:
            pragma = "quick_check" if quick else "integrity_check"
            result = [r[0] for r in self.conn.execute(f"PRAGMA {pragma}")]
            if result != ["ok"]:
                problems.append(f"{pragma}: " + "; ".join(result[:5]))
                return problems
            self.conn.execute("INSERT INTO fts_cards (fts_cards, rank) VALUES ('integrity-check', 0)")
            counts = {t: self.conn.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
                      for t in ("cards", "vec_cards", "fts_cards")}
            if len(set(counts.values())) != 1:
                problems.append("tables disagree on row count: "
                                + ", ".join(f"{t}={c}" for t, c in counts.items()))
            if quick:
                return problems
            bits = dict(self.conn.execute("SELECT rowid, embedding_bq FROM vec_cards"))
            cols = ", ".join(COLUMNS)
            bad_rows, bad_bits = [], []
            for n, qb, *values in self.conn.execute(
                    f"SELECT n, vec_quantize_binary(embedding), {cols} FROM cards"):
                if row_hash(values[:-1]) != values[-1] or len(values[-2]) != 4 * self.dim:
                    bad_rows.append(values[0])
                elif bits.get(n) != qb:
                    bad_bits.append(values[0])
            if bad_rows:
                problems.append(f"{len(bad_rows)} rows do not match their row hash (e.g. {bad_rows[0]})")
            if bad_bits:
                problems.append(f"{len(bad_bits)} quantized vectors do not match (e.g. {bad_bits[0]})")
        except (apsw.BusyError, apsw.LockedError) as exc:
            # A writer holding the lock (the FTS5 check is a write statement) is no sign of damage.
            raise IndexBusy(f"index {self.path} is locked by another process ({exc}); check again "
                            "when the running `memoir run` or rebuild has finished") from exc
        except apsw.Error as exc:
            problems.append(f"reading the index failed: {type(exc).__name__}: {exc}")
        except UnicodeDecodeError as exc:
            # Bytes inside a stored text went bad: the b-tree is intact, so integrity_check passed.
            problems.append(f"a stored text is not valid UTF-8 ({exc.reason} at byte {exc.start})")
        return problems


def _init_schema(conn, embedder) -> None:
    with conn:
        conn.execute(schema_sql(int(embedder.dim)))
        conn.executemany("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", [
            ("schema_version", SCHEMA_VERSION), ("model", embedder.model_id),
            ("dim", str(embedder.dim)), ("shards", str(SHARDS)), ("card_count", "0"),
            ("built_at", now_utc()), ("updated_at", now_utc()), (STAMP_KEY, parser_stamp()),
        ])


def meta_problems(meta: dict[str, str], model_id: str, dim: int) -> list[str]:
    """Why an index's vectors cannot be mixed with this embedder's (empty: compatible)."""
    problems = []
    if meta.get("schema_version") != SCHEMA_VERSION:
        problems.append(f"schema version {meta.get('schema_version')!r}, this memoir writes {SCHEMA_VERSION!r}")
    if meta.get("model") != model_id:
        problems.append(f"built with model {meta.get('model')!r}, the current model is {model_id!r}")
    if meta.get("dim") != str(dim):
        problems.append(f"built with {meta.get('dim')}-d vectors, the current model gives {dim}-d")
    if meta.get("shards") not in (None, str(SHARDS)):
        problems.append(f"built with {meta.get('shards')} shards, this memoir uses {SHARDS}")
    return problems


def open_index(index_dir: Path, embedder, *, busy_timeout_ms: int = DEFAULT_BUSY_MS,
               path: Path | None = None) -> Index:
    """Open (or create) the index and check it was built for this embedder.

    Args:
        index_dir: the directory holding `index.db`.
        embedder: anything with `model_id`, `dim` and `encode`; the model is not loaded here.
        busy_timeout_ms: how long a write waits for another process's lock.
        path: an explicit file (rebuild writes a new file beside the live one).

    Raises:
        IndexCorrupt: the file is not a database or tables are missing: rebuild.
        ModelMismatch: built for another model, dimension or schema: rebuild, never mix vectors.
    """
    path = Path(path) if path is not None else Path(index_dir) / INDEX_FILE
    try:
        private_db_file(path)  # 0600 before SQLite opens it: its -wal and -shm take the same mode
    except OSError as exc:
        raise IndexWriteFailed(f"cannot create {path.parent}: {exc}") from exc
    conn = connect(path, busy_timeout_ms=busy_timeout_ms)
    try:
        # A row with its 1.5 KB float vector is ~2 KB: on 4 KB pages only one fits, wasting half
        # the file. 16 KB pages hold seven. Takes effect only on a new file, before WAL mode.
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        conn.execute("PRAGMA journal_mode = WAL")  # recall reads while a nightly run writes
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA cache_size = -65536")
        conn.execute("PRAGMA mmap_size = 268435456")
        present = tables(conn)
        if not present:
            _init_schema(conn, embedder)
        elif missing := [t for t in TABLES if t not in present]:
            raise IndexCorrupt(f"index {path} lacks tables {', '.join(missing)}; run `memoir index rebuild`")
        if problems := meta_problems(read_meta(conn), embedder.model_id, int(embedder.dim)):
            raise ModelMismatch(f"index {path}: {'; '.join(problems)}; vectors of different models "
                             "must not be mixed: run `memoir index rebuild`")
    except apsw.Error as exc:
        conn.close()
        raise translate(exc, path) from exc
    except Exception:
        conn.close()
        raise
    return Index(conn, path, embedder)
