"""Snapshot tests of what a whole run writes from every fixture folder: card files and containers.

They pin behaviour through refactors: a move that changes one byte of a card file, a review, a
brief, an injected block or a backlog record fails here. After an intended change, regenerate with
`MEMOIR_UPDATE_SNAPSHOTS=1 pytest tests/test_snapshots_runs.py` and show the diff in the commit.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from pathlib import Path

import pytest

from memoir.cards.config import load_settings
from memoir.cards.store import CardStore
from memoir.flows.pipeline import run_pipeline
from memoir.index.containers import backlog_record, human_review, immediate_context, session_brief
from memoir.index.recall import RecalledCard

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOTS = Path(__file__).parent / "snapshots" / "runs"
FOLDERS = {
    "examples": ROOT / "cards" / "examples",
    "real": ROOT / "tests" / "fixtures" / "real",
    "real-shaped": ROOT / "tests" / "fixtures" / "real-shaped",
    "second_set": ROOT / "tests" / "fixtures" / "second_set",
    "hosts": ROOT / "tests" / "fixtures" / "hosts",
}
# What differs between two machines and says nothing about behaviour.
VOLATILE = ("elapsed_s", "seconds", "bytes_read")


def _stable(obj):
    if isinstance(obj, dict):
        return {k: _stable(v) for k, v in obj.items() if k not in VOLATILE and not k.endswith("_s")}
    if isinstance(obj, list):
        return [_stable(v) for v in obj]
    return obj


# Aider's session ids hash the history file's path, so the copy always sits at the same path; a lock
# keeps two test processes on one machine from sharing it.
FIXED_LOGS = Path("/tmp/memoir-snapshot-logs")


def run_folder(src: Path, tmp: Path) -> str:
    """Run memoir over a copy of `src` and return every written card file and container as one text."""
    FIXED_LOGS.mkdir(parents=True, exist_ok=True)
    with open(FIXED_LOGS / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        logs = FIXED_LOGS / "logs"
        shutil.rmtree(logs, ignore_errors=True)
        try:
            return _run_copy(src, logs, tmp)
        finally:
            shutil.rmtree(logs, ignore_errors=True)


def _run_copy(src: Path, logs: Path, tmp: Path) -> str:
    shutil.copytree(src, logs, ignore=shutil.ignore_patterns(
        "*.py", "README*.md", "LABELS.md", "SOURCES.md", "labels.jsonl", "questions.jsonl", "__pycache__"))
    settings = load_settings(home=tmp / "home")
    summary = run_pipeline(settings, [logs])
    store = CardStore(settings.cards_dir, settings.state_dir)
    cards, _ = store.load_all()
    cards = sorted(cards, key=lambda c: c.id)
    out = ["# summary", json.dumps(_stable(summary.to_dict()), indent=1, sort_keys=True)]
    for card in cards:
        out += [f"# card file {card.id}", store.path_for(card.id).read_text(encoding="utf-8")]
        out += [f"# review {card.id}", human_review(card, store)]
        out += [f"# backlog {card.id}", backlog_record(card, "index pending")]
    for workspace in sorted({c.workspace for c in cards}):
        out += [f"# brief {workspace}", session_brief(workspace, cards)]
    active = [c for c in cards if c.status == "active"]
    for card in active:
        out += [f"# immediate {card.id}", immediate_context(
            [RecalledCard(card.id, card.conclusion, card.counterexamples, card.sources, 0.7, 3.0)])]
    return "\n".join(out).replace(str(logs), "<logs>").replace(str(tmp), "<tmp>") + "\n"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_a_run_over_each_fixture_folder_writes_the_pinned_cards_and_containers(name, tmp_path):
    text = run_folder(FOLDERS[name], tmp_path)
    path = SNAPSHOTS / f"{name}.txt"
    if os.environ.get("MEMOIR_UPDATE_SNAPSHOTS") == "1" or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")
