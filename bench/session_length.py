"""Time for one session of 5k, 20k and 100k turns: memoir must be linear in session length.

Three shapes: `tasks` (the user moves on to a new task every ~12 turns, so many experiences),
`same-error` (the same, but every task fails the same way, so every experience merges into one
card: the worst case for the rule stage) and `one-loop` (one failure the user keeps asking about
and that is never fixed: one experience of every turn, the worst case for any walk over an
experience's turns). The goal: 100k turns take at most 20x the time of 5k.

    .venv/bin/python -m bench.session_length --turns 5000 20000 100000
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import tempfile
import time
from pathlib import Path

from bench.ingest import WORDS, _line, _sentence


def write_long_session(path: Path, turns: int, new_tasks: bool, seed: int = 11, same_error: bool = False) -> None:
    """One session of about `turns` turns: test runs that fail, edits, and passes, in order."""
    rng = random.Random(seed)
    sid = f"long-{turns}-{int(new_tasks)}"
    parent, n = None, 0
    with path.open("w") as fh:
        def add(kind, content):
            nonlocal parent, n
            n += 1
            uuid = f"{sid}-{n:07d}"
            secs = n * 7  # a steady session: never a pause long enough to cut it
            ts = f"2026-11-{1 + secs // 86400:02d}T{secs // 3600 % 24:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}Z"
            fh.write(_line(sid, uuid, parent, kind, content, ts))
            parent = uuid

        loop = 0
        while n < turns:
            w = "cache" if same_error else rng.choice(WORDS)
            lead = "new task: " if new_tasks and loop else "still failing: " if loop else ""
            add("user", f"{lead}the {w} step fails in CI, please fix it. {_sentence(rng, 20)}")
            for step in range(3):
                tid = f"toolu_{loop}_{step}"
                add("assistant", [{"type": "tool_use", "id": tid, "name": "Bash",
                                   "input": {"command": f"pytest -q tests/test_{w}.py"}}])
                if new_tasks:
                    body = (f"FAILED tests/test_{w}.py::test_{w}_{loop} - AssertionError: {w} was None"
                            if step < 2 else "\n".join(_sentence(rng, 9) for _ in range(rng.randint(5, 30))))
                else:  # the same failure, never fixed: nothing ever cuts the experience
                    body = "FAILED tests/test_cache.py::test_cache - AssertionError: cache was None"
                add("user", [{"type": "tool_result", "tool_use_id": tid, "content": body, "is_error": step < 2}])
            add("assistant", [{"type": "text", "text": f"The {w} handler read the config too early. {_sentence(rng, 15)}"}])
            if new_tasks:
                add("user", [{"type": "tool_result", "tool_use_id": f"ok{loop}", "content": f"{rng.randint(5, 90)} passed in 1.2s"}])
            loop += 1


SHAPES = ("tasks", "same-error", "one-loop")


def time_one(turns: int, shape: str) -> tuple[float, float, int, int]:
    """(CPU seconds, wall seconds, turns, experiences) of one run over one session of `turns` turns.

    CPU time is the figure compared: on shared cores the wall clock says more about the neighbours.
    """
    from memoir.cards.config import load_settings
    from memoir.flows.pipeline import run_pipeline

    work = Path(tempfile.mkdtemp(prefix="memoir-bench-long-"))
    try:
        path = work / "logs" / "-home-dev-app" / "long.jsonl"
        path.parent.mkdir(parents=True)
        write_long_session(path, turns, shape != "one-loop", same_error=shape == "same-error")
        settings = load_settings(home=work / "home")
        t, c = time.perf_counter(), time.process_time()
        summary = run_pipeline(settings, [work / "logs"], with_index=False)
        return time.process_time() - c, time.perf_counter() - t, summary.turns, summary.experiences
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, nargs="+", default=[5000, 20000, 100000])
    ap.add_argument("--shape", choices=(*SHAPES, "all"), default="all")
    ap.add_argument("--json", action="store_true", help="print one JSON object per measurement")
    args = ap.parse_args()
    for shape in SHAPES if args.shape == "all" else (args.shape,):
        first = None
        for turns in args.turns:
            took, wall, n, exps = time_one(turns, shape)
            first = first or took
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            if args.json:
                print(json.dumps({"shape": shape, "turns": n, "experiences": exps, "cpu_s": round(took, 3),
                                  "wall_s": round(wall, 3)}))
            else:
                print(f"{shape:10} {n:7d} turns  {exps:6d} experiences  {took:8.2f} s CPU ({wall:.1f} s wall)  "
                      f"{took / first:6.1f}x the first  (peak RSS so far {rss:.0f} MB)", flush=True)


if __name__ == "__main__":
    main()
