"""Incidents a `memoir replay` meets take a run's path: `memoir status` shows them, `alert_command` runs
once per new one, and the replay exits 8. Real HTTP: a local OpenAI-compatible server that fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from memoir.cards.collect import collect
from memoir.cards.config import load_settings
from memoir.flows.ingest import plan_experiences
from memoir.flows.queue import OverflowQueue
from memoir.flows.replay import queue_distill_batch
from tests.flowlogs import write_corpus
from tests.openai_server import ScriptedServer, content, hang, slots, status

EXIT_INCIDENT = 8


def memoir(home: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-c", "from memoir.flows.cli.main import main; main()", "--home", str(home), *args]
    return subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True, timeout=300)


def model_env(url: str, alerts_out: Path) -> dict:
    return {"MEMOIR_MODEL_BASE_URL": url, "MEMOIR_MODEL_NAME": "scripted", "MEMOIR_MODEL_TIMEOUT_S": "1",
            "MEMOIR_ALERT_COMMAND": f"cat >> {alerts_out}"}


@pytest.fixture
def queued(tmp_path, memoir_home):
    """A distill batch the overflow queue holds, as a run leaves it when the model was down."""
    settings = load_settings(home=memoir_home)
    pairs = plan_experiences(collect([write_corpus(tmp_path / "logs", sessions=1, loops=2)]).sessions,
                             settings, Counter())
    queue_distill_batch(OverflowQueue(settings.queue_dir), "run-batch-0001", pairs, reason="endpoints unavailable")
    return settings


def _alerts(path: Path) -> list[str]:
    return [json.loads(line)["incident"] for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize("failure, incident", [
    (status(503, "overloaded"), "endpoints_unavailable"),  # the endpoint answers nothing but errors
    (hang(), "model_alive_no_output"),  # accepts the request, never answers (timeout 1 s)
    (content("Sure! Here is a summary of the session, in prose."), "all_outputs_discarded"),  # junk
])
def test_a_replay_whose_model_fails_records_the_incident_for_status_and_alerts_once(tmp_path, queued, memoir_home,
                                                                                     failure, incident):
    alerts_out = tmp_path / "alerts.out"
    with ScriptedServer([failure]) as server:
        replay = memoir(memoir_home, model_env(server.url, alerts_out), "replay")
        assert replay.returncode == EXIT_INCIDENT, replay.stdout + replay.stderr
        assert f"incident  memoir incident {incident}: " in replay.stdout
        assert "Traceback" not in replay.stderr
        assert _alerts(alerts_out) == [incident]
        (alert,) = [json.loads(line) for line in alerts_out.read_text().splitlines()]
        assert alert["home"] == str(memoir_home) and alert["runbook"].startswith("runbooks/model-alive-no-output.md#")
        shown = json.loads(memoir(memoir_home, {}, "status", "--json").stdout)
        assert any(f"memoir incident {incident}: " in a for a in shown["model"]["alerts"])
        assert incident in json.loads((queued.state_dir / "incidents.json").read_text())


def test_the_same_incident_on_the_next_replay_alerts_nobody_twice_and_an_answer_closes_it(tmp_path, queued,
                                                                                          memoir_home):
    alerts_out = tmp_path / "alerts.out"
    with ScriptedServer([status(503)]) as down:
        for _ in range(2):  # the batch goes back to the queue each time; the incident stays open
            again = memoir(memoir_home, model_env(down.url, alerts_out), "replay", "--json")
            assert again.returncode == EXIT_INCIDENT, again.stderr
            assert any("endpoints_unavailable" in a for a in json.loads(again.stdout)["alerts"])
    assert _alerts(alerts_out) == ["endpoints_unavailable"]
    with ScriptedServer([slots()]) as answering:
        fixed = memoir(memoir_home, model_env(answering.url, alerts_out), "replay", "--json")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert json.loads(fixed.stdout)["left"] == 0
    assert json.loads((queued.state_dir / "incidents.json").read_text()) == {}
    shown = json.loads(memoir(memoir_home, {}, "status", "--json").stdout)
    assert shown["model"]["alerts"] == []
