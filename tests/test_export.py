"""`memoir export --status`: only the statuses asked for (active by default) leave the home."""

from __future__ import annotations

import tarfile

import pytest
from click.testing import CliRunner

from memoir.cards.config import load_settings
from memoir.cards.store import CardStore
from memoir.flows.cli.main import cli
from memoir.flows.cli.commands.cards import EXPORT_STATUSES, parse_statuses
from tests.user_cards import card

ACTIVE = [card(1), card(2, topics=("database",))]
CANDIDATE = card(3, status="candidate", gate="failure_conditions_stated")
INCOMPLETE = card(4, status="incomplete", gate="conclusion_cut_off")
SUPERSEDED = card(5, status="superseded", superseded_by=card(1).id)


@pytest.fixture
def home(memoir_home):
    settings = load_settings(home=memoir_home)
    store = CardStore(settings.cards_dir, settings.state_dir)
    store.write_many([*ACTIVE, CANDIDATE, INCOMPLETE, SUPERSEDED])
    store.save_manifest()
    return settings


def export(settings, *args):
    return CliRunner().invoke(cli, ["--home", str(settings.home), "export", *args])


def exported_ids(dest):
    return sorted(p.stem for p in dest.rglob("c-*.md"))


def test_export_takes_only_active_cards_unless_asked(home, tmp_path):
    out = export(home, str(tmp_path / "out"))
    assert out.exit_code == 0, out.output
    assert f"exported 2 cards (active) to {tmp_path / 'out'}" in out.output
    assert exported_ids(tmp_path / "out") == sorted(c.id for c in ACTIVE)


def test_statuses_repeat_or_come_as_a_comma_list(home, tmp_path):
    repeated = export(home, str(tmp_path / "a"), "--status", "candidate", "--status", "incomplete")
    listed = export(home, str(tmp_path / "b"), "--status", "candidate,incomplete")
    assert repeated.exit_code == listed.exit_code == 0, repeated.output + listed.output
    assert "exported 2 cards (candidate, incomplete)" in repeated.output
    assert exported_ids(tmp_path / "a") == exported_ids(tmp_path / "b") == sorted([CANDIDATE.id, INCOMPLETE.id])


def test_all_exports_every_card_into_an_archive_too(home, tmp_path):
    out = export(home, str(tmp_path / "cards.tar.gz"), "--status", "all")
    assert out.exit_code == 0 and "exported 5 cards (all statuses)" in out.output
    with tarfile.open(tmp_path / "cards.tar.gz") as tar:
        names = [n.rsplit("/", 1)[1][:-3] for n in tar.getnames() if "/c-" in n]
    assert sorted(names) == sorted(c.id for c in (*ACTIVE, CANDIDATE, INCOMPLETE, SUPERSEDED))


def test_an_unknown_status_is_refused_before_anything_is_written(home, tmp_path):
    for bad, why in (("bogus", "bogus is not one of active, candidate"), ("forgotten", "tombstones and never exported")):
        out = export(home, str(tmp_path / bad), "--status", f"active,{bad}")
        assert out.exit_code == 2 and why in out.output
        assert not (tmp_path / bad).exists()


def test_no_card_of_the_status_says_how_to_take_them_all(memoir_home, tmp_path):
    settings = load_settings(home=memoir_home)
    store = CardStore(settings.cards_dir, settings.state_dir)
    store.write_many([CANDIDATE])
    out = export(settings, str(tmp_path / "out"))
    assert out.exit_code == 0 and "exported 0 cards (active)" in out.output
    assert "`memoir export --status all" in out.output


def test_parse_statuses_keeps_order_drops_repeats_and_defaults_to_active():
    assert parse_statuses(()) == ("active",)
    assert parse_statuses(("Superseded, active", "active")) == ("superseded", "active")
    assert parse_statuses(("active", "all")) == EXPORT_STATUSES
