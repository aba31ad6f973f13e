"""Overflow end to end: refused card writes, a failing index update and a down model are queued
by the hot path, and `memoir replay` applies each exactly once after the cause is fixed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from memoir.cards.config import load_settings
from memoir.cards.store import parse_card
from memoir.cards.distill.llm import distill_batch
from memoir.cards.distill.llm_client import Endpoint
from memoir.flows.ingest import plan_experiences
from memoir.flows.queue import OverflowQueue
from memoir.flows.replay import queue_distill_batch, replay_queue
from tests.flowlogs import write_corpus
from tests.openai_server import ScriptedServer, refused_url, slots



def memoir(home: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "MEMOIR_HOME": str(home)}
    cmd = [sys.executable, "-c", "from memoir.flows.cli.main import main; main()", *args]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"memoir {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


@contextmanager
def immutable(path: Path):
    """chattr +i: even root cannot create files there (chmod denies nothing to root)."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["chattr", "+i", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def _cards(settings) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(settings.cards_dir.glob("*.md"))}


@pytest.fixture
def settings(memoir_home):
    return load_settings(home=memoir_home)


def test_read_only_card_dir_queues_every_card_and_replay_writes_each_once(tmp_path, settings, memoir_home):
    logs = write_corpus(tmp_path / "logs", sessions=3, loops=3)
    with immutable(settings.cards_dir):
        run = json.loads(memoir(memoir_home, "run", "--no-index", "--json", "--logs", str(logs)).stdout)
        assert list(settings.cards_dir.iterdir()) == []
    n = run["queued"]["card_write"]
    assert n >= 3 and run["cards"] == {} and set(run["queued"]) == {"card_write"}
    queue = OverflowQueue(settings.queue_dir)
    assert len(queue.names("pending", "card_write")) == n
    # The cause is fixed (immutable flag gone); replay writes each card exactly once.
    first = json.loads(memoir(memoir_home, "replay", "--json").stdout)
    assert first["applied"] == n and first["failed"] == 0 and first["left"] == 0
    assert first["actions"] == {"card_write:new": n}
    written = _cards(settings)
    assert len(written) == n
    second = json.loads(memoir(memoir_home, "replay", "--json").stdout)
    assert second["applied"] == 0 and second["left"] == 0
    assert _cards(settings) == written
    # The replayed cards are exactly what an unhindered run writes.
    other = tmp_path / "other-home"
    memoir(other, "run", "--no-index", "--logs", str(logs))
    assert {p.name: p.read_bytes() for p in sorted((other / "cards").glob("*.md"))} == written
    # And a later run sees them as its own (manifest recorded), writing nothing.
    again = json.loads(memoir(memoir_home, "run", "--no-index", "--json", "--logs", str(logs)).stdout)
    assert again["cards"].get("new", 0) == 0 and again["queued"] == {}


def test_an_item_failing_again_goes_back_once_with_its_error_then_applies(tmp_path, settings, memoir_home):
    logs = write_corpus(tmp_path / "logs", sessions=1, loops=2)
    with immutable(settings.cards_dir):
        run = json.loads(memoir(memoir_home, "run", "--no-index", "--json", "--logs", str(logs)).stdout)
        n = run["queued"]["card_write"]
        still = memoir(memoir_home, "replay", "--json", check=False)
        assert still.returncode == 1
        report = json.loads(still.stdout)
        assert report["applied"] == 0 and report["failed"] == n and report["left"] == n
    items = OverflowQueue(settings.queue_dir).items("pending")
    assert {i.attempts for i in items} == {1} and all("Errno" in i.last_error for i in items)
    fixed = json.loads(memoir(memoir_home, "replay", "--json").stdout)
    assert fixed["applied"] == n and len(_cards(settings)) == n


def test_a_hand_edited_card_is_never_overwritten_by_a_replay(tmp_path, settings, memoir_home):
    logs = write_corpus(tmp_path / "logs", sessions=1, loops=1)
    memoir(memoir_home, "run", "--no-index", "--logs", str(logs))
    (path,) = settings.cards_dir.glob("*.md")
    path.write_text(path.read_text() + "\nA person's note.\n")
    OverflowQueue(settings.queue_dir).add("card_write", path.stem, {"card_id": path.stem, "text": "---\nid: x\n---\n"})
    report = replay_queue(settings)
    assert report.actions == {"card_write:hand_edited": 1}
    assert path.read_text().endswith("A person's note.\n")


