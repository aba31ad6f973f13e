"""The overflow queue: work the hot path could not finish, kept as plain files until a replay.

One JSON item per file under `queue_dir/{pending,claimed,done}/`; an item moves between those
folders by atomic rename, so a crash leaves it in exactly one of them. The file name is
`<kind>--<key>.json` (the key is a card or batch id), which makes adding idempotent by key: a
second add for the same key replaces the pending item instead of doubling it. Items hold
sanitized content only (rendered card text, sanitized turns, card ids), never raw log text.

A hot path calls `add` and moves on; nothing here retries. `memoir replay` claims items, applies
each, and completes or fails it; a claimed item whose worker died is reclaimed after a timeout.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from memoir.cards.sanitize.fields import sanitize_value
from memoir.cards.private import make_private_dir
from memoir.cards.store import remove_temp_files, write_atomic
from memoir.flows.errors import FlowError

KINDS = ("card_write", "index_update", "distill_batch")
STATES = ("pending", "claimed", "done")
_SAFE_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,150}$")  # a key becomes a file name: no paths
MAX_ERROR_CHARS = 500  # the last error is for a person to read, not a traceback archive


class QueueError(FlowError):
    """A queue item cannot be added or read; the message says which file and why."""


@dataclass(frozen=True, slots=True)
class QueueItem:
    """One unit of deferred work. `payload` is kind-specific and already sanitized."""

    kind: str
    key: str
    payload: dict
    created: float
    attempts: int = 0
    last_error: str = ""
    updated: float = 0.0

    @property
    def name(self) -> str:
        return f"{self.kind}--{self.key}.json"

    def to_json(self) -> str:
        """The item file's text; every string in it sanitized, whatever sanitized the payload before."""
        return json.dumps(sanitize_value(asdict(self)), sort_keys=True, ensure_ascii=False) + "\n"

    @classmethod
    def from_file(cls, path: Path) -> QueueItem:
        """The item in `path`, sanitized again: a file an older memoir queued raw is written clean on replay."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(**sanitize_value(data))
        except (OSError, ValueError, TypeError, RecursionError) as exc:
            raise QueueError(f"queue item {path} cannot be read ({exc}); move it aside and rerun") from exc


class OverflowQueue:
    """The queue folders under `root` (settings.queue_dir).

    Args:
        root: the queue directory; kept outside cards/ and index/ so a read-only card directory
            or a broken index never blocks queueing.
        claim_timeout_s: a claimed item untouched for this long belongs to a dead worker.
    """

    def __init__(self, root: Path, claim_timeout_s: float = 1800.0):
        self.root = Path(root)
        self.claim_timeout_s = claim_timeout_s

    def _dir(self, state: str) -> Path:
        return self.root / state

    def add(self, kind: str, key: str, payload: dict, error: str = "") -> QueueItem:
        """Queue one item (replacing a pending item with the same kind and key); never retries.

        `error` is why the work could not be done now; it shows as `last_error` until a replay.
        """
        if kind not in KINDS:
            raise QueueError(f"unknown queue kind {kind!r}; known: {', '.join(KINDS)}")
        if not _SAFE_KEY.match(key):
            raise QueueError(f"queue key {key!r} is not a plain id")
        now = time.time()
        item = QueueItem(kind=kind, key=key, payload=payload, created=now, updated=now,
                         last_error=error[:MAX_ERROR_CHARS])
        write_atomic(self._dir("pending") / item.name, item.to_json())
        return item

    def names(self, state: str = "pending", kind: str | None = None) -> list[str]:
        """Item file names in one folder, oldest first (ignores temp files of a killed write)."""
        folder = self._dir(state)
        if not folder.is_dir():
            return []
        entries = []
        for entry in os.scandir(folder):
            if entry.name.startswith(".") or not entry.name.endswith(".json"):
                continue
            if kind is not None and not entry.name.startswith(f"{kind}--"):
                continue
            try:
                entries.append((entry.stat().st_mtime, entry.name))
            except FileNotFoundError:  # claimed by another worker meanwhile
                continue
        return [name for _, name in sorted(entries)]

    def items(self, state: str = "pending", kind: str | None = None) -> list[QueueItem]:
        out = []
        for name in self.names(state, kind):
            try:
                out.append(QueueItem.from_file(self._dir(state) / name))
            except QueueError:
                if (self._dir(state) / name).exists():
                    raise
        return out

    def claim(self, name: str) -> QueueItem | None:
        """Move one pending item to claimed/ and return it; None when another worker got it first."""
        src, dst = self._dir("pending") / name, self._dir("claimed") / name
        make_private_dir(dst.parent)
        try:
            os.rename(src, dst)
        except FileNotFoundError:
            return None
        os.utime(dst)  # the claim time: reclaiming measures from here
        return QueueItem.from_file(dst)

    def complete(self, item: QueueItem) -> None:
        """The item was applied: keep it under done/ (a record, never replayed again)."""
        dst = self._dir("done") / item.name
        make_private_dir(dst.parent)
        os.replace(self._dir("claimed") / item.name, dst)

    def fail(self, item: QueueItem, error: str, payload: dict | None = None) -> QueueItem:
        """Back to pending with one more attempt and the error; applied again only by a later replay."""
        failed = replace(item, attempts=item.attempts + 1, last_error=error[:MAX_ERROR_CHARS],
                         updated=time.time(), payload=item.payload if payload is None else payload)
        claimed, pending = self._dir("claimed") / item.name, self._dir("pending") / item.name
        if pending.exists():
            # A newer item with the same key was queued meanwhile; it supersedes this one.
            claimed.unlink(missing_ok=True)
            return failed
        write_atomic(claimed, failed.to_json())
        os.replace(claimed, pending)
        return failed

    def reclaim_stale(self, older_than_s: float | None = None, now: float | None = None) -> list[str]:
        """Claimed items whose worker died (claimed longer ago than the timeout) go back to pending."""
        limit = self.claim_timeout_s if older_than_s is None else older_than_s
        now = time.time() if now is None else now
        back = []
        for name in self.names("claimed"):
            path = self._dir("claimed") / name
            try:
                if now - path.stat().st_mtime < limit:
                    continue
                if (self._dir("pending") / name).exists():
                    path.unlink()  # a newer pending item with this key supersedes the dead claim
                else:
                    os.rename(path, self._dir("pending") / name)
            except FileNotFoundError:
                continue
            back.append(name)
        return back

    def depth(self) -> dict[str, dict[str, int]]:
        """Item counts by state and kind."""
        out: dict[str, dict[str, int]] = {}
        for state in STATES:
            counts = Counter(name.split("--", 1)[0] for name in self.names(state))
            out[state] = {kind: counts.get(kind, 0) for kind in KINDS}
        return out

    def clean_temp_files(self) -> int:
        """Remove temp files a killed write left behind (call only under the run lock)."""
        return sum(remove_temp_files(self._dir(state)) for state in STATES)


def queue_report(queue_dir: Path, pending_index_ids: int = 0) -> dict:
    """For `memoir status`: pending depth by kind, claimed count, oldest pending item, failing items.

    Args:
        queue_dir: settings.queue_dir.
        pending_index_ids: ids on the index's own pending list (index/pending.py), shown under
            `index_update` so an operator sees one number per kind.
    """
    queue = OverflowQueue(queue_dir)
    depth = queue.depth()
    pending = depth["pending"]
    pending["index_update"] += pending_index_ids
    items = queue.items("pending")
    oldest = min(items, key=lambda i: i.created, default=None)
    return {
        "pending": pending,
        "pending_total": sum(pending.values()),
        "claimed": sum(depth["claimed"].values()),
        "done": sum(depth["done"].values()),
        "oldest_pending": None if oldest is None else {
            "kind": oldest.kind, "key": oldest.key, "age_s": round(time.time() - oldest.created),
            "attempts": oldest.attempts, "last_error": oldest.last_error,
        },
        "failing": sorted(f"{i.kind}:{i.key} ({i.attempts}x: {i.last_error})" for i in items if i.attempts),
    }
