"""Prefect overhead, and the nightly flow fanned out on 2 Dask workers, against the same steps run directly.

    python -m bench.flows [--mb 50] [--keep DIR] [--model-delay 0.2] [--no-dask]

Generates a fixed Claude Code-shaped corpus (~50 MB by default), then times, each into a fresh
memoir home: the direct run (`flows.pipeline.run_pipeline`, the same `STEPS`), the flow on a cold ephemeral API
(starts the temporary server, migrates its database), the flow again with the API warm, and the
flow on a local Dask cluster of 2 workers (collection per file, the model per batch). With
`--model-delay S` every run distills through a local OpenAI-compatible server (tests/openai_server.py)
that takes S seconds per answer, as a real model does: that is the work the workers share.
Then the two commands as a user types them, each a fresh process on a fresh home with no
`PREFECT_*` in the environment: `memoir run` and `memoir run --flow` (start-up included).
Prints the figures side by side; asserts nothing about wall time (goal: overhead under 15%).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memoir.cards.config import load_settings  # noqa: E402
from memoir.flows.prefect_env import configure_prefect  # noqa: E402
from tests.flowlogs import write_corpus_of_size  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=50.0, help="corpus size in MB (default 50)")
    ap.add_argument("--keep", type=Path, help="work here instead of a temp dir (kept)")
    ap.add_argument("--model-delay", type=float, default=0.0, metavar="S",
                    help="distill through a local model server answering in S seconds (default: no model)")
    ap.add_argument("--no-dask", action="store_true", help="skip the 2-worker Dask run")
    args = ap.parse_args()
    server = None
    if args.model_delay > 0:
        from tests.openai_server import ScriptedServer, slots

        reply = slots()
        server = ScriptedServer(lambda body: reply.__class__(**{**reply.__dict__, "delay_s": args.model_delay})).start()
        os.environ.update(MEMOIR_MODEL_BASE_URL=server.url, MEMOIR_MODEL_NAME="bench", MEMOIR_BATCH_SIZE="4")
    work = args.keep or Path(tempfile.mkdtemp(prefix="memoir-bench-flows-"))
    logs = write_corpus_of_size(work / "corpus", args.mb)
    size = sum(p.stat().st_size for p in logs.rglob("*.jsonl"))
    configure_prefect(work / "prefect-owner")  # one PREFECT_HOME for the bench, fresh database

    from memoir.flows.nightly import nightly
    from memoir.flows.pipeline import run_pipeline

    def timed(label: str, fn) -> tuple[float, dict]:
        t = time.perf_counter()
        summary = fn()
        s = time.perf_counter() - t
        d = summary.to_dict()
        print(f"{label:<28} {s:8.2f} s   {d['files_read']} files, {d['experiences']} experiences, "
              f"cards {d['cards']}", flush=True)
        return s, d

    print(f"corpus: {size / 1e6:.1f} MB in {len(list(logs.rglob('*.jsonl')))} files ({logs})")
    direct_s, direct = timed("direct steps", lambda: run_pipeline(load_settings(home=work / "h-direct"), [logs]))
    cold_s, cold = timed("nightly flow (cold API)", lambda: nightly(home=str(work / "h-cold"), logs=[str(logs)]))
    warm_s, warm = timed("nightly flow (warm API)", lambda: nightly(home=str(work / "h-warm"), logs=[str(logs)]))
    assert direct["cards"] == cold["cards"] == warm["cards"], "the flow wrote different cards"
    print(f"overhead, warm API: {warm_s - direct_s:+.2f} s = {100 * (warm_s / direct_s - 1):+.1f}%  (goal < 15%)")
    print(f"overhead, cold API: {cold_s - direct_s:+.2f} s = {100 * (cold_s / direct_s - 1):+.1f}%  "
          "(includes starting the temporary API and migrating its database)")
    cli_direct_s, cli_flow_s = as_typed(work, logs, ()), as_typed(work, logs, ("--flow",))
    print(f"`memoir run`  (fresh process) {cli_direct_s:8.2f} s")
    print(f"`memoir run --flow` (fresh)   {cli_flow_s:8.2f} s   overhead {cli_flow_s - cli_direct_s:+.2f} s = "
          f"{100 * (cli_flow_s / cli_direct_s - 1):+.1f}%  (no PREFECT_* set: a fresh ephemeral API under the home)")
    if not args.no_dask:
        side_by_side(work, logs)
    if server is not None:
        server.stop()
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


def side_by_side(work: Path, logs: Path) -> None:
    """`memoir run` and `memoir run --runner dask` (2 workers), each a fresh process and home, against
    one Prefect server (each Dask worker would otherwise start an ephemeral API of its own)."""
    import json
    import subprocess

    from memoir.flows.serve import prefect_server

    def memoir(home: Path, *extra: str, env: dict) -> tuple[float, dict]:
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "memoir.flows.cli.main", "--home", str(home), "run", "--json",
                               "--logs", str(logs), *extra], env=env, capture_output=True, text=True)
        if proc.returncode not in (0, 8):
            raise SystemExit(f"memoir run {' '.join(extra)} failed:\n{proc.stderr[-2000:]}")
        return time.perf_counter() - t, json.loads(proc.stdout)

    with prefect_server(work / "prefect-server") as url:
        env = {**os.environ, "PREFECT_API_URL": url, "MEMOIR_REBUILD_CONCURRENCY": "2"}
        seq_s, seq = memoir(work / "h-seq", env=env)
        dask_s, dask = memoir(work / "h-dask2", "--runner", "dask", env=env)
    assert seq["cards"] == dask["cards"], "the Dask flow wrote different cards"
    calls = seq["distill"].get("sent", 0)
    print(f"{'':<28} {'sequential':>12} {'2 Dask workers':>16}   ({seq['files_read']} files, {calls} model calls)")
    print(f"{'memoir run (whole process)':<28} {seq_s:10.2f} s {dask_s:14.2f} s   x{seq_s / dask_s:.2f}"
          "  (the Dask column includes starting the local cluster)")


def as_typed(work: Path, logs: Path, extra: tuple[str, ...]) -> float:
    """Seconds for `memoir run [extra]` in a fresh process and home, no Prefect variables set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_") and k != "MEMOIR_HOME"}
    home = work / ("h-cli" + "".join(extra).replace("-", "_"))
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", "from memoir.flows.cli.main import main; main()", "run", *extra,
                           "--logs", str(logs), "--home", str(home)], env=env, capture_output=True, text=True)
    took = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"memoir run {' '.join(extra)} failed:\n{done.stderr[-2000:]}")
    return took


if __name__ == "__main__":
    main()
