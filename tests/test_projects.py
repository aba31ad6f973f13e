"""Project identity: a worktree, a moved folder and a second clone are one project; two repositories never.

Real git in temp folders throughout; the recall gates, the rules' comparison and one `memoir run` +
`memoir recall` end to end see the same answers.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from memoir.cards.config import Settings
from memoir.cards.distill.rules import apply_rules
from memoir.cards.project_registry import REGISTRY_FILE, ProjectRegistry, git_facts, run_git
from memoir.cards.projects import (
    ROOT, GitFacts, ProjectChangeRefused, ProjectMap, identity, normalize_remote, plan_merge, plan_split,
    same_place,
)
from memoir.cards.store import parse_card, render_card
from memoir.cards.values import Card
from memoir.flows.cli.main import cli
from memoir.index.recall_gates import INJECTED, Candidate, GatePolicy, RecallQuery, judge
from memoir.index.recall_policy import placed

EXAMPLES = Path(__file__).resolve().parents[1] / "cards" / "examples" / "claude-code"
EXAMPLE_CWD = "/home/dev/projects/shopapi"
# The example session's verified fix; its lesson names `app/db.py`, so under the folder rule alone
# it never left its own folder: exactly the card a worktree or a clone of that project missed.
THREAD_ERROR = "sqlite3.ProgrammingError: SQLite objects created in a thread can only be used in that same thread"


@pytest.fixture(autouse=True)
def quiet_git(monkeypatch, tmp_path):
    """git reads no config of the machine's or the user's: every answer comes from the temp repositories."""
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-gitconfig"))


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=x", "-c", "user.email=x@y", "-c", "init.defaultBranch=main",
                           *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def repo(path: Path, content: str = "a", remote: str = "") -> Path:
    """A git repository at `path` with one commit (and `origin`, when given)."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    (path / "README").write_text(content)
    git(path, "add", "README")
    git(path, "commit", "-qm", "first")
    if remote:
        git(path, "remote", "add", "origin", remote)
    return path


def registry(tmp_path: Path) -> ProjectRegistry:
    return ProjectRegistry(tmp_path / "home" / "state")


# --- the pure core ----------------------------------------------------------------------------------


@pytest.mark.parametrize("url", [
    "git@github.com:acme/shop.git", "git@GitHub.com:acme/shop", "https://github.com/acme/shop.git",
    "https://user:t0ken@github.com/acme/shop/", "ssh://git@github.com:22/acme/shop.git",
    "git+ssh://git@github.com/acme/shop", "http://GITHUB.COM/acme/shop", "github.com:acme/shop.git",
])
def test_every_spelling_of_one_remote_is_one_project(url):
    assert normalize_remote(url) == "github.com/acme/shop"


@pytest.mark.parametrize("url", ["/srv/git/shop.git", "../shop", "file:///srv/git/shop", "~/src/shop", "", "C:\\src\\shop"])
def test_a_local_path_is_no_network_remote(url):
    assert normalize_remote(url) == ""


def test_the_remote_names_the_project_before_the_root_commit_and_a_repository_without_either_is_none():
    assert identity(GitFacts("/a", "/a/.git", "git@host.org:x/y.git", ("f" * 40,))) == "host.org/x/y"
    assert identity(GitFacts("/a", "/a/.git", "", ("b" * 40, "a" * 40))) == ROOT + "a" * 40
    assert identity(GitFacts("/a", "/a/.git", "/elsewhere", ())) == ""


def test_two_projects_never_match_however_their_folders_nest_and_no_project_falls_back_to_folders():
    assert same_place("/work/shop", "p1", "/elsewhere/shop-wt", "p1")
    assert not same_place("/work/shop", "p1", "/work/shop/vendor/lib", "p2")
    assert not same_place("/a/shop", "p1", "/b/shop", "p2")
    assert same_place("/work/shop", "", "/work/shop/api", "")
    assert same_place("/work/shop", "p1", "/work/shop/api", "")  # a side that is no project: the folder rule
    assert not same_place("/work/shop", "p1", "/work/other", "")


