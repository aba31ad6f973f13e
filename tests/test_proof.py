"""A card is a lesson the log proves (issue 37): its kind, its proof, and the rest of the session.

Each mechanism pinned on a small hand-made session: a change list with no failure is a work report;
a check green before the change proves nothing; a background start is no result; a check in another
language than the edit cannot prove it; the user's rejection after the range takes the card back;
a failure in the agent's own fresh lines is held; the same session in another language gets the
same card.
"""

from __future__ import annotations

import pytest

from memoir.cards.draft import draft_card, read_past_range
from memoir.cards.proof import exercises, problem_in, prove
from memoir.cards.quality_gates import decide_status, judge_card
from memoir.cards.quality_inputs import EvidenceView
from memoir.cards.values import Experience
from tests.turns import Script

KEYERROR = "Traceback (most recent call last):\n  File \"/home/dev/shop/app/cart.py\", line 12, in total\nKeyError: 'price'\n"


def _edit(s: Script, path: str, old: str, new: str) -> Script:
    return s.edits(path, old, new)


def _settled(s: Script, upto: int | None = None):
    """The card the whole script (or its first `upto` turns) makes, after the quality gates, model off."""
    exp = Experience(s.host, s.session_id, tuple(s.turns[:upto] if upto else s.turns))
    drafted = read_past_range(tuple(s.turns), [(exp, draft_card(exp))])
    exp, card = drafted[0]
    return decide_status(card, judge_card(card, EvidenceView.of_experience(exp)), model_enabled=False, distilled=False)


def _fixed_keyerror(request: str = "the cart total test fails, can you fix it?",
                    closing: str = "The KeyError came from cart.py reading item['price'] while the importer stores "
                                   "the field as unit_price; cart.py now reads unit_price.") -> Script:
    s = Script().user(request)
    s.runs("pytest tests/test_cart.py").error(KEYERROR)
    s.says("cart.py reads item['price'] but the importer stores the field as unit_price.")
    _edit(s, "/home/dev/shop/app/cart.py", "item['price']", "item['unit_price']")
    s.runs("pytest tests/test_cart.py").result("6 passed in 0.3s")
    s.says(closing)
    return s


def test_a_red_change_green_loop_is_a_fix_and_goes_active():
    card = _settled(_fixed_keyerror())
    assert card.extra["kind"] == "fix"
    assert card.status == "active", card.gate
    assert card.verified_by


def test_a_change_list_with_no_failure_before_it_is_a_work_report_and_never_active():
    s = Script().user("Please add a settings dialog and a changelog entry, yes to all the options")
    _edit(s, "/home/dev/shop/app/settings.py", "pass", "def dialog(): return Dialog()")
    s.runs("pytest -q").result("24 passed in 0.5s")
    s.says("All four items are implemented, tested, and documented: the settings dialog is in settings.py.")
    card = _settled(s)
    assert card.extra["kind"] == "work_report"
    assert card.status == "candidate" and card.gate == "work_report"


def test_a_check_already_green_before_the_change_proves_nothing():
    s = Script().user("the cart page is slow, please speed it up")
    s.runs("pytest -q").result("24 passed in 0.5s")
    _edit(s, "/home/dev/shop/app/cart.py", "for x in items:", "for x in set(items):")
    s.runs("pytest -q").result("24 passed in 0.4s")
    s.says("The cart page was slow because it looped over duplicate items; deduplicating them fixes it.")
    card = _settled(s)
    assert card.status != "active"
    assert card.extra["kind"] in ("unproven", "work_report")


def test_a_background_start_is_no_result_and_verifies_nothing():
    s = Script().user("the server crashes on start, fix it")
    s.runs("npm start").error("Error: Cannot find module 'express'\n    at Module._resolveFilename")
    _edit(s, "/home/dev/shop/package.json", '"dependencies": {}', '"dependencies": {"express": "^4"}')
    s.runs("npm start").result("Command running in background with ID: bash_3")
    s.says("The server crashed because express was missing from package.json; adding it fixes the start.")
    card = _settled(s)
    assert card.status != "active"
    assert card.extra.get("kind") != "fix"


