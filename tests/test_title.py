"""Titles say what was learned, never the first prompt as typed."""

from __future__ import annotations

import pytest

from memoir.cards.values import Card
from memoir.cards.title import MAX_TITLE, clean_request, clip_title, display_title, make_title


@pytest.mark.parametrize("typed, cleaned", [
    ("ok, next: tests/test_load.py (8 threads) flakes", "Tests/test_load.py (8 threads) flakes"),
    ("new task: migrate the orders table to bigint ids", "Migrate the orders table to bigint ids"),
    ("unrelated, but why is CI slow on main?", "Why is CI slow on main?"),
    ("one more thing: bump ruff to 0.8", "Bump ruff to 0.8"),
    ("back after lunch. the export still times out", "The export still times out"),
    ("hey can you please fix the flaky login test", "Fix the flaky login test"),
    ("[Request interrupted by user]\nretry the migration with --fake", "Retry the migration with --fake"),
    ("/review\nlook at the diff of the pool change", "Look at the diff of the pool change"),
])
def test_conversational_openers_and_host_boilerplate_are_dropped(typed, cleaned):
    assert clean_request(typed) == cleaned


def test_a_signature_title_names_the_failure_and_the_fix():
    title = make_title(signature="OperationalError: database is locked",
                       conclusion="Perfect! The seed connection was never closed; committing and closing it fixes the lock.",
                       request="ok, next: backfill dies with --workers 6")
    assert title.startswith("`OperationalError: database is locked`: The seed connection was never closed")
    assert len(title) <= MAX_TITLE


def test_a_commit_subject_is_the_title_of_a_task_without_an_error():
    assert make_title(commit_subject="Add --json to the export command", request="hi") == "Add --json to the export command"


def test_an_unsettled_card_falls_back_to_the_cleaned_request():
    assert make_title(conclusion="Let me look at the logs next.", request="ok, next: find why the worker leaks memory",
                      settled=False) == "Find why the worker leaks memory"


def test_titles_are_clipped_at_a_word_and_never_leave_a_backtick_open():
    long = "Use `connect_args={'timeout': 30}` and WAL mode so six writer processes stop failing on the shared database file"
    title = clip_title(long)
    assert len(title) <= MAX_TITLE and title.endswith("…") and title.count("`") % 2 == 0


def test_a_card_written_before_titles_shows_its_cleaned_goal():
    card = Card(id="c-1", goal="ok, next: make the nightly export idempotent", conclusion="x")
    assert display_title(card) == "Make the nightly export idempotent"
    assert display_title(Card(id="c-2", title="Given title")) == "Given title"