@pytest.mark.slow
def test_a_failing_index_update_is_queued_and_replayed_once(tmp_path, settings, memoir_home):
    logs = write_corpus(tmp_path / "logs", sessions=1, loops=3)
    memoir(memoir_home, "run", "--no-index", "--logs", str(logs))
    ids = sorted(p.stem for p in settings.cards_dir.glob("*.md"))
    queue = OverflowQueue(settings.queue_dir)
    queue.add("index_update", "batch-1", {"ids": ids})
    with immutable(settings.index_dir):  # no index.db can be created there
        report = replay_queue(settings)
        assert report.failed == 1 and report.applied == 0
    (item,) = queue.items("pending")
    assert item.attempts == 1 and item.last_error
    report = replay_queue(settings)
    assert report.applied == 1 and report.actions == {f"index_update:indexed {len(ids)}, skipped 0, removed 0": 1}
    from memoir.index.db import open_index
    from memoir.index.embed import default_embedder

    with open_index(settings.index_dir, default_embedder()) as index:
        assert sorted(index.hashes()) == ids
    assert replay_queue(settings).applied == 0


def test_a_down_model_queues_the_batch_and_replay_distills_it_once(tmp_path, settings, memoir_home):
    from memoir.cards.collect import collect
    from collections import Counter

    logs = write_corpus(tmp_path / "logs", sessions=1, loops=2)
    collected = collect([logs])
    pairs = plan_experiences(collected.sessions, settings, Counter())
    down = distill_batch(pairs, [Endpoint(refused_url(), "m")], timeout=2)
    assert down.requeue and sorted(down.pending) == sorted(c.id for _, c in pairs)
    queue = OverflowQueue(settings.queue_dir)
    queue_distill_batch(queue, "batch-0001", pairs, reason="endpoints unavailable")
    item = queue.items("pending")[0]
    assert "sk-" not in json.dumps(item.payload)  # sanitized turns and rendered cards only
    # Still down: the item goes back with its error, nothing written.
    report = replay_queue(settings, endpoints=(Endpoint(refused_url(), "m"),))
    assert report.failed == 1 and _cards(settings) == {}
    with ScriptedServer([slots()]) as srv:
        report = replay_queue(settings, endpoints=(Endpoint(srv.url, "scripted"),))
        assert report.applied == 1 and report.left == 0
        assert len(srv.received) == 2
        written = _cards(settings)
        # Each card went through the model: its answer, or the verified rule conclusion it could not
        # overrule (issue 24 mechanism 8: the scripted answer names nothing of this log's evidence).
        assert len(written) == 2 and all(b"quality: model" in v or b"scripted" in v or b"model_overruled" in v
                                         for v in written.values())
        assert replay_queue(settings, endpoints=(Endpoint(srv.url, "scripted"),)).applied == 0
        assert len(srv.received) == 2 and _cards(settings) == written


def test_replay_never_brings_back_a_card_forgotten_or_confirmed_meanwhile(tmp_path, settings, memoir_home):
    from memoir.cards.forget import forget
    from memoir.cards.review import confirm
    from memoir.cards.store import CardStore, render_card

    logs = write_corpus(tmp_path / "logs", sessions=2, loops=2)
    with immutable(settings.cards_dir):
        run = json.loads(memoir(memoir_home, "run", "--no-index", "--json", "--logs", str(logs)).stdout)
    assert run["queued"]["card_write"] >= 2
    queue = OverflowQueue(settings.queue_dir)
    items = queue.items(kind="card_write")
    gone, kept = items[0].payload["card_id"], items[1].payload["card_id"]
    store = CardStore(settings.cards_dir, settings.state_dir)
    # The person acts before the cause is fixed: one card is written by hand, confirmed, another forgotten.
    for item in items[:2]:
        store.write(parse_card(item.payload["text"]))
    forget(store, gone, why="not true")
    confirmed = confirm(store.read(kept))
    store.path_for(kept).write_text(render_card(confirmed))
    before_kept = store.path_for(kept).read_bytes()
    replay_queue(settings)
    assert not store.path_for(gone).exists()
    assert store.path_for(kept).read_bytes() == before_kept


@pytest.mark.slow
def test_replay_takes_the_ids_it_indexed_off_the_pending_list_so_index_check_is_healthy(tmp_path, settings, memoir_home):
    from memoir.index.pending import PendingIndex

    logs = write_corpus(tmp_path / "logs", sessions=1, loops=2)
    memoir(memoir_home, "run", "--logs", str(logs))
    ids = sorted(p.stem for p in settings.cards_dir.glob("*.md"))
    PendingIndex(settings.state_dir).add(ids)  # as `memoir review` leaves them when the index was busy
    assert memoir(memoir_home, "index", "check", check=False).returncode == 6  # stale: ids wait
    report = json.loads(memoir(memoir_home, "replay", "--json").stdout)
    assert report["index"]["indexed"] == len(ids)
    assert PendingIndex(settings.state_dir).ids() == []
    assert memoir(memoir_home, "index", "check").returncode == 0
