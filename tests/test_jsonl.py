"""cards/jsonl.py: memoir's own JSON-lines logs survive a torn last line."""

from __future__ import annotations

import json

import pytest

from memoir.cards.jsonl import JsonlError, append_jsonl, read_jsonl


def test_a_missing_log_reads_as_empty(tmp_path):
    assert read_jsonl(tmp_path / "none.jsonl") == []


def test_a_torn_last_line_is_skipped_and_the_next_append_starts_a_new_line(tmp_path):
    path = tmp_path / "runs.jsonl"
    append_jsonl(path, {"n": 1})
    with path.open("a") as fh:
        fh.write('{"n": 2, "cut')  # a crash mid-write
    assert read_jsonl(path) == [{"n": 1}]
    append_jsonl(path, {"n": 3})
    assert read_jsonl(path) == [{"n": 1}, {"n": 3}]
    assert path.read_text().splitlines()[-1] == json.dumps({"n": 3})


def test_lines_that_are_not_objects_are_skipped(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('[1, 2]\n"text"\n{"ok": true}\nnot json\n')
    assert read_jsonl(path) == [{"ok": True}]


def test_last_reads_only_the_newest_records(tmp_path):
    path = tmp_path / "recall.jsonl"
    for n in range(50):
        append_jsonl(path, {"n": n}, fsync=False)
    assert read_jsonl(path, last=2) == [{"n": 48}, {"n": 49}]


def test_an_unreadable_log_is_a_typed_error(tmp_path):
    folder = tmp_path / "a-folder.jsonl"
    folder.mkdir()
    with pytest.raises(JsonlError, match="cannot read"):
        read_jsonl(folder)
    with pytest.raises(JsonlError, match="cannot append"):
        append_jsonl(folder, {"n": 1})
