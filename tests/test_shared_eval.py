"""How the benches place cards on labelled experiences of a set (bench/shared_eval.py), on hand-made labels."""

from __future__ import annotations

from bench.shared_eval import best_label, shared_dir, superseded_keys
from memoir.cards.values import Card, Source

LABELS = [
    {"id": "e1", "file": "a/s1.jsonl", "start_line": 1, "end_line": 10, "card": True, "supersedes": None},
    {"id": "e2", "file": "a/s1.jsonl", "start_line": 11, "end_line": 40, "card": False, "supersedes": None},
    {"id": "e3", "file": "a/s2.jsonl", "start_line": 1, "end_line": 30, "card": True, "supersedes": "e1"},
    {"id": "e4", "file": "a/s3.jsonl", "start_line": 1, "end_line": 9, "card": True,
     "supersedes": {"file": "a/s2.jsonl", "start_line": 1}},
]


def test_a_card_counts_for_the_experience_its_sources_overlap_most(tmp_path):
    logs = tmp_path / "logs"
    card = Card(id="c-1", sources=(Source("s1", "claude-code", str(logs / "a" / "s1.jsonl"), (8, 30), (0, 5)),))
    assert best_label(card, LABELS, logs)["id"] == "e2"  # 20 lines of e2, 3 of e1
    elsewhere = Card(id="c-2", sources=(Source("s9", "claude-code", str(tmp_path / "other" / "s1.jsonl"), (1, 9), (0, 2)),))
    assert best_label(elsewhere, LABELS, logs) is None


def test_superseded_experiences_are_named_by_id_or_by_place():
    assert superseded_keys(LABELS) == {("a/s1.jsonl", 1), ("a/s2.jsonl", 1)}


def test_a_folder_without_eval_is_no_shared_folder(tmp_path):
    assert shared_dir(tmp_path) is None
    (tmp_path / "eval").mkdir()
    assert shared_dir(tmp_path) == tmp_path
