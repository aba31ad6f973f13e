"""The problem loop (issue 24, mechanisms 1-3), pinned on small hand-made sessions.

A conclusion comes from the change that worked; a disproved explanation is a counterexample; a check
that was green before the change verifies nothing; a later failure elsewhere cancels a verification;
an unresolved ending makes the card incomplete.
"""

from __future__ import annotations

import json

import pytest

from memoir.cards.conclude import choose_conclusion
from memoir.cards.distill.extract import find_disproved
from memoir.cards.draft import draft_card, inner_lessons
from memoir.cards.evidence import ending
from memoir.cards.commands import describe_change, ends_in_search_filter
from memoir.cards.loop import failed_explanations, fixed_loop, loops, same_check, walk
from memoir.cards.outcomes import verification
from memoir.cards.signals import error_places
from memoir.cards.values import Experience
from memoir.cards.values import Turn
from tests.turns import T0, Script

KEYERROR = "Traceback (most recent call last):\n  File \"/home/dev/shop/app/cart.py\", line 12, in total\nKeyError: 'price'\n"


def _edit(s: Script, path: str, old: str, new: str) -> Script:
    args = {"file_path": path, "old_string": old, "new_string": new}
    s.turns.append(Turn(host=s.host, session_id=s.session_id, seq=len(s.turns), role="assistant", kind="tool_call",
                        text="Edit " + json.dumps(args), timestamp=T0, tool_name="Edit", cwd=s.cwd,
                        source_file=f"/logs/{s.session_id}.jsonl", line=len(s.turns) + 1))
    s.turns.append(Turn(host=s.host, session_id=s.session_id, seq=len(s.turns), role="tool", kind="tool_result",
                        text=f"The file {path} has been updated.", timestamp=T0, tool_name="Edit", cwd=s.cwd,
                        source_file=f"/logs/{s.session_id}.jsonl", line=len(s.turns) + 1))
    return s


def _card(s: Script):
    """The draft of the whole script as one experience (segmenting is not under test here)."""
    return draft_card(Experience(s.host, s.session_id, tuple(s.turns)))


def _disproved_then_fixed() -> Script:
    """The first diagnosis (a stale cache) is tried and the same check fails again; the second works."""
    s = Script().user("the cart total test fails")
    s.runs("pytest tests/test_cart.py").error(KEYERROR)
    s.says("The KeyError comes from a stale fixture cache in conftest.py: the cached cart has no price.")
    _edit(s, "/home/dev/shop/tests/conftest.py", "cache=True", "cache=False")
    s.runs("pytest tests/test_cart.py").error(KEYERROR)
    s.says("Not the cache. cart.py reads item['price'] but the importer stores the field as unit_price.")
    _edit(s, "/home/dev/shop/app/cart.py", "item['price']", "item['unit_price']")
    s.runs("pytest tests/test_cart.py").result("6 passed in 0.3s")
    return s


# --- mechanism 1: a conclusion is built from the change that worked ------------------------------------


def test_an_explanation_followed_by_a_change_after_which_the_check_still_fails_is_a_failed_attempt():
    s = _disproved_then_fixed()
    assert set(failed_explanations(s.turns)) == {3}
    assert find_disproved(s.turns)[3].reason == "failed_attempt"
    lp = fixed_loop(s.turns)
    assert lp is not None and [a.worked for a in lp.attempts] == [False, True]


def test_a_disproved_explanation_goes_to_counterexamples_and_the_working_one_is_the_conclusion():
    card = _card(_disproved_then_fixed())
    assert "unit_price" in card.conclusion and "stale fixture cache" not in card.conclusion
    assert "stale fixture cache" in card.counterexamples and "tried" in card.counterexamples
    assert card.status == "active" and card.verified_by == "t12"


def test_an_explanation_that_names_nothing_of_the_change_or_the_error_does_not_count():
    s = Script().user("the cart total test fails")
    s.runs("pytest tests/test_cart.py").error(KEYERROR)
    s.says("Something in the data layer is off here; a small adjustment should sort it out for good.")
    _edit(s, "/home/dev/shop/app/cart.py", "item['price']", "item['unit_price']")
    s.runs("pytest tests/test_cart.py").result("6 passed in 0.3s")
    found = choose_conclusion(s.turns)
    assert "data layer" not in found.text
    assert found.source == "evidence" and found.verified_by == "t7"


