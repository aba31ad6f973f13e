"""Recall's memory of a host session: the card ids already injected into it, so none comes twice.

One small JSON file per session under `state/recall-sessions/`, replaced atomically; sessions
untouched for `SESSION_TTL_S` are pruned.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable
from pathlib import Path

from memoir.cards.private import make_private_dir, open_private
from memoir.index.files import RECALL_SESSIONS_DIR

SESSION_TTL_S = 3 * 24 * 3600  # per-session injected ids are pruned after this long untouched


def session_path(state_dir: Path, session_id: str) -> Path:
    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return Path(state_dir) / RECALL_SESSIONS_DIR / f"{digest}.json"


def injected_in_session(state_dir: Path, session_id: str) -> frozenset[str]:
    """Card ids already injected into this host session (empty without a session id)."""
    if not session_id:
        return frozenset()
    try:
        data = json.loads(session_path(state_dir, session_id).read_text(encoding="utf-8"))
        return frozenset(data.get("injected", {}))
    except (OSError, ValueError, AttributeError):
        return frozenset()


def remember_injected(state_dir: Path, session_id: str, ids: Iterable[str], now: float | None = None) -> None:
    """Add ids to the session's file (small JSON, atomic replace) and prune sessions gone quiet."""
    ids = list(ids)
    if not session_id or not ids:
        return
    now = time.time() if now is None else now
    path = session_path(state_dir, session_id)
    make_private_dir(path.parent)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    injected = dict(data.get("injected", {}))
    injected.update({i: round(now, 3) for i in ids})
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    fd = open_private(tmp, os.O_WRONLY | os.O_TRUNC)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"injected": injected}, sort_keys=True))
    os.replace(tmp, path)
    prune_sessions(state_dir, now)


def prune_sessions(state_dir: Path, now: float) -> int:
    gone = 0
    for p in (Path(state_dir) / RECALL_SESSIONS_DIR).glob("*.json"):
        try:
            if now - p.stat().st_mtime > SESSION_TTL_S:
                p.unlink()
                gone += 1
        except OSError:
            pass
    return gone
