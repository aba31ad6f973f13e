"""Titles say what was learned, never the first prompt as typed."""

from __future__ import annotations

import pytest

from memoir.cards.values import Card
from memoir.cards.title import MAX_TITLE, clean_request, clip_title, display_title, make_title


@pytest.mark.parametrize("typed, cleaned", [
    ("ok, next: tests/test_load.py (8 threads) flakes", "tests/test_load.py (8 threads) flakes"),  # a path keeps its case
    ("new task: migrate the orders table to bigint ids", "Migrate the orders table to bigint ids"),
    ("unrelated, but why is CI slow on main?", "Why is CI slow on main?"),
    ("one more thing: bump ruff to 0.8", "Bump ruff to 0.8"),
    ("back after lunch. the export still times out", "The export still times out"),
    ("hey can you please fix the flaky login test", "Fix the flaky login test"),
    ("[Request interrupted by user]\nretry the migration with --fake", "Retry the migration with --fake"),
    ("/review\nlook at the diff of the pool change", "Look at the diff of the pool change"),
])
def test_conversational_openers_and_host_boilerplate_are_dropped(typed, cleaned):
    assert clean_request(typed) == cleaned


def test_a_signature_title_names_the_failure_and_the_fix():
    title = make_title(signature="OperationalError: database is locked",
                       conclusion="Perfect! The seed connection was never closed; committing and closing it fixes the lock.",
                       request="ok, next: backfill dies with --workers 6: database is locked")
    assert title.startswith("`OperationalError: database is locked` → The seed connection was never closed")
    assert len(title) <= MAX_TITLE


def test_a_commit_subject_is_the_title_of_a_task_without_an_error():
    assert make_title(commit_subject="Add --json to the export command", request="hi") == "Add --json to the export command"


def test_a_commit_subject_alone_gives_way_to_the_cause_and_the_fix():
    title = make_title(commit_subject="fix(gui): QAction import; tests: add smoke test",
                       signature="ImportError: cannot import name <str> from <str> (<path>",
                       conclusion="Good catch — you're right: QAction must be imported from PySide6.QtGui, not "
                                  "QtWidgets. I fixed that and added a test.",
                       request="python -m opk.ui.main_window fails: ImportError: cannot import name 'QAction'")
    assert title == "`ImportError` → QAction must be imported from PySide6.QtGui, not QtWidgets"


def test_a_conventional_commit_type_never_leads_a_title():
    subject = "feat: live review updates over the reviews channel"
    assert make_title(commit_subject=subject, conclusion=subject) == "Live review updates over the reviews channel"


def test_an_error_met_along_the_way_stays_out_of_the_title():
    title = make_title(signature="fatal: Could not read from remote repository.",
                       conclusion="The startup spec is written and every checklist item passes; the UI waits for the "
                                  "health endpoint before it enables chat.",
                       request="Write the spec for gating the chat UI on the health endpoint")
    assert title.startswith("The startup spec is written") and "fatal" not in title


def test_a_failed_attempt_is_never_the_fix_in_a_title():
    title = make_title(signature="OperationalError: database is locked",
                       conclusion="WAL did not help at all. export_rows now reuses the request's connection, so "
                                  "the lock is never held twice.",
                       request="the export fails with OperationalError: database is locked")
    assert title.startswith("`OperationalError: database is locked` → export_rows now reuses")


@pytest.mark.parametrize("request_text", ["hi!", "## User Input\n\nhello, can you help me"])
def test_a_greeting_or_a_template_heading_never_titles_a_settled_card(request_text):
    title = make_title(conclusion="Chat stays disabled until GET /health answers 200, because the embedded "
                                  "server needs about two seconds to load.", request=request_text)
    assert title.startswith("Chat stays disabled until GET /health answers 200")


def test_an_unsettled_card_skips_the_template_heading_of_its_request():
    assert make_title(request="## User Input\n\nok, gate the chat UI on the health endpoint",
                      settled=False) == "Gate the chat UI on the health endpoint"


def test_an_unsettled_card_falls_back_to_the_cleaned_request():
    assert make_title(conclusion="Let me look at the logs next.", request="ok, next: find why the worker leaks memory",
                      settled=False) == "Find why the worker leaks memory"


def test_titles_are_clipped_at_a_word_and_never_leave_a_backtick_open():
    long = "Use `connect_args={'timeout': 30}` and WAL mode so six writer processes stop failing on the shared database file"
    title = clip_title(long)
    assert len(title) <= MAX_TITLE and title.endswith("…") and title.count("`") % 2 == 0


