"""GitHub Copilot CLI sessions: `~/.copilot/session-state/<sessionId>/events.jsonl`.

One event per line, `{type, data, id, timestamp, parentId}`. `session.start` (or, in the older
flat `~/.copilot/session-state/<sessionId>.jsonl`, `session.resume`) carries the session id and,
from 1.0 on, `context.cwd`; before that the working directory is only in the system prompt's
`<environment_context>` (`* Current working directory: …`). `user.message` is the user's prompt
(the time block the CLI appends is dropped; a slash command such as `/init` is read with the
request the CLI expanded it into, `transformedContent`, since that is what the agent worked on);
`assistant.message` is the reply with its `reasoningText` and `toolRequests[]`;
`tool.execution_start` and `tool.execution_complete` (`success`, `result`, `error`) are a call
and its outcome, an output ending in a non-zero `exit code` a failure; a `permission.completed`
the user denied is the call's (failed) outcome; `abort` is the user interrupting. Every other
event is counted under the reason `SKIPPED_EVENTS` gives it.
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
# Events that carry no work, by name, and the reason each is counted under.
SKIPPED_EVENTS = {
    # The host's own instructions to the model (sent again each prompt): not the user, not the work.
    "system.message": "system_prompt",
    # What a call asks leave to do: the call itself is read from its `tool.execution_start`.
    "permission.requested": "permission_request",
    # Bookkeeping: the session's own records, turn and usage markers, hooks the user configured
    # (their input repeats the call and result already read).
    "session.start": "ignored_type",  # read for the session id and the cwd
    "session.resume": "ignored_type",  # the same, in the older flat file
    "session.info": "ignored_type",
    "session.model_change": "ignored_type",
    "session.shutdown": "ignored_type",
    "assistant.turn_start": "ignored_type",
    "assistant.turn_end": "ignored_type",
    "assistant.usage": "ignored_type",
    "hook.start": "ignored_type",
    "hook.end": "ignored_type",
}
# Families of bookkeeping events newer versions add to (deltas, progress, subagents, skills).
_IGNORED_PREFIXES = ("session.", "assistant.turn_", "assistant.usage", "assistant.message_delta", "hook.",
                     "tool.execution_partial", "tool.execution_progress", "subagent.", "skill.")
INTERRUPTED = "[Request interrupted by user]"  # the words the other hosts' logs use for an abort
_EXIT = re.compile(r"<(?:exited with|shellId: [^<>\n]* completed with) exit code (-?\d+)>\s*$")
_CWD_LINE = re.compile(r"^\* Current working directory: (.+?)\s*$", re.M)
_SLASH = re.compile(r"^/[\w:.-]+(?: [^\n]*)?$")
_REMINDER = re.compile(r"<(current_datetime|system_reminder)>.*?(?:</\1>|\Z)", re.S)


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


def _failed(data: dict, text: str) -> bool:
    """A call that failed, or a command that ran and exited non-zero (the tool itself reports success)."""
    if data.get("success") is False or data.get("error"):
        return True
    m = _EXIT.search(text[-200:])
    return bool(m) and m.group(1) != "0"


def prompt_text(data: dict) -> str:
    """What the user asked: the typed text, or a slash command with the request it expanded into."""
    typed = as_str(data.get("content"))
    expanded = as_str(data.get("transformedContent"))
    if not expanded or not _SLASH.match(typed.strip()):
        return typed
    request = _REMINDER.sub("", expanded).strip()
    return f"{typed.strip()}\n\n{request}" if request and request != typed.strip() else typed


def environment_cwd(data: dict) -> str:
    """The working directory a system prompt's `<environment_context>` states, or ''."""
    content = as_str(data.get("content"))
    m = _CWD_LINE.search(content) if "<environment_context>" in content else None
    return m.group(1) if m else ""


def context_cwd(data: dict) -> str:
    """The working directory a `session.start` / `session.resume` records, else its repository root."""
    context = data.get("context")
    if not isinstance(context, dict):
        return ""
    return as_str(context.get("cwd")) or as_str(context.get("gitRoot"))


