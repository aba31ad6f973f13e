"""`memoir serve`: the flows as scheduled deployments, with a Prefect server of its own if needed.

Prefect will not schedule on its ephemeral API, so unless `PREFECT_API_URL` points at a server,
`serve` starts `prefect server start` on 127.0.0.1 and a free port, waits for its health
endpoint, serves, and stops the server again on exit (Ctrl-C, SIGTERM or an error).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from flows.prefect_env import prefect_environment

SERVER_START_TIMEOUT_S = 120  # first start migrates a fresh database: ~10-20 s here


class ServerFailed(Exception):
    """The Prefect server did not come up; the message holds the tail of its log."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(api_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{api_url}/health", timeout=2) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError):
        return False


@contextmanager
def prefect_server(home: Path, port: int | None = None, timeout_s: float = SERVER_START_TIMEOUT_S) -> Iterator[str]:
    """Run `prefect server start` for the block; yields its API URL and stops it afterwards."""
    port = port or free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    log_path = Path(home) / "prefect" / "server.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env={**os.environ, **prefect_environment(home), "PREFECT_LOGGING_LEVEL": "INFO"},
            start_new_session=True,  # its own process group: stopping it stops uvicorn and services too
        )
    try:
        deadline = time.monotonic() + timeout_s
        while not healthy(api_url):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log_path.read_text(errors="replace")[-2000:]
                raise ServerFailed(f"prefect server on port {port} did not become healthy "
                                   f"(exit {proc.poll()}); log {log_path}:\n{tail}")
            time.sleep(0.5)
        yield api_url
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
    except ProcessLookupError:
        pass


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Turn SIGTERM into KeyboardInterrupt so `finally` blocks (stopping the server) run."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def deployments(home: str, nightly_cron: str, replay_cron: str | None = None):
    """The three flows as deployments: nightly on its cron, the others on demand (or their cron)."""
    from flows.nightly import nightly, rebuild_index, replay_backlog

    params = {"home": home}
    return [
        nightly.to_deployment(name="memoir-nightly", cron=nightly_cron, parameters=params),
        replay_backlog.to_deployment(name="memoir-replay", cron=replay_cron, parameters=params),
        rebuild_index.to_deployment(name="memoir-rebuild-index", parameters=params),
    ]


def serve_deployments(home: str, nightly_cron: str, replay_cron: str | None = None) -> None:
    """Register the deployments and run their scheduled flow runs until interrupted."""
    from prefect import serve

    serve(*deployments(home, nightly_cron, replay_cron), pause_on_shutdown=False)