def test_with_no_qualifying_sentence_the_conclusion_is_the_evidence_what_failed_what_changed_what_passed():
    s = Script().user("the cart total test fails")
    s.runs("pytest tests/test_cart.py").error(KEYERROR)
    _edit(s, "/home/dev/shop/app/cart.py", "item['price']", "item['unit_price']")
    s.runs("pytest tests/test_cart.py").result("6 passed in 0.3s")
    text = choose_conclusion(s.turns).text
    assert text.startswith("`pytest tests/test_cart.py` fails with `KeyError")
    assert "changing `item['price']` to `item['unit_price']` in `app/cart.py` fixed it" in text and "passes at t6" in text
    card = _card(s)
    assert card.status == "active" and card.verified_by == "t6"


def test_a_change_after_which_the_error_changed_leaves_the_explanation_standing():
    s = Script().user("the importer crashes")
    s.runs("python import.py").error("Traceback (most recent call last):\nKeyError: 'sku'")
    s.says("import.py looks up row['sku'] but the CSV header is SKU in capitals; reading it case-insensitively.")
    _edit(s, "/home/dev/shop/import.py", "row['sku']", "row.get('sku') or row['SKU']")
    s.runs("python import.py").error("Traceback (most recent call last):\nValueError: invalid literal for int()")
    assert failed_explanations(s.turns) == {}


# --- mechanism 2: verification means it --------------------------------------------------------------


def test_a_check_already_green_before_the_change_verifies_nothing():
    s = Script().user("add a --json flag to export")
    s.runs("pytest tests/test_export.py").result("4 passed in 0.2s")
    _edit(s, "/home/dev/shop/app/export.py", "def export(rows):", "def export(rows, as_json=False):")
    s.runs("pytest tests/test_export.py").result("4 passed in 0.2s")
    s.says("Added an as_json switch to export() in app/export.py; the export tests pass.")
    assert verification(s.turns) is None
    assert _card(s).verified_by == ""


def test_a_different_green_check_clears_no_failure():
    s = Script().user("the cart total test fails")
    s.runs("pytest tests/test_cart.py").error(KEYERROR)
    _edit(s, "/home/dev/shop/app/cart.py", "item['price']", "item['unit_price']")
    s.runs("ruff check app").result("All checks passed!")
    v = verification(s.turns)
    assert v is None or (v.signature, v.failed_seq) == ("", None)
    assert fixed_loop(s.turns) is None


def test_a_tally_of_repeated_runs_with_failures_is_a_failing_check_and_an_all_pass_tally_verifies():
    loop10 = "for i in $(seq 1 10); do npx vitest run src/retry.test.ts >/dev/null 2>&1 && echo pass || echo FAIL; done | sort | uniq -c"
    s = Script().user("retry.test.ts is flaky, fails now and then on CI")
    s.runs(loop10).result("      3 FAIL\n      7 pass\n")
    s.says("The test waits a real 100ms for a 100ms backoff; switching it to fake timers.")
    _edit(s, "/home/dev/shop/src/retry.test.ts", "await sleep(110)", "vi.advanceTimersByTime(100)")
    s.runs(loop10.replace("1 10", "1 30")).result("     30 pass\n")
    lp = fixed_loop(s.turns)
    assert lp is not None and lp.failure.at == 2
    assert verification(s.turns) is not None
    assert _card(s).verified_by


def test_a_tally_with_no_failure_is_no_failing_check():
    s = Script().user("is retry.test.ts flaky?")
    s.runs("for i in 1 2 3; do npx vitest run src/retry.test.ts && echo pass || echo FAIL; done | uniq -c").result("      0 FAIL\n      3 pass\n")
    assert loops(s.turns) == ()


