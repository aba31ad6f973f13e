"""`memoir status` blocks for the model stage and the index, beside the card counts and the queue.

The model stage says honestly whether it is on, and what its last run counted and alerted;
the index block reads `memoir index check` without loading the model.
"""

from __future__ import annotations

import json
from pathlib import Path

from cards.config import Settings
from cards.status import StatusSection
from cards.store import CardStore, write_atomic

MODEL_RUNS = "model-runs.jsonl"
KEEP_MODEL_RUNS = 50  # enough history to see a model gone silent; the file stays small


def record_model_run(state_dir: Path, finished: str, model: str, counts: dict, alerts: list[str]) -> None:
    """Keep what the model stage did in this run (the run summary is printed, not stored)."""
    path = Path(state_dir) / MODEL_RUNS
    lines = read_model_runs(state_dir)[-(KEEP_MODEL_RUNS - 1):]
    lines.append({"finished": finished, "model": model, "counts": counts, "alerts": alerts})
    write_atomic(path, "".join(json.dumps(line, sort_keys=True) + "\n" for line in lines))


def read_model_runs(state_dir: Path) -> list[dict]:
    try:
        text = (Path(state_dir) / MODEL_RUNS).read_text(encoding="utf-8")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def model_section(settings: Settings) -> StatusSection:
    """On or off (and where), the last run's counts, and its alerts: "model silent" shows here."""
    state = (f"on: {settings.model_name or 'model'} at {settings.model_base_url}" if settings.model_enabled
             else "off: rule stage only (no model endpoint configured); cards are quality: rule")
    runs = read_model_runs(settings.state_dir)
    last = runs[-1] if runs else None
    lines = [f"model      {state}"]
    if last and last.get("counts"):
        lines.append("  last run " + ", ".join(f"{v} {k}" for k, v in sorted(last["counts"].items())))
    alerts = list(last.get("alerts", [])) if last else []
    lines += [f"  ALERT    {a} (runbooks/model-alive-no-output.md)" for a in alerts]
    return StatusSection("model", {"state": state, "enabled": settings.model_enabled, "last_run": last,
                                   "alerts": alerts}, tuple(lines))


def index_section(settings: Settings) -> StatusSection:
    """healthy / stale / corrupt, as `memoir index check` says; a stale or corrupt index is an alarm."""
    from index.check import check_index
    from index.embed import Embedder
    from index.pending import PendingIndex

    spec = Embedder()  # model id and dimension only; nothing is loaded
    store = CardStore(settings.cards_dir, settings.state_dir)
    health = check_index(settings.index_dir, store, spec.model_id, spec.dim,
                         pending=PendingIndex(settings.state_dir))
    line = f"index      {health.status}"
    if health.status != "healthy":
        advice = "`memoir index rebuild`" if health.status == "corrupt" else "`memoir run` or `memoir index rebuild`"
        line += f" — {'; '.join(health.problems[:2])}; fix: {advice} (runbooks/index-corruption.md)"
    return StatusSection("index", health.to_dict(), (line,))
