"""Cline and Roo Code tasks: VS Code global storage `…/saoudrizwan.claude-dev/tasks/<taskId>/`.

A task folder holds `api_conversation_history.json` (the messages sent to the model: a JSON array
of `{role, content}` with text, tool_use and tool_result blocks, or, in older versions, tools
written as XML in the reply and results as `[tool for '…'] Result:` text) and `ui_messages.json`
(what the panel showed: `{ts, type: say|ask, say|ask: kind, text}`, tool and command details as
JSON inside `text`). The conversation history is read when it exists; `ui_messages.json` only
when it is the task's one record. Both files are written again whole, so each change is read from
the start. A file is one JSON array, often on one line: a turn cites the physical line its message
starts on (line 1 for all of a one-line file). The task id is the folder's name, whatever the
folders above it are called; a copy renamed around the file's name (`x__ui_messages.json`) is
its own task.

UI messages: the task is the first `say: text`, before any request to the model; later input is
`user_feedback`. `text`, `completion_result`, a `followup` question and a `plan_mode_respond`
answer are the model's words, `reasoning` its thinking; `command` is an `execute_command` call
and the `command_output` chunks after it one result; `tool`, `use_mcp_server` and browser actions
are calls, `mcp_server_response` and the like their results; `error` and `diff_error` errors.
Every other kind Cline or Roo Code writes is counted by name in `SKIPPED_KINDS`, with why;
`unknown_type` is left for kinds newer than this table.

Workspace: the editor state Cline appends to each request (`<environment_details>`, in the
history's user messages and in the UI's `api_req_started` requests) names the "Current Working
Directory": dropped from the text, kept as each turn's cwd (the task's first one from its start).
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
# Every UI message kind Cline or Roo Code writes that memoir does not read, by name, with why.
SKIPPED_KINDS = {
    # the request sent to the model, its cost, its deletion: it repeats what the turns hold (its cwd is kept)
    "api_req_started": "api_request", "api_req_finished": "api_request", "deleted_api_reqs": "api_request",
    "api_req_deleted": "api_request",
    # the provider failing and being retried: the model's connection, not the task's work
    "api_req_retried": "api_retry", "error_retry": "api_retry", "api_req_failed": "api_retry",
    "api_req_retry_delayed": "api_retry",
    "checkpoint_created": "checkpoint", "checkpoint_saved": "checkpoint",  # a snapshot of the workspace
    "task_progress": "progress_list", "user_edit_todos": "progress_list",  # the to-do list, said after each step
    "resume_task": "resume_prompt", "resume_completed_task": "resume_prompt",  # the panel offering to go on
    # the panel's own notices: nothing the user or the model said
    "shell_integration_warning": "host_notice", "auto_approval_max_req_reached": "host_notice",
    "mcp_server_request_started": "host_notice", "mcp_notification": "host_notice", "info": "host_notice",
    "too_many_tools_warning": "host_notice", "report_bug": "host_notice",
    # a summary of the conversation so far, made to save context: it repeats what the turns hold
    "condense": "context_summary", "condense_context": "context_summary", "summarize_task": "context_summary",
}
_SAID_AS_JSON = {"followup": "question", "plan_mode_respond": "response"}  # the assistant's words in a JSON field
# A call the panel showed, and the tool named when its JSON names none.
_CALLS = {"tool": "tool", "use_mcp_server": "use_mcp_tool", "browser_action_launch": "browser_action",
          "browser_action": "browser_action", "new_task": "new_task",
          "load_mcp_documentation": "load_mcp_documentation"}
_CALL_NOISE = frozenset({"tool", "operationIsLocatedInWorkspace", "isOutsideWorkspace", "isProtected"})
# A result the panel showed, and the tool it answers.
_RESULTS = {"mcp_server_response": "use_mcp_tool", "browser_action_result": "browser_action",
            "subtask_result": "new_task", "codebase_search_result": "codebase_search"}
_PATH_ERRORS = frozenset({"diff_error", "clineignore_error", "rooignore_error"})
_ERRORS = _PATH_ERRORS | {"error", "mistake_limit_reached", "condense_context_error"}


def _xml_calls(text: str) -> tuple[str, list[tuple[str, dict]]]:
    """A reply's prose and the tools it wrote as XML (`<execute_command><command>…`)."""
    calls = [(m.group(1), {k: v.strip() for k, v in _XML_PARAM.findall(m.group(2))}) for m in _XML_CALL.finditer(text)]
    return _XML_CALL.sub("", text).strip(), calls


