"""Retention: run records and the logs beside them keep keep_runs records and keep_days days."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from datetime import datetime, timedelta, timezone

from memoir.cards.config import load_settings
from memoir.cards.jsonl import append_jsonl, read_jsonl
from memoir.cards.retention import Retention, retained
from memoir.cards.status import read_runs, record_run
from memoir.flows.pipeline import prune_state_logs

NOW = datetime(2026, 12, 1, 3, 30, tzinfo=timezone.utc)


def day(n: int) -> str:
    """n days before NOW, as the logs write times."""
    return (NOW - timedelta(days=n)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_the_newest_records_within_the_age_limit_are_kept_in_order():
    records = [{"finished": day(n), "n": n} for n in (40, 30, 20, 10, 5, 1)]
    assert [r["n"] for r in retained(records, "finished", Retention(4, 0), NOW)] == [20, 10, 5, 1]
    assert [r["n"] for r in retained(records, "finished", Retention(0, 15), NOW)] == [10, 5, 1]
    assert [r["n"] for r in retained(records, "finished", Retention(2, 15), NOW)] == [5, 1]
    assert retained(records, "finished", Retention(0, 0), NOW) == records  # 0 and 0: keep everything
    undated = [{"finished": "not a time", "n": 9}] + records[-1:]
    assert retained(undated, "finished", Retention(0, 1), NOW) == undated  # no time: judged by count alone


def test_an_alarms_latest_state_is_kept_however_old():
    history = [{"at": day(400), "name": "a", "state": "raised"}, {"at": day(300), "name": "b", "state": "raised"},
               {"at": day(200), "name": "b", "state": "cleared"}, {"at": day(1), "name": "c", "state": "raised"}]
    kept = retained(history, "at", Retention(1, 30), NOW, latest_per="name")
    assert kept == [history[0], history[2], history[3]]


def test_a_run_prunes_run_records_and_logs_by_the_settings(memoir_home):
    settings = replace(load_settings(home=memoir_home), keep_runs=6, keep_days=30, append_only_runs=3)
    state = settings.state_dir
    for n in range(60, 0, -5):  # 12 runs, every fifth day
        record_run(state, added=1, superseded=1, counts={"active": 1}, finished=day(n))
        append_jsonl(state / "model-runs.jsonl", {"finished": day(n), "model": "off", "counts": {}, "alerts": []})
    append_jsonl(state / "alarms.jsonl", {"at": day(90), "name": "old", "state": "raised"})
    for name, age in (("hook.jsonl.1", 40), ("recall.jsonl.1", 2)):
        (state / name).write_text(json.dumps({"ts": day(age)}) + "\n")
        stamp = (NOW - timedelta(days=age)).timestamp()
        os.utime(state / name, (stamp, stamp))

    gone = prune_state_logs(settings, now=NOW)
    assert [r.finished for r in read_runs(state)] == [day(n) for n in (30, 25, 20, 15, 10, 5)]  # 30 days, <= 6
    assert [r["finished"] for r in read_jsonl(state / "model-runs.jsonl")] == [day(n) for n in (30, 25, 20, 15, 10, 5)]
    assert read_jsonl(state / "alarms.jsonl") == [{"at": day(90), "name": "old", "state": "raised"}]
    assert not (state / "hook.jsonl.1").exists() and (state / "recall.jsonl.1").exists()
    assert gone == 6 + 6 + 1
    assert prune_state_logs(settings, now=NOW) == 0  # nothing more to prune: nothing rewritten


def test_keep_runs_never_drops_below_what_the_append_only_alarm_reads(memoir_home):
    settings = replace(load_settings(home=memoir_home), keep_runs=2, keep_days=0, append_only_runs=5)
    for n in range(8, 0, -1):
        record_run(settings.state_dir, added=1, superseded=0, counts={"active": 1}, finished=day(n))
    prune_state_logs(settings, now=NOW)
    assert len(read_runs(settings.state_dir)) == 5


def test_the_settings_come_from_the_config_file_and_the_environment(memoir_home, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("keep_runs = 50\nkeep_days = 90\n")
    s = load_settings(home=memoir_home, env={"MEMOIR_CONFIG": str(config), "MEMOIR_KEEP_DAYS": "7"})
    assert (s.keep_runs, s.keep_days) == (50, 7)
