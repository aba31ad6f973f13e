"""Prefect overhead: the `nightly` flow against the same steps run directly.

    python -m bench.flows [--mb 50] [--keep DIR]

Generates a fixed Claude Code-shaped corpus (~50 MB by default), then times, each into a fresh
memoir home: the direct run (`flows.pipeline.run_pipeline`, the same `STEPS`), the flow on a cold ephemeral API
(starts the temporary server, migrates its database) and the flow again with the API warm.
Then the two commands as a user types them, each a fresh process on a fresh home with no
`PREFECT_*` in the environment: `memoir run` and `memoir run --flow` (start-up included).
Prints the figures and the ratios; asserts nothing about wall time (goal: overhead under 15%).
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
    args = ap.parse_args()
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
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


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
