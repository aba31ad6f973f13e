"""Card ids whose index update failed, kept on disk until a later run indexes them.

One small file per id under `state/pending-index/`: adding an id twice leaves one file (idempotent
by id), a crash mid-write leaves the old file or the new one (atomic rename), and a drained id's
file is removed only after its update succeeded, so each id is applied once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from memoir.cards.store import write_atomic

PENDING_DIR = "pending-index"
DRAIN_BATCH = 256  # ids per apply call: embedding is batched, a failure re-queues at most this many
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")  # an id is a file name: no paths


@dataclass(frozen=True, slots=True)
class DrainReport:
    """Ids applied and removed from the list, ids still pending, and why draining stopped."""

    applied: tuple[str, ...] = ()
    left: tuple[str, ...] = ()
    error: str = ""


class PendingIndex:
    """The durable list; `state_dir` is the settings' state directory."""

    def __init__(self, state_dir: Path):
        self.dir = Path(state_dir) / PENDING_DIR

    def _path(self, card_id: str) -> Path:
        if not _SAFE_ID.match(card_id):
            raise ValueError(f"not a card id: {card_id!r}")
        return self.dir / card_id

    def add(self, ids: Iterable[str]) -> None:
        for card_id in ids:
            write_atomic(self._path(card_id), card_id + "\n")

    def ids(self) -> list[str]:
        if not self.dir.is_dir():
            return []
        return sorted(p.name for p in self.dir.iterdir() if _SAFE_ID.match(p.name) and p.is_file())

    def __len__(self) -> int:
        return len(self.ids())

    def discard(self, ids: Iterable[str]) -> None:
        for card_id in ids:
            self._path(card_id).unlink(missing_ok=True)

    def drain(self, apply_fn: Callable[[list[str]], object], batch: int = DRAIN_BATCH) -> DrainReport:
        """Call `apply_fn` on pending ids in batches; a batch leaves the list only when it succeeded.

        The first failure stops the drain (the cause is still there; retrying in a loop on the hot
        path helps nobody): its ids and all later ones stay pending for the next run.
        """
        pending = self.ids()
        applied: list[str] = []
        for start in range(0, len(pending), batch):
            part = pending[start:start + batch]
            try:
                apply_fn(part)
            except Exception as exc:  # noqa: BLE001 - reported, and the ids stay for the next run
                return DrainReport(tuple(applied), tuple(pending[start:]), f"{type(exc).__name__}: {exc}")
            self.discard(part)
            applied.extend(part)
        return DrainReport(tuple(applied))
