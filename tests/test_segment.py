from datetime import timedelta

from memoir.cards.segment import SegmentRules, is_task_switch, is_wrap_up, segment_session, segment_with_skips
from memoir.cards.values import Turn
from tests.turns import Script

FIX = "The root cause was that `bar` was renamed to `baz` in foo.py; importing `baz` fixes the ImportError."


def _bounds(exps):
    return [(e.boundary, e.first_seq, e.last_seq) for e in exps]


def test_one_problem_loop_is_one_experience():
    s = (Script().user("pytest fails with ImportError in foo.py, please fix")
         .runs("pytest -q").error("ImportError: cannot import name 'bar' from 'foo'")
         .says(FIX).runs("pytest -q").result("12 passed in 0.30s"))
    assert _bounds(segment_session(s.turns)) == [("start", 0, 5)]


def test_explicit_task_switch_starts_a_new_experience():
    s = (Script().user("Why is the cache hit rate so low on /products?").says("Because the key includes the request id, so every request misses; drop it from the key.")
         .user("ok, next: add a --json flag to the export command").runs("grep -n export cli.py").says("Added --json to export; it prints one JSON object."))
    assert [e.boundary for e in segment_session(s.turns)] == ["start", "task_switch"]


def test_new_request_after_wrap_up_starts_a_new_experience():
    s = (Script().user("make the failing test pass please").runs("pytest -q").result("3 passed in 0.1s")
         .says("All tests pass now after fixing the fixture path.")
         .user("Can you look at the slow startup of the worker?").runs("py-spy dump").says("Startup spends 2 s importing pandas; import it lazily."))
    assert [e.boundary for e in segment_session(s.turns)] == ["start", "tests_green"]


def test_long_pause_starts_a_new_experience():
    s = (Script().user("Explain what the retry decorator in net.py does", at=0).says("It retries three times with exponential backoff on ConnectionError only.", at=1)
         .user("Please rename the module utils to helpers everywhere", at=200).runs("git mv utils.py helpers.py", at=201).says("Renamed and updated 14 imports.", at=202))
    exps = segment_session(s.turns, SegmentRules(pause=timedelta(minutes=30)))
    assert [e.boundary for e in exps] == ["start", "pause"]


def test_short_pause_does_not_cut():
    s = (Script().user("Explain what the retry decorator in net.py does", at=0).says("It retries three times with exponential backoff on ConnectionError only.", at=1)
         .user("and how many times does it retry on timeouts?", at=10).says("Zero: TimeoutError is not caught by it, so a timeout fails at once.", at=11))
    assert len(segment_session(s.turns)) == 1


def test_compaction_summary_is_a_boundary_and_not_content():
    s = (Script().user("Set up logging for the API server please").runs("cat app.py").says("Added structured JSON logging with request ids in app.py.")
         .summary("The user asked for logging; it was added.")
         .user("Why does the healthcheck return 503 in staging?").runs("curl -s localhost:8000/health").says("The DB pool is exhausted; raising pool_size to 10 fixed it."))
    exps = segment_session(s.turns)
    assert [e.boundary for e in exps] == ["start", "compaction"]
    assert all(t.kind != "summary" for e in exps for t in e.turns)


def test_new_error_signature_after_the_old_one_was_resolved_starts_a_new_experience():
    s = (Script().user("the build is broken, please fix it")
         .runs("npm run build").error("TypeError: Cannot read properties of undefined (reading 'map')")
         .says("items can be undefined on first render; defaulting it to [] fixes the TypeError.")
         .runs("npm run build").result("build ok")
         .runs("npm test").error("ReferenceError: fetch is not defined")
         .says("Jest runs in node without fetch; adding whatwg-fetch to the setup file fixes the ReferenceError.")
         .runs("npm test").result("Tests: 8 passed"))
    exps = segment_session(s.turns)
    assert [e.boundary for e in exps] == ["start", "error_change"]
    assert exps[0].error_signature.startswith("TypeError")
    assert exps[1].error_signature.startswith("ReferenceError")
    assert exps[1].turns[0].kind == "tool_call"


