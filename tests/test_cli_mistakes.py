"""Mistakes are not silent: a typo'd path, a missing home, an unopenable index, a broken config
and a refused card write each exit non-zero (or say why) with what to do next; --home works
before or after the subcommand."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from memoir.flows.cli.app import CHECK_EXIT, hoist_options
from memoir.flows.cli.main import cli
from memoir.flows.ingest import write_cause
from tests.nobody import as_nobody
from tests.user_cards import FEEDCLI_LOG

REPO = Path(__file__).resolve().parents[1]


def invoke(*args: str, env: dict | None = None):
    return CliRunner().invoke(cli, list(args), env=env)


# --- global options anywhere -------------------------------------------------------------------


def test_hoist_moves_group_options_to_the_front_and_leaves_the_rest_in_order():
    args = ["index", "check", "--home", "/h", "--json", "--", "--home", "x"]
    assert hoist_options(args, {"--home"}) == ["--home", "/h", "index", "check", "--json", "--", "--home", "x"]
    assert hoist_options(["status", "--home=/h"], {"--home"}) == ["--home=/h", "status"]
    assert hoist_options(["status", "--json"], {"--home"}) == ["status", "--json"]


@pytest.mark.parametrize("order", ["before", "after", "after_equals"])
def test_home_works_before_or_after_the_subcommand(tmp_path, order):
    home = tmp_path / "elsewhere"  # not MEMOIR_HOME, which the autouse fixture set
    args = {"before": ["--home", str(home), "status"], "after": ["status", "--home", str(home)],
            "after_equals": ["status", f"--home={home}"]}[order]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert f"files in {home / 'cards'}" in result.output


def test_home_after_a_nested_subcommand_reaches_the_root_group(tmp_path):
    home = tmp_path / "nowhere"
    result = invoke("index", "check", "--json", "--home", str(home))
    assert result.exit_code == CHECK_EXIT["missing"], result.output
    assert json.loads(result.output)["path"].startswith(str(home))


# --- run --logs with a path that names nothing ---------------------------------------------------


def test_run_with_a_logs_path_that_does_not_exist_is_a_usage_error(tmp_path, memoir_home):
    missing = tmp_path / "no" / "such" / "logs"
    result = invoke("run", "--no-index", "--logs", str(FEEDCLI_LOG), "--logs", str(missing))
    assert result.exit_code == 2
    assert f"no such file or folder: {missing} (check --logs)" in result.output
    assert not (memoir_home / "cards").exists()  # nothing half-done: the good path was not read either


# --- index check: missing, cannot open, corrupt are three different answers ---------------------


def test_index_check_on_a_home_that_does_not_exist_says_so_and_what_to_run(tmp_path):
    home = tmp_path / "nonexistent"
    result = invoke("--home", str(home), "index", "check")
    assert result.exit_code == CHECK_EXIT["missing"] == 5
    assert f"no memoir home at {home}" in result.output and "memoir run" in result.output
    assert "healthy" not in result.output
    assert not home.exists()  # a check creates nothing


def test_index_check_on_an_empty_home_without_an_index_is_missing_not_healthy(tmp_path):
    home = tmp_path / "fresh"
    home.mkdir()
    result = invoke("--home", str(home), "index", "check")
    assert result.exit_code == 5 and "no index at" in result.output


def test_an_index_folder_that_is_a_file_cannot_be_opened_and_is_not_corrupt(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "index").write_text("not a folder\n")
    result = invoke("--home", str(home), "index", "check")
    assert result.exit_code == CHECK_EXIT["cannot_open"] == 4, result.output
    assert "cannot open" in result.output and "it is a file, not a folder" in result.output
    assert "index corrupt" not in result.output and "index rebuild" not in result.output
    assert (home / "index").read_text() == "not a folder\n"  # left exactly as it was
    status = invoke("--home", str(home), "status")
    assert "index      cannot open" in status.output


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop to uid 65534")
def test_an_index_another_user_cannot_read_is_cannot_open_for_that_user():
    # tmp_path lives under a 0700 folder uid 65534 cannot enter: use a world-searchable one.
    base = Path(tempfile.mkdtemp(prefix="memoir-perm-"))
    try:
        base.chmod(0o755)
        home = base / "home"
        (home / "index").mkdir(parents=True)
        (home / "index" / "index.db").write_bytes(b"")
        # root's home, which the other user is told to use anyway: the index itself must still be reported
        args = ["--home", str(home), "--allow-shared-home", "index", "check"]
        CliRunner().invoke(cli, args)  # as root first: every module the check needs is imported now
        (home / "index").chmod(0o700)  # root's: the other user cannot look inside

        def check() -> dict:
            out = CliRunner().invoke(cli, args, env={"HOME": str(base), "XDG_CONFIG_HOME": str(base / "cfg")})
            return {"code": out.exit_code, "output": out.output}

        answer = as_nobody(check, timeout_s=120)
        assert answer["code"] == 4, answer["output"]
        assert "cannot open" in answer["output"] and "Permission denied" in answer["output"]
        assert "index corrupt" not in answer["output"]
    finally:
        shutil.rmtree(base)


# --- a broken config: status says so, run refuses ---------------------------------------------


@pytest.fixture
def broken_config(tmp_path):
    path = tmp_path / "xdg-config" / "memoir" / "config.toml"  # where the autouse fixture points
    path.parent.mkdir(parents=True)
    path.write_text('min_score = "high"\n')
    return path


def test_status_still_runs_with_a_broken_config_names_the_file_and_exits_1(broken_config):
    result = invoke("status")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0].startswith("cards ")  # the rest of the report is there
    assert "config     BROKEN: setting 'min_score' has a bad value 'high'" in result.stdout
    assert f"config file {broken_config}" in result.stdout
    as_json = invoke("status", "--json")
    assert as_json.exit_code == 1
    data = json.loads(as_json.stdout)
    assert "min_score" in data["config"]["error"] and str(broken_config) in data["config"]["source"]


def test_a_sound_config_has_no_config_line_and_exits_0(tmp_path):
    path = tmp_path / "xdg-config" / "memoir" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text("min_score = 0.5\n")
    result = invoke("status")
    assert result.exit_code == 0 and "config     " not in result.output and "BROKEN" not in result.output


def test_run_refuses_a_broken_config_and_says_where_it_is(broken_config, memoir_home):
    result = invoke("run", "--no-index", "--logs", str(FEEDCLI_LOG))
    assert result.exit_code == 1
    assert str(broken_config) in result.output and "min_score" in result.output
    assert not (memoir_home / "cards").exists()


# --- a refused card write says why ------------------------------------------------------------


def test_write_cause_names_the_error_once_and_the_cards_folder():
    cards = Path("/h/cards")
    errors = ["[Errno 1] Operation not permitted: '/h/cards/.c-1.tmp'",
              "[Errno 1] Operation not permitted: '/h/cards/.c-2.tmp'",
              "[Errno 28] No space left on device: '/h/cards/.c-3.tmp'"]
    assert write_cause(errors, cards) == "Operation not permitted on /h/cards (and 1 other errors)"
    assert write_cause(["[Errno 13] Permission denied: '/elsewhere/x'"], cards) == "Permission denied on /elsewhere/x"
    assert write_cause(["disk on fire"], cards) == "disk on fire"
    assert write_cause([], cards) == "unknown error"


def _chattr_works(path: Path) -> bool:
    probe = path / "chattr-probe"
    probe.mkdir()
    try:
        ok = subprocess.run(["chattr", "+i", str(probe)], capture_output=True).returncode == 0
    except FileNotFoundError:
        return False
    if ok:
        subprocess.run(["chattr", "-i", str(probe)], check=True)
    probe.rmdir()
    return ok


@pytest.fixture
def immutable_cards(memoir_home, tmp_path):
    if not _chattr_works(tmp_path):
        pytest.skip("chattr +i is not supported on this filesystem")
    cards = memoir_home / "cards"
    cards.mkdir(parents=True)
    subprocess.run(["chattr", "+i", str(cards)], check=True)
    yield cards
    subprocess.run(["chattr", "-i", str(cards)], check=True)


def test_a_denied_card_write_names_the_cause_and_the_command_to_run_after(immutable_cards):
    result = invoke("run", "--no-index", "--logs", str(FEEDCLI_LOG))
    assert result.exit_code == 0, result.output  # nothing is lost: the cards wait in the queue
    assert "none written" in result.output
    assert f"card writes refused: Operation not permitted on {immutable_cards}" in result.output
    assert "then run `memoir replay`" in result.output
    assert list(immutable_cards.iterdir()) == []
    from memoir.flows.queue import OverflowQueue

    items = OverflowQueue(immutable_cards.parent / "queue").items("pending", "card_write")
    assert items and all("Operation not permitted" in i.last_error for i in items)


def test_the_hook_with_a_broken_config_exits_0_and_leaves_a_line_without_the_value(
        broken_config, tmp_path, monkeypatch):
    from memoir.flows import hook_client
    from memoir.flows.hook_calls import read_calls

    monkeypatch.delenv("MEMOIR_HOME")  # the slow path: the client resolves the config itself
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "why does the build fail",
                          "cwd": str(tmp_path), "session_id": "s1"}).encode()
    out = io.BytesIO()
    assert hook_client.hook_main(stdin=io.BytesIO(payload), stdout=out, count_startup=False) == 0
    assert out.getvalue() == b""  # the prompt goes on with nothing added
    calls = read_calls(str(tmp_path / "data" / "memoir" / "state"))
    assert [(c["event"], c["outcome"]) for c in calls] == [("config", "error")]
    assert str(broken_config) in calls[0]["detail"] and "high" not in calls[0]["detail"]


# --- a home that holds no library --------------------------------------------------------------------


def test_a_mistyped_home_warns_on_stderr_and_in_json_instead_of_showing_an_empty_library(tmp_path):
    typo = tmp_path / "memior"
    result = CliRunner().invoke(cli, ["--home", str(typo), "status", "--json"])
    assert result.exit_code == 0
    assert result.stderr.startswith(f"warning: {typo} does not exist")
    assert "does not exist" in json.loads(result.stdout)["warning"]
    empty = tmp_path / "empty"
    empty.mkdir()
    listed = CliRunner().invoke(cli, ["--home", str(empty), "cards", "list"])
    assert "holds no memoir library" in listed.stderr


def test_a_home_with_a_library_gives_no_warning(tmp_path):
    (tmp_path / "lib" / "cards").mkdir(parents=True)
    result = CliRunner().invoke(cli, ["--home", str(tmp_path / "lib"), "status", "--json"])
    assert result.stderr == "" and "warning" not in json.loads(result.stdout)


def test_a_mistyped_command_names_the_nearest_ones(memoir_home):
    result = CliRunner().invoke(cli, ["--home", str(memoir_home), "serch", "database is locked"])
    assert result.exit_code == 2
    assert "No such command 'serch'. Did you mean search" in result.output


def test_an_unknown_gate_is_a_usage_error_that_suggests_the_gate_meant(memoir_home):
    result = CliRunner().invoke(cli, ["--home", str(memoir_home), "review", "--gate", "verified_conclusio", "--json"])
    assert result.exit_code == 2
    assert "no gate is called 'verified_conclusio'; did you mean verified_conclusion" in result.output


def test_a_bulk_reject_lists_what_it_is_about_to_reject_before_asking(memoir_home):
    from memoir.cards.config import load_settings
    from memoir.cards.store import CardStore
    from memoir.cards.values import Card

    settings = load_settings(home=memoir_home)
    store = CardStore(settings.cards_dir, settings.state_dir)
    for i in range(3):
        store.write(Card(id=f"c-held{i}", title=f"held card number {i}", status="candidate", gate="verified_conclusion",
                         workspace="/home/dev/shop", created="2026-11-01T00:00:00Z", updated="2026-11-01T00:00:00Z",
                         conclusion="The worker needs a larger pool because two connections starve it.",
                         task_type="debug"))
    result = CliRunner().invoke(cli, ["--home", str(memoir_home), "review", "--reject-all"], input="n\n")
    assert result.exit_code == 1  # aborted: nothing rejected
    for i in range(3):
        assert f"c-held{i}" in result.output and f"held card number {i}" in result.output
    assert result.output.index("c-held2") < result.output.index("reject 3 held cards?")
    assert all(store.read(f"c-held{i}").status == "candidate" for i in range(3))
