"""A check sent to the background, and its result read later by id.

An agent host may move a long command to the background ("Command running in background with ID:
b57276d") and hand its result back later to a retrieval call that names the id (Claude Code's
`TaskOutput {"task_id": …}`, earlier `BashOutput {"bash_id": …}`). The start says nothing about how
the command ended; the retrieval's result does, with its own status and exit code. Without this
link the first failure of such a check is lost, and the card starts at the second one.
"""

from __future__ import annotations

import re

# The id a background start names: "… in background with ID: b57276d", "shell id bash_3 started".
_STARTED_ID = re.compile(r"\bbackground\b[^\n]{0,40}?\b(?:ID|id)[:\s]+([A-Za-z0-9_-]{3,64})")
_STATUS = re.compile(r"<status>\s*([a-z_]+)\s*</status>")
_EXIT = re.compile(r"<exit_code>\s*(-?\d+)\s*</exit_code>")
_FINISHED = frozenset({"completed", "failed", "killed", "error"})


def started_id(result_text: str) -> str:
    """The id a background start's result names, or ''."""
    m = _STARTED_ID.search(result_text[:400])
    return m.group(1) if m else ""


def task_verdict(text: str) -> tuple[bool, bool] | None:
    """(failed, passed) as a retrieval's result reports them: (False, False) while the command still runs;
    None when it says neither (then the output itself is read as any other result)."""
    head = text[:600]
    status = _STATUS.search(head)
    code = _EXIT.search(head)
    if code is not None:
        failed = int(code.group(1)) != 0
        return failed, not failed
    if status is not None:
        if status.group(1) not in _FINISHED:
            return False, False  # still running: no verdict yet
        failed = status.group(1) != "completed"
        return failed, not failed
    return None
