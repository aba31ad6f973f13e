"""The nightly flow fans out: collection per log file and the model stage per batch run as Prefect
tasks, on two Dask workers here, and the merged result is byte-for-byte a sequential `memoir run`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memoir.flows.lock import Deadline, StepTimeout
from tests.flowlogs import write_corpus
from tests.openai_server import ScriptedServer, slots

ENTRY = "from memoir.flows.cli.main import main; main()"


def memoir(home: Path, *args: str, env: dict) -> dict:
    full = {**os.environ, "MEMOIR_HOME": str(home), **env}
    proc = subprocess.run([sys.executable, "-c", ENTRY, *args], env=full, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"memoir {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout)


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def answer(body: dict):
    """A valid answer that depends only on the request (so order of arrival cannot matter)."""
    text = json.dumps(body)
    at = text.find("in session s")
    session = text[at + 11:at + 17] if at >= 0 else "unknown"
    return slots(conclusion=f"For session {session} the missing package had to be added to requirements.txt "
                            "before the test suite could import it and pass.")


@pytest.mark.slow
def test_the_nightly_flow_on_two_dask_workers_writes_the_same_card_files_as_memoir_run(tmp_path):
    logs = write_corpus(tmp_path / "logs", sessions=6, loops=2)
    with ScriptedServer(answer) as srv:
        env = {"PREFECT_HOME": str(tmp_path / "prefect"), "MEMOIR_BATCH_SIZE": "2", "MEMOIR_REBUILD_CONCURRENCY": "2",
               "MEMOIR_MODEL_BASE_URL": srv.url, "MEMOIR_MODEL_NAME": "scripted"}
        sequential = memoir(tmp_path / "sequential", "run", "--no-index", "--json", "--logs", str(logs), env=env)
        calls = len(srv.received)
        fanned = memoir(tmp_path / "dask", "run", "--runner", "dask", "--no-index", "--json", "--logs", str(logs),
                        env=env)
        assert len(srv.received) == 2 * calls and calls >= 3  # every batch asked once, on the workers
    assert sequential["files_read"] == fanned["files_read"] == 6
    for key in ("cards", "rules", "distill", "skipped", "experiences", "turns"):
        assert sequential[key] == fanned[key], key
    assert tree(tmp_path / "dask" / "cards") == tree(tmp_path / "sequential" / "cards")
    assert any(b"quality: model" in b for b in tree(tmp_path / "dask" / "cards").values())


def test_a_cooperative_deadline_stops_work_between_units_in_any_thread():
    import threading

    errors = []

    def work():
        deadline = Deadline("collect", 0.001)
        import time
        time.sleep(0.01)
        try:
            deadline.check()
        except StepTimeout as exc:
            errors.append(str(exc))

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert errors and "step 'collect' ran past its 0.001 s deadline" in errors[0]
    Deadline("collect", None).check()  # no limit: never raises
