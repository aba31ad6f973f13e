"""Host readers: one pure reader per session-log format, a registry, and the default log roots.

Every reader is `read(data: bytes, path: str, start_line=0, carry=Carry()) -> ReadResult`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from memoir.cards.hosts import aider, claude_code, codex, jsonl
from memoir.cards.hosts.base import Carry, ReaderError, ReadResult
from memoir.cards.hosts.detect import detect_host
from memoir.cards.hosts.strip import strip_injected

Reader = Callable[..., ReadResult]

READERS: dict[str, Reader] = {
    claude_code.HOST: claude_code.read,
    codex.HOST: codex.read,
    aider.HOST: aider.read,
    jsonl.HOST: jsonl.read,
}
HOSTS = tuple(READERS)
# Formats whose sessions are named by a header: an appended read restarts at the last header.
HEADER_SESSIONS = frozenset({aider.HOST})


def default_roots(home: Path) -> dict[str, Path]:
    """Where hosts keep their logs under `home`; aider files are only read from paths given."""
    return {
        claude_code.HOST: home / ".claude" / "projects",
        codex.HOST: home / ".codex" / "sessions",
    }


def reader_for(host: str) -> Reader:
    try:
        return READERS[host]
    except KeyError:
        raise ReaderError(f"unknown host {host!r}; use one of: {', '.join(HOSTS)} or auto") from None


__all__ = [
    "Carry",
    "HOSTS",
    "READERS",
    "ReadResult",
    "ReaderError",
    "default_roots",
    "detect_host",
    "reader_for",
    "strip_injected",
]
