"""SessionStart's backlog, the child's side: the previous session's log, read exactly as `memoir run` reads it.

`memoir hook backlog HOST TRANSCRIPT`, started detached by flows/hook_backlog.py, finds the newest
other log of the host beside the new session's transcript (the files a run would find in that
folder) and runs the pipeline over that one file: the same steps, the same read ledger (lines read
once are not read again, so a second start writes no card twice) and the same run lock, waited for
as a run waits (`run_lock_timeout_s`, at least LOCK_WAIT_S), then left to whoever holds it. The index is
updated, so the cards are recalled from the next prompt on; the turn index is left to the next run
or search. `session_start_backlog_timeout_s` bounds each step and the whole process. Each child
leaves one record in `state/backlog.jsonl`: its outcome, the logs it read and the cards it wrote, no path;
`memoir status` shows the last one (flows/status_sections.py `backlog_section`).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from memoir.cards.config import Settings
from memoir.cards.jsonl import JsonlError, append_jsonl
from memoir.cards.ledger import Ledger, LedgerEntry
from memoir.cards.log_files import iter_candidates
from memoir.cards.sanitize import sanitize
from memoir.flows.hook_backlog import BACKLOG_RECORDS, LOG_MAX_BYTES, rotate
from memoir.flows.lock import RunBusy, StepTimeout
from memoir.flows.pipeline import run_pipeline

# Another session's backlog holds the lock for seconds (most of them the model's load); a longer holder, a
# nightly or a person's `memoir run`, reads this log itself or leaves it to the next run: the child gives up.
LOCK_WAIT_S = 10.0
EXIT_DEADLINE = 124  # what the child exits with when its deadline ends it, as timeout(1) does
OUTCOMES = ("done", "unchanged", "no_previous", "busy", "timeout", "off", "error")


@dataclass(frozen=True)
class LogFile:
    """One log beside the new transcript, as the file system shows it now."""

    path: str
    size: int
    mtime_ns: int


@dataclass
class BacklogReport:
    """What one child did: its outcome (one of OUTCOMES), the logs its run read and the run's card counts."""

    host: str
    outcome: str = ""
    cards: dict[str, int] = field(default_factory=dict)
    detail: str = ""
    elapsed_s: float = 0.0
    logs: int = 0  # log files the run read: 1 when it ran over the previous session's, else 0

    def to_dict(self) -> dict:
        return {"ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": self.host, "outcome": self.outcome,
                "logs": self.logs, "cards": dict(sorted(self.cards.items())), "detail": self.detail,
                "elapsed_s": round(self.elapsed_s, 2)}


# --- the decisions -------------------------------------------------------------------------------------


def previous_log(current: str, logs: list[LogFile]) -> LogFile | None:
    """The newest log that is not the new session's own: the session before it (ties: the later path)."""
    others = [f for f in logs if f.path != current]
    return max(others, key=lambda f: (f.mtime_ns, f.path), default=None)


def already_read(entry: LedgerEntry | None, log: LogFile) -> bool:
    """The ledger's first rule (cards/ledger.py `plan_read`): a file of the size and mtime last read is unchanged.

    Checked before the run, so a start whose previous session was read already loads no model.
    A file replaced by one of the same size and mtime is left to the next full run, which hashes it.
    """
    return entry is not None and entry.size == log.size and entry.mtime_ns == log.mtime_ns


def lock_wait(settings: Settings) -> float:
    """How long the child waits for the run lock: as a run waits (run_lock_timeout_s), at least LOCK_WAIT_S,
    never past its deadline."""
    wait = max(float(settings.run_lock_timeout_s), LOCK_WAIT_S)
    deadline = settings.session_start_backlog_timeout_s
    return min(wait, float(deadline)) if deadline > 0 else wait


def run_settings(settings: Settings) -> Settings:
    """The run's settings: each step within the backlog's deadline, and no turn index (built by the next run
    or the first search: embedding every turn would take longer than the cards themselves)."""
    deadline = settings.session_start_backlog_timeout_s
    step = min(settings.step_timeout_s or deadline, deadline) if deadline > 0 else settings.step_timeout_s
    return replace(settings, step_timeout_s=step, turn_index_in_run=False)


# --- the I/O -------------------------------------------------------------------------------------------


def sibling_logs(transcript: str, host: str) -> list[LogFile]:
    """The host's logs in the transcript's folder, found as a run finds them; its subfolders' files
    (Claude Code's subagent transcripts) are left to the next full run."""
    folder = os.path.dirname(transcript)
    out = []
    for path in iter_candidates([Path(folder)], host):
        if os.path.dirname(str(path)) != folder:
            continue
        try:
            st = os.stat(path)
        except OSError:
            continue  # gone since the walk: nothing to read
        out.append(LogFile(str(path), st.st_size, st.st_mtime_ns))
    return out


def process_backlog(settings: Settings, host: str, transcript: str) -> BacklogReport:
    """Read the log of the session before `transcript`'s, as `memoir run --logs` reads it; record the outcome.

    Another run holding the home is not a failure: the report says `busy`. A memoir failure is
    recorded, then raised for the CLI to report in the child's log.
    """
    started = time.monotonic()
    report = BacklogReport(host)
    stop = arm_deadline(settings, report)
    try:
        report.outcome = work(settings, host, os.path.abspath(transcript), report)
    except RunBusy:
        report.outcome = "busy"
    except StepTimeout:
        report.outcome = "timeout"
    except Exception as exc:
        report.outcome, report.detail = "error", sanitize(f"{type(exc).__name__}: {exc}", settings.blob_cap)
        raise
    finally:
        stop.cancel()
        report.elapsed_s = time.monotonic() - started
        record(settings, report)
    return report


def work(settings: Settings, host: str, transcript: str, report: BacklogReport) -> str:
    """The outcome of one backlog: find the previous log, skip it when read already, else run over it."""
    if not settings.session_start_backlog:
        return "off"  # turned off after the hook started this child
    previous = previous_log(transcript, sibling_logs(transcript, host))
    if previous is None:
        return "no_previous"
    with Ledger.in_state_dir(settings.state_dir) as ledger:
        entry = ledger.get(previous.path)
    if already_read(entry, previous):
        return "unchanged"
    summary = run_pipeline(run_settings(settings), [Path(previous.path)], host="auto", lock_wait_s=lock_wait(settings))
    report.cards, report.logs = dict(summary.cards), summary.files_read
    return "done"


def arm_deadline(settings: Settings, report: BacklogReport) -> threading.Timer:
    """End this process at the backlog's deadline, wherever the run is: like any killed run, it leaves no
    lock (the kernel drops it), and what it had not committed to the ledger the next run reads again."""

    def expire() -> None:
        report.outcome, report.detail = "timeout", "the session_start_backlog_timeout_s deadline ended it"
        report.elapsed_s = float(settings.session_start_backlog_timeout_s)
        record(settings, report)
        os._exit(EXIT_DEADLINE)

    timer = threading.Timer(settings.session_start_backlog_timeout_s, expire)
    timer.daemon = True
    if settings.session_start_backlog_timeout_s > 0:
        timer.start()
    return timer


def record(settings: Settings, report: BacklogReport) -> None:
    """Append the report to state/backlog.jsonl (rotated past its size); a failure here is only the record's."""
    path = Path(settings.state_dir) / BACKLOG_RECORDS
    rotate(str(path), LOG_MAX_BYTES)
    try:
        append_jsonl(path, report.to_dict(), fsync=False)
    except JsonlError:
        pass
