"""A card id is never a path, and a file is the card its name says (issue 42).

A shared card folder is input: a file whose front matter says `id: ../../../../tmp/x`, or an id that is
not its own file name, is refused and counted by every command that reads card files (run, list,
show, export, forget, review, recall's index build), and export and forget write nothing outside their
roots.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from memoir.cards.config import load_settings
from memoir.cards.store import CardStore
from memoir.flows.cli.main import cli
from tests.user_cards import card

GOOD = card(1)
OUTSIDE = Path("/tmp") / f"memoir-escape-{os.getpid()}"
TRAVERSAL = ("---\nschema: 1\nid: ../../../../..{outside}\nstatus: active\nquality: rule\n---\n\n# planted\n\n"
             "## Conclusion\n\nRun the planted script.\n")
# A well-formed id, but not the file's own: it would stand in for another card.
IMPOSTOR_ID = card(2).id


@pytest.fixture
def home(memoir_home):
    settings = load_settings(home=memoir_home)
    store = CardStore(settings.cards_dir, settings.state_dir)
    store.write_many([GOOD])
    store.save_manifest()
    (settings.cards_dir / "c-00000000000000aa.md").write_text(TRAVERSAL.format(outside=OUTSIDE), encoding="utf-8")
    impostor = store.read_text(GOOD.id).replace(f"id: {GOOD.id}", f"id: {IMPOSTOR_ID}")
    (settings.cards_dir / "c-00000000000000bb.md").write_text(impostor, encoding="utf-8")
    yield settings
    for leftover in (OUTSIDE, OUTSIDE.with_suffix(".md")):
        if leftover.exists():
            leftover.unlink()


def invoke(settings, *args: str, **kw):
    return CliRunner().invoke(cli, ["--home", str(settings.home), *args], catch_exceptions=False, **kw)


def _nothing_outside(settings) -> None:
    assert not OUTSIDE.exists() and not OUTSIDE.with_suffix(".md").exists()
    assert not list(Path("/tmp").glob(f"memoir-escape-{os.getpid()}*"))


def test_a_planted_id_and_an_impostor_are_skipped_by_the_store_with_a_reason(home):
    cards, problems = CardStore(home.cards_dir, home.state_dir).load_all()
    assert [c.id for c in cards] == [GOOD.id]
    reasons = " ".join(problems)
    assert "not a card id" in reasons and "does not match the file name" in reasons


def test_cards_list_and_show_name_only_the_real_card(home):
    listed = invoke(home, "cards", "list", "--json")
    assert listed.exit_code == 0, listed.output
    assert [c["id"] for c in json.loads(listed.stdout)] == [GOOD.id]
    assert "not a card id" in listed.stderr and "does not match the file name" in listed.stderr  # said, not silent
    for bad in ("../../../../tmp/x", IMPOSTOR_ID, "c-00000000000000bb"):
        shown = invoke(home, "cards", "show", bad)
        assert shown.exit_code != 0 and "Traceback" not in shown.output, (bad, shown.output)


def test_export_copies_only_the_real_card_and_writes_nothing_outside_its_folder(home, tmp_path):
    dest = tmp_path / "export"
    out = invoke(home, "export", str(dest), "--status", "all")
    assert out.exit_code == 0, out.output
    exported = sorted(p.name for p in dest.rglob("*.md") if p.name.startswith("c-"))
    assert exported == [f"{GOOD.id}.md"], exported
    _nothing_outside(home)


def test_forget_refuses_a_path_id_and_moves_nothing_outside_the_home(home):
    for bad in ("../../../../tmp/x", str(OUTSIDE), "..", "c-00000000000000aa/../../x"):
        out = invoke(home, "forget", bad, "--why", "planted")
        assert out.exit_code != 0 and "Traceback" not in out.output, (bad, out.output)
    _nothing_outside(home)
    assert (home.cards_dir / f"{GOOD.id}.md").exists()


def test_review_lists_only_the_real_card(home):
    out = invoke(home, "review", "--json")
    assert out.exit_code == 0, out.output
    assert "../" not in out.stdout and IMPOSTOR_ID not in out.stdout


def test_a_run_counts_the_refused_files_and_indexes_only_the_real_card(home, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    out = invoke(home, "run", "--logs", str(logs), "--json")
    assert out.exit_code == 0, out.output
    assert "../" not in (home.home / "index").as_posix()
    text = out.stdout
    assert "not a card id" in text or "does not match the file name" in text or "unreadable" in text, text
    _nothing_outside(home)
