"""The rule stage's faces: `memoir cards show ID --chain`, `memoir status --help`, and the runbooks."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from memoir.cards.config import load_settings
from memoir.cards.status import ALARMS
from memoir.cards.store import CardStore
from memoir.flows.cli.main import cli
from tests.test_rules import _run, pool_session, _one

ROOT = Path(__file__).resolve().parents[1]


def test_cards_show_chain_prints_the_supersession_chain_oldest_first(memoir_home):
    settings = load_settings(home=memoir_home)
    pairs = [_one(pool_session(f"s-{i}", i * 7, size, f"sized for release {i} of the workers."))
             for i, size in enumerate((5, 10, 20))]
    library = []
    for pair in pairs:
        _, library = _run([pair], library)
    store = CardStore(settings.cards_dir, settings.state_dir)
    for card in library:
        store.write(card)
    ids = [p[1].id for p in pairs]
    result = CliRunner().invoke(cli, ["--home", str(memoir_home), "cards", "show", ids[0], "--chain"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [line.split()[1] if line.startswith("→") else line.split()[0] for line in lines] == ids
    assert lines[0].startswith("→ ") and f"superseded by {ids[1]}" in lines[0]
    assert "current" in lines[2] and "active" in lines[2]


def test_every_alarm_has_a_runbook_with_confirm_fix_and_verify_steps():
    for page in set(ALARMS.values()) | {"runbooks/renderer-truncation.md"}:
        text = (ROOT / page).read_text()
        for heading in ("## Symptoms", "## Confirm", "## Fix", "## Verify"):
            assert heading in text, (page, heading)
        assert "memoir status --json" in text


def test_status_help_says_what_it_counts():
    result = CliRunner().invoke(cli, ["status", "--help"])
    assert result.exit_code == 0
    for word in ("Active", "superseded", "candidate", "incomplete", "--json"):
        assert word in result.output
