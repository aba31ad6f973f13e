"""Conclusions come from what the session settled, never from hidden reasoning or mid-work lines."""

from __future__ import annotations

from memoir.cards.conclude import choose_conclusion, settled_text, visible_text
from tests.turns import Script


def _commit(s: Script, subject: str) -> Script:
    s.runs(f'git commit -m "{subject}"')
    return s.result(f"[main 1a2b3c4] {subject}\n 2 files changed, 14 insertions(+)")


def test_the_closing_report_after_the_last_passing_check_wins():
    s = (Script().user("the export test fails on empty carts")
         .runs("pytest tests/test_export.py").error("AssertionError: assert None == []")
         .says("The root cause might be the early return. Let me check.")
         .runs("sed -i 's/return None/return []/' export.py")
         .runs("pytest tests/test_export.py").result("5 passed in 0.2s")
         .says("Fixed: export_rows returned None for an empty cart; it now returns an empty list, and the test passes. Want me to add a regression test?"))
    found = choose_conclusion(s.turns)
    assert found.source == "closing_report"
    assert found.text.startswith("Fixed: export_rows returned None")
    assert "Want me to" not in found.text
    assert found.verified_by == "t6"  # the passing run, not the command


def test_a_commit_message_stands_in_when_the_report_is_mid_work():
    s = Script().user("add a --json flag to export").runs("apply_patch cli.py")
    _commit(s, "Add --json flag to the export command").says("Now let me look at the docs:")
    found = choose_conclusion(s.turns)
    assert (found.source, found.text) == ("commit_message", "Add --json flag to the export command")


def test_hidden_reasoning_questions_and_let_me_lines_never_qualify():
    assert visible_text("<thinking-content-7b>Is it the binding? Wait!</thinking-content-7b>The handler was bound twice.") \
        == "The handler was bound twice."
    assert settled_text("Is it possible that the bug is in how handleRelease is bound?") == ""
    assert settled_text("The issue is that there are too many nested error paths. Let me extract them.", allow_trim=False) == ""
    assert settled_text("I'll restart the server with the new flag and check again.") == ""
    assert settled_text("Please add `schemas/config.ts` to the chat so I can make the change.") == ""


def test_nothing_settled_gives_no_conclusion():
    s = (Script().user("why does the deploy hang?").runs("kubectl get pods").error("Error: CrashLoopBackOff")
         .says("Let me look at the pod logs next."))
    assert not choose_conclusion(s.turns).settled


def test_a_terse_outcome_is_joined_to_the_reason_given_before_the_fix():
    s = (Script().user("load dies with UNIQUE constraint failed when i run 6 workers")
         .runs("python -m birdcount.load --workers 6").error("sqlite3.IntegrityError: UNIQUE constraint failed: obs.obs_id")
         .says("The day partitions overlap: BETWEEN is inclusive, so a midnight observation lands in two partitions.")
         .runs("apply_patch birdcount/partition.py")
         .runs("python -m birdcount.load --workers 6").result("31/31 partitions ok\n6 passed")
         .says("31/31 partitions with 6 workers; committed 2c6b7e0."))
    found = choose_conclusion(s.turns)
    assert found.text.startswith("The day partitions overlap: BETWEEN is inclusive")
    assert found.text.endswith("31/31 partitions with 6 workers; committed 2c6b7e0.")
    assert found.source == "pre_fix_explanation+closing_report" and found.verified_by == "t6"
