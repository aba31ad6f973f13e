import json

import pytest

from memoir.cards.conclude import choose_conclusion
from memoir.cards.draft import conclusion_problem, draft_card
from memoir.cards.evidence import ending
from memoir.cards.values import SECTIONS
from memoir.cards.segment import segment_session
from tests.turns import Script


def _only(script):
    exps = segment_session(script.turns)
    assert len(exps) == 1
    return exps[0]


def test_an_explanation_confirmed_by_the_rerun_wins_over_a_closing_pleasantry():
    s = (Script().user("the worker crashes with MemoryError on big uploads")
         .runs("python worker.py big.csv").error("MemoryError")
         .says("Turns out the whole CSV is read into memory; streaming it with csv.reader in chunks of 10k rows keeps memory flat.")
         .runs("python worker.py big.csv").result("processed 2000000 rows OK")
         .says("Let me know if you need anything else!"))
    found = choose_conclusion(_only(s).turns)
    assert found.text.startswith("Turns out the whole CSV")
    assert found.seq == 3


def test_disproved_guess_never_becomes_the_conclusion():
    s = (Script().user("test_checkout fails intermittently, can you fix it?")
         .runs("pytest tests/test_checkout.py").error("AssertionError: expected 3 items, got 2")
         .says("The issue is probably the Redis cache returning stale carts; clearing it in the fixture should fix it.")
         .runs("pytest tests/test_checkout.py").error("AssertionError: expected 3 items, got 2")
         .says("That wasn't it, the same test still fails. Looking at the ordering instead.")
         .says("The root cause is that test_cart leaks an item into the shared session fixture; making the fixture function-scoped fixes test_checkout.")
         .runs("pytest tests/").result("41 passed"))
    card = draft_card(_only(s))
    assert "Redis" not in card.conclusion
    assert card.conclusion.startswith("The root cause is that test_cart leaks")
    assert "disproved" in card.counterexamples and "Redis" in card.counterexamples


def test_a_last_message_cut_mid_sentence_marks_the_card_incomplete_with_the_open_question():
    s = (Script().user("why does the deploy script hang on the migration step?")
         .runs("kubectl logs job/migrate").result("waiting for advisory lock 7421 (held by pod api-old-1)")
         .says("The migration waits on an advisory lock held by the old pods, so the fix is therefore"))
    card = draft_card(_only(s))
    assert card.status == "incomplete"
    assert card.gate == "ended_mid_sentence"
    assert "advisory lock" not in card.conclusion and card.conclusion.startswith("Unresolved:")
    assert "open:" in card.follow_up and "fix is therefore" in card.follow_up


def test_a_piece_cut_out_of_a_longer_stretch_may_end_announcing_its_next_step_and_is_not_cut_mid_sentence():
    s = (Script().user("make the channel test pass")
         .runs("mix test test/app/channel_test.exs").error("error: undefined function assert_broadcast/2")
         .edits("/home/dev/shop/test/app/channel_test.exs", "use ExUnit.Case", "use ExUnit.Case\n  import Phoenix.ChannelTest")
         .runs("mix test test/app/channel_test.exs").result("6 tests, 0 failures")
         .says("All 6 tests pass. Now let me run the full test suite to make sure nothing is broken:"))
    assert ending(s.turns, ends_session=False) is None  # the next piece starts with that run
    assert ending(s.turns, ends_session=True).reason == "ended_mid_sentence"  # nothing came after it


@pytest.mark.parametrize("text,problem", [
    ("", "conclusion_too_short"),
    ("Fixed.", "conclusion_too_short"),
    ("The cause is the connection pool being shared, so", "conclusion_cut_off"),
    ("Raise the pool size in settings to avoid exhaustion; the relevant key is:", "conclusion_cut_off"),
    ("Use this snippet to configure the pool size properly:\n```python\npool = Pool(", "conclusion_open_code_fence"),
    ("Raising pool_size to 10 in settings.toml stopped the 503s under load.", ""),
    ("Pin `urllib3<2` in requirements.txt; botocore 1.29 still imports DEFAULT_CIPHERS", ""),
])
def test_conclusion_integrity_check(text, problem):
    assert conclusion_problem(text, 40) == problem


def test_every_card_has_all_six_sections_and_its_source():
    s = (Script().user("add a healthcheck endpoint").runs("cat app.py")
         .says("Added GET /health returning {\"status\": \"ok\"} with a DB ping; it answers 503 when the ping fails."))
    exp = _only(s)
    card = draft_card(exp)
    for name in SECTIONS:
        assert isinstance(card.section(name), str)
    assert card.goal == "add a healthcheck endpoint"
    assert card.sources[0].session_id == "s-1" and card.sources[0].turns == (0, 2)
    assert card.sources[0].lines == (1, 3)
    assert card.id == exp.id


