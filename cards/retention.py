"""Retention for memoir's own logs: run records and the logs beside them keep `keep_runs` records
and `keep_days` days (settings), so a home run nightly for years stays small.

Pure core (`retained`) over parsed records, and one I/O edge (`prune_log`) that rewrites a log
atomically, only when something goes, and only from the run's record step, under the run lock
(the logs pruned here are written by runs alone). `now` is always a parameter.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from memoir.cards.jsonl import read_jsonl
from memoir.cards.store import write_atomic


@dataclass(frozen=True)
class Retention:
    """How much history to keep: the newest `keep_runs` records and `keep_days` days (0: no limit)."""

    keep_runs: int = 0
    keep_days: int = 0

    def cutoff(self, now: datetime) -> datetime | None:
        return now - timedelta(days=self.keep_days) if self.keep_days > 0 else None


def when(value: object) -> datetime | None:
    """A record's ISO time (a trailing Z or none read as UTC); None when it has none."""
    try:
        t = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def retained(records: Sequence[dict], time_key: str, policy: Retention, now: datetime,
             latest_per: str = "") -> list[dict]:
    """The records to keep, in their order: within the newest `keep_runs` and not older than `keep_days`.

    A record without a readable time is judged by count alone. With `latest_per`, the newest
    record of each value of that key is always kept (an alarm's standing state must not be lost).
    """
    cutoff = policy.cutoff(now)
    start = max(0, len(records) - policy.keep_runs) if policy.keep_runs > 0 else 0
    pinned = set()
    if latest_per:
        newest = {r.get(latest_per): i for i, r in enumerate(records)}
        pinned = set(newest.values())
    out = []
    for i, record in enumerate(records):
        t = when(record.get(time_key))
        young = cutoff is None or t is None or t >= cutoff
        if i in pinned or (i >= start and young):
            out.append(record)
    return out


def prune_log(path: Path, time_key: str, policy: Retention, now: datetime, latest_per: str = "") -> int:
    """Rewrite the log at `path` with only what `retained` keeps; returns how many records went."""
    records = read_jsonl(path)
    kept = retained(records, time_key, policy, now, latest_per)
    if len(kept) == len(records):
        return 0
    write_atomic(Path(path), "".join(json.dumps(r, sort_keys=True) + "\n" for r in kept))
    return len(records) - len(kept)


def prune_rotated(paths: Sequence[Path], policy: Retention, now: datetime) -> list[Path]:
    """Delete rotated logs (`hook.jsonl.1`, no longer appended to) last written before `keep_days`."""
    cutoff = policy.cutoff(now)
    gone = []
    for path in paths:
        try:
            old = cutoff is not None and datetime.fromtimestamp(path.stat().st_mtime, timezone.utc) < cutoff
        except OSError:
            continue
        if old:
            path.unlink(missing_ok=True)
            gone.append(path)
    return gone
