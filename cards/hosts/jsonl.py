"""memoir's generic JSONL session format: the contract for any host without its own reader.

Format (version 1). UTF-8, one JSON object per line, each line ending in `\\n`. A line without
its newline is taken as still being written and is read on the next run. Blank lines are ignored.
Lines may hold several sessions, interleaved or not; each session's turns are numbered in the
order their lines appear in the file.

Fields of one line (unknown fields are ignored, so hosts may add their own):

| field        | type            | required | meaning                                                      |
|--------------|-----------------|----------|--------------------------------------------------------------|
| session_id   | string          | yes      | stable id of the session; non-empty                          |
| role         | string          | yes      | `user`, `assistant`, `tool` or `system`                      |
| text         | string          | yes      | what was said, the tool call or its output; may be empty only for `summary` |
| kind         | string          | no       | `text`, `thinking`, `tool_call`, `tool_result`, `error`, `summary`; default `tool_result` for role `tool`, else `text` |
| timestamp    | string / number | no       | ISO-8601 (`2026-01-02T19:18:31Z`; no offset means UTC) or Unix seconds / milliseconds |
| tool_name    | string          | no       | tool name for `tool_call` / `tool_result` / `error`          |
| cwd          | string          | no       | working directory (the workspace the card will belong to)    |
| git_branch   | string          | no       | git branch at the time                                       |
| uuid         | string          | no       | the host's id for this line; a repeated uuid is skipped       |
| is_sidechain | boolean         | no       | true for a sub-agent's turns                                 |

Example:

    {"session_id": "s1", "timestamp": "2026-01-02T19:18:31Z", "role": "user", "text": "pytest fails with ImportError", "cwd": "/src/app"}
    {"session_id": "s1", "role": "assistant", "kind": "tool_call", "tool_name": "bash", "text": "bash {\\"cmd\\":\\"pytest -x\\"}"}
    {"session_id": "s1", "role": "tool", "kind": "error", "tool_name": "bash", "text": "ImportError: No module named 'yaml'"}
    {"session_id": "s1", "role": "system", "kind": "summary", "text": "Conversation compacted"}

Lines that break the contract are skipped and counted: `bad_json` (not JSON), `unknown_shape`
(not an object), `missing_field` (no session_id/role/text), `bad_value` (unknown role or kind).
Text is bounded (tool output keeps head and tail) and `<memoir-context>` blocks are stripped.
"""

from __future__ import annotations

import re
from collections import Counter

from memoir.cards.hosts.base import (
    TEXT_CHARS,
    TOOL_CALL_CHARS,
    TOOL_RESULT_CHARS,
    Carry,
    Host,
    ReadReport,
    Seqs,
    as_str,
    clip,
    complete_lines,
    iter_json_lines,
    parse_ts,
)
from memoir.cards.hosts.strip import strip_injected
from memoir.cards.values import KINDS, ROLES, Turn
from memoir.cards.sanitize.fields import sanitize_json_text

HOST = "jsonl"
_LIMITS = {"tool_call": TOOL_CALL_CHARS, "tool_result": TOOL_RESULT_CHARS, "error": TOOL_RESULT_CHARS}


def _turn(obj: dict, path: str, line: int, seqs: Seqs, skipped: Counter) -> Turn | None:
    session_id, role, text = obj.get("session_id"), obj.get("role"), obj.get("text")
    if not (isinstance(session_id, str) and session_id and isinstance(role, str) and isinstance(text, str)):
        skipped["missing_field"] += 1
        return None
    kind = obj.get("kind", "tool_result" if role == "tool" else "text")
    if role not in ROLES or kind not in KINDS:
        skipped["bad_value"] += 1
        return None
    if kind in _LIMITS:
        text = sanitize_json_text(text)  # a call's or output's JSON hides its values behind escapes
    text = clip(strip_injected(text), _LIMITS.get(kind, TEXT_CHARS))
    if not text and kind != "summary":
        skipped["empty_text"] += 1
        return None
    return Turn(
        host=HOST,
        session_id=session_id,
        seq=seqs.take(session_id),
        role=role,
        kind=kind,
        text=text,
        timestamp=parse_ts(obj.get("timestamp")),
        tool_name=as_str(obj.get("tool_name")),
        cwd=as_str(obj.get("cwd")),
        git_branch=as_str(obj.get("git_branch")),
        source_file=path,
        line=line,
        is_sidechain=obj.get("is_sidechain") is True,
        uuid=as_str(obj.get("uuid")),
    )


def read(data: bytes, path: str, start_line: int = 0, carry: Carry = Carry()) -> ReadReport:
    """Read the whole lines of a generic-JSONL chunk into Turns."""
    lines, consumed = complete_lines(data)
    skipped: Counter = Counter()
    if consumed < len(data):
        skipped["partial_line"] += 1
    seqs = Seqs(dict(carry.seqs))
    seen: set[str] = set()
    turns: list[Turn] = []
    for line_no, obj in iter_json_lines(lines, start_line, skipped):
        uuid = obj.get("uuid")
        if isinstance(uuid, str) and uuid:
            if uuid in seen:
                skipped["duplicate"] += 1
                continue
            seen.add(uuid)
        turn = _turn(obj, path, line_no, seqs, skipped)
        if turn is not None:
            turns.append(turn)
    session_ids = tuple(dict.fromkeys(t.session_id for t in turns))
    last = turns[-1].session_id if turns else carry.session_id
    return ReadReport(
        turns=turns,
        skipped=skipped,
        session_id=last,
        session_ids=session_ids,
        consumed=consumed,
        lines=len(lines),
        carry=Carry(session_id=last, seqs=seqs.frozen()),
        resume_at=consumed,
        resume_line=len(lines),
    )


# --- the host record -------------------------------------------------------------------------------
_RAW_KEYS = re.compile(r'"session_id"\s*:.*"role"\s*:|"role"\s*:.*"session_id"\s*:')


def wants(name: str) -> bool:
    return name.endswith(".jsonl")


def sniff_record(obj: dict) -> int:
    return 2 if "session_id" in obj and "role" in obj and "text" in obj else 0


def sniff_raw(line: str) -> int:
    return 1 if _RAW_KEYS.search(line) else 0


# The generic format carries the other agents' tools (Cursor, Cline, Gemini CLI, OpenHands, …).
RECORD = Host(
    name=HOST, read=read, wants=wants, sniff_record=sniff_record, sniff_raw=sniff_raw,
    shell_tools=frozenset({"run_terminal_cmd", "run_command", "execute_command", "terminal", "run_shell_command"}),
    edit_tools=frozenset({"str_replace_editor", "str_replace_based_edit_tool", "create_file", "edit_file",
                          "write_file", "replace", "insert"}),
    quiet_tools=frozenset({"read_file"}),
)
