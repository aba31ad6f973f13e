"""A run that cannot start says why and exits with its code: Prefect's API not answering in time, or a
file where the home keeps a folder. One message on stderr, never a traceback, and nothing written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memoir.flows.cli.app import EXIT_FAILED, EXIT_NO_PREFECT
from tests.openai_server import refused_url


def memoir(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    cmd = [sys.executable, "-c", "from memoir.flows.cli.main import main; main()", "--home", str(home), *args]
    return subprocess.run(cmd, env={**base, **env}, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("prefect, said", [
    # 0 s: the ephemeral API is given no time at all to start, so Prefect's own timeout fires at once.
    ({"PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "0"}, "Prefect's local API did not start within"),
    ({"PREFECT_API_URL": refused_url().replace("/v1", "/api")}, "did not answer"),
])
def test_a_prefect_api_that_does_not_answer_in_time_is_one_message_and_exit_11(tmp_path, memoir_home, prefect, said):
    empty = tmp_path / "no-logs"
    empty.mkdir()
    out = memoir(memoir_home, "run", "--flow", "--logs", str(empty), **prefect)
    assert out.returncode == EXIT_NO_PREFECT, out.stderr
    assert "Traceback" not in out.stderr + out.stdout
    assert out.stderr.startswith("Error: ") and said in out.stderr
    for words in ("Nothing was lost", "`memoir run` without --flow",
                  "runbooks/nightly-run-failed.md#prefect-did-not-start"):
        assert words in out.stderr
    assert not (memoir_home / "state" / "runs.jsonl").exists() and not (memoir_home / "cards").exists()


@pytest.mark.parametrize("folder", ["index", "state", "cards"])
@pytest.mark.parametrize("flow", [(), ("--flow",)], ids=["run", "run --flow"])
def test_a_file_where_the_home_keeps_a_folder_is_a_message_and_exit_1(tmp_path, folder, flow):
    home, empty = tmp_path / "home", tmp_path / "no-logs"
    home.mkdir(mode=0o700)
    empty.mkdir()
    (home / folder).write_text("a person's notes\n")
    out = memoir(home, "run", *flow, "--logs", str(empty))
    assert out.returncode == EXIT_FAILED, out.stderr
    assert "Traceback" not in out.stderr + out.stdout
    assert f"{home / folder} is a file, not a folder, where memoir keeps" in out.stderr
    assert "Nothing was read or written" in out.stderr and f"mv {home / folder} " in out.stderr
    assert sorted(p.name for p in home.iterdir()) == [folder]  # no lock, no ledger, no Prefect database
    assert (home / folder).read_text() == "a person's notes\n"  # never moved, never deleted