class _Reader(SessionReader):
    host = HOST

    def __init__(self, path: str, carry: Carry, session_id: str) -> None:
        super().__init__(path, carry, session_id)
        self.asked: dict[str, str] = {}  # permission request id → what the call meant to do

    def line(self, obj: dict, line: int) -> None:
        kind = as_str(obj.get("type"))
        data = obj.get("data")
        if not isinstance(data, dict):
            self.skipped["unknown_shape"] += 1
            return
        ts = obj.get("timestamp")
        if kind == "user.message":
            self.add_turn(ts, line, "user", "text", prompt_text(data), uuid=as_str(obj.get("id")))
        elif kind == "assistant.reasoning":
            self.add_turn(ts, line, "assistant", "thinking", as_str(data.get("content")))
        elif kind == "assistant.message":
            self.reply(data, ts, line, as_str(obj.get("id")))
        elif kind == "tool.execution_start":
            self.call(as_str(data.get("toolCallId")), as_str(data.get("toolName")), data.get("arguments"), ts, line)
        elif kind == "tool.execution_complete":
            name = self.tool_names.get(as_str(data.get("toolCallId")), as_str(data.get("toolName")))
            text = _result_text(data)
            self.add_turn(ts, line, "tool", "error" if _failed(data, text) else "tool_result", text, name,
                          TOOL_RESULT_CHARS)
        elif kind == "permission.completed":
            self.permission(data, ts, line)
        elif kind == "abort":
            self.add_turn(ts, line, "user", "text", INTERRUPTED)
        elif kind in SKIPPED_EVENTS:
            if kind in ("session.start", "session.resume"):
                self.cwd = context_cwd(data) or self.cwd
                self.branch = as_str((data.get("context") or {}).get("branch")) or self.branch
            elif kind == "system.message":
                self.cwd = self.cwd or environment_cwd(data)
            elif kind == "permission.requested":
                request = data.get("permissionRequest")
                if isinstance(request, dict):
                    self.asked[as_str(data.get("requestId"))] = as_str(request.get("intention"))
            self.skipped[SKIPPED_EVENTS[kind]] += 1
        elif kind.startswith(_IGNORED_PREFIXES):
            self.skipped["ignored_type"] += 1
        else:
            self.skipped["unknown_type"] += 1

    def reply(self, data: dict, ts: object, line: int, uuid: str) -> None:
        """The reply's reasoning, its words, then each call it announces."""
        if reasoning := as_str(data.get("reasoningText")):
            self.add_turn(ts, line, "assistant", "thinking", reasoning)
        requests = [r for r in data.get("toolRequests") or () if isinstance(r, dict)]
        content = as_str(data.get("content"))
        if content or not requests:  # a reply that only calls tools is not an empty message
            self.add_turn(ts, line, "assistant", "text", content, uuid=uuid)
        for request in requests:
            self.call(as_str(request.get("toolCallId")), as_str(request.get("name")), request.get("arguments"), ts, line)

    def permission(self, data: dict, ts: object, line: int) -> None:
        """A call the user let run is read from its own events; one the user denied ends there, failed."""
        result = data.get("result")
        verdict = as_str(result.get("kind")) if isinstance(result, dict) else ""
        if verdict.startswith("approved"):
            self.skipped["permission_granted"] += 1
            return
        name = self.tool_names.get(as_str(data.get("toolCallId")), "")
        what = self.asked.get(as_str(data.get("requestId"))) or name or "the call"
        self.add_turn(ts, line, "tool", "error", f"{what}: permission was rejected by the user ({verdict or 'denied'})",
                      name, TOOL_RESULT_CHARS)

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


def _head_cwd(parsed: list[tuple[int, dict]]) -> str:
    """The working directory the session's first events record, so its first prompt has it too."""
    found = ""
    for _, obj in parsed:
        data = obj.get("data")
        if not isinstance(data, dict):
            continue
        if obj.get("type") in ("session.start", "session.resume") and (cwd := context_cwd(data)):
            return cwd
        if obj.get("type") == "system.message":
            found = found or environment_cwd(data)
    return found


def read(data: bytes, path: str, start_line: int = 0, carry: Carry = Carry()) -> ReadReport:
    """Read the whole lines of a Copilot CLI event log chunk into Turns."""
    lines, consumed = complete_lines(data)
    skipped: Counter = Counter()
    if consumed < len(data):
        skipped["partial_line"] += 1
    head, parsed = split_head(iter_json_lines(lines, start_line, skipped), 5)
    reader = _Reader(path, carry, carry.session_id or _session_id(head, path))
    reader.cwd = _head_cwd(head) or reader.cwd
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
    quiet_tools=frozenset({"view", "read_bash", "read_powershell", "stop_powershell", "glob", "grep", "report_intent",
                           "think", "fetch", "web_fetch"}),
    plan_tools=frozenset({"update_todo"}),
)
