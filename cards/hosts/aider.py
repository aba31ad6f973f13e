"""Aider chat history: `<repo>/.aider.chat.history.md`, appended across runs.

`# aider chat started at YYYY-MM-DD HH:MM:SS` opens a session; `#### ` lines are user input
(consecutive ones are one message); `> ` lines are tool/UI output (errors and tracebacks become
`error` turns, "Commit <sha> …" lines are kept, token/cost and ^C chatter is dropped); everything
else is the assistant's reply. The file has no session ids, so a session's id is a hash of the
file path and its header's line number, and its timestamp is the header's (local time).

Incremental reads: a session can only be named from its header, so `resume_at` points at the
last header in the chunk. The next read starts there and returns that whole session again with
the same id and seqs (card ids are stable, so re-storing it is idempotent).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from datetime import datetime

from cards.hosts.base import (
    TEXT_CHARS,
    TOOL_RESULT_CHARS,
    Carry,
    ReadResult,
    clip,
)
from cards.hosts.strip import strip_injected
from cards.model import Turn

HOST = "aider"

HEADER_RE = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)")
_NOISE_RE = re.compile(r"^(?:Tokens: .*Cost: |\^C\b|\s*$)")
_ERROR_RE = re.compile(
    r"\b(?:Traceback \(most recent call last\)|[A-Z]\w*Error\b|Error\b|error\b|Exception\b|failed\b|not found)"
)
_COMMIT_RE = re.compile(r"^Commit [0-9a-f]{7,40}\b")


def session_id_for(path: str, header_line: int) -> str:
    """Stable id for the session whose header is on `header_line` (1-based) of `path`."""
    return "aider-" + hashlib.sha256(f"{path}\0{header_line}".encode()).hexdigest()[:16]


def _header_time(line: str) -> datetime | None:
    m = HEADER_RE.match(line)
    if not m:
        return None
    try:
        return datetime.fromisoformat(m.group(1)).astimezone()
    except ValueError:
        return None


def _tool_kind(lines: list[str]) -> str:
    failed = any(_ERROR_RE.search(ln) for ln in lines if not _COMMIT_RE.match(ln))
    return "error" if failed else "tool_result"


class _Builder:
    """Accumulates one block of same-role lines and flushes it into a Turn."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.turns: list[Turn] = []
        self.session_ids: list[str] = []
        self.skipped: Counter = Counter()
        self.session_id = ""
        self.started: datetime | None = None
        self.seq = 0
        self.role = ""
        self.block: list[str] = []
        self.block_line = 0
        self.in_fence = False  # inside an assistant code fence `>` lines are code (SEARCH/REPLACE)

    def start_session(self, session_id: str, started: datetime | None) -> None:
        self.flush()
        self.session_id, self.started, self.seq = session_id, started, 0
        if session_id not in self.session_ids:
            self.session_ids.append(session_id)

    def add(self, role: str, text: str, line: int) -> None:
        if role != self.role:
            self.flush()
            self.role, self.block_line = role, line
        self.block.append(text)

    def flush(self) -> None:
        self.in_fence = False
        role, block = self.role, self.block
        self.role, self.block = "", []
        if not block:
            return
        if role == "tool":
            block = [ln for ln in block if not _NOISE_RE.match(ln)]
            kind, limit = _tool_kind(block), TOOL_RESULT_CHARS
        else:
            kind, limit = "text", TEXT_CHARS
        text = clip(strip_injected("\n".join(block)), limit)
        if not text:
            return
        if not self.session_id:
            self.start_session(session_id_for(self.path, self.block_line), None)
        self.turns.append(
            Turn(
                host=HOST,
                session_id=self.session_id,
                seq=self.seq,
                role=role,
                kind=kind,
                text=text,
                timestamp=self.started,
                source_file=self.path,
                line=self.block_line,
            )
        )
        self.seq += 1


def _offset_of_line(data: bytes, index: int) -> int:
    """Byte offset where line `index` (0-based) starts; 0 when there is no such header."""
    offset = 0
    for _ in range(max(index, 0)):
        offset = data.index(b"\n", offset) + 1
    return offset


def read(data: bytes, path: str, start_line: int = 0, carry: Carry = Carry()) -> ReadResult:
    """Read the whole lines of an aider history chunk into Turns, one session per header."""
    consumed = data.rfind(b"\n") + 1
    n_lines = data.count(b"\n", 0, consumed)
    skipped: Counter = Counter()
    if consumed < len(data):
        skipped["partial_line"] += 1
    b = _Builder(path)
    if carry.session_id:
        b.start_session(carry.session_id, datetime.fromisoformat(carry.started) if carry.started else None)
    text = data[:consumed].decode("utf-8", errors="replace")
    last_header = -1
    for i, line in enumerate(text.split("\n")[:-1] if consumed else ()):
        line_no = start_line + i + 1
        if line.startswith("# aider chat started at"):
            b.start_session(session_id_for(path, line_no), _header_time(line))
            last_header = i
        elif line.startswith("####") and not b.in_fence:
            b.add("user", line[5:].rstrip(), line_no)
        elif b.in_fence:
            b.add("assistant", line.rstrip(), line_no)
        elif line == ">" or line.startswith("> "):
            b.add("tool", line[1:].strip(), line_no)
        elif not line.strip():
            if b.role == "assistant":
                b.block.append("")
            elif b.role:
                b.flush()
        else:
            b.add("assistant", line.rstrip(), line_no)
        if b.role == "assistant" and line.startswith("```"):
            b.in_fence = not b.in_fence
    b.flush()
    started = b.started.isoformat() if b.started else ""
    return ReadResult(
        turns=b.turns,
        skipped=skipped + b.skipped,
        session_id=b.session_id,
        session_ids=tuple(b.session_ids),
        consumed=consumed,
        lines=n_lines,
        carry=Carry(session_id=b.session_id, started=started, seqs=((b.session_id, b.seq),) if b.session_id else ()),
        resume_at=_offset_of_line(data, last_header) if b.session_id else consumed,
        resume_line=max(last_header, 0) if b.session_id else n_lines,
    )
