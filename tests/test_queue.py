"""The overflow queue's file mechanics: idempotent add, atomic moves, fail-back, reclaim, report."""

from __future__ import annotations

import os
import time

import pytest

from memoir.flows.queue import OverflowQueue, QueueError, queue_report


@pytest.fixture
def queue(tmp_path):
    return OverflowQueue(tmp_path / "queue", claim_timeout_s=60)


def _files(queue, state):
    folder = queue.root / state
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_adding_the_same_key_twice_leaves_one_pending_item_with_the_latest_payload(queue):
    queue.add("card_write", "c-1", {"text": "old"})
    queue.add("card_write", "c-1", {"text": "new"})
    items = queue.items("pending")
    assert [i.key for i in items] == ["c-1"] and items[0].payload == {"text": "new"}


def test_claim_complete_moves_the_file_and_a_second_claim_gets_nothing(queue):
    item = queue.add("index_update", "c-2", {"ids": ["c-2"]})
    claimed = queue.claim(item.name)
    assert claimed is not None and _files(queue, "pending") == [] and _files(queue, "claimed") == [item.name]
    assert queue.claim(item.name) is None
    queue.complete(claimed)
    assert _files(queue, "claimed") == [] and _files(queue, "done") == [item.name]


def test_a_failed_item_goes_back_to_pending_with_attempts_and_error(queue):
    item = queue.claim(queue.add("card_write", "c-3", {"text": "x"}).name)
    queue.fail(item, "PermissionError: [Errno 1] Operation not permitted")
    (back,) = queue.items("pending")
    assert back.attempts == 1 and back.last_error.startswith("PermissionError") and back.payload == {"text": "x"}
    assert _files(queue, "claimed") == []


def test_a_claim_older_than_the_timeout_is_reclaimed_and_a_fresh_one_is_not(queue):
    a = queue.claim(queue.add("card_write", "c-a", {}).name)
    queue.claim(queue.add("card_write", "c-b", {}).name)
    old = time.time() - 120
    os.utime(queue.root / "claimed" / a.name, (old, old))
    assert queue.reclaim_stale() == [a.name]
    assert [i.key for i in queue.items("pending")] == ["c-a"]
    assert _files(queue, "claimed") == ["card_write--c-b.json"]


def test_temp_files_of_a_killed_write_are_ignored_then_cleaned(queue):
    queue.add("card_write", "c-4", {})
    (queue.root / "pending" / ".card_write--c-5.json.abc123.tmp").write_text("{half")
    assert [i.key for i in queue.items("pending")] == ["c-4"]
    assert queue.clean_temp_files() == 1
    assert _files(queue, "pending") == ["card_write--c-4.json"]


def test_unknown_kinds_and_path_like_keys_are_refused(queue):
    with pytest.raises(QueueError):
        queue.add("email", "c-1", {})
    with pytest.raises(QueueError):
        queue.add("card_write", "../../etc/passwd", {})


def test_queue_report_counts_by_kind_and_names_the_oldest_failing_item(queue):
    queue.add("card_write", "c-1", {})
    time.sleep(0.01)
    queue.add("distill_batch", "b-1", {})
    queue.fail(queue.claim("card_write--c-1.json"), "OSError: quota")
    report = queue_report(queue.root, pending_index_ids=2)
    assert report["pending"] == {"card_write": 1, "index_update": 2, "distill_batch": 1}
    assert report["pending_total"] == 4
    assert report["oldest_pending"]["key"] == "c-1" and report["oldest_pending"]["attempts"] == 1
    assert report["failing"] == ["card_write:c-1 (1x: OSError: quota)"]


def test_an_item_file_holds_no_secret_whatever_its_payload_held(tmp_path):
    q = OverflowQueue(tmp_path / "queue")
    q.add("card_write", "c-1", {"card_id": "c-1", "text": "deploy\npassword: Xy9zHunter2k\n"},
          error="Permission denied: '/mnt/10.42.7.19/cards/c-1.md'")
    data = next((tmp_path / "queue" / "pending").glob("*.json")).read_text()
    assert "Xy9zHunter2k" not in data and "10.42.7.19" not in data
    item = q.items()[0]
    assert item.payload["card_id"] == "c-1" and item.payload["text"].startswith("deploy\npassword: [REDACTED:")


def test_an_item_an_older_memoir_queued_raw_is_read_sanitized(tmp_path):
    q = OverflowQueue(tmp_path / "queue")
    q.add("card_write", "c-2", {"card_id": "c-2", "text": "clean"})
    path = next((tmp_path / "queue" / "pending").glob("*.json"))
    path.write_text(path.read_text().replace('"clean"', '"deploy\\npassword: Xy9zHunter2k\\n"'))
    assert "Xy9zHunter2k" in path.read_text()
    assert "Xy9zHunter2k" not in q.items()[0].payload["text"]
