"""Review: confirm, reject and edit change the card file and the index together."""

from __future__ import annotations

import json
import stat

import pytest
from click.testing import CliRunner

from memoir.cards.distill.merge import CONFLICT_GATE
from memoir.cards.draft import conclusion_problem
from memoir.cards.quality_gates import GATE_HELP, QUALITY_GATE_NAMES
from memoir.cards.review import (
    DEFAULT_WHY,
    REJECTED,
    ReviewError,
    awaiting_review,
    confirm,
    find_card,
    gate_note,
    reject,
    reviewable_alone,
)
from memoir.cards.store import CardStore, content_hash
from memoir.flows.cli.main import cli
from memoir.flows.pipeline import run_pipeline
from memoir.index.db import open_index
from tests.test_hand_edits import reset_ledger
from tests.user_cards import EXAMPLES, SHORTY_LOG, build_home, card, copy_home, store_of

# Cards nothing checked wait for review: the aider example's (its answers are never re-run), and the
# shop API's order only the agent gave. SHORTY_LOG's TLS fix is verified by a probe after the change.
AIDER_LOG = EXAMPLES / "aider" / ".aider.chat.history.md"

@pytest.fixture(scope="module")
def built(tmp_path_factory, embedder):
    return build_home(tmp_path_factory.mktemp("built") / "home", [SHORTY_LOG, AIDER_LOG])


@pytest.fixture(scope="module")
def held(built):
    """The log's first two cards awaiting review, oldest first: the two this module confirms and rejects."""
    cards, _ = store_of(built).load_all()
    pending = awaiting_review(cards)
    assert len(pending) >= 2, [(c.id, c.status, c.gate) for c in cards]  # the review script below answers two
    return pending[0], pending[1]


def review(settings, keys: str, env: dict | None = None):
    return CliRunner().invoke(cli, ["--home", str(settings.home), "review"], input=keys, env=env,
                              catch_exceptions=False)


def row(settings, embedder, card_id):
    with open_index(settings.index_dir, embedder) as index:
        return index.get([card_id])[card_id]


# --- pure -----------------------------------------------------------------------------------------


def test_confirm_makes_a_card_active_and_user_confirmed_and_keeps_the_gate_that_held_it():
    held = card(1, status="candidate", gate="failure_conditions_stated", verified_by="t6")
    done = confirm(held, min_conclusion_chars=40, at="2026-11-01T00:00:00+00:00")
    assert (done.status, done.confirmed_by, done.gate, done.verified_by) == ("active", "user", "", "t6")
    assert done.extra["held_by"] == "failure_conditions_stated"
    with pytest.raises(ReviewError, match="edit it first"):
        confirm(card(2, status="incomplete", conclusion="so the fix is"), min_conclusion_chars=40)


def test_reject_keeps_a_candidate_out_of_review_and_recall_for_good():
    done = reject(card(1, status="candidate", gate="not_duplicate"), why=" not\nuseful ")
    assert (done.status, done.gate, done.extra["why"]) == ("candidate", REJECTED, "not useful")
    queue = awaiting_review([done, card(2, status="candidate"), card(3), card(4, status="incomplete"),
                             confirm(card(5, status="candidate"))])
    assert [c.id for c in queue] == [card(2).id, card(4).id]


def test_reject_keeps_the_reason_without_a_secret_pasted_into_it():
    done = reject(card(1, status="candidate"), why="leaks ghp_abcdefghijklmnopqrstuvwxyz0123456789AB again")
    assert done.extra["why"] == "leaks [REDACTED:github_token:42] again"


def test_every_gate_a_card_can_be_held_by_says_what_would_clear_it():
    cut = "The build fails because the lockfile pins an old resolver and"
    held_by = {*QUALITY_GATE_NAMES, CONFLICT_GATE, REJECTED, conclusion_problem("too short", 40),
               conclusion_problem(cut, 40), conclusion_problem("Run this:\n```sh\nnpm ci --legacy-peer-deps", 20),
               "no_settled_conclusion"}
    assert "" not in held_by and held_by <= set(GATE_HELP), held_by - set(GATE_HELP)
    for gate in held_by:
        assert any(w in GATE_HELP[gate].lower() for w in ("confirm", "edit", "reject")), gate


