"""The pending-index list: durable, idempotent by id, each id applied once."""

from __future__ import annotations

import pytest

from memoir.index.pending import PendingIndex


def test_adding_an_id_twice_keeps_one_entry(tmp_path):
    pending = PendingIndex(tmp_path)
    pending.add(["c-1", "c-2"])
    pending.add(["c-1"])
    assert pending.ids() == ["c-1", "c-2"]
    assert PendingIndex(tmp_path).ids() == ["c-1", "c-2"]  # survives a new process


def test_drain_applies_each_id_once_and_empties_the_list(tmp_path):
    pending = PendingIndex(tmp_path)
    pending.add(["c-1", "c-2", "c-3"])
    seen: list[str] = []
    report = pending.drain(seen.extend, batch=2)
    assert seen == ["c-1", "c-2", "c-3"] and report.applied == ("c-1", "c-2", "c-3")
    assert pending.drain(seen.extend).applied == () and seen == ["c-1", "c-2", "c-3"]


def test_a_failing_batch_stays_pending_and_stops_the_drain(tmp_path):
    pending = PendingIndex(tmp_path)
    pending.add(["c-1", "c-2", "c-3"])
    calls: list[list[str]] = []

    def apply(ids):
        calls.append(ids)
        if "c-2" in ids:
            raise OSError("disk full")

    report = pending.drain(apply, batch=1)
    assert report.applied == ("c-1",) and report.left == ("c-2", "c-3") and "disk full" in report.error
    assert calls == [["c-1"], ["c-2"]]
    assert pending.ids() == ["c-2", "c-3"]


@pytest.mark.parametrize("bad", ["../x", "", ".hidden", "a/b"])
def test_ids_that_are_not_file_names_are_refused(tmp_path, bad):
    with pytest.raises(ValueError):
        PendingIndex(tmp_path).add([bad])
