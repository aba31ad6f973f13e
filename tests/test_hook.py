"""The Claude Code hook through real subprocesses (the installed command), and the recall service."""

from __future__ import annotations

import fcntl
import json
import re
import os
import shlex
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from memoir.flows import hook_client
from memoir.flows.hook_calls import read_calls
from memoir.cards.config import load_settings
from memoir.flows.cli.main import cli
from memoir.flows.cli.hook_settings import hook_command
from memoir.flows.recall_service import RecallService, ask, request_budget, serve, socket_path
from memoir.flows.status_sections import recall_section
from memoir.index.embed import default_embedder
from memoir.index.recall_log import read_records
from tests.recall_cards import BASE, QUERY, WORKSPACE, index_cards, settings_for

ROOT = Path(__file__).resolve().parent.parent
HOOK = shlex.split(hook_command(None))  # exactly what `memoir hook install claude-code` writes


@pytest.fixture(scope="module")
def embedder():
    e = default_embedder()
    e.encode_one("warm up")
    return e


@pytest.fixture
def home(memoir_home, embedder):
    index_cards(settings_for(memoir_home), embedder, [BASE])
    return memoir_home


@pytest.fixture
def starting(home):
    """Hold the service lock as a starting service does: a cold hook then starts no other service."""
    state = Path(home) / "state"
    state.mkdir(parents=True, exist_ok=True)
    fd = os.open(state / hook_client.LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    yield state
    os.close(fd)


def prompt_event(prompt=QUERY, session="sess-hook-1"):
    return json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": prompt, "session_id": session,
                       "cwd": WORKSPACE, "transcript_path": "/tmp/t.jsonl"})


def run_hook(home, stdin: str, cmd=HOOK, budget_ms: int | None = 15_000, cwd=ROOT, env=None):
    env = {**os.environ, "MEMOIR_HOME": str(home), **(env or {})}
    if budget_ms is not None:
        env["MEMOIR_SYNC_TIMEOUT_MS"] = str(budget_ms)  # wide, for a slow machine; the default is tested below
        env["MEMOIR_SESSION_START_BUDGET_MS"] = str(max(budget_ms, 3000))
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, cwd=cwd, env=env, timeout=60)


def context_of(out) -> tuple[str, str]:
    data = json.loads(out.stdout)
    spec = data["hookSpecificOutput"]
    return spec["hookEventName"], spec["additionalContext"]


def calls(home) -> list[dict]:
    return read_calls(str(Path(home) / "state"))


def test_the_installed_command_runs_the_hook_client_isolated_by_absolute_path():
    assert HOOK[1:4] == ["-I", "-S", "-c"] and HOOK[-1] == "claude-code"
    folder = re.search(r'sys\.path\.append\("([^"]+)"\)', HOOK[4]).group(1)
    assert Path(folder).is_absolute() and (Path(folder) / "hook_client.py").is_file()
    assert HOOK[4].endswith("from hook_client import main; main()")


def test_a_cold_prompt_answers_nothing_at_once_and_records_the_cold_start(home, starting):
    out = run_hook(home, prompt_event())
    assert out.returncode == 0 and out.stdout == "" and out.stderr == ""
    (call,) = calls(home)
    assert call["event"] == "UserPromptSubmit" and call["outcome"] == "cold_start"
    assert "still loading" in call["detail"]
    assert read_records(Path(home) / "state") == []  # nothing recalled in the hook's process


def test_a_project_with_its_own_flows_and_cards_packages_cannot_shadow_the_hook(home, starting, tmp_path):
    project = tmp_path / "prefect-project"
    for pkg in ("flows", "cards", "index"):
        (project / pkg).mkdir(parents=True)
        (project / pkg / "__init__.py").write_text("raise SystemExit(1)\n")
        (project / pkg / "recall_service.py").write_text("raise SystemExit(1)\n")
        (project / pkg / "config.py").write_text("raise SystemExit(1)\n")
    (project / "json.py").write_text("raise SystemExit(1)\n")
    out = run_hook(home, prompt_event(), cwd=project, env={"PYTHONPATH": str(project)})
    assert out.returncode == 0, out.stderr
    assert [c["outcome"] for c in calls(home)] == ["cold_start"]