def test_find_card_takes_an_id_a_unique_start_of_one_or_its_file(tmp_path):
    ids = ["c-0a1b000000000001", "c-0a1b000000000002", "c-77ff000000000000"]
    cards_dir = tmp_path / "cards"
    assert find_card("c-77ff000000000000", ids, cards_dir) == ids[2]
    assert find_card("77f", ids, cards_dir) == find_card("c-77", ids, cards_dir) == ids[2]
    assert find_card(str(cards_dir / f"{ids[1]}.md"), ids, cards_dir) == ids[1]
    with pytest.raises(ReviewError, match="matches 2 cards .*c-0a1b000000000001, c-0a1b000000000002"):
        find_card("0a1b", ids, cards_dir)
    with pytest.raises(ReviewError, match="no card matches 'c-99'"):
        find_card("c-99", ids, cards_dir)
    with pytest.raises(ReviewError, match="not a card file of this memoir home"):
        find_card(str(tmp_path / "export" / "docker" / f"{ids[2]}.md"), ids, cards_dir)


def test_a_superseded_or_forgotten_card_is_not_reviewed_alone():
    reviewable_alone(card(1, status="active", gate=""))
    reviewable_alone(card(2, status="candidate", gate=REJECTED))
    with pytest.raises(ReviewError, match="superseded by c-0000000000000009; it is history"):
        reviewable_alone(card(3, status="superseded", superseded_by="c-0000000000000009"))
    with pytest.raises(ReviewError, match="memoir unforget"):
        reviewable_alone(card(4, status="forgotten"))


def test_the_gate_note_rechecks_what_the_card_alone_can_show():
    held = card(1, status="candidate", gate="failure_conditions_stated", counterexamples="none")
    note = gate_note(held)
    assert (note.gate, note.met_now) == ("failure_conditions_stated", False)
    assert "placeholder" in note.reason and note.help == GATE_HELP["failure_conditions_stated"]
    assert gate_note(held.with_(counterexamples="Not on Linux hosts without Docker Desktop.")).met_now
    cut = gate_note(card(2, status="incomplete", gate="conclusion_cut_off", conclusion="It fails because the"), 10)
    assert (cut.reason, cut.met_now) == ("conclusion cut off", False)
    dup = gate_note(card(3, status="candidate", gate="not_duplicate"))  # needs the other cards: explained only
    assert (dup.reason, dup.met_now, dup.help) == ("", False, GATE_HELP["not_duplicate"])
    assert gate_note(card(4)) is None


# --- the command ----------------------------------------------------------------------------------------


def test_review_json_lists_what_awaits_review(built, held, memoir_home):
    settings = copy_home(built, memoir_home)
    out = CliRunner().invoke(cli, ["--home", str(settings.home), "review", "--json"])
    assert out.exit_code == 0, out.output
    pending = json.loads(out.output)
    assert [p["id"] for p in pending][:2] == [c.id for c in held]
    assert all(p["gate"] for p in pending)  # each says which gate held it back
    assert pending[0]["sources"][0]["session_id"]


def test_confirm_and_reject_change_the_file_and_the_index_together(built, held, memoir_home, embedder):
    (FIRST, gate), SECOND = (held[0].id, held[0].gate), held[1].id
    settings = copy_home(built, memoir_home)
    store = store_of(settings)
    after_two = [c.id for c in awaiting_review(store.load_all()[0])][2:]  # the cards the script leaves alone
    assert row(settings, embedder, FIRST).status == "candidate"

    out = review(settings, "c\nr\nwrong lesson\n")
    assert out.exit_code == 0, out.output
    assert "## Supersession chain" in out.output and f"held back by: {gate}" in out.output
    assert "1 confirmed, 1 rejected, 0 edited, 0 skipped" in out.output

    first, second = store.read(FIRST), store.read(SECOND)
    assert (first.status, first.confirmed_by, first.gate) == ("active", "user", "")
    assert (second.status, second.gate, second.extra["why"]) == ("candidate", REJECTED, "wrong lesson")
    for card_id, status in ((FIRST, "active"), (SECOND, "candidate")):
        r = row(settings, embedder, card_id)
        assert r.status == status
        assert r.file_hash == content_hash(store.path_for(card_id).read_bytes())
    left = json.loads(CliRunner().invoke(cli, ["--home", str(settings.home), "review", "--json"]).output)
    assert [p["id"] for p in left] == after_two

    before = {i: store.path_for(i).read_bytes() for i in (FIRST, SECOND)}
    reset_ledger(settings)
    run_pipeline(settings, [SHORTY_LOG])  # a person's decision survives later runs
    assert {i: store.path_for(i).read_bytes() for i in (FIRST, SECOND)} == before