def test_a_check_in_another_language_than_the_edit_cannot_prove_it():
    assert not exercises("go test ./...", ["web/app.js", "web/index.html"])
    assert exercises("go test ./...", ["internal/store.go"])
    assert exercises("npm test", ["web/app.js"])
    assert exercises("make check", ["web/app.js"])  # a runner memoir cannot read may run anything
    assert exercises("pytest -q", ["pyproject.toml"])  # config is exercised by any check


def test_the_users_rejection_after_the_range_takes_the_card_back():
    s = _fixed_keyerror()
    end = len(s.turns)
    s.user("no, that's not it: the importer should keep the field as price, revert it")
    card = _settled(s, upto=end)
    assert card.status == "candidate" and card.gate == "contradicted_later"
    assert "reject" in card.extra["contradicted_by"]


def test_the_same_error_again_after_the_range_takes_the_card_back():
    s = _fixed_keyerror()
    end = len(s.turns)
    s.user("deployed it")
    s.runs("pytest tests/test_cart.py tests/test_orders.py").error(KEYERROR)
    card = _settled(s, upto=end)
    assert card.gate == "contradicted_later"
    assert "same error" in card.extra["contradicted_by"]


def test_the_next_request_after_the_range_leaves_the_card_standing():
    s = _fixed_keyerror()
    end = len(s.turns)
    s.user("great, now add a discount field to the cart")
    assert _settled(s, upto=end).status == "active"


def test_a_failure_in_lines_the_agent_just_wrote_is_held_as_self_inflicted():
    s = Script().user("add a total() helper with a test")
    _edit(s, "/home/dev/shop/app/cart.py", "", "def total(items):\n    return sum(i.price for i in itemz)\n")
    s.runs("pytest tests/test_cart.py").error("NameError: name 'itemz' is not defined")
    _edit(s, "/home/dev/shop/app/cart.py", "for i in itemz", "for i in items")
    s.runs("pytest tests/test_cart.py").result("3 passed in 0.1s")
    s.says("total() failed because of a typo (itemz instead of items) in cart.py; fixed the name.")
    card = _settled(s)
    assert card.extra.get("self_inflicted") is True
    assert card.status == "candidate" and card.gate == "self_inflicted"


def test_an_environment_failure_in_the_agents_own_file_still_transfers():
    s = Script().user("add a GUI smoke test")
    _edit(s, "/home/dev/shop/tests/test_gui.py", "", "from app.gui import main\n")
    s.runs("pytest tests/test_gui.py").error("ImportError: libEGL.so.1: cannot open shared object file")
    _edit(s, "/home/dev/shop/tests/test_gui.py", "from app.gui import main\n",
          "import os\nos.environ['QT_QPA_PLATFORM'] = 'offscreen'\nfrom app.gui import main\n")
    s.runs("pytest tests/test_gui.py").result("1 passed in 0.2s")
    s.says("Importing the GUI failed on a headless machine because Qt needs libEGL; QT_QPA_PLATFORM=offscreen avoids it.")
    card = _settled(s)
    assert not card.extra.get("self_inflicted")
    assert card.status == "active", card.gate


def test_a_problem_the_user_reports_is_proven_gone_by_the_user_not_by_a_suite():
    s = Script().user("The GUI exits immediately when I start it, nothing shows")
    _edit(s, "/home/dev/shop/app/gui.py", "app.exec()", "sys.exit(app.exec())")
    s.runs("pytest -q").result("18 passed in 0.4s")
    s.says("The GUI exited because the event loop result was dropped; main() now returns app.exec().")
    assert _settled(s).status != "active"
    s.user("OK, this worked, the window stays open now")
    card = _settled(s)
    assert card.extra["kind"] == "confirmed_answer"
    assert card.status == "active", card.gate


def test_a_confirmed_command_that_failed_the_same_way_before_proves_nothing_it_carries():
    """The user confirms `X=1 app`, which their own earlier paste shows failing: the setting the answer
    credits was there when it failed, so something else (a reinstall in between) made it work."""
    s = Script().user("The GUI exits immediately when I start it:\n$ QT_QPA_PLATFORM=xcb DEBUG=1 shop-gui\n"
                      "shop-gui: command not found\n$")
    s.says("Forcing the xcb platform plugin fixes it; reinstall the package so the entry point exists: pip install -e .")
    s.user("OK, this worked: QT_QPA_PLATFORM=xcb DEBUG=1 shop-gui")
    s.says("That confirms it was a Qt platform plugin issue: xcb selects the X11 plugin.")
    card = _settled(s)
    assert card.extra["kind"] == "unproven" and "had failed in their own paste" in card.extra["proof"]
    assert card.status != "active"
    fresh = Script().user("The GUI exits immediately when I start it:\n$ DEBUG=1 shop-gui\n$")
    fresh.says("Force the xcb platform plugin: QT_QPA_PLATFORM=xcb DEBUG=1 shop-gui")
    fresh.user("OK, this worked: QT_QPA_PLATFORM=xcb DEBUG=1 shop-gui")
    fresh.says("That confirms it was a Qt platform plugin issue: xcb selects the X11 plugin.")
    assert _settled(fresh).extra["kind"] == "confirmed_answer"