def test_a_stalled_host_is_cut_off_at_the_budget_and_the_timeout_is_recorded(home):
    env = {k: v for k, v in os.environ.items() if k != "MEMOIR_SYNC_TIMEOUT_MS"}
    stalled = subprocess.Popen(HOOK, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, cwd=ROOT, env={**env, "MEMOIR_HOME": str(home)})
    stalled.stdin.write(prompt_event())  # ... and stdin is never closed
    stalled.stdin.flush()
    try:
        code = stalled.wait(timeout=60)  # a generous limit: it only catches a hook that never ends
    finally:
        stalled.kill()
        stalled.stdin.close()
    assert code == 0 and stalled.stdout.read() == "" and stalled.stderr.read() == ""
    assert [c["outcome"] for c in calls(home)] == ["timeout"]


def test_a_cold_session_start_prints_the_brief_from_the_index(home, starting):
    out = run_hook(home, json.dumps({"hook_event_name": "SessionStart", "source": "startup",
                                     "session_id": "s", "cwd": WORKSPACE}), cmd=HOOK + ["SessionStart"])
    event, context = context_of(out)
    assert event == "SessionStart" and "Session brief for shop" in context and BASE.id in context
    assert calls(home)[-1]["outcome"] == "cold_start"


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", json.dumps({"hook_event_name": "Stop"}),
                                   prompt_event(prompt="   ")])
def test_anything_else_exits_0_with_no_output_and_no_record(home, starting, stdin):
    out = run_hook(home, stdin)
    assert out.returncode == 0 and out.stdout == "" and out.stderr == ""
    assert calls(home) == []


