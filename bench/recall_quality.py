"""Recall quality on the labelled retrieval set: precision of injected cards, recall@2, correct empties.

    python bench/recall_quality.py [--home DIR] [--verbose]

Builds cards and an index from the example sessions shipped in `cards/examples/` (in a temp home
unless --home is given), runs every query in `tests/retrieval_set.py` with the real model, and
prints the figures. Tightening `min_score` trades recall@2 for precision and more empty answers.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cards.config import load_settings  # noqa: E402
from cards.store import CardStore  # noqa: E402
from index.embed import default_embedder  # noqa: E402
from index.recall import Recaller  # noqa: E402
from tests.retrieval_set import AS_OF, QUERIES, build_example_home, score  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--home", type=Path, help="memoir home to build in (default: a temp dir)")
    ap.add_argument("--min-score", type=float, help="override the min_score setting")
    ap.add_argument("--verbose", "-v", action="store_true", help="list misses and wrong injections")
    ap.add_argument("--as-built", action="store_true",
                    help="keep the quality gates' verdicts (default: activate held-back cards to measure recall alone)")
    args = ap.parse_args(argv)
    home = args.home or Path(tempfile.mkdtemp(prefix="memoir-quality-"))
    settings = load_settings(home=home)
    if args.min_score is not None:
        from dataclasses import replace

        settings = replace(settings, min_score=args.min_score)
    embedder = default_embedder()
    t = time.perf_counter()
    activated = build_example_home(settings, ROOT / "cards" / "examples", embedder, activate_held=not args.as_built)
    built = time.perf_counter() - t
    with Recaller(settings, embedder) as recaller:
        s = score(recaller, CardStore(settings.cards_dir, settings.state_dir), AS_OF)
    print(f"retrieval set: {len(QUERIES)} queries ({s.answerable} with a right card, {s.unanswerable} without), "
          f"as of {AS_OF.date()}, min_score {settings.min_score}, built in {built:.1f} s")
    print("cards: as the pipeline built them" if args.as_built else
          f"cards: {activated} held back by quality gates made active (recall measured alone; --as-built to keep them)")
    print(f"precision of injected cards  {s.precision:.3f}  ({s.injected_right}/{s.injected})")
    print(f"recall@2                     {s.recall_at_2:.3f}  ({s.answerable_hit}/{s.answerable})")
    print(f"correct empty answers        {s.correct_empty:.3f}  ({s.unanswerable_empty}/{s.unanswerable})")
    if args.verbose:
        for line in s.wrong:
            print(f"  wrong  {line}")
        for line in s.misses:
            print(f"  miss   {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
