"""The one failure vocabulary: each family pinned, with the union of what the stages used to know."""

from __future__ import annotations

import pytest

from memoir.cards.distill.extract import find_disproved
from memoir.cards.signals import (
    DECLINED, ERROR_GATE_WORDS, ERROR_WORDS, decode_output, exit_code, exit_in, failing_tests, has_fail_summary,
    has_pass_summary, is_declined, is_error_code, is_error_line, is_named_state, is_notable_result, mentions_failure,
    names_failure,
)
from memoir.cards.signatures import error_signature, is_error_output
from memoir.cards.verdicts import is_failing, is_passing
from memoir.cards.values import Turn


def test_error_is_an_error_code_for_every_stage():
    # The rules merged on `ERROR: …`; signatures did not count it as a code. Now both do.
    assert is_error_code("ERROR") and is_error_code("EACCES") and is_error_code("TS2345") and is_error_code("E0308")
    assert names_failure("ERROR") and names_failure("ValueError") and names_failure("panicked")
    assert error_signature("ERROR: build broke") == "ERROR: build broke"
    assert is_error_output("ERROR: build broke")
    assert not is_error_code("Error") and not names_failure("building")


def test_a_pytest_error_line_stays_a_failing_test_not_a_code():
    out = "==== short test summary info ====\nERROR tests/test_db.py::test_save - fixture 'db' not found\n"
    assert error_signature(out) == "ERROR: test_db.py::test_save"


@pytest.mark.parametrize("output, name, signature", [
    ("--- FAIL: TestSave (0.01s)\nFAIL\tpkg 0.2s", "TestSave", "FAIL: TestSave"),
    ("FAILED tests/test_x.py::test_a - assert 1 == 2", "tests/test_x.py::test_a", "FAIL: test_x.py::test_a"),
    ("FAIL src/app.test.ts\n  ● renders", "src/app.test.ts", "FAIL: app.test.ts"),
    ("running 2 tests\ntest parser::tests::empty ... FAILED\n", "parser::tests::empty", "FAIL: parser::tests::empty"),
    ("  1) test saves a user (MyApp.UserTest)\n", "MyApp.UserTest: saves a user", "FAIL: MyApp.UserTest: saves a user"),
    ("  ✕ renders the title (5 ms)\n  ✓ renders the body", "renders the title", "FAIL: renders the title"),
    ("  ✗ login rejects a bad password\n", "login rejects a bad password", "FAIL: login rejects a bad password"),
])
def test_every_failing_test_line_is_known_to_every_stage(output, name, signature):
    assert name in failing_tests(output)
    assert error_signature(output) == signature
    assert has_fail_summary(output)


def test_the_rules_read_failing_tests_inside_a_codex_json_result():
    assert failing_tests('{"output":"running 1 test\\ntest a::b ... FAILED\\n","metadata":{"exit_code":101}}') == {"a::b"}


def test_a_claim_is_disproved_when_a_rust_test_fails_again():
    def turn(seq, role, kind, text, tool=""):
        return Turn(host="codex", session_id="s", seq=seq, role=role, kind=kind, text=text, tool_name=tool)
    red = "test parser::tests::empty ... FAILED\ntest result: FAILED. 0 passed; 1 failed"
    turns = [turn(0, "tool", "error", red, "shell"),
             turn(1, "assistant", "text", "The fix is probably the trailing newline in the parser."),
             turn(2, "tool", "error", red, "shell")]
    assert find_disproved(turns)[1].reason == "still_failing"


@pytest.mark.parametrize("line", [
    "error: linker failed", "bash: ./run.sh: Permission denied", "connect: Connection refused",
    "fatal: unable to access the remote", "request timed out after 30s", "Cannot find module 'x'",
    "an exception was raised", "no such table: users",
])
def test_error_lines_use_one_word_list(line):
    assert is_error_line(line) and mentions_failure(line)


def test_zero_summaries_are_no_failure():
    assert not mentions_failure("19 passed, 0 failed")
    assert mentions_failure("19 passed, 2 failed")
    assert not is_error_output("5 passed, 0 errors")


def test_the_gate_words_cover_every_error_word():
    assert set(ERROR_WORDS) <= set(ERROR_GATE_WORDS)


def test_pass_and_fail_summaries():
    assert has_pass_summary("===== 5 passed in 0.2s =====") and has_pass_summary("test result: ok. 3 passed")
    assert has_fail_summary("2 failed, 3 passed") and has_fail_summary("BUILD FAILED") and has_fail_summary("✘ lint")
    assert not has_fail_summary("0 failed") and not has_pass_summary("0 passed")
    assert is_passing("===== 5 passed in 0.2s =====") and is_failing("===== 1 failed, 4 passed =====")


def test_exit_codes_in_any_case_and_shape():
    assert exit_code("Exit code 1\nboom") == 1
    assert exit_code('{"output":"x","metadata":{"exit_code":2}}') == 2
    text = "failed in sandbox: exec error, exit code: 2, stdout: "
    assert exit_in(text.lower(), text) == 2  # the Codex reader's sandbox failures
    assert exit_in("make: *** [all] error 2", "make: *** [all] Error 2") == 2
    assert decode_output('{"output":"a\\nb"}')[0] == "a\nb"


def test_named_states():
    assert is_named_state("CrashLoopBackOff") and is_named_state("RunContainerError")
    assert is_named_state("HTTP 503 Service Unavailable") and not is_named_state("timeout")


def test_declined_calls():
    assert is_declined("  The user doesn't want to proceed with this tool use.")
    assert all(is_declined(d) for d in DECLINED) and not is_declined("ok")


@pytest.mark.parametrize("tail, notable", [
    ("collected 3 items\n3 PASSED in 0.1s", True), ("Build Succeeded, 0 issues", False),
    ("Build SUCCESS, 0 warnings", True), ("status: OK", True), ("ok-ish", True), ("okay", False),
    ("ſuccess", True),  # non-ASCII: the regex decides, and under IGNORECASE `ſ` is an `s`
    ("wrote 12 files", False),
])
def test_a_result_is_notable_when_its_tail_names_an_outcome_in_any_case(tail, notable):
    assert is_notable_result("x" * 1000 + "\n" + tail) is notable