def test_the_cli_recall_waits_for_the_answer_whatever_the_hook_budget(home, monkeypatch):
    monkeypatch.setenv("MEMOIR_SYNC_TIMEOUT_MS", "1")  # the hook's budget: not the person's
    res = CliRunner().invoke(cli, ["recall", QUERY, "--workspace", WORKSPACE, "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert [c["id"] for c in data["cards"]] == [BASE.id]


# --- the service ---------------------------------------------------------------------------------------------


def test_the_service_answers_with_the_callers_settings(home, embedder):
    settings = load_settings(home=home)
    service = RecallService(settings, embedder)
    try:
        base = {"op": "recall", "query": QUERY, "workspace": WORKSPACE, "budget_ms": 60_000}
        mine = service.handle({**base, "session_id": "a", "settings": {"home": str(settings.home)}})
        assert BASE.id in mine["context"] and mine["record"]["policy"]["max_injected"] == 2
        strict = service.handle({**base, "session_id": "b", "settings": {"home": str(settings.home),
                                                                          "min_score": 0.999, "max_injected": 1}})
        assert strict["ok"] and strict["record"]["policy"] | {} == {**mine["record"]["policy"], "min_similarity": 0.999,
                                                                   "max_injected": 1}
        # The hook's fast path sends its environment; the service resolves it with load_settings,
        # and the deadline is the caller's budget counted from the caller's start.
        env = {"MEMOIR_HOME": str(settings.home), "MEMOIR_MAX_INJECTED": "1", "MEMOIR_SYNC_TIMEOUT_MS": "250"}
        fast = service.handle({**base, "session_id": "c", "env": env, "started_at": time.time()})
        assert fast["ok"] and fast["record"]["policy"]["max_injected"] == 1
        # The deadline arithmetic, on a pinned clock (no wall-clock bound on a busy machine):
        margins = hook_client.OUTPUT_MARGIN_MS + hook_client.SERVICE_MARGIN_MS
        request = {**base, "env": env, "started_at": 1000.0}
        resolved = load_settings(env=env)  # what the service resolves from the hook's environment
        assert resolved.sync_timeout_ms == 250
        assert request_budget(request, resolved, now=1000.05) == pytest.approx(250 - 50 - margins)
        assert request_budget(request, resolved, now=1010.0) == 0.0  # spent before the service saw it
        assert request_budget({**base}, resolved, now=1000.05) == 60_000  # no start sent: the caller's own
        moved = service.handle({**base, "env": {**env, "MEMOIR_HOME": "/somewhere/else"}, "started_at": time.time()})
        assert not moved["ok"] and "/somewhere/else" in moved["error"]
        other = service.handle({**base, "settings": {"home": "/somewhere/else"}})
        assert not other["ok"] and "/somewhere/else" in other["error"] and "serve-recall" in other["error"]
    finally:
        service.close()


def test_the_service_answers_while_another_connection_is_still_sending(home, embedder):
    settings = load_settings(home=home)
    ready = threading.Event()
    server = threading.Thread(target=serve, args=(settings, embedder),
                              kwargs={"idle_exit_s": 3.0, "on_ready": lambda p: ready.set()}, daemon=True)
    server.start()
    assert ready.wait(60)
    path = socket_path(settings.state_dir)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert oct(settings.state_dir.stat().st_mode & 0o777) == "0o700"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as slow:
        slow.connect(str(path))
        slow.sendall(b'{"op": "pi')  # ... and the rest never comes (yet)
        answer = ask(settings.state_dir, {"op": "recall", "query": QUERY, "workspace": WORKSPACE,
                                          "budget_ms": 60_000}, 30)
        assert answer is not None and BASE.id in answer["context"]
        # Served one after another, the slow connection would have been answered (with an error) and
        # closed before the recall was read; it is still open, waiting.
        slow.setblocking(False)
        with pytest.raises(BlockingIOError):
            slow.recv(10)
    server.join(60)
    assert not server.is_alive() and not path.exists()


@pytest.mark.slow
def test_a_cold_hook_starts_the_service_and_later_prompts_are_answered_semantically(home):
    state = Path(home) / "state"
    first = run_hook(home, prompt_event())
    assert first.returncode == 0 and first.stdout == ""
    assert calls(home)[-1]["outcome"] == "cold_start" and "started the recall service" in calls(home)[-1]["detail"]
    pid = int((state / hook_client.LOCK_NAME).read_text())  # written by the hook that started it, at once
    try:
        while ask(state, {"op": "ping"}, 1.0) is None:  # a service that never warms meets pytest's timeout
            assert Path(f"/proc/{pid}").exists(), (state / hook_client.SERVICE_LOG).read_text()  # it died
            time.sleep(0.2)
        # A paraphrase with few shared words: only the semantic path finds it.
        out = run_hook(home, prompt_event(prompt="hot reload broken in my docker dev container on macOS"))
        assert out.returncode == 0, out.stderr
        assert BASE.id in context_of(out)[1]
        assert read_records(state)[-1]["mode"] == "semantic"
        # The same card is not injected twice into one session.
        again = run_hook(home, prompt_event(prompt="hot reload broken in my docker dev container on macOS"))
        assert again.stdout == ""
        assert read_records(state)[-1]["candidates"][0]["gate"] == "AlreadyInjected"
        # The caller's settings travel with the request: the service started with the defaults.
        run_hook(home, prompt_event(session="sess-hook-3"), env={"MEMOIR_MAX_INJECTED": "1"})
        assert read_records(state)[-1]["policy"]["max_injected"] == 1
        # `memoir hook claude-code` is the same hook through the CLI.
        memoir = str(Path(HOOK[0]).parent / "memoir")
        cli_out = run_hook(home, prompt_event(session="sess-hook-2"), cmd=[memoir, "hook", "claude-code"])
        assert BASE.id in context_of(cli_out)[1]
        brief = run_hook(home, json.dumps({"hook_event_name": "SessionStart", "cwd": WORKSPACE}))
        assert "Session brief" in context_of(brief)[1]
        outcomes = [c["outcome"] for c in calls(home)]
        assert outcomes == ["cold_start", "injected", "empty", "injected", "injected", "injected"]
        section = recall_section(load_settings(home=home))
        assert section.data["hook"]["cold_start"] == 1 and section.data["hook"]["injected"] == 4
        assert "1 cold starts" in section.lines[0]
    finally:
        if pid:
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    while socket_path(state).exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not socket_path(state).exists()


# --- hook install --------------------------------------------------------------------------------------


def install(*args):
    return CliRunner().invoke(cli, ["hook", "install", "claude-code", *args], catch_exceptions=False)


def test_install_dry_run_shows_a_diff_and_writes_nothing(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"model": "opus"}))
    res = install("--settings", str(path), "--dry-run")
    assert res.exit_code == 0
    assert "+++" in res.output and '"UserPromptSubmit"' in res.output and "from hook_client import main" in res.output
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
    assert ups["hooks"][0]["command"].endswith("main()' claude-code") and " -I -S -c " in ups["hooks"][0]["command"]
    assert ss["matcher"] == "startup|resume|clear|compact"
    # The session start's command names its event: its watchdog gets the brief's seconds before the event is read.
    assert ss["hooks"][0]["command"] == ups["hooks"][0]["command"] + " SessionStart"
    before = path.read_bytes()
    res = install("--settings", str(path))
    assert "already installed" in res.output and path.read_bytes() == before


