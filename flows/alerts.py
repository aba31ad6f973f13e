"""Alerts a person sees: each new incident of a run or a replay goes to `alert_command`, once, as JSON on stdin.

`state/incidents.json` holds the incidents still open (cards/incidents.py `open_incidents` decides),
so a model that stays silent for a week alerts on the first night only. Every call of the command
is logged in `state/alerts.jsonl`; a command that fails, hangs or is missing is logged and noted in
the run summary, and never stops the run.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from memoir.cards.config import Settings
from memoir.cards.incidents import Incident, open_incidents, parse_line
from memoir.cards.jsonl import JsonlError, append_jsonl
from memoir.cards.sanitize.fields import sanitize_value
from memoir.cards.store import write_atomic
from memoir.flows.model_runs import record_model_run

OPEN_INCIDENTS = "incidents.json"
ALERT_LOG = "alerts.jsonl"
log = logging.getLogger("memoir.alerts")


@dataclass
class AlertReport:
    """What the alert step did: the new incidents, and a note for each alert that could not be sent."""

    new: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def read_open(state_dir: Path) -> dict[str, dict]:
    """The incidents still open after the last run; an unreadable file reads as none (alert again)."""
    try:
        data = json.loads((Path(state_dir) / OPEN_INCIDENTS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {}


def alert_payload(incident: Incident, settings: Settings, now: str) -> dict:
    """What the command reads on stdin: one JSON object, sanitized like every log line."""
    return sanitize_value({"incident": incident.name, "detail": incident.detail, "runbook": incident.runbook,
                           "line": incident.line, "at": now, "home": str(settings.home),
                           "machine": socket.gethostname()})


def send_alert(command: str, payload: dict, timeout_s: float) -> str:
    """Run `command` with the payload on stdin; returns "" when it exited 0, else what went wrong."""
    import subprocess  # deferred: start-up

    try:
        proc = subprocess.run(["/bin/sh", "-c", command], input=json.dumps(payload, sort_keys=True) + "\n",
                              capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout_s:g} s"
    except OSError as exc:
        return f"could not start: {exc}"
    if proc.returncode != 0:
        return f"exited {proc.returncode}: {(proc.stderr or proc.stdout).strip()[-300:]}"
    return ""


def utc_now() -> str:
    """Now, as run records write it (`runs.jsonl`'s `finished`)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def record_model_stage(settings: Settings, finished: str, model: str, counts: Mapping[str, int],
                       alerts: Sequence[str]) -> AlertReport:
    """The one path every model stage's incidents take (`memoir run`, the nightly flow, `memoir replay`):
    its counts and alert lines kept where `memoir status` reads them (`state/model-runs.jsonl`), the
    open incidents updated, and `alert_command` run for each new one."""
    record_model_run(settings.state_dir, finished, model, dict(counts), list(alerts))
    report = alert_new_incidents(settings, alerts, model_ran=counts.get("sent", 0) > 0, now=finished)
    if settings.alert_command:
        report.notes.extend(f"new incident {name}: alert_command run" for name in report.new)
    return report


def alert_new_incidents(settings: Settings, alert_lines: Sequence[str], model_ran: bool,
                        now: str | None = None) -> AlertReport:
    """Update the open incidents with this run's alert lines and send each new one to `alert_command`."""
    now = now or time.strftime("%Y-%m-%dT%H:%M:%S%z")
    raised = [i for i in map(parse_line, alert_lines) if i is not None]
    plan = open_incidents(read_open(settings.state_dir), raised, model_ran, now)
    report = AlertReport(new=[i.name for i in plan.new])
    write_atomic(Path(settings.state_dir) / OPEN_INCIDENTS, json.dumps(sanitize_value(plan.still_open),
                                                                      sort_keys=True, indent=1) + "\n")
    for incident in plan.new:
        if not settings.alert_command:
            continue
        error = sanitize_value(send_alert(settings.alert_command, alert_payload(incident, settings, now),
                                          settings.alert_timeout_s))
        record = {"at": now, "incident": incident.name, "ok": not error, "error": error}
        try:
            append_jsonl(Path(settings.state_dir) / ALERT_LOG, sanitize_value(record))
        except JsonlError as exc:
            report.notes.append(f"cannot log the alert: {exc}")
        if error:
            log.warning("alert_command for incident %s failed: %s", incident.name, error)
            report.notes.append(f"alert_command failed for incident {incident.name}: {error} "
                                f"(logged in {ALERT_LOG}; the run went on)")
    return report
