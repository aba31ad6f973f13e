"""Gemini CLI chats: `~/.gemini/tmp/<sha256 of the project path>/chats/session-<date>-<id8>.json`.

Gemini CLI saves a whole conversation as one JSON object (`sessionId`, `projectHash`,
`startTime`, `lastUpdated`, `messages[]`) and writes the file again, whole, after each message;
newer versions write the same records as JSON lines (a header line with `sessionId`, then one
message per line, a message re-written under its `id` as it grows). Either way the file is read
whole each time it changes, and the same session saved under several file names is one session:
its turns are numbered by message order, so a longer copy yields the same turns and more.

A message is `user` or `gemini` (`info`, `error` and `warning` are the CLI's own notices).
`thoughts[{subject, description}]` are hidden reasoning: `thinking` turns, never a conclusion.
`toolCalls[{id, name, args, result, status}]` are a call and its result (an error when the status
is not success). `<current_datetime>`-style context blocks never reach a card.
"""

from __future__ import annotations

import json
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
    line_error,
    tool_call_text,
)

HOST = "gemini-cli"
_MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
_FAILED = frozenset({"error", "cancelled", "canceled"})
_FILE_NAME = re.compile(r"^session-.*\.jsonl?$")


def parts_text(value: object) -> str:
    """Text of a `content` or tool `result`: a string, a part, or a list of parts (text, function responses)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return ""
    out: list[str] = []
    for part in value:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, dict):
            if isinstance(part.get("text"), str):
                out.append(part["text"])
            response = part.get("functionResponse")
            if isinstance(response, dict) and isinstance(response.get("response"), dict):
                body = response["response"]
                out.append(as_str(body.get("output")) or as_str(body.get("error"))
                           or json.dumps(body, ensure_ascii=False, sort_keys=True))
    return "\n".join(p for p in out if p)


def _records(data: bytes, skipped: Counter) -> tuple[dict, list[dict], int]:
    """(header, messages in order, lines) of either form; a later copy of a message id replaces it."""
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    try:
        whole = json.loads(text)
    except (ValueError, RecursionError):
        whole = None
    if isinstance(whole, dict):
        messages = whole.get("messages")
        return whole, [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else [], lines
    header: dict = {}
    by_id: dict[str, dict] = {}
    order: list[dict] = []
    raw_lines, _ = complete_lines(data if data.endswith(b"\n") else data + b"\n")
    for raw in raw_lines:
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            skipped["bad_json" if isinstance(exc, ValueError) else line_error(exc)] += 1
            continue
        if not isinstance(obj, dict):
            skipped["unknown_shape"] += 1
        elif "sessionId" in obj and "type" not in obj:
            header.update(obj)
        elif obj.get("type") in _MESSAGE_TYPES:
            mid = as_str(obj.get("id"))
            if mid and mid in by_id:
                by_id[mid].update(obj)  # the same message saved again as it grew
                skipped["message_update"] += 1
                continue
            if mid:
                by_id[mid] = obj
            order.append(obj)
        else:
            skipped["unknown_type"] += 1
    return header, order, lines


class _Reader(SessionReader):
    host = HOST

    def message(self, msg: dict, line: int) -> None:
        kind = msg.get("type")
        ts = msg.get("timestamp")
        text = parts_text(msg.get("content"))
        if kind == "user":
            self.add_turn(ts, line, "user", "text", text)
        elif kind == "gemini":
            for thought in msg.get("thoughts") or ():
                if isinstance(thought, dict):
                    said = ". ".join(p for p in (as_str(thought.get("subject")), as_str(thought.get("description"))) if p)
                    self.add_turn(thought.get("timestamp") or ts, line, "assistant", "thinking", said)
            if text:
                self.add_turn(ts, line, "assistant", "text", text)
            for call in msg.get("toolCalls") or ():
                if isinstance(call, dict):
                    self.tool_call(call, ts, line)
        elif kind == "error":
            self.add_turn(ts, line, "system", "error", text)
        else:
            self.skipped["cli_notice"] += 1  # info / warning: the CLI's own messages, not the work

    def tool_call(self, call: dict, ts: object, line: int) -> None:
        name = as_str(call.get("name")) or as_str(call.get("displayName"))
        self.add_turn(call.get("timestamp") or ts, line, "assistant", "tool_call", tool_call_text(name, call.get("args")), name)
        result = parts_text(call.get("result")) or as_str(call.get("resultDisplay"))
        failed = as_str(call.get("status")).lower() in _FAILED
        self.add_turn(call.get("timestamp") or ts, line, "tool", "error" if failed else "tool_result", result, name,
                      TOOL_RESULT_CHARS)


def _session_id(header: dict, path: str) -> str:
    return as_str(header.get("sessionId")) or PurePath(path).stem


def read(data: bytes, path: str, start_line: int = 0, carry: Carry = Carry()) -> ReadReport:
    """Read a whole Gemini CLI chat file (JSON or JSON lines) into Turns, numbered by message order."""
    skipped: Counter = Counter()
    header, messages, lines = _records(data, skipped)
    reader = _Reader(path, Carry(), _session_id(header, path))
    for index, msg in enumerate(messages, start=1):
        if msg.get("type") not in _MESSAGE_TYPES:
            reader.skipped["unknown_type"] += 1
            continue
        try:
            reader.message(msg, index)  # a message's place in the session stands in for a line number
        except Exception as exc:  # noqa: BLE001 - one odd message must not lose the rest of the chat
            reader.skipped[line_error(exc)] += 1
    reader.skipped.update(skipped)
    return reader.result(len(data), lines)


# --- the host record -------------------------------------------------------------------------------
def wants(name: str) -> bool:
    return bool(_FILE_NAME.match(name))


def companion(name: str) -> bool:
    """`logs.json` beside the chats folder: the CLI's own list of prompts, a copy of what the chats hold."""
    return name == "logs.json"


def sniff_lines(lines: list[str], path: PurePath) -> bool:
    """A pretty-printed or one-line chat: its first lines hold `projectHash` beside `sessionId`."""
    head = "\n".join(lines[:8])
    return lines[0].startswith("{") and '"projectHash"' in head and '"sessionId"' in head


def sniff_record(obj: dict) -> int:
    return 4 if "projectHash" in obj and "sessionId" in obj else 0


RECORD = Host(
    name=HOST, read=read, wants=wants, sniff_lines=sniff_lines, sniff_record=sniff_record, companion=companion,
    root=".gemini/tmp", whole_file=True,
    shell_tools=frozenset({"run_shell_command"}),
    edit_tools=frozenset({"replace", "write_file", "edit"}),
    quiet_tools=frozenset({"read_file", "read_many_files", "glob", "search_file_content", "list_directory",
                           "web_fetch", "google_web_search", "save_memory"}),
    plan_tools=frozenset({"write_todos"}),
)
