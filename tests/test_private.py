"""Private by default: under umask 022 nothing memoir writes under its home is wider than 0700/0600.

Every check walks the tree itself (not through memoir.cards.private), so a writer that slips
past the one place that decides modes shows up here by name.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from memoir.cards.config import load_settings
from memoir.cards.private import make_private_dir, private_db_file, tighten_home, wider_modes
from memoir.flows import hook_client
from memoir.flows.cli.main import cli
from memoir.flows.queue import OverflowQueue
from memoir.index.recall_session import remember_injected, session_path
from tests.user_cards import FEEDCLI_LOG, SHORTY_LOG


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def too_wide(root: Path) -> list[str]:
    """Every path under `root` (itself included) wider than 0700 for a folder, 0600 for anything else."""
    out = []
    for path in [root, *root.rglob("*")]:
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode):
            continue
        allowed = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
        if stat.S_IMODE(st.st_mode) & ~allowed:
            out.append(f"{path.relative_to(root)} {stat.S_IMODE(st.st_mode):04o}")
    return out


def invoke(*args, input=None):
    res = CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res


def test_the_helpers_make_exactly_0700_folders_and_0600_database_files(tmp_path, umask_022):
    made = make_private_dir(tmp_path / "a" / "b" / "c")
    for folder in (tmp_path / "a", tmp_path / "a" / "b", made):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    db = private_db_file(tmp_path / "x" / "y.sqlite")
    assert stat.S_IMODE(db.stat().st_mode) == 0o600 and db.stat().st_size == 0
    assert stat.S_IMODE((tmp_path / "x").stat().st_mode) == 0o700
    os.chmod(db, 0o640)
    private_db_file(db)  # an existing file is left to tighten_home, which says what it changed
    assert stat.S_IMODE(db.stat().st_mode) == 0o640


def test_sqlite_sidecars_take_the_private_database_files_mode(tmp_path, umask_022):
    import sqlite3

    path = private_db_file(tmp_path / "home" / "t.sqlite")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (x)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()
    assert (tmp_path / "home" / "t.sqlite-wal").exists() and (tmp_path / "home" / "t.sqlite-shm").exists()
    assert too_wide(tmp_path / "home") == []
    conn.close()


def test_a_run_a_rebuild_the_queue_and_a_search_leave_nothing_wider_than_private(memoir_home, tmp_path, umask_022):
    assert not memoir_home.exists()
    out = json.loads(invoke("run", "--logs", str(FEEDCLI_LOG), "--json").output)
    assert not any("private" in n for n in out["notes"])  # a home memoir made needs no tightening
    assert (memoir_home / "index" / "index.db").is_file() and (memoir_home / "state" / "ledger.sqlite").is_file()
    assert too_wide(memoir_home) == []
    invoke("index", "rebuild")
    invoke("search", "npm run build")  # fuses the turn index: makes state/turns.sqlite
    OverflowQueue(load_settings(home=memoir_home).queue_dir).add("index_update", "c-0123456789abcdef", {"x": 1})
    invoke("run", "--logs", str(SHORTY_LOG))  # a second run: the ledger, runs.jsonl, the index grow
    recalled = json.loads(invoke("recall", "npm run build fails: Property does not exist on type undici", "--session",
                                 "s-1", "--workspace", "/home/dev/projects/feedcli", "--json").output)
    made = {p.relative_to(memoir_home).as_posix() for p in memoir_home.rglob("*")}
    assert {"index/index.db", "state/turns.sqlite", "state/runs.jsonl", "queue"} <= made, sorted(made)
    assert any(m.startswith("queue/pending/") for m in made)
    assert "state/recall.jsonl" in made
    assert recalled["cards"] and any(m.startswith("state/recall-sessions/") for m in made)  # the session's file
    assert too_wide(memoir_home) == []


def test_hook_made_state_is_private_even_when_the_hook_makes_the_home(memoir_home, umask_022, monkeypatch):
    monkeypatch.setattr(hook_client, "start_service", lambda home, state: None)  # "still loading": no child
    event = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "why does npm run build fail",
                        "session_id": "s-1", "cwd": "/work/shop"})
    invoke("hook", "claude-code", input=event)
    assert (memoir_home / "state" / hook_client.HOOK_LOG).is_file()
    assert too_wide(memoir_home) == []
    assert os.umask(0o022) == 0o022  # the command put the caller's umask back


def test_a_home_made_with_0755_and_0644_is_tightened_by_the_next_run_which_says_so(memoir_home, umask_022):
    invoke("run", "--logs", str(FEEDCLI_LOG), "--no-index")
    for path in [memoir_home, *memoir_home.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    (memoir_home / "prefect").mkdir(mode=0o755)  # files another tool left under the home count too
    (memoir_home / "prefect" / "prefect.db").write_text("")
    wide = too_wide(memoir_home)
    assert "cards 0755" in wide and "state/runs.jsonl 0644" in wide and ". 0755" in wide

    status = json.loads(invoke("status", "--json").output)["privacy"]
    assert status["private"] is False and set(status["wider"]) == set(wide)
    lines = invoke("status").output
    assert f"privacy    {len(wide)} path(s) under {memoir_home} wider than 0700/0600" in lines
    assert "  wide     . 0755" in lines and "  wide     cards 0755" in lines and "more (`memoir status --json`)" in lines

    out = json.loads(invoke("run", "--logs", str(FEEDCLI_LOG), "--no-index", "--json").output)
    (note,) = [n for n in out["notes"] if "private" in n]
    assert f"{len(wide)} path(s)" in note and "tightened" in note
    assert too_wide(memoir_home) == []
    privacy = json.loads(invoke("status", "--json").output)["privacy"]
    assert privacy == {"home": str(memoir_home), "owner": privacy["owner"], "foreign": [], "private": True,
                       "dir_mode": "0700", "file_mode": "0600", "wider": []}
    assert privacy["owner"]  # who owns the home is said
    assert "privacy" not in invoke("status").output  # a private home adds no privacy line


def test_tighten_home_keeps_owner_bits_follows_no_link_and_reports_what_it_changed(tmp_path):
    home = tmp_path / "home"
    (home / "cards").mkdir(parents=True)
    os.chmod(home, 0o700)
    os.chmod(home / "cards", 0o750)
    (home / "cards" / "a.md").write_text("x")
    os.chmod(home / "cards" / "a.md", 0o400)  # narrower than 0600: left as it is
    outside = tmp_path / "outside.txt"
    outside.write_text("y")
    os.chmod(outside, 0o644)
    (home / "link").symlink_to(outside)
    script = home / "run.sh"
    script.write_text("z")
    os.chmod(script, 0o755)
    assert sorted(wider_modes(home)) == ["cards 0750", "run.sh 0755"]
    assert sorted(tighten_home(home)) == ["cards 0750", "run.sh 0755"]
    assert stat.S_IMODE((home / "cards").stat().st_mode) == 0o700
    assert stat.S_IMODE(script.stat().st_mode) == 0o600
    assert stat.S_IMODE((home / "cards" / "a.md").stat().st_mode) == 0o400
    assert stat.S_IMODE(outside.stat().st_mode) == 0o644  # not under the home: never touched
    assert tighten_home(home) == [] and wider_modes(home) == []


def test_every_sqlite_file_memoir_opens_keeps_its_wal_and_shm_private_while_open(tmp_path, umask_022):
    from types import SimpleNamespace

    from memoir.cards.ledger import Ledger
    from memoir.index.db import open_index
    from memoir.index.turns import TurnIndex

    home = tmp_path / "home"
    spec = SimpleNamespace(model_id="stub-model", dim=4)
    with Ledger.in_state_dir(home / "state") as ledger, open_index(home / "index", spec) as index:
        index.set_meta(built_at="now")
        ledger._db.execute("CREATE TABLE IF NOT EXISTS probe (x)")
        ledger._db.commit()
        turns = TurnIndex(home / "state", "stub-model")
        try:
            names = {p.name for p in home.rglob("*")}
            assert {"index.db-wal", "index.db-shm", "ledger.sqlite-wal", "turns.sqlite-wal"} <= names, names
            assert too_wide(home) == []
        finally:
            turns.close()


@pytest.mark.slow
def test_a_run_as_a_prefect_flow_leaves_prefects_own_files_private_too(tmp_path, umask_022):
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_HOME", "PREFECT_API_URL", "MEMOIR_HOME")}
    home = tmp_path / "fresh"
    proc = subprocess.run([sys.executable, "-c", "from memoir.flows.cli.main import main; main()", "--home", str(home),
                           "run", "--flow", "--no-index", "--logs", str(FEEDCLI_LOG)],
                          env=env, cwd=root, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert any((home / "prefect").rglob("*")) and any((home / "cards").glob("*.md"))
    assert too_wide(home) == []


def test_a_recall_session_file_written_outside_any_command_is_private(tmp_path, umask_022):
    remember_injected(tmp_path / "state", "sess-1", ["c-1"], now=1_000.0)
    path = session_path(tmp_path / "state", "sess-1")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
