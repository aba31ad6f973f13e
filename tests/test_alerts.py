"""Alerts someone sees: a model incident makes `memoir run` exit 8 and runs `alert_command` once
per new incident, with the incident as JSON on stdin; a failing command never stops the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from memoir.cards.incidents import Incident, open_incidents, parse_line, raise_alert
from tests.flowlogs import T0, session_lines
from tests.openai_server import ScriptedServer, hang, slots

EXIT_INCIDENT = 8


def write_session(root: Path, n: int) -> Path:
    folder = root / "projects" / "-home-dev-alerts"
    folder.mkdir(parents=True, exist_ok=True)
    sid = f"a{n:05d}-0000-4000-8000-000000000000"
    (folder / f"{sid}.jsonl").write_text("".join(session_lines(sid, 1, T0)), encoding="utf-8")
    return root / "projects"


def memoir(home: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-c", "from memoir.flows.cli.main import main; main()", *args]
    return subprocess.run(cmd, env={**os.environ, "MEMOIR_HOME": str(home), **env},
                          capture_output=True, text=True, timeout=300)


def model_env(url: str, command: str) -> dict:
    return {"MEMOIR_MODEL_BASE_URL": url, "MEMOIR_MODEL_NAME": "scripted", "MEMOIR_MODEL_TIMEOUT_S": "1",
            "MEMOIR_ALERT_COMMAND": command}


def test_a_silent_model_exits_8_and_alerts_once_until_the_model_answers_again(tmp_path, memoir_home):
    out = tmp_path / "alerts.out"
    command = f"cat >> {out}"
    with ScriptedServer([hang()]) as silent:
        first = memoir(memoir_home, model_env(silent.url, command), "run", "--no-index", "--json",
                       "--logs", str(write_session(tmp_path / "logs", 1)))
        assert first.returncode == EXIT_INCIDENT, first.stderr
        assert any("model_alive_no_output" in a for a in json.loads(first.stdout)["alerts"])
        (alert,) = [json.loads(line) for line in out.read_text().splitlines()]
        assert alert["incident"] == "model_alive_no_output"
        assert alert["runbook"] == "runbooks/model-alive-no-output.md#model-alive-no-output"
        assert alert["home"] == str(memoir_home) and alert["detail"]
        # The same incident the next night: the run still exits 8, nobody is alerted twice.
        second = memoir(memoir_home, model_env(silent.url, command), "run", "--no-index", "--json",
                        "--logs", str(write_session(tmp_path / "logs", 2)))
        assert second.returncode == EXIT_INCIDENT
        assert len(out.read_text().splitlines()) == 1
    with ScriptedServer([slots()]) as answering:
        back = memoir(memoir_home, model_env(answering.url, command), "run", "--no-index",
                      "--logs", str(write_session(tmp_path / "logs", 3)))
        assert back.returncode == 0, back.stdout + back.stderr
    with ScriptedServer([hang()]) as silent_again:  # a new incident after the model came back: alerted
        again = memoir(memoir_home, model_env(silent_again.url, command), "run", "--no-index",
                       "--logs", str(write_session(tmp_path / "logs", 4)))
        assert again.returncode == EXIT_INCIDENT
        assert "incident  memoir incident model_alive_no_output" in again.stdout
    assert [json.loads(line)["incident"] for line in out.read_text().splitlines()] == ["model_alive_no_output"] * 2


def test_a_failing_alert_command_is_logged_and_the_run_goes_on(tmp_path, memoir_home):
    with ScriptedServer([hang()]) as silent:
        run = memoir(memoir_home, model_env(silent.url, "echo no mail server >&2; exit 3"), "run", "--no-index",
                     "--json", "--logs", str(write_session(tmp_path / "logs", 1)))
    assert run.returncode == EXIT_INCIDENT, run.stderr
    summary = json.loads(run.stdout)
    assert summary["cards"].get("new", 0) >= 1  # the cards were written all the same
    assert any("alert_command failed for incident model_alive_no_output: exited 3: no mail server" in n
               for n in summary["notes"])
    (logged,) = [json.loads(x) for x in (memoir_home / "state" / "alerts.jsonl").read_text().splitlines()]
    assert logged["ok"] is False and logged["incident"] == "model_alive_no_output"


def test_an_alert_line_reads_back_as_its_incident():
    line = raise_alert("endpoints_unavailable", "batch b: every endpoint failed; batch requeued")
    assert parse_line(line) == Incident("endpoints_unavailable", "batch b: every endpoint failed; batch requeued")
    assert parse_line("memoir incident no_such_thing: x; runbook r") is None


def test_an_incident_stays_open_through_runs_that_asked_the_model_nothing():
    silent = Incident("model_alive_no_output", "batch 1 timed out")
    first = open_incidents({}, [silent, silent], model_ran=True, now="d1")
    assert first.new == (silent,) and set(first.still_open) == {"model_alive_no_output"}
    idle = open_incidents(first.still_open, [], model_ran=False, now="d2")
    assert idle.new == () and set(idle.still_open) == {"model_alive_no_output"}
    healed = open_incidents(idle.still_open, [], model_ran=True, now="d3")
    assert healed.still_open == {}
    assert open_incidents(healed.still_open, [silent], model_ran=True, now="d4").new == (silent,)
