"""A session's start reads the previous session's log in the background: real hook processes, real files.

The hook is run as `memoir hook install claude-code` writes it; it starts `memoir hook backlog` detached
(flows/hook_backlog.py), which runs the pipeline over the newest other log beside the new transcript
(flows/session_backlog.py). No duration is asserted: the tests hold the run lock where they need an
order, and poll the home with a generous deadline where they wait for the background run.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import shutil
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from memoir.cards.jsonl import read_jsonl
from memoir.flows.cli.hook_settings import hook_command
from memoir.flows.cli.main import cli
from memoir.flows.hook_backlog import BACKLOG_LOG, BACKLOG_RECORDS, backlog_command, backlog_transcript
from memoir.flows.hook_calls import read_calls
from memoir.flows.lock import LOCK_FILE
from memoir.index.db import open_index
from tests import test_hook
from tests.recall_cards import BASE, WORKSPACE, settings_for

ROOT = Path(__file__).resolve().parent.parent
HOOK = shlex.split(hook_command(None)) + ["SessionStart"]  # what `memoir hook install claude-code` writes for it
SESSION = ROOT / "tests" / "fixtures" / "hosts" / "claude_session.jsonl"  # one rule-made, active card
SESSION_CARD = "c-6ccc2a005c50a7f5"
WAIT_S = 120  # a generous deadline for the background run on a slow, busy machine; never a measure


# The home with one indexed card of WORKSPACE (a session's start prints a brief), from the hook's own tests.
home = test_hook.home


no_service = test_hook.starting  # the service's lock held: the hook starts no service of its own


@pytest.fixture
def project(tmp_path) -> Path:
    """A Claude Code projects folder: the previous session's log, then the new session's transcript."""
    folder = tmp_path / "claude" / "projects" / "-work-shop"
    folder.mkdir(parents=True)
    previous = folder / "0b5c1a2e-1111-4222-8333-944455556666.jsonl"
    shutil.copyfile(SESSION, previous)
    os.utime(previous, (time.time() - 3600, time.time() - 3600))  # an hour before the new session
    return folder


def new_transcript(folder: Path) -> Path:
    """The new session's transcript: its first line, written as the session starts."""
    path = folder / "9f0e1d2c-aaaa-4bbb-8ccc-000000000001.jsonl"
    path.write_text(json.dumps({"type": "summary", "summary": "new session", "leafUuid": "u-0"}) + "\n")
    return path


def session_start(transcript: Path | None, source: str = "startup") -> str:
    event = {"hook_event_name": "SessionStart", "source": source, "session_id": "new", "cwd": WORKSPACE}
    return json.dumps(event | ({"transcript_path": str(transcript)} if transcript else {}))


def hook_env(home: Path, **settings: str) -> dict:
    # A run that finds the lock held waits for it (the tests hold it to pin an order), up to WAIT_S.
    # The budgets are wide: two cold hooks at once on a busy machine take seconds (the defaults are the
    # product's; what is tested here is the order, not the speed).
    return {**os.environ, "MEMOIR_HOME": str(home), "MEMOIR_RUN_LOCK_TIMEOUT_S": str(WAIT_S),
            "MEMOIR_SESSION_START_BUDGET_MS": "30000", "MEMOIR_SYNC_TIMEOUT_MS": "30000", **settings}


def run_hook(home: Path, stdin: str, **settings: str) -> subprocess.CompletedProcess:
    return subprocess.run(HOOK, input=stdin, capture_output=True, text=True, cwd=ROOT, env=hook_env(home, **settings),
                          timeout=60)


def brief_of(out: subprocess.CompletedProcess) -> str:
    assert out.returncode == 0 and out.stderr == "", out.stderr
    spec = json.loads(out.stdout)["hookSpecificOutput"]
    assert spec["hookEventName"] == "SessionStart"
    return spec["additionalContext"]


def records(home: Path) -> list[dict]:
    return read_jsonl(Path(home) / "state" / BACKLOG_RECORDS)  # a line still being written is skipped


POLL_S = 0.2


def wait_for_records(home: Path, n: int) -> list[dict]:
    """The first `n` backlog records, once that many children have ended (polled, at most WAIT_S / POLL_S times:
    a bound on the waiting, never a measure of speed)."""
    for _ in range(int(WAIT_S / POLL_S)):
        found = records(home)
        if len(found) >= n:
            return found
        time.sleep(POLL_S)
    pytest.fail(f"fewer than {n} backlog records: {(Path(home) / 'state' / BACKLOG_LOG).read_text()}")


def card_files(home: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((Path(home) / "cards").glob("c-*.md"))}


