"""The Claude Code hook through real subprocesses, with the recall service running and not running."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from flows import commands  # noqa: F401  (registers the subcommands)
from flows.cli import cli
from flows.recall_service import ask, socket_path
from index.embed import default_embedder
from index.recall import read_records
from tests.recall_cards import BASE, QUERY, WORKSPACE, index_cards, settings_for

ROOT = Path(__file__).resolve().parent.parent
MEMOIR = str(Path(sys.executable).parent / "memoir")
HOOK = [sys.executable, "-m", "flows.recall_service", "claude-code"]


@pytest.fixture(scope="module")
def embedder():
    e = default_embedder()
    e.encode_one("warm up")
    return e


@pytest.fixture
def home(memoir_home, embedder):
    index_cards(settings_for(memoir_home), embedder, [BASE])
    return memoir_home


def prompt_event(prompt=QUERY, session="sess-hook-1"):
    return json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": prompt, "session_id": session,
                       "cwd": WORKSPACE, "transcript_path": "/tmp/t.jsonl"})


def run_hook(home, stdin: str, cmd=HOOK, budget_ms: int | None = 15_000):
    env = {**os.environ, "MEMOIR_HOME": str(home)}
    if budget_ms is not None:
        env["MEMOIR_SYNC_TIMEOUT_MS"] = str(budget_ms)  # wide, for a slow machine; the default is tested below
    started = time.perf_counter()
    out = subprocess.run(cmd, input=stdin, capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    return out, time.perf_counter() - started


def context_of(out) -> tuple[str, str]:
    data = json.loads(out.stdout)
    spec = data["hookSpecificOutput"]
    return spec["hookEventName"], spec["additionalContext"]


def test_without_the_service_the_hook_answers_lexical_only(home):
    out, _ = run_hook(home, prompt_event())
    assert out.returncode == 0, out.stderr
    event, context = context_of(out)
    assert event == "UserPromptSubmit"
    assert BASE.id in context and context.startswith("<memoir-context")
    assert read_records(Path(home) / "state")[-1]["mode"] == "lexical"


def test_without_the_service_the_hook_stays_within_the_default_budget(home):
    budget = settings_for(home).sync_timeout_ms
    out, _ = run_hook(home, prompt_event(), budget_ms=None)
    assert out.returncode == 0 and out.stderr == ""
    # No wall-clock bound: interpreter start-up alone can pass a second on a slow machine. Pinned
    # instead: start-up is charged to the default budget, so a recall the hook got to run was given
    # less than all of it ...
    assert all(r["budget_ms"] < budget for r in read_records(Path(home) / "state"))
    # ... and the watchdog ends the hook at that budget even when the host never closes stdin.
    env = {k: v for k, v in os.environ.items() if k != "MEMOIR_SYNC_TIMEOUT_MS"}
    stalled = subprocess.Popen(HOOK, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, cwd=ROOT, env={**env, "MEMOIR_HOME": str(home)})
    stalled.stdin.write(prompt_event())
    stalled.stdin.flush()
    try:
        code = stalled.wait(timeout=60)  # a generous limit: it only catches a hook that never ends
    finally:
        stalled.kill()
        stalled.stdin.close()
    assert code == 0 and stalled.stdout.read() == "" and stalled.stderr.read() == ""


def test_session_start_prints_the_workspace_brief(home):
    out, _ = run_hook(home, json.dumps({"hook_event_name": "SessionStart", "source": "startup",
                                        "session_id": "s", "cwd": WORKSPACE}))
    event, context = context_of(out)
    assert event == "SessionStart" and "Session brief for shop" in context and BASE.id in context


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", json.dumps({"hook_event_name": "Stop"}),
                                   prompt_event(prompt="   "), prompt_event(prompt="center a div with flexbox")])
def test_anything_else_exits_0_with_no_output(home, stdin):
    out, _ = run_hook(home, stdin)
    assert out.returncode == 0 and out.stdout == ""


def test_a_broken_index_never_fails_the_prompt(home):
    (Path(home) / "index" / "index.db").write_bytes(b"garbage" * 1000)
    out, _ = run_hook(home, prompt_event())
    assert out.returncode == 0 and out.stdout == ""


@pytest.mark.slow
def test_with_the_service_running_the_hook_answers_semantically(home):
    env = {**os.environ, "MEMOIR_HOME": str(home)}
    service = subprocess.Popen([MEMOIR, "serve-recall"], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    state = Path(home) / "state"
    try:
        deadline = time.monotonic() + 120
        while ask(state, {"op": "ping"}, 1.0) is None:
            assert service.poll() is None, service.stderr.read()
            assert time.monotonic() < deadline, "service did not come up"
            time.sleep(0.2)
        # A paraphrase with few shared words: only the semantic path finds it.
        out, _ = run_hook(home, prompt_event(prompt="hot reload broken in my docker dev container on macOS"))
        assert out.returncode == 0, out.stderr
        assert BASE.id in context_of(out)[1]
        assert read_records(state)[-1]["mode"] == "semantic"
        # The same card is not injected twice into one session.
        again, _ = run_hook(home, prompt_event(prompt="hot reload broken in my docker dev container on macOS"))
        assert again.stdout == ""
        assert read_records(state)[-1]["candidates"][0]["gate"] == "AlreadyInjected"
        # `memoir hook claude-code` is the same hook through the CLI.
        cli_out, _ = run_hook(home, prompt_event(session="sess-hook-2"), cmd=[MEMOIR, "hook", "claude-code"])
        assert BASE.id in context_of(cli_out)[1]
        brief, _ = run_hook(home, json.dumps({"hook_event_name": "SessionStart", "cwd": WORKSPACE}))
        assert "Session brief" in context_of(brief)[1]
        assert oct(socket_path(state).stat().st_mode & 0o777) == "0o600"
    finally:
        service.terminate()
        service.wait(timeout=30)
    assert not socket_path(state).exists()


# --- hook install --------------------------------------------------------------------------------------


def install(*args):
    return CliRunner().invoke(cli, ["hook", "install", "claude-code", *args], catch_exceptions=False)


def test_install_dry_run_shows_a_diff_and_writes_nothing(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"model": "opus"}))
    res = install("--settings", str(path), "--dry-run")
    assert res.exit_code == 0
    assert "+++" in res.output and '"UserPromptSubmit"' in res.output and "flows.recall_service" in res.output
    assert json.loads(path.read_text()) == {"model": "opus"}


def test_install_keeps_other_settings_and_is_idempotent(tmp_path):
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    other = {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo pre"}]}
    path.write_text(json.dumps({"model": "opus", "hooks": {"PreToolUse": [other]}}))
    assert install("--settings", str(path)).exit_code == 0
    data = json.loads(path.read_text())
    assert data["model"] == "opus" and data["hooks"]["PreToolUse"] == [other]
    (ups,) = data["hooks"]["UserPromptSubmit"]
    (ss,) = data["hooks"]["SessionStart"]
    assert ups["hooks"][0]["command"].endswith("-m flows.recall_service claude-code")
    assert ss["matcher"] == "startup|resume|clear|compact"
    before = path.read_bytes()
    res = install("--settings", str(path))
    assert "already installed" in res.output and path.read_bytes() == before


def test_install_refuses_a_file_that_is_not_json(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text("{ not json")
    res = CliRunner().invoke(cli, ["hook", "install", "claude-code", "--settings", str(path)])
    assert res.exit_code == 2 and path.read_text() == "{ not json"
