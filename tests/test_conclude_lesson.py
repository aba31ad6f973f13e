"""The lesson as a card keeps it: no filler, next steps or file lists, within the budget the card file states."""

from __future__ import annotations

from memoir.cards.lesson import CONCLUSION_BUDGET, lesson, within_budget, without_filler
from memoir.cards.draft import conclusion_problem, draft_card
from memoir.cards.segment import segment_session
from memoir.cards.store import parse_card, render_card
from memoir.index.containers import immediate_context
from memoir.index.recall import RecalledCard
from tests.turns import Script

REPORT = """Good catch — thanks for the traceback. You're right: QAction must be imported from PySide6.QtGui, not \
QtWidgets. The import now comes from QtGui and a smoke test imports the main window; 18 tests pass.

What's in the GUI now:
- A File menu with Open and Save
- A status bar with the printer state

Files changed:
- `opk/ui/main_window.py`
- `tests/test_gui_import.py`

Next steps:
- package the app for macOS

Let me know if you want me to add a CI job for the GUI too."""


def test_acknowledgements_inventories_file_lists_next_steps_and_offers_are_stripped():
    kept = without_filler(REPORT)
    assert kept == ("QAction must be imported from PySide6.QtGui, not QtWidgets. The import now comes from QtGui "
                    "and a smoke test imports the main window; 18 tests pass.")


def test_praise_for_the_users_idea_is_no_part_of_the_lesson_in_any_wording():
    lesson_text = "The worker pool must be created after the fork, because each child would inherit its locks."
    for praise in ("Great call.", "Great idea —", "Good idea!", "Great point:", "Good call."):
        assert without_filler(f"{praise} {lesson_text}") == lesson_text
        assert without_filler(f"{praise}\n{lesson_text}") == lesson_text


def test_a_list_of_every_file_touched_goes_even_without_a_heading():
    text = ("The spec is written and validated against the quality checklist; every item passes.\n\n"
            "- Branch: `001-embedded-startup`\n- Spec: `specs/001-embedded-startup/spec.md`\n"
            "- Checklist: `specs/001-embedded-startup/checklists/requirements.md`\n\n"
            "Ready for the next phase: `/speckit.plan`.")
    assert without_filler(text) == "The spec is written and validated against the quality checklist; every item passes."


def test_a_list_that_carries_the_lesson_stays():
    text = ("`FROM scratch` has no CA bundle, so TLS verification fails. Two ways out:\n"
            "- copy /etc/ssl/certs/ca-certificates.crt from the build stage\n"
            "- build on gcr.io/distroless/static, which ships the certificates")
    assert without_filler(text) == text


def test_an_order_the_agent_gives_itself_after_the_lesson_is_a_next_step():
    text = ("The auto-generated migration uses `ALTER TABLE ... modify`, which SQLite doesn't support for "
            "nullability changes.\n\nNow update the renderer test to cover `id` vs `uuid` behavior.")
    assert without_filler(text) == text.split("\n\n")[0]
    said = "The parse cache is keyed by the file path and its modification time. Now I'll add a test for the hash key."
    assert without_filler(said) == "The parse cache is keyed by the file path and its modification time."
    assert without_filler("Now the cache is keyed by the file's hash, so a rename keeps it.").startswith("Now the cache")


def test_a_conclusion_that_is_only_filler_and_files_is_kept_as_it_was():
    text = "Done!\n\n- `a/b.py`\n- `c/d.py`"
    assert without_filler(text) == text


def test_the_budget_cuts_after_a_whole_sentence_and_marks_the_cut():
    text = " ".join(f"Sentence {i} says something about the cache layer." for i in range(40))
    cut = within_budget(text)
    assert len(cut) <= CONCLUSION_BUDGET and cut.endswith(". […]")
    assert conclusion_problem(cut, 40) == ""  # a marked cut is not a conclusion cut off
    assert lesson("short and whole.") == "short and whole."


def _session(closing: str):
    s = (Script().user("the GUI crashes on start with ImportError: cannot import name 'QAction' from 'PySide6.QtWidgets'")
         .runs("python -m opk.ui.main_window").error("ImportError: cannot import name 'QAction' from 'PySide6.QtWidgets'"))
    s._add("assistant", "tool_call", 'Edit {"file_path": "opk/ui/main_window.py"}', None, tool="Edit")
    return s.runs("python -m opk.ui.main_window").result("window opened, exit 0").says(closing)