def test_a_card_written_before_titles_shows_its_cleaned_goal():
    card = Card(id="c-1", goal="ok, next: make the nightly export idempotent", conclusion="x")
    assert display_title(card) == "Make the nightly export idempotent"
    assert display_title(Card(id="c-2", title="Given title")) == "Given title"


def test_a_drafted_card_is_titled_cause_then_fix_not_by_its_commit_subject_or_first_prompt():
    from memoir.cards.draft import draft_card
    from memoir.cards.segment import segment_session
    from tests.turns import Script

    s = (Script().user("hi! can you look at the GUI? python -m opk.ui.main_window dies on start with an ImportError")
         .runs("python -m opk.ui.main_window")
         .error("ImportError: cannot import name 'QAction' from 'PySide6.QtWidgets'"))
    s._add("assistant", "tool_call", 'Edit {"file_path": "opk/ui/main_window.py"}', None, tool="Edit")
    s.runs("python -m opk.ui.main_window").result("window opened, exit 0")
    s.runs('git commit -am "chore: misc gui updates"').result("[main 1a2b3c4] chore: misc gui updates\n 1 file changed")
    s.says("Good catch! QAction lives in PySide6.QtGui since Qt 6, not in QtWidgets; importing it from QtGui "
           "fixes the start. Let me know if you want a CI job for the GUI.")
    (exp,) = segment_session(s.turns)
    card = draft_card(exp)
    assert card.title == "`ImportError` → QAction lives in PySide6.QtGui since Qt 6, not in QtWidgets; importing it from QtGui fixes…"
    assert "Let me know" not in card.conclusion


def test_an_aside_or_a_stated_limit_never_titles_a_card():
    title = make_title(conclusion="Not affected: real environment variables still override .env values. "
                                  "Settings now come from pydantic-settings with env_file anchored to the project root. "
                                  "This does not apply when the app runs from a zipped wheel.",
                       commit_subject="Move to pydantic-settings; anchor .env to the project root")
    assert title.startswith("Settings now come from pydantic-settings with env_file anchored")


@pytest.mark.parametrize("conclusion", [
    "Next, I’ll add the new CLI subcommands in the parser. The parser now rejects unknown hooks with exit code 2.",
    "To implement the sync command, we need to create a script first. The parser now rejects unknown hooks with exit code 2.",
])
def test_work_still_ahead_never_titles_a_card(conclusion):
    assert make_title(conclusion=conclusion).startswith("The parser now rejects unknown hooks")


def test_a_title_never_starts_with_the_evidence_conclusions_narrative_label():
    conclusion = ("`mix test test/x_test.exs` fails with `CompileError: cannot compile module XTest` (t4); editing "
                  "`test/x_test.exs` fixed it: the same check passes at t9. Said before the change: “Need to import "
                  "`Phoenix.ChannelTest`.”")
    title = make_title(signature="CompileError: cannot compile module XTest", conclusion=conclusion, request="work on it")
    assert "Said before" not in title and title.endswith("Need to import `Phoenix.ChannelTest`")


def test_an_evidence_conclusion_titles_the_change_that_fixed_it_not_a_dangling_failure_clause():
    conclusion = ("The failure the user pasted (t11) fails with `CrashLoopBackOff`; editing `k8s/deployment.yaml` "
                  "fixed it: `kubectl rollout status deploy/api` passes at t14.")
    title = make_title(signature="CrashLoopBackOff", conclusion=conclusion, request="api crashloops")
    assert title.startswith("`CrashLoopBackOff` → Editing `k8s/deployment.yaml` fixed it") and "fails with ;" not in title


def test_an_evidence_title_names_the_fix_whole_and_not_the_check_that_confirmed_it():
    conclusion = ("`scripts/new-feature.sh --json` fails with `fatal: cannot lock ref <str>: Unable to create` (t25); "
                  "re-running it with `sandbox_permissions: require_escalated` fixed it: the same check "
                  "`scripts/new-feature.sh --json` passes at t28.")
    title = make_title(signature="fatal: cannot lock ref <str>: Unable to create", conclusion=conclusion, request="x")
    assert title == "`fatal: cannot lock ref …: Unable…` → Re-run with `sandbox_permissions: require_escalated`"
    edited = ("`pytest tests/test_gui.py` fails with `ImportError: cannot import name <str> from <str>` (t2); editing "
              "`ui/tabs.py` fixed it: the same check `pytest tests/test_gui.py` passes at t6.")
    assert make_title(signature="ImportError: cannot import name <str> from <str>", conclusion=edited,
                      request="x") == "`ImportError` → Editing `ui/tabs.py` fixed it"


