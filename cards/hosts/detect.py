"""Which host wrote a file, judged by the shape of its first lines (the path is only a tie-break).

Content first because logs get copied, renamed and exported; a path says where a file lives,
not what is in it.
"""

from __future__ import annotations

import json
from pathlib import PurePath

from memoir.cards.hosts.registry import ROWS

# Lines of the head tried in turn: junk or a NUL before the first record costs a line, not the file.
MAX_PROBE_LINES = 20
RAW_PROBE_CHARS = 65536  # a first line longer than the head (one Claude line can be 100+ KB): its keys


def _surest(sure: list[tuple[int, str]]) -> str | None:
    """The host whose sniff is surest; a tie goes to the earlier registry row."""
    best = max(sure, key=lambda s: s[0], default=(0, None))  # max keeps the first of equals
    return best[1] if best[0] > 0 else None


def detect_host(path: str | PurePath, head_bytes: bytes) -> str | None:
    """Host name for `--host auto` from the first bytes of a file, or None when unknown.

    Each registry row sniffs: a text format its first lines, a JSON-lines format each record.
    The first line that parses as some host's record decides: a junk first line (`[1,2,3]`), a
    line with a NUL byte or one nested too deeply is passed over, and the reader counts it.
    """
    text = head_bytes.decode("utf-8", errors="replace").lstrip("\ufeff")
    lines = [ln for ln in (raw.strip() for raw in text.splitlines()) if ln and "\x00" not in ln][:MAX_PROBE_LINES]
    if not lines:
        return None
    where = PurePath(path)
    for row in ROWS:
        if row.sniff_lines(lines, where):
            return row.name
    objects = [ln for ln in lines if ln.startswith("{")]
    for ln in objects:
        try:
            obj = json.loads(ln)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict) and (found := _surest([(row.sniff_record(obj), row.name) for row in ROWS])):
            return found
    if objects:
        return _surest([(row.sniff_raw(objects[0][:RAW_PROBE_CHARS]), row.name) for row in ROWS])
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