def test_an_install_told_to_change_nothing_is_the_lockfile_check_not_a_change():
    s = Script().user("CI is red on install:\n ERR_PNPM_OUTDATED_LOCKFILE  Cannot install with \"frozen-lockfile\" because pnpm-lock.yaml is not up to date with <ROOT>/packages/api/package.json")
    s.runs("git status --short && pnpm install --frozen-lockfile 2>&1 | tail -n 4").result(
        " M pnpm-lock.yaml\n ERR_PNPM_OUTDATED_LOCKFILE  Cannot install with \"frozen-lockfile\" because pnpm-lock.yaml is not up to date")
    s.says("The lockfile change was never committed, so the frozen install in CI refuses it.")
    s.runs("pnpm install && git add pnpm-lock.yaml && git commit -m 'api: lockfile'").result("Done in 1.2s\n[main 1a2b3c4] api: lockfile")
    s.runs("git status --short; pnpm install --frozen-lockfile 2>&1 | tail -n 3").result("Lockfile is up to date, resolution step is skipped\nDone in 1.1s")
    lp = fixed_loop(s.turns)
    assert lp is not None and lp.failure.signature.startswith("ERR_PNPM_OUTDATED_LOCKFILE")
    assert [describe_change(t) for t in lp.fix.changes] == ["`pnpm install && git add pnpm-lock.yaml && git commit -m 'api: lockfile'`"]
    assert _card(s).verified_by


def test_a_how_to_tried_by_running_the_migration_it_describes_is_checked():
    s = Script().user("how do I add a db migration again?")
    s.says("Add `db/migrations/NNNN_name.sql` and run `go run ./cmd/app migrate up`; files apply in name order.")
    s.user("try it with a no-op one")
    s.runs("printf 'SELECT 1;' > db/migrations/0009_noop.sql && go run ./cmd/app migrate up").result(
        "applied 0009_noop.sql\n1 migration applied, schema at version 9")
    v = verification(s.turns)
    assert v is not None and "migrate up" in v.command


def test_a_word_migrate_in_an_echo_or_a_commit_message_is_no_migration_run():
    s = Script().user("write the notes")
    _edit(s, "/home/dev/shop/NOTES.md", "old", "new")
    s.runs("echo migrate later").result("migrate later")
    s.runs("git commit -am 'migrate users table'").result("[main 1a2b3c4] migrate users table")
    assert verification(s.turns) is None


def test_a_green_check_after_the_work_was_put_back_verifies_nothing():
    s = Script().user("bump next to 15.5")
    s.runs("pnpm --filter web up next@15.5.4").result("+ next 15.5.4")
    s.user("actually stop, put it back")
    s.runs("git checkout -- apps/web/package.json pnpm-lock.yaml && pnpm install --frozen-lockfile").result(
        "Lockfile is up to date, resolution step is skipped\nDone in 1.4s")
    s.says("Reverted: package.json and the lockfile are back to next 15.0.3.")
    assert verification(s.turns) is None


def test_a_file_written_through_a_heredoc_that_names_checks_runs_none():
    s = Script().user("write the quickstart for the plan")
    _edit(s, "/home/dev/shop/specs/plan.md", "## Phase 0", "## Phase 0 (done)")
    s.runs("cat <<'EOF' > specs/quickstart.md\n# Quickstart\ncargo sqlx migrate run\nnpm test\nEOF").result("")
    s.says("Wrote the quickstart; ready for the next phase.")
    assert verification(s.turns) is None


def test_reverting_an_earlier_commit_as_the_first_change_is_the_fix_and_can_be_verified():
    s = Script().user("orders endpoint 500s since yesterday's commit 5d0e7a1: TypeError: Type is not JSON serializable: Decimal")
    s.runs("git revert --no-edit 5d0e7a1 && python -m pytest -q").result("[main 2c4b8d0] Revert\n25 passed in 1.2s")
    s.says("Reverted 5d0e7a1: returning ORJSONResponse directly skipped the Decimal encoder; 25 passed.")
    assert verification(s.turns) is not None