@contextmanager
def run_lock_held(home: Path):
    """Hold the home's run lock as another run would (the flock memoir's runs take)."""
    state = Path(home) / "state"
    state.mkdir(parents=True, exist_ok=True)
    fd = os.open(state / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        os.close(fd)


def indexed_ids(home: Path, embedder) -> set[str]:
    with open_index(settings_for(home).index_dir, embedder) as index:
        return set(index.hashes())


# --- through the hook ------------------------------------------------------------------------------------


def test_the_brief_is_printed_while_the_previous_log_waits_then_its_cards_come_in_the_background(
        home, no_service, project, embedder):
    transcript = new_transcript(project)
    with run_lock_held(home):  # the background run cannot start its work until this is released
        out = run_hook(home, session_start(transcript))
        assert BASE.id in brief_of(out)  # the hook has exited with the brief ...
        assert f"{SESSION_CARD}.md" not in card_files(home) and records(home) == []  # ... and no card yet
    assert [c["outcome"] for c in read_calls(str(no_service))] == ["cold_start"]
    (record,) = wait_for_records(home, 1)
    assert record["outcome"] == "done" and record["cards"] == {"new": 1} and record["host"] == "claude-code"
    assert record["logs"] == 1
    assert f"{SESSION_CARD}.md" in card_files(home)
    assert SESSION_CARD in indexed_ids(home, embedder)  # recallable from the next prompt on
    assert "0b5c1a2e" not in json.dumps(record)  # the record names no log
    status = CliRunner().invoke(cli, ["--home", str(home), "status", "--json"])  # what a person sees of it
    assert json.loads(status.stdout)["backlog"]["last"] == record
    text = CliRunner().invoke(cli, ["--home", str(home), "status"]).output
    assert f"last {record['ts']}: done, 1 log read, 1 new" in text


def test_a_second_session_start_over_the_same_previous_log_writes_no_card_twice(home, no_service, project):
    transcript = new_transcript(project)
    run_hook(home, session_start(transcript))
    wait_for_records(home, 1)
    before = card_files(home)
    out = run_hook(home, session_start(transcript, source="compact"))  # the same session starts again
    assert BASE.id in brief_of(out)
    first, second = wait_for_records(home, 2)
    assert (first["outcome"], second["outcome"]) == ("done", "unchanged") and second["cards"] == {}
    assert (first["logs"], second["logs"]) == (1, 0)
    assert card_files(home) == before


def calls_of(home) -> list:
    return [(c.get("outcome"), c.get("detail", "")) for c in read_calls(str(Path(home) / "state"))]


def test_two_session_starts_at_once_make_each_card_once(home, no_service, project):
    stdin = session_start(new_transcript(project))
    with run_lock_held(home):  # both children start, and both wait for the one lock
        hooks = [subprocess.Popen(HOOK, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, cwd=ROOT, env=hook_env(home)) for _ in range(2)]
        outs = [h.communicate(stdin, timeout=60) for h in hooks]
    assert all(h.returncode == 0 and BASE.id in out for h, (out, _) in zip(hooks, outs)), (
        [(h.returncode, out[-300:], err[-300:]) for h, (out, err) in zip(hooks, outs)], calls_of(home))
    done = wait_for_records(home, 2)
    # One run writes the card; the other finds the lines in the ledger, before its run ("unchanged") or in
    # it (a run that reads nothing new), whichever order the two children took.
    assert {r["outcome"] for r in done} <= {"done", "unchanged"}
    assert sorted(r["cards"].get("new", 0) for r in done) == [0, 1]
    assert sorted(card_files(home)) == sorted([f"{BASE.id}.md", f"{SESSION_CARD}.md"])


def test_with_the_setting_off_a_session_start_starts_nothing(home, no_service, project):
    out = run_hook(home, session_start(new_transcript(project)), MEMOIR_SESSION_START_BACKLOG="false")
    assert BASE.id in brief_of(out)
    state = Path(home) / "state"
    assert not (state / BACKLOG_LOG).exists() and records(home) == []  # the child's log is opened before it starts


def test_a_session_start_that_names_no_transcript_starts_nothing(home, no_service, project):
    assert BASE.id in brief_of(run_hook(home, session_start(None)))
    assert not (Path(home) / "state" / BACKLOG_LOG).exists()


# --- the child, run as the hook starts it ------------------------------------------------------------------


def backlog(home: Path, transcript: Path, **settings: str) -> subprocess.CompletedProcess:
    cmd = backlog_command(str(home), "claude-code", str(transcript))
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env={**os.environ, **settings}, timeout=WAIT_S)


def test_a_backlog_that_finds_the_home_busy_exits_quietly_and_leaves_the_log_to_the_next_run(home, project):
    transcript = new_transcript(project)
    with run_lock_held(home):
        out = backlog(home, transcript, MEMOIR_RUN_LOCK_TIMEOUT_S="0")  # waits LOCK_WAIT_S, then gives up
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["outcome"] == "busy" and [r["outcome"] for r in records(home)] == ["busy"]
    assert list(card_files(home)) == [f"{BASE.id}.md"]
    again = backlog(home, transcript)
    assert json.loads(again.stdout)["outcome"] == "done" and f"{SESSION_CARD}.md" in card_files(home)


def test_a_first_session_has_no_previous_log_to_read(home, tmp_path):
    folder = tmp_path / "claude" / "projects" / "-work-new"
    folder.mkdir(parents=True)
    out = backlog(home, new_transcript(folder))
    assert out.returncode == 0 and json.loads(out.stdout)["outcome"] == "no_previous"


# --- the decisions -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("payload, enabled, expected", [
    ({"transcript_path": "/p/s.jsonl"}, True, "/p/s.jsonl"),
    ({"transcript_path": "s.jsonl"}, True, "/cwd/s.jsonl"),  # relative to the hook's folder
    ({"transcript_path": "/p/s.jsonl"}, False, ""),  # the setting is off
    ({"transcriptPath": "/p/s.jsonl"}, True, ""),  # no transcript named (Copilot CLI's sessionStart)
    ({"transcript_path": " "}, True, ""),
    ({"transcript_path": ["/p/s.jsonl"]}, True, ""),
    ("not an event", True, ""),
])
def test_the_hook_starts_a_backlog_only_for_a_transcript_it_is_given(payload, enabled, expected):
    assert backlog_transcript(payload, enabled, "/cwd") == expected
