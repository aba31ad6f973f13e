"""A check sent to the background, and its result read back by id (`cards.background`, `cards.loop.walk`)."""

from __future__ import annotations

from memoir.cards.background import started_id, task_verdict
from memoir.cards.commands import retrieved_id
from memoir.cards.draft import draft_card
from memoir.cards.loop import fixed_loop, walk
from memoir.cards.values import Experience
from tests.turns import Script

STARTED = "Command running in background with ID: b57276d. Output is being written to: /tmp/tasks/b57276d.output"
FAILED = ("<retrieval_status>success</retrieval_status>\n<task_id>b57276d</task_id>\n<status>failed</status>\n"
          "<exit_code>1</exit_code>\n<output>\nCompiling 3 files (.ex)\n\n     error: undefined variable \"payload\"\n"
          "     │\n 115 │       assert payload.total == 0\n     │              ^^^^^^^\n     │\n"
          "     └─ test/app/counts_test.exs:115:14: App.CountsTest.\"test counts\"/1\n</output>")
RUNNING = "<retrieval_status>not_ready</retrieval_status>\n<task_id>b57276d</task_id>\n<status>running</status>"
CHECK = "mix test test/app/counts_test.exs"


def _backgrounded(then: str = FAILED) -> Script:
    s = Script().user("add a counts test for the channel")
    s.runs(CHECK).result(STARTED)
    s.calls("TaskOutput", '{"task_id": "b57276d", "block": true, "timeout": 300000}').got("TaskOutput", then)
    return s


def test_a_background_start_names_its_id_and_a_retrieval_call_asks_for_it():
    s = _backgrounded()
    assert started_id(STARTED) == "b57276d"
    assert started_id("42 tests, 0 failures") == ""
    assert retrieved_id(s.turns[3]) == "b57276d"
    assert retrieved_id(s.turns[1]) == ""


def test_a_retrieved_status_and_exit_code_are_the_verdict_and_a_running_task_has_none():
    assert task_verdict(FAILED) == (True, False)
    assert task_verdict(FAILED.replace("<status>failed</status>", "<status>completed</status>")
                        .replace("<exit_code>1</exit_code>", "<exit_code>0</exit_code>")) == (False, True)
    assert task_verdict(RUNNING) == (False, False)
    assert task_verdict("6 tests, 0 failures") is None


def test_the_retrieved_result_is_the_result_of_the_check_sent_to_the_background():
    runs = walk(tuple(_backgrounded().turns)).runs
    assert [(r.command, r.failed, r.passed) for r in runs] == [(CHECK, False, False), (CHECK, True, False)]
    assert runs[1].call.seq == 1 and runs[1].result.seq == 4
    assert "undefined variable" in runs[1].signature


def test_a_poll_of_a_task_still_running_is_no_verdict():
    runs = walk(tuple(_backgrounded(RUNNING).turns)).runs
    assert [(r.failed, r.passed) for r in runs] == [(False, False), (False, False)]


def test_a_retrieval_of_an_id_no_background_start_named_is_not_a_check():
    s = Script().user("look at the task").calls("TaskOutput", '{"task_id": "zzz999"}').got("TaskOutput", FAILED)
    assert walk(tuple(s.turns)).runs == ()


def test_the_first_failure_of_a_background_check_starts_the_fix_and_its_card():
    s = _backgrounded()
    s.edits("/home/dev/shop/test/app/counts_test.exs", "use ExUnit.Case", "use ExUnit.Case\n  import Phoenix.ChannelTest")
    s.runs(CHECK).result("......\nFinished in 0.2 seconds\n6 tests, 0 failures")
    lp = fixed_loop(s.turns)
    assert lp is not None and lp.failure.seq == 4 and lp.fix is not None
    card = draft_card(Experience(s.host, s.session_id, tuple(s.turns)))
    assert card.extra["kind"] == "fix" and card.verified_by == "t8"
    assert 'undefined variable "payload"' in card.conclusion
    assert 'error: CompileError: undefined variable "payload"' in card.evidence or "undefined variable" in card.evidence