class _Reader(SessionReader):
    host = HOST

    asked = False  # a request went to the model: a `text` after it is the model's, before it the task
    output: tuple[object, int, list[str]] | None = None  # command output chunks not yet one result

    def note_cwd(self, text: str, latest: bool = False) -> None:
        """The editor's working directory, as the request shows it (`latest`: the one it has now)."""
        if m := _CWD.search(text):
            self.cwd = m.group(1).strip() if latest else self.cwd or m.group(1).strip()

    # --- api_conversation_history.json ---------------------------------------------------------
    def api_message(self, msg: dict, line: int) -> None:
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
                self.api_text(role, as_str(block.get("text")), ts, line)
            elif kind in ("thinking", "reasoning"):
                self.add_turn(ts, line, "assistant", "thinking", as_str(block.get("thinking")) or as_str(block.get("text")))
            elif kind == "tool_use":
                name = as_str(block.get("name"))
                self.tool_names[as_str(block.get("id"))] = name
                self.add_turn(ts, line, "assistant", "tool_call", tool_call_text(name, block.get("input")), name)
            elif kind == "tool_result":
                name = self.tool_names.get(as_str(block.get("tool_use_id")), "")
                body = block.get("content")
                text = body if isinstance(body, str) else "\n".join(
                    as_str(b.get("text")) for b in body if isinstance(b, dict)) if isinstance(body, list) else ""
                self.add_turn(ts, line, "tool", "error" if block.get("is_error") else "tool_result", text, name,
                              TOOL_RESULT_CHARS)

    def api_text(self, role: str, text: str, ts: object, line: int) -> None:
        self.note_cwd(text)
        if role == "assistant":
            prose, calls = _xml_calls(text)
            self.add_turn(ts, line, "assistant", "text", prose)
            for name, params in calls:
                if name == "attempt_completion":
                    self.add_turn(ts, line, "assistant", "text", params.get("result", ""))
                else:
                    self.add_turn(ts, line, "assistant", "tool_call", tool_call_text(name, params), name)
            return
        heads = list(_RESULT_HEAD.finditer(text))
        if not heads:
            self.add_turn(ts, line, "user", "text", re.sub(r"</?(?:task|feedback|answer)>", "", text))
            return
        for i, m in enumerate(heads):  # `[execute_command for 'npm test'] Result:` and what follows it
            body = text[m.end(): heads[i + 1].start() if i + 1 < len(heads) else len(text)]
            failed = bool(exit_code(body)) or bool(_CLINE_FAILED.search(body))
            self.add_turn(ts, line, "tool", "error" if failed else "tool_result", body, m.group(1), TOOL_RESULT_CHARS)

    # --- ui_messages.json ------------------------------------------------------------------------
    def ui_message(self, msg: dict, line: int) -> None:
        kind = as_str(msg.get("say")) or as_str(msg.get("ask"))
        text = as_str(msg.get("text"))
        ts = msg.get("ts")
        if kind != "command_output":
            self.flush_output()
        if kind == "api_req_started":
            self.asked = True
            self.note_cwd(_request_text(text), latest=True)
        if kind in SKIPPED_KINDS:
            self.skipped[SKIPPED_KINDS[kind]] += 1
        elif kind in ("task", "user_feedback", "user_feedback_diff") or (kind == "text" and not self.asked):
            # Cline says the task itself as the first `text`, before any request to the model.
            self.add_turn(ts, line, "user", "text", text)
        elif kind in ("text", "completion_result"):
            self.add_turn(ts, line, "assistant", "text", text)
        elif kind in _SAID_AS_JSON:
            detail = _json(text)
            self.add_turn(ts, line, "assistant", "text", as_str(detail.get(_SAID_AS_JSON[kind])) if detail else text)
        elif kind == "reasoning":
            self.add_turn(ts, line, "assistant", "thinking", text)
        elif kind == "command":
            self.add_turn(ts, line, "assistant", "tool_call", tool_call_text("execute_command", {"command": text}),
                          "execute_command")
        elif kind == "command_output":  # streamed in chunks, one message each: one result
            if self.output is None:
                self.output = (ts, line, [])
            self.output[2].append(text)
        elif kind in _CALLS:
            detail = _json(text)
            # A tool names itself; an MCP call is `use_mcp_tool` (or `access_mcp_resource`), as in the history.
            name = as_str(detail.get("tool") if kind == "tool" else detail.get("type")) or _CALLS[kind]
            args = {k: v for k, v in detail.items() if k not in _CALL_NOISE}  # what the call did, not the panel's flags
            self.add_turn(ts, line, "assistant", "tool_call", tool_call_text(name, args or text), name)
        elif kind in _RESULTS:
            detail = _json(text)
            text = as_str(detail.get("logs")) if "screenshot" in detail else text  # a browser's page, not its image
            failed = text.startswith("Error") or _CLINE_FAILED.search(text) is not None
            self.add_turn(ts, line, "tool", "error" if failed else "tool_result", text, _RESULTS[kind],
                          TOOL_RESULT_CHARS)
        elif kind in _ERRORS:  # a diff or ignore error says only the file: its kind says what went wrong
            self.add_turn(ts, line, "system", "error", f"{kind}: {text}" if kind in _PATH_ERRORS else text)
        else:
            self.skipped["unknown_type"] += 1

    def flush_output(self) -> None:
        """The command output gathered so far, as one result of the command before it."""
        if self.output is not None:
            (ts, line, parts), self.output = self.output, None
            # Each chunk is whole lines, the last one without its "\n".
            body = "\n".join(p.rstrip("\n") for p in parts if p.strip())
            failed = bool(exit_code(body)) or bool(_CLINE_FAILED.search(body))
            self.add_turn(ts, line, "tool", "error" if failed else "tool_result", body, "execute_command",
                          TOOL_RESULT_CHARS)


