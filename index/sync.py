"""Keep the index in step with the card files: index what changed on disk, drop what is gone.

Write order is card body first, then index. When the index write fails, the body stays and the
id goes to the pending list; the next sync (or `memoir replay`) applies it exactly once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import apsw

from memoir.cards.values import Card
from memoir.cards.store import CardFileError, CardStore, content_hash, parse_card
from memoir.index.apsw_errors import translate
from memoir.index.card_fields import STAMP_KEY, parser_stamp
from memoir.index.db import DEFAULT_BUSY_MS, ApplyReport, Index, open_index
from memoir.index.errors import IndexFailure
from memoir.index.pending import PendingIndex
from memoir.index.plan import plan_index_changes

SYNC_BATCH = 1024  # cards embedded per transaction: bounded memory, a crash loses one batch's work


@dataclass(frozen=True, slots=True)
class CardFile:
    """A parsed card file and the hash of its bytes (what the index row records)."""

    card: Card
    hash: str


def read_card_file(store: CardStore, card_id: str) -> CardFile:
    """Parse one card file; raises OSError, UnicodeDecodeError or CardFileError."""
    path = store.path_for(card_id)
    data = path.read_bytes()
    return CardFile(parse_card(data.decode("utf-8"), origin=str(path)), content_hash(data))


def file_hashes(store: CardStore) -> tuple[dict[str, str], list[str]]:
    """Card id -> hash of its file's bytes, plus one message per file that cannot be read."""
    hashes: dict[str, str] = {}
    problems: list[str] = []
    for card_id in store.ids():
        try:
            hashes[card_id] = content_hash(store.path_for(card_id).read_bytes())
        except OSError as exc:
            problems.append(f"{store.path_for(card_id)}: {exc}")
    return hashes, problems


@dataclass(frozen=True, slots=True)
class SyncReport:
    """What one sync changed, what it skipped by hash, and what it could not read."""

    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    unchanged: int = 0
    drained: tuple[str, ...] = ()
    still_pending: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    restamped: int = 0  # cards stored again as today's parser reads them (`restamp_fields`)

    @property
    def embedded(self) -> int:
        return len(self.added) + len(self.updated)


def index_ids(store: CardStore, index: Index, ids: Iterable[str]) -> tuple[ApplyReport, tuple[str, ...], list[str]]:
    """Index these cards from their files (missing file: drop the row). Returns (applied, removed, problems)."""
    files: list[CardFile] = []
    gone: list[str] = []
    problems: list[str] = []
    for card_id in ids:
        try:
            files.append(read_card_file(store, card_id))
        except FileNotFoundError:
            gone.append(card_id)
        except (OSError, UnicodeDecodeError, CardFileError) as exc:
            # A broken hand edit: the old row stays until the file parses again.
            problems.append(str(exc))
    report = index.apply([f.card for f in files], {f.card.id: f.hash for f in files})
    removed = tuple(gone) if index.remove(gone) else ()
    return report, removed, problems


def sync_index(store: CardStore, index: Index, pending: PendingIndex | None = None,
               *, batch: int = SYNC_BATCH) -> SyncReport:
    """Drain the pending list, then index every card file whose hash the index lacks, drop the rest.

    Pending ids go first so each is embedded once: the hash plan that follows finds them current.

    Raises:
        IndexFailure: the index could not be read or written (an SQLite error arrives translated).
    """
    try:
        return _sync(store, index, pending, batch)
    except apsw.Error as exc:
        raise translate(exc, index.path) from exc


def _sync(store: CardStore, index: Index, pending: PendingIndex | None, batch: int) -> SyncReport:
    added: list[str] = []
    updated: list[str] = []
    removed: list[str] = []
    problems: list[str] = []

    def apply(ids: list[str]) -> None:
        report, gone, bad = index_ids(store, index, ids)
        added.extend(report.added)
        updated.extend(report.updated)
        removed.extend(gone)
        problems.extend(bad)

    drained: tuple[str, ...] = ()
    left: tuple[str, ...] = ()
    if pending is not None:
        outcome = pending.drain(apply)
        drained, left = outcome.applied, outcome.left
        if outcome.error:
            problems.append(f"pending index updates still failing ({outcome.error}); "
                            f"{len(left)} ids stay queued")
            return SyncReport(tuple(added), tuple(updated), tuple(removed), 0, drained, left, tuple(problems))

    hashes, unreadable = file_hashes(store)
    problems.extend(unreadable)
    plan = plan_index_changes(hashes, index.hashes())
    for start in range(0, len(plan.changed), batch):
        apply(list(plan.changed[start:start + batch]))
    if plan.remove:
        index.remove(plan.remove)
        removed.extend(plan.remove)
    unchanged = len(hashes) - len(plan.changed)
    restamped = restamp_fields(store, index, hashes, batch)
    return SyncReport(tuple(added), tuple(updated), tuple(removed), unchanged, drained, left, tuple(problems),
                      restamped)


def restamp_fields(store: CardStore, index: Index, hashes: dict[str, str], batch: int = SYNC_BATCH) -> int:
    """After an upgrade of the card parser, store every indexed card again as it parses today.

    Recall takes a stored card only when today's parser made it, so after an upgrade it parsed
    every card file it judged until a rebuild. Each card whose file still has its row's hash is
    parsed once and stored beside its row; no vector changes. Once done, the index says which
    parser made its stored cards (`STAMP_KEY`), and later syncs skip this.
    """
    if index.meta().get(STAMP_KEY) == parser_stamp():
        return 0
    rows = index.hashes()
    ids = sorted(i for i, h in rows.items() if hashes.get(i) == h)
    done = 0
    for start in range(0, len(ids), batch):
        files = []
        for card_id in ids[start:start + batch]:
            try:
                files.append(read_card_file(store, card_id))
            except (OSError, UnicodeDecodeError, CardFileError):
                continue  # reported by the sync's own read; recall parses such a file as before
        done += index.store_fields([f.card for f in files], {f.card.id: f.hash for f in files})
    index.set_meta(**{STAMP_KEY: parser_stamp()})
    return done


@dataclass(frozen=True, slots=True)
class QueueReport:
    """Ids indexed now, ids put on the pending list instead, and the reason they were queued."""

    indexed: tuple[str, ...] = ()
    queued: tuple[str, ...] = ()
    error: str = ""


def index_or_queue(store: CardStore, index_dir: Path, embedder, ids: Iterable[str], pending: PendingIndex,
                   *, busy_timeout_ms: int = DEFAULT_BUSY_MS) -> QueueReport:
    """After card bodies are written: index them, or queue their ids if the index cannot take them.

    Any index failure (locked, corrupt, stale, disk full, model missing) queues; the bodies on
    disk are never touched here.
    """
    ids = list(ids)
    if not ids:
        return QueueReport()
    try:
        with open_index(index_dir, embedder, busy_timeout_ms=busy_timeout_ms) as index:
            index_ids(store, index, ids)
    except (IndexFailure, OSError, apsw.Error) as exc:
        pending.add(ids)
        return QueueReport(queued=tuple(ids), error=f"{type(exc).__name__}: {exc}")
    return QueueReport(indexed=tuple(ids))
