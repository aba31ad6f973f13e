"""Codex CLI rollouts: `~/.codex/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl`.

Current format: every line is `{"timestamp", "type", "payload"}` with type session_meta,
turn_context, response_item, event_msg or compacted. Legacy format (2025): a first line
`{"id", "timestamp", "instructions", "git"}`, then bare items (`{"type": "message"|...}`) and
`{"record_type": "state"}` lines.

User and assistant text is written twice: a response_item message (the model's history, what a
resume replays) and an event_msg (the UI's replay stream, sometimes written before the item).
The response_item is canonical; user_message/agent_message/agent_reasoning events are counted as
`duplicate` and not emitted, so each text appears once whatever the order. Developer messages,
base instructions, AGENTS.md and environment context are host injections and are skipped.

Reasoning items (their summaries) are `thinking` turns. A compaction (`/compact`, or automatic)
is one `summary` turn: the `compacted` line, with the `context_compacted` event written beside it
counted as `duplicate`. Codex keeps no record of other slash commands (`/new` starts a new
rollout file). A turn the user interrupted (`turn_aborted`, reason "interrupted") is the user
text `[Request interrupted by user]`, the form Claude Code writes. update_plan keeps its whole
arguments JSON (steps and statuses); other calls' arguments are bounded.

The VS Code extension opens each user message with the IDE's context (`# Context from my IDE
setup:`, the active file, open tabs, a selection); what the user asked follows `## My request for
Codex:`, and that alone is the user's text (a preamble with no request is counted `ide_context`).
Codex 0.80 writes no task_started / task_complete and a turn_context before every model step: a
turn starts at its user message, as in every version, and turn_context only moves the workspace.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import PurePath

from memoir.cards.signals import exit_in
from memoir.cards.hosts.base import (
    TEXT_CHARS,
    TOOL_CALL_CHARS,
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

HOST = "codex"

_IGNORED_EVENTS = frozenset(
    {"token_count", "task_started", "task_complete", "agent_reasoning_raw_content",
     "exec_command_begin", "exec_command_end", "patch_apply_begin", "patch_apply_end",
     "mcp_tool_call_begin", "mcp_tool_call_end", "web_search_begin", "web_search_end",
     "turn_diff", "plan_update", "entered_review_mode", "exited_review_mode", "agent_reasoning_section_break",
     "background_event", "shutdown_complete", "session_configured", "stream_error", "get_history_entry_response",
     "item_completed", "item_started", "raw_response_item", "undo_started", "undo_completed"}
)
_IGNORED_ITEMS = frozenset({"ghost_snapshot", "compaction", "compaction_summary", "other"})
_ROLLOUT_UUID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$")
_ERROR_PREFIXES = ("error:", "tool call error", "apply_patch verification failed", "failed to ", "aborted")
_CWD_RE = re.compile(r"<environment_context>.*?<cwd>([^<]+)</cwd>", re.DOTALL)
_AGENTS_MD = "# AGENTS.md instructions"
_IDE_CONTEXT = "# Context from my IDE setup:"
_IDE_REQUEST = "## My request for Codex:"
_WHOLE_INPUT_TOOLS = frozenset({"update_plan"})  # the plan's steps and statuses tell when work is done
INTERRUPTED = "[Request interrupted by user]"


def _rollout_session_id(path: str) -> str:
    stem = PurePath(path).stem
    m = _ROLLOUT_UUID.search(stem)
    return m.group(1) if m else stem


def _message_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [as_str(b.get("text")) for b in content if isinstance(b, dict) and b.get("type") in ("input_text", "output_text", "text")]
    return "\n".join(p for p in parts if p)


def ide_request(text: str) -> str | None:
    """What the user asked in a VS Code message: the text after the IDE-context preamble.

    The text itself when it has no preamble; '' when the preamble holds no request.
    """
    if not text.lstrip().startswith(_IDE_CONTEXT):
        return text
    at = text.find(_IDE_REQUEST)
    return text[at + len(_IDE_REQUEST):].strip() if at >= 0 else ""


def _reasoning_text(payload: dict) -> str:
    parts: list[str] = []
    for key in ("summary", "content"):
        blocks = payload.get(key)
        if isinstance(blocks, list):
            parts += [as_str(b.get("text")) for b in blocks if isinstance(b, dict)]
    return "\n".join(p for p in parts if p)


def output_text_and_failed(output: object) -> tuple[str, bool]:
    """A tool output's text and whether the call failed (non-zero exit, error field, error text)."""
    failed = False
    if isinstance(output, dict):
        failed = output.get("success") is False or bool(output.get("error"))
        text = as_str(output.get("content")) or as_str(output.get("output")) or as_str(output.get("error"))
        if not text:
            text = _message_text(output.get("content"))
        output = text
    if not isinstance(output, str):
        output = "" if output is None else json.dumps(output, ensure_ascii=False)
    text = output
    if text.startswith("{") and '"metadata"' in text:
        try:
            inner = json.loads(text)
        except (ValueError, RecursionError):  # a tool may print anything: a too-deep output stays text
            inner = None
        if isinstance(inner, dict):
            meta = inner.get("metadata")
            code = meta.get("exit_code") if isinstance(meta, dict) else None
            failed = failed or (isinstance(code, int) and code != 0)
            text = as_str(inner.get("output")) or text
    head = text[:500]
    if exit_in(head.lower(), head):  # `Process exited with code 1`, `Exit code: 2`
        failed = True
    if text.lstrip()[:40].lower().startswith(_ERROR_PREFIXES):
        failed = True
    return text, failed


