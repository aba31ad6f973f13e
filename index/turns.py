"""The turn index deep search fuses with the card index: vectors for the sanitized turns of the ledgered logs.

Like the card index it is derived, never canonical: `turns.sqlite` in the state dir holds, per
ledgered log file, its sanitized turns and the size/mtime they were read at, plus one vector per
distinct turn text of the kinds embedded alone (`EMBEDDED_KINDS`: what was said, commands, errors;
a tool's output is found by its words and scored by its window's vector), keyed by the sha256 of that text (the content-hash skip: an appended log embeds
only its new turns, a rerun embeds nothing). The model id is stored beside the vectors; another
model drops them all. Delete the file at any time: the next search reads the logs again. `memoir run`
refreshes it after each run (every new text, with progress), so a first search finds it ready; a
search's own refresh embeds at most `EMBED_BUDGET` new texts, and over a large ledger no run has
read yet it catches up a batch at a time (and says so) rather than stall.

Beside the vectors, `turn_words` (FTS5, the card index's tokenizer) holds every turn's words, so a
question naming an exact error code, config key or file name finds the turn that says it by bm25
(`lexical_turns`): a small embedding model spreads such rare tokens thin, a word index does not.

`card_spans` is the other half of the fusion: which card sources cover which lines, read from the
card files once per card file hash (the card index names the hash) and kept in the same file.
"""

from __future__ import annotations

