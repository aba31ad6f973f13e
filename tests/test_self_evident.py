"""A fix the error printed (`cards.self_evident`): held as `self_evident`, while a fix the error did not
print, or offered as one option the agent did not take, stays a lesson."""

from __future__ import annotations

from memoir.cards.draft import draft_card, read_past_range
from memoir.cards.quality_gates import decide_status, judge_card
from memoir.cards.quality_inputs import EvidenceView
from memoir.cards.self_evident import fix_pieces, told_by_error
from memoir.cards.values import Experience
from tests.turns import Script

OUT_OF_SYNC = ("Exit code 1\nError: Database out of sync with JSONL. Run 'tk sync --import-only' to fix.\n\n"
               "To fix:\n  tk sync --import-only            # Import JSONL updates to database\n")
ADD_DEP = ("** (RuntimeError) LazyHTML is required for testing with LiveView. Please add to your mix.exs:\n\n"
           "    {:lazy_html, \">= 0.1.0\", only: :test}\n\n    (phoenix_live_view 1.1.0) lib/test.ex:12: anon fn/0\n")
LOCKFILE = ("ERR_PNPM_OUTDATED_LOCKFILE  Cannot install with \"frozen-lockfile\" because pnpm-lock.yaml is not up "
            "to date with package.json\n  Note that in CI environments this setting is true by default. If you still "
            "need to run install in such cases, use \"pnpm install --no-frozen-lockfile\"\n")


def _settled(s: Script):
    exp = Experience(s.host, s.session_id, tuple(s.turns))
    exp, card = read_past_range(tuple(s.turns), [(exp, draft_card(exp))])[0]
    return decide_status(card, judge_card(card, EvidenceView.of_experience(exp)), model_enabled=False, distilled=False)


def _out_of_sync_fixed_by(command: str) -> Script:
    s = Script().user("close the finished task and pick the next ready one")
    s.runs("tk ready").error(OUT_OF_SYNC)
    s.runs(command).result("Imported 12 issues.\nReady: tk-4 Add the badge")
    s.says("The database was out of sync with the JSONL file; importing it fixed `tk ready`.")
    return s


def test_a_command_the_error_printed_is_held_as_self_evident():
    card = _settled(_out_of_sync_fixed_by("tk sync --import-only && tk ready"))
    assert card.extra["kind"] == "fix"
    assert card.extra.get("told_by_error") is True
    assert card.status == "candidate" and card.gate == "self_evident"


def test_a_fix_the_error_did_not_print_stays_a_lesson():
    card = _settled(_out_of_sync_fixed_by("tk import -i .tk/issues.jsonl --rebuild && tk ready"))
    assert card.extra["kind"] == "fix"
    assert not card.extra.get("told_by_error")
    assert card.status == "active", card.gate


def test_an_added_line_the_error_printed_is_held_and_another_line_is_not():
    def session(new: str) -> Script:
        s = Script().user("the live view tests crash on start")
        s.runs("mix test test/app_web/live").error(ADD_DEP)
        s.edits("/home/dev/app/mix.exs", '{:floki, ">= 0.30.0", only: :test}',
                '{:floki, ">= 0.30.0", only: :test},\n' + new)
        s.runs("mix test test/app_web/live").result("12 tests, 0 failures")
        s.says("LiveView's test helpers need lazy_html; adding it as a test dependency fixed the crash.")
        return s

    told = _settled(session('      {:lazy_html, ">= 0.1.0", only: :test}'))
    assert told.status == "candidate" and told.gate == "self_evident"
    untold = _settled(session('      {:lazy_html, "~> 0.1.2", only: :test, runtime: false}'))
    assert untold.status == "active", untold.gate


def test_an_option_the_error_offered_but_the_agent_did_not_take_is_no_telling():
    s = Script()
    fix = s.runs("git add pnpm-lock.yaml && git commit -m 'lockfile for the new dependency'").turns[-1]
    assert not told_by_error(LOCKFILE, [fix], "pnpm install --frozen-lockfile")
    rerun = s.runs("pnpm install --no-frozen-lockfile && pnpm test").turns[-1]
    assert told_by_error(LOCKFILE, [rerun], "pnpm test")


def test_the_failed_check_run_again_and_short_lines_are_not_the_fix():
    s = Script()
    again = s.runs("tk sync --import-only && tk ready").turns[-1]
    assert fix_pieces([again], "tk ready") == ["tk sync --import-only"]
    assert fix_pieces([s.runs("cd e:/work/site; dir").turns[-1]], "cd e:/work/site && dir") == []
    brace = s.edits("/home/dev/app/lib/x.ex", "", "  end\n  }\n").turns[-2]
    assert fix_pieces([brace], "mix test") == []  # nothing that says anything: never "told"
    assert not told_by_error("  end\n  }\n", [brace], "mix test")


def test_the_same_session_in_another_language_is_held_the_same_way():
    s = Script().user("zavři hotový úkol a vezmi další připravený")
    s.runs("tk ready").error(OUT_OF_SYNC)
    s.runs("tk sync --import-only && tk ready").result("Importováno 12 úkolů.")
    s.says("Databáze nebyla synchronizovaná se souborem JSONL; import ji opravil.")
    card = _settled(s)
    assert card.gate == "self_evident"


def test_a_line_the_error_only_quotes_as_existing_source_is_no_telling():
    quoted = ("error[E0277]: the trait bound `Heading: Serialize` is not satisfied\n    --> src/toc.rs:14:5\n"
              "12   | #[cfg_attr(feature = \"serde\", derive(serde::Serialize))]\n13   | pub struct Toc {\n"
              "     = note: for local types consider adding `#[derive(serde::Serialize)]` to your `Heading` type\n")
    s = Script().edits("/w/src/heading.rs", "pub struct Heading {",
                       '#[cfg_attr(feature = "serde", derive(serde::Serialize))]\npub struct Heading {')
    assert not told_by_error(quoted, [s.turns[-2]], "cargo test --features serde")  # copied from Toc, not told
    s.edits("/w/src/heading.rs", "pub struct Heading {", "#[derive(serde::Serialize)]\npub struct Heading {")
    assert told_by_error(quoted, [s.turns[-2]], "cargo test --features serde")  # the note's own suggestion
    traceback = 'Traceback (most recent call last):\n  File "/w/app.py", line 3, in <module>\n    import tomllib\n'
    s.edits("/w/app.py", "", "import tomllib\n")
    assert not told_by_error(traceback + "ModuleNotFoundError: No module named 'tomllib'\n", [s.turns[-2]], "python app.py")
