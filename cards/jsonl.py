"""The one JSON-lines reader and writer for memoir's own logs (runs, alarms, recall, model runs).

A crash can leave a torn last line: the reader skips any line that is not a JSON object and the
writer starts a new line first, so one torn line never spoils the next record. Host logs are not
read here: the host readers in memoir.cards.hosts count their bad lines by reason.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from memoir.cards.errors import CardsError
from memoir.cards.private import make_private_dir, open_private


class JsonlError(CardsError):
    """A memoir log could not be read or appended to."""


def read_jsonl(path: Path, last: int | None = None, tail_bytes: int = 256_000) -> list[dict]:
    """Every well-formed object line, oldest first; with `last`, only the newest `last`, read from the tail.

    A missing file is empty. Raises JsonlError when the file exists but cannot be read.
    """
    path = Path(path)
    try:
        with path.open("rb") as fh:
            if last is not None:
                fh.seek(0, os.SEEK_END)
                fh.seek(max(0, fh.tell() - tail_bytes * last))
            raw = fh.read()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise JsonlError(f"cannot read {path}: {exc}; check the state dir's permissions") from exc
    out: list[dict] = []
    for line in raw.splitlines():
        try:
            item = json.loads(line)
        except ValueError:  # a torn line (a crash mid-write) or a line cut by the tail read
            continue
        if isinstance(item, dict):
            out.append(item)
    return out if last is None else out[-last:]


def append_jsonl(path: Path, record: dict, fsync: bool = True) -> None:
    """Append one record as a line (sorted keys); a torn last line is ended first. Raises JsonlError."""
    path = Path(path)
    line = json.dumps(record, sort_keys=True) + "\n"
    try:
        make_private_dir(path.parent)
        with os.fdopen(open_private(path, os.O_RDWR | os.O_APPEND), "a+b") as fh:
            end = fh.seek(0, os.SEEK_END)
            if end > 0:
                fh.seek(end - 1)
                if fh.read(1) != b"\n":
                    line = "\n" + line
            fh.write(line.encode("utf-8"))
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
    except OSError as exc:
        raise JsonlError(f"cannot append to {path}: {exc}; check the state dir's permissions and free space") from exc
