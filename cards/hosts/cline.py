"""Cline and Roo Code tasks: VS Code global storage `…/saoudrizwan.claude-dev/tasks/<taskId>/`.

A task folder holds `api_conversation_history.json` (the messages sent to the model: a JSON array
of `{role, content}` with text, tool_use and tool_result blocks, or, in older versions, tools
written as XML in the reply and results as `[tool for '…'] Result:` text) and `ui_messages.json`
(what the panel showed: `{ts, type: say|ask, say|ask: kind, text}`, tool and command details as
JSON inside `text`). The conversation history is read when it exists; `ui_messages.json` only
when it is the task's one record. Both files are written again whole, so each change is read from
the start. `api_req_started`, `error_retry`, `api_req_failed` and the like are bookkeeping. The
editor state Cline appends to each message (`<environment_details>`) is dropped, its working
directory kept as the session's cwd.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import PurePath

from memoir.cards.signals import exit_code
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

HOST = "cline"
API_HISTORY = "api_conversation_history.json"
UI_MESSAGES = "ui_messages.json"
_CWD = re.compile(r"Current Working Directory \(([^)\n]+)\)")
_XML_TOOLS = ("execute_command", "read_file", "write_to_file", "replace_in_file", "apply_diff", "search_files",
              "list_files", "list_code_definition_names", "browser_action", "use_mcp_tool", "access_mcp_resource",
              "ask_followup_question", "attempt_completion", "new_task", "plan_mode_respond", "insert_content",
              "search_and_replace")
_XML_CALL = re.compile(r"<(" + "|".join(_XML_TOOLS) + r")>(.*?)(?:</\1>|\Z)", re.DOTALL)
_XML_PARAM = re.compile(r"<([a-z_]+)>(.*?)</\1>", re.DOTALL)
_RESULT_HEAD = re.compile(r"^\[(\w+)(?: for [^\]]*)?\] Result:", re.M)
_CLINE_FAILED = re.compile(r"^(?:Command failed|Error executing|The tool execution failed)", re.M)  # Cline's own words
_BOOKKEEPING = frozenset({"api_req_started", "api_req_finished", "api_req_retried", "api_req_failed", "error_retry",
                          "api_req_retry_delayed", "checkpoint_saved", "checkpoint_created", "deleted_api_reqs",
                          "shell_integration_warning", "mcp_server_request_started", "mcp_server_response",
                          "resume_task", "resume_completed_task", "condense_context", "diff_error",
                          "auto_approval_max_req_reached", "browser_action_launch", "load_mcp_documentation"})


def _xml_calls(text: str) -> tuple[str, list[tuple[str, dict]]]:
    """A reply's prose and the tools it wrote as XML (`<execute_command><command>…`)."""
    calls = [(m.group(1), {k: v.strip() for k, v in _XML_PARAM.findall(m.group(2))}) for m in _XML_CALL.finditer(text)]
    return _XML_CALL.sub("", text).strip(), calls