class _Reader(SessionReader):
    """Walks the parsed lines of one chunk (either format), emitting each text once."""

    host = HOST

    def __init__(self, path: str, carry: Carry, session_id: str) -> None:
        super().__init__(path, carry, session_id)
        self.last_ts: object = None  # legacy items carry no timestamp: they get the session's start

    def emit(self, ts: object, line: int, role: str, kind: str, text: str, tool_name: str = "",
             limit: int = TEXT_CHARS) -> None:
        self.add_turn(ts or self.last_ts, line, role, kind, text, tool_name, limit)

    def line(self, obj: dict, line: int) -> None:
        self.last_ts = obj.get("timestamp") or self.last_ts
        if "payload" in obj and "type" in obj:
            payload = obj.get("payload")
            if not isinstance(payload, dict):
                self.skipped["unknown_shape"] += 1
                return
            self.envelope(as_str(obj.get("type")), payload, obj.get("timestamp"), line)
        elif obj.get("record_type"):
            self.skipped["ignored_type"] += 1
        elif "instructions" in obj and "id" in obj:
            self.meta(obj)
        elif "type" in obj:
            self.item(obj, obj.get("timestamp"), line)
        else:
            self.skipped["unknown_shape"] += 1

    def meta(self, payload: dict) -> None:
        self.cwd = as_str(payload.get("cwd")) or self.cwd
        self.last_ts = payload.get("timestamp") or self.last_ts
        git = payload.get("git")
        if isinstance(git, dict):
            self.branch = as_str(git.get("branch")) or self.branch

    def envelope(self, kind: str, payload: dict, ts: object, line: int) -> None:
        if kind == "session_meta":
            self.meta(payload)
        elif kind == "turn_context":
            self.cwd = as_str(payload.get("cwd")) or self.cwd
        elif kind == "response_item":
            self.item(payload, ts, line)
        elif kind == "event_msg":
            self.event(payload, ts, line)
        elif kind == "compacted":
            self.emit(ts, line, "system", "summary", as_str(payload.get("message")) or "Conversation compacted")
        else:
            self.skipped["unknown_type"] += 1

    def item(self, p: dict, ts: object, line: int) -> None:
        kind = p.get("type")
        if kind == "message":
            role = p.get("role")
            text = _message_text(p.get("content"))
            if role == "user" and (m := _CWD_RE.search(text)):
                self.cwd = m.group(1).strip()
            if role == "user" and text.lstrip().startswith(_IDE_CONTEXT) and not (text := ide_request(text)):
                self.skipped["ide_context"] += 1  # the IDE's context alone: nothing the user asked
                return
            if role in ("user", "assistant") and not text.lstrip().startswith(_AGENTS_MD):
                self.emit(ts, line, role, "text", text)
            else:
                self.skipped["injected"] += 1
        elif kind == "reasoning":
            self.emit(ts, line, "assistant", "thinking", _reasoning_text(p))
        elif kind in ("function_call", "custom_tool_call"):
            name = as_str(p.get("name"))
            self.tool_names[as_str(p.get("call_id"))] = name
            args = p.get("arguments") if kind == "function_call" else p.get("input")
            limit = TEXT_CHARS if name in _WHOLE_INPUT_TOOLS else TOOL_CALL_CHARS
            self.emit(ts, line, "assistant", "tool_call", tool_call_text(name, args, limit), tool_name=name)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            text, failed = output_text_and_failed(p.get("output"))
            name = self.tool_names.get(as_str(p.get("call_id")), "")
            kind_ = "error" if failed else "tool_result"
            self.emit(ts, line, "tool", kind_, text, tool_name=name, limit=TOOL_RESULT_CHARS)
        elif kind in ("web_search_call", "local_shell_call"):
            action = p.get("action")
            name = "web_search" if kind == "web_search_call" else "local_shell"
            args = action if isinstance(action, dict) else {"status": as_str(p.get("status"))}
            self.emit(ts, line, "assistant", "tool_call", tool_call_text(name, args), tool_name=name)
        elif kind in _IGNORED_ITEMS:
            self.skipped["ignored_type"] += 1
        else:
            self.skipped["unknown_type"] += 1

    def event(self, p: dict, ts: object, line: int) -> None:
        kind = p.get("type")
        if kind in ("user_message", "agent_message", "agent_reasoning"):
            self.skipped["duplicate"] += 1
        elif kind == "context_compacted":
            if self.turns and self.turns[-1].kind == "summary":
                self.skipped["duplicate"] += 1  # the `compacted` line just before it is the same compaction
            else:
                self.emit(ts, line, "system", "summary", "Conversation compacted")
        elif kind == "turn_aborted":
            if p.get("reason") == "interrupted":
                self.emit(ts, line, "user", "text", INTERRUPTED)
            else:
                self.skipped["ignored_type"] += 1
        elif kind == "error":
            self.emit(ts, line, "system", "error", as_str(p.get("message")))
        elif kind in _IGNORED_EVENTS:
            self.skipped["ignored_type"] += 1
        else:
            self.skipped["unknown_type"] += 1