TRANSLATIONS = {
    "en": ("the cart total test fails, can you fix it?", "no, that is not what I wanted, revert it",
           "OK, this worked, thanks"),
    "es": ("la prueba del total del carrito falla, ¿puedes arreglarlo?", "no, eso no es lo que pedí, sigue fallando",
           "¡Ya funciona, gracias!"),
    "cs": ("test celkové ceny košíku padá, můžeš to opravit?", "ne, pořád to nefunguje", "Už to funguje, díky"),
    "fr": ("le test du total du panier échoue, tu peux corriger ?", "non, ça ne marche toujours pas",
           "ça marche maintenant, merci"),
    "nl": ("de test voor het totaal faalt, kun je het fixen?", "nee, het werkt nog steeds niet", "Het werkt nu!"),
    "ko": ("장바구니 합계 테스트가 실패해요. 고쳐 줄 수 있나요?", "여전히 같은 오류가 나요", "이제 잘 작동합니다"),
    "pt": ("o teste do total do carrinho falha, pode corrigir?", "não, ainda não funciona", "Funcionou, valeu"),
    "zh": ("购物车总价的测试失败了，能修一下吗？", "不对，还是报错", "可以了，谢谢"),
    "ja": ("カートの合計のテストが失敗します。直してもらえますか？", "違います、まだエラーが出ます", "直りました、ありがとう"),
}


def test_a_translated_session_gets_the_same_card_kind_and_status():
    """Proof is read from commands, exit codes and edits; only the user's words are translated."""
    outcomes = {}
    for lang, (request, reject, _) in TRANSLATIONS.items():
        s = _fixed_keyerror(request=request)
        end = len(s.turns)
        kept = _settled(s, upto=end)
        s.user(reject)
        rejected = _settled(s, upto=end)
        outcomes[lang] = (kept.extra["kind"], kept.status, rejected.gate)
    assert set(outcomes.values()) == {("fix", "active", "contradicted_later")}, outcomes


def test_a_translated_confirmation_proves_a_reported_problem():
    for lang, (_, _, confirm) in TRANSLATIONS.items():
        s = Script().user("The GUI exits immediately when I start it")
        _edit(s, "/home/dev/shop/app/gui.py", "app.exec()", "sys.exit(app.exec())")
        s.says("The GUI exited because the event loop result was dropped; main() now returns app.exec().")
        s.user(confirm)
        card = _settled(s)
        assert (lang, card.extra["kind"], card.status) == (lang, "confirmed_answer", "active"), card.gate


def test_problem_in_reads_failures_and_reports_but_not_a_feature_request():
    assert problem_in(Script().user("please add a dark mode toggle").turns) is None
    assert problem_in(Script().user("la app falla al iniciar").turns) is not None
    s = Script().user("add a test").runs("pytest").error(KEYERROR)
    assert problem_in(s.turns)[1] == "failing_run"


def test_prove_says_why_in_words_a_person_reads():
    proof = prove(tuple(_fixed_keyerror().turns), confirmed_at=None, users_words=False)
    assert proof.kind == "fix" and "failed at t" in proof.why and "passed after the change" in proof.why


