"""`state/model-runs.jsonl`: what the model stage did in each recent run, written by the run's record step.

The run summary is printed, not stored; this small log keeps the model stage's counts and alerts
so `memoir status` and `memoir report` can show a model gone silent.
"""

from __future__ import annotations

import json
from pathlib import Path

from memoir.cards.jsonl import JsonlError, read_jsonl
from memoir.cards.sanitize.fields import sanitize_value
from memoir.cards.store import write_atomic

MODEL_RUNS = "model-runs.jsonl"
KEEP_MODEL_RUNS = 50  # enough history to see a model gone silent; the file stays small


def record_model_run(state_dir: Path, finished: str, model: str, counts: dict, alerts: list[str]) -> None:
    """Keep what the model stage did in this run (the run summary is printed, not stored)."""
    path = Path(state_dir) / MODEL_RUNS
    lines = read_model_runs(state_dir)[-(KEEP_MODEL_RUNS - 1):]
    # An endpoint's error text can carry its URL with credentials: the log is sanitized like every other.
    lines.append(sanitize_value({"finished": finished, "model": model, "counts": counts, "alerts": alerts}))
    write_atomic(path, "".join(json.dumps(line, sort_keys=True) + "\n" for line in lines))


def read_model_runs(state_dir: Path) -> list[dict]:
    """What the model stage did in recent runs, oldest first; an unreadable log reads as none."""
    try:
        return read_jsonl(Path(state_dir) / MODEL_RUNS)
    except JsonlError:
        return []