def test_a_later_failure_of_the_same_goal_in_another_environment_cancels_the_verification():
    s = _disproved_then_fixed()
    s.runs("docker compose run --rm app pytest").error(KEYERROR.replace("/home/dev/shop", "/app"))
    lp = loops(s.turns)[0]
    assert lp.cancelled_by == 14 and lp.fix is None
    card = _card(s)
    assert card.verified_by == "" and card.status == "incomplete" and card.gate == "last_check_failed"


def test_a_ci_rerun_after_a_pasted_ci_failure_is_the_same_check_by_another_route():
    pasted = "CI is red:\nFAILED tests/test_cart.py::test_total - KeyError: 'price'\nError: Process completed with exit code 1."
    assert same_check("", pasted, "gh run watch 812")
    assert same_check("", pasted, "pytest tests/test_cart.py")
    assert not same_check("", pasted, "ruff check app")
    s = Script().user(pasted)
    s.says("cart.py reads item['price'], but the importer writes unit_price; reading unit_price instead.")
    _edit(s, "/home/dev/shop/app/cart.py", "item['price']", "item['unit_price']")
    s.runs("gh run watch 813").result("✓ main CI · 813\nJOBS\n✓ test in 41s")
    v = verification(s.turns)
    assert v is not None and v.failed_seq == 0 and "KeyError" in v.signature


# --- mechanism 3: an unresolved experience is not a lesson --------------------------------------------


def test_a_last_check_that_failed_makes_the_card_incomplete_with_the_open_question():
    s = Script().user("the cart total test fails")
    s.runs("pytest tests/test_cart.py").error(KEYERROR)
    s.says("The root cause is that cart.py reads item['price'] while the importer writes unit_price.")
    _edit(s, "/home/dev/shop/app/cart.py", "item['price']", "item['unit_price']")
    s.runs("pytest tests/test_cart.py").error(KEYERROR.replace("'price'", "'unit_price'"))
    card = _card(s)
    assert card.status == "incomplete" and card.gate == "last_check_failed"
    assert "root cause" not in card.conclusion.lower() and card.conclusion.startswith("Unresolved:")
    assert "open:" in card.follow_up and "still fails" in card.follow_up


def test_a_session_that_stops_after_announcing_a_step_ends_mid_work():
    s = Script().user("add a --json flag to export")
    _edit(s, "/home/dev/shop/app/export.py", "def export(rows):", "def export(rows, as_json=False):")
    s.says("The flag is wired into export(). Now let me run the export tests.")
    end = ending(s.turns)
    assert end is not None and end.reason == "ended_mid_work"
    card = _card(s)
    assert card.status == "incomplete" and "wired into export" not in card.conclusion


def test_a_push_left_unanswered_after_a_commit_that_succeeded_does_not_unsettle_the_work():
    s = _disproved_then_fixed()
    s.runs("git commit -am 'cart: read unit_price'").result("[main 1a2b3c4] cart: read unit_price\n 1 file changed")
    s.runs("git push -u origin main 2>&1")
    assert ending(s.turns) is None
    s2 = Script().user("add a --json flag to export")
    _edit(s2, "/home/dev/shop/app/export.py", "def export(rows):", "def export(rows, as_json=False):")
    s2.runs("git push -u origin main 2>&1")
    assert ending(s2.turns).reason == "ended_mid_work"  # nothing was committed: the push is the work


def test_a_settled_ending_is_not_unresolved():
    s = _disproved_then_fixed().says("Fixed: cart.py now reads unit_price, the field the importer writes.")
    assert ending(s.turns) is None


def _escalated_rerun(s: Script) -> Script:
    """Codex: a script that cannot write inside .git in the sandbox, then the same call escalated, which works."""
    call = {"command": "./scripts/new-feature.sh --json", "workdir": "/home/dev/shop"}
    for args, out, kind in ((call, "fatal: cannot lock ref 'refs/heads/001-x': Operation not permitted", "error"),
                            ({**call, "sandbox_permissions": "require_escalated", "justification": "needs .git"},
                             "Switched to a new branch '001-x'", "tool_result")):
        s.turns.append(Turn(host="codex", session_id=s.session_id, seq=len(s.turns), role="assistant", kind="tool_call",
                            text="shell_command " + json.dumps(args), timestamp=T0, tool_name="shell_command"))
        s.turns.append(Turn(host="codex", session_id=s.session_id, seq=len(s.turns), role="tool", kind=kind,
                            text=out, timestamp=T0, tool_name="shell_command"))
    return s