def _json(text: str) -> dict:
    """The JSON object a UI message carries in its text, or {}."""
    try:
        value = json.loads(text) if text.startswith("{") else {}
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _request_text(text: str) -> str:
    """The text of the request an `api_req_started` message records (its editor state holds the cwd)."""
    return as_str(_json(text).get("request"))


_WS = re.compile(r"[ \t\n\r]*")


def elements(text: str) -> list[tuple[int, object]] | None:
    """Each element of the top-level JSON array `text` with the 1-based line it starts on; None when
    `text` is no JSON array. Cline writes the array on one line or pretty-printed: a turn cites the
    physical line its message starts on, so line 1 for every message of a one-line file."""
    decoder = json.JSONDecoder()
    at = _WS.match(text).end()
    if text[at:at + 1] != "[":
        return None
    at = _WS.match(text, at + 1).end()
    found: list[tuple[int, object]] = []
    line, counted = 1, 0
    if text[at:at + 1] != "]":
        while True:
            try:
                value, end = decoder.raw_decode(text, at)
            except (ValueError, RecursionError):
                return None
            line += text.count("\n", counted, at)
            counted = at
            found.append((line, value))
            at = _WS.match(text, end).end()
            if text[at:at + 1] == "]":
                break
            if text[at:at + 1] != ",":
                return None  # cut short, or two values without a comma
            at = _WS.match(text, at + 1).end()
    return found if not text[_WS.match(text, at + 1).end():] else None


def read(data: bytes, path: str, start_line: int = 0, carry: Carry = Carry()) -> ReadReport:
    """Read a whole task file (conversation history or UI messages) into Turns, each on the line its message starts."""
    skipped: Counter = Counter()
    reader = _Reader(path, Carry(), session_id_for(path))
    found = elements(data.decode("utf-8", errors="replace").lstrip("\ufeff"))
    if found is None:
        skipped["bad_json"] += 1
        found = []
    messages = [(line, msg) for line, msg in found if isinstance(msg, dict)]
    skipped["unknown_shape"] += len(found) - len(messages)
    ui = not any("role" in msg for _, msg in messages[:1])  # the history's messages have a role, the UI's a say/ask
    if ui:
        requests = (_request_text(as_str(m.get("text"))) for _, m in messages if m.get("say") == "api_req_started")
        reader.cwd = next((m.group(1).strip() for r in requests if (m := _CWD.search(r))), "")
    handle = reader.ui_message if ui else reader.api_message
    for line, msg in messages:
        try:
            handle(msg, line)
        except Exception as exc:  # noqa: BLE001 - one odd message must not lose the task
            skipped[line_error(exc)] += 1
    reader.flush_output()
    reader.skipped.update(+skipped)
    return reader.result(len(data), data.count(b"\n") + 1)


def session_id_for(path: str) -> str:
    """A task's id: its folder's name (`tasks/<taskId>/`), or a renamed copy's own name."""
    where = PurePath(path)
    return (where.parent.name if where.name in (API_HISTORY, UI_MESSAGES) else where.stem) or where.stem


# --- the host record -------------------------------------------------------------------------------
def wants(name: str) -> bool:
    """A task file by its name, or a copy renamed around it (`<task>__ui_messages.json`)."""
    return name.endswith((API_HISTORY, UI_MESSAGES))


def companion(name: str) -> bool:
    """The task folder's other files: its metadata and context tracking, no conversation."""
    return name in ("task_metadata.json", "context_history.json")


# UI messages open with Cline's own first keys, whatever the file is called: `[{"ts": …, "type": "say"`.
_UI_HEAD = re.compile(r'^\[\s*\{\s*"ts"\s*:\s*\d+\s*,\s*"type"\s*:\s*"(?:say|ask)"')


def sniff_lines(lines: list[str], path: PurePath) -> bool:
    """UI messages by their shape; a conversation history by its name too (`[{"role": …` is too plain alone)."""
    return bool(_UI_HEAD.match(" ".join(lines[:4]))) or (
        path.name.endswith((API_HISTORY, UI_MESSAGES)) and lines[0].startswith("["))


RECORD = Host(
    name=HOST, read=read, wants=wants, sniff_lines=sniff_lines, companion=companion, whole_file=True,
    root=".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks",  # Roo Code: …/rooveterinaryinc.roo-cline/tasks
    shadowed_by=((UI_MESSAGES, API_HISTORY),),
    shell_tools=frozenset({"execute_command"}),
    edit_tools=frozenset({"write_to_file", "replace_in_file", "apply_diff", "insert_content", "search_and_replace",
                          "editedexistingfile", "newfilecreated"}),
    quiet_tools=frozenset({"read_file", "search_files", "list_files", "list_code_definition_names", "readfile",
                           "listfilestoplevel", "listfilesrecursive", "searchfiles", "ask_followup_question",
                           "listcodedefinitionnames", "codebasesearch", "load_mcp_documentation"}),
)
