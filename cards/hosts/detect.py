"""Which host wrote a file, judged by the shape of its first lines (the path is only a tie-break).

Content first because logs get copied, renamed and exported; a path says where a file lives,
not what is in it.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePath

_AIDER_HEADER = "# aider chat started at"
_CLAUDE_TYPES = frozenset({"user", "assistant", "system", "summary", "progress", "file-history-snapshot", "queue-operation", "last-prompt"})
_CODEX_ENVELOPE = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_CODEX_BARE = frozenset({"message", "reasoning", "function_call", "function_call_output"})
# For a first line longer than the head (one Claude line can be 100+ KB): sniff keys instead.
_SNIFF = (
    (re.compile(r'^\{"timestamp"\s*:\s*"[^"]*"\s*,\s*"type"\s*:\s*"(?:session_meta|response_item|event_msg|turn_context)"'), "codex"),
    (re.compile(r'"(?:parentUuid|sessionId|leafUuid)"\s*:'), "claude-code"),
    (re.compile(r'"session_id"\s*:.*"role"\s*:|"role"\s*:.*"session_id"\s*:'), "jsonl"),
)
MAX_PROBE_LINES = 5


def _shape(obj: dict) -> str | None:
    kind = obj.get("type")
    if kind in _CODEX_ENVELOPE and "payload" in obj:
        return "codex"
    if "instructions" in obj and "id" in obj or obj.get("record_type") == "state":
        return "codex"
    if "sessionId" in obj or "parentUuid" in obj or (kind == "summary" and "leafUuid" in obj):
        return "claude-code"
    if kind in _CODEX_BARE and "sessionId" not in obj:
        return "codex"
    if "session_id" in obj and "role" in obj and "text" in obj:
        return "jsonl"
    if kind in _CLAUDE_TYPES and "message" in obj:
        return "claude-code"
    return None


def detect_host(path: str | PurePath, head_bytes: bytes) -> str | None:
    """Host name for `--host auto` from the first bytes of a file, or None when unknown."""
    if b"\x00" in head_bytes:
        return None
    text = head_bytes.decode("utf-8", errors="replace").lstrip("\ufeff")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()][:MAX_PROBE_LINES]
    if not lines:
        return None
    if lines[0].startswith(_AIDER_HEADER) or (
        PurePath(path).name.endswith(".aider.chat.history.md") and any(ln.startswith(("#### ", "> ")) for ln in lines)
    ):
        return "aider"
    if not lines[0].startswith("{"):
        return None
    for ln in lines:
        try:
            obj = json.loads(ln)
        except ValueError:
            continue
        if isinstance(obj, dict) and (host := _shape(obj)):
            return host
    for pattern, host in _SNIFF:
        if pattern.search(lines[0][:65536]):
            return host
    return None
