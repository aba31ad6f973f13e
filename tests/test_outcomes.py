import json

import pytest

from memoir.cards.values import Turn
from memoir.cards.commands import command_key, command_of, same_target
from memoir.cards.outcomes import FailureCondition, Verification, failure_conditions, verification
from memoir.cards.verdicts import is_failing, is_passing
from tests.turns import T0, Script

LOCKED = (
    "Exit code 1\nTraceback (most recent call last):\n  File \"/home/dev/shop/app/db.py\", line 41, in save\n"
    "    cur.execute(sql)\nsqlite3.OperationalError: database is locked\n"
)
LOCKED_SIG = "OperationalError: database is locked"


def _add(s: Script, role: str, kind: str, text: str, tool: str = "") -> Script:
    """Append a turn whose text is already in a host's shape (JSON tool input, Codex output)."""
    s.turns.append(Turn(host=s.host, session_id=s.session_id, seq=len(s.turns), role=role, kind=kind, text=text,
                        timestamp=T0, tool_name=tool, cwd=s.cwd, source_file=f"/logs/{s.session_id}.jsonl",
                        line=len(s.turns) + 1))
    return s


def bash(s: Script, command: str) -> Script:
    """A Claude Code Bash call: `Bash {"command": …, "description": …}`."""
    return _add(s, "assistant", "tool_call", "Bash " + json.dumps({"command": command, "description": "run"}), "Bash")


def edit(s: Script, path: str) -> Script:
    args = {"file_path": path, "new_string": "timeout=30", "old_string": "timeout=5"}
    return _add(s, "assistant", "tool_call", "Edit " + json.dumps(args), "Edit")


def edited(s: Script, path: str) -> Script:
    return _add(s, "tool", "tool_result", f"The file {path} has been updated.", "Edit")


def codex_shell(s: Script, command: str) -> Script:
    args = {"command": ["bash", "-lc", command], "timeout_ms": 120000}
    return _add(s, "assistant", "tool_call", "shell " + json.dumps(args), "shell")


def codex_output(s: Script, output: str, code: int) -> Script:
    text = json.dumps({"output": output, "metadata": {"exit_code": code, "duration_seconds": 0.4}})
    return _add(s, "tool", "error" if code else "tool_result", text, "shell")


# --- verdicts ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "........                                                 [100%]\n8 passed in 0.12s",
    "ok  \tgithub.com/acme/shorten\t0.213s",
    "test result: ok. 19 passed; 0 failed; 0 ignored; 0 measured",
    "Tests:       5 passed, 5 total\nSnapshots:   0 total\nTime:        1.2 s",
    "  user api\n    ✓ creates a user\n\n  5 passing (12ms)",
    "31/31 partitions ok",
    "[12:00:01 PM] Found 0 errors. Watching for file changes.",
    "Success: no issues found in 12 source files",
    "Build succeeded.\n    0 Warning(s)\n    0 Error(s)",
    "BUILD SUCCESSFUL in 3s\n7 actionable tasks: 7 executed",
    "Apply complete! Resources: 1 added, 0 changed, 0 destroyed.",
    "HTTP/1.1 200 OK\nContent-Type: application/json",
    "200 OK",
    " ✓ src/cart.test.ts (3 tests) 5ms",
    "0 failed",
    "Finished in 0.7 seconds\n43 tests, 0 failures",
    '{"output":"","metadata":{"exit_code":0,"duration_seconds":3.2}}',
])
def test_pass_summaries_of_many_tools_are_passing(text):
    assert is_passing(text) and not is_failing(text)


@pytest.mark.parametrize("text", [
    "1 failed, 4 passed in 0.31s",
    "FAILED tests/test_db.py::test_lock - sqlite3.OperationalError: database is locked",
    "--- FAIL: TestShorten (0.00s)\nFAIL\tgithub.com/acme/shorten\t0.012s",
    "test result: FAILED. 1 passed; 1 failed; 0 ignored",
    "Tests:       1 failed, 4 passed, 5 total",
    "  2 passing (8ms)\n  1 failing",
    "BUILD FAILED in 2s",
    LOCKED,
    "error[E0382]: borrow of moved value: `cfg`",
    "HTTP/1.1 502 Bad Gateway\nServer: nginx",
    "Exit code 2\nusage: manage.py [-h]",
    "make: *** [Makefile:12: test] Error 1",
    '{"output":"","metadata":{"exit_code":1,"duration_seconds":0.1}}',
    "src/a.ts:3:7 - error TS2322: Type 'string' is not assignable to type 'number'.\n\nFound 1 error in src/a.ts:3",
    "  ✕ renders the cart (5 ms)",
])
def test_fail_summaries_errors_and_exits_are_failing(text):
    assert is_failing(text) and not is_passing(text)


