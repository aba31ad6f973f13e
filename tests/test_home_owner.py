"""The home is the owner's (issue 42): a home, or a folder in it, that another user owns or may write
is refused by every command but `status` (exit 10, a message that says what to do), its cards are
never injected by the recall service or the hook, `--allow-shared-home` lets a person who trusts
the other users go on, and `memoir status` says where the home is and who owns it. Checked as an
unprivileged user (uid 65534) against folders root owns, and against folders others may write.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from memoir.cards.config import load_settings
from memoir.cards.private import foreign_folders
from memoir.flows.cli.app import EXIT_NOT_PRIVATE
from memoir.flows.cli.main import cli
import memoir.flows.cli.commands.cards  # noqa: F401 - imported here: the unprivileged child cannot read the sources
from memoir.flows.recall_service import RecallService
from tests.nobody import NOBODY, as_nobody
from tests.recall_cards import BASE, QUERY, WORKSPACE, index_cards, settings_for


def _invoke(*args: str, env: dict | None = None):
    return CliRunner().invoke(cli, list(args), env=env or {}, catch_exceptions=False)


@pytest.fixture
def shared_root(tmp_path):
    """A folder every user may enter (the test's own tmp path may be 0700)."""
    root = Path("/tmp") / f"memoir-owner-{os.getpid()}-{tmp_path.name}"
    root.mkdir(mode=0o755)
    os.chmod(root, 0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_a_home_only_its_owner_can_change_passes(tmp_path):
    home = tmp_path / "home"
    (home / "cards").mkdir(parents=True, mode=0o700)
    os.chmod(home, 0o700)
    assert foreign_folders(home) == []
    assert foreign_folders(tmp_path / "not-made-yet") == []


def test_a_folder_others_may_write_is_named_and_every_command_but_status_refuses_it(tmp_path):
    home = tmp_path / "home"
    (home / "cards").mkdir(parents=True)
    os.chmod(home, 0o700)
    os.chmod(home / "cards", 0o777)
    assert foreign_folders(home) == ["cards: writable by every user (0777)"]
    for args in (["search", "pool"], ["recall", "pool"], ["cards", "list"], ["run", "--logs", str(tmp_path)],
                 ["export", str(tmp_path / "out")], ["review", "--list"], ["index", "check"]):
        out = _invoke("--home", str(home), *args)
        assert out.exit_code == EXIT_NOT_PRIVATE, (args, out.output)
        assert "not yours alone" in out.output and "--allow-shared-home" in out.output, out.output
    status = _invoke("--home", str(home), "status")
    assert status.exit_code == 0, status.output
    assert f"home       {home} (owner root)" in status.output
    assert "REFUSED" in status.output and "cards: writable by every user" in status.output
    assert not (tmp_path / "out").exists()  # the refused export wrote nothing


def test_allow_shared_home_lets_a_person_who_trusts_the_others_go_on(tmp_path):
    home = tmp_path / "home"
    (home / "cards").mkdir(parents=True)
    os.chmod(home / "cards", 0o777)
    out = _invoke("--home", str(home), "--allow-shared-home", "cards", "list")
    assert out.exit_code == 0, out.output
    out = _invoke("--home", str(home), "cards", "list", env={"MEMOIR_ALLOW_SHARED_HOME": "1"})
    assert out.exit_code == 0, out.output


def test_the_recall_service_injects_nothing_from_a_home_another_user_could_change(memoir_home, embedder):
    settings = settings_for(memoir_home)
    index_cards(settings, embedder, [BASE])
    service = RecallService(settings, embedder)
    ask = {"op": "recall", "query": QUERY, "workspace": WORKSPACE, "session_id": "s-own", "budget_ms": 60_000}
    try:
        assert BASE.id in service.handle(ask)["context"]  # the owner's own home: the card is injected
        os.chmod(settings.cards_dir, 0o777)
        service._foreign.clear()  # the next request looks again (as it does every few seconds)
        answer = service.handle(ask)
        assert answer["ok"] and answer["context"] == "" and "not its owner's alone" in answer["reason"], answer
        assert service.handle({"op": "brief", "workspace": WORKSPACE})["context"] == ""
    finally:
        service.close()
        os.chmod(settings.cards_dir, 0o700)


def test_a_home_owned_by_another_user_is_refused_to_an_unprivileged_user(shared_root):
    """uid 65534 pointed at a home root owns (and made writable to all, so the refusal is memoir's,
    not the kernel's): refused; its own fresh home is accepted."""
    theirs = shared_root / "theirs"
    (theirs / "cards").mkdir(parents=True)
    os.chmod(theirs, 0o777)
    os.chmod(theirs / "cards", 0o777)
    mine = shared_root / "mine"
    mine.mkdir()
    os.chown(mine, NOBODY, NOBODY)
    os.chmod(mine, 0o700)

    env = {"HOME": str(mine), "XDG_CONFIG_HOME": str(mine / "config")}  # root's own config is not nobody's to read

    def attempt():
        refused = _invoke("--home", str(theirs), "cards", "list", env=env)
        accepted = _invoke("--home", str(mine), "cards", "list", env=env)
        return {"refused": [refused.exit_code, refused.output], "accepted": [accepted.exit_code, accepted.output],
                "foreign": foreign_folders(theirs)}

    answer = as_nobody(attempt)
    assert answer["refused"][0] == EXIT_NOT_PRIVATE, answer
    assert "owned by root" in answer["refused"][1], answer
    assert answer["foreign"][0].endswith("owned by root"), answer
    assert answer["accepted"][0] == 0, answer


def test_load_settings_of_a_refused_home_still_resolves_for_status(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    os.chmod(home, 0o777)
    assert load_settings(home=str(home)).home == home
