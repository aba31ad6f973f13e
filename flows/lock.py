"""One run at a time per memoir home, and a deadline for every step of a run.

The lock is `fcntl.flock` on `state/run.lock`, memoir's own file (never a host log). The kernel
drops a flock when its holder dies, even by SIGKILL, so a killed run never leaves a stale lock.
Exactly one place takes it for each kind of work (`run_pipeline`, `replay_queue`, each Prefect flow
body); the CLI never does. It is not re-entrant: a second take in the same process, even from
another thread, waits and is refused like any other run's.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memoir.cards.private import make_private_dir, open_private
from memoir.flows.errors import Busy, FlowError

LOCK_FILE = "run.lock"
POLL_S = 0.1  # how often a waiting run retries the lock


class RunBusy(Busy):
    """Another memoir run holds this home's lock; the message says who and what to do."""


class StepTimeout(FlowError):
    """A step of a run went past its deadline (settings.step_timeout_s)."""




def held_by_a_live_process(path: Path) -> bool:
    """Whether some process holds an flock on `path` (a missing file: nobody). A probe only: it takes
    a shared lock for an instant, which fails while anyone holds the exclusive one."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def _holder(path: Path) -> str:
    try:
        info = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return "another memoir process"
    return f"pid {info.get('pid', '?')} (started {info.get('started', '?')}, {info.get('what', 'run')})"


@contextmanager
def run_lock(state_dir: Path, wait_s: float = 0.0, what: str = "run") -> Iterator[None]:
    """Hold the home's run lock for the block; wait up to `wait_s` seconds, then raise `RunBusy`."""
    path = Path(state_dir) / LOCK_FILE
    make_private_dir(path.parent)
    fd = open_private(path, os.O_RDWR)
    deadline = time.monotonic() + max(wait_s, 0.0)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise RunBusy(
                        f"another memoir {_holder(path)} is working on this home ({path}); "
                        f"waited {wait_s:g} s. Let it finish, or pass --wait SECONDS to queue behind it"
                    ) from None
                time.sleep(POLL_S)
        info = {"pid": os.getpid(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "what": what}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # closing the descriptor releases the flock


class Deadline:
    """A step's deadline the work checks itself, between files or batches: it works in any thread
    and any process (a Prefect task runner's worker), where a signal or Prefect's thread timeout
    cannot interrupt blocking work. None or 0: no limit."""

    def __init__(self, step: str, seconds: float | None):
        self.step, self.seconds = step, seconds
        self.started = time.monotonic()

    def check(self) -> None:
        """Raise `StepTimeout` once the step has run past its deadline."""
        if self.seconds and self.seconds > 0 and time.monotonic() - self.started > self.seconds:
            raise StepTimeout(f"step {self.step!r} ran past its {self.seconds:g} s deadline (step_timeout_s); "
                              "the run stopped before committing, so rerunning it is safe")


@contextmanager
def step_deadline(step: str, seconds: float | None) -> Iterator[None]:
    """Raise `StepTimeout` in the main thread when the block runs past `seconds`.

    Uses SIGALRM, which interrupts blocking reads and sleeps too; off the main thread (where
    Prefect's own `timeout_seconds` applies) or with no limit it does nothing.
    """
    if not seconds or seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum, frame):
        raise StepTimeout(f"step {step!r} ran past its {seconds:g} s deadline (step_timeout_s); "
                          "the run stopped before committing, so rerunning it is safe")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
