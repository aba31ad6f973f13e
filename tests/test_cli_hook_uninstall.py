"""`memoir hook uninstall claude-code`: only memoir's commands leave the settings file, with real files."""

from __future__ import annotations

import json
import subprocess

import pytest
from click.testing import CliRunner

from memoir.flows.cli.main import cli
from memoir.flows.cli.hook_settings import hook_command, plan_hook_removal

THEIRS = {"type": "command", "command": "~/bin/lint-prompt.sh", "timeout": 3}
OTHER_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test:*)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo pre"}]}],
        "UserPromptSubmit": [{"hooks": [THEIRS]}],
    },
}


def hook(*args, catch=False):
    return CliRunner().invoke(cli, ["hook", *args], catch_exceptions=catch)


@pytest.fixture
def settings_file(tmp_path):
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(OTHER_SETTINGS, indent=4))
    return path


def test_uninstall_takes_out_what_install_added_and_keeps_every_other_setting(settings_file):
    assert hook("install", "claude-code", "--settings", str(settings_file)).exit_code == 0
    assert "from hook_client import main" in settings_file.read_text()

    res = hook("uninstall", "claude-code", "--settings", str(settings_file))
    assert res.exit_code == 0, res.output
    assert "removed 2 memoir hook commands (UserPromptSubmit, SessionStart); other settings and hooks kept" in res.output
    assert json.loads(settings_file.read_text()) == OTHER_SETTINGS  # SessionStart was memoir's alone: gone

    before = settings_file.read_bytes()
    again = hook("uninstall", "claude-code", "--settings", str(settings_file))
    assert again.exit_code == 0 and "no memoir hooks found, nothing to change" in again.output
    assert settings_file.read_bytes() == before


def test_an_entry_shared_with_another_command_keeps_that_command_and_old_forms_go_too():
    old = {"type": "command", "command": "/usr/bin/python3 -m flows.recall_service claude-code", "timeout": 5}
    current = {"hooks": {
        "UserPromptSubmit": [{"hooks": [THEIRS, {"type": "command", "command": hook_command("/h")}]}],
        "SessionStart": [{"matcher": "startup", "hooks": [old]}, "not an entry"],
        "Stop": [{"hooks": [{"type": "command", "command": "memoir-notify done"}]}],
    }}
    after, removed = plan_hook_removal(current)
    assert removed == ["UserPromptSubmit", "SessionStart"]
    assert after == {"hooks": {
        "UserPromptSubmit": [{"hooks": [THEIRS]}],
        "SessionStart": ["not an entry"],
        "Stop": current["hooks"]["Stop"],
    }}
    assert current["hooks"]["UserPromptSubmit"][0]["hooks"][1]["command"] == hook_command("/h")  # input untouched
    only_ours = {"hooks": {"SessionStart": [{"hooks": [old]}]}, "theme": "dark"}
    assert plan_hook_removal(only_ours) == ({"theme": "dark"}, ["SessionStart"])
    assert plan_hook_removal({"hooks": "odd"}) == ({"hooks": "odd"}, [])


def test_uninstall_dry_run_shows_the_diff_and_writes_nothing(settings_file):
    hook("install", "claude-code", "--settings", str(settings_file))
    before = settings_file.read_bytes()
    res = hook("uninstall", "claude-code", "--settings", str(settings_file), "--dry-run")
    assert res.exit_code == 0
    assert "without memoir hooks" in res.output
    removed = [ln for ln in res.output.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    assert any("from hook_client import main" in ln for ln in removed)
    assert settings_file.read_bytes() == before


def test_uninstall_without_a_settings_file_creates_none(tmp_path):
    path = tmp_path / "settings.json"
    res = hook("uninstall", "claude-code", "--settings", str(path))
    assert res.exit_code == 0 and "no such file, so no memoir hooks to remove" in res.output
    assert not path.exists()


def test_uninstall_leaves_a_broken_settings_file_as_it_is(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text('{"hooks": ')
    res = hook("uninstall", "claude-code", "--settings", str(path), catch=True)
    assert res.exit_code == 2 and "fix the file first, nothing was changed" in res.output
    assert path.read_text() == '{"hooks": '


def test_uninstall_that_cannot_write_says_so_and_changes_nothing(settings_file):
    hook("install", "claude-code", "--settings", str(settings_file))
    before = settings_file.read_bytes()
    subprocess.run(["chattr", "+i", str(settings_file)], check=True)
    try:
        res = hook("uninstall", "claude-code", "--settings", str(settings_file), catch=True)
    finally:
        subprocess.run(["chattr", "-i", str(settings_file)], check=True)
    assert res.exit_code == 1 and f"cannot write {settings_file}" in res.output
    assert settings_file.read_bytes() == before
    assert sorted(p.name for p in settings_file.parent.iterdir()) == ["settings.json"]  # no temp file left