def test_card_id_is_stable_for_the_same_turns():
    make = lambda: (Script().user("add a healthcheck endpoint").runs("cat app.py")
                    .says("Added GET /health with a DB ping that answers 503 when the ping fails."))
    assert draft_card(_only(make())).id == draft_card(_only(make())).id


def _howto(reply: str | None):
    from memoir.cards.quality_gates import decide_status, judge_card
    from memoir.cards.quality_inputs import EvidenceView

    s = (Script().user("how do I make the Qt GUI show a window on Ubuntu under Wayland? it exits at once")
         .says("The Qt platform plugin is the likely cause: forcing the X11 plugin with QT_QPA_PLATFORM=xcb "
               "before the command makes Qt pick xcb instead of wayland, so the window opens."))
    if reply:
        s.user(reply)
    (exp,) = segment_session(s.turns)
    card = draft_card(exp)
    verdict = judge_card(card, EvidenceView.of_experience(exp), [])
    return card, verdict, decide_status(card, verdict, model_enabled=False, distilled=False)


def test_an_unverified_how_to_is_held_because_nothing_checked_it():
    card, verdict, decided = _howto(None)
    assert not card.verified_by
    assert (decided.status, decided.gate) == ("candidate", "verified_conclusion")
    assert "nothing checked it" in verdict.reasons[0]


def test_a_how_to_the_user_confirms_in_their_own_words_is_checked_by_that_and_may_go_active():
    card, verdict, decided = _howto("QT_QPA_PLATFORM=xcb did the trick, that worked!")
    assert card.verified_by == "t2"
    assert "[t2] confirmed by the user: QT_QPA_PLATFORM=xcb did the trick, that worked!" in card.evidence
    assert verdict.passed, verdict.reasons
    assert decided.status == "active"


@pytest.mark.parametrize("text, cut", [
    ("The fix was to pin the version " + "and " * 300 + "so", True), ("We renamed it and", True),
    ("We renamed it and \n\n", True), ("It was the", True), ("It was xthe", False), ("See the list:", True),
    ("It works now.", False), ("Wait…", True), ("It failed with ſo", True), ("", False),
])
def test_a_conclusion_ending_on_a_joining_word_or_mark_reads_as_cut_off_whatever_its_length(text, cut):
    assert (conclusion_problem(text, 0) == "conclusion_cut_off") is cut


def test_follow_up_lines_are_found_in_any_case_and_in_non_ascii_text():
    s = (Script().user("the import fails after the upgrade, fix it")
         .runs("pytest -q").error("ImportError: cannot import name 'bar' from 'foo'")
         .says("The root cause was that `bar` was renamed to `baz`; importing `baz` fixes it.")
         .runs("pytest -q").result("3 passed")
         .says("Done. FOLLOW-UP: pin foo in requirements.txt.\nÇa reste: we still need to update the docs."))
    follow_up = draft_card(_only(s)).follow_up
    assert "FOLLOW-UP: pin foo" in follow_up
    assert "still need to update the docs" in follow_up


def test_an_evidence_conclusion_shows_a_small_edit_by_its_lines_and_the_check_without_its_cd():
    """"editing `tsconfig.json` fixed it" says nothing a reader can act on; the line it added does."""
    from memoir.cards.commands import added_text
    from memoir.cards.evidence import evidence_statement
    from memoir.cards.loop import fixed_loop
    from memoir.cards.values import Turn

    s = (Script().user("the extension does not compile")
         .runs('cd "C:\\\\work\\\\ext"; npm run compile')
         .error("node_modules/@types/ws/index.d.ts:30:7 - error TS2304: Cannot find name 'Blob'.\nFound 1 error.")
         .edits("/home/dev/shop/tsconfig.json", '"lib": [\n  "ES2020"\n]', '"lib": [\n  "ES2020",\n  "DOM"\n]')
         .runs('cd "C:\\\\work\\\\ext"; npm run compile').result("> tsc -p ./"))
    said = evidence_statement(fixed_loop(s.turns))
    assert said.startswith("`npm run compile` fails with `TS2304")
    assert 'adding `"DOM"` to `tsconfig.json` fixed it' in said
    # A diff inside an edit's content (Cline's SEARCH/REPLACE blocks): the REPLACE lines less the SEARCH lines.
    block = '------- SEARCH\n  "lib": [\n    "ES2020"\n  ]\n=======\n  "lib": [\n    "ES2020",\n    "DOM"\n  ]\n+++++++ REPLACE'
    turn = Turn("cline", "t", 1, "assistant", "tool_call", 'editedExistingFile ' + json.dumps({"content": block}),
                tool_name="editedExistingFile")
    assert added_text(turn).strip() == '"DOM"'


