"""One folder holding a log of every host, an unknown JSON and an unknown JSONL: each is counted.

A file memoir cannot place is `unknown_format` in the run's summary, never silently passed over,
and every new host's fixture reads into cards with no `unknown_type` line.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from memoir.cards.config import load_settings
from memoir.cards.store import CardStore
from memoir.flows.pipeline import run_pipeline

HOSTS = Path(__file__).parent / "fixtures" / "hosts"


def _folder(tmp: Path) -> Path:
    logs = tmp / "logs"
    shutil.copytree(HOSTS / "gemini", logs / "gemini")
    shutil.copytree(HOSTS / "copilot", logs / "copilot")
    shutil.copytree(HOSTS / "cline", logs / "cline")
    shutil.copytree(HOSTS / "opencode", logs / "opencode")
    shutil.copy(HOSTS / "claude_session.jsonl", logs / "claude_session.jsonl")
    shutil.copy(HOSTS / "codex_rollout.jsonl", logs / "rollout-2026-01-01T00-00-00-x.jsonl")
    shutil.copy(HOSTS / "sample.aider.chat.history.md", logs / ".aider.chat.history.md")
    shutil.copy(HOSTS / "generic.jsonl", logs / "generic.jsonl")
    (logs / "notes.json").write_text(json.dumps({"todo": ["buy milk"], "version": 3}, indent=2))
    (logs / "metrics.jsonl").write_text('{"cpu": 0.4, "at": 1}\n{"cpu": 0.5, "at": 2}\n')
    (logs / "gemini" / "logs.json").write_text('[{"sessionId": "x", "message": "hi"}]')  # Gemini's prompt list
    (logs / "cline" / "task_metadata.json").write_text('{"files_in_context": []}')
    return logs


def test_every_host_is_counted_by_name_and_the_unknown_files_as_unknown_format(tmp_path):
    settings = load_settings(home=tmp_path / "home")
    summary = run_pipeline(settings, [_folder(tmp_path)], with_index=False).to_dict()
    assert summary["hosts"] == {"aider": 1, "claude-code": 1, "cline": 2, "codex": 1, "copilot-cli": 2,
                                "gemini-cli": 4, "jsonl": 1, "opencode": 1}
    assert summary["skipped"]["unknown_format"] == 2  # notes.json and metrics.jsonl
    assert summary["skipped"]["session_part"] == 13 + 2  # OpenCode's parts, Gemini's logs.json, Cline's metadata
    assert summary["skipped"]["session_copy"] == 2  # the Gemini chat saved under three names
    assert summary["skipped"]["shadowed_by_sibling"] == 1  # Cline's ui_messages beside its history


def test_new_hosts_read_into_cards_with_no_unknown_type_and_one_card_per_gemini_experience(tmp_path):
    logs = tmp_path / "logs"
    for name in ("gemini", "copilot", "cline", "opencode"):
        shutil.copytree(HOSTS / name, logs / name)
    settings = load_settings(home=tmp_path / "home")
    summary = run_pipeline(settings, [logs], with_index=False).to_dict()
    assert "unknown_type" not in summary["skipped"]
    cards, _ = CardStore(settings.cards_dir, settings.state_dir).load_all()
    by_host: dict[str, list] = {}
    for card in cards:
        by_host.setdefault(card.sources[0].host, []).append(card)
    assert set(by_host) == {"gemini-cli", "copilot-cli", "cline", "opencode"}
    gemini = [c for c in by_host["gemini-cli"] if "temp_c" in c.conclusion]
    assert len(gemini) == 1  # three copies of one session: one card for its one experience
    assert "temperature_c" in gemini[0].conclusion
    opencode = by_host["opencode"][0]
    assert opencode.workspace == "/home/lee/src/notes" and "deunicode" in opencode.conclusion
