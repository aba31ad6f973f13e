"""The cards table of the index: its columns, its schema, and one card as a row of values.

`card_values` and `row_hash` decide what is stored; `row_of` reads a row back without its vector.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from memoir.cards.values import Card
from memoir.index.card_fields import TABLE_SQL as CARD_FIELDS_SQL
from memoir.index.places import PLACES_SQL
from memoir.index.plan import retrieval_text

MAX_BIND = 900  # SQLite's 999-variable limit, with room to spare

# (name, SQL type) of every cards column after the rowid, in order; `embedding` holds float32[dim].
CARD_COLUMNS = (
    ("id", "TEXT NOT NULL UNIQUE"),
    ("status", "TEXT NOT NULL"),
    ("quality", "TEXT NOT NULL"),
    ("topics", "TEXT NOT NULL"),  # JSON array
    ("task_type", "TEXT NOT NULL"),
    ("workspace", "TEXT NOT NULL"),
    ("created", "TEXT NOT NULL"),
    ("updated", "TEXT NOT NULL"),
    ("error_signature", "TEXT NOT NULL"),
    ("supersedes", "TEXT NOT NULL"),  # JSON array
    ("superseded_by", "TEXT NOT NULL"),
    ("conclusion_len", "INTEGER NOT NULL"),
    ("retrieval_text", "TEXT NOT NULL"),
    ("file_hash", "TEXT NOT NULL"),
    ("embedding", "BLOB NOT NULL"),
    ("row_hash", "TEXT NOT NULL"),  # sha256 of the row: `check` finds damage inside blobs too
)
COLUMNS = tuple(name for name, _ in CARD_COLUMNS)


def schema_sql(dim: int) -> str:
    cols = ",\n    ".join(f"{name} {kind}" for name, kind in CARD_COLUMNS)
    return f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS cards (
    n INTEGER PRIMARY KEY,
    {cols}
);
CREATE VIRTUAL TABLE IF NOT EXISTS vec_cards USING vec0(
    shard INTEGER PARTITION KEY,
    embedding_bq bit[{dim}]
);
CREATE VIRTUAL TABLE IF NOT EXISTS fts_cards USING fts5(
    retrieval_text,
    content='', contentless_delete=1,
    tokenize="unicode61 remove_diacritics 2 tokenchars '_'"
);
CREATE VIRTUAL TABLE IF NOT EXISTS fts_vocab USING fts5vocab(fts_cards, 'row');
{CARD_FIELDS_SQL};
{PLACES_SQL};
"""


@dataclass(frozen=True, slots=True)
class IndexRow:
    """One card as the index holds it (no vector); what recall gates and `check` look at."""

    id: str
    status: str
    quality: str
    topics: tuple[str, ...]
    task_type: str
    workspace: str
    created: str
    updated: str
    error_signature: str
    supersedes: tuple[str, ...]
    superseded_by: str
    conclusion_len: int
    retrieval_text: str
    file_hash: str


def card_values(card: Card, file_hash: str, vector: np.ndarray) -> tuple:
    """The cards-table values for one card, in `CARD_COLUMNS` order (row hash last)."""
    blob = np.ascontiguousarray(vector, dtype=np.float32).tobytes()
    values = (
        card.id, card.status, card.quality, json.dumps(list(card.topics)), card.task_type,
        card.workspace, card.created, card.updated, card.error_signature,
        json.dumps(list(card.supersedes)), card.superseded_by, len(card.conclusion.strip()),
        retrieval_text(card), file_hash, blob,
    )
    return values + (row_hash(values),)


def row_hash(values: Sequence) -> str:
    """sha256 over every column but the hash itself; the embedding blob enters as bytes."""
    h = hashlib.sha256()
    for v in values:
        h.update(v if isinstance(v, bytes) else str(v).encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def row_of(values: Sequence) -> IndexRow:
    d = dict(zip(COLUMNS, values))
    return IndexRow(
        id=d["id"], status=d["status"], quality=d["quality"], topics=tuple(json.loads(d["topics"])),
        task_type=d["task_type"], workspace=d["workspace"], created=d["created"],
        updated=d["updated"], error_signature=d["error_signature"],
        supersedes=tuple(json.loads(d["supersedes"])), superseded_by=d["superseded_by"],
        conclusion_len=int(d["conclusion_len"]), retrieval_text=d["retrieval_text"],
        file_hash=d["file_hash"],
    )


def chunks(seq: Sequence, size: int = MAX_BIND) -> Iterable[Sequence]:
    for i in range(0, len(seq), size):
        yield seq[i:i + size]
