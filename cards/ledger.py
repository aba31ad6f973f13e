"""The read ledger: per host log file, how far memoir has read it, so a run reads only what is new.

`plan_read` is the pure decision (new / appended / unchanged / rewritten); `Ledger` is the SQLite
file in the state dir (`state/ledger.sqlite`).

A log can change under memoir in three ways, and each is read again from what the file holds now:
- replaced by one of the same size and mtime (in place, or renamed over): a hash of sampled blocks
  (`sample_spans`) differs, so the file counts as rewritten;
- grown: the experience that was still being written at its end is cut again whole, because an
  appended read restarts at the start of the file's last session (`resume_offset`, 0 for a file
  of one session), so its request is read again and its card comes out as a clean run's;
- truncated, or rewritten: read from the start.
In each case the ids of the cards the earlier read derived (`card_ids`) that this read does not
derive again are the file's retired cards (`retired_ids`): a partial card of a half-written task,
or one the file no longer holds. The ledger moves forward only through `commit`,
which the caller runs after the cards from a read are stored: a crash in between rereads the same
bytes next time, and stable card ids make that rereading harmless.

No raw path is stored: a row is keyed by the sha256 of the file's path (so a rerun finds it) and
shows the path, the session ids and the carried cwd sanitized, like everything under the home (a
path under `/home/jane.doe@corp.com/` or `/mnt/10.42.7.19/` stays out of the file). A ledger
written before that is rewritten in this form when it is opened, and vacuumed so the old bytes go.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from memoir.cards.hosts.base import Carry
from memoir.cards.sanitize.fields import sanitize_field, sanitize_id, sanitize_path
from memoir.cards.errors import CardsError
from memoir.cards.private import private_db_file

LEDGER_FILE = "ledger.sqlite"
SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    path_key TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    host TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    offset INTEGER NOT NULL,
    lines INTEGER NOT NULL,
    resume_offset INTEGER NOT NULL,
    resume_line INTEGER NOT NULL,
    next_seq INTEGER NOT NULL,
    prefix_sha256 TEXT NOT NULL,
    session_ids TEXT NOT NULL,
    carry TEXT NOT NULL,
    updated TEXT NOT NULL,
    sample_sha256 TEXT NOT NULL DEFAULT '',
    card_ids TEXT NOT NULL DEFAULT '[]'
)
"""
ADDED_COLUMNS = {"sample_sha256": "TEXT NOT NULL DEFAULT ''", "card_ids": "TEXT NOT NULL DEFAULT '[]'"}
SAMPLE_BLOCK = 1024  # bytes per sampled block
SAMPLE_BLOCKS = 8  # the first block, the last, and evenly spaced ones between


class LedgerError(CardsError):
    """The ledger database cannot be opened or written; delete it to reread every log from the start."""


@dataclass(frozen=True, slots=True)
class FileStat:
    size: int
    mtime_ns: int


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """What memoir knows about one host log after its last committed read.

    `offset`/`lines`: end of the last complete line consumed. `resume_offset`/`resume_line`:
    where an appended read starts (the same, except for header-named formats such as aider).
    `prefix_sha256`: hash of bytes [0, offset), to notice a file rewritten in place.
    `sample_sha256`: hash of the sampled blocks of [0, size), to notice a same-size, same-mtime
    replacement. `card_ids`: the cards derived from [resume_offset, offset), the part an appended
    read derives again.
    """

    path: str
    host: str
    size: int
    mtime_ns: int
    offset: int
    lines: int
    resume_offset: int
    resume_line: int
    next_seq: int
    prefix_sha256: str
    session_ids: tuple[str, ...] = ()
    carry: Carry = field(default_factory=Carry)
    sample_sha256: str = ""
    card_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ReadPlan:
    """Where to start reading a file and why; `reason` is new, appended, unchanged or rewritten."""

    start_offset: int
    start_line: int
    start_seq: int
    reason: str
    carry: Carry = field(default_factory=Carry)

    @property
    def skip(self) -> bool:
        return self.reason == "unchanged"


