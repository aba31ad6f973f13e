"""OpenCode sessions: `~/.local/share/opencode/storage/{session,message,part}/…json`.

OpenCode keeps a session in many small files: `session/<projectID>/<sessionID>.json` (id,
title, `directory`, times), `message/<sessionID>/<messageID>.json` (role, times, `path.cwd`) and
`part/<messageID>/<partID>.json` (`text`, `reasoning`, `tool` with `state{status, input, output,
error}`, and step/patch/snapshot bookkeeping). The session file is the log memoir tracks: OpenCode
rewrites it whenever the session changes, and `assemble` (the one I/O here, read-only) gathers its
messages and parts into one JSON document that the pure `read` turns into Turns. Message and part
files met on their own are companions of a session, never read alone.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path, PurePath

from memoir.cards.hosts.base import (
    TOOL_RESULT_CHARS,
    Carry,
    Host,
    ReadReport,
    SessionReader,
    as_str,
    line_error,
    tool_call_text,
)

HOST = "opencode"
_BOOKKEEPING_PARTS = frozenset({"step-start", "step-finish", "snapshot", "patch", "agent", "retry", "compaction",
                                "subtask", "file"})
MAX_FILES = 100_000  # a session folder larger than this is cut: one session must not hold up the run


def _load(path: Path) -> dict | None:
    try:
        with open(path, "rb") as fh:  # read-only; OpenCode's own files are never changed
            obj = json.loads(fh.read())
    except (OSError, ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def _sorted_json(folder: Path) -> list[Path]:
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))[:MAX_FILES]
    except OSError:
        return []
    return [folder / n for n in names]


def assemble(path: str) -> bytes:
    """The session at `path` with its messages and their parts, as one JSON document (read-only)."""
    session_file = Path(path)
    storage = session_file.parent.parent.parent  # storage/session/<project>/<session>.json
    session = _load(session_file) or {}
    sid = as_str(session.get("id")) or session_file.stem
    messages: list[dict] = []
    unreadable = 0
    for msg_file in _sorted_json(storage / "message" / sid):
        msg = _load(msg_file)
        if msg is None:
            unreadable += 1
            continue
        parts = [p for p in (_load(f) for f in _sorted_json(storage / "part" / as_str(msg.get("id")))) if p is not None]
        msg["parts"] = parts
        messages.append(msg)
    return json.dumps({"session": session, "messages": messages, "unreadable": unreadable}).encode()


def _created(obj: dict) -> object:
    time = obj.get("time")
    return time.get("created") if isinstance(time, dict) else None


def _order(msg: dict) -> tuple[float, str]:
    created = _created(msg)
    return (created if isinstance(created, (int, float)) else 0.0, as_str(msg.get("id")))


class _Reader(SessionReader):
    host = HOST

    def message(self, msg: dict, index: int) -> None:
        role = msg.get("role")
        path = msg.get("path")
        if isinstance(path, dict):
            self.cwd = self.cwd or as_str(path.get("cwd"))
        ts = _created(msg)
        for part in msg.get("parts") or ():
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "text" and not part.get("synthetic"):
                self.add_turn(_created(part) or ts, index, "user" if role == "user" else "assistant", "text",
                              as_str(part.get("text")))
            elif kind == "reasoning":
                self.add_turn(_created(part) or ts, index, "assistant", "thinking", as_str(part.get("text")))
            elif kind == "tool":
                self.tool(part, ts, index)
            elif kind in _BOOKKEEPING_PARTS or part.get("synthetic"):
                self.skipped["ignored_type"] += 1
            else:
                self.skipped["unknown_type"] += 1
        if isinstance(msg.get("error"), dict):
            error = msg["error"]
            data = error.get("data")
            text = as_str(data.get("message")) if isinstance(data, dict) else ""
            self.add_turn(ts, index, "system", "error", text or as_str(error.get("name")))

    def tool(self, part: dict, ts: object, index: int) -> None:
        name = as_str(part.get("tool"))
        state = part.get("state") if isinstance(part.get("state"), dict) else {}
        self.add_turn(ts, index, "assistant", "tool_call", tool_call_text(name, state.get("input")), name)
        status = as_str(state.get("status"))
        if status in ("pending", "running"):
            self.skipped["tool_not_finished"] += 1
            return
        failed = status == "error"
        text = as_str(state.get("error")) if failed else as_str(state.get("output"))
        self.add_turn(ts, index, "tool", "error" if failed else "tool_result", text, name, TOOL_RESULT_CHARS)


def read(data: bytes, path: str, start_line: int = 0, carry: Carry = Carry()) -> ReadReport:
    """Read an assembled OpenCode session (see `assemble`) into Turns, numbered by message order."""
    skipped: Counter = Counter()
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        doc = None
    if not isinstance(doc, dict):
        skipped["bad_json"] += 1
        doc = {}
    session = doc.get("session") if isinstance(doc.get("session"), dict) else {}
    reader = _Reader(path, Carry(), as_str(session.get("id")) or PurePath(path).stem)
    reader.cwd = as_str(session.get("directory"))
    if isinstance(doc.get("unreadable"), int) and doc["unreadable"]:
        skipped["unreadable_message"] += doc["unreadable"]
    messages = [m for m in doc.get("messages") or () if isinstance(m, dict)]
    messages.sort(key=_order)
    for index, msg in enumerate(messages, start=1):
        try:
            reader.message(msg, index)
        except Exception as exc:  # noqa: BLE001 - one odd message must not lose the session
            skipped[line_error(exc)] += 1
    reader.skipped.update(skipped)
    return reader.result(len(data), len(messages))


# --- the host record -------------------------------------------------------------------------------
def wants(name: str) -> bool:
    return name.startswith("ses_") and name.endswith(".json")


def companion(name: str) -> bool:
    return name.startswith(("msg_", "prt_")) and name.endswith(".json")


def sniff_lines(lines: list[str], path: PurePath) -> bool:
    head = "\n".join(lines[:12])
    return lines[0].startswith("{") and path.parent.parent.name == "session" and '"projectID"' in head


RECORD = Host(
    name=HOST, read=read, wants=wants, sniff_lines=sniff_lines, companion=companion, assemble=assemble,
    whole_file=True, root=".local/share/opencode/storage/session",
    shell_tools=frozenset({"bash"}),
    edit_tools=frozenset({"edit", "write", "patch", "multiedit"}),
    quiet_tools=frozenset({"read", "glob", "grep", "list", "webfetch", "todoread"}),
    plan_tools=frozenset({"todowrite"}),
)