def test_the_alias_map_wins_over_the_recorded_id_and_a_merge_folds_one_project_into_another():
    m = ProjectMap(paths={"/a": "p1", "/b": "p2"})
    assert m.project_of("/a/", "p9") == "p1" and m.project_of("/gone", "p9") == "p9" and m.project_of("/gone") == ""
    merged = plan_merge(m, "p1", "p2")
    assert merged.project_of("/b") == "p1" and merged.project_of("/x", "p2") == "p1"
    assert merged.aliases("p1") == ("/a", "/b")
    with pytest.raises(ProjectChangeRefused):
        plan_merge(merged, "p2", "p1")  # one project already


def test_a_split_gives_the_folder_and_its_registered_subfolders_a_project_of_their_own():
    m = ProjectMap(paths={"/a": "p1", "/a/src": "p1", "/a/vendor": "p2", "/b": "p1"})
    split, own = plan_split(m, "/a")
    assert own == "path:/a"
    assert split.project_of("/a/src") == own and split.project_of("/a/vendor") == "p2" and split.project_of("/b") == "p1"
    with pytest.raises(ProjectChangeRefused):
        plan_split(split, "/a")


def test_a_registry_file_that_is_not_a_table_reads_as_an_empty_map():
    assert ProjectMap.from_json(["x"]) == ProjectMap()
    assert ProjectMap.from_json({"paths": {"/a/": "p1", "/b": 3}}).paths == {"/a": "p1"}


def test_a_card_without_a_project_reads_and_renders_as_before_and_one_with_a_project_keeps_it():
    card = Card(id="c-0000000000000001", workspace="/w", conclusion="x")
    text = render_card(card)
    assert "project:" not in text and parse_card(text) == card
    mine = card.with_(project="github.com/acme/shop")
    text = render_card(mine)
    assert "\nproject: github.com/acme/shop\n" in text and parse_card(text).project == "github.com/acme/shop"
    assert text.index("workspace:") < text.index("project:") < text.index("created:")


# --- git, for real -----------------------------------------------------------------------------------


def test_a_worktree_a_moved_folder_and_a_second_clone_are_the_project_of_the_main_checkout(tmp_path):
    main = repo(tmp_path / "main")
    git(main, "worktree", "add", "-q", str(tmp_path / "wt"))
    git(tmp_path, "clone", "-q", str(main), str(tmp_path / "clone"))
    reg = registry(tmp_path)
    pid = reg.resolve(str(main))
    assert pid.startswith(ROOT)
    assert reg.resolve(str(tmp_path / "wt")) == pid
    assert reg.resolve(str(tmp_path / "clone")) == pid  # its `origin` is a folder: that folder's project
    (main / "src").mkdir()
    assert reg.resolve(str(main / "src")) == pid
    shutil.move(str(main), str(tmp_path / "moved"))
    fresh = registry(tmp_path)  # another process: the old folder is gone, the alias map remembers it
    assert fresh.resolve(str(main)) == pid
    assert fresh.resolve(str(tmp_path / "moved")) == pid


def test_clones_with_one_remote_written_two_ways_are_one_project_whatever_their_history(tmp_path):
    a = repo(tmp_path / "a", "one", remote="git@github.com:acme/shop.git")
    b = repo(tmp_path / "b", "two", remote="https://me:secret@github.com/acme/shop")
    reg = registry(tmp_path)
    assert reg.resolve(str(a)) == reg.resolve(str(b)) == "github.com/acme/shop"
    assert "secret" not in (tmp_path / "home" / "state" / REGISTRY_FILE).read_text()


def test_two_repositories_never_share_nested_or_of_the_same_folder_name(tmp_path):
    outer = repo(tmp_path / "outer", "outer")
    inner = repo(outer / "vendor" / "lib", "inner")
    one = repo(tmp_path / "x" / "shop", "x")
    two = repo(tmp_path / "y" / "shop", "y")
    reg = registry(tmp_path)
    ids = [reg.resolve(str(p)) for p in (outer, inner, one, two)]
    assert len(set(ids)) == 4 and all(ids)
    assert reg.resolve(str(outer / "vendor")) == ids[0]  # a plain folder inside is the outer project's