@pytest.mark.parametrize("text", [
    "app/error_handler.py\napp/handlers/retry.py",
    "app/log.py:12:    logger.error('upload failed: %s', err)",
    "On branch main\nnothing to commit, working tree clean",
])
def test_outputs_that_only_mention_errors_are_neither(text):
    assert not is_failing(text) and not is_passing(text)


# --- commands ---------------------------------------------------------------------------------------


def test_command_is_read_from_claude_codex_and_plain_calls():
    s = Script()
    bash(s, "pytest -q tests/test_db.py")
    codex_shell(s, "PYTHONPATH=. pytest -q")
    _add(s, "assistant", "tool_call", 'exec_command {"cmd":"cargo test","workdir":"/src"}', "exec_command")
    s.runs("go test ./...")
    edit(s, "/home/dev/shop/app/db.py")
    assert [command_of(t) for t in s.turns] == [
        "pytest -q tests/test_db.py", "PYTHONPATH=. pytest -q", "cargo test", "go test ./...", ""]


def test_wrapping_that_does_not_change_the_check_is_ignored():
    assert command_key("cd /home/dev/shop && PYTHONPATH=. pytest -x -q tests/test_db.py 2>&1 | tail -3") == \
        command_key("python -m pytest tests/test_db.py -v")
    assert same_target("pytest -x tests/test_db.py::test_lock", "pytest -q tests/test_db.py")
    assert not same_target("pytest tests/test_db.py", "pytest tests/test_api.py")
    assert not same_target("pytest tests/test_db.py", "npm test")


# --- verification -----------------------------------------------------------------------------------


def test_failed_command_rerun_after_an_edit_and_now_passing_is_the_verification():
    s = Script().user("saving an order fails with database is locked")
    bash(s, "pytest -x -q tests/test_db.py 2>&1 | tail -3")
    s.error(LOCKED + "1 failed in 0.40s")
    edit(s, "/home/dev/shop/app/db.py")
    edited(s, "/home/dev/shop/app/db.py")
    bash(s, "cd /home/dev/shop && pytest tests/test_db.py -q")
    s.result("....\n4 passed in 0.31s")
    assert verification(s.turns) == Verification(
        seq=6, command_seq=5, command="cd /home/dev/shop && pytest tests/test_db.py -q", signature=LOCKED_SIG,
        same_command=True, failed_seq=2)


def test_codex_json_outputs_and_apply_patch_count():
    s = Script(host="codex").user("pytest is red after the schema change")
    codex_shell(s, "PYTHONPATH=. pytest -q")
    codex_output(s, "F.\nFAILED tests/test_cli.py::test_validate - KeyError: 'machine_control'\n1 failed in 0.2s", 1)
    _add(s, "assistant", "tool_call", "apply_patch *** Begin Patch\n*** Update File: opk/cli.py\n@@\n-x\n+y\n"
                                       "*** End Patch", "apply_patch")
    _add(s, "tool", "tool_result", "Success. Updated the following files:\nM opk/cli.py", "apply_patch")
    codex_shell(s, "PYTHONPATH=. pytest -q")
    codex_output(s, "..\n2 passed in 0.2s\n", 0)
    v = verification(s.turns)
    assert v is not None and v.same_command and v.seq == 6 and v.signature == "KeyError: <str>"


def test_a_tail_piped_run_that_exits_zero_but_reports_failures_is_a_failure():
    s = Script().user("fix the flaky lock test")
    bash(s, "pytest -q tests/test_db.py 2>&1 | tail -2")
    s.result("E   sqlite3.OperationalError: database is locked\n1 failed, 3 passed in 0.5s")
    edit(s, "app/db.py")
    edited(s, "app/db.py")
    bash(s, "pytest -q tests/test_db.py 2>&1 | tail -2")
    s.result("4 passed in 0.4s")
    v = verification(s.turns)
    assert v is not None and v.failed_seq == 2 and v.signature == LOCKED_SIG


def test_green_run_of_an_unrelated_command_before_any_change_is_not_verification():
    s = Script().user("the db tests fail")
    bash(s, "pytest -q tests/test_db.py")
    s.error(LOCKED)
    bash(s, "npm run lint")
    s.result("✓ no lint errors\n0 problems")
    bash(s, "git status")
    s.result("On branch main\nnothing to commit, working tree clean")
    assert verification(s.turns) is None