def test_each_error_a_chain_cleared_on_its_way_to_green_gets_its_own_card():
    """red (A) → change → red (B) → change → green: the task's card is about B; A gets a card of its own."""
    from memoir.cards.draft import with_inner_lessons

    s = Script().user("add a review page with a LiveView test, yes to all")
    _edit(s, "/home/dev/app/test/review_live_test.exs", "", "use ExUnit.Case\n")
    s.runs("mix test test/review_live_test.exs").error(
        "** (CompileError) test/review_live_test.exs:9: undefined function live/2")
    s.says("The live/2 helper needs Phoenix.ConnTest imported in the test module.")
    _edit(s, "/home/dev/app/test/review_live_test.exs", "use ExUnit.Case", "use ExUnit.Case\nimport Phoenix.ConnTest")
    s.runs("mix test test/review_live_test.exs").error(
        "** (RuntimeError) no :secret_key_base configuration found in App.Endpoint")
    s.says("The test config has no secret_key_base for the endpoint.")
    _edit(s, "/home/dev/app/config/test.exs", "import Config", "import Config\nconfig :app, App.Endpoint, secret_key_base: \"x\"")
    s.runs("mix test test/review_live_test.exs").result("5 tests, 0 failures")
    s.says("Added the review page; its LiveView tests pass.")
    exp = Experience(s.host, s.session_id, tuple(s.turns))
    drafted = with_inner_lessons(exp, draft_card(exp))
    steps = [c for e, c in drafted if e.boundary == "inner_loop"]
    assert [c.error_signature.split(":")[0] for c in steps] == ["CompileError"]
    step = steps[0]
    assert "Phoenix.ConnTest" in step.conclusion
    assert step.extra["kind"] == "fix" and "is gone from the same check" in step.extra["proof"]
    judged = decide_status(step, judge_card(step, EvidenceView.of(tuple(s.turns))), model_enabled=False, distilled=False)
    assert judged.status == "active", judged.gate


def test_a_guess_is_never_the_conclusion_of_a_step():
    from memoir.cards.draft import with_inner_lessons

    s = Script().user("build the release binary")
    s.runs("cargo build --release").error("error: failed to run custom build command for `openssl-sys`")
    s.says("The error suggests libssl-dev is probably missing on this machine.")
    _edit(s, "/home/dev/app/Cargo.toml", 'reqwest = "0.12"', 'reqwest = { version = "0.12", default-features = false }')
    s.runs("cargo build --release").error("error[E0433]: failed to resolve: use of undeclared crate `native_tls`")
    _edit(s, "/home/dev/app/src/net.rs", "use native_tls::TlsConnector;", "")
    s.runs("cargo build --release").result("Finished `release` profile [optimized] target(s) in 41.2s")
    exp = Experience(s.host, s.session_id, tuple(s.turns))
    steps = [c for e, c in with_inner_lessons(exp, draft_card(exp)) if e.boundary == "inner_loop"]
    assert steps and all("suggests" not in c.conclusion for c in steps)
    assert "cleared that error" in steps[0].conclusion


def test_a_check_green_before_the_users_pasted_failure_cannot_prove_it_gone():
    """The user pastes a failure from CI; the same local check had passed earlier in the session, before
    the paste, so passing again after the change proves nothing: the card is not active."""
    s = Script().user("add the export subcommand")
    _edit(s, "/home/dev/tool/cli.py", "pass", "sub.add_parser('export')")
    s.runs("pytest -q").result("36 passed in 0.4s")
    s.says("The export subcommand is added and the suite passes.")
    first = len(s.turns)
    s.user("Run python -m pytest -q\nE   argparse.ArgumentError: argument cmd: conflicting subparser: export\n"
           "FAILED tests/test_cli.py::test_export - argparse.ArgumentError")
    _edit(s, "/home/dev/tool/cli.py", "sub.add_parser('export')\nsub.add_parser('export')", "sub.add_parser('export')")
    s.runs("pytest -q").result("36 passed in 0.4s")
    s.says("The failure came from registering the export subparser twice; the duplicate is removed.")
    exp = Experience(s.host, s.session_id, tuple(s.turns[first:]))
    alone = draft_card(exp)
    assert alone.extra["kind"] == "fix"  # read alone, the experience looks proven
    (exp, card), = read_past_range(tuple(s.turns), [(exp, alone)])
    assert card.extra["kind"] == "unproven" and not card.verified_by
    assert "already green" in card.extra["proof"]
    card = decide_status(card, judge_card(card, EvidenceView.of_experience(exp)), model_enabled=False, distilled=False)
    assert card.status != "active"