def _session_id(parsed: list[tuple[int, dict]], path: str) -> str:
    for _, obj in parsed[:5]:
        payload = obj.get("payload")
        if obj.get("type") == "session_meta" and isinstance(payload, dict) and as_str(payload.get("id")):
            return as_str(payload.get("id"))
        if "instructions" in obj and as_str(obj.get("id")):
            return as_str(obj.get("id"))
    return _rollout_session_id(path)


def _is_token_count(raw: bytes) -> bool:
    return b'"token_count"' in raw and b'"event_msg"' in raw[:200]


def read(data: bytes, path: str, start_line: int = 0, carry: Carry = Carry()) -> ReadReport:
    """Read the whole lines of a Codex rollout chunk (current or legacy format) into Turns."""
    lines, consumed = complete_lines(data)
    skipped: Counter = Counter()
    if consumed < len(data):
        skipped["partial_line"] += 1
    head, parsed = split_head(iter_json_lines(lines, start_line, skipped, _is_token_count), 5)
    session_id = carry.session_id or _session_id(head, path)
    reader = _Reader(path, carry, session_id)
    reader.read_lines(parsed)
    reader.skipped.update(skipped)
    return reader.result(consumed, len(lines))


# --- the host record -------------------------------------------------------------------------------
_ENVELOPE = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_BARE = frozenset({"message", "reasoning", "function_call", "function_call_output"})
_RAW_HEAD = re.compile(r'^\{"timestamp"\s*:\s*"[^"]*"\s*,\s*"type"\s*:\s*"(?:session_meta|response_item|event_msg|turn_context)"')


def wants(name: str) -> bool:
    return name.startswith("rollout-") and name.endswith(".jsonl")


def sniff_record(obj: dict) -> int:
    """4: a rollout envelope or an old rollout's header; 2: a bare item of an old rollout."""
    kind = obj.get("type")
    if kind in _ENVELOPE and "payload" in obj:
        return 4
    if "instructions" in obj and "id" in obj or obj.get("record_type") == "state":
        return 4
    return 2 if kind in _BARE and "sessionId" not in obj else 0


def sniff_raw(line: str) -> int:
    return 2 if _RAW_HEAD.search(line) else 0


RECORD = Host(
    name=HOST, read=read, wants=wants, sniff_record=sniff_record, sniff_raw=sniff_raw,
    root=".codex/sessions",
    shell_tools=frozenset({"shell", "exec_command", "local_shell", "shell_command", "container.exec"}),
    edit_tools=frozenset({"apply_patch"}),
    quiet_tools=frozenset({"web_search", "view_image"}),
    plan_tools=frozenset({"update_plan"}),
)
