"""A host-log line past `max_line_bytes` is skipped unread, counted, and the rest of the file is read."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from memoir.cards.collect import collect
from memoir.cards.config import load_settings
from memoir.cards.ledger import Ledger
from memoir.flows.pipeline import run_pipeline


def _line(sid: str, text: str) -> bytes:
    return (json.dumps({"session_id": sid, "role": "user", "text": text}) + "\n").encode()


def _wide(sid: str, n: int) -> bytes:
    """One wide, shallow JSON line of about `n` bytes: many short keys, the shape that costs most to decode."""
    keys = ",".join(f'"k{i}":{i}' for i in range(n // 12))
    return f'{{"session_id":"{sid}","role":"user","text":"x","extra":{{{keys}}}}}\n'.encode()


@pytest.fixture
def ledger(tmp_path):
    with Ledger.in_state_dir(tmp_path / "state") as led:
        yield led


@pytest.mark.parametrize("cap", [4096, 5000, 65536])
def test_a_line_over_the_cap_is_counted_and_the_lines_around_it_are_read(tmp_path, ledger, cap):
    log = tmp_path / "a.jsonl"
    log.write_bytes(_line("s", "before the big one") + _wide("s", 200_000) + _line("s", "after the big one")
                    + _wide("s", 150_000) + _line("s", "the last line"))
    r = collect([log], host="jsonl", ledger=ledger, line_cap=cap)
    assert [t.text for t in r.sessions[("jsonl", "s")]] == ["before the big one", "after the big one", "the last line"]
    assert [t.line for t in r.sessions[("jsonl", "s")]] == [1, 3, 5]  # lines keep their numbers
    assert r.skipped["bad_line_too_large"] == 2
    assert r.bytes_read == log.stat().st_size
    r.commit(ledger)
    assert ledger.get(str(log)).offset == log.stat().st_size


def test_a_grown_file_with_a_skipped_line_is_read_again_with_the_right_line_numbers(tmp_path, ledger):
    log = tmp_path / "a.jsonl"
    log.write_bytes(_line("s", "one") + _wide("s", 50_000) + _line("s", "two"))
    first = collect([log], host="jsonl", ledger=ledger, line_cap=4096)
    first.commit(ledger)
    assert ledger.get(str(log)).offset == log.stat().st_size  # the ledger counts the skipped line's bytes
    with log.open("ab") as fh:
        fh.write(_line("s", "three"))
    again = collect([log], host="jsonl", ledger=ledger, line_cap=4096)
    assert again.plans["appended"] == 1
    # A grown log is read again from its start (its unfinished task whole); lines keep their numbers.
    assert [(t.text, t.line) for t in again.sessions[("jsonl", "s")]] == [("one", 1), ("two", 3), ("three", 4)]
    assert again.skipped["bad_line_too_large"] == 1


def test_a_line_still_being_written_past_the_cap_is_left_for_the_next_run(tmp_path, ledger):
    log = tmp_path / "a.jsonl"
    log.write_bytes(_line("s", "one") + _wide("s", 40_000)[:-1])  # no newline yet
    r = collect([log], host="jsonl", ledger=ledger, line_cap=4096)
    assert [t.text for t in r.sessions[("jsonl", "s")]] == ["one"]
    assert "bad_line_too_large" not in r.skipped
    r.commit(ledger)
    assert ledger.get(str(log)).offset == len(_line("s", "one"))


def test_lines_under_the_cap_read_exactly_as_without_one(tmp_path, ledger):
    log = tmp_path / "a.jsonl"
    log.write_bytes(b"".join(_line("s", f"turn {i} " + "y" * (i * 37 % 900)) for i in range(300)))
    capped = collect([log], host="jsonl", line_cap=1000)
    plain = collect([log], host="jsonl")
    assert capped.sessions == plain.sessions and capped.skipped == plain.skipped


def test_memory_for_one_huge_line_stays_near_the_cap(tmp_path):
    log = tmp_path / "a.jsonl"
    log.write_bytes(_line("s", "one") + _wide("s", 24_000_000) + _line("s", "two"))
    tracemalloc.start()
    try:
        r = collect([log], host="jsonl", line_cap=1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [t.text for t in r.sessions[("jsonl", "s")]] == ["one", "two"]
    assert peak < 8 << 20, peak  # the line is 24 MB; decoding it would take hundreds


def test_a_run_counts_the_skip_and_takes_the_cap_from_settings(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.jsonl").write_bytes(_line("s", "fix the flaky login test please") + _wide("s", 100_000))
    settings = load_settings(home=tmp_path / "home", env={"MEMOIR_MAX_LINE_BYTES": "8192"})
    assert settings.max_line_bytes == 8192
    summary = run_pipeline(settings, [logs], host="jsonl", with_index=False)
    assert summary.skipped["bad_line_too_large"] == 1
    assert summary.turns == 1