def test_git_is_asked_once_per_new_folder_and_never_writes_to_the_repository(tmp_path):
    main = repo(tmp_path / "main")
    before = sorted(str(p.relative_to(main)) for p in main.rglob("*"))
    stamp = (main / ".git" / "index").stat().st_mtime_ns
    calls: list[tuple] = []

    def counted(path: str, *args: str):
        calls.append(args)
        return run_git(path, *args)

    reg = ProjectRegistry(tmp_path / "home" / "state", git=counted)
    pid = reg.resolve(str(main))
    asked = len(calls)
    assert asked == 3  # toplevel and common dir, origin, root commit
    for _ in range(3):
        assert reg.resolve(str(main)) == pid
    assert ProjectRegistry(tmp_path / "home" / "state", git=counted).resolve(str(main)) == pid
    assert len(calls) == asked  # the registry answered: no more git
    assert sorted(str(p.relative_to(main)) for p in main.rglob("*")) == before
    assert (main / ".git" / "index").stat().st_mtime_ns == stamp
    mode = stat.S_IMODE((tmp_path / "home" / "state" / REGISTRY_FILE).stat().st_mode)
    assert mode == 0o600


def test_the_registry_keeps_a_folder_as_a_card_keeps_it_sanitized(tmp_path):
    main = repo(tmp_path / "jane.doe@corp.example" / "shop")
    reg = registry(tmp_path)
    pid = reg.resolve(str(main))
    assert pid.startswith(ROOT)
    written = (tmp_path / "home" / "state" / REGISTRY_FILE).read_text()
    assert "jane.doe@corp.example" not in written and "[REDACTED:email" in written
    assert registry(tmp_path).resolve(str(main)) == pid


def test_without_git_or_outside_a_repository_a_folder_is_no_project(tmp_path, monkeypatch):
    plain = tmp_path / "plain"
    plain.mkdir()
    assert git_facts(str(plain)) is None and registry(tmp_path).resolve(str(plain)) == ""
    main = repo(tmp_path / "main")
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # a machine without git
    assert registry(tmp_path).resolve(str(main)) == ""
    assert not (tmp_path / "home" / "state" / REGISTRY_FILE).exists()


# --- where workspaces are compared ---------------------------------------------------------------------


def _candidate(cid: str, workspace: str, project: str) -> Candidate:
    return Candidate(
        id=cid, status="active", quality="rule", gate="", task_type="debug", workspace=workspace, topics=(),
        error_signature="", superseded_by="", conclusion="Open one connection per request in app/db.py: "
        "a sqlite3 connection may only be used by the thread that made it.", counterexamples="",
        body="", age_days=1.0, similarity=0.9, coverage=0.8, knn_rank=1, fts_rank=1, project=project)


def test_the_recall_gate_takes_a_card_home_in_every_folder_of_its_project_and_in_no_other(tmp_path):
    main = repo(tmp_path / "main")
    git(main, "worktree", "add", "-q", str(tmp_path / "wt"))
    inner = repo(main / "vendor" / "lib", "inner")
    same_name = repo(tmp_path / "elsewhere" / "main", "other")
    reg = registry(tmp_path)
    card_project = reg.resolve(str(main))
    policy = GatePolicy.from_settings(Settings())

    def gate(workspace: Path) -> str:
        # The card records no project (written before projects): the alias map names it.
        (c,) = placed([_candidate("c-1", str(main), "")], reg.load())
        q = RecallQuery(text="sqlite3 thread connection", task_type="debug", workspace=str(workspace),
                        project=reg.resolve(str(workspace)))
        return judge([c], q, policy)[0].gate

    assert card_project
    assert gate(main) == INJECTED and gate(tmp_path / "wt") == INJECTED
    assert gate(inner) == "TooFarFromWorkspace" and gate(same_name) == "TooFarFromWorkspace"