def test_the_same_command_re_run_with_another_setting_is_the_change_that_worked():
    s = Script(host="codex").user("create the feature branch")
    _escalated_rerun(s)
    lp = fixed_loop(s.turns)
    assert lp is not None and lp.fix.setting == "sandbox_permissions: require_escalated"
    assert "re-running it with `sandbox_permissions: require_escalated`" in choose_conclusion(s.turns).text


def test_a_change_list_said_after_a_fix_is_no_part_of_its_lesson():
    """The task around the fix reports what it built; the fix's card keeps the fix, not the change list."""
    s = Script(host="codex").user("write the spec for the startup readiness feature")
    _escalated_rerun(s)
    s.runs("pytest -q").result("12 passed in 0.1s")
    s.says("Created the startup readiness specification and validated it against the quality checklist. "
           "The spec is ready for planning.")
    said = choose_conclusion(s.turns).text
    assert "require_escalated" in said and "Created the startup readiness specification" not in said


def test_words_too_short_for_a_conclusion_that_name_the_fix_are_kept_beside_the_evidence():
    s = Script().user("the cart total test fails")
    s.runs("pytest tests/test_cart.py").error(KEYERROR)
    s.says("Need to read `unit_price`:")
    _edit(s, "/home/dev/shop/app/cart.py", "item['price']", "item['unit_price']")
    s.runs("pytest tests/test_cart.py").result("6 passed in 0.3s")
    found = choose_conclusion(s.turns)
    assert found.source == "evidence" and found.text.endswith("Said before the change: “Need to read `unit_price`.”")


def test_an_aider_reply_that_explains_and_edits_in_one_message_names_what_its_edit_block_changed():
    reply = ("Without strict, mypy skipped resolve_tz, which has no annotations; now it returns a ZoneInfo.\n\n"
             "birdcount/partition.py\n```python\n<<<<<<< SEARCH\ndef resolve_tz():\n=======\n"
             "def resolve_tz() -> ZoneInfo:\n>>>>>>> REPLACE\n```")
    s = Script(host="aider").user("mypy fails")
    s.runs("mypy birdcount").result("birdcount/partition.py:38: error: Function is missing a return type annotation  "
                                     "[no-untyped-def]\nFound 1 error in 1 file (checked 14 source files)")
    s.says(reply)
    s.turns.append(Turn(host="aider", session_id=s.session_id, seq=len(s.turns), role="tool", kind="tool_result",
                        text="Applied edit to birdcount/partition.py", timestamp=T0, tool_name="edit"))
    s.runs("mypy birdcount").result("Success: no issues found in 14 source files")
    found = choose_conclusion(s.turns)
    assert found.source != "evidence" and "resolve_tz" in found.text and "SEARCH" not in found.text


def test_a_pasted_failure_of_a_named_command_is_verified_when_that_command_passes_after_the_change():
    s = Script().user("cargo build fails on main:\nerror[E0425]: cannot find value `retries` in this scope\n --> src/fetch.rs:40:9")
    s.says("fetch.rs uses `retries` but the field is called max_retries after the config rename; using the field.")
    _edit(s, "/home/dev/shop/src/fetch.rs", "retries", "self.max_retries")
    s.runs("cargo build").result("   Compiling fetch v0.3.1\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 2.10s")
    v = verification(s.turns)
    assert v is not None and v.failed_seq == 0 and "E0425" in v.signature
    assert "max_retries" in choose_conclusion(s.turns).text


