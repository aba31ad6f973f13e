"""`memoir logs add|list|remove` and a plain `memoir run` reading registered Aider repositories."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from memoir.flows.cli.app import EXIT_FAILED, EXIT_USAGE
from memoir.flows.cli.main import cli

FIXTURES = Path(__file__).parent / "fixtures"
QUIRE = FIXTURES / "second_set" / "aider" / "quire" / ".aider.chat.history.md"
CLAUDE_LOG = next((FIXTURES / "hosts").glob("*.jsonl"))


@pytest.fixture
def user(tmp_path, memoir_home):
    """A user's home with no host logs, a config file with a comment, and a git repo."""
    home = tmp_path / "user"
    (home / "src" / "app" / ".git").mkdir(parents=True)
    config = tmp_path / "config.toml"
    config.write_text("# tuned by hand\nmax_injected = 1\n")
    env = {"HOME": str(home), "MEMOIR_CONFIG": str(config), "MEMOIR_HOME": str(memoir_home)}
    return home, config, env


def memoir(env: dict, *args: str):
    return CliRunner().invoke(cli, list(args), env=env)


def test_add_a_repo_before_aider_ran_there_then_list_shows_it_missing_then_found(user):
    home, config, env = user
    repo = home / "src" / "app"
    result = memoir(env, "logs", "add", str(repo))
    assert result.exit_code == 0, result.output
    assert "registered" in result.output and "not written yet" in result.output
    assert config.read_text().startswith("# tuned by hand\nmax_injected = 1\n")
    assert tomllib.loads(config.read_text()) == {"max_injected": 1, "aider_repos": [str(repo)]}

    rows = json.loads(memoir(env, "logs", "list", "--json").output)
    assert {r["host"] for r in rows} == {"claude-code", "codex", "aider", "gemini-cli", "copilot-cli", "cline",
                                         "opencode"}
    assert [r for r in rows if r["host"] == "aider"] == [
        {"host": "aider", "path": str(repo / ".aider.chat.history.md"), "exists": False, "files": 0}]
    assert not any(r["exists"] for r in rows)

    shutil.copy(QUIRE, repo / ".aider.chat.history.md")
    listed = memoir(env, "logs", "list").output
    assert f"aider        1 file      {repo / '.aider.chat.history.md'}" in listed
    again = memoir(env, "logs", "add", str(repo) + "/")
    assert again.exit_code == 0 and "already registered" in again.output
    assert tomllib.loads(config.read_text())["aider_repos"] == [str(repo)]


def test_list_counts_the_log_files_each_host_folder_holds(user):
    home, _, env = user
    chats = home / ".gemini" / "tmp" / "abc" / "chats"
    shutil.copytree(FIXTURES / "hosts" / "gemini" / "tmp" / next(iter(
        p.name for p in (FIXTURES / "hosts" / "gemini" / "tmp").iterdir())) / "chats", chats)
    rows = {r["host"]: r for r in json.loads(memoir(env, "logs", "list", "--json").output)}
    assert rows["gemini-cli"]["exists"] and rows["gemini-cli"]["files"] == 4
    assert not rows["copilot-cli"]["exists"] and rows["copilot-cli"]["files"] == 0
    assert "gemini-cli   4 files" in memoir(env, "logs", "list").output


def test_plain_run_reads_registered_repos_and_cards_take_the_repo_as_workspace(user, memoir_home):
    home, config, env = user
    repo = home / "src" / "app"
    shutil.copy(QUIRE, repo / ".aider.chat.history.md")
    before = json.loads(memoir(env, "run", "--no-index", "--json").output)
    assert before["files_seen"] == 0
    assert memoir(env, "logs", "add", str(repo)).exit_code == 0
    result = memoir(env, "run", "--no-index", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["files_read"] == 1 and summary["cards"].get("new", 0) >= 1
    cards = list((memoir_home / "cards").glob("*.md"))
    assert cards
    workspaces = {line.split(":", 1)[1].strip() for card in cards
                  for line in card.read_text().splitlines() if line.startswith("workspace:")}
    assert workspaces == {str(repo)}


def test_add_accepts_a_history_file_and_its_workspace_is_its_folder(user, memoir_home):
    home, config, env = user
    history = home / "work" / ".aider.chat.history.md"
    history.parent.mkdir()
    shutil.copy(QUIRE, history)
    assert memoir(env, "logs", "add", str(history)).exit_code == 0
    assert tomllib.loads(config.read_text())["aider_repos"] == [str(history)]
    assert json.loads(memoir(env, "run", "--no-index", "--json").output)["files_read"] == 1


@pytest.mark.parametrize("make, why", [
    (lambda home: home / "nowhere", "does not exist"),
    (lambda home: (home / "plain").mkdir() or home / "plain", "not a git repository"),
    (lambda home: shutil.copy(CLAUDE_LOG, home / "log.md") and home / "log.md", "does not look like an Aider"),
])
def test_add_refuses_what_holds_no_aider_history_and_writes_nothing(user, make, why):
    home, config, env = user
    before = config.read_text()
    result = memoir(env, "logs", "add", str(make(home)))
    assert result.exit_code == EXIT_USAGE
    assert why in result.output
    assert config.read_text() == before


def test_remove_forgets_the_repo_and_refuses_an_unknown_one(user):
    home, config, env = user
    repo = home / "src" / "app"
    assert memoir(env, "logs", "add", str(repo)).exit_code == 0
    result = memoir(env, "logs", "remove", str(repo))
    assert result.exit_code == 0 and "removed" in result.output
    assert tomllib.loads(config.read_text()) == {"max_injected": 1, "aider_repos": []}
    again = memoir(env, "logs", "remove", str(repo))
    assert again.exit_code == EXIT_FAILED and "not registered" in again.output


def test_a_broken_config_is_reported_and_left_as_it_is(user):
    home, config, env = user
    config.write_text("max_injected = = 1\n")
    result = memoir(env, "logs", "add", str(home / "src" / "app"))
    assert result.exit_code != 0 and str(config) in result.output
    assert config.read_text() == "max_injected = = 1\n"
