"""Named incidents of the model stage, each pointing at the runbook page that diagnoses it.

An alert is one log line a person can grep for: `memoir incident <name>: <what happened>; runbook <page>`.
`memoir status` shows the same lines, so the wording is the interface: `parse_line` reads one back.
`open_incidents` decides which incidents of a run are new, so a person is alerted once per incident
rather than once per night while the same model stays silent.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

RUNBOOK = "runbooks/model-alive-no-output.md"

# name -> (runbook page, anchor): every incident the model stage can raise has a page.
INCIDENTS = {
    "model_alive_no_output": (RUNBOOK, "#model-alive-no-output"),
    "all_outputs_discarded": (RUNBOOK, "#every-output-discarded-by-validation"),
    "input_truncated_to_empty": (RUNBOOK, "#input-truncated-to-empty"),
    "stale_batch_lock": (RUNBOOK, "#batch-left-locked-by-a-crashed-worker"),
    "endpoints_unavailable": (RUNBOOK, "#every-endpoint-unavailable"),
}

log = logging.getLogger("memoir.distill")


@dataclass(frozen=True, slots=True)
class Incident:
    """Something a person must look at; `line` is what goes to the log and to `memoir status`."""

    name: str
    detail: str

    @property
    def runbook(self) -> str:
        page, anchor = INCIDENTS[self.name]
        return page + anchor

    @property
    def line(self) -> str:
        return f"memoir incident {self.name}: {self.detail}; runbook {self.runbook}"


_LINE = re.compile(r"^memoir incident (?P<name>[a-z_]+): (?P<detail>.*); runbook \S+$", re.S)


def parse_line(line: str) -> Incident | None:
    """The incident an alert line names (None for a line of another shape or an unknown name)."""
    m = _LINE.match(line)
    if m is None or m["name"] not in INCIDENTS:
        return None
    return Incident(m["name"], m["detail"])


@dataclass(frozen=True)
class AlertPlan:
    """Which incidents of a run are new (alert a person), and the open set to keep until the next run."""

    new: tuple[Incident, ...]
    still_open: dict[str, dict]


def open_incidents(known: Mapping[str, dict], raised: Iterable[Incident], model_ran: bool, now: str) -> AlertPlan:
    """An incident is open from the run that first raises it until a run whose model stage answered
    without raising it; only the first of those runs alerts.

    `known`: name -> {"first_seen", "last_seen", "detail"} from the runs before. A run in which the
    model stage was not asked anything (`model_ran` False: no new experience) closes nothing.
    """
    raised = list(raised)
    names = {i.name for i in raised}
    still = {name: dict(v) for name, v in known.items() if name in names or not model_ran}
    new: list[Incident] = []
    for incident in raised:
        entry = still.get(incident.name)
        if entry is None:
            new.append(incident)
            still[incident.name] = {"first_seen": now, "last_seen": now, "detail": incident.detail}
        else:
            entry.update(last_seen=now, detail=incident.detail)
    return AlertPlan(tuple(new), dict(sorted(still.items())))


def raise_alert(name: str, detail: str) -> str:
    """Log the incident's alert line at WARNING and return it for the run summary."""
    incident = Incident(name, detail)
    log.warning(incident.line)
    return incident.line
