"""Conclusions come from what the session settled, never from hidden reasoning or mid-work lines."""

from __future__ import annotations

from memoir.cards.conclude import choose_conclusion, settled_text, visible_text, work_report
from tests.test_loop import _edit
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


def test_a_work_report_is_what_was_built_and_a_reason_anywhere_makes_it_a_lesson():
    assert work_report("Added a Filaments tab and wired it into the GUI.\n\nAll changes are committed; tests pass (29).")
    assert work_report("Great idea — I added dynamic tips in the GUI and a help page.")
    assert work_report("We had duplication between two tabs.\nI've cleaned that up and moved peripherals out.")
    assert work_report("feat: live review updates (spotter-0zw)")
    assert work_report("All four items are implemented, tested, and documented.\n\n- README\n  - CLI entries")
    assert not work_report("Added a retry because the upload times out on slow links.")
    assert not work_report("QAction must be imported from PySide6.QtGui, not QtWidgets. I fixed that and added a test.")
    assert not work_report("The migration uses ALTER TABLE, which SQLite doesn't support for nullability changes.")
    assert not work_report("The cache key is the file's hash and the parser's version.")


def test_a_work_report_after_a_fixed_loop_is_no_part_of_the_loops_lesson():
    s = (Script().user("add the filaments tab")
         .runs("pytest tests/test_gui.py").error("ImportError: cannot import name 'QAction' from 'PySide6.QtWidgets'"))
    _edit(s, "opk/ui/filaments_tab.py", "from PySide6.QtWidgets import QAction", "from PySide6.QtGui import QAction")
    s = (s.runs("pytest tests/test_gui.py").result("12 passed in 0.4s")
         .says("Added a Filaments tab and wired it into the GUI, docs and tests. All changes are committed; tests pass."))
    found = choose_conclusion(s.turns)
    lead, _, rest = found.text.partition("\n\n")
    # What failed, what changed and what passed, from the evidence; the change list of the task around it
    # teaches nothing and is left out (issue 37: what is injected says what was learned).
    assert "ImportError" in lead and "pytest tests/test_gui.py" in lead and "filaments_tab.py" in lead, found.text
    assert rest == "" and "Added a Filaments tab" not in found.text
    assert found.verified_by == "t6"
