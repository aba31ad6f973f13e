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
# Lines of the head tried in turn: junk or a NUL before the first record costs a line, not the file.
MAX_PROBE_LINES = 20


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
    """Host name for `--host auto` from the first bytes of a file, or None when unknown.

    The first line that parses as some host's record decides: a junk first line (`[1,2,3]`), a
    line with a NUL byte or one nested too deeply is passed over, and the reader counts it.
    """
    text = head_bytes.decode("utf-8", errors="replace").lstrip("\ufeff")
    lines = [ln for ln in (raw.strip() for raw in text.splitlines()) if ln and "\x00" not in ln][:MAX_PROBE_LINES]
    if not lines:
        return None
    if lines[0].startswith(_AIDER_HEADER) or (
        PurePath(path).name.endswith(".aider.chat.history.md") and any(ln.startswith(("#### ", "> ")) for ln in lines)
    ):
        return "aider"
    objects = [ln for ln in lines if ln.startswith("{")]
    for ln in objects:
        try:
            obj = json.loads(ln)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict) and (host := _shape(obj)):
            return host
    for pattern, host in _SNIFF:
        if objects and pattern.search(objects[0][:65536]):
            return host
    return None


def undetected_reason(head_bytes: bytes) -> str:
    """Why no host was found in a head: `utf16`, `binary` (a NUL byte and no record) or `unknown_format`."""
    if head_bytes.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf16"
    if b"\x00" not in head_bytes:
        return "unknown_format"
    sample = head_bytes[:512]
    # UTF-16 without a BOM: ASCII text leaves a NUL in every other byte.
    if max(sample[0::2].count(0), sample[1::2].count(0)) > len(sample) // 4:
        return "utf16"
    return "binary"
