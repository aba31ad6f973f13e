"""`memoir index check`: is the index sound, and does it match the card files?

Corrupt (damaged file, missing tables, rows that fail their hashes or hold invalid UTF-8) needs a
rebuild; stale (cards changed since, another model) is fixed by the next run or a rebuild; missing
(card files, but no index file yet) is filled by the next run; none of them patches rows.
"Cannot open" (permission denied, a file where the folder should be) says nothing about the file's
contents: a rebuild would fail the same way, so it is never reported as corrupt.
"""

from __future__ import annotations

import os
import stat
from dataclasses import asdict, dataclass, field
from pathlib import Path

import apsw

from memoir.cards.store import CardFileError, CardStore
from memoir.index.db import TABLES, Index, connect, meta_problems, read_meta, tables
from memoir.index.files import INDEX_FILE
from memoir.index.errors import IndexBusy, IndexCorrupt, IndexFailure
from memoir.index.pending import PendingIndex
from memoir.index.plan import plan_index_changes
from memoir.index.sync import file_hashes, read_card_file

HEALTHY, STALE, CORRUPT, CANNOT_OPEN, MISSING = "healthy", "stale", "corrupt", "cannot_open", "missing"


@dataclass(frozen=True)
class IndexHealth:
    """The verdict plus the figures behind it; `problems` says what is wrong in words."""

    status: str
    problems: list[str] = field(default_factory=list)
    path: str = ""
    size_bytes: int = 0
    rows: int = 0
    card_files: int = 0
    missing: int = 0  # card files with no row
    changed: int = 0  # rows built from an older version of their file
    extra: int = 0  # rows whose file is gone
    unparseable: list[str] = field(default_factory=list)
    pending: int = 0
    model: str = ""
    model_mismatch: bool = False
    built_at: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


class _Spec:
    """Just the model's identity: checking never loads the model."""

    def __init__(self, model_id: str, dim: int):
        self.model_id, self.dim = model_id, dim

    def encode(self, texts):  # pragma: no cover - a check never embeds
        raise RuntimeError("index check does not embed")


def _file_size(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())


def unreachable(index_dir: Path, path: Path) -> str:
    """Why the index folder or file cannot be reached at all ("" when it can, or simply is not there)."""
    for target, kind in ((Path(index_dir), "folder"), (path, "file")):
        try:
            st = os.stat(target)
        except FileNotFoundError:
            return ""
        except OSError as exc:
            return f"cannot open the index {kind} {target}: {exc.strerror or exc}"
        if kind == "folder" and not stat.S_ISDIR(st.st_mode):
            return f"cannot open the index folder {target}: it is a file, not a folder"
    try:
        os.listdir(index_dir)  # SQLite needs the folder itself for its -wal and -shm files
    except OSError as exc:
        return f"cannot open the index folder {index_dir}: {exc.strerror or exc}"
    return ""


def check_index(index_dir: Path, store: CardStore, model_id: str, dim: int,
                *, pending: PendingIndex | None = None, busy_timeout_ms: int = 5000) -> IndexHealth:
    """Full check: SQLite integrity, schema, model, row hashes, then rows vs card files.

    Args:
        index_dir: directory holding the index file.
        store: the card files the index must reflect.
        model_id, dim: the current embedder's identity (`Embedder.model_id`, `.dim`).
        pending: the pending-index list; queued ids make the index stale.

    Raises:
        IndexBusy: another process holds the write lock past the busy timeout.
    """
    path = Path(index_dir) / INDEX_FILE
    hashes, unreadable = file_hashes(store)
    n_pending = len(pending) if pending is not None else 0
    base = dict(path=str(path), card_files=len(hashes), pending=n_pending)
    if why := unreachable(Path(index_dir), path):
        return IndexHealth(CANNOT_OPEN, [f"{why}; fix the permissions or move the file aside"], **base)
    if not path.exists():
        if not hashes:
            return IndexHealth(HEALTHY, [], **base)
        return IndexHealth(MISSING, [f"no index file at {path}; the next `memoir run` builds it, or run "
                                     "`memoir index rebuild`"], missing=len(hashes), **base)
    base["size_bytes"] = _file_size(path)
    try:
        conn = connect(path, busy_timeout_ms=busy_timeout_ms)
    except IndexCorrupt as exc:
        return IndexHealth(CORRUPT, [str(exc)], **base)
    except IndexFailure as exc:  # permission, read-only mount, apsw missing: not the file's fault
        return IndexHealth(CANNOT_OPEN, [str(exc)], **base)
    try:
        return _check_open(conn, path, store, hashes, unreadable, model_id, dim, base)
    except (apsw.BusyError, apsw.LockedError) as exc:
        # A writer holding the lock says nothing about damage: never let it read as corrupt.
        raise IndexBusy(f"index {path} is locked by another process ({exc}); check again when "
                        "the running `memoir run` or rebuild has finished") from exc
    except (apsw.CantOpenError, apsw.PermissionsError, apsw.ReadOnlyError, apsw.AuthError) as exc:
        return IndexHealth(CANNOT_OPEN, [f"cannot open {path}: {type(exc).__name__}: {exc}; fix the "
                                         "permissions"], **base)
    except apsw.Error as exc:
        return IndexHealth(CORRUPT, [f"reading {path} failed: {type(exc).__name__}: {exc}"], **base)
    except UnicodeDecodeError as exc:  # a stored text with bad bytes, past `verify`
        return IndexHealth(CORRUPT, [f"reading {path} failed: a stored text is not valid UTF-8 ({exc.reason})"],
                           **base)
    finally:
        conn.close()


def _check_open(conn, path, store, hashes, unreadable, model_id, dim, base) -> IndexHealth:
    present = tables(conn)
    if missing := [t for t in TABLES if t not in present]:
        return IndexHealth(CORRUPT, [f"tables missing: {', '.join(missing)}"], **base)
    meta = read_meta(conn)
    base.update(model=meta.get("model", ""), built_at=meta.get("built_at", ""))
    index = Index(conn, path, _Spec(model_id, dim))
    if damage := index.verify():
        return IndexHealth(CORRUPT, damage, rows=index.count(), **base)
    problems: list[str] = list(unreadable)
    mismatch = meta_problems(meta, model_id, dim)
    problems.extend(f"{p}; run `memoir index rebuild`" for p in mismatch)
    plan = plan_index_changes(hashes, index.hashes())
    # A file that does not parse cannot be indexed by any rebuild: name it, do not call it stale.
    bad: list[str] = []
    for card_id in plan.changed:
        try:
            read_card_file(store, card_id)
        except (OSError, UnicodeDecodeError, CardFileError) as exc:
            bad.append(str(exc))
    n_missing = len(plan.add)
    n_changed = len(plan.update)
    stale_files = len(plan.changed) - len(bad)
    if stale_files:
        problems.append(f"{stale_files} card files are newer than the index "
                        f"({n_missing} not indexed, {n_changed} changed); the next `memoir run` "
                        "indexes them, or run `memoir index rebuild`")
    if plan.remove:
        problems.append(f"{len(plan.remove)} index rows have no card file; the next `memoir run` drops them")
    if base["pending"]:
        problems.append(f"{base['pending']} card ids wait on the pending-index list; `memoir replay` applies them")
    problems.extend(f"card file does not parse: {b}" for b in bad)
    stale = bool(mismatch or stale_files or plan.remove or base["pending"])
    return IndexHealth(
        STALE if stale else HEALTHY, problems, rows=index.count(), missing=n_missing,
        changed=n_changed, extra=len(plan.remove), unparseable=bad, model_mismatch=bool(mismatch), **base,
    )
