"""SessionStart's backlog, the hook's side: start the previous session's run in the background, never wait for it.

Once the brief is printed, the hook client calls `start_backlog` (through flows/hook_slow_path.py).
It decides from the event and the settings alone, starts `memoir hook backlog HOST TRANSCRIPT`
detached (a session of its own, none of the hook's descriptors, its output in `state/backlog.log`)
and returns: the host waits for the hook's exit, which never waits for the child. The child's work,
finding the previous log and running the pipeline over it, is flows/session_backlog.py. Only the
standard library and the config module load here: the hook pays for them after its answer is out.
"""

from __future__ import annotations

import os
import sys

from memoir.cards.config import Settings, load_settings
from memoir.cards.private import make_private_dir, open_private

BACKLOG_LOG = "backlog.log"  # the child's own output: what a library printed, a traceback, its summary line
BACKLOG_RECORDS = "backlog.jsonl"  # one record per child: its outcome and the cards it wrote
LOG_MAX_BYTES = 1_000_000  # then rotated once to `.1`, as hook.jsonl is
BACKLOG_COMMAND = ("hook", "backlog")  # the CLI command the child runs (flows/cli/commands/hook.py)


def backlog_transcript(payload: object, enabled: bool, cwd: str) -> str:
    """The new session's transcript, absolute, whose previous session the child reads; '' to start nothing.

    A host that names no transcript (Copilot CLI's sessionStart) gets nothing: the previous session
    is known only as the newest other log beside this one.
    """
    if not enabled or not isinstance(payload, dict):
        return ""
    transcript = payload.get("transcript_path")
    if not isinstance(transcript, str) or not transcript.strip() or "\0" in transcript:
        return ""
    return os.path.normpath(os.path.join(cwd, os.path.expanduser(transcript)))


def backlog_command(home: str, host: str, transcript: str) -> list[str]:
    """The child's command line: this interpreter on memoir's CLI entry point, `-I` like the recall service
    (the user's folder and PYTHON* variables stay off its import path)."""
    return [sys.executable, "-I", "-c", "from memoir.flows.cli.main import main; main()", "--home", home,
            *BACKLOG_COMMAND, host, transcript]


def start_backlog(payload: object, settings: Settings | None, host: str) -> int | None:
    """Start the child for a session's start; its pid, or None when nothing was started.

    `settings` None: resolved here (the hook's fast path has only its environment). Never raises:
    the brief is out already, and whatever is not read now the next run reads.
    """
    try:
        settings = load_settings() if settings is None else settings
        transcript = backlog_transcript(payload, settings.session_start_backlog, os.getcwd())
        if not transcript:
            return None
        return spawn(backlog_command(str(settings.home), host, transcript), str(settings.state_dir))
    except Exception:  # noqa: BLE001 - a broken config or a full disk costs the backlog, never the brief
        return None


def spawn(cmd: list[str], state_dir: str) -> int:
    """Start `cmd` detached, its output appended to state/backlog.log; its pid. Raises OSError."""
    import subprocess  # deferred: start-up (~10 ms, paid once the brief is out)

    make_private_dir(state_dir)
    path = os.path.join(state_dir, BACKLOG_LOG)
    rotate(path, LOG_MAX_BYTES)
    log = open_private(path, os.O_WRONLY | os.O_APPEND)
    try:
        # A session of its own: the host may end the hook's process group; stdout is not the
        # hook's, or the host would wait for the child to close it.
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=state_dir,
                                start_new_session=True, close_fds=True)
    finally:
        os.close(log)
    return proc.pid


def rotate(path: str, max_bytes: int) -> None:
    """Move a log past `max_bytes` to `path.1` (the one before is dropped); a failure leaves it growing."""
    try:
        if os.stat(path).st_size > max_bytes:
            os.replace(path, path + ".1")
    except OSError:
        pass
