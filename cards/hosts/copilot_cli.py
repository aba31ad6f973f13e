"""GitHub Copilot CLI sessions: `~/.copilot/session-state/<sessionId>/events.jsonl`.

One event per line, `{type, data, id, timestamp, parentId}`. `session.start` (or, in the older
flat `~/.copilot/session-state/<sessionId>.jsonl`, `session.resume`) carries the session id and
`context.cwd`; `user.message` is the user's prompt (the time block the CLI appends is dropped);
`assistant.message` is the reply with its `toolRequests[]`; `tool.execution_start` and
`tool.execution_complete` (`success`, `result`, `error`) are a call and its outcome; `abort` is
the user interrupting. Session, usage, turn and hook bookkeeping events are counted as
`ignored_type`.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import PurePath

from memoir.cards.hosts.base import (
    TOOL_RESULT_CHARS,
    Carry,
    Host,
    ReadReport,
    SessionReader,
    as_str,
    complete_lines,
    iter_json_lines,
    split_head,
    tool_call_text,
)

HOST = "copilot-cli"
_IGNORED_PREFIXES = ("session.", "assistant.turn_", "assistant.usage", "assistant.message_delta", "hook.",
                     "tool.execution_partial", "tool.execution_progress", "subagent.", "skill.")
INTERRUPTED = "[Request interrupted by user]"  # the words the other hosts' logs use for an abort


def _result_text(data: dict) -> str:
    result = data.get("result")
    if isinstance(result, dict):
        text = as_str(result.get("content")) or as_str(result.get("detailedContent"))
    else:
        text = as_str(result)
    error = data.get("error")
    if isinstance(error, dict):
        text = "\n".join(p for p in (text, as_str(error.get("message"))) if p)
    elif isinstance(error, str):
        text = "\n".join(p for p in (text, error) if p)
    return text


class _Reader(SessionReader):
    host = HOST

    def line(self, obj: dict, line: int) -> None:
        kind = as_str(obj.get("type"))
        data = obj.get("data")
        if not isinstance(data, dict):
            self.skipped["unknown_shape"] += 1
            return
        ts = obj.get("timestamp")
        if kind in ("session.start", "session.resume"):
            context = data.get("context")
            if isinstance(context, dict):
                self.cwd = as_str(context.get("cwd")) or self.cwd
                self.branch = as_str(context.get("branch")) or self.branch
            self.skipped["ignored_type"] += 1
        elif kind == "user.message":
            self.add_turn(ts, line, "user", "text", as_str(data.get("content")), uuid=as_str(obj.get("id")))
        elif kind == "assistant.reasoning":
            self.add_turn(ts, line, "assistant", "thinking", as_str(data.get("content")))
        elif kind == "assistant.message":
            self.add_turn(ts, line, "assistant", "text", as_str(data.get("content")), uuid=as_str(obj.get("id")))
            for request in data.get("toolRequests") or ():
                if isinstance(request, dict):
                    self.call(as_str(request.get("toolCallId")), as_str(request.get("name")),
                              request.get("arguments"), ts, line)
        elif kind == "tool.execution_start":
            self.call(as_str(data.get("toolCallId")), as_str(data.get("toolName")), data.get("arguments"), ts, line)
        elif kind == "tool.execution_complete":
            name = self.tool_names.get(as_str(data.get("toolCallId")), as_str(data.get("toolName")))
            failed = data.get("success") is False or bool(data.get("error"))
            self.add_turn(ts, line, "tool", "error" if failed else "tool_result", _result_text(data), name,
                          TOOL_RESULT_CHARS)
        elif kind == "abort":
            self.add_turn(ts, line, "user", "text", INTERRUPTED)
        elif kind.startswith(_IGNORED_PREFIXES):
            self.skipped["ignored_type"] += 1
        else:
            self.skipped["unknown_type"] += 1

    def call(self, call_id: str, name: str, arguments: object, ts: object, line: int) -> None:
        """A tool call once, whether it is announced in the reply, at its start, or both."""
        if call_id and call_id in self.tool_names:
            return
        if call_id:
            self.tool_names[call_id] = name
        self.add_turn(ts, line, "assistant", "tool_call", tool_call_text(name, arguments), name)


def _session_id(parsed: list[tuple[int, dict]], path: str) -> str:
    for _, obj in parsed[:5]:
        data = obj.get("data")
        if obj.get("type") in ("session.start", "session.resume") and isinstance(data, dict):
            if sid := as_str(data.get("sessionId")):
                return sid
    p = PurePath(path)
    return p.parent.name if p.name == "events.jsonl" else p.stem


def read(data: bytes, path: str, start_line: int = 0, carry: Carry = Carry()) -> ReadReport:
    """Read the whole lines of a Copilot CLI event log chunk into Turns."""
    lines, consumed = complete_lines(data)
    skipped: Counter = Counter()
    if consumed < len(data):
        skipped["partial_line"] += 1
    head, parsed = split_head(iter_json_lines(lines, start_line, skipped), 5)
    reader = _Reader(path, carry, carry.session_id or _session_id(head, path))
    reader.read_lines(parsed)
    reader.skipped.update(skipped)
    return reader.result(consumed, len(lines))


# --- the host record -------------------------------------------------------------------------------
_EVENT = re.compile(r"^(?:session|user|assistant|tool|hook|subagent|skill)\.[a-z_.]+$|^abort$")
_RAW_HEAD = re.compile(r'^\{"type"\s*:\s*"(?:session|user|assistant|tool)\.[a-z_.]+"\s*,\s*"data"\s*:')


def wants(name: str) -> bool:
    return name == "events.jsonl" or name.endswith(".jsonl")


def sniff_record(obj: dict) -> int:
    """4: the event envelope (a dotted type beside `data`, `id` and `parentId`)."""
    kind = obj.get("type")
    if isinstance(kind, str) and _EVENT.match(kind) and isinstance(obj.get("data"), dict) and "parentId" in obj:
        return 4
    return 0


def sniff_raw(line: str) -> int:
    return 2 if _RAW_HEAD.search(line) else 0


RECORD = Host(
    name=HOST, read=read, wants=wants, sniff_record=sniff_record, sniff_raw=sniff_raw,
    root=".copilot/session-state",
    shell_tools=frozenset({"bash", "powershell", "shell"}),
    edit_tools=frozenset({"str_replace_editor", "edit", "create", "write"}),
    quiet_tools=frozenset({"view", "read_bash", "glob", "grep", "report_intent", "fetch", "web_fetch"}),
    plan_tools=frozenset({"update_todo"}),
)