import bisect
import hashlib
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memoir.cards.collect import CollectReport, collect_file
from memoir.cards.sanitize.fields import sanitize_turn
from memoir.cards.private import private_db_file
from memoir.cards.store import CardFileError, CardStore
from memoir.index.files import TURNS_FILE
from memoir.index.plan import FTS_MAX_TERMS_USED, choose_fts_terms, fts_terms, quote_terms, term_tokens

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS turns (
    file TEXT NOT NULL, line INTEGER NOT NULL, host TEXT NOT NULL, session_id TEXT NOT NULL,
    seq INTEGER NOT NULL, role TEXT NOT NULL, kind TEXT NOT NULL, timestamp TEXT NOT NULL,
    cwd TEXT NOT NULL, text TEXT NOT NULL, hash TEXT NOT NULL, PRIMARY KEY (file, line, seq)
);
CREATE TABLE IF NOT EXISTS vectors (hash TEXT PRIMARY KEY, vector BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS spans (
    card_id TEXT NOT NULL, file_hash TEXT NOT NULL, session_id TEXT NOT NULL, lo INTEGER NOT NULL, hi INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS spans_card ON spans (card_id);
CREATE TABLE IF NOT EXISTS windows (
    file TEXT NOT NULL, session_id TEXT NOT NULL, host TEXT NOT NULL, lo INTEGER NOT NULL, hi INTEGER NOT NULL,
    first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL, cwd TEXT NOT NULL, text TEXT NOT NULL,
    hash TEXT NOT NULL, PRIMARY KEY (file, session_id, first_seq)
);
CREATE TABLE IF NOT EXISTS window_vectors (hash TEXT PRIMARY KEY, vector BLOB NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS turn_words USING fts5(
    text, file UNINDEXED, line UNINDEXED, seq UNINDEXED,
    tokenize="unicode61 remove_diacritics 2 tokenchars '_'"
);
CREATE VIRTUAL TABLE IF NOT EXISTS turn_vocab USING fts5vocab(turn_words, 'row');
"""
LEXICAL_VERSION = "1"  # the turn_words table's shape: another value fills it again from the turns
BUSY_MS = 2000
# A window: consecutive turns of one session, one vector for the stretch. A single turn is often
# too short to say what it is about ("yes, do that"), a card covers only what was distilled; a
# window about a card's mean span (11 turns on the sets measured) finds the talk around an answer.
WINDOW_TURNS = 11
WINDOW_STEP = 8  # windows overlap by three turns: an answer at one edge sits inside the next (5 and 11 searched worse)
WINDOW_TURN_CHARS = 300  # each turn's share of a window's text: the model reads ~256 word pieces at most
WINDOWS_VERSION = f"{WINDOW_TURNS}/{WINDOW_STEP}/{WINDOW_TURN_CHARS}"
EMBED_BUDGET = 2000  # new turn texts one refresh embeds (~10-20 s on 2 cores): a first search over a
# large ledger answers from the cards and the turns embedded so far instead of hanging for minutes
EMBED_STEP = 512  # texts per encode call, each batch its own transaction
# Turns embedded one by one: what the user and the assistant said, the commands run, errors. A tool's
# output (a file read, a test log: a third of a coding session's turns, and its longest texts) is found
# by its words (`turn_words`) and through the windows that hold it: its own vector cost a third of a
# first night's embedding and found no answer the windows and the words missed (`bench.search`).
EMBEDDED_KINDS = ("text", "error", "summary", "tool_call")


@dataclass(frozen=True, slots=True)
class TurnRow:
    """One sanitized turn as the turn index holds it."""

    file: str
    line: int
    host: str
    session_id: str
    seq: int
    role: str
    kind: str
    timestamp: str
    cwd: str
    text: str


@dataclass(frozen=True, slots=True)
class WindowRow:
    """Consecutive turns of one session as one searchable stretch, cited by file and lines."""

    file: str
    session_id: str
    host: str
    lo: int
    hi: int
    first_seq: int
    last_seq: int
    cwd: str
    text: str


def cut_windows(rows: Iterable[TurnRow], size: int = WINDOW_TURNS, step: int = WINDOW_STEP) -> list[WindowRow]:
    """Windows of `size` consecutive turns per (file, session), one every `step` turns; a session
    shorter than `size` is one window. Each turn adds at most WINDOW_TURN_CHARS of its text."""
    by_session: dict[tuple[str, str], list[TurnRow]] = {}
    for r in rows:
        by_session.setdefault((r.file, r.session_id), []).append(r)
    out = []
    for (file, session), turns in by_session.items():
        turns.sort(key=lambda r: (r.seq, r.line))
        last_start = max(0, len(turns) - size)
        starts = list(range(0, last_start + 1, step))
        if starts[-1] != last_start:
            starts.append(last_start)  # the session's end is always in a window of full size
        for i in starts:
            chunk = turns[i:i + size]
            text = "\n".join(" ".join(t.text.split())[:WINDOW_TURN_CHARS] for t in chunk)
            out.append(WindowRow(file, session, chunk[0].host, min(t.line for t in chunk), max(t.line for t in chunk),
                                 chunk[0].seq, chunk[-1].seq, next((t.cwd for t in chunk if t.cwd), ""), text))
    return out


@dataclass(frozen=True, slots=True)
class FileChange:
    """A ledgered log whose turns must be read again (new, grown, rewritten) or dropped (gone from the ledger)."""

    read: tuple[tuple[str, str], ...] = ()  # (path, host)
    drop: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TurnRefresh:
    """What one refresh did: files read again, files dropped, turn texts embedded, problems by file."""

    read: int = 0
    dropped: int = 0
    embedded: int = 0
    pending: int = 0  # turn texts left for the next refresh (over the embedding budget)
    problems: tuple[str, ...] = ()
    windows_embedded: int = 0  # window texts embedded (from what the turns left of the budget)
    windows_pending: int = 0
    files_pending: int = 0  # logs not read yet: the refresh stopped at its time limit (`until`)

    @property
    def left(self) -> int:
        """Texts and files a later refresh still has to do."""
        return self.pending + self.windows_pending + self.files_pending


@dataclass(frozen=True, slots=True)
class Span:
    """Lines of one session a card's source covers."""

    card_id: str
    session_id: str
    lo: int
    hi: int


def _past(until: float | None) -> bool:
    return until is not None and time.monotonic() >= until


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def plan_file_changes(ledgered: Mapping[str, tuple[str, int, int]], known: Mapping[str, tuple[int, int]]
                      ) -> FileChange:
    """Which files to read again: ledgered ones whose (size, mtime) differs from when their turns were read."""
    read = tuple((p, host) for p, (host, size, mtime) in sorted(ledgered.items()) if known.get(p) != (size, mtime))
    drop = tuple(sorted(p for p in known if p not in ledgered))
    return FileChange(read, drop)


def plan_card_changes(indexed: Mapping[str, str], known: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """(card ids whose spans to read again, card ids to drop), from card file hashes in the card index."""
    changed = sorted(i for i, h in indexed.items() if known.get(i) != h)
    return changed, sorted(i for i in known if i not in indexed)


def covering(spans: Iterable[Span], session_id: str, line: int) -> list[str]:
    """Ids of the cards whose source covers this line of this session."""
    return [s.card_id for s in spans if s.session_id == session_id and s.lo <= line <= s.hi]


def read_turns(path: str, host: str, blob_cap: int) -> list[TurnRow] | None:
    """Every turn with text in one log, sanitized; None when the file cannot be read."""
    out = CollectReport()
    collect_file(Path(path), host, None, out)
    if out.skipped["unreadable"]:
        return None
    rows = []
    for turns in out.sessions.values():
        for t in turns:
            if t.kind == "thinking" or not t.text.strip():
                continue  # thinking is never shown by search, so it is never matched either
            t = sanitize_turn(t, blob_cap)  # every field, as the run stores it (cwd, session id)
            rows.append(TurnRow(path, t.line, t.host, t.session_id, t.seq, t.role, t.kind,
                                t.timestamp.isoformat() if t.timestamp else "", t.cwd, t.text))
    return rows


class TurnIndex:
    """`turns.sqlite`: refreshed from the ledger and the card index, loaded into memory for brute-force cosine."""

    def __init__(self, state_dir: Path, model_id: str) -> None:
        self.path = Path(state_dir) / TURNS_FILE
        private_db_file(self.path)  # 0600 before SQLite opens it: its -wal and -shm take the same mode
        self.conn = sqlite3.connect(self.path, timeout=BUSY_MS / 1000)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.executescript(SCHEMA)
        stored = dict(self.conn.execute("SELECT key, value FROM meta"))
        if stored.get("model_id") != model_id:
            # Another model's vectors are not comparable with this one's: drop them all, keep the text.
            with self.conn:
                self.conn.execute("DELETE FROM vectors")
                self.conn.execute("DELETE FROM window_vectors")
                self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('model_id', ?)", (model_id,))
        if stored.get("windows") != WINDOWS_VERSION:
            # A turn index made before windows (or with other window sizes): cut them from the turns it holds.
            rows = [TurnRow(*r) for r in self.conn.execute(
                "SELECT file, line, host, session_id, seq, role, kind, timestamp, cwd, text FROM turns")]
            with self.conn:
                self.conn.execute("DELETE FROM windows")
                self._store_windows(rows)
                self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('windows', ?)", (WINDOWS_VERSION,))
        if stored.get("lexical") != LEXICAL_VERSION:
            # A turn index made before the word index: fill it from the turns it holds.
            with self.conn:
                self.conn.execute("DELETE FROM turn_words")
                self.conn.execute("INSERT INTO turn_words (text, file, line, seq) SELECT text, file, line, seq FROM turns")
                self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('lexical', ?)", (LEXICAL_VERSION,))

    def close(self) -> None:
        self.conn.close()

    def refresh_files(self, ledgered: Mapping[str, tuple[str, int, int]], embedder, blob_cap: int, *,
                      budget: int | None = EMBED_BUDGET, progress: Callable | None = None,
                      step: int = EMBED_STEP, until: float | None = None) -> TurnRefresh:
        """Read changed logs again and embed only turn texts not seen before (by content hash).

        Args:
            ledgered: path -> (host, size, mtime_ns) as the read ledger recorded it.
            embedder: `index.embed.Embedder`; loaded only when a turn text is new.
            blob_cap: the sanitizer's cap on one pasted blob.
            budget: new turn and window texts to embed at most (None: all of them, as `memoir run`
                does); the rest wait (unmatched) for the next refresh.
            progress: `progress("turn index", done, total, detail)` per file read and per batch embedded.
            step: texts per encode call, each batch committed on its own.
            until: a `time.monotonic()` past which no further file is read and no further batch
                embedded (a run's share of time for its turn index); what is left is counted and
                waits, as past the budget. None: no time limit.
        """
        known = {p: (s, m) for p, s, m in self.conn.execute("SELECT path, size, mtime_ns FROM files")}
        plan = plan_file_changes(ledgered, known)
        problems = []
        # One transaction per file read and per batch embedded: a refresh stopped anywhere (a deadline, a
        # kill) keeps what it did, and the next one continues from there (vectors are found by what is missing).
        with self.conn:
            for path in plan.drop:
                self._drop_file(path)
        files_pending = 0
        for i, (path, host) in enumerate(plan.read):
            if _past(until):
                files_pending = len(plan.read) - i
                break
            if progress:
                progress("turn index", i, len(plan.read), "reading the logs")
            rows = read_turns(path, host, blob_cap)
            with self.conn:
                self._drop_file(path)
                if rows is None:
                    problems.append(f"{path}: unreadable or gone since it was read")
                    continue
                self.conn.executemany("INSERT OR REPLACE INTO turns VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                                      [(r.file, r.line, r.host, r.session_id, r.seq, r.role, r.kind, r.timestamp,
                                        r.cwd, r.text, text_hash(r.text)) for r in rows])
                self.conn.executemany("INSERT INTO turn_words (text, file, line, seq) VALUES (?,?,?,?)",
                                      [(r.text, r.file, r.line, r.seq) for r in rows])
                self._store_windows(rows)
                size, mtime = ledgered[path][1:]
                self.conn.execute("INSERT INTO files VALUES (?,?,?)", (path, size, mtime))
        kinds = ",".join("?" * len(EMBEDDED_KINDS))
        missing = self.conn.execute(
            "SELECT t.hash, t.text FROM turns t LEFT JOIN vectors v ON v.hash = t.hash "
            f"WHERE v.hash IS NULL AND t.kind IN ({kinds}) GROUP BY t.hash ORDER BY max(t.timestamp) DESC, t.hash",
            EMBEDDED_KINDS).fetchall()
        unlimited = budget is None
        budget = len(missing) if budget is None else budget
        pending = max(0, len(missing) - budget)
        missing = missing[:budget]  # newest first: recent sessions are the likelier answers
        done = self._embed_into("vectors", missing, embedder, step, progress, "embedding turns", until)
        pending += len(missing) - done
        missing = missing[:done]
        windows = self.conn.execute(
            "SELECT w.hash, w.text FROM windows w LEFT JOIN window_vectors v ON v.hash = w.hash "
            "WHERE v.hash IS NULL GROUP BY w.hash ORDER BY w.hash").fetchall()
        room = len(windows) if unlimited else max(0, budget - len(missing))
        windows_pending = max(0, len(windows) - room)
        windows = windows[:room]
        done = self._embed_into("window_vectors", windows, embedder, step, progress, "embedding session windows", until)
        windows_pending += len(windows) - done
        windows = windows[:done]
        if progress:
            done = len(missing) + len(windows)
            progress("turn index", done, done, f"{len(missing)} turns and {len(windows)} windows embedded")
        with self.conn:
            # Vectors no turn uses any more (a rewritten or dropped log) go too: the file stays the logs' size.
            self.conn.execute("DELETE FROM vectors WHERE hash NOT IN (SELECT hash FROM turns)")
            self.conn.execute("DELETE FROM window_vectors WHERE hash NOT IN (SELECT hash FROM windows)")
        return TurnRefresh(len(plan.read) - files_pending, len(plan.drop), len(missing), pending, tuple(problems),
                           len(windows), windows_pending, files_pending)

    def _embed_into(self, table: str, texts: list[tuple[str, str]], embedder, step: int, progress: Callable | None,
                    detail: str, until: float | None = None) -> int:
        """(hash, text) pairs embedded `step` at a time into `table`, each batch its own transaction,
        until `until` passes; returns how many were embedded (a prefix of `texts`)."""
        for start in range(0, len(texts), step):
            if _past(until):
                return start
            if progress:
                progress("turn index", start, len(texts), detail)
            part = texts[start:start + step]
            vecs = embedder.encode([text for _, text in part])
            with self.conn:
                self.conn.executemany(f"INSERT OR REPLACE INTO {table} VALUES (?, ?)",
                                      [(h, v.astype(np.float32).tobytes()) for (h, _), v in zip(part, vecs)])
        return len(texts)

    def _store_windows(self, rows: list[TurnRow]) -> None:
        """The windows cut from `rows` (one file's turns, or all the index holds), keyed by their text's hash."""
        self.conn.executemany("INSERT OR REPLACE INTO windows VALUES (?,?,?,?,?,?,?,?,?,?)",
                              [(w.file, w.session_id, w.host, w.lo, w.hi, w.first_seq, w.last_seq, w.cwd,
                                w.text, text_hash(w.text)) for w in cut_windows(rows)])

    def _drop_file(self, path: str) -> None:
        self.conn.execute("DELETE FROM turns WHERE file = ?", (path,))
        self.conn.execute("DELETE FROM windows WHERE file = ?", (path,))
        self.conn.execute("DELETE FROM turn_words WHERE file = ?", (path,))
        self.conn.execute("DELETE FROM files WHERE path = ?", (path,))

    def refresh_spans(self, indexed: Mapping[str, str], store: CardStore) -> list[str]:
        """Read the sources of cards whose file hash changed; returns problems (card files unreadable)."""
        known = dict(self.conn.execute("SELECT DISTINCT card_id, file_hash FROM spans"))
        changed, gone = plan_card_changes(indexed, known)
        problems = []
        with self.conn:
            for card_id in gone + changed:
                self.conn.execute("DELETE FROM spans WHERE card_id = ?", (card_id,))
            for card_id in changed:
                try:
                    card = store.read(card_id)
                except FileNotFoundError:
                    continue
                except (OSError, UnicodeDecodeError, CardFileError) as exc:
                    problems.append(str(exc))
                    continue
                self.conn.executemany("INSERT INTO spans VALUES (?,?,?,?,?)",
                                      [(card_id, indexed[card_id], s.session_id, s.lines[0], s.lines[1])
                                       for s in card.sources])
        return problems

    def load(self) -> tuple[list[TurnRow], np.ndarray, dict[str, list[Span]]]:
        """Every turn with a vector (file, line order), the vectors as one matrix, and the card spans by
        session. A turn of a kind not embedded alone (`EMBEDDED_KINDS`) carries the vector of the first
        window that holds it: a word match on it is scored by the stretch of session around it."""
        found = self.conn.execute(
            "SELECT t.file, t.line, t.host, t.session_id, t.seq, t.role, t.kind, t.timestamp, t.cwd, t.text, v.vector "
            "FROM turns t LEFT JOIN vectors v ON v.hash = t.hash ORDER BY t.file, t.line, t.seq").fetchall()
        held: dict[tuple[str, str], tuple[list[int], list[int], list[bytes]]] = {}
        for file, session, first, last, vector in self.conn.execute(
                "SELECT w.file, w.session_id, w.first_seq, w.last_seq, v.vector FROM windows w "
                "JOIN window_vectors v ON v.hash = w.hash ORDER BY w.file, w.session_id, w.first_seq"):
            firsts, lasts, vectors = held.setdefault((file, session), ([], [], []))
            firsts.append(first), lasts.append(last), vectors.append(vector)

        def vector_of(r: tuple) -> bytes | None:
            if r[10] is not None or r[6] in EMBEDDED_KINDS:
                return r[10]  # its own, or none yet (an embedded kind waits for its own)
            firsts, lasts, vectors = held.get((r[0], r[3]), ((), (), ()))
            j = bisect.bisect_left(lasts, r[4])  # windows are one size: their ends rise with their starts
            return vectors[j] if j < len(lasts) and firsts[j] <= r[4] else None

        found = [(r, v) for r in found if (v := vector_of(r)) is not None]
        rows = [TurnRow(*r[:10]) for r, _ in found]
        matrix = (np.frombuffer(b"".join(v for _, v in found), dtype=np.float32).reshape(len(found), -1)
                  if found else np.zeros((0, 1), dtype=np.float32))
        spans: dict[str, list[Span]] = {}
        for card_id, session_id, lo, hi in self.conn.execute("SELECT card_id, session_id, lo, hi FROM spans"):
            spans.setdefault(session_id, []).append(Span(card_id, session_id, lo, hi))
        return rows, matrix, spans

    def load_windows(self) -> tuple[list[WindowRow], np.ndarray]:
        """Every window with a vector (file, session, start order) and the vectors as one matrix."""
        found = self.conn.execute(
            "SELECT w.file, w.session_id, w.host, w.lo, w.hi, w.first_seq, w.last_seq, w.cwd, w.text, v.vector "
            "FROM windows w JOIN window_vectors v ON v.hash = w.hash ORDER BY w.file, w.session_id, w.first_seq"
        ).fetchall()
        rows = [WindowRow(*r[:9]) for r in found]
        matrix = (np.frombuffer(b"".join(r[9] for r in found), dtype=np.float32).reshape(len(found), -1)
                  if found else np.zeros((0, 1), dtype=np.float32))
        return rows, matrix


TURN_POSTINGS_BUDGET = 20000  # postings one lexical turn query may rank: turns far outnumber cards


def waiting(state_dir: Path, ledgered: Mapping[str, tuple[str, int, int]]) -> tuple[int, int] | None:
    """(logs the turn index has not read as the ledger has them, texts it has not embedded), read
    without writing (`memoir status`); None when there is no turn index yet or it cannot be read."""
    path = Path(state_dir) / TURNS_FILE
    if not path.is_file():
        return None
    kinds = ",".join("?" * len(EMBEDDED_KINDS))
    try:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, timeout=BUSY_MS / 1000)
        try:
            known = {p: (size, mtime) for p, size, mtime in conn.execute("SELECT path, size, mtime_ns FROM files")}
            texts = conn.execute(
                f"SELECT count(DISTINCT t.hash) FROM turns t LEFT JOIN vectors v ON v.hash = t.hash "
                f"WHERE v.hash IS NULL AND t.kind IN ({kinds})", EMBEDDED_KINDS).fetchone()[0]
            texts += conn.execute("SELECT count(DISTINCT w.hash) FROM windows w LEFT JOIN window_vectors v "
                                  "ON v.hash = w.hash WHERE v.hash IS NULL").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    return len(plan_file_changes(ledgered, known).read), texts


def lexical_turns(conn: sqlite3.Connection, text: str, k: int) -> list[tuple[str, int, int, float]]:
    """(file, line, seq, bm25; higher is better) of the k turns whose words best match `text`.

    The rarest query terms are searched (`choose_fts_terms`, as the card index does), each quoted,
    so nothing a user types is FTS syntax; a turn index without the word table answers nothing.
    """
    terms = fts_terms(text)
    if not terms or k <= 0:
        return []
    try:
        counts = []
        for term in terms:
            found = [conn.execute("SELECT doc FROM turn_vocab WHERE term = ?", (token,)).fetchone()
                     for token in term_tokens(term)]
            counts.append((term, min((row[0] if row else 0 for row in found), default=0)))
        expr = quote_terms(choose_fts_terms(counts, TURN_POSTINGS_BUDGET, FTS_MAX_TERMS_USED))
        if expr is None:
            return []
        sql = ("SELECT file, line, seq, -rank FROM turn_words WHERE turn_words MATCH ? "
               "ORDER BY rank, file, line, seq LIMIT ?")
        return [(f, int(line), int(seq), float(score)) for f, line, seq, score in conn.execute(sql, (expr, k))]
    except sqlite3.Error:
        return []  # a lexical miss, never a failed search


def search_words(state_dir: Path, text: str, k: int) -> list[tuple[str, int, int, float]]:
    """`lexical_turns` on a read-only connection to the state dir's turn index ([] when there is none)."""
    path = Path(state_dir) / TURNS_FILE
    if not path.exists():
        return []
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_MS / 1000)
    except sqlite3.Error:
        return []
    try:
        return lexical_turns(conn, text, k)
    finally:
        conn.close()