def test_a_drafted_card_keeps_the_lesson_and_states_its_budget():
    (exp,) = segment_session(_session(REPORT + "\n\n" + "More words on the history of Qt modules. " * 30).turns)
    card = draft_card(exp)
    assert card.conclusion.startswith("QAction must be imported from PySide6.QtGui")
    assert "Files changed" not in card.conclusion and "Let me know" not in card.conclusion
    assert len(card.conclusion) <= CONCLUSION_BUDGET
    text = render_card(card)
    assert f"conclusion_budget: {CONCLUSION_BUDGET}" in text
    assert render_card(parse_card(text)) == text and "conclusion_budget" not in parse_card(text).extra


def test_the_injected_conclusion_honours_the_budget_whatever_the_file_holds():
    long = "A hand-edited conclusion that grew. " * 40
    block = immediate_context([RecalledCard("c-1", long, "", (), 0.9, 1.0)])
    shown = block.split("Conclusion: ", 1)[1].split("\nSource:", 1)[0]
    assert len(shown) <= CONCLUSION_BUDGET and shown.endswith("[…]")


def test_the_lesson_above_a_list_of_files_stays_and_a_list_that_says_what_changed_stays_too():
    bare = ("Pydantic 2 moved BaseSettings into the separate pydantic-settings package. Files changed:\n"
            "- `pyproject.toml`\n- `app/settings.py`")
    assert without_filler(bare) == "Pydantic 2 moved BaseSettings into the separate pydantic-settings package."
    described = ("Pydantic 2 moved BaseSettings into the separate pydantic-settings package. Changes:\n"
                 "- pyproject.toml: added pydantic-settings next to pydantic 2.9\n"
                 "- app/settings.py: BaseSettings now comes from pydantic_settings, with env_file set in model_config")
    assert without_filler(described) == described


def test_a_bare_label_left_above_a_dropped_list_and_an_invitation_to_report_more_go_too():
    text = ("QAction must be imported from PySide6.QtGui, not QtWidgets; the smoke test imports the window.\n\n"
            "New test\n- `tests/test_gui_import.py`\n- `tests/conftest.py`\n\n"
            "If you see any other runtime issues when launching the GUI, paste the traceback.")
    assert without_filler(text) == ("QAction must be imported from PySide6.QtGui, not QtWidgets; the smoke test "
                                    "imports the window.")


def test_an_inventory_heading_with_a_typographic_apostrophe_goes_too():
    text = ("The editor keeps G-code blocks per stage, so start and end code no longer mix.\n\n"
            "What’s in the GUI now\n- a Start tab\n- an End tab")
    assert without_filler(text) == "The editor keeps G-code blocks per stage, so start and end code no longer mix."


def test_an_inventory_label_in_the_middle_of_a_paragraph_goes_with_its_list():
    text = ("Done.\nThe peripherals now live in their own tab, so the machine tab holds only standard M-codes.\n"
            "What’s in the GUI now\n- Machine Control tab\n  - PSU on at start (M80)\n- Peripherals tab")
    assert without_filler(text) == ("The peripherals now live in their own tab, so the machine tab holds only "
                                    "standard M-codes.")


def test_a_first_sentence_that_only_points_back_at_the_users_words_goes():
    text = ("That explains why it only shows up now. Without `strict`, mypy skips the bodies of unannotated "
            "functions, so `resolve_tz` was never checked.")
    assert without_filler(text).startswith("Without `strict`, mypy skips")
    said = "That makes sense. The cache key ignores the locale, so two locales share one rendered page."
    assert without_filler(said) == "The cache key ignores the locale, so two locales share one rendered page."
    # A demonstrative that says something of its own stays.
    kept = "This is a race between the two writers; a lock around the flush fixes it."
    assert without_filler(kept) == kept
    named = "This confirms the `ulimit` theory: the worker dies at 1024 open files."
    assert without_filler(named) == named


def test_an_order_only_the_agent_gave_is_left_out_and_one_the_user_typed_stays():
    from memoir.cards.lesson import without_orders

    text = ("CI runs `pnpm install --frozen-lockfile`, which fails with `ERR_PNPM_OUTDATED_LOCKFILE` whenever a "
            "package.json changes without the matching lockfile. Committing `pnpm-lock.yaml` fixed it. "
            "Don't switch CI to `--no-frozen-lockfile`; always commit the lockfile with dependency changes.")
    lesson_only = text.rsplit(" Don't", 1)[0]
    assert without_orders(text, ["pushed, CI is red on install now"]) == lesson_only
    typed = ["don't switch CI to no-frozen-lockfile, always commit the lockfile with dependency changes"]
    assert without_orders(text, typed) == text
    # An order that is all there is stays, and the gate holds the card for it.
    only = "Always run `make migrate` before the tests start, every time, on every machine."
    assert without_orders(only, []) == only
