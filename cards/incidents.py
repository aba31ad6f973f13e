"""Named incidents of the model stage, each pointing at the runbook page that diagnoses it.

An alert is one log line a person can grep for: `memoir incident <name>: <what happened>; runbook <page>`.
`memoir status` shows the same lines, so the wording is the interface.
"""

from __future__ import annotations

import logging
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


def raise_alert(name: str, detail: str) -> str:
    """Log the incident's alert line at WARNING and return it for the run summary."""
    incident = Incident(name, detail)
    log.warning(incident.line)
    return incident.line
