"""Generated Claude Code-shaped JSONL corpora for the flow, queue and kill tests (and bench/flows.py).

Every session holds several problem loops (question, failing command, fix, conclusion), so the
segmenter cuts one experience per loop. Content is a pure function of the arguments.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

T0 = datetime(2026, 10, 1, 9, 0, tzinfo=timezone.utc)
MODULES = ("yaml", "requests", "numpy", "httpx", "polars", "jinja2", "click", "rich")


def _line(session: str, n: int, parent: str | None, kind: str, content, ts: datetime, cwd: str) -> tuple[str, str]:
    uuid = f"{session}-{n:05d}"
    role = "assistant" if kind == "assistant" else "user"
    message = {"role": role, "content": content}
    if role == "assistant":
        message["id"] = f"msg_{uuid}"
    obj = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd,
           "sessionId": session, "version": "2.1.0", "gitBranch": "main", "type": kind,
           "message": message, "uuid": uuid, "timestamp": ts.isoformat().replace("+00:00", "Z")}
    return json.dumps(obj) + "\n", uuid


def session_lines(session: str, loops: int, start: datetime, filler: int = 0) -> list[str]:
    """One session of `loops` problem loops; `filler` pads tool output to grow the corpus."""
    out: list[str] = []
    parent = None
    n = 0
    cwd = f"/home/dev/{session[:6]}"

    def add(kind: str, content, minutes: float) -> None:
        nonlocal parent, n
        line, parent = _line(session, n, parent, kind, content, start + timedelta(minutes=minutes), cwd)
        out.append(line)
        n += 1

    for i in range(loops):
        mod = MODULES[i % len(MODULES)]
        t = i * 45.0  # a pause longer than pause_minutes between loops: one experience each
        add("user", f"new task {i}: pytest fails with ModuleNotFoundError: No module named '{mod}_{i}'", t)
        add("assistant", [{"type": "tool_use", "id": f"t{i}a", "name": "Bash",
                           "input": {"command": f"pytest tests/test_{mod}_{i}.py"}}], t + 0.1)
        pad = ("collected 3 items\n" + "." * 60 + "\n") * filler
        add("user", [{"type": "tool_result", "tool_use_id": f"t{i}a", "is_error": True,
                      "content": f"{pad}E   ModuleNotFoundError: No module named '{mod}_{i}'"}], t + 0.2)
        add("assistant", [{"type": "tool_use", "id": f"t{i}b", "name": "Bash",
                           "input": {"command": f"pip install {mod}-{i} && pytest"}}], t + 0.5)
        add("user", [{"type": "tool_result", "tool_use_id": f"t{i}b",
                      "content": f"Successfully installed {mod}-{i}\n3 passed in 0.4s"}], t + 0.8)
        add("assistant", [{"type": "text", "text": (
            f"The root cause was that {mod}-{i} was missing from requirements.txt in session {session}; "
            f"adding {mod}-{i} there fixes the ModuleNotFoundError and the tests pass.")}], t + 1.0)
    return out


def write_corpus(root: Path, sessions: int, loops: int = 4, filler: int = 0) -> Path:
    """`sessions` JSONL files under root/projects/<dir>/; returns the folder to pass as --logs."""
    base = root / "projects"
    for s in range(sessions):
        folder = base / f"-home-dev-proj{s % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        sid = f"s{s:05d}-0000-4000-8000-000000000000"
        lines = session_lines(sid, loops, T0 + timedelta(days=s % 30, minutes=s), filler)
        (folder / f"{sid}.jsonl").write_text("".join(lines), encoding="utf-8")
    return base


def write_corpus_of_size(root: Path, megabytes: float, loops: int = 6, filler: int = 40) -> Path:
    """About `megabytes` MB of logs (sessions of fixed shape, as many as it takes)."""
    one = len("".join(session_lines("s00000-0000-4000-8000-000000000000", loops, T0, filler)).encode())
    return write_corpus(root, max(1, int(megabytes * 1e6 / one)), loops, filler)
