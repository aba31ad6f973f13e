"""Deep search: hybrid ranking, no gate but status, every hit labelled with its state and sources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cards.config import load_settings
from cards.forget import forget
from flows import commands  # noqa: F401  (registers the subcommands)
from flows.cli import cli
from flows.pipeline import run_pipeline
from index.db import open_index
from index.embed import default_embedder
from index.search import (
    newest_in_chain,
    plan_hits,
    search_cards,
    search_turns,
    state_of,
)
from index.sync import sync_index
from tests.user_cards import EXAMPLES, card, store_of

QUERY = "uvicorn --reload misses file changes in a docker bind mount"
OLD, MID, NEW, HELD, HALF, GONE, ELSEWHERE = (card(n).id for n in range(1, 8))
SHOPAPI_LOG = EXAMPLES / "claude-code" / "-home-dev-projects-shopapi" / "55dde895-7f1b-4d55-8dc2-423363ab1e15.jsonl"


def library():
    """A chain OLD → MID → NEW, a held-back candidate, an incomplete card, one to forget, one elsewhere."""
    return [
        card(1, status="superseded", superseded_by=MID,
             conclusion="uvicorn --reload in a Docker bind mount needs --reload-dir /app to see file changes."),
        card(2, status="superseded", superseded_by=NEW, supersedes=(OLD,),
             conclusion="uvicorn --reload in a Docker bind mount needs WATCHFILES_FORCE_POLLING=1 on Docker Desktop."),
        card(3, supersedes=(MID,)),
        card(4, status="candidate", gate="not_duplicate",
             conclusion="uvicorn reload inside docker compose: polling makes file changes visible to the watcher."),
        card(5, status="incomplete", gate="conclusion_cut_off", conclusion="uvicorn reload in docker, so the fix is"),
        card(6, conclusion="uvicorn --reload misses file changes in docker bind mounts: restart the container."),
        card(7, workspace="/work/other",
             conclusion="uvicorn --reload in docker compose needs the bind mount to include the package dir."),
    ]


@pytest.fixture(scope="module")
def embedder():
    e = default_embedder()
    e.encode_one("warm up")
    return e


@pytest.fixture
def settings(memoir_home, embedder):
    settings = load_settings(home=memoir_home)
    store = store_of(settings)
    store.write_many(library())
    store.save_manifest()
    with open_index(settings.index_dir, embedder) as index:
        sync_index(store, index)
    forget(store, GONE)
    with open_index(settings.index_dir, embedder) as index:
        index.remove([GONE])
    return settings


def search(settings, *args):
    out = CliRunner().invoke(cli, ["--home", str(settings.home), "search", QUERY, *args], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return out.output


# --- pure -----------------------------------------------------------------------------------------------


def test_states_and_the_newest_card_of_a_chain():
    cards = {c.id: c for c in library()}
    assert [state_of(c) for c in library()] == ["superseded", "superseded", "active", "candidate", "incomplete",
                                                "active", "active"]
    assert state_of(card(9, status="forgotten")) is None
    assert state_of(card(9, superseded_by=NEW)) == "superseded"  # a half-applied supersession still counts
    assert newest_in_chain(cards[OLD], cards.get) == NEW
    loop = {OLD: cards[OLD].with_(superseded_by=MID), MID: cards[MID].with_(superseded_by=OLD)}
    assert newest_in_chain(loop[OLD], loop.get) in (OLD, MID)  # a hand-made loop ends, it does not hang


def test_plan_hits_hides_superseded_unless_asked_and_drops_missing_files():
    cards = {c.id: c for c in library()}
    fused = {OLD: {"rrf": 0.05}, NEW: {"rrf": 0.04}, "c-gone": {"rrf": 0.03}, HELD: {"rrf": 0.02}}
    hits, hidden = plan_hits(fused, cards, k=10)
    assert [h.id for h in hits] == [NEW, HELD] and hidden == 1
    hits, hidden = plan_hits(fused, cards, k=10, include_superseded=True)
    assert [(h.id, h.label) for h in hits][0] == (OLD, f"superseded by {NEW}") and hidden == 0


# --- end to end -------------------------------------------------------------------------------------------


def test_search_returns_superseded_cards_only_with_include_superseded_always_labelled(settings, embedder):
    result = search_cards(settings, QUERY, embedder=embedder, k=10)
    ids = [h.id for h in result.hits]
    assert OLD not in ids and MID not in ids and result.hidden_superseded == 2
    assert GONE not in ids  # forgotten: never
    labels = {h.id: h.label for h in result.hits}
    assert labels[NEW] == "active"
    assert labels[HELD] == "candidate (held back by not_duplicate)"
    assert labels[HALF].startswith("incomplete")
    assert all(h.sources and h.sources[0].session_id for h in result.hits)

    result = search_cards(settings, QUERY, embedder=embedder, k=10, include_superseded=True)
    by_id = {h.id: h for h in result.hits}
    assert by_id[OLD].state == by_id[MID].state == "superseded"
    assert by_id[OLD].replaced_by == by_id[MID].replaced_by == NEW

    text = search(settings)
    assert OLD not in text and MID not in text and "superseded by" not in text
    assert "2 superseded cards left out" in text
    text = search(settings, "--include-superseded")
    assert f"[{OLD}] superseded by {NEW}" in text and f"[{MID}] superseded by {NEW}" in text
    data = json.loads(search(settings, "--include-superseded", "--json"))
    assert {c["id"]: c["label"] for c in data["cards"]}[OLD] == f"superseded by {NEW}"
    assert data["cards"][0]["sources"][0]["file"].startswith("/logs/")


def test_workspace_keeps_cards_of_that_project(settings, embedder):
    ids = [h.id for h in search_cards(settings, QUERY, embedder=embedder, workspace="/work/other").hits]
    assert ids == [ELSEWHERE]
    assert ELSEWHERE not in [h.id for h in search_cards(settings, QUERY, embedder=embedder, workspace="/work/shop").hits]


def test_search_turns_reads_ledgered_logs_read_only_and_sanitizes_every_turn(memoir_home):
    settings = load_settings(home=memoir_home)
    before = (SHOPAPI_LOG.stat().st_mtime_ns, SHOPAPI_LOG.read_bytes())
    run_pipeline(settings, [SHOPAPI_LOG], with_index=False)
    result = search_turns(settings, "AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY in the env file", k=5)
    assert result.turns
    text = json.dumps(result.to_json())
    assert "AKIA" not in text and "whsec_" not in text
    assert "[REDACTED:aws_access_key]" in text
    hit = result.turns[0]
    assert Path(hit.file) == SHOPAPI_LOG and hit.line > 0 and hit.session_id
    assert (SHOPAPI_LOG.stat().st_mtime_ns, SHOPAPI_LOG.read_bytes()) == before

    out = CliRunner().invoke(cli, ["--home", str(settings.home), "search", "--turns", "stripe webhook secret env file"])
    assert out.exit_code == 0 and "[turn] claude-code session" in out.output
    assert search_turns(settings, "hello").turns == ()
