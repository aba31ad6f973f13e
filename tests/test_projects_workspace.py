"""`--workspace` of `memoir status` and `memoir review` is a project: real git repositories, worktrees and clones.

A linked worktree, a moved folder and a second clone show the project's cards, whichever of its folders (or its
id, or its name) is given; a folder path is still accepted, and another repository's cards never come along.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from memoir.cards.config import load_settings
from memoir.cards.project_registry import REGISTRY_FILE, ProjectRegistry
from memoir.cards.store import CardStore
from memoir.cards.values import Card, Source
from memoir.flows.cli.main import cli
from tests.test_projects import git, quiet_git, repo  # noqa: F401 - the fixture: git reads no machine config


def held(n: int, workspace: Path | str, project: str = "") -> Card:
    """A card the gates held back, written in `workspace` (`project` as a run records it; '' as older cards)."""
    return Card(id=f"c-{n:016x}", status="candidate", gate="no_verification", workspace=str(workspace),
                project=project, created="2026-11-02T09:00:00Z",
                sources=(Source(f"s-{n}", "claude-code", f"/logs/s-{n}.jsonl", (n, n + 1), (n, n + 1)),),
                goal=f"goal {n}", conclusion="Raising pool_size to 10 in settings.toml stopped the 503s under load.")


@pytest.fixture
def library(tmp_path, memoir_home) -> dict:
    """One project seen at four folders (its checkout, a worktree, a clone, a folder since moved), another
    repository, and a folder of no project; a held card in each."""
    main = repo(tmp_path / "shop")
    git(main, "worktree", "add", "-q", str(tmp_path / "shop-wt"))
    git(tmp_path, "clone", "-q", str(main), str(tmp_path / "shop-clone"))
    git(tmp_path, "clone", "-q", str(main), str(tmp_path / "shop-old"))
    other = repo(tmp_path / "blog", content="another history")
    settings = load_settings(home=memoir_home)
    registry = ProjectRegistry(settings.state_dir)
    pid, other_pid = registry.resolve(str(main)), registry.resolve(str(other))  # as a run registers them
    assert registry.resolve(str(tmp_path / "shop-old")) == pid
    shutil.move(str(tmp_path / "shop-old"), str(tmp_path / "shop-moved"))  # its cards keep the old folder
    cards = {"main": held(1, main, pid), "worktree": held(2, tmp_path / "shop-wt"),  # before projects: none recorded
             "clone": held(3, tmp_path / "shop-clone", pid), "moved": held(4, tmp_path / "shop-old"),
             "other": held(5, other, other_pid), "plain": held(6, tmp_path / "notes")}
    store = CardStore(settings.cards_dir, settings.state_dir)
    for card in cards.values():
        store.write(card)
    store.save_manifest()
    return {"home": memoir_home, "pid": pid, "other": other_pid, "ids": {k: c.id for k, c in cards.items()},
            "state": settings.state_dir, "tmp": tmp_path}


def invoke(home, *args: str):
    res = CliRunner().invoke(cli, ["--home", str(home), *args])
    assert res.exit_code == 0, res.output
    return res


def reviewed(lib: dict, workspace: str) -> set[str]:
    out = invoke(lib["home"], "review", "--json", "--workspace", workspace).stdout
    return {c["id"] for c in json.loads(out)}


def ids(lib: dict, *names: str) -> set[str]:
    return {lib["ids"][n] for n in names}


SHOP = ("main", "worktree", "clone", "moved")


def test_review_workspace_is_the_project_whichever_folder_id_or_name_names_it(library):
    tmp = library["tmp"]
    for workspace in (str(tmp / "shop-wt"), str(tmp / "shop"), str(tmp / "shop-clone"), str(tmp / "shop-moved"),
                      str(tmp / "shop-old"), library["pid"], "shop"):
        assert reviewed(library, workspace) == ids(library, *SHOP), workspace
    assert reviewed(library, str(tmp / "blog")) == ids(library, "other") == reviewed(library, library["other"])
    assert reviewed(library, str(tmp / "notes")) == ids(library, "plain") == reviewed(library, "notes")  # by path


def test_review_workspace_decides_in_bulk_only_over_the_projects_cards(library):
    res = invoke(library["home"], "review", "--workspace", str(library["tmp"] / "shop-wt"), "--reject-all", "--yes",
                 "--why", "not this project's lesson")
    assert "rejected 4 of 4" in res.output
    assert reviewed(library, "") == ids(library, "other", "plain")


def test_status_groups_by_project_and_its_workspace_option_keeps_to_one_project(library):
    tmp, registry_file = library["tmp"], library["state"] / REGISTRY_FILE
    before = registry_file.read_bytes()
    data = json.loads(invoke(library["home"], "status", "--json").stdout)
    (shop,) = [p for p in data["projects"] if p["id"] == library["pid"]]
    assert shop["name"] == "shop" and shop["counts"]["candidate"] == 4
    assert shop["folders"] == sorted(str(tmp / f) for f in ("shop", "shop-clone", "shop-old", "shop-wt"))
    assert [p["counts"]["total"] for p in data["projects"] if p["id"] == library["other"]] == [1]
    assert [p["folders"] for p in data["projects"] if not p["id"]] == [[str(tmp / "notes")]]
    text = invoke(library["home"], "status").output
    assert f"  shop ({library['pid']}): 0 active, 4 candidate" in text
    assert f"    {tmp / 'shop-wt'}: 0 active, 1 candidate" in text
    assert f"  {tmp / 'notes'}: 0 active, 1 candidate" in text and "(no project: by folder)" in text

    for workspace in (str(tmp / "shop-wt"), "shop", library["pid"]):
        one = json.loads(invoke(library["home"], "status", "--json", "--workspace", workspace).stdout)
        assert one["counts"]["candidate"] == 4 and [p["id"] for p in one["projects"]] == [library["pid"]]
        assert one["workspace"] == workspace
    assert registry_file.read_bytes() == before  # status reads the home: git's answers are not written
