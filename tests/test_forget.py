"""Forget is a tombstone: the card's turns never become a card again, whatever is reset or rebuilt."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from memoir.cards.forget import (
    AlreadyForgotten,
    NoSuchCard,
    Tombstones,
    forget,
    guard_library,
    make_tombstone,
    plan_hand_deletes,
    read_tombstone,
    tombstone_path,
    unforget,
)
from memoir.cards.values import SECTIONS, Experience, Source, Turn
from memoir.flows.cli.main import cli
from memoir.flows.pipeline import run_pipeline
from memoir.index.db import open_index
from memoir.index.search import search_cards
from tests.test_hand_edits import reset_ledger
from tests.user_cards import (
    FEEDCLI_CARD,
    FEEDCLI_LOG,
    card,
    copy_home,
    store_of,
)


def invoke(settings, *args, **kw):
    result = CliRunner().invoke(cli, ["--home", str(settings.home), *args], catch_exceptions=False, **kw)
    return result


def indexed_ids(settings, embedder) -> set[str]:
    with open_index(settings.index_dir, embedder) as index:
        return set(index.hashes())


# --- pure ---------------------------------------------------------------------------------------


def test_a_tombstone_keeps_sources_and_why_and_says_nothing_the_card_said():
    c = card(1, topics=("docker", "secret-project"), error_signature="KeyError: x y")
    t = make_tombstone(c, why="  no longer\ntrue ", at="2026-11-01T00:00:00+00:00")
    assert t.status == "forgotten" and t.sources == c.sources and t.id == c.id
    assert all(t.section(s) == "" for s in SECTIONS)
    assert t.topics == () and t.error_signature == ""
    assert t.extra["why"] == "no longer true" and t.extra["forgotten_by"] == "user"
    assert t.extra["dedup_keys"]  # the content key: a copy of the session under another id is covered too


def test_tombstones_cover_by_id_overlapping_turns_and_dedup_key():
    gone = make_tombstone(card(1))  # sess-1, turns 2-9
    stones = Tombstones.of([gone])

    def drafted(session, turns, **fields):
        fields.setdefault("conclusion", f"Another lesson, from {session} turns {turns}: pin the base image digest.")
        c = card(9, sources=(Source(session, "claude-code", "/l.jsonl", (1, 2), turns),), **fields)
        return Experience("claude-code", session, (Turn("claude-code", session, turns[0], "user", "text", "x"),)), c

    assert stones.covering(*drafted("sess-1", (8, 20))) == gone.id  # re-cut after a ledger reset
    assert stones.covering(*drafted("sess-1", (10, 20))) == ""
    assert stones.covering(*drafted("sess-2", (2, 9))) == ""
    same_text = drafted("sess-copy", (0, 7), goal=card(1).goal, conclusion=card(1).conclusion, evidence="")
    assert stones.covering(*same_text) == gone.id
    keep, covered = stones.split([drafted("sess-1", (3, 4)), drafted("sess-2", (3, 4))])
    assert len(keep) == 1 and covered == [(card(9).id, gone.id)]


def test_hand_deletes_are_ids_written_with_no_file_and_no_tombstone():
    assert plan_hand_deletes(["a", "b", "c", "d"], present=["a"], tombstoned=["c"]) == ["b", "d"]


# --- forget, unforget, and what never comes back -------------------------------------------------


def test_forget_leaves_a_tombstone_the_index_drops_it_and_list_shows_it(built, memoir_home, embedder):
    settings = copy_home(built, memoir_home)
    store = store_of(settings)
    original = store.path_for(FEEDCLI_CARD).read_bytes()
    assert FEEDCLI_CARD in indexed_ids(settings, embedder)

    out = invoke(settings, "forget", FEEDCLI_CARD, "--why", "the zod advice is wrong for us")
    assert out.exit_code == 0, out.output
    assert "dropped from the index" in out.output
    assert not store.path_for(FEEDCLI_CARD).exists()
    assert FEEDCLI_CARD not in indexed_ids(settings, embedder)
    tomb = read_tombstone(store, FEEDCLI_CARD)
    assert tomb.status == "forgotten" and tomb.extra["why"] == "the zod advice is wrong for us"
    assert tomb.sources and tomb.conclusion == ""
    listed = json.loads(invoke(settings, "cards", "list", "--status", "forgotten", "--json").output)
    assert [c["id"] for c in listed] == [FEEDCLI_CARD]
    assert invoke(settings, "forget", FEEDCLI_CARD).exit_code == 1  # already forgotten: says so

    out = invoke(settings, "unforget", FEEDCLI_CARD)
    assert out.exit_code == 0, out.output
    assert store.path_for(FEEDCLI_CARD).read_bytes() == original  # exactly as it was
    assert not tombstone_path(store, FEEDCLI_CARD).exists()
    assert FEEDCLI_CARD in indexed_ids(settings, embedder)
    assert store.is_hand_edited(FEEDCLI_CARD) is False


def test_a_forgotten_card_never_comes_back_after_a_rerun_a_ledger_reset_or_an_index_rebuild(
        built, memoir_home, embedder):
    settings = copy_home(built, memoir_home)
    store = store_of(settings)
    forget(store, FEEDCLI_CARD, why="private")
    others = set(store.ids())

    run_pipeline(settings, [FEEDCLI_LOG])
    assert not store.path_for(FEEDCLI_CARD).exists()
    reset_ledger(settings)
    summary = run_pipeline(settings, [FEEDCLI_LOG])
    assert summary.rules["forgotten"] == 1
    assert set(store.ids()) == others and not store.path_for(FEEDCLI_CARD).exists()
    out = invoke(settings, "index", "rebuild")
    assert out.exit_code == 0, out.output
    assert FEEDCLI_CARD not in indexed_ids(settings, embedder)
    found = search_cards(settings, "npm run build TS2339 undici fetch Response.json unknown", embedder=embedder,
                         include_superseded=True)
    assert FEEDCLI_CARD not in [h.id for h in found.hits]


def test_deleting_a_card_file_by_hand_acts_as_forget(built, memoir_home, embedder):
    settings = copy_home(built, memoir_home)
    store = store_of(settings)
    store.path_for(FEEDCLI_CARD).unlink()

    reset_ledger(settings)  # the worst case: the same run reads the session again
    summary = run_pipeline(settings, [FEEDCLI_LOG])
    assert summary.rules["deleted_by_hand"] == 1 and summary.rules["forgotten"] == 1
    assert not store.path_for(FEEDCLI_CARD).exists()
    tomb = read_tombstone(store, FEEDCLI_CARD)
    assert tomb.extra["forgotten_by"] == "file_deleted"
    assert FEEDCLI_CARD not in indexed_ids(settings, embedder)
    assert FEEDCLI_CARD not in store.manifest

    reset_ledger(settings)
    summary = run_pipeline(settings, [FEEDCLI_LOG])
    assert not store.path_for(FEEDCLI_CARD).exists() and summary.rules["forgotten"] == 1
    assert guard_library(store).deleted_by_hand == ()  # recorded once

    out = invoke(settings, "unforget", FEEDCLI_CARD)  # no text was kept: only the tombstone goes
    assert out.exit_code == 0 and "no text was kept" in out.output
    assert read_tombstone(store, FEEDCLI_CARD) is None


def test_purge_deletes_the_kept_text_so_unforget_cannot_restore(memoir_home):
    from memoir.cards.config import load_settings

    settings = load_settings(home=memoir_home)
    store = store_of(settings)
    store.write(card(1))
    store.save_manifest()
    outcome = forget(store, card(1).id)
    assert outcome.kept
    forget(store, card(1).id, purge=True)
    assert unforget(store, card(1).id).restored is False
    with pytest.raises(NoSuchCard):
        forget(store, card(1).id)
    store.write(card(2))
    forget(store, card(2).id)
    with pytest.raises(AlreadyForgotten):
        forget(store, card(2).id)
