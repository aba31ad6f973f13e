"""Cards and helpers the recall tests share: real card files, a real index, the real model.

`BASE` passes every recall gate for `QUERY`; each gate test changes one field of it so that
exactly one gate rejects the variant (the tests assert that no other gate fires).
"""

from __future__ import annotations

import random
import string
from datetime import datetime, timedelta, timezone

from memoir.cards.config import load_settings
from memoir.cards.values import Card, Source
from memoir.cards.store import CardStore
from memoir.index.db import open_index
from memoir.index.sync import sync_index

NOW = datetime(2026, 11, 2, 12, 0, tzinfo=timezone.utc)
WORKSPACE = "/work/shop"
QUERY = "uvicorn --reload does not notice file changes in a Docker Desktop bind mount"


def iso(days_ago: float) -> str:
    return (NOW - timedelta(days=days_ago)).isoformat()


BASE = Card(
    id="c-00000000000base1",
    status="active",
    quality="rule",
    topics=("docker",),
    task_type="config",
    workspace=WORKSPACE,
    created=iso(12),
    updated=iso(10),
    sources=(Source("sess-base", "claude-code", "/logs/sess-base.jsonl", (10, 42), (3, 17)),),
    error_signature="",
    background="Dev setup with docker compose on a Mac.",
    goal="uvicorn --reload never reloads inside the docker compose dev container.",
    evidence="- [t4] ran `docker compose up`\n- [t9] result: reload works after the change",
    conclusion=("uvicorn --reload inside a Docker Desktop bind mount misses file changes because watchfiles "
                "relies on inotify events the mount never delivers; set WATCHFILES_FORCE_POLLING=true in "
                "the compose service environment."),
    counterexamples="Not needed on native Linux hosts, where inotify events from a bind mount reach the container.",
    follow_up="",
)


def variant(n: int, **changes) -> Card:
    """BASE under another id with some fields changed."""
    return BASE.with_(id=f"c-{n:016x}", **changes)


def fake_aws_key(seed: int = 7) -> str:
    """Built at run time so no secret-shaped literal sits in the repository."""
    rng = random.Random(seed)
    return "AKIA" + "".join(rng.choices(string.ascii_uppercase + string.digits, k=16))


def settings_for(home, **overrides):
    from dataclasses import replace

    return replace(load_settings(home=home), **overrides)


def index_cards(settings, embedder, cards: list[Card]) -> CardStore:
    """Write card files through the store, then index them the way the pipeline does."""
    store = CardStore(settings.cards_dir, settings.state_dir)
    for card in cards:
        store.write(card, force=True)
    store.save_manifest()
    with open_index(settings.index_dir, embedder) as index:
        sync_index(store, index)
    return store


def entry(result, card_id: str) -> dict:
    """The debug record's line for one candidate."""
    found = [c for c in result.record["candidates"] if c["id"] == card_id]
    assert found, f"{card_id} was not a candidate: {result.record['candidates']}"
    return found[0]
