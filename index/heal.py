"""A damaged index file is set aside, never deleted, before a run rebuilds the index from card files
(a folder, link or pipe standing where the file belongs is set aside the same way).

The file that failed its check is renamed beside the live one (`index.db.corrupt-<UTC time>`,
its WAL with it) so whoever wonders why it broke can still look at it; only the newest
`KEEP_SET_ASIDE` are kept, so a disk that corrupts every night does not fill up with copies.
"""

from __future__ import annotations

import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

from memoir.cards.store import fsync_dir
from memoir.index.files import INDEX_FILE

KEEP_SET_ASIDE = 3
SET_ASIDE = f"{INDEX_FILE}.corrupt-"


def set_aside_name(now: datetime) -> str:
    return SET_ASIDE + now.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def set_aside(index_dir: Path, now: datetime | None = None) -> Path | None:
    """Rename the live index file (and its WAL) to `index.db.corrupt-<time>`; None when there is none.

    The shared-memory file is dropped: it only describes the WAL of a connection now gone.
    """
    index_dir = Path(index_dir)
    live = index_dir / INDEX_FILE
    if not live.exists() and not live.is_symlink():
        return None
    target = index_dir / set_aside_name(now or datetime.now(timezone.utc))
    n = 1
    while target.exists():  # two heals within a second
        target = target.with_name(f"{set_aside_name(now or datetime.now(timezone.utc))}.{n}")
        n += 1
    os.replace(live, target)
    wal = Path(f"{live}-wal")
    if wal.exists():
        os.replace(wal, Path(f"{target}-wal"))
    for side in (Path(f"{live}-shm"), Path(f"{live}-journal")):
        side.unlink(missing_ok=True)
    fsync_dir(index_dir)
    prune_set_aside(index_dir)
    return target


def prune_set_aside(index_dir: Path, keep: int = KEEP_SET_ASIDE) -> list[Path]:
    """Remove all but the newest `keep` set-aside files; returns what went."""
    kept = sorted((p for p in Path(index_dir).glob(SET_ASIDE + "*") if not p.name.endswith("-wal")),
                  key=lambda p: p.name, reverse=True)
    gone = kept[keep:]
    for path in gone:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)  # a folder that stood where the index file belongs
        else:
            path.unlink(missing_ok=True)
        Path(f"{path}-wal").unlink(missing_ok=True)
    return gone
