"""Review: confirm, reject and edit change the card file and the index together."""

from __future__ import annotations

import json
import stat

import pytest
from click.testing import CliRunner

from cards.review import REJECTED, ReviewError, awaiting_review, confirm, reject
from cards.store import content_hash
from flows import commands  # noqa: F401  (registers the subcommands)
from flows.cli import cli
from flows.pipeline import run_pipeline
from index.db import open_index
from tests.test_hand_edits import reset_ledger
from tests.user_cards import SHORTY_LOG, build_home, card, copy_home, store_of

@pytest.fixture(scope="module")
def built(tmp_path_factory, embedder):
    return build_home(tmp_path_factory.mktemp("built") / "home", [SHORTY_LOG])


@pytest.fixture(scope="module")
def held(built):
    """SHORTY_LOG's cards awaiting review, oldest first: the two this module confirms and rejects."""
    cards, _ = store_of(built).load_all()
    pending = awaiting_review(cards)
    assert len(pending) == 2, [(c.id, c.status, c.gate) for c in cards]  # the review script below answers two
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
    assert json.loads(CliRunner().invoke(cli, ["--home", str(settings.home), "review", "--json"]).output) == []

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
