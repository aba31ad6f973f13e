"""Gemini CLI chats: `~/.gemini/tmp/<sha256 of the project path>/chats/session-<date>-<id8>.json`.

Gemini CLI saves a whole conversation as one JSON object (`sessionId`, `projectHash`,
`startTime`, `lastUpdated`, `messages[]`) and writes the file again, whole, after each message;
newer versions write the same records as JSON lines (a header line with `sessionId`, then one
message per line, a message re-written under its `id` as it grows). Either way the file is read
whole each time it changes, and the same session saved under several file names is one session:
its turns are numbered by message order, so a longer copy yields the same turns and more. Each
turn cites the line of the file its message starts on (the file is pretty-printed: a message
spans many lines), so a card's sources can be opened where they are.

A message is `user` or `gemini` (`info`, `error` and `warning` are the CLI's own notices).
`thoughts[{subject, description}]` are hidden reasoning: `thinking` turns, never a conclusion.
`toolCalls[{id, name, args, result, status}]` are a call and its result (an error when the status
is not success). `<current_datetime>`-style context blocks never reach a card, nor the editor
state Gemini Code Assist (VS Code's agent on Gemini CLI) appends to each prompt.

The chat names no directory: `projectHash` is the SHA-256 of the project's path (the chats'
folder is named after it). The workspace is the path the chat's own text names whose hash is that
one; a chat that names no such path has no workspace (the CLI keeps none beside it: `logs.json`
holds the prompts only).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
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
_WS = re.compile(r"[ \t\n\r]*")
_HASH = re.compile(r"^[0-9a-f]{64}$")
# An absolute path in prose or JSON: `C:\…`, `c:/…` or `/…`, up to a space, quote or bracket.
_ABS_PATH = re.compile(r"(?<![\w.~/\\])(?:[A-Za-z]:[\\/]|/)[^\s\"'`<>|*?()\[\]{},;]+")
MAX_PATHS = 4000  # directories hashed per chat at most: the project's is among the first the prompts name
# What Gemini Code Assist appends to a prompt: the open file and the files picked as context.
_EDITOR_STATE = re.compile(r"\n*(?:Current File Path:\n```[^\n]*\n[^\n]*\n```|User Selected Files:\n(?:- [^\n]*(?:\n|$))+)")


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


def prompt_text(text: str) -> str:
    """What the user typed, without the editor state an IDE appended to it."""
    if "Current File Path:\n" not in text and "User Selected Files:\n" not in text:
        return text
    return _EDITOR_STATE.sub("", text)


# --- the two forms, each message with the line it starts on ------------------------------------------
class _LineAt:
    """The 1-based line of a character offset, for offsets asked in increasing order (one pass)."""

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.line = text, 0, 1

    def __call__(self, pos: int) -> int:
        self.line += self.text.count("\n", self.pos, pos)
        self.pos = pos
        return self.line


def _walk_chat(text: str) -> tuple[dict, list[tuple[int, object]]] | None:
    """(header, [(line, message)]) of a chat that is one JSON object; None when the text is not one.

    Each value is decoded once, where it stands, so each message's starting offset (and so its
    line) is known without a second pass over the file.
    """
    decode = json.JSONDecoder().raw_decode
    line_at = _LineAt(text)
    header: dict = {}
    messages: list[tuple[int, object]] = []
    try:
        pos = _WS.match(text, 0).end()
        if text[pos] != "{":
            return None
        pos = _WS.match(text, pos + 1).end()
        while text[pos] != "}":
            key, pos = decode(text, pos)
            pos = _WS.match(text, pos).end()
            if text[pos] != ":" or not isinstance(key, str):
                return None
            pos = _WS.match(text, pos + 1).end()
            if key == "messages" and text[pos] == "[":
                pos = _WS.match(text, pos + 1).end()
                while text[pos] != "]":
                    msg, end = decode(text, pos)
                    messages.append((line_at(pos), msg))
                    pos = _WS.match(text, end).end()
                    if text[pos] == ",":
                        pos = _WS.match(text, pos + 1).end()
                    elif text[pos] != "]":
                        return None
                pos += 1
            else:
                header[key], pos = decode(text, pos)
            pos = _WS.match(text, pos).end()
            if text[pos] == ",":
                pos = _WS.match(text, pos + 1).end()
            elif text[pos] != "}":
                return None
        if text[_WS.match(text, pos + 1).end():]:
            return None  # more after the object: the JSON-lines form
    except (ValueError, IndexError):
        return None
    return header, messages


def _json_lines(data: bytes, skipped: Counter) -> tuple[dict, list[tuple[int, dict]]]:
    """(header, [(line, message)]) of the JSON-lines form; a later save of a message id updates the first."""
    header: dict = {}
    by_id: dict[str, dict] = {}
    order: list[tuple[int, dict]] = []
    raw_lines, _ = complete_lines(data if data.endswith(b"\n") else data + b"\n")
    for number, raw in enumerate(raw_lines, start=1):
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
                by_id[mid].update(obj)  # the same message saved again as it grew: cited where it began
                skipped["message_update"] += 1
                continue
            if mid:
                by_id[mid] = obj
            order.append((number, obj))
        else:
            skipped["unknown_type"] += 1
    return header, order


def _records(data: bytes, skipped: Counter) -> tuple[dict, list[tuple[int, dict]], int]:
    """(header, [(line, message)] in order, lines) of either form."""
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    try:
        whole = _walk_chat(text)
    except RecursionError:
        whole = None  # nested past the parser's depth: the line reader counts it
    if whole is None:
        return *_json_lines(data, skipped), lines
    header, messages = whole
    kept = [(line, m) for line, m in messages if isinstance(m, dict)]
    if len(kept) < len(messages):
        skipped["unknown_shape"] += len(messages) - len(kept)
    return header, kept, lines


# --- the workspace -----------------------------------------------------------------------------------
def _dirs(path: str) -> Iterator[str]:
    """Each directory a path names, the shortest first, and the path itself (it may be a directory)."""
    path = path.rstrip(".:")
    sep = "\\" if re.match(r"^[A-Za-z]:\\", path) else "/"
    parts = path.split(sep)
    for n in range(2, len(parts) + 1):
        yield sep.join(parts[:n])


def _spellings(path: str) -> tuple[str, ...]:
    """A Windows path with its drive letter in either case: Node hands the CLI whichever the shell had."""
    if len(path) > 1 and path[1] == ":":
        return (path, path[0].swapcase() + path[1:])
    return (path,)


def project_root(project_hash: str, texts: Iterable[str]) -> str:
    """The directory whose SHA-256 is `project_hash`, among those the texts name; '' when none is."""
    if not _HASH.match(project_hash):
        return ""
    seen: set[str] = set()
    for text in texts:
        if "/" not in text and "\\" not in text:
            continue
        for m in _ABS_PATH.finditer(text):
            for directory in _dirs(m.group(0)):
                for spelled in _spellings(directory):
                    if spelled in seen:
                        continue
                    if len(seen) >= MAX_PATHS:
                        return ""
                    seen.add(spelled)
                    if hashlib.sha256(spelled.encode("utf-8", "surrogatepass")).hexdigest() == project_hash:
                        return spelled
    return ""


def _texts(messages: list[tuple[int, dict]]) -> Iterator[str]:
    """The chat's text where a path is likeliest first: prompts, then calls, then replies."""
    for _, msg in messages:
        if msg.get("type") == "user":
            yield parts_text(msg.get("content"))
    for _, msg in messages:
        for call in msg.get("toolCalls") or ():
            if isinstance(call, dict):
                yield json.dumps(call.get("args"), ensure_ascii=False)
    for _, msg in messages:
        if msg.get("type") == "gemini":
            yield parts_text(msg.get("content"))


# --- the reader --------------------------------------------------------------------------------------
class _Reader(SessionReader):
    host = HOST

    def message(self, msg: dict, line: int) -> None:
        kind = msg.get("type")
        ts = msg.get("timestamp")
        text = parts_text(msg.get("content"))
        if kind == "user":
            self.add_turn(ts, line, "user", "text", prompt_text(text))
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
    """Read a whole Gemini CLI chat file (JSON or JSON lines) into Turns, each citing its message's line."""
    skipped: Counter = Counter()
    header, messages, lines = _records(data, skipped)
    reader = _Reader(path, Carry(), _session_id(header, path))
    reader.cwd = project_root(as_str(header.get("projectHash")), _texts(messages))
    for line, msg in messages:
        if msg.get("type") not in _MESSAGE_TYPES:
            reader.skipped["unknown_type"] += 1
            continue
        try:
            reader.message(msg, line)
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
