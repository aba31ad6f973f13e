"""`memoir report`'s reading and writing: the card files, state/ logs in; one HTML file out.

Everything here is I/O around `index.report`'s pure planner. A log that cannot be read is named on
the page, never fatal: the page shows what could be read.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from memoir.cards.config import Settings
from memoir.cards.jsonl import JsonlError, read_jsonl
from memoir.cards.status import read_alarm_history, read_runs
from memoir.cards.store import CardStore, write_atomic
from memoir.flows.errors import FlowError
from memoir.flows.hook_calls import read_calls
from memoir.flows.hook_client import OUTCOMES
from memoir.flows.model_runs import read_model_runs
from memoir.index.recall_log import log_path
from memoir.index.report import ReportPage, hook_event, plan_report, recall_event, render_report

REPORT_FILE = "report.html"


class ReportError(FlowError):
    """The report cannot be made or written; says where and what to do."""


def default_path(settings: Settings) -> Path:
    return Path(settings.home) / REPORT_FILE


def _log_lines(paths: list[Path], problems: list[str]) -> list[dict]:
    out: list[dict] = []
    for path in paths:
        try:
            out.extend(read_jsonl(path))
        except JsonlError as exc:
            problems.append(str(exc))
    return out


def build_report(settings: Settings, now: datetime) -> ReportPage:
    """Read the library and the state logs, then plan the page."""
    if not Path(settings.home).is_dir():
        raise ReportError(f"no memoir home at {settings.home}; run `memoir run` first, or pass the right --home")
    store = CardStore(settings.cards_dir, settings.state_dir)
    cards, problems = store.load_all()
    try:
        runs = read_runs(settings.state_dir)
        alarms = read_alarm_history(settings.state_dir)
    except JsonlError as exc:
        problems.append(str(exc))
        runs, alarms = [], []
    recall_log = log_path(settings.state_dir)
    recalls = _log_lines([recall_log.with_name(recall_log.name + ".1"), recall_log], problems)
    recall_events = [e for e in map(recall_event, recalls) if e is not None]
    hook_events = [e for e in (hook_event(c, OUTCOMES) for c in read_calls(str(settings.state_dir))) if e]
    # The model stage's record of a run carries the run record's own `finished`, so they pair up.
    alerts = {str(m.get("finished")): [str(a) for a in m.get("alerts") or ()] for m in read_model_runs(settings.state_dir)}
    return plan_report(
        cards, {c.id: store.path_for(c.id) for c in cards}, runs, now=now, home=str(settings.home),
        cards_dir=str(settings.cards_dir), alarm_history=alarms, recalls=recall_events,
        hook_calls=hook_events, hook_outcomes=OUTCOMES, unreadable=problems, run_alerts=alerts,
        recall_records=recalls,
    )


def write_report(settings: Settings, out: Path | None, now: datetime) -> tuple[Path, ReportPage]:
    """Render the page and write it atomically; returns where it went and what it holds."""
    report = build_report(settings, now)
    path = Path(out).expanduser().absolute() if out else default_path(settings)
    if path.is_dir():
        path = path / REPORT_FILE
    try:
        write_atomic(path, render_report(report))
    except OSError as exc:
        raise ReportError(f"cannot write {path}: {exc}; pass --out with a writable path") from exc
    return path, report