def test_a_work_report_is_titled_by_what_was_built_never_by_a_sentence_from_its_body():
    report = ("We had duplication between the two tabs.\nI've cleaned that up and added a Peripherals tab.\n\n"
              "- Aux outputs only take the fixed M42 pins.\n- This is optional and can be done when we add generators.")
    assert make_title(conclusion=report) == "I've cleaned that up and added a Peripherals tab"


def test_a_code_span_with_dots_inside_ends_no_sentence_of_a_title():
    title = make_title(conclusion="The generated migration uses `ALTER TABLE ... modify`, which SQLite doesn't support.")
    assert title.startswith("The generated migration uses `ALTER TABLE ... modify`")


def test_a_rerun_with_a_short_setting_is_still_the_fix_in_the_title():
    conclusion = ("`pytest -q` fails with `ModuleNotFoundError: No module named <str>` (t59); re-running it with "
                  "`PYTHONPATH=.` fixed it: the same check `PYTHONPATH=. pytest -q` passes at t61.\n\n"
                  "Implemented the requested CLI additions, updated docs, ran tests, and committed.")
    assert make_title(signature="ModuleNotFoundError: No module named <str>", conclusion=conclusion,
                      request="x").endswith("→ Re-run with `PYTHONPATH=.`")


def test_a_sentence_that_only_narrows_another_is_not_the_cause_a_title_names():
    """"The sessionStorage hit is only the checkout step" says what a hit is not; the answer comes first."""
    conclusion = ("Yes. The cart is a zustand store in `web/src/store/cart.ts` wrapped in `persist` with localStorage, "
                  "so it survives reloads.\n\nThe `sessionStorage` hit is only the checkout step, which is per tab.")
    assert make_title(conclusion=conclusion, request="does the cart survive a page reload?").startswith(
        "The cart is a zustand store in `web/src/store/cart.ts`")


def test_a_sentence_that_only_confirms_an_earlier_one_is_never_the_title():
    title = make_title(conclusion="That confirms it was a Qt platform plugin issue.\n"
                                  "Forcing QT_QPA_PLATFORM=xcb selects the X11 plugin and fixes the immediate exit.")
    assert not title.startswith("That confirms")
    assert "xcb" in title


def test_a_lead_pointing_at_another_fix_is_cut_and_the_cause_after_it_names_the_card():
    title = make_title(signature="ReferenceError: document is not defined",
                       conclusion="Same root cause as packages/ui (`3f9c2ab`): `vitest.config.ts` had no `environment`, "
                                  "so vitest ran in node and document was undefined.")
    assert "Same root cause" not in title and "vitest.config.ts" in title


def test_a_suspect_the_session_cleared_is_never_the_title():
    title = make_title(conclusion="The earlier fix (`busy_timeout(5000)`) was applied correctly on every pooled "
                                  "connection, but it can't help here. Added `_txlock=immediate` to the DSN so every "
                                  "BeginTx takes the write lock before the first read.")
    assert "_txlock=immediate" in title and "busy_timeout" not in title


def test_a_how_to_answered_in_steps_is_titled_by_its_lead_and_first_step():
    """A cause clause inside a step is a side note; the procedure is what was learned."""
    conclusion = ("Works as described. To add a migration in ledgerd:\n\n"
                  "1. Create `internal/store/migrations/NNNN_name.sql` with the next number. Migrations are embedded, "
                  "so rebuild after adding one.\n2. Run `ledgerd migrate up`.")
    title = make_title(conclusion=conclusion, request="how do i add a migration again?")
    assert title.startswith("To add a migration in ledgerd: create `internal/store/migrations/NNNN_name.sql`")


def test_an_answer_given_as_a_lead_sentence_and_a_code_block_is_titled_by_the_lead():
    conclusion = ("The way to adopt an existing bucket is `terraform import` into the address the module declares:\n\n"
                  "```\nterraform import module.logs.aws_s3_bucket.this logs\n```\n\n"
                  "On Terraform >= 1.5 you can instead put an `import` block in the env so it is reviewed.")
    assert make_title(conclusion=conclusion).startswith("The way to adopt an existing bucket is `terraform import`")
