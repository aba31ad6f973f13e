"""A run's worker processes: results come back in the planned order, a dead worker costs one unit, and
a run on several processes writes the same card files and counts as a run on one."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest

from memoir.cards.config import load_settings
from memoir.flows.pipeline import run_pipeline
from memoir.flows.workers import GC_YOUNG, POOL_MIN_BYTES, WorkerUse, in_order, local_pool, workers_for

FIXTURES = Path(__file__).parent / "fixtures"


def slow_square(x: int, pause_s: float) -> int:
    import time

    time.sleep(pause_s)  # the first units finish last: the order taken must still be the planned one
    return x * x


def die_on(x: int, fatal: int) -> int:
    if x == fatal:
        os._exit(3)  # a worker killed mid-unit (out of memory, a signal)
    return x + 100


def test_results_come_back_in_the_order_the_units_were_planned_not_the_order_they_finished():
    units = [(i, 0.2 if i < 2 else 0.0) for i in range(12)]
    use = WorkerUse()
    with local_pool(2) as pool:
        got = list(in_order(pool, slow_square, units, lambda unit, exc: -1, use, window=2))
    assert got == [i * i for i in range(12)]
    assert use.cpu_s > 0 and use.peak_rss_mb > 0


def young_threshold(_: int) -> int:
    import gc

    return gc.get_threshold()[0]


def test_a_worker_wakes_the_cyclic_collector_as_seldom_as_the_run_does():
    with local_pool(2) as pool:
        got = list(in_order(pool, young_threshold, [(i,) for i in range(4)], lambda unit, exc: -1))
    assert got == [GC_YOUNG] * 4


def collector_awake(_: int) -> bool:
    import gc

    return gc.isenabled()


def test_a_unit_runs_with_the_cyclic_collector_asleep_and_wakes_it_after():
    import gc

    assert gc.isenabled()
    with local_pool(2) as pool:
        on_workers = list(in_order(pool, collector_awake, [(i,) for i in range(4)], lambda unit, exc: None))
    here = list(in_order(None, collector_awake, [(i,) for i in range(2)], lambda unit, exc: None))
    assert on_workers == [False] * 4 and here == [False] * 2
    assert gc.isenabled()


def test_a_worker_that_dies_costs_its_unit_and_the_units_left_run_in_the_run_process():
    lost = []
    with local_pool(2) as pool:
        got = list(in_order(pool, die_on, [(i, 4) for i in range(10)], lambda unit, exc: lost.append(unit) or None))
    assert lost == [(4, 4)]
    assert got[:4] == [100, 101, 102, 103] and got[4] is None and got[5:] == [105, 106, 107, 108, 109]


def test_without_a_pool_each_unit_runs_here():
    with local_pool(1) as pool:
        assert pool is None
        assert list(in_order(pool, slow_square, [(3, 0.0), (4, 0.0)], lambda unit, exc: -1)) == [9, 16]


@pytest.mark.parametrize(("setting", "files", "to_read", "cpus", "expected"), [
    (0, 10, POOL_MIN_BYTES, 2, 2),  # enough to read, two cores: both
    (0, 10, POOL_MIN_BYTES, 16, 4),  # at most four without being asked
    (0, 10, POOL_MIN_BYTES - 1, 8, 1),  # a small run: starting processes costs more than it saves
    (0, 1, 10 * POOL_MIN_BYTES, 8, 1),  # one file: nothing to share
    (0, 10, 10 * POOL_MIN_BYTES, 1, 1),  # one core
    (3, 1, 0, 1, 3),  # asked for: as asked
])
def test_how_many_processes_a_run_uses(setting, files, to_read, cpus, expected):
    assert workers_for(setting, files, to_read, cpus) == expected


def _run(logs: Path, home: Path, workers: int) -> tuple[dict[str, bytes], dict]:
    settings = dataclasses.replace(load_settings(home=home), read_workers=workers)
    summary = run_pipeline(settings, [logs], with_index=False).to_dict()
    cards = {p.name: p.read_bytes() for p in sorted(settings.cards_dir.glob("*.md"))}
    for key in ("elapsed_s", "steps_s", "workers"):
        summary.pop(key)
    return cards, summary


def test_a_run_on_two_processes_writes_the_same_cards_and_counts_as_a_run_on_one(tmp_path):
    logs = tmp_path / "logs"
    for name in ("real", "second_set"):
        for host in ("claude-code", "codex", "aider"):  # only logs: labels and notes sit beside them
            if (FIXTURES / name / host).is_dir():
                shutil.copytree(FIXTURES / name / host, logs / name / host)
    one_cards, one = _run(logs, tmp_path / "one", 1)
    two_cards, two = _run(logs, tmp_path / "two", 2)
    assert len(one_cards) > 20
    assert two_cards == one_cards
    assert json.dumps(two, sort_keys=True) == json.dumps(one, sort_keys=True)


def test_cards_rendered_on_two_processes_are_the_bytes_the_writer_renders_itself():
    from memoir.cards.store import render_card
    from memoir.cards.values import Card, Source
    from memoir.flows.ingest import RENDER_CHUNK, render_all

    cards = [Card(id=f"c-{i:016x}", created="2026-11-01T00:00:00Z", title=f"Pin the broker to 3.{i}",
                  workspace="/home/dev/app", conclusion=f"Pinning the broker to 3.{i} fixed the reconnect loop.",
                  sources=(Source(f"s{i}", "claude-code", "a.jsonl", (1, 9), (1, 4)),))
             for i in range(2 * RENDER_CHUNK + 5)]
    assert render_all(cards, 2) == [render_card(c) for c in cards]
    assert render_all(cards[:RENDER_CHUNK], 2) == [] and render_all(cards, 1) == []  # few cards, or one process: the writer's

