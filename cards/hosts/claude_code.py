"""Claude Code transcripts: `~/.claude/projects/<slug>/<session>.jsonl` (+ `<session>/subagents/`).

One JSON object per line. Conversation lines are `user`/`assistant` with `message.content` as a
string or a list of blocks; tool results come back as `user` lines; one API response is split over
several `assistant` lines sharing `message.id`. `summary` lines, compact summaries and
`compact_boundary` system lines become `summary` turns (segment boundaries). Bookkeeping lines
(progress, file-history-snapshot, queue-operation, …) are counted as `ignored_type`.

What the user did, as user `text` turns: a slash command (a `<command-name>` user line, or a
`local_command` system line in 2.1) is exactly `/name` plus its arguments (`/clear`,
`/compact`, `/model opus`); its expansion (an `isMeta` line), its local stdout and the "Caveat: …"
boilerplate are dropped. `[Request interrupted by user]` and `[Request interrupted by user for
tool use]` stay as they are. Thinking blocks are `thinking` turns. A tool call's text is
`Name {json input}`; ExitPlanMode (the plan), TodoWrite (the todos with their statuses) and
Task/Agent (the subagent's description and prompt) keep their whole input, the rest is bounded.
A subagent transcript (`<session>/subagents/agent-<id>.jsonl`) is the session
`<session>/agent-<id>`, and every turn of it is a sidechain. A compaction sidechain
(`agent-acompact-<id>.jsonl`, or a file whose `agentId` is `acompact-…`) is Claude Code summarising
the conversation for `/compact`: a replay of the parent and a summary prompt, not work. It yields
no turns; its lines are counted as `compaction_sidechain` (the parent keeps the summary itself).

Deduplication (by line uuid and by `(message.id, block)`) holds within one read; a duplicate
that straddles two incremental reads is kept.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from pathlib import PurePath

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
    tool_call_text,
)
from memoir.cards.hosts.strip import slash_command_text

HOST = "claude-code"

IGNORED_TYPES = frozenset(
    {
        "progress",
        "file-history-snapshot",
        "queue-operation",
        "last-prompt",
        "custom-title",
        "tag",
        "agent-name",
        "pr-link",
        "attachment",
        "permission-mode",  # the session's permission mode (default, plan, …): settings, not content
    }
)
# Substrings that may mark a bookkeeping line; only lines holding one pay for the regex below,
# and only lines it confirms skip json.loads (progress lines dominate big transcripts).
_CHEAP_IGNORED = (b'"progress"', b'"file-history-snapshot"', b'"queue-operation"')
_IGNORED_RE = re.compile(rb'(?<!\\)"type"\s*:\s*"(?:progress|file-history-snapshot|queue-operation)"')
# Calls whose whole input is what a reader needs: the plan accepted, the todo statuses, a subagent's task.
_WHOLE_INPUT_TOOLS = frozenset({"ExitPlanMode", "TodoWrite", "Task", "Agent"})
_COMPACTION_AGENT = "acompact-"  # the agent id Claude Code gives the sidechain that writes a compaction
_UUID_STEM = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def session_id_for(path: str, first: dict | None) -> str:
    """One file is one seq space: a subagent file gets its own id beside its parent's."""
    p = PurePath(path)
    if p.parent.name == "subagents" and p.stem.startswith("agent-"):
        return f"{p.parent.parent.name}/{p.stem}"
    if _UUID_STEM.match(p.stem):
        return p.stem
    if first:
        sid = as_str(first.get("sessionId"))
        agent = as_str(first.get("agentId"))
        if sid:
            return f"{sid}/agent-{agent}" if agent and first.get("isSidechain") else sid
    return p.stem


def is_compaction_sidechain(path: str, first: dict | None) -> bool:
    """A compaction's own sidechain: named `agent-acompact-…`, or its lines carry that agent id."""
    if "agent-" + _COMPACTION_AGENT in PurePath(path).name:
        return True
    return bool(first) and as_str(first.get("agentId")).startswith(_COMPACTION_AGENT)


