"""Card schema versions: every file says `schema: 1`; an older library is upgraded in place by the
next run; a library a newer memoir wrote is refused, with its own exit code, and left untouched.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memoir.cards.config import load_settings
from memoir.cards.errors import LibraryTooNew
from memoir.cards.schema import CARD_SCHEMA, file_schema, upgraded_text, without_schema_line
from memoir.cards.store import CardStore, content_hash, parse_card, render_card
from memoir.flows.cli.app import EXIT_TOO_NEW
from memoir.flows.cli.main import cli
from memoir.flows.pipeline import run_pipeline
from tests.user_cards import FEEDCLI_LOG, SHORTY_LOG, card


def tree(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def home(memoir_home):
    settings = load_settings(home=memoir_home)
    run_pipeline(settings, [FEEDCLI_LOG, SHORTY_LOG], with_index=False)
    return settings


def make_old(settings) -> dict[str, bytes]:
    """Turn the home into one an older memoir wrote: no schema line, the manifest of those bytes."""
    store = CardStore(settings.cards_dir, settings.state_dir)
    current = tree(settings.cards_dir)
    for card_id in store.ids():
        path = store.path_for(card_id)
        old = without_schema_line(path.read_text())
        path.write_text(old)
        store.manifest[card_id] = content_hash(old)
    store.save_manifest()
    return current


def test_every_card_file_starts_with_its_schema():
    text = render_card(card(1))
    assert text.startswith(f"---\nschema: {CARD_SCHEMA}\nid: c-") and file_schema(text) == CARD_SCHEMA
    assert parse_card(text) == card(1)  # the field is the file's, not the card's
    assert upgraded_text(text) is None and upgraded_text(without_schema_line(text)) == text


def test_an_older_library_is_read_and_upgraded_in_place_by_the_next_run(home):
    expected = make_old(home)
    store = CardStore(home.cards_dir, home.state_dir)
    ids = store.ids()
    assert len(ids) > 2 and all(file_schema(store.read_text(i)) == 0 for i in ids)
    cards, problems = store.load_all()  # the old files read as they are
    assert not problems and len(cards) == len(ids)
    # A person edited one old file: the upgrade keeps the edit and the file stays theirs.
    edited = store.path_for(ids[0])
    edited.write_text(edited.read_text().replace("\n## Follow-up\n", "\n## Follow-up\n\nMy own note.\n"))

    summary = run_pipeline(home, [FEEDCLI_LOG, SHORTY_LOG], with_index=False)
    assert any(f"upgraded {len(ids)} card files to card schema {CARD_SCHEMA}" in n for n in summary.notes)
    after = tree(home.cards_dir)
    assert {k: v for k, v in after.items() if k != edited.name} == \
        {k: v for k, v in expected.items() if k != edited.name}
    assert "My own note." in edited.read_text() and file_schema(edited.read_text()) == CARD_SCHEMA
    assert CardStore(home.cards_dir, home.state_dir).hand_edited_ids() == [ids[0]]
    assert summary.cards.get("updated", 0) == 0  # nothing rewritten but the one line
    again = run_pipeline(home, [FEEDCLI_LOG, SHORTY_LOG], with_index=False)
    assert not any("upgraded" in n for n in again.notes) and tree(home.cards_dir) == after


def test_an_upgrade_killed_before_its_manifest_is_finished_by_the_next_run(home):
    expected = make_old(home)
    store = CardStore(home.cards_dir, home.state_dir)
    half = store.ids()[: len(store.ids()) // 2]
    for card_id in half:  # files replaced, manifest never saved: what a kill -9 there leaves
        path = store.path_for(card_id)
        path.write_text(upgraded_text(path.read_text()))
    run_pipeline(home, [FEEDCLI_LOG, SHORTY_LOG], with_index=False)
    assert tree(home.cards_dir) == expected
    assert CardStore(home.cards_dir, home.state_dir).hand_edited_ids() == []


def test_a_library_of_a_newer_schema_is_refused_and_left_untouched(home):
    store = CardStore(home.cards_dir, home.state_dir)
    newer = store.path_for(store.ids()[1])
    newer.write_text(newer.read_text().replace(f"schema: {CARD_SCHEMA}\n", f"schema: {CARD_SCHEMA + 1}\n", 1))
    before = tree(home.cards_dir), tree(home.state_dir)

    with pytest.raises(LibraryTooNew):
        run_pipeline(home, [FEEDCLI_LOG], with_index=False)
    for args in (["run", "--no-index", "--logs", str(FEEDCLI_LOG)], ["cards", "list", "--json"], ["status"]):
        result = CliRunner().invoke(cli, ["--home", str(home.home), *args])
        assert result.exit_code == EXIT_TOO_NEW, (args, result.output)
        assert "written by a newer memoir" in result.output and newer.name in result.output
        assert "Traceback" not in result.output
    assert tree(home.cards_dir) == before[0]
    assert json.loads((home.state_dir / "written.json").read_text()) == json.loads(before[1]["written.json"])