def test_edit_in_editor_is_a_hand_edit_and_can_then_be_confirmed(built, held, memoir_home, embedder, tmp_path):
    FIRST = held[0].id
    settings = copy_home(built, memoir_home)
    store = store_of(settings)
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/^## Follow-up$/## Follow-up\\n\\nCheck the staging race detector first./' \"$1\"\n")
    editor.chmod(editor.stat().st_mode | stat.S_IEXEC)

    out = review(settings, "e\ns\nq\n", env={"EDITOR": str(editor), "VISUAL": str(editor)})
    assert out.exit_code == 0, out.output
    assert store.read(FIRST).follow_up.endswith("Check the staging race detector first.")
    assert store.is_hand_edited(FIRST)  # no later run overwrites it
    assert row(settings, embedder, FIRST).file_hash == content_hash(store.path_for(FIRST).read_bytes())

    out = review(settings, "e\nc\nq\n", env={"EDITOR": "true", "VISUAL": "true"})  # editor leaves it unsaved
    assert "no change" in out.output
    confirmed = store.read(FIRST)
    assert confirmed.status == "active" and confirmed.follow_up.endswith("race detector first.")
    assert row(settings, embedder, FIRST).status == "active"


def test_review_of_one_card_by_its_start_or_its_file_leaves_the_queue_alone(built, held, memoir_home, embedder):
    FIRST, SECOND = held[0].id, held[1].id
    settings = copy_home(built, memoir_home)
    store = store_of(settings)
    out = CliRunner().invoke(cli, ["--home", str(settings.home), "review", SECOND[:9]], input="c\n",
                             catch_exceptions=False)
    assert out.exit_code == 0, out.output
    assert "[1/1]" in out.output and f"held back by {held[1].gate}" in out.output
    assert GATE_HELP[held[1].gate].split()[0] in out.output  # the explanation is shown under the gate
    assert "1 confirmed, 0 rejected, 0 edited, 0 skipped; 0 left" in out.output
    assert store.read(SECOND).status == "active" and store.read(FIRST).status == held[0].status
    assert row(settings, embedder, SECOND).status == "active"

    listed = CliRunner().invoke(cli, ["--home", str(settings.home), "review", "--json", str(store.path_for(FIRST))])
    (one,) = json.loads(listed.output)
    assert (one["id"], one["gate_help"]) == (FIRST, GATE_HELP[held[0].gate])
    missing = CliRunner().invoke(cli, ["--home", str(settings.home), "review", "c-ffffffff"])
    assert missing.exit_code == 1 and "no card matches 'c-ffffffff'" in missing.output


def test_end_of_input_stops_the_review_cleanly_and_keeps_what_was_decided(built, held, memoir_home):
    FIRST, SECOND = held[0].id, held[1].id
    settings = copy_home(built, memoir_home)
    store = store_of(settings)
    others = len(awaiting_review(store.load_all()[0])) - 2
    before = store.path_for(SECOND).read_bytes()
    # Confirm the first, then Ctrl-D at the second's reason prompt: the second stays as it was.
    out = review(settings, "c\nr\n")
    assert out.exit_code == 0, out.output
    assert "Aborted" not in out.output and "Why reject it? The reason is kept in the card file" in out.output
    assert f"review stopped, 1 decided, {1 + others} left (1 confirmed, 0 rejected, 0 edited, 0 skipped)" in out.output
    assert store.read(FIRST).status == "active" and store.path_for(SECOND).read_bytes() == before

    out = review(settings, "")
    assert out.exit_code == 0 and f"review stopped, 0 decided, {1 + others} left" in out.output
    out = review(settings, "r\n\n")  # Enter takes the offered reason
    assert out.exit_code == 0 and store.read(SECOND).extra["why"] == DEFAULT_WHY


def test_a_superseded_card_named_alone_is_refused_with_what_to_do(memoir_home):
    from memoir.cards.config import load_settings

    settings = load_settings(home=memoir_home)
    store = CardStore(settings.cards_dir, settings.state_dir)
    old = card(1, status="superseded", superseded_by=card(2).id)
    store.write_many([old, card(2)])
    store.save_manifest()
    before = store.path_for(old.id).read_bytes()
    out = CliRunner().invoke(cli, ["--home", str(settings.home), "review", old.id], input="r\n\n")
    assert out.exit_code == 1 and f"superseded by {card(2).id}; it is history" in out.output
    assert store.path_for(old.id).read_bytes() == before


def test_a_secret_typed_into_an_edit_is_redacted_when_memoir_writes_the_file(built, held, memoir_home, tmp_path):
    FIRST = held[0].id
    settings = copy_home(built, memoir_home)
    store = store_of(settings)
    secret = "Zq7" + "vX9mR2kLpW4"  # built here: no secret-shaped literal in the repository
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/^## Follow-up$/## Follow-up\\n\\nLog in with DB_PASSWORD=" + secret
                      + " first./' \"$1\"\n")
    editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
    out = review(settings, "e\nq\n", env={"EDITOR": str(editor), "VISUAL": str(editor)})
    assert out.exit_code == 0, out.output
    text = store.path_for(FIRST).read_text()
    assert secret not in text and "DB_PASSWORD=[REDACTED:" in text