def test_rerun_with_nothing_changed_proves_no_fix():
    s = Script().user("tests are flaky")
    bash(s, "pytest -q tests/test_db.py")
    s.error(LOCKED)
    bash(s, "pytest -q tests/test_db.py")
    s.result("4 passed in 0.3s")
    assert verification(s.turns) is None


def test_fix_that_did_not_hold_is_not_verification():
    s = Script().user("db lock again")
    bash(s, "pytest -q tests/test_db.py")
    s.error(LOCKED)
    edit(s, "app/db.py")
    edited(s, "app/db.py")
    bash(s, "pytest -q tests/test_db.py")
    s.result("4 passed in 0.3s")
    bash(s, "pytest -q tests/test_db.py")
    s.error(LOCKED)
    assert verification(s.turns) is None


def test_other_passing_check_after_a_change_is_a_fallback_that_clears_no_failure():
    s = Script().user("the build is broken")
    bash(s, "pytest -q tests/test_db.py::test_lock")
    s.error(LOCKED)
    edit(s, "app/db.py")
    edited(s, "app/db.py")
    bash(s, "make test")
    s.result("pytest -q\n........\n8 passed in 0.9s")
    v = verification(s.turns)
    assert v is not None and not v.same_command
    # `make test` never failed: it cannot say the lock error is gone (issue 24, mechanism 2).
    assert (v.seq, v.command, v.signature, v.failed_seq) == (6, "make test", "", None)


def test_error_pasted_by_the_user_then_a_change_and_green_tests_is_a_fallback_verification():
    s = Script().user("CI is red:\n##[error]Process completed with exit code 1.\n"
                      "FAILED tests/test_api.py::test_upload - HTTPError: 413 Payload Too Large")
    edit(s, "app/upload.py")
    edited(s, "app/upload.py")
    bash(s, "pytest -q")
    s.result("12 passed in 1.1s")
    v = verification(s.turns)
    assert v is not None and not v.same_command
    assert (v.failed_seq, v.signature) == (0, "HTTPError: <n> Payload Too Large")


def test_a_rejected_tool_use_is_not_a_failure():
    s = Script().user("run the tests")
    bash(s, "pytest -q")
    s.error("The user doesn't want to proceed with this tool use. The tool use was rejected.")
    edit(s, "app/db.py")
    edited(s, "app/db.py")
    bash(s, "pytest -q")
    s.result("4 passed in 0.3s")
    v = verification(s.turns)  # a fresh check after the change, but it cleared no failure
    assert v is not None and (v.same_command, v.signature, v.failed_seq) == (False, "", None)


def test_results_pair_with_their_own_tool_when_calls_run_in_parallel():
    s = Script().user("why does test_db fail?")
    bash(s, "pytest -q tests/test_db.py")
    _add(s, "assistant", "tool_call", 'Read {"file_path":"/home/dev/shop/app/db.py"}', "Read")
    _add(s, "tool", "tool_result", "     1→import sqlite3\n     2→TIMEOUT = 5", "Read")
    s.error(LOCKED)
    edit(s, "app/db.py")
    edited(s, "app/db.py")
    bash(s, "pytest -q tests/test_db.py")
    s.result("4 passed in 0.3s")
    v = verification(s.turns)
    assert v is not None and v.failed_seq == 4 and v.command_seq == 7


# --- failure conditions -----------------------------------------------------------------------------


def test_user_sentences_that_state_conditions_are_kept():
    s = Script().user(
        "Importing orders works fine with 1 worker. It only fails when I run with --workers 6. "
        "Since I bumped sqlalchemy to 2.0 it also shows up on CI. Please have a look.")
    texts = [c.text for c in failure_conditions(s.turns)]
    assert texts == ["Importing orders works fine with 1 worker.", "It only fails when I run with --workers 6.",
                     "Since I bumped sqlalchemy to 2.0 it also shows up on CI."]


def test_a_feature_requests_requirements_are_no_failure_conditions():
    s = Script().user("Specify the embedded startup readiness feature. Only after the health endpoint answers "
                      "will the chat UI be enabled. If that means server logs are kept until the UI starts, so be it.")
    assert failure_conditions(s.turns) == []


def test_a_request_without_conditions_gives_none():
    s = Script().user("Please fix the failing tests in the db module, I need to work with them today.")
    assert failure_conditions(s.turns) == []