def installed_commands(tmp_path, home) -> dict[str, str]:
    """The commands `memoir hook install claude-code` writes into a settings file, by event."""
    path = tmp_path / "installed" / "settings.json"
    res = CliRunner().invoke(cli, ["--home", str(home), "hook", "install", "claude-code", "--settings", str(path)],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return {event: entries[0]["hooks"][0]["command"] for event, entries in json.loads(path.read_text())["hooks"].items()}


def stalled_watchdog(home, command: str, **budgets: str) -> dict:
    """Run an installed command as Claude Code does (a shell), with stdin never closed: the record its watchdog leaves."""
    env = {**os.environ, **budgets}
    proc = subprocess.Popen(["/bin/sh", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env, start_new_session=True)
    try:
        code = proc.wait(timeout=30)  # a generous limit: it only catches a watchdog armed with the wrong budget
        out, err = proc.stdout.read(), proc.stderr.read()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.stdin.close()
        proc.stdout.close()
        proc.stderr.close()
    assert code == 0 and out == "" and err == ""
    (call,) = calls(home)
    assert call["outcome"] == "timeout" and call["detail"] == "the hook's watchdog fired"
    return call


def test_the_installed_session_start_command_arms_the_briefs_budget_before_reading_the_event(tmp_path, memoir_home):
    commands = installed_commands(tmp_path, memoir_home)
    assert commands["SessionStart"].endswith(" claude-code SessionStart")
    # The prompt's budget is tiny here: a watchdog armed with it would fire at once. setitimer never fires early,
    # so the record's `ms` at or past the brief's budget shows that budget was armed from the start.
    call = stalled_watchdog(memoir_home, commands["SessionStart"], MEMOIR_SYNC_TIMEOUT_MS="50",
                            MEMOIR_SESSION_START_BUDGET_MS="1500")
    assert call["ms"] >= 1499


def test_an_older_command_naming_no_event_keeps_the_prompts_budget_until_the_event_is_read(tmp_path, memoir_home):
    commands = installed_commands(tmp_path, memoir_home)
    older = commands["UserPromptSubmit"]  # what SessionStart ran before the command named its event
    assert commands["SessionStart"] == older + " SessionStart"
    # The brief's budget is a minute: only the prompt's (50 ms) can end the stalled hook within the wait.
    stalled_watchdog(memoir_home, older, MEMOIR_SYNC_TIMEOUT_MS="50", MEMOIR_SESSION_START_BUDGET_MS="60000")


def test_install_refuses_a_file_that_is_not_json(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text("{ not json")
    res = CliRunner().invoke(cli, ["hook", "install", "claude-code", "--settings", str(path)])
    assert res.exit_code == 2 and path.read_text() == "{ not json"


def test_install_replaces_the_old_shadowable_command(tmp_path):
    path = tmp_path / "settings.json"
    old = {"type": "command", "command": "/usr/bin/python3 -m flows.recall_service claude-code", "timeout": 5}
    path.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [old]}]}}))
    assert install("--settings", str(path)).exit_code == 0
    (ups,) = json.loads(path.read_text())["hooks"]["UserPromptSubmit"]
    (hook,) = ups["hooks"]
    assert hook["command"].endswith(" -I -S " + hook_command(None).split(" -I -S ")[1])


def test_an_errors_text_is_sanitized_before_it_reaches_hook_jsonl(tmp_path):
    state = str(tmp_path / "state")
    hook_client.record_call(state, "UserPromptSubmit", "error", 3.0,
                            "OSError: [Errno 13] Permission denied: '/home/jane.doe@corp.com/.local/share/memoir/x'")
    hook_client.record_call(state, "UserPromptSubmit", "cold_start", 3.0, "the recall service is still loading the model")
    calls = read_calls(state)
    assert "jane.doe@corp.com" not in (tmp_path / "state" / hook_client.HOOK_LOG).read_text()
    assert calls[0]["detail"].startswith("OSError: [Errno 13] Permission denied: '/home/")
    assert calls[1]["detail"] == "the recall service is still loading the model"