def test_a_regression_test_written_after_the_paste_still_proves_it():
    s = Script().user("add the export subcommand")
    _edit(s, "/home/dev/tool/cli.py", "pass", "sub.add_parser('export')")
    s.runs("pytest -q").result("36 passed in 0.4s")
    first = len(s.turns)
    s.user("Run python -m pytest -q\nE   argparse.ArgumentError: argument cmd: conflicting subparser: export")
    _edit(s, "/home/dev/tool/cli.py", "sub.add_parser('export')\nsub.add_parser('export')", "sub.add_parser('export')")
    _edit(s, "/home/dev/tool/tests/test_cli.py", "", "def test_parser_builds_on_3_12(): build_parser()")
    s.runs("pytest -q").result("37 passed in 0.4s")
    s.says("The failure came from registering the export subparser twice; a test now builds the parser.")
    exp = Experience(s.host, s.session_id, tuple(s.turns[first:]))
    (exp, card), = read_past_range(tuple(s.turns), [(exp, draft_card(exp))])
    assert card.extra["kind"] == "fix" and card.verified_by



@pytest.mark.parametrize("said,kept", [
    ("Remember: always pnpm, never npm", "always pnpm, never npm"),
    ("recuerda: siempre pnpm, nunca npm", "siempre pnpm, nunca npm"),
    ("Onthoud: nooit npm, altijd pnpm in deze repo", "nooit npm, altijd pnpm in deze repo"),
])
def test_an_explicit_remember_keeps_the_users_words_not_the_agents_paraphrase(said, kept):
    s = Script().user(said).says("Got it: I'll use pnpm for package management going forward.")
    card = _settled(s)
    assert kept in card.conclusion and "I'll use pnpm" not in card.conclusion
    assert (card.extra["kind"], card.status) == ("decision", "active"), card.gate


def test_a_question_about_memory_or_a_note_is_no_rule_to_keep():
    for said in ("do you remember why the test failed?", "Note: I pushed the branch, please review"):
        card = _settled(Script().user(said).says("It failed on the missing fixture; I pushed nothing else."))
        assert "In the user's words" not in card.conclusion


def _done_then_answered(edit: bool = False, fails: bool = False) -> Script:
    s = Script().user("how do i bring the hand made logs bucket under terraform? module.logs already exists")
    s.runs("sed -n 1,20p modules/logs/main.tf").result('resource "aws_s3_bucket" "this" {\n  bucket = var.bucket_name\n}')
    if edit:
        _edit(s, "/home/dev/infra/envs/staging/main.tf", "", 'import {\n  to = module.logs.aws_s3_bucket.this\n}')
    s.runs("terraform import module.logs.aws_s3_bucket.this logs-staging").result("Import successful!")
    if fails:
        s.runs("terraform plan -target=module.logs").error("Error: Resource already managed by Terraform")
    s.runs("terraform plan -target=module.logs").result("No changes. Your infrastructure matches the configuration.")
    s.says("The way to adopt an existing bucket is `terraform import` into the address the module declares, "
           "then `terraform plan -target=module.logs` to confirm there is no diff.")
    return s


def test_a_how_to_done_with_commands_and_checked_before_the_answer_is_a_checked_answer():
    card = _settled(_done_then_answered())
    assert card.extra["kind"] == "checked_answer" and card.status == "active", card.gate
    assert _settled(_done_then_answered(edit=True)).extra["kind"] != "checked_answer"  # a file edited: work done
    assert _settled(_done_then_answered(fails=True)).extra["kind"] != "checked_answer"  # something failed on the way


def test_a_why_question_and_a_green_suite_or_a_file_written_by_the_shell_is_no_checked_answer():
    s = Script().user("why does the login page load slowly?")
    s.runs("npm test -- auth").result("Tests: 12 passed, 12 total")
    s.says("It loads slowly because every request re-reads the session store from disk; nothing else is slow.")
    assert _settled(s).extra.get("kind") != "checked_answer"  # nothing was done: a green suite proves no answer
    s = Script().user("how do I add a health endpoint?")
    s.runs("sed -i 's/^app = Flask(__name__)$/app = Flask(__name__)\\napp.add_url_rule(\"\\/health\", ...)/' app.py").result("")
    s.runs("pytest -q").result("12 passed in 0.4s")
    s.says("Add a route for /health next to the app object in app.py; the suite still passes with it in place.")
    assert _settled(s).extra.get("kind") != "checked_answer"  # the shell wrote a file: work done, not a how-to