def test_the_rules_merge_one_failure_met_in_a_worktree_and_in_the_main_checkout_but_not_across_projects(tmp_path):
    main = repo(tmp_path / "main")
    git(main, "worktree", "add", "-q", str(tmp_path / "wt"))
    other = repo(tmp_path / "other", "other")
    reg = registry(tmp_path)
    known = reg.learn([str(main), str(tmp_path / "wt"), str(other)])
    from tests.test_merge import _drafted  # two sessions of one failure: the rules fold them into one card

    (e1, c1), (e2, c2) = _drafted(2)
    first = (e1, c1.with_(workspace=str(main)))

    def merged(workspace: Path, projects=known) -> int:
        return apply_rules([first, (e2, c2.with_(workspace=str(workspace)))], [], projects=projects).counters["merged"]

    assert merged(tmp_path / "wt") == 1
    assert merged(tmp_path / "wt", projects=None) == 0  # by folder alone, `main` and `wt` are two workspaces
    assert merged(other) == 0
    assert all(c.project == known.project_of(str(main)) for c in
               apply_rules([first], [], projects=known).write)


@pytest.mark.slow
def test_memoir_run_records_the_project_and_recall_finds_the_card_from_a_worktree_a_clone_and_a_moved_folder(
        tmp_path, memoir_home):
    main = repo(tmp_path / "src" / "shopapi")
    git(main, "worktree", "add", "-q", str(tmp_path / "wt"))
    git(tmp_path, "clone", "-q", str(main), str(tmp_path / "clone"))
    stranger = repo(tmp_path / "elsewhere" / "shopapi", "another project, the same folder name")
    logs = tmp_path / "logs" / "-shopapi"
    logs.mkdir(parents=True)
    for log in (EXAMPLES / "-home-dev-projects-shopapi").glob("*.jsonl"):
        (logs / log.name).write_text(log.read_text().replace(EXAMPLE_CWD, str(main)))
    runner = CliRunner()
    done = runner.invoke(cli, ["run", "--logs", str(logs.parent)])
    assert done.exit_code == 0, done.output
    cards = [parse_card(p.read_text()) for p in (memoir_home / "cards").glob("c-*.md")]
    projects = {c.project for c in cards}
    assert len(projects) == 1 and next(iter(projects)).startswith(ROOT)

    def recalled(workspace: Path) -> list[str]:
        out = runner.invoke(cli, ["recall", THREAD_ERROR, "--workspace", str(workspace), "--json"])
        assert out.exit_code == 0, out.output
        return [c["id"] for c in json.loads(out.output)["cards"]]

    at_home = recalled(main)
    assert at_home
    assert recalled(tmp_path / "wt") == at_home
    assert recalled(tmp_path / "clone") == at_home
    assert recalled(stranger) == []
    shutil.move(str(main), str(tmp_path / "moved"))
    assert recalled(tmp_path / "moved") == at_home

    listed = runner.invoke(cli, ["projects", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = {r["id"]: r for r in json.loads(listed.output)["projects"]}
    assert rows[next(iter(projects))]["cards"] == len(cards)
    assert {str(tmp_path / "wt"), str(tmp_path / "clone"), str(tmp_path / "moved")} <= set(
        rows[next(iter(projects))]["aliases"])

    split = runner.invoke(cli, ["projects", "split", str(tmp_path / "clone")])
    assert split.exit_code == 0, split.output
    assert recalled(tmp_path / "clone") == []
    merged = runner.invoke(cli, ["projects", "merge", str(tmp_path / "moved"), str(tmp_path / "clone")])
    assert merged.exit_code == 0, merged.output
    assert recalled(tmp_path / "clone") == at_home
    again = runner.invoke(cli, ["projects", "merge", str(tmp_path / "moved"), str(tmp_path / "clone")])
    assert again.exit_code == 2 and "nothing to merge" in again.output
    assert runner.invoke(cli, ["projects", "merge", "no-such-project", str(tmp_path / "wt")]).exit_code == 2
