"""Each card as it was parsed, stored beside its row, so recall need not parse the file again.

Parsing a card file's YAML front matter was ~40 % of a warm recall's CPU, and a library of 100k
cards answers most prompts with cards no earlier prompt read. The index therefore keeps every card
it indexed, compressed JSON, with the hash of the file it was parsed from. The file stays the
source of truth: recall reads its bytes and hashes them (~20 us), and takes the stored card only
when that hash is the stored one; a hand edit, a rewrite or a half-synced index makes it parse the
file instead. An index written before this table existed has none and parses, as before; so does
a stored card another version of the card parser (cards/store.py, cards/values.py) made, until the
next sync stores every card again (after an upgrade every stored card is another parser's, and
recall parsed every file: four times the cost of a stored card).

Each stored card is sealed: the row keeps, beside the file hash, an HMAC of that hash and the blob
under a key the index folder holds (`fields.key`, 0600, outside `index.db`). A row edited inside the
database (another tool, a copied or tampered index) no longer matches its seal and is never used:
recall parses the card file instead, so what is injected is always what the file says.

Imports neither numpy nor sqlite-vec: the lexical-only recall reads it too.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import zlib
from collections.abc import Iterable
from dataclasses import fields
from pathlib import Path

import memoir.cards.store as card_store
import memoir.cards.values as card_values

from memoir.cards.sanitize.scan import contains_sensitive
from memoir.cards.values import Card, Source
from memoir.index.apsw_errors import apsw

# The index meta key naming the card parser every stored card was made by; a new index starts with
# today's, and a sync after an upgrade stores every card again (`sync.restamp_fields`).
STAMP_KEY = "card_parser"
TABLE_SQL = ("CREATE TABLE IF NOT EXISTS card_fields "
             "(n INTEGER PRIMARY KEY, file_hash TEXT NOT NULL, fields BLOB NOT NULL)")
_NAMES = tuple(f.name for f in fields(Card))
_TUPLES = ("topics", "supersedes")
MAX_BIND = 900  # SQLite's 999-variable limit, with room to spare


KEY_NAME = "fields.key"
KEY_BYTES = 32


@functools.cache
def parser_stamp() -> str:
    """Which card parser made a stored card: a changed parser may read the same file otherwise."""
    h = hashlib.sha256(b"sealed rows\0")  # rows stored before seals existed are another parser's
    try:
        for module in (card_store, card_values):
            h.update(Path(module.__file__).read_bytes())
    except (OSError, TypeError):  # no source beside the code: the installed version names the parser
        from importlib.metadata import PackageNotFoundError, version  # deferred: start-up (rare path)

        try:
            h.update(f"memoir=={version('memoir')}".encode())
        except PackageNotFoundError:
            h.update(b"memoir, version unknown")
    return h.hexdigest()[:16]


def card_blob(card: Card) -> bytes | None:
    """The card as compressed JSON, or None when JSON cannot carry it exactly or it holds what the
    sanitizer would redact (then recall parses the file: a stored card must be the very card the
    file parses to, and the index holds no secret)."""
    data = {name: getattr(card, name) for name in _NAMES}
    data["sources"] = [s.to_dict() for s in card.sources]
    data["parser"] = parser_stamp()
    try:
        text = json.dumps(data, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return None  # a front-matter value JSON has no type for (a YAML date in `extra`)
    back = _card_of(json.loads(text))
    if back != card or back.extra != card.extra:
        return None
    if contains_sensitive(text):
        return None  # a secret a hand edit put in a card stays in its file: never copied into the index
    return zlib.compress(text.encode("utf-8"), 1)


@functools.lru_cache(maxsize=8)
def _key_of(path: str, stamp: tuple[int, int]) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(KEY_BYTES * 2)


def field_key(index_dir: Path | str, *, create: bool = False) -> bytes | None:
    """The index folder's sealing key (made, 0600, when `create` and missing); None when there is none
    or it cannot be read: then nothing stored is trusted and recall parses the card files."""
    path = os.path.join(os.fspath(index_dir), KEY_NAME)
    if create and not os.path.exists(path):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # another writer made it just now
        except OSError:
            return None
        else:
            with os.fdopen(fd, "wb") as fh:
                fh.write(os.urandom(KEY_BYTES))
    try:
        st = os.stat(path)
        key = _key_of(path, (st.st_mtime_ns, st.st_ino))
    except OSError:
        return None
    return key if len(key) == KEY_BYTES else None


def _conn_dir(conn) -> str | None:
    name = getattr(conn, "filename", "") or ""
    return os.path.dirname(name) if name else None


def seal(key: bytes, file_hash: str, blob: bytes) -> str:
    """`file_hash;mac`: what the row keeps, so a blob or hash edited inside the database is found out."""
    mac = hmac.new(key, file_hash.encode() + b"\0" + blob, hashlib.sha256).hexdigest()[:32]
    return f"{file_hash};{mac}"


def unsealed(key: bytes | None, kept: str, blob: bytes) -> str | None:
    """The file hash a sealed row names, or None when its seal does not match (or there is no key)."""
    file_hash, _, mac = kept.partition(";")
    if key is None or not mac:
        return None
    return file_hash if hmac.compare_digest(seal(key, file_hash, blob), kept) else None


def put_fields(cur, n: int, card: Card, file_hash: str) -> None:
    """Store `card` as parsed beside row `n`, sealed (or drop what was stored, when it cannot be stored
    exactly, or the index folder can hold no key)."""
    blob = card_blob(card)
    where = _conn_dir(cur.connection)
    key = field_key(where, create=True) if where else None
    if blob is None or key is None:
        cur.execute("DELETE FROM card_fields WHERE n = ?", (n,))
    else:
        cur.execute("INSERT OR REPLACE INTO card_fields (n, file_hash, fields) VALUES (?, ?, ?)",
                    (n, seal(key, file_hash, blob), blob))


def card_of_blob(blob: bytes) -> Card:
    """The inverse of `card_blob`; raises ValueError (or zlib.error) on a damaged blob or one
    another card parser made."""
    data = json.loads(zlib.decompress(blob))
    if data.get("parser") != parser_stamp():
        raise ValueError("stored by another card parser")
    return _card_of(data)


def _card_of(data: dict) -> Card:
    values = {name: data[name] for name in _NAMES if name in data}
    for name in _TUPLES:
        values[name] = tuple(values.get(name, ()))
    values["sources"] = tuple(Source.from_dict(s) for s in values.get("sources", ()))
    return Card(**values)


def stored_cards(conn, ids: Iterable[str]) -> dict[str, tuple[str, bytes]]:
    """Card id -> (file hash, blob) of the cards the index holds parsed; {} for an index without the
    table (written before it existed) or one another process is busy rewriting."""
    ids = list(dict.fromkeys(ids))
    out: dict[str, tuple[str, bytes]] = {}
    where = _conn_dir(conn)
    key = field_key(where) if where else None
    if key is None:
        return out  # nothing stored can be trusted: parse the files
    try:
        for start in range(0, len(ids), MAX_BIND):
            part = ids[start:start + MAX_BIND]
            sql = ("SELECT c.id, f.file_hash, f.fields FROM cards AS c JOIN card_fields AS f ON f.n = c.n "
                   f"WHERE c.id IN ({','.join('?' * len(part))})")
            for i, kept, blob in conn.execute(sql, tuple(part)):
                file_hash = unsealed(key, kept, bytes(blob))
                if file_hash is not None:  # a row edited inside the database is left out: its file is read
                    out[i] = (file_hash, blob)
    except apsw.Error:
        return {}  # no such table (an older index), or locked past the read timeout: parse the files
    return out