@pytest.mark.parametrize("failed,output,rerun,setting", [
    ("pytest -q", "ImportError while importing test module\nModuleNotFoundError: No module named 'opk'",
     "PYTHONPATH=. pytest -q", "PYTHONPATH=."),
    ("make lint", "make: golangci-lint: command not found\nmake: *** [Makefile:4: lint] Error 127",
     "bash -ic 'command -v golangci-lint && make lint' 2>&1 | tail -3", "an interactive shell (bash -ic)"),
])
def test_the_same_check_run_again_with_another_environment_is_a_setting_change(failed, output, rerun, setting):
    s = Script().user("the check fails on this box")
    s.runs(failed).error(output)
    s.runs(rerun).result("4 passed in 0.2s")
    lp = fixed_loop(s.turns)
    assert lp is not None and lp.fix.setting == setting
    v = verification(s.turns)
    assert v is not None and v.failed_seq == 2


def test_an_offer_to_the_user_at_the_end_is_not_a_step_left_undone():
    from memoir.cards.evidence import ending
    from tests.turns import Script

    s = (Script().user("pytest fails: ImportError cannot import name 'x' from 'pkg'").runs("pytest -q")
         .error("ImportError: cannot import name 'x' from 'pkg'"))
    s._add("assistant", "tool_call", 'Edit {"file_path": "pkg/__init__.py"}', None, tool="Edit")
    s.runs("pytest -q").result("3 passed")
    s.says("Exported `x` from pkg/__init__.py, so the import works; pytest passes. Let me know if you want a test for it.")
    assert ending(s.turns) is None
    s.says("Let me run the slow suite too.")
    assert ending(s.turns).reason == "ended_mid_work"


# --- the same check by another route, inside a chain --------------------------------------------------

CRASHLOOP = "api crashloops since the deploy\n\napi-7b4c9d8f6-q9s2m   0/1     CrashLoopBackOff   5 (48s ago)   9m"


def test_a_rollout_wait_chained_after_an_apply_verifies_a_pasted_crashloop():
    s = Script().user(CRASHLOOP)
    s.says("The liveness probe kills the pod before migrations finish; a startupProbe holds it off.")
    _edit(s, "/home/dev/infra/k8s/api/deployment.yaml", "livenessProbe:", "startupProbe: {}\n  livenessProbe:")
    s.runs("kubectl apply -k k8s/overlays/prod && kubectl -n shop rollout status deploy/api --timeout=5m")
    s.result('deployment.apps/api configured\ndeployment "api" successfully rolled out')
    v = verification(s.turns)
    assert v is not None and v.failed_seq == 0 and v.seq == 5 and "CrashLoopBackOff" in v.signature


def test_a_change_chained_before_the_check_in_one_call_is_the_attempt_that_worked():
    s = Script().user("terraform plan in envs/prod errors out:\nError: Error acquiring the state lock\n"
                      "ConditionalCheckFailedException: The conditional request failed\nLock Info:\n  ID: 6f1c2a9e")
    s.says("The lock is left by the interrupted apply and no CI run holds it; releasing it, then planning.")
    s.runs("cd envs/prod && terraform force-unlock -force 6f1c2a9e && terraform plan -no-color 2>&1 | tail -2")
    s.result("Terraform state has been successfully unlocked!\nPlan: 0 to add, 1 to change, 0 to destroy.")
    lp = fixed_loop(s.turns)
    assert lp is not None and lp.fix.tried() == "`terraform force-unlock -force 6f1c2a9e`"
    v = verification(s.turns)
    assert v is not None and v.seq == 3 and v.failed_seq == 0


def test_a_chain_that_starts_with_a_search_but_edits_and_runs_the_tests_is_a_check():
    s = Script().user("tests take 4 min now, anything cheap we can do")
    _edit(s, "/home/dev/shop/src/test/Base.java", "", "static final Container pg = new Container();")
    s.runs("grep -rl '@Container' src/test | xargs sed -i -e '/@Container/d' && ./gradlew test 2>&1 | grep BUILD")
    s.result("BUILD SUCCESSFUL in 1m 38s")
    v = verification(s.turns)
    assert v is not None and v.seq == 4 and v.failed_seq is None


