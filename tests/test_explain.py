"""`memoir explain` (issue 37): each turn's observation, why each experience was cut, each card's kind
and deciding gate, on every host's fixture; read-only (nothing under the home is written)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memoir.cards.config import load_settings
from memoir.flows.cli.main import cli
from memoir.flows.explain import explain, render

HOSTS = Path(__file__).resolve().parent / "fixtures" / "hosts"
FIXTURES = sorted(p for p in HOSTS.iterdir() if p.name != "README-SOURCES.md")


@pytest.mark.parametrize("log", FIXTURES, ids=[p.name for p in FIXTURES])
def test_explain_reads_every_hosts_fixture_and_names_each_cards_kind_and_gate(log, tmp_path):
    settings = load_settings(home=tmp_path / "home", env={})
    sessions, _ = explain(log, settings)
    assert sessions, f"no session explained in {log.name}"
    assert any(s.observations for s in sessions)
    text = render(sessions, {})
    assert text.startswith("session ")
    for s in sessions:
        for c in s.cards:
            assert c.card.status in ("active", "candidate", "incomplete")
            assert c.card.status == "active" or c.card.gate, "a held card names the gate that held it"
            if c.card.status == "active":
                assert c.card.extra.get("kind") in ("fix", "confirmed_answer", "decision")
    assert not (tmp_path / "home" / "cards").exists()  # nothing stored


def test_explain_json_lists_turns_with_verdicts_and_cards_with_reasons(tmp_path):
    log = HOSTS / "claude_session.jsonl"
    result = CliRunner().invoke(cli, ["--home", str(tmp_path / "home"), "explain", str(log), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    turns = [t for s in data["sessions"] for t in s["turns"]]
    assert {"seq", "line", "act", "verdict", "rules"} <= set(turns[0])
    assert any(t["act"] == "check" for t in turns)
    cards = [c for s in data["sessions"] for c in s["cards"]]
    assert cards and all("cut_because" in c and "gate" in c for c in cards)


def test_explain_turn_range_keeps_only_turns_in_it(tmp_path):
    log = HOSTS / "codex_rollout.jsonl"
    result = CliRunner().invoke(cli, ["--home", str(tmp_path / "home"), "explain", str(log), "--turns", "2-5", "--json"])
    assert result.exit_code == 0, result.output
    seqs = [t["seq"] for s in json.loads(result.output)["sessions"] for t in s["turns"]]
    assert seqs and all(2 <= q <= 5 for q in seqs)


def test_explain_says_what_to_do_with_a_name_that_is_no_log_or_session(tmp_path):
    result = CliRunner().invoke(cli, ["--home", str(tmp_path / "home"), "explain", "no-such-session-id-xyz"],
                                env={"HOME": str(tmp_path)})
    assert result.exit_code == 2
    assert "neither a log file" in result.output