def test_segmentation_never_cuts_a_conclusion_in_two():
    conclusion_parts = ["The fix was to pin urllib3<2 because botocore 1.29 still imports", "DEFAULT_CIPHERS, which urllib3 2.0 removed."]
    s = (Script().user("boto3 import crashes after pip upgrade, fix it")
         .runs("python -c 'import boto3'").error("ImportError: cannot import name 'DEFAULT_CIPHERS' from 'urllib3.util.ssl_'")
         .says(conclusion_parts[0], at=5).says(conclusion_parts[1], at=90)
         .user("next: bump the version to 1.4.0", at=91).runs("sed -i s/1.3.9/1.4.0/ pyproject.toml").says("Bumped to 1.4.0 in pyproject.toml."))
    exps = segment_session(s.turns)
    holder = [e for e in exps if any(conclusion_parts[0] == t.text for t in e.turns)]
    assert len(holder) == 1
    assert any(conclusion_parts[1] == t.text for t in holder[0].turns)


def test_pleasantries_alone_make_no_experience():
    s = Script().user("thanks!").says("You're welcome!")
    assert segment_session(s.turns) == []


def test_task_switch_phrases():
    assert is_task_switch("OK, next: the login page")
    assert is_task_switch("new task: migrate the DB")
    assert is_task_switch("Unrelated, but why is CI slow?")
    assert not is_task_switch("the next release will need it")


def test_a_test_run_with_failures_is_not_a_wrap_up():
    s = (Script().user("make the suite green please").runs("pytest -q").result("1 failed, 11 passed in 0.4s")
         .says("One failure left in test_orders; looking at it.")
         .user("also check the logging config while you are at it").runs("cat logging.ini").says("The logging config sets root to WARNING; lowered it to INFO."))
    assert len(segment_session(s.turns)) == 1


# --- real task ends ------------------------------------------------------------------------------

def _commit(s: Script, subject: str) -> Script:
    return s.runs(f'git commit -m "{subject}"').result(f"[main 9f8e7d6] {subject}\n 1 file changed")


def test_a_successful_commit_ends_the_task_even_without_a_new_prompt():
    s = Script().user("add retries to the uploader and the downloader").runs("apply_patch uploader.py")
    _commit(s, "Retry uploads three times").says("Committed the uploader retries.")
    s.runs("apply_patch downloader.py")
    _commit(s, "Retry downloads three times").says("Committed the downloader retries.")
    exps = segment_session(s.turns)
    assert [e.boundary for e in exps] == ["start", "commit"]
    assert exps[0].turns[-1].text == "Committed the uploader retries."  # the closing report stays
    assert exps[1].turns[0].text.startswith("Bash apply_patch downloader.py")


def test_wrap_up_commands_after_a_commit_stay_with_the_task():
    s = Script().user("fix the typo in README").runs("apply_patch README.md")
    _commit(s, "Fix README typo").runs("git push origin main").result("main -> main").says("Pushed.")
    assert len(segment_session(s.turns)) == 1


def test_a_failed_commit_is_no_boundary():
    s = (Script().user("commit the lint fixes").runs('git commit -m "lint"').error("nothing added to commit")
         .runs("git add -A").runs('git commit -m "lint"').result("[main 1234567] lint"))
    assert len(segment_session(s.turns)) == 1


def test_a_closed_tracker_item_and_a_completed_todo_list_end_tasks():
    s = (Script().user("work on bead app-12").runs("bd close app-12 --reason 'pool size raised'").result("Closed app-12")
         .user("now the flaky login test").runs("pytest tests/test_login.py").result("3 passed"))
    assert [e.boundary for e in segment_session(s.turns)] == ["start", "tracker_close"]
    todo = Script()
    todo.user("write the migration and its test")
    todo._add("assistant", "tool_call", 'TodoWrite {"todos":[{"content":"migration","status":"completed"},'
              '{"content":"test","status":"completed"}]}', None, tool="TodoWrite")
    todo.user("thanks. please also document the new column").runs("apply_patch docs.md")
    assert [e.boundary for e in segment_session(todo.turns)] == ["start", "tracker_close"]


