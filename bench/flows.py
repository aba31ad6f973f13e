"""Prefect overhead: the `nightly` flow against the same steps run directly.

    python -m bench.flows [--mb 50] [--keep DIR]

Generates a fixed Claude Code-shaped corpus (~50 MB by default), then times, each into a fresh
memoir home: the direct run (`flows.pipeline.run_pipeline`, the same `STEPS`), the flow on a cold ephemeral API
(starts the temporary server, migrates its database) and the flow again with the API warm.
Prints the figures and the ratios; asserts nothing about wall time (goal: overhead under 15%).
"""

from __future__ import annotations

import argparse
import shutil
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
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
