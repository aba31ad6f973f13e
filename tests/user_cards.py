"""A memoir home built once per test module from the shipped example sessions, copied per test.

Embedding is the slow part of a run; copying a built home (cards, state, index) lets every test
start from real card files and a real index without paying for it again.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from memoir.cards.config import Settings, load_settings
from memoir.cards.values import Card, Source
from memoir.cards.store import CardStore
from memoir.flows.pipeline import run_pipeline

EXAMPLES = Path(__file__).resolve().parents[1] / "cards" / "examples"
FEEDCLI_LOG = next((EXAMPLES / "codex" / "2026" / "10" / "14").glob("rollout-*.jsonl"))
SHORTY_LOG = next((EXAMPLES / "codex" / "2026" / "10" / "16").glob("rollout-*.jsonl"))
# From FEEDCLI_LOG: the `npm run build` / undici TS2339 card (active, rule-made).
FEEDCLI_CARD = "c-570c67ea62fe3637"


def build_home(home: Path, logs: list[Path]) -> Settings:
    """Run the pipeline (with the index) over `logs` into a fresh home."""
    settings = load_settings(home=home)
    run_pipeline(settings, list(logs))
    return settings


def copy_home(built: Settings, home: Path) -> Settings:
    """A private copy of a built home: the test may change anything in it."""
    shutil.copytree(built.home, home, dirs_exist_ok=True)
    return load_settings(home=home)


def store_of(settings: Settings) -> CardStore:
    return CardStore(settings.cards_dir, settings.state_dir)


def card(n: int, **fields) -> Card:
    """A small hand-made card; `n` makes the id and the source distinct."""
    base = dict(
        id=f"c-{n:016x}", status="active", quality="rule", topics=("docker",), task_type="config",
        workspace="/work/shop", created="2026-10-01T10:00:00+00:00", updated="2026-10-01T11:00:00+00:00",
        sources=(Source(f"sess-{n}", "claude-code", f"/logs/sess-{n}.jsonl", (10, 40), (2, 9)),),
        goal="uvicorn --reload never reloads inside the docker compose dev container.",
        conclusion=("uvicorn --reload inside a Docker Desktop bind mount misses file changes; set "
                    "WATCHFILES_FORCE_POLLING=true in the compose service environment."),
        counterexamples="Not needed on native Linux hosts.",
    )
    base.update(fields)
    return Card(**base)
