"""Host readers: one pure reader per session-log format, each described by one `Host` record.

Every reader is `read(data: bytes, path: str, start_line=0, carry=Carry()) -> ReadReport`; the
registry (`registry.ROWS`) lists the records: file names, sniffs, default roots, tool names.
"""

from __future__ import annotations

from memoir.cards.hosts.base import Carry, Host, ReaderError, ReadReport
from memoir.cards.hosts.detect import detect_host
from memoir.cards.hosts.registry import HOSTS, READERS, default_roots, reader_for
from memoir.cards.hosts.strip import strip_injected

__all__ = [
    "Carry",
    "HOSTS",
    "Host",
    "READERS",
    "ReadReport",
    "ReaderError",
    "default_roots",
    "detect_host",
    "reader_for",
    "strip_injected",
]
