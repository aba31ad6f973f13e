"""The recall debug log, `state/recall.jsonl`: one sanitized record per recall, rotated once.

Its writer stays its own (one O_APPEND write of a UTF-8 line, no fsync: a recall must not wait on
the disk); its reader is the one JSON-lines reader, `cards.jsonl.read_jsonl`, from the tail.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from memoir.cards.jsonl import JsonlError, read_jsonl
from memoir.cards.sanitize.fields import sanitize_value
from memoir.index.files import RECALL_LOG_FILE

LOG_MAX_BYTES = 5_000_000  # then rotated once to recall.jsonl.1


def log_path(state_dir: Path) -> Path:
    return Path(state_dir) / RECALL_LOG_FILE


def append_record(state_dir: Path, record: dict) -> None:
    """One JSON line per recall, appended in one write; rotated once past `LOG_MAX_BYTES`.

    Every string of the record is sanitized here again, as every writer under the home does: the
    query was sanitized first thing, but candidates' titles, paths and errors took other ways in.
    """
    record = _sanitized(record)
    path = log_path(state_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if path.stat().st_size > LOG_MAX_BYTES:
            os.replace(path, path.with_name(RECALL_LOG_FILE + ".1"))
    except OSError:
        pass
    line = (json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


CLEAN_MAX = 20_000  # sanitized strings kept: a day's gate names, card ids and details, a few MB at most
_clean: dict[tuple, object] = {}


def _sanitized(value: object, key: object = None) -> object:
    """`sanitize_value(value)`, with each string (and list of strings, which it reads together as a
    command line) sanitized once per process: a record repeats the same gate names, statuses and
    card ids prompt after prompt, and scanning its ~200 strings afresh cost a warm recall ~10 ms."""
    if isinstance(value, dict):
        return {k: _sanitized(v, k) for k, v in value.items()}
    strings = isinstance(value, (list, tuple)) and len(value) > 1 and all(isinstance(v, str) for v in value)
    if isinstance(value, (list, tuple)) and not strings:
        return [_sanitized(v) for v in value]
    if not (strings or isinstance(value, str)):
        return value
    memo = (key, tuple(value) if strings else value)
    found = _clean.get(memo)
    if found is None:
        # Under its key, as the record's walk would see it: a key naming a secret changes the scan.
        found = sanitize_value({key: value})[key] if isinstance(key, str) else sanitize_value(value)
        if len(_clean) >= CLEAN_MAX:
            _clean.clear()
        _clean[memo] = found
    return list(found) if strings else found


def read_records(state_dir: Path, last: int = 1) -> list[dict]:
    """The newest `last` debug records, oldest first (reads only the file's tail); [] when unreadable."""
    try:
        return read_jsonl(log_path(state_dir), last=last)
    except JsonlError:
        return []
