"""A card's limits come from what the agent said: scope sentences in the conclusion, never the fixed error."""

from __future__ import annotations

from memoir.cards.draft import draft_card
from memoir.cards.limits import scope_limits
from memoir.cards.quality_gates import judge_card
from memoir.cards.quality_inputs import EvidenceView
from memoir.cards.segment import segment_session
from tests.turns import Script


def test_scope_sentences_are_read_as_limits():
    text = ("Setting busy_timeout=5000 stops the lock errors. This does not apply when two processes share the "
            "file over NFS. It only matters for SQLite; Postgres has row locks. Works everywhere except on Windows.")
    assert scope_limits(text) == [
        "This does not apply when two processes share the file over NFS.",
        "It only matters for SQLite; Postgres has row locks.",
        "Works everywhere except on Windows.",
    ]


def test_a_sentence_the_agent_labels_as_a_limit_is_one():
    text = "Added the return after http.Error.\n\nCaveat: the same log line also shows when a body is written first."
    assert scope_limits(text) == ["Caveat: the same log line also shows when a body is written first."]


def test_only_and_unless_as_words_of_emphasis_are_no_limits():
    assert scope_limits("The only fix is to close the cursor. Not only reads but writes leaked too.") == []


def _edit(script: Script, path: str) -> Script:
    return script._add("assistant", "tool_call", f'Edit {{"file_path": "{path}"}}', None, tool="Edit")


def _loop(closing: str):
    s = (Script().user("pytest tests/test_export.py fails with sqlite3.OperationalError: database is locked")
            .runs("pytest tests/test_export.py").error("sqlite3.OperationalError: database is locked")
            .says("The exporter opened a second connection while the first still held a write transaction."))
    return (_edit(s, "app/export.py")
            .runs("pytest tests/test_export.py").result("12 passed in 0.8s")
            .says(closing))


def test_a_scope_sentence_of_the_conclusion_becomes_a_counterexample():
    s = _loop("The exporter now reuses the request's connection, so the write lock is never held twice; "
              "12 tests pass. This does not apply when the exporter runs in its own process, which needs its own "
              "connection and a busy timeout.")
    (exp,) = segment_session(s.turns)
    card = draft_card(exp)
    assert "does not apply when the exporter runs in its own process" in card.conclusion
    assert "- stated limit: This does not apply when the exporter runs in its own process" in card.counterexamples


def test_the_fixed_error_is_not_a_limit_and_a_checked_card_needs_none():
    s = _loop("The exporter now reuses the request's connection, so the write lock is never held twice; 12 tests pass.")
    (exp,) = segment_session(s.turns)
    card = draft_card(exp)
    assert card.verified_by
    assert "database is locked" not in card.counterexamples  # the error the fix removed is in Evidence
    assert "database is locked" in card.evidence
    verdict = judge_card(card, EvidenceView.of_experience(exp), [])
    assert verdict.passed, verdict.reasons


def test_a_user_sentence_that_only_restates_the_error_is_no_condition_but_a_real_condition_stays():
    s = _loop("The exporter now reuses the request's connection, so the write lock is never held twice; 12 tests pass.")
    s.turns.insert(1, s.turns[0].__class__(**{**{f: getattr(s.turns[0], f) for f in s.turns[0].__slots__},
                                             "text": "It only happens on CI when the export and the import jobs run at once."}))
    (exp,) = segment_session(s.turns)
    card = draft_card(exp)
    assert "appears when: It only happens on CI" in card.counterexamples
    assert "database is locked" not in card.counterexamples


def test_a_paragraph_labelled_as_a_limit_moves_whole_to_counterexamples():
    s = _loop("The exporter now reuses the request's connection, so the write lock is never held twice; 12 tests "
              "pass.\n\nLimits: a second process still needs its own connection. It then needs a busy timeout too.")
    (exp,) = segment_session(s.turns)
    card = draft_card(exp)
    assert "Limits:" not in card.conclusion
    assert ("- stated limit: Limits: a second process still needs its own connection. It then needs a busy "
            "timeout too.") in card.counterexamples


def test_does_not_apply_is_a_limit_whatever_follows():
    assert scope_limits("Pin pydantic-settings. Does not apply while pydantic is pinned below 2.0.") == [
        "Does not apply while pydantic is pinned below 2.0."]


def test_an_order_moved_with_a_limit_paragraph_is_still_judged_as_the_agents_order():
    s = _loop("The exporter now reuses the request's connection, so the write lock is never held twice; 12 tests "
              "pass.\n\nCaveat: never open a second sqlite3 connection inside a request handler.")
    (exp,) = segment_session(s.turns)
    card = draft_card(exp)
    assert "never open a second sqlite3 connection" in card.counterexamples
    assert judge_card(card, EvidenceView.of_experience(exp), []).failed_gate == "instruction_not_self_promoted"


def test_an_order_the_agent_adds_to_a_verified_lesson_is_left_out_and_no_longer_holds_the_card():
    s = _loop("The exporter now reuses the request's connection, so the write lock is never held twice; 12 tests "
              "pass. Always run the exporter tests before pushing.")
    (exp,) = segment_session(s.turns)
    card = draft_card(exp)
    assert "Always run" not in card.conclusion and "reuses the request's connection" in card.conclusion
    assert judge_card(card, EvidenceView.of_experience(exp), []).passed