def test_an_output_the_assistant_reads_as_still_failing_is_a_failed_attempt():
    s = Script().user("docker compose up: api dies at once\napi-1  | Traceback (most recent call last):\n"
                      "api-1  |   File \"/app/db.py\", line 9, in connect\n"
                      "api-1  | psycopg.OperationalError: connection refused (127.0.0.1:5432)")
    s.says("Inside the container localhost is the container itself; pointing DATABASE_URL at the db service.")
    _edit(s, "/home/dev/shop/compose.yaml", "env_file: .env", "environment: {DATABASE_URL: postgres://db:5432/x}")
    s.runs("docker compose up -d --build; sleep 2; docker compose logs api | tail -2")
    s.result("api-1  |   address: '172.19.0.2',\napi-1  |   port: 5432")
    s.says("Progress, but still refused, now at the db container: depends_on only waits for it to start.")
    _edit(s, "/home/dev/shop/compose.yaml", "depends_on: [db]", "depends_on: {db: {condition: service_healthy}}")
    s.runs("docker compose up -d && sleep 6 && curl -s localhost:8080/health")
    s.result('{"status":"ok"}')
    lp = fixed_loop(s.turns)
    assert lp is not None and [a.worked for a in lp.attempts] == [False, True]
    v = verification(s.turns)
    assert (v.seq, v.failed_seq) == (10, 5)  # it clears the run read as still failing


def test_an_edit_that_only_removes_lines_says_what_it_removed_and_a_comment_it_left_is_no_change():
    s = Script()
    _edit(s, "/home/dev/tool/cli.py", "# gcode tools\ngh = sub.add_parser('gcode-hooks')\n", "# gcode tools (defined below)\n")
    assert describe_change(s.turns[-2]) == "removing `gh = sub.add_parser('gcode-hooks')` from `tool/cli.py`"


def test_a_fix_too_long_to_show_whole_shows_the_lines_that_name_what_failed():
    from memoir.cards.fix_line import with_the_fix
    s = Script().user("mix test fails")
    s.runs("mix test").error("** (RuntimeError) no :secret_key_base configuration found in MyApp.Endpoint.")
    _edit(s, "/home/dev/app/config/test.exs", "import Config\n",
          "import Config\n\nconfig :my_app, MyApp.Endpoint,\n  http: [port: 4002],\n  server: false,\n"
          "  secret_key_base: String.duplicate(\"test_key_\", 8)\n")
    s.runs("mix test").result("12 tests, 0 failures")
    said = with_the_fix("The endpoint had no test configuration.", fixed_loop(tuple(s.turns)), tuple(s.turns))
    assert "secret_key_base: String.duplicate(\"test_key_\", 8)" in said
    assert "config :my_app, MyApp.Endpoint," in said and "editing" not in said


def test_a_script_run_from_its_own_folder_after_failing_from_the_root_is_the_same_check_fixed_by_the_cd():
    s = (Script().user("build the assets")
         .runs("node assets/build.js").error('✘ [ERROR] Could not resolve "js/app.js"')
         .runs("cd /home/dev/shop/assets && node build.js").result("build ok"))
    lp = fixed_loop(s.turns)
    assert lp is not None and lp.fix.setting == "cd /home/dev/shop/assets"


# --- an error that moved is not an error cleared ---------------------------------------------------------

UNDEFINED_VAR = ("== Compilation error ==\n     error: undefined variable \"payload\"\n     │\n 115 │   assert payload.total == 0\n"
                 "     └─ test/app/counts_test.exs:115:14: App.CountsTest.\"test counts\"/1\n")
UNDEFINED_FUN = ("== Compilation error ==\n     error: undefined function assert_broadcast/2 (expected App.CountsTest to "
                 "define such a function or for it to be imported)\n     │\n 115 │   assert_broadcast(\"counts\", %{total: 0})\n"
                 "     └─ test/app/counts_test.exs:115:7: App.CountsTest.\"test counts\"/1\n")