def test_a_fix_card_names_the_error_as_the_log_showed_it_and_its_evidence_runs_from_failure_to_proof():
    """A mask (`Cannot find name <str>`) is a matching key, not what a reader recognises; steps before
    the failure and after the proof are the task around the lesson, and bury the three that matter."""
    s = (Script().user("the extension does not compile")
         .calls("Read", '{"file_path": "/home/dev/shop/README.md"}').got("Read", "# shop")
         .calls("Read", '{"file_path": "/home/dev/shop/package.json"}').got("Read", '{"name": "shop"}')
         .runs("npm run compile")
         .error("node_modules/@types/ws/index.d.ts:30:7 - error TS2304: Cannot find name 'Blob'.\nFound 1 error.")
         .edits("/home/dev/shop/tsconfig.json", '"lib": [\n  "ES2020"\n]', '"lib": [\n  "ES2020",\n  "DOM"\n]')
         .runs("npm run compile").result("> tsc -p ./")
         .runs("git status").result("On branch main\nnothing to commit"))
    card = draft_card(_only(s))
    assert card.error_signature == "TS2304: Cannot find name <str>."
    assert "'Blob'" in card.title and "'Blob'" in card.conclusion
    lines = card.evidence.splitlines()
    assert lines[0].startswith("- [t1–t3] 2 steps of the task before the failure")
    assert "git status" not in card.evidence
    assert lines[-1].startswith("- [t") and "confirmed: `npm run compile` passes again" in lines[-1]


def test_a_command_rerun_with_only_its_chaining_operator_changed_is_a_fix_by_that_setting():
    """Windows PowerShell 5 has no `&&`: the same steps joined by `;` pass. The shell's syntax was the
    problem, and the lesson transfers to every session on that shell."""
    from memoir.cards.draft import with_inner_lessons
    failed = ("At line:1 char:15\n+ cd \"C:\\\\work\\\\app\" && dir\n+              ~~\n"
              "The token '&&' is not a valid statement separator in this version.\n"
              "    + CategoryInfo          : ParserError: (:) [], ParentContainsErrorRecordException\n"
              "    + FullyQualifiedErrorId : InvalidEndOfLine\n")
    s = (Script(host="cline").user("scaffold the extension and build it")
         .runs('cd "C:\\\\work\\\\app" && dir').error(failed)
         .says("PowerShell needs another separator.")
         .runs('cd "C:\\\\work\\\\app"; dir').result("Directory: C:\\work\\app\n package.json")
         .edits("C:/work/app/src/index.ts", "", "export const x = 1;\n")
         .runs('cd "C:\\\\work\\\\app"; npm run build').result("> tsc -p ./"))
    exp = _only(s)
    cards = [c for _, c in with_inner_lessons(exp, draft_card(exp))]
    lesson = next(c for c in cards if c.error_signature == "ParserError: InvalidEndOfLine")
    assert lesson.status == "active", lesson.gate
    assert "re-running it with `;` instead of `&&` fixed it" in lesson.conclusion
    assert "Re-run with `;` instead of `&&`" in lesson.title


def test_the_same_setting_fixing_two_commands_in_one_experience_is_one_card_naming_both_errors():
    """A sandbox that needed escalation for `git fetch`, then for a new branch: one lesson, one card."""
    from memoir.cards.draft import with_inner_lessons
    from memoir.cards.values import Turn

    s = Script(host="codex").user("write the spec for the startup readiness feature")
    for command, error in (("git fetch --all --prune", "error: cannot open '.git/FETCH_HEAD': Operation not permitted"),
                           ("./scripts/new-feature.sh --json",
                            "fatal: cannot lock ref 'refs/heads/001-x': Operation not permitted")):
        call = {"command": command, "workdir": "/home/dev/shop"}
        for args, out, kind in ((call, error, "error"), ({**call, "sandbox_permissions": "require_escalated"}, "ok", "tool_result")):
            s.turns.append(Turn(host="codex", session_id=s.session_id, seq=len(s.turns), role="assistant", kind="tool_call",
                                text="shell_command " + json.dumps(args), tool_name="shell_command"))
            s.turns.append(Turn(host="codex", session_id=s.session_id, seq=len(s.turns), role="tool", kind=kind,
                                text=out, tool_name="shell_command"))
        s.says("Done with that step.")
    s.edits("/home/dev/shop/specs/001-x/spec.md", "", "# Spec\n")
    exp = _only(s)
    fixes = [c for _, c in with_inner_lessons(exp, draft_card(exp)) if c.extra.get("kind") == "fix"]
    assert len(fixes) == 1
    said = fixes[0].conclusion
    assert "FETCH_HEAD" in said and "cannot lock ref" in said
    assert "The same `sandbox_permissions: require_escalated` also cleared" in said
