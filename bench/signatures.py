"""Bench for cards/signatures.py, cards/verdicts.py and cards/outcomes.py: turns/s over the real sample logs.

Reads every log under the samples folder (read-only, through `cards.collect`), then times
`error_signature` and `is_passing`/`is_failing` over each turn's text with the caches cleared
before every pass, so each pass pays for every distinct text once, as an ingest run does.
Also times `verification` and `failure_conditions` per session.

Run: .venv/bin/python -m bench.signatures [--samples DIR] [--passes N]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from memoir.cards import outcomes, signals, signatures, verdicts
from memoir.cards.collect import CollectReport, collect_file
from memoir.cards.log_files import iter_candidates
from memoir.cards.signatures import error_signature


def load(root: Path) -> CollectReport:
    out = CollectReport()
    for path in iter_candidates([root], "auto", out.skipped):
        collect_file(path, "auto", None, out)
    return out


def clear_caches() -> None:
    """Empty every lru cache of the measured modules, so a pass pays for each text once."""
    for module in (signals, signatures, verdicts, outcomes):
        for value in vars(module).values():
            if hasattr(value, "cache_clear"):
                value.cache_clear()


def timed(fn, texts: list[str], passes: int) -> float:
    """Best seconds per pass of `fn` over `texts`, with cold caches."""
    best = float("inf")
    for _ in range(passes):
        clear_caches()
        started = time.perf_counter()
        for text in texts:
            fn(text)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", default="/work/shared/samples", help="folder of host logs")
    ap.add_argument("--passes", type=int, default=20, help="timed passes; the best one is reported")
    args = ap.parse_args()

    collected = load(Path(args.samples))
    texts = [t.text for turns in collected.sessions.values() for t in turns]
    size = sum(len(t) for t in texts) / 1e6
    print(f"turns         {len(texts):8d}  ({size:.1f} MB of text, {len(collected.sessions)} sessions)")
    fns = [("error_signature", error_signature), ("is_passing", verdicts.is_passing), ("is_failing", verdicts.is_failing)]
    for name, fn in fns:
        took = timed(fn, texts, args.passes)
        print(f"{name:16s}{len(texts) / took:10.0f} turns/s  ({took * 1e3:.1f} ms per pass)")
    sessions = list(collected.sessions.values())
    best = float("inf")
    for _ in range(args.passes):
        clear_caches()
        started = time.perf_counter()
        for turns in sessions:
            outcomes.verification(turns)
            outcomes.failure_conditions(turns)
        best = min(best, time.perf_counter() - started)
    print(f"{'outcomes':16s}{len(texts) / best:10.0f} turns/s  (verification + failure_conditions, cold caches)")


if __name__ == "__main__":
    main()