def test_one_autonomous_turn_through_several_tracked_tasks_is_cut_at_each_close():
    """Between two user messages the agent closes one bead and opens the next: two tasks, two experiences;
    the closed task's own commit after its close stays with it."""
    s = (Script().user("work through the ready beads of epic app-7")
         .runs("bd show app-7.1").result("app-7.1: badge count").runs("apply_patch lib/badge.ex").result("Done")
         .runs("mix test").result("12 tests, 0 failures").runs("bd close app-7.1").result("Closed app-7.1")
         .says("Task app-7.1 done.").runs("bd show app-7.2").result("app-7.2: subagent links")
         .runs("apply_patch lib/links.ex").result("Done").runs("mix test").result("14 tests, 0 failures"))
    assert [e.boundary for e in segment_session(s.turns)] == ["start", "tracker_close"]
    committed = (Script().user("finish app-7.1").runs("apply_patch lib/badge.ex").result("Done")
                 .runs("bd close app-7.1").result("Closed app-7.1").runs('git add -A && git commit -m "badge"')
                 .result("[main 1234567] badge"))
    assert len(segment_session(committed.turns)) == 1


def test_clear_and_compact_cut_and_are_not_content():
    s = (Script().user("explain the retry decorator").runs("cat net.py").says("It retries three times on ConnectionError.")
         .user("/clear").user("set up pre-commit with ruff").runs("pre-commit install").says("Installed pre-commit with ruff."))
    exps = segment_session(s.turns)
    assert [e.boundary for e in exps] == ["start", "clear"]
    assert all(t.text != "/clear" for e in exps for t in e.turns)


def test_an_accepted_plan_starts_the_implementation():
    s = Script().user("plan the cache layer").runs("cat app.py")
    s._add("assistant", "tool_call", 'ExitPlanMode {"plan":"1. add redis 2. wrap get_user"}', None, tool="ExitPlanMode")
    s._add("tool", "tool_result", "User has approved your plan.", None, tool="ExitPlanMode")
    s.runs("apply_patch cache.py").says("Added the redis cache around get_user.")
    assert [e.boundary for e in segment_session(s.turns)] == ["start", "plan_accepted"]


def test_no_cut_inside_one_red_to_green_cycle():
    s = (Script().user("the build is red").runs("make").error("error: undefined reference to `zlib_init`")
         .says("All set, linked zlib.")
         .user("now it fails differently").runs("make").error("error: undefined reference to `zlib_init`")
         .runs("apply_patch Makefile").runs("make").result("Build succeeded"))
    assert len(segment_session(s.turns)) == 1


def test_greetings_warmups_slash_commands_and_interruptions_give_no_card_and_a_reason():
    cases = {
        "greeting": Script().user("hi").says("Hello! How can I help you today?"),
        "warmup": Script().user("Warmup").says("I'm ready to help with your codebase, what should I look at?"),
        "slash_command_only": Script().user("/model opus"),
        "interrupted": Script().user("refactor the parser into smaller functions").user("[Request interrupted by user]"),
    }
    for reason, script in cases.items():
        exps, skipped = segment_with_skips(script.turns)
        assert exps == [] and [s.reason for s in skipped] == [reason], reason


def test_a_custom_slash_command_with_arguments_is_a_request():
    s = Script().user("/orchestrator create a TODO app with Next.js").runs("npx create-next-app todo").says("Created the TODO app skeleton with Next.js 15.")
    assert len(segment_session(s.turns)) == 1


def _said(text: str) -> Turn:
    return Turn(host="codex", session_id="s", seq=1, role="assistant", kind="text", text=text)


def test_the_assistant_saying_it_is_done_is_seen_in_any_case_and_in_non_ascii_text():
    assert is_wrap_up(_said("ALL TESTS PASS now."))
    assert is_wrap_up(_said("Everything Works now 🎉"))
    assert is_wrap_up(_said("Ça y est: that's done."))
    assert is_wrap_up(_said("Committed."))
    assert not is_wrap_up(_said("Looking into the failing import next."))


