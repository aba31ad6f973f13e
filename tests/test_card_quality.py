"""Cards from real logs, judged against the hand labels in tests/fixtures/real/labels.jsonl."""

from __future__ import annotations

import pytest

from bench.card_quality import FIXTURES, evaluate, load_labels


@pytest.fixture(scope="module")
def report():
    return evaluate(FIXTURES)


def test_the_labels_cover_every_real_fixture_log():
    labelled = {lb.file for lb in load_labels(FIXTURES / "labels.jsonl")}
    logs = {str(p.relative_to(FIXTURES)) for p in FIXTURES.rglob("*") if p.is_file()
            and p.parent != FIXTURES}
    assert labelled == logs


def test_no_active_card_from_a_real_log_is_junk(report):
    assert report.active > 0
    assert report.junk == []


def test_real_sessions_are_cut_where_a_person_would_cut_them(report):
    assert report.recall >= 0.8, report.missed
    assert report.precision >= 0.6, report.extra


def test_every_commit_that_ends_a_task_is_a_cut(report):
    assert report.commit_boundaries_cut >= 0.9 * report.commit_boundaries, report.missed