def test_attempts_that_did_not_help_and_the_error_the_fix_removed():
    s = Script().user("saving fails with database is locked, only happens with --workers 6")
    bash(s, "pytest -q tests/test_db.py")
    s.error(LOCKED)
    bash(s, "rm state/state.db-journal")
    s.result("(no output)")
    bash(s, "pytest -q tests/test_db.py")
    s.error(LOCKED)
    edit(s, "/home/dev/shop/app/db.py")
    edited(s, "/home/dev/shop/app/db.py")
    bash(s, "pytest -q tests/test_db.py")
    s.error(LOCKED.replace("line 41", "line 44"))
    edit(s, "/home/dev/shop/app/settings.py")
    edited(s, "/home/dev/shop/app/settings.py")
    bash(s, "pytest -q tests/test_db.py")
    s.result("4 passed in 0.3s")
    assert failure_conditions(s.turns) == [
        FailureCondition(0, "saving fails with database is locked, only happens with --workers 6", "condition"),
        FailureCondition(6, f"tried `rm state/state.db-journal` → still `{LOCKED_SIG}`", "attempt"),
        FailureCondition(10, f"tried changing `timeout=5` to `timeout=30` in `app/db.py` → still `{LOCKED_SIG}`", "attempt"),
        FailureCondition(10, f"fails with `{LOCKED_SIG}` before the fix", "error"),
    ]


def test_a_change_after_which_the_error_changed_is_not_a_failed_attempt():
    s = Script().user("the importer crashes")
    bash(s, "python import.py")
    s.error("Traceback (most recent call last):\nKeyError: 'sku'")
    edit(s, "import.py")
    edited(s, "import.py")
    bash(s, "python import.py")
    s.error("Traceback (most recent call last):\nValueError: invalid literal for int() with base 10: 'n/a'")
    assert [c.kind for c in failure_conditions(s.turns)] == []


def test_conditions_are_deduplicated_and_capped():
    s = Script()
    for n in range(12):
        s.user(f"It only fails when the batch has more than {n + 100} rows.")
        s.user("It only fails when the batch has more than 100 rows.")
    found = failure_conditions(s.turns)
    assert len(found) == 8 and len({c.text for c in found}) == 8


def test_searches_and_patches_are_neither_failures_nor_checks():
    s = Script(host="codex").user("wire the logger into App.tsx")
    codex_shell(s, 'rg -n "logEvent" src')
    codex_output(s, "", 1)
    codex_shell(s, "applypatch << 'PATCH'\n*** Begin Patch\n*** Update File: src/App.tsx\n@@\n-a\n+b\n*** End Patch\nPATCH")
    codex_output(s, "error: Failed to find expected lines [\"a\"] in src/App.tsx", 1)
    codex_shell(s, "applypatch << 'PATCH'\n*** Begin Patch\n*** Update File: src/App.tsx\n@@\n-x\n+y\n*** End Patch\nPATCH")
    codex_output(s, "Done!", 0)
    codex_shell(s, 'rg -n "logEvent" src')
    codex_output(s, "src/App.tsx:3:logEvent('start')", 0)
    assert verification(s.turns) is None and failure_conditions(s.turns) == []


def test_context_words_count_only_in_a_sentence_about_the_problem():
    s = Script().user("1.2 After Print: executes after switching tools. Since I upgraded to Node 20 the build is broken on CI.")
    assert [c.text for c in failure_conditions(s.turns)] == ["Since I upgraded to Node 20 the build is broken on CI."]


def test_a_green_run_that_logs_the_errors_it_tests_is_passing():
    out = ("=== RUN   TestReadingsRetriesOn502\n2026/11/12 14:16:43 retry 1/3 after 502 Bad Gateway\n"
           "--- PASS: TestReadingsRetriesOn502 (1.50s)\nPASS\nok  \texample.org/feed\t1.512s")
    assert is_passing(out) and not is_failing(out)


def test_an_aider_edit_result_is_the_change_a_re_run_verifies():
    from memoir.cards.values import Turn

    def t(seq, role, kind, text, tool=""):
        return Turn(host="aider", session_id="a", seq=seq, role=role, kind=kind, text=text, tool_name=tool)

    turns = [t(0, "user", "tool_call", "python -m app.load --workers 6", "run"),
             t(1, "tool", "error", "sqlite3.IntegrityError: UNIQUE constraint failed: obs.id", "run"),
             t(2, "assistant", "text", "The workers insert the same rows; ignore duplicates."),
             t(3, "tool", "tool_result", "Applied edit to app/load.py", "edit"),
             t(4, "user", "tool_call", "python -m app.load --workers 6", "run"),
             t(5, "tool", "tool_result", "31/31 partitions ok", "run")]
    fix = verification(turns)
    assert fix is not None and (fix.seq, fix.same_command) == (5, True)