def _is_ignored_line(line: bytes) -> bool:
    a, b, c = _CHEAP_IGNORED
    return (a in line or b in line or c in line) and _IGNORED_RE.search(line[:4096]) is not None


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [as_str(b.get("text")) for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(p for p in parts if p)
    return ""


class _Reader(SessionReader):
    """Walks the parsed lines of one chunk, turning conversation blocks into Turns."""

    host = HOST

    def __init__(self, path: str, start_line: int, carry: Carry, session_id: str) -> None:
        super().__init__(path, carry, session_id)
        self.start_line = start_line
        self.seen_uuids: set[str] = set()
        self.seen_blocks: set[tuple] = set()
        self.subagent = "/agent-" in session_id  # a subagent's own file: all of it is sidechain

    def emit(
        self, obj: dict, line: int, role: str, kind: str, text: str, tool_name: str = "", limit: int = TEXT_CHARS
    ) -> None:
        self.add_turn(obj.get("timestamp"), line, role, kind, text, tool_name, limit,
                      is_sidechain=self.subagent or bool(obj.get("isSidechain")), uuid=as_str(obj.get("uuid")))

    def user_text(self, obj: dict, line: int, text: str) -> None:
        """What the user typed; a slash command becomes exactly `/name args`."""
        if text.startswith(("<local-command-stdout>", "<local-command-stderr>")):
            self.skipped["command_output"] += 1  # what a local command printed: not something the user said
            return
        if "<command-name>" in text:
            text = slash_command_text(text) or text
        self.emit(obj, line, "user", "text", text)

    def line(self, obj: dict, line: int) -> None:
        kind = obj.get("type")
        if kind in IGNORED_TYPES:
            self.skipped["ignored_type"] += 1
            return
        uuid = as_str(obj.get("uuid"))
        if uuid:
            if uuid in self.seen_uuids:
                self.skipped["duplicate"] += 1
                return
            self.seen_uuids.add(uuid)
        self.cwd = as_str(obj.get("cwd")) or self.cwd
        self.branch = as_str(obj.get("gitBranch")) or self.branch
        if kind == "summary":
            self.emit(obj, line, "system", "summary", as_str(obj.get("summary")))
        elif kind == "system":
            self.system(obj, line)
        elif kind == "user":
            self.user(obj, line)
        elif kind == "assistant":
            self.assistant(obj, line)
        else:
            self.skipped["unknown_type"] += 1

    def system(self, obj: dict, line: int) -> None:
        subtype = obj.get("subtype")
        if subtype == "compact_boundary":
            self.emit(obj, line, "system", "summary", as_str(obj.get("content")) or "Conversation compacted")
        elif subtype == "local_command" and "<command-name>" in (content := as_str(obj.get("content"))):
            self.user_text(obj, line, content)  # 2.1 writes the user's slash command as a system line
        elif subtype == "local_command":
            self.skipped["command_output"] += 1
        else:
            self.skipped["ignored_type"] += 1

    def user(self, obj: dict, line: int) -> None:
        message = obj.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if obj.get("isCompactSummary"):
            text = content if isinstance(content, str) else _result_text(content)
            self.emit(obj, line, "system", "summary", text)
            return
        if obj.get("isMeta"):
            self.skipped["meta"] += 1
            return
        if isinstance(content, str):
            self.user_text(obj, line, content)
            return
        if not isinstance(content, list):
            self.skipped["unknown_shape"] += 1
            return
        for block in content:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text":
                self.user_text(obj, line, as_str(block.get("text")))
            elif btype == "tool_result":
                name = self.tool_names.get(as_str(block.get("tool_use_id")), "")
                kind = "error" if block.get("is_error") else "tool_result"
                text = _result_text(block.get("content"))
                self.emit(obj, line, "tool", kind, text, tool_name=name, limit=TOOL_RESULT_CHARS)

    def assistant(self, obj: dict, line: int) -> None:
        message = obj.get("message")
        if not isinstance(message, dict):
            self.skipped["unknown_shape"] += 1
            return
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            self.skipped["unknown_shape"] += 1
            return
        mid = as_str(message.get("id"))
        text_kind = "error" if obj.get("isApiErrorMessage") else "text"
        for block in content:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text":
                text = as_str(block.get("text"))
                key, args = (mid, "text", text), (text_kind, text)
            elif btype == "thinking":
                text = as_str(block.get("thinking"))
                key, args = (mid, "thinking", text), ("thinking", text)
            elif btype == "tool_use":
                name = as_str(block.get("name"))
                self.tool_names[as_str(block.get("id"))] = name
                key = (mid, "tool_use", as_str(block.get("id")) or repr(block.get("input")))
                limit = TEXT_CHARS if name in _WHOLE_INPUT_TOOLS else TOOL_CALL_CHARS
                args = ("tool_call", tool_call_text(name, block.get("input"), limit), name)
            else:
                continue
            if mid:
                if key in self.seen_blocks:
                    self.skipped["duplicate"] += 1
                    continue
                self.seen_blocks.add(key)
            self.emit(obj, line, "assistant", *args)


def read(data: bytes, path: str, start_line: int = 0, carry: Carry = Carry()) -> ReadReport:
    """Read the whole lines of a Claude Code transcript chunk into Turns."""
    lines, consumed = complete_lines(data)
    skipped: Counter = Counter()
    if consumed < len(data):
        skipped["partial_line"] += 1
    parsed = iter_json_lines(lines, start_line, skipped, _is_ignored_line)
    head: list[tuple[int, dict]] = []  # the lines before the first that names its session: parsed once
    for item in parsed:
        head.append(item)
        if item[1].get("sessionId"):
            break
    first = head[-1][1] if head and head[-1][1].get("sessionId") else None
    session_id = carry.session_id or session_id_for(path, first)
    if is_compaction_sidechain(path, first):
        skipped["compaction_sidechain"] += len(head) + sum(1 for _ in parsed)
        head, parsed = [], iter(())
    reader = _Reader(path, start_line, carry, session_id)
    reader.read_lines(itertools.chain(head, parsed))
    reader.skipped.update(skipped)
    return reader.result(consumed, len(lines))


# --- the host record -------------------------------------------------------------------------------
_RECORD_TYPES = frozenset({"user", "assistant", "system", "summary", "progress", "file-history-snapshot",
                           "queue-operation", "last-prompt"})
_RAW_KEYS = re.compile(r'"(?:parentUuid|sessionId|leafUuid)"\s*:')


def wants(name: str) -> bool:
    return name.endswith(".jsonl")


def sniff_record(obj: dict) -> int:
    """3: keys only Claude Code writes; 1: its record types with a `message`."""
    kind = obj.get("type")
    if "sessionId" in obj or "parentUuid" in obj or (kind == "summary" and "leafUuid" in obj):
        return 3
    return 1 if kind in _RECORD_TYPES and "message" in obj else 0


def sniff_raw(line: str) -> int:
    return 1 if _RAW_KEYS.search(line) else 0


RECORD = Host(
    name=HOST, read=read, wants=wants, sniff_record=sniff_record, sniff_raw=sniff_raw,
    root=".claude/projects",
    shell_tools=frozenset({"bash"}),
    edit_tools=frozenset({"edit", "multiedit", "write", "notebookedit"}),
    quiet_tools=frozenset({"read", "glob", "grep", "ls", "notebookread", "todoread", "webfetch", "websearch",
                           "skill", "enterplanmode"}),
    plan_tools=frozenset({"todowrite"}),
    plan_accept_tools=frozenset({"exitplanmode"}),
)