def sample_spans(size: int) -> list[tuple[int, int]]:
    """(offset, length) of the blocks whose hash stands for a file of `size` bytes: whole when small."""
    if size <= SAMPLE_BLOCK * SAMPLE_BLOCKS:
        return [(0, size)]
    last = size - SAMPLE_BLOCK
    return [(last * i // (SAMPLE_BLOCKS - 1), SAMPLE_BLOCK) for i in range(SAMPLE_BLOCKS)]


def plan_read(
    entry: LedgerEntry | None, stat: FileStat, prefix_hash_fn: Callable[[int], str], host: str = "",
    sample_hash_fn: Callable[[int], str] | None = None,
) -> ReadPlan:
    """Decide how much of a file to read, given its ledger entry and current size/mtime.

    `prefix_hash_fn(n)` returns the sha256 hex of the file's first n bytes; it is only called
    when the file changed. `sample_hash_fn(size)` hashes the `sample_spans(size)` blocks; it is
    called for a file whose size and mtime are unchanged, so an untouched file costs a few reads.
    """
    if entry is None:
        return ReadPlan(0, 0, 0, "new")
    if stat.size == entry.size and stat.mtime_ns == entry.mtime_ns:
        if sample_hash_fn is not None and entry.sample_sha256 and sample_hash_fn(stat.size) != entry.sample_sha256:
            return ReadPlan(0, 0, 0, "rewritten")  # same size, same mtime, other bytes
        return ReadPlan(entry.offset, entry.lines, entry.next_seq, "unchanged", entry.carry)
    # Shrunk below what was read, read by another reader, or edited above the mark: the old
    # offsets mean nothing. Reading from 0 is safe because card ids depend on session and seq.
    if stat.size < entry.offset or (host and host != entry.host) or prefix_hash_fn(entry.offset) != entry.prefix_sha256:
        return ReadPlan(0, 0, 0, "rewritten")
    if entry.resume_offset == 0:
        return ReadPlan(0, 0, 0, "appended")  # the file's one session, read again whole
    return ReadPlan(entry.resume_offset, entry.resume_line, entry.next_seq, "appended", entry.carry)


def retired_ids(entry: LedgerEntry, derived: Iterable[str]) -> list[str]:
    """The cards an earlier read of this file derived that a read of what it holds now did not."""
    now = set(derived)
    return [i for i in entry.card_ids if i not in now]


_COLUMNS = ("path, host, size, mtime_ns, offset, lines, resume_offset, resume_line, next_seq,"
            " prefix_sha256, session_ids, carry, sample_sha256, card_ids")
_INSERT = (f"INSERT OR REPLACE INTO files (path_key, {_COLUMNS}, updated)"
           " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")


def path_key(path: str) -> str:
    """What a row is found by: the raw path never stored, only its hash."""
    return hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()


class LedgerView:
    """What a collect asks of the ledger (`get`), for the files handed to one worker: picklable."""

    def __init__(self, entries: dict[str, LedgerEntry | None]):
        self.entries = {path_key(p): e for p, e in entries.items() if e is not None}

    def get(self, path: str) -> LedgerEntry | None:
        return self.entries.get(path_key(path))


def stored_carry(carry: Carry) -> Carry:
    """The carry as the ledger keeps it: cwd, branch and session ids sanitized as the run stores them."""
    return Carry(
        session_id=sanitize_id(carry.session_id),
        cwd=sanitize_field(carry.cwd),
        git_branch=sanitize_field(carry.git_branch),
        started=carry.started,
        seqs=tuple((sanitize_id(sid), n) for sid, n in carry.seqs),
    )


def _row(key: str, e: LedgerEntry, now: str) -> tuple:
    return (
        key, sanitize_path(e.path, e.carry.cwd), e.host, e.size, e.mtime_ns, e.offset, e.lines, e.resume_offset,
        e.resume_line, e.next_seq, e.prefix_sha256, json.dumps(list(dict.fromkeys(sanitize_id(s) for s in e.session_ids))),
        json.dumps(stored_carry(e.carry).to_dict()), e.sample_sha256, json.dumps(list(e.card_ids)), now,
    )


def _row_to_entry(row: tuple) -> LedgerEntry:
    (path, host, size, mtime_ns, offset, lines, resume_offset, resume_line, next_seq, prefix, sids, carry,
     sample, card_ids) = row
    return LedgerEntry(
        path=path,
        host=host,
        size=size,
        mtime_ns=mtime_ns,
        offset=offset,
        lines=lines,
        resume_offset=resume_offset,
        resume_line=resume_line,
        next_seq=next_seq,
        prefix_sha256=prefix,
        session_ids=tuple(json.loads(sids)),
        carry=Carry.from_dict(json.loads(carry)),
        sample_sha256=sample,
        card_ids=tuple(json.loads(card_ids)),
    )


class Ledger:
    """The SQLite ledger file; use as a context manager or call `close()`."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            private_db_file(self.path)  # 0600 before SQLite makes it (and its -wal, -shm) with the umask's mode
            self._db = sqlite3.connect(self.path)
            self._db.execute("PRAGMA secure_delete=ON")  # a replaced row's old bytes are zeroed, not left in free pages
            self._db.execute("PRAGMA journal_mode=WAL")
            self._add_columns()
            self._migrate_raw_paths()
            self._db.execute(SCHEMA)
            self._db.commit()
        except (OSError, sqlite3.Error) as exc:
            raise LedgerError(f"cannot open read ledger {self.path}: {exc}; check the state dir is writable") from exc

    @classmethod
    def in_state_dir(cls, state_dir: Path) -> Ledger:
        return cls(Path(state_dir) / LEDGER_FILE)

    def _add_columns(self) -> None:
        """A ledger from before a column was added gets it, with its default (nothing sampled yet)."""
        columns = [r[1] for r in self._db.execute("PRAGMA table_info(files)")]
        for name, kind in ADDED_COLUMNS.items():
            if columns and name not in columns:
                self._db.execute(f"ALTER TABLE files ADD COLUMN {name} {kind}")

    def _migrate_raw_paths(self) -> None:
        """Rewrite a ledger that keyed rows by their raw path into the hashed, sanitized form."""
        columns = [r[1] for r in self._db.execute("PRAGMA table_info(files)")]
        if not columns or "path_key" in columns:
            return
        rows = self._db.execute(f"SELECT {_COLUMNS}, updated FROM files").fetchall()
        with self._db:
            self._db.execute("DROP TABLE files")
            self._db.execute(SCHEMA)
            self._db.executemany(_INSERT, [_row(path_key(r[0]), _row_to_entry(r[:-1]), r[-1]) for r in rows])
        self._db.execute("VACUUM")
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def get(self, path: str) -> LedgerEntry | None:
        """The entry for the file at `path` (its raw path; the row holds only its hash)."""
        row = self._db.execute(f"SELECT {_COLUMNS} FROM files WHERE path_key = ?", (path_key(path),)).fetchone()
        return _row_to_entry(row) if row else None

    def entries(self) -> list[LedgerEntry]:
        """Every entry, with its path as stored (sanitized: a redacted path names no file)."""
        rows = self._db.execute(f"SELECT {_COLUMNS} FROM files ORDER BY path").fetchall()
        return [_row_to_entry(r) for r in rows]

    def as_read(self) -> dict[str, tuple[str, int, int]]:
        """path -> (host, size, mtime_ns) as last read: what a reader derived from the logs (the turn
        index) compares its own files against."""
        return {e.path: (e.host, e.size, e.mtime_ns) for e in self.entries()}

    def commit(self, entries: Iterable[LedgerEntry]) -> int:
        """Record reads whose cards are stored; all or nothing. Returns the number of files recorded."""
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        rows = [_row(path_key(e.path), e, now) for e in entries]
        try:
            with self._db:
                self._db.executemany(_INSERT, rows)
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot write read ledger {self.path}: {exc}") from exc
        return len(rows)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