class _Reader(SessionReader):
    host = HOST

    def note_cwd(self, text: str) -> None:
        if m := _CWD.search(text):
            self.cwd = self.cwd or m.group(1).strip()

    # --- api_conversation_history.json ---------------------------------------------------------
    def api_message(self, msg: dict, index: int) -> None:
        role = msg.get("role")
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if role not in ("user", "assistant") or not isinstance(blocks, list):
            self.skipped["unknown_shape"] += 1
            return
        ts = msg.get("ts")
        for block in blocks:  # the editor state may follow the text it belongs to: its cwd is the whole message's
            if isinstance(block, dict) and block.get("type") == "text":
                self.note_cwd(as_str(block.get("text")))
        for block in blocks:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                self.api_text(role, as_str(block.get("text")), ts, index)
            elif kind in ("thinking", "reasoning"):
                self.add_turn(ts, index, "assistant", "thinking", as_str(block.get("thinking")) or as_str(block.get("text")))
            elif kind == "tool_use":
                name = as_str(block.get("name"))
                self.tool_names[as_str(block.get("id"))] = name
                self.add_turn(ts, index, "assistant", "tool_call", tool_call_text(name, block.get("input")), name)
            elif kind == "tool_result":
                name = self.tool_names.get(as_str(block.get("tool_use_id")), "")
                body = block.get("content")
                text = body if isinstance(body, str) else "\n".join(
                    as_str(b.get("text")) for b in body if isinstance(b, dict)) if isinstance(body, list) else ""
                self.add_turn(ts, index, "tool", "error" if block.get("is_error") else "tool_result", text, name,
                              TOOL_RESULT_CHARS)

    def api_text(self, role: str, text: str, ts: object, index: int) -> None:
        self.note_cwd(text)
        if role == "assistant":
            prose, calls = _xml_calls(text)
            self.add_turn(ts, index, "assistant", "text", prose)
            for name, params in calls:
                if name == "attempt_completion":
                    self.add_turn(ts, index, "assistant", "text", params.get("result", ""))
                else:
                    self.add_turn(ts, index, "assistant", "tool_call", tool_call_text(name, params), name)
            return
        heads = list(_RESULT_HEAD.finditer(text))
        if not heads:
            self.add_turn(ts, index, "user", "text", re.sub(r"</?(?:task|feedback|answer)>", "", text))
            return
        for i, m in enumerate(heads):  # `[execute_command for 'npm test'] Result:` and what follows it
            body = text[m.end(): heads[i + 1].start() if i + 1 < len(heads) else len(text)]
            failed = bool(exit_code(body)) or bool(_CLINE_FAILED.search(body))
            self.add_turn(ts, index, "tool", "error" if failed else "tool_result", body, m.group(1), TOOL_RESULT_CHARS)

    # --- ui_messages.json ------------------------------------------------------------------------
    def ui_message(self, msg: dict, index: int) -> None:
        kind = as_str(msg.get("say")) or as_str(msg.get("ask"))
        text = as_str(msg.get("text"))
        ts = msg.get("ts")
        if kind in _BOOKKEEPING:
            self.skipped["ignored_type"] += 1
        elif kind in ("task", "user_feedback", "user_feedback_diff"):
            self.note_cwd(text)
            self.add_turn(ts, index, "user", "text", text)
        elif kind in ("text", "completion_result", "followup"):
            self.add_turn(ts, index, "assistant", "text", text)
        elif kind == "reasoning":
            self.add_turn(ts, index, "assistant", "thinking", text)
        elif kind == "command":
            self.add_turn(ts, index, "assistant", "tool_call", tool_call_text("execute_command", {"command": text}),
                          "execute_command")
        elif kind == "command_output":
            self.add_turn(ts, index, "tool", "tool_result", text, "execute_command", TOOL_RESULT_CHARS)
        elif kind in ("tool", "use_mcp_server"):
            try:
                detail = json.loads(text) if text.startswith("{") else {}
            except (ValueError, RecursionError):
                detail = {}
            name = as_str(detail.get("tool")) if isinstance(detail, dict) else ""
            self.add_turn(ts, index, "assistant", "tool_call", tool_call_text(name or kind, detail or text), name or kind)
        elif kind == "error":
            self.add_turn(ts, index, "system", "error", text)
        else:
            self.skipped["unknown_type"] += 1


def read(data: bytes, path: str, start_line: int = 0, carry: Carry = Carry()) -> ReadReport:
    """Read a whole task file (conversation history or UI messages) into Turns, numbered by message."""
    skipped: Counter = Counter()
    reader = _Reader(path, Carry(), PurePath(path).parent.name or PurePath(path).stem)
    try:
        messages = json.loads(data.decode("utf-8", errors="replace").lstrip("\ufeff"))
    except (ValueError, RecursionError):
        messages = None
    if not isinstance(messages, list):
        skipped["bad_json" if messages is None else "unknown_shape"] += 1
        messages = []
    handle = reader.ui_message if PurePath(path).name == UI_MESSAGES else reader.api_message
    for index, msg in enumerate(messages, start=1):
        if not isinstance(msg, dict):
            skipped["unknown_shape"] += 1
            continue
        try:
            handle(msg, index)
        except Exception as exc:  # noqa: BLE001 - one odd message must not lose the task
            skipped[line_error(exc)] += 1
    reader.skipped.update(skipped)
    return reader.result(len(data), data.count(b"\n") + 1)


# --- the host record -------------------------------------------------------------------------------
def wants(name: str) -> bool:
    return name in (API_HISTORY, UI_MESSAGES)


def companion(name: str) -> bool:
    """The task folder's other files: its metadata and context tracking, no conversation."""
    return name in ("task_metadata.json", "context_history.json")


def sniff_lines(lines: list[str], path: PurePath) -> bool:
    """A task file by its name, holding a JSON array (the shapes are too plain to tell apart alone)."""
    return path.name in (API_HISTORY, UI_MESSAGES) and lines[0].startswith("[")


RECORD = Host(
    name=HOST, read=read, wants=wants, sniff_lines=sniff_lines, companion=companion, whole_file=True,
    root=".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks",  # Roo Code: …/rooveterinaryinc.roo-cline/tasks
    shadowed_by=((UI_MESSAGES, API_HISTORY),),
    shell_tools=frozenset({"execute_command"}),
    edit_tools=frozenset({"write_to_file", "replace_in_file", "apply_diff", "insert_content", "search_and_replace",
                          "editedexistingfile", "newfilecreated"}),
    quiet_tools=frozenset({"read_file", "search_files", "list_files", "list_code_definition_names", "readfile",
                           "listfilestoplevel", "listfilesrecursive", "searchfiles", "ask_followup_question"}),
)
