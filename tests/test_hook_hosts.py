"""The hooks of Gemini CLI and Copilot CLI: installed like Claude Code's, answered by the same client."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from click.testing import CliRunner

from memoir.flows.cli.hook_settings import hook_command
from memoir.flows.hook_client import hook_output
from memoir.flows.cli.main import cli
from tests.recall_cards import BASE, QUERY, WORKSPACE
from tests.test_hook import calls, context_of, embedder, home, run_hook, starting  # noqa: F401 - fixtures

THEIRS = {"type": "command", "command": "echo theirs"}


def _invoke(*args: str):
    res = CliRunner().invoke(cli, list(args))
    assert res.exit_code == 0, res.output
    return res


def test_gemini_install_adds_before_agent_and_session_start_in_ms_and_keeps_other_hooks(tmp_path):
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"theme": "dark", "hooks": {"BeforeAgent": [{"hooks": [THEIRS]}]}}))
    _invoke("--home", str(tmp_path / "h"), "hook", "install", "gemini-cli", "--settings", str(settings))
    data = json.loads(settings.read_text())
    assert data["theme"] == "dark"
    before = data["hooks"]["BeforeAgent"]
    assert before[0] == {"hooks": [THEIRS]}
    ours = before[1]["hooks"][0]
    assert ours["command"].endswith(" gemini-cli") and ours["timeout"] == 5000  # Gemini counts milliseconds
    assert data["hooks"]["SessionStart"][0]["hooks"][0]["timeout"] == 10000
    assert data["hooks"]["SessionStart"][0]["hooks"][0]["command"] == ours["command"] + " SessionStart"
    # Gemini matches a lifecycle event's matcher as an exact string: none, so every start gets the brief.
    assert "matcher" not in data["hooks"]["SessionStart"][0]
    again = _invoke("--home", str(tmp_path / "h"), "hook", "install", "gemini-cli", "--settings", str(settings))
    assert "already installed" in again.output
    _invoke("hook", "uninstall", "gemini-cli", "--settings", str(settings))
    assert json.loads(settings.read_text()) == {"theme": "dark", "hooks": {"BeforeAgent": [{"hooks": [THEIRS]}]}}


def test_copilot_install_writes_its_own_hook_file_and_uninstall_deletes_it(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _invoke("--home", str(tmp_path / "h"), "hook", "install", "copilot-cli", "--repo", str(repo))
    path = repo / ".github" / "hooks" / "memoir.json"
    data = json.loads(path.read_text())
    # userPromptSubmitted's answer is dropped by Copilot CLI; userPromptTransformed's is used.
    assert data["version"] == 1 and set(data["hooks"]) == {"userPromptTransformed", "sessionStart"}
    prompt = data["hooks"]["userPromptTransformed"][0]
    assert prompt["type"] == "command" and prompt["timeoutSec"] == 5
    assert prompt["bash"].endswith(" copilot-cli userPromptTransformed")
    assert data["hooks"]["sessionStart"][0]["bash"].endswith(" copilot-cli sessionStart")
    _invoke("hook", "uninstall", "copilot-cli", "--repo", str(repo))
    assert not path.exists()


def test_copilot_install_without_a_repo_writes_the_user_level_hook_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    _invoke("--home", str(tmp_path / "h"), "hook", "install", "copilot-cli")
    path = tmp_path / ".copilot" / "hooks" / "memoir.json"
    assert set(json.loads(path.read_text())["hooks"]) == {"userPromptTransformed", "sessionStart"}
    _invoke("hook", "uninstall", "copilot-cli")
    assert not path.exists()


def test_copilot_answers_in_its_documented_shapes_and_claude_and_gemini_in_theirs():
    block = "<memoir-context>a card</memoir-context>"
    assert json.loads(hook_output("sessionStart", block, "copilot-cli")) == {"additionalContext": block}
    rewritten = json.loads(hook_output("userPromptTransformed", block, "copilot-cli",
                                       {"prompt": "fix it", "transformedPrompt": "fix it (model-facing)"}))
    assert rewritten == {"modifiedTransformedPrompt": f"fix it (model-facing)\n\n{block}"}
    assert hook_output("userPromptTransformed", block, "copilot-cli", {"prompt": "p"}) == ""  # nothing to extend
    for host, event in (("claude-code", "UserPromptSubmit"), ("gemini-cli", "BeforeAgent")):
        assert json.loads(hook_output(event, block, host)) == {
            "hookSpecificOutput": {"hookEventName": event, "additionalContext": block}}
    assert hook_output("sessionStart", "", "copilot-cli") == ""


def test_copilot_install_never_overwrites_someone_elses_hook_file(tmp_path):
    path = tmp_path / ".github" / "hooks" / "memoir.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"version": 1, "hooks": {"sessionStart": [{"type": "command", "bash": "echo hi"}]}}))
    res = CliRunner().invoke(cli, ["hook", "install", "copilot-cli", "--repo", str(tmp_path)])
    assert res.exit_code == 2 and "not memoir's" in res.output
    assert "echo hi" in path.read_text()


def test_a_gemini_session_start_gets_the_brief_and_a_cold_prompt_is_recorded_under_its_event(home, starting):
    cmd = shlex.split(hook_command(None, "gemini-cli"))
    out = run_hook(home, json.dumps({"hook_event_name": "SessionStart", "source": "startup", "session_id": "g",
                                     "cwd": WORKSPACE}), cmd=cmd + ["SessionStart"])  # as installed: the event named
    event, context = context_of(out)
    assert event == "SessionStart" and BASE.id in context
    out = run_hook(home, json.dumps({"hook_event_name": "BeforeAgent", "prompt": QUERY, "session_id": "g",
                                     "cwd": WORKSPACE}), cmd=cmd)
    assert out.returncode == 0 and out.stdout == ""
    assert [(c["event"], c["outcome"]) for c in calls(home)][-1] == ("BeforeAgent", "cold_start")


def test_copilot_events_named_by_the_command_are_answered_and_others_ignored(home, starting):
    cmd = shlex.split(hook_command(None, "copilot-cli"))
    # camelCase payloads carry no event name: the installed command names it after the host.
    out = run_hook(home, json.dumps({"sessionId": "c", "timestamp": 1775000000000, "cwd": WORKSPACE,
                                     "source": "startup"}), cmd=cmd + ["sessionStart"])
    assert BASE.id in json.loads(out.stdout)["additionalContext"]
    cold = run_hook(home, json.dumps({"sessionId": "c", "cwd": WORKSPACE, "prompt": QUERY, "transformedPrompt": QUERY}),
                    cmd=cmd + ["userPromptTransformed"])
    assert cold.returncode == 0 and cold.stdout == ""
    assert [(c["event"], c["outcome"]) for c in calls(home)][-1] == ("userPromptTransformed", "cold_start")
    for ignored in ({"hook_event_name": "BeforeAgent", "prompt": QUERY, "cwd": WORKSPACE},
                    {"hook_event_name": "UserPromptSubmit", "prompt": QUERY, "cwd": WORKSPACE}):
        assert run_hook(home, json.dumps(ignored), cmd=cmd).stdout == ""  # its answer would be dropped: not asked
