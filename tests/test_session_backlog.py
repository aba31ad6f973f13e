"""The backlog child's decisions (flows/session_backlog.py): which log is the previous session's, and
whether the ledger has read it already. The child itself runs in tests/test_hook_backlog.py."""

from __future__ import annotations

import os
from pathlib import Path

from memoir.cards.ledger import LedgerEntry
from memoir.cards.config import Settings
from memoir.flows.session_backlog import LOCK_WAIT_S, LogFile, already_read, lock_wait, previous_log, run_settings, \
    sibling_logs


def log(path: str, mtime_ns: int, size: int = 10) -> LogFile:
    return LogFile(path, size, mtime_ns)


def entry(size: int, mtime_ns: int) -> LedgerEntry:
    return LedgerEntry(path="p", host="claude-code", size=size, mtime_ns=mtime_ns, offset=size, lines=1,
                       resume_offset=0, resume_line=0, next_seq=1, prefix_sha256="")


def test_the_previous_session_is_the_newest_other_log():
    logs = [log("/p/a.jsonl", 1), log("/p/b.jsonl", 3), log("/p/new.jsonl", 5), log("/p/c.jsonl", 2)]
    assert previous_log("/p/new.jsonl", logs) == log("/p/b.jsonl", 3)


def test_the_new_sessions_own_transcript_is_never_its_previous_session():
    assert previous_log("/p/new.jsonl", [log("/p/new.jsonl", 5)]) is None
    assert previous_log("/p/new.jsonl", []) is None


def test_equal_times_pick_the_later_path_so_the_choice_is_stable():
    assert previous_log("/p/new.jsonl", [log("/p/b.jsonl", 3), log("/p/a.jsonl", 3)]).path == "/p/b.jsonl"


def test_a_log_of_the_size_and_mtime_last_read_is_not_run_again():
    assert already_read(entry(10, 7), log("/p/a.jsonl", 7, size=10))
    assert not already_read(entry(10, 7), log("/p/a.jsonl", 8, size=12))  # grown since
    assert not already_read(None, log("/p/a.jsonl", 7))  # never read


def test_the_run_keeps_within_the_backlogs_deadline_and_leaves_the_turn_index():
    settings = run_settings(Settings(step_timeout_s=1800, session_start_backlog_timeout_s=60))
    assert settings.step_timeout_s == 60 and settings.turn_index_in_run is False
    assert run_settings(Settings(step_timeout_s=30, session_start_backlog_timeout_s=60)).step_timeout_s == 30


def test_the_lock_is_waited_for_as_a_run_waits_at_least_a_little_never_past_the_deadline():
    assert lock_wait(Settings(run_lock_timeout_s=0)) == LOCK_WAIT_S
    assert lock_wait(Settings(run_lock_timeout_s=300, session_start_backlog_timeout_s=600)) == 300
    assert lock_wait(Settings(run_lock_timeout_s=300, session_start_backlog_timeout_s=2)) == 2


def test_only_the_hosts_logs_in_the_transcripts_own_folder_are_candidates(tmp_path):
    folder = tmp_path / "projects" / "-work-shop"
    subagents = folder / "0b5c1a2e" / "subagents"
    subagents.mkdir(parents=True)
    for path in (folder / "a.jsonl", folder / "new.jsonl", folder / "notes.txt", subagents / "agent-1.jsonl"):
        path.write_text("{}\n")
    found = sibling_logs(str(folder / "new.jsonl"), "claude-code")
    assert sorted(Path(f.path).name for f in found) == ["a.jsonl", "new.jsonl"]
    assert all(os.path.isabs(f.path) for f in found)