def _moved_then_fixed() -> Script:
    """A guess changes the code; the same check then fails at the same line with another error; the import fixes it."""
    s = Script().user("the counts test does not compile")
    s.runs("mix test test/app/counts_test.exs").error(UNDEFINED_VAR)
    s.says("The formatter added parentheses to assert_broadcast in counts_test.exs, which breaks the pattern.")
    _edit(s, "/home/dev/shop/test/app/counts_test.exs", "assert_broadcast \"counts\", payload", "assert_broadcast(\"counts\", %{total: 0})")
    s.runs("mix test test/app/counts_test.exs").error(UNDEFINED_FUN)
    s.says("counts_test.exs needs to import Phoenix.ChannelTest for assert_broadcast.")
    _edit(s, "/home/dev/shop/test/app/counts_test.exs", "use ExUnit.Case", "use ExUnit.Case\n  import Phoenix.ChannelTest")
    s.runs("mix test test/app/counts_test.exs").result("6 tests, 0 failures")
    return s


def test_an_error_at_the_place_the_first_error_pointed_at_means_the_change_moved_it_and_the_guess_was_wrong():
    s = _moved_then_fixed()
    assert set(failed_explanations(s.turns)) == {3}
    card = _card(s)
    assert "formatter added parentheses" in card.counterexamples and "formatter" not in card.conclusion
    assert "import Phoenix.ChannelTest" in card.conclusion and card.status == "active"
    assert "undefined variable" in card.error_signature  # the error the experience was about: the first


def test_an_error_that_moved_gets_no_card_of_its_own_as_a_step_cleared():
    s = _moved_then_fixed()
    exp = Experience(s.host, s.session_id, tuple(s.turns))
    assert inner_lessons(exp, _card(s)) == []


def test_errors_at_other_places_are_steps_each_cleared_by_its_own_change():
    assert error_places(UNDEFINED_VAR) == {("counts_test.exs", 115)}
    assert error_places(UNDEFINED_VAR) & error_places(UNDEFINED_FUN)
    trace = ("** (RuntimeError) no :secret_key_base configuration found\n    (phoenix 1.8.1) lib/phoenix/endpoint.ex:420: x/1\n"
             "    test/app/page_test.exs:12: (test)\n")
    other = ("** (RuntimeError) Phoenix LiveView requires lazy_html as a test dependency\n"
             "    (phoenix_live_view 1.1.3) lib/phoenix_live_view/test/dom.ex:8: y/1\n    test/app/page_test.exs:12: (test)\n")
    assert error_places(trace) == {("endpoint.ex", 420)} and not error_places(trace) & error_places(other)
    python = 'Traceback (most recent call last):\n  File "/app/t.py", line 3, in <module>\n  File "/app/cart.py", line 12\nKeyError: 1'
    assert error_places(python) == {("cart.py", 12)}  # the innermost frame, just above the exception
    assert error_places("Error: request to https://api.example.com:443/v1 failed") == set()  # a URL's host is no place


# --- a search at the end of a pipe that finds nothing ------------------------------------------------------

def test_a_pipe_into_a_search_that_finds_nothing_is_no_failure_of_the_command_before_it():
    assert ends_in_search_filter("git ls-remote --heads origin | rg -e 'refs/heads/x$'")
    assert ends_in_search_filter("pytest -q 2>&1 | grep FAILED")
    assert not ends_in_search_filter("rg TODO src") and not ends_in_search_filter("make test || grep -r x .")
    s = Script(host="codex").user("make a feature branch for the startup spec")
    s.runs("git ls-remote --heads origin | rg -e 'refs/heads/[0-9]+-startup$'")
    s.error("Exit code: 1\nOutput:\nssh: Could not resolve hostname github.com: -65563\nfatal: Could not read from remote repository.\n")
    s.says("The sandbox blocks the network; re-running with escalated permissions.")
    s.runs("git ls-remote --heads origin | rg -e 'refs/heads/[0-9]+-startup$'")
    s.result("Exit code: 1\nOutput:\nNow using node v22.20.0 (npm v10.9.3)\n")  # reached the remote; no such branch
    runs = walk(tuple(s.turns)).runs
    assert [(r.failed, r.passed) for r in runs] == [(True, False), (False, True)]
    s2 = Script().user("x").runs("pytest -q 2>&1 | grep -c FAILED").result("Exit code: 1\n0\n")
    assert walk(tuple(s2.turns)).runs[0].passed  # grep counted none