def test_an_inspecting_commands_error_after_the_fix_is_not_what_the_experience_is_about():
    # The build failed through `| tail` (exit status 0, so a result); the one error-kind turn is
    # `cargo tree -i openssl-sys` after the fix saying the crate is gone: the proof, not the problem.
    s = (Script().user("make the musl release build work please")
         .runs("cargo build --release --target x86_64-unknown-linux-musl 2>&1 | tail -n 5")
         .result("thread 'main' panicked at build/find_normal.rs:190:5:\n\n  Could not find directory of OpenSSL "
                 "installation\nerror: failed to run custom build command for `openssl-sys v0.9.103`")
         .says("reqwest's default features pull in native-tls; switching it to rustls-tls drops openssl-sys."))
    s._add("assistant", "tool_call", 'Edit {"file_path": "Cargo.toml"}', None, tool="Edit")
    (s.runs("cargo tree -i openssl-sys --target x86_64-unknown-linux-musl")
     .error("error: package ID specification `openssl-sys` did not match any packages")
     .runs("cargo build --release --target x86_64-unknown-linux-musl 2>&1 | tail -n 2")
     .result("    Finished `release` profile [optimized] target(s) in 41.2s")
     .says("The musl build finishes now: reqwest uses rustls-tls, so nothing needs OpenSSL."))
    (exp,) = segment_session(s.turns)
    assert exp.error_signature == "panicked: Could not find directory of OpenSSL installation"


def test_commands_that_ask_where_a_dependency_comes_from_only_look():
    from memoir.cards.commands import only_looks

    for command in ("cargo tree -i openssl-sys", "pnpm why react", "pip show requests", "go mod why golang.org/x/net"):
        assert only_looks(command), command
    assert not only_looks("cargo build --release") and not only_looks("kubectl get pods")


ANSWER = ("Yes. The cart lives in `web/src/store/cart.ts`: a zustand store wrapped in `persist` with "
          "`name: 'shop-cart-v3'` and localStorage, so it survives a reload and is shared across tabs. "
          "The sessionStorage hit is only the checkout step, which is per tab.")


def _looked_then(next_request: str, *, edited: bool = False) -> Script:
    s = (Script().user("quick question - does the cart survive a page reload? where is that handled")
         .calls("Grep", '{"pattern":"persist|localStorage","path":"web/src"}').got("Grep", "web/src/store/cart.ts:2:import { persist }")
         .calls("Read", '{"file_path":"web/src/store/cart.ts"}').got("Read", "export const useCart = create()(persist(...))"))
    if edited:
        s = s.calls("Edit", '{"file_path":"web/src/store/cart.ts","old_string":"v3","new_string":"v4"}').got("Edit", "updated")
    return (s.says(ANSWER).user(next_request)
            .runs("pnpm --filter checkout test").error("ReferenceError: document is not defined")
            .says("The checkout package ran vitest in node; setting environment jsdom fixes it.")
            .runs("pnpm --filter checkout test").result("Tests 9 passed (9)"))


def test_a_question_answered_after_only_looking_ends_when_a_request_with_its_own_subject_comes():
    s = _looked_then("new package checkout: its tests die with document is not defined, same thing as ui?")
    assert [(e.boundary, e.lines) for e in segment_session(s.turns)] == [("start", (1, 6)), ("question_answered", (7, 12))]


def test_a_request_that_points_back_at_the_answer_carries_on_from_it():
    for follow in ("fix it so it survives a logout too", "can you move that into its own module?",
                   "then add a test for it"):
        assert [e.boundary for e in segment_session(_looked_then(follow).turns)] == ["start"], follow


def test_a_question_whose_answer_changed_something_is_not_a_question_answered_by_looking():
    """Its end is not `question_answered`; the next request after the reply is still a request of its own."""
    s = _looked_then("new package checkout: its tests die with document is not defined, same thing as ui?", edited=True)
    assert [e.boundary for e in segment_session(s.turns)] == ["start", "new_request"]


