"""Tiny builders for `Turn` literals, so pure-stage tests read like the sessions they describe."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from memoir.cards.values import Turn

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=timezone.utc)


class Script:
    """Append turns in order; `at` is minutes since T0."""

    def __init__(self, session_id: str = "s-1", host: str = "claude-code", cwd: str = "/home/dev/shop"):
        self.session_id, self.host, self.cwd = session_id, host, cwd
        self.turns: list[Turn] = []
        self.minute = 0.0

    def _add(self, role: str, kind: str, text: str, at: float | None, tool: str = "") -> Script:
        self.minute = self.minute + 0.5 if at is None else at
        seq = len(self.turns)
        self.turns.append(
            Turn(
                host=self.host, session_id=self.session_id, seq=seq, role=role, kind=kind, text=text,
                timestamp=T0 + timedelta(minutes=self.minute), tool_name=tool, cwd=self.cwd,
                git_branch="main", source_file=f"/logs/{self.session_id}.jsonl", line=seq + 1,
            )
        )
        return self

    def user(self, text: str, at: float | None = None) -> Script:
        return self._add("user", "text", text, at)

    def says(self, text: str, at: float | None = None) -> Script:
        return self._add("assistant", "text", text, at)

    def runs(self, command: str, at: float | None = None) -> Script:
        return self._add("assistant", "tool_call", f"Bash {command}", at, tool="Bash")

    def result(self, text: str, at: float | None = None) -> Script:
        return self._add("tool", "tool_result", text, at, tool="Bash")

    def calls(self, tool: str, args: str, at: float | None = None) -> Script:
        """A call of a host tool other than the shell (`Read`, `Grep`, `Edit`), `args` as its JSON."""
        return self._add("assistant", "tool_call", f"{tool} {args}", at, tool=tool)

    def got(self, tool: str, text: str, at: float | None = None) -> Script:
        """What that tool gave back."""
        return self._add("tool", "tool_result", text, at, tool=tool)

    def edits(self, path: str, old: str, new: str, at: float | None = None) -> Script:
        """An `Edit` of `path` (old → new) and the host's confirmation."""
        self._add("assistant", "tool_call", "Edit " + json.dumps({"file_path": path, "old_string": old, "new_string": new}),
                  at, tool="Edit")
        return self._add("tool", "tool_result", f"The file {path} has been updated.", None, tool="Edit")

    def error(self, text: str, at: float | None = None) -> Script:
        return self._add("tool", "error", text, at, tool="Bash")

    def summary(self, text: str = "Summary of earlier work.") -> Script:
        return self._add("system", "summary", text, None)
