"""apsw's exceptions as the index's typed failures: no `apsw.Error` leaves the index floor."""

from __future__ import annotations

from pathlib import Path

from memoir.index.errors import IndexBusy, IndexCorrupt, IndexWriteFailed

try:
    import apsw
except ImportError:  # pragma: no cover - apsw is a hard dependency; connect() says what to do
    apsw = None


def translate(exc: BaseException, path: Path) -> Exception:
    """apsw's exception for a file, as the index's typed failure with a next step."""
    if apsw is not None and isinstance(exc, (apsw.CorruptError, apsw.NotADBError)):
        return IndexCorrupt(f"index {path} is damaged ({exc}); run `memoir index rebuild`")
    if apsw is not None and isinstance(exc, (apsw.BusyError, apsw.LockedError)):
        return IndexBusy(f"index {path} is locked by another process ({exc}); the card ids were "
                         "queued, `memoir replay` indexes them once the lock is gone")
    return IndexWriteFailed(f"index {path} cannot be written ({exc}); check disk space and "
                            "permissions, then `memoir replay`")