_REPLY = "Done: the settings page now loads the theme from the profile and the menu shows the new entry. " * 3


def test_each_request_after_a_reply_is_its_own_experience_in_any_language():
    """No host marks a task's end in a plain chat; the user's next request, after the assistant's turn
    ended in a reply, is the mark, whatever the language."""
    s = (Script(host="gemini-cli").user("crie a página de configurações com o tema do perfil")
         .calls("write_file", '{"file_path": "settings.py"}').got("write_file", "ok").says(_REPLY)
         .user("agora gere testes de unidade para o serviço de jogos")
         .calls("write_file", '{"file_path": "test_game.py"}').got("write_file", "ok").says(_REPLY))
    exps = segment_session(s.turns)
    assert [e.boundary for e in exps] == ["start", "new_request"]


def test_a_reply_to_the_assistants_hand_back_a_short_answer_or_a_problem_report_carries_on():
    asks = _REPLY + " Please rename or remove one of the two folders and let me know which one to keep."
    for reply in ("Both have been deleted, so you can start fresh", "pronto", "sim, pode continuar assim mesmo",
                  "it still does not work after that change, same screen"):
        said = asks if reply.startswith("Both") else _REPLY
        s = (Script().user("set up the plan for the embedded startup feature")
             .runs("ls specs").result("001-a 001-b").says(said)
             .user(reply).runs("ls specs").result("001-a"))
        assert len(segment_session(s.turns)) == 1, reply


def test_a_question_after_a_one_line_acknowledgement_is_a_request_of_its_own():
    s = (Script().user("also bump the ingress chart to 4.11.3 while you are in there")
         .calls("Edit", '{"file_path": "modules/ingress/main.tf"}').got("Edit", "updated")
         .user("no wait, separate PR. leave it").says("Understood, I reverted the ingress change.")
         .user("how do i bring the hand made logs bucket under terraform? the module already exists")
         .runs("terraform import module.logs.aws_s3_bucket.this logs").result("Import successful!")
         .says("Use `terraform import` into the address the module declares."))
    assert [e.boundary for e in segment_session(s.turns)] == ["start", "new_request"]


def test_a_problem_reported_after_a_warm_up_that_only_looked_starts_its_own_experience():
    """"Get your bearings" then "the release build is broken": the report is the first real request,
    even though the assistant's summary ended by asking what to do next."""
    s = (Script().user("hi! get your bearings in this repo first pls")
         .runs("ls -la && cat Cargo.toml").result('[package]\nname = "fetchr"')
         .says(_REPLY + " What would you like to work on?")
         .user("release build for musl is broken:\nerror: failed to run custom build command for `openssl-sys v0.9`")
         .runs("cargo build --release --target x86_64-unknown-linux-musl").error("error: failed to run custom build command for `openssl-sys v0.9`")
         .edits("Cargo.toml", 'reqwest = "0.12"', 'reqwest = { version = "0.12", default-features = false, features = ["rustls-tls"] }')
         .runs("cargo build --release --target x86_64-unknown-linux-musl").result("Finished release [optimized]"))
    exps = segment_session(s.turns)
    assert [e.boundary for e in exps][-1] == "new_request"
    assert exps[-1].turns[0].text.startswith("release build for musl is broken")


def test_work_after_a_host_compaction_without_a_new_request_is_carded_under_the_same_request():
    s = (Script().user("add the highlight.js bundle and make sure the assets build")
         .runs("mix compile").result("Compiled 3 files")
         .summary("The conversation so far: adding highlight.js to the assets.")
         .runs("node assets/build.js").error('✘ [ERROR] Could not resolve "js/app.js"')
         .runs("cd assets && node build.js").result("build ok"))
    exps, skipped = segment_with_skips(s.turns)
    assert [e.boundary for e in exps] == ["start", "compaction"] and not skipped
    assert exps[1].request.startswith("add the highlight.js bundle")
