"""Nothing leaves the machine (issue 42): a run, a recall and the recall service (its ONNX Runtime
query path included) inside a network namespace with no route, each Python process of them watched
by an audit hook, make no outbound connection attempt and open no file for writing outside the
memoir home and the temporary folder; the user's own home holds nothing new afterwards (ONNX
Runtime's telemetry store under `~/.cache/Microsoft` included). Skipped, saying why, where the
kernel refuses a network namespace."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "cards" / "examples" / "claude-code"

# Installed in every Python process of the run (sitecustomize): it appends one JSON line per event.
HOOK = textwrap.dedent('''
    import json, os, sys
    _log = os.open(os.environ["MEMOIR_AUDIT_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    _allowed = tuple(p for p in os.environ["MEMOIR_AUDIT_ALLOWED"].split(os.pathsep) if p)
    _WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

    def _note(kind, detail):
        os.write(_log, (json.dumps({"kind": kind, "detail": str(detail), "pid": os.getpid()}) + "\\n").encode())

    def _hook(event, args):
        if event == "socket.connect":
            address = args[1]
            if isinstance(address, tuple):  # an IP address; a Unix socket path is a str
                _note("connect", address)
        elif event == "socket.getaddrinfo":
            if args[0] not in (None, "localhost", "127.0.0.1", "::1", b"localhost"):
                _note("resolve", args[0])
        elif event == "open":
            path, mode, flags = args
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE)
            if writes and isinstance(path, (str, bytes)):
                real = os.path.realpath(os.fsdecode(path))
                if not real.startswith(_allowed):
                    _note("write", real)

    sys.addaudithook(_hook)
    _note("start", sys.argv[:2])
''')

SERVICE = textwrap.dedent('''
    import sys, threading
    from memoir.cards.config import load_settings
    from memoir.flows.recall_service import ask, serve
    from memoir.index.embed import Embedder
    settings = load_settings(home=sys.argv[1])
    ready = threading.Event()
    embedder = Embedder(threads=1, query_backend="onnx")
    threading.Thread(target=serve, args=(settings, embedder), kwargs={"idle_exit_s": 5.0,
                     "on_ready": lambda p: ready.set()}, daemon=True).start()
    assert ready.wait(120), "the recall service never became ready"
    answer = ask(settings.state_dir, {"op": "recall", "query": sys.argv[2], "workspace": sys.argv[3],
                                      "budget_ms": 60_000}, 60)
    print("ANSWER", bool(answer and answer.get("ok")), embedder.query_path)
''')


def _namespace_refused() -> str:
    if shutil.which("unshare") is None:
        return "unshare(1) is not installed"
    tried = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True)
    return "" if tried.returncode == 0 else f"the kernel refuses a network namespace: {tried.stderr.strip()}"


@pytest.fixture
def watched():
    refused = _namespace_refused()
    if refused:
        pytest.skip(refused)
    # A short root: the recall service's socket path must fit AF_UNIX's 108 bytes.
    tmp_path = Path(tempfile.mkdtemp(prefix="mnl-"))
    user_home = tmp_path / "user"
    memoir_home = user_home / "memoir-home"
    scratch = tmp_path / "tmp"
    hooks = tmp_path / "hooks"
    for d in (user_home, scratch, hooks):
        d.mkdir()
    (hooks / "sitecustomize.py").write_text(HOOK)
    logs = tmp_path / "logs"
    shutil.copytree(EXAMPLES, logs / "claude-code")
    audit = tmp_path / "audit.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMOIR_", "XDG_", "PREFECT_"))}
    env.update(HOME=str(user_home), TMPDIR=str(scratch), PYTHONPATH=str(hooks),
               MEMOIR_AUDIT_LOG=str(audit), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               MEMOIR_AUDIT_ALLOWED=os.pathsep.join([str(memoir_home), str(scratch), "/dev/", "/proc/self/"]))
    yield env, memoir_home, user_home, logs, audit
    shutil.rmtree(tmp_path, ignore_errors=True)


def _offline(args: list[str], env: dict, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(["unshare", "-n", *args], env=env, capture_output=True, text=True, timeout=timeout)


def test_a_run_a_recall_and_the_recall_service_reach_no_network_and_write_only_in_the_home(watched):
    env, memoir_home, user_home, logs, audit = watched
    memoir = [sys.executable, "-m", "memoir.flows.cli.main", "--home", str(memoir_home)]
    ran = _offline([*memoir, "run", "--logs", str(logs)], env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    recalled = _offline([*memoir, "recall", "the shop api tests fail with a database error"], env)
    assert recalled.returncode in (0, 1), recalled.stdout + recalled.stderr  # 1: nothing matched, said so
    service = _offline([sys.executable, "-c", SERVICE, str(memoir_home), "the shop api tests fail",
                        "/home/dev/projects/shopapi"], env)
    assert service.returncode == 0 and "ANSWER True" in service.stdout, service.stdout + service.stderr
    assert "onnx" in service.stdout.split("ANSWER", 1)[1], service.stdout  # ONNX Runtime's path was the one taken
    events = [json.loads(line) for line in audit.read_text().splitlines()] if audit.exists() else []
    assert len({e["pid"] for e in events if e["kind"] == "start"}) >= 3  # the hook watched every process
    outbound = [e for e in events if e["kind"] in ("connect", "resolve")]
    assert outbound == [], outbound
    written = sorted({e["detail"] for e in events if e["kind"] == "write"})
    assert written == [], written
    # Native code is not seen by the hook: the user's own home must hold nothing but the memoir home.
    left = sorted(str(p.relative_to(user_home)) for p in user_home.rglob("*")
                  if not p.is_relative_to(memoir_home) and p != memoir_home)
    assert left == [], left
