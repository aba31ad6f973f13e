"""Ingest throughput: read + sanitize + segment + write over a synthetic Claude Code-shaped corpus.

Prints MB/s for the pipeline and for a bare `json.loads` loop over the same files, and their
ratio. Goal on 2 cores (issue 38): >= 40 MB/s, within 5x of the bare parse. `--logs` runs on a
folder of real logs instead (a copy: the run writes nothing there, but keep the shared samples safe).

    .venv/bin/python -m bench.ingest --mb 200
    .venv/bin/python -m bench.ingest --logs /tmp/samples-copy
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import tempfile
import time
from pathlib import Path

WORDS = ("cache", "handler", "retry", "config", "schema", "migration", "worker", "queue", "token",
         "parser", "router", "session", "fixture", "pool", "timeout", "index", "build", "deploy")
ERRORS = (
    "Traceback (most recent call last):\n  File \"/srv/app/{w}.py\", line {n}, in run\n    return self.{w}()\n"
    "sqlite3.OperationalError: database is locked",
    "TypeError: Cannot read properties of undefined (reading '{w}')",
    "ModuleNotFoundError: No module named '{w}'",
    "error TS2339: Property '{w}' does not exist on type 'Request'.",
)


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def _line(session: str, uuid: str, parent: str | None, kind: str, content, ts: str, cwd: str = "/home/dev/app",
          **extra) -> str:
    role = "assistant" if kind == "assistant" else "user"
    message = {"role": role, "content": content}
    if role == "assistant":
        message["id"] = f"msg_{uuid}"
        message["model"] = "claude-sonnet-4"
    obj = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd,
           "sessionId": session, "version": "2.1.0", "gitBranch": "main", "type": kind,
           "message": message, "uuid": uuid, "timestamp": ts, **extra}
    return json.dumps(obj) + "\n"


def write_session(path: Path, rng: random.Random, index: int, loops: int) -> None:
    """One session: several problem loops, each with tool calls, an error, a fix and a wrap-up."""
    sid = f"bench-{index:05d}"
    out, parent, n = [], None, 0

    def add(kind, content, **extra):
        nonlocal parent, n
        n += 1
        uuid = f"{sid}-{n:05d}"
        minute = n // 4
        ts = f"2026-11-{1 + index % 28:02d}T{8 + minute // 60 % 12:02d}:{minute % 60:02d}:{n % 60:02d}Z"
        out.append(_line(sid, uuid, parent, kind, content, ts, cwd=f"/home/dev/project{index % 16}", **extra))
        parent = uuid

    for loop in range(loops):
        w = rng.choice(WORDS)
        add("user", f"{'new task: ' if loop else ''}the {w} step fails in CI, please fix it. {_sentence(rng, 30)}")
        for step in range(rng.randint(3, 6)):
            tid = f"toolu_{index}_{loop}_{step}"
            add("assistant", [{"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": f"pytest -q tests/test_{w}.py"}}])
            if step == 0:
                err = rng.choice(ERRORS).format(w=w, n=rng.randint(10, 900))
                add("user", [{"type": "tool_result", "tool_use_id": tid, "content": err, "is_error": True}])
            else:
                # Real tool output is mostly file reads and logs: tens to hundreds of lines.
                body = "\n".join(f"{k:>5}\t{_sentence(rng, 9)}" for k in range(rng.randint(40, 220)))
                add("user", [{"type": "tool_result", "tool_use_id": tid, "content": body}])
            for k in range(rng.randint(2, 8)):
                out.append(json.dumps({"type": "progress", "data": {"type": "bash_progress", "output": _sentence(rng, 20)},
                                       "parentToolUseID": tid, "sessionId": sid, "uuid": f"p-{index}-{loop}-{step}-{k}",
                                       "timestamp": "2026-11-01T08:00:00Z"}) + "\n")
        add("assistant", [{"type": "thinking", "thinking": _sentence(rng, 60), "signature": "x" * 300}])
        add("assistant", [{"type": "text", "text": f"The root cause was the {w} {_sentence(rng, 25)} Fixing the {w} config makes the tests pass."}])
        add("user", [{"type": "tool_result", "tool_use_id": f"ok{loop}", "content": f"{rng.randint(5, 90)} passed in 1.2s"}])
    path.write_text("".join(out))


def make_corpus(root: Path, mb: float, seed: int = 7) -> int:
    rng = random.Random(seed)
    total, i = 0, 0
    target = int(mb * 1e6)
    while total < target:
        path = root / "-home-dev-app" / f"bench-{i:05d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_session(path, rng, i, loops=rng.randint(4, 10))
        total += path.stat().st_size
        i += 1
    return total


def bare_parse(root: Path) -> float:
    started = time.perf_counter()
    for path in sorted(root.rglob("*.jsonl")):
        with path.open("rb") as fh:
            for line in fh:
                json.loads(line)
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=200.0, help="corpus size in MB (default 200)")
    ap.add_argument("--keep", help="keep the corpus and home in this folder")
    ap.add_argument("--logs", help="read this folder of logs instead of making a synthetic corpus")
    args = ap.parse_args()

    from memoir.cards.config import load_settings
    from memoir.flows.pipeline import run_pipeline

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="memoir-bench-"))
    logs = Path(args.logs) if args.logs else work / "logs"
    try:
        t = time.perf_counter()
        if args.logs:
            size = sum(p.stat().st_size for p in logs.rglob("*.jsonl"))
        else:
            size = make_corpus(logs, args.mb)
            os.sync()  # flush the fresh corpus now, or the pipeline's first sync would pay for it
        print(f"corpus        {size / 1e6:8.1f} MB in {len(list(logs.rglob('*.jsonl')))} files (made in {time.perf_counter() - t:.1f} s)")
        bare = bare_parse(logs)
        print(f"bare parse    {size / 1e6 / bare:8.1f} MB/s  ({bare:.1f} s)")
        settings = load_settings(home=work / "home")
        t = time.perf_counter()
        summary = run_pipeline(settings, [logs], with_index=False)
        took = time.perf_counter() - t
        print(f"pipeline      {size / 1e6 / took:8.1f} MB/s  ({took:.1f} s; {summary.turns} turns, "
              f"{summary.experiences} experiences, {sum(summary.cards.values())} cards)")
        print(f"ratio         {took / bare:8.2f}x the bare parse (goal <= 5x); goal >= 40 MB/s")
        t = time.perf_counter()
        again = run_pipeline(settings, [logs], with_index=False)
        print(f"rerun         {time.perf_counter() - t:8.2f} s  ({again.files_read} files re-read)")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
