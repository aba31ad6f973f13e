"""One batch, one worker: a lock file that a crashed worker's successor can reclaim."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

from memoir.cards.distill.errors import BatchLocked
from memoir.cards.incidents import raise_alert
from memoir.cards.private import FILE_MODE, make_private_dir


class BatchLock:
    """A lock file (pid, host, time) so one batch is distilled by one worker at a time.

    A worker that crashed leaves its lock behind; a lock older than `stale_after_s`, or whose pid
    is gone on this host, is reclaimed with an alert instead of blocking the batch forever.
    """

    def __init__(self, directory: Path, batch_id: str, stale_after_s: float):
        self.path = Path(directory) / f"{batch_id}.lock"
        self.batch_id = batch_id
        self.stale_after_s = stale_after_s
        self.alert = ""
        self._token = f"{os.getpid()}-{time.time_ns()}"

    def _holder(self) -> dict:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def _stale(self, holder: dict, now: float) -> str:
        created = holder.get("created")
        if not isinstance(created, (int, float)):
            return "unreadable lock file"
        if now - created > self.stale_after_s:
            return f"held {now - created:.0f}s by pid {holder.get('pid')} (stale after {self.stale_after_s:g}s)"
        if holder.get("host") == socket.gethostname() and not _pid_alive(holder.get("pid")):
            return f"pid {holder.get('pid')} on this host is gone"
        return ""

    def acquire(self, now: float | None = None) -> BatchLock:
        make_private_dir(self.path.parent)
        payload = json.dumps({
            "pid": os.getpid(), "host": socket.gethostname(), "created": time.time() if now is None else now,
            "token": self._token,
        })
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE)
            except FileExistsError:
                holder = self._holder()
                why = self._stale(holder, time.time() if now is None else now)
                if not why:
                    raise BatchLocked(f"batch {self.batch_id} is locked by pid {holder.get('pid')} ({self.path})") from None
                # Rename before reclaiming, so two workers reclaiming at once cannot both win.
                grave = self.path.with_suffix(f".stale-{self._token}")
                try:
                    os.replace(self.path, grave)
                    os.unlink(grave)
                except FileNotFoundError:
                    continue
                self.alert = raise_alert("stale_batch_lock", f"batch {self.batch_id}: reclaimed a lock {why}")
                continue
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(payload)
            return self
        raise BatchLocked(f"batch {self.batch_id}: lost the race to reclaim {self.path}")

    def release(self) -> None:
        if self._holder().get("token") == self._token:
            self.path.unlink(missing_ok=True)

    def __enter__(self) -> BatchLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _pid_alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
