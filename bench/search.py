"""Deep search against a plain turn index: evidence recall@5 and latency on the conversational set.

    python -m bench.search [--verbose]

Builds a temp memoir home from `tests/fixtures/conversational/` (the pipeline, then the index) and,
beside it, the baseline the issue names: one MiniLM vector per single sanitized turn of the same
files (the same embedder), brute-force cosine top 5. For every question of `questions.jsonl`:

- memoir: `search_cards(..., k=5)`, which returns at most 5 results in all, cards and the turns
  no returned card covers (index/search.py); a hit when a returned card's source (same session)
  covers an answer line, or a returned turn is an answer line;
- baseline: a hit when one of its 5 turns is an answer line.

A second baseline cuts the same turns into windows of memoir's mean card span (half overlap),
one vector each; a hit when a top-5 window holds an answer line. Prints evidence recall@5 for all
three side by side, memoir's ratio to the better baseline, and the latency of `search_cards` (warm: after
one query, the model loaded) as p50/p95 over all questions. Also prints a stricter memoir figure:
the answer turn itself shown (as a card's evidence or a turn). Prints figures; asserts nothing.

`--floor` instead searches every question with k=20 and prints, for a range of similarity floors,
the share of answer hits kept and of other hits hidden (`index/search.py` picked SEARCH_FLOOR from it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

from memoir.cards.collect import CollectReport, collect_file  # noqa: E402
from memoir.cards.config import load_settings  # noqa: E402
from memoir.cards.sanitize import sanitize  # noqa: E402
from memoir.flows.pipeline import run_pipeline  # noqa: E402
from memoir.index.search import search_cards, search_embedder  # noqa: E402
from memoir.index.search_results import hit_strength  # noqa: E402

SET = ROOT / "tests" / "fixtures" / "conversational"
K = 5


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))] if s else float("nan")


def questions() -> list[dict]:
    return [json.loads(line) for line in (SET / "questions.jsonl").read_text(encoding="utf-8").splitlines()]


def session_files() -> list[Path]:
    return sorted(SET.glob("claude-code/*/*.jsonl"))


def baseline_turns(blob_cap: int) -> list[tuple[str, int, str]]:
    """(session id, line, sanitized text) for every turn with text, thinking left out as search does."""
    out = CollectReport()
    for path in session_files():
        collect_file(path, "claude-code", None, out)
    rows = []
    for turns in out.sessions.values():
        for t in sorted(turns, key=lambda t: (t.seq, t.line)):
            if t.kind != "thinking" and t.text.strip():
                rows.append((t.session_id, t.line, sanitize(t.text, blob_cap)))
    return rows


def window_rows(rows: list[tuple[str, int, str]], span: int) -> list[tuple[str, tuple[int, ...], str]]:
    """The window baseline: (session id, lines, text) of `span` consecutive turns of one session,
    starting every span // 2 turns (half overlap), the same sanitized text as the single-turn rows."""
    by_session: dict[str, list[tuple[int, str]]] = {}
    for session, line, text in rows:
        by_session.setdefault(session, []).append((line, text))
    out = []
    step = max(1, span // 2)
    for session, turns in by_session.items():
        for i in range(0, max(1, len(turns) - span + step), step):
            chunk = turns[i:i + span]
            if chunk:
                out.append((session, tuple(line for line, _ in chunk), "\n".join(text for _, text in chunk)))
    return out


def mean_card_span(settings) -> int:
    """The mean number of turns a card's source covers in the built home (the window baseline's size)."""
    from memoir.cards.store import CardStore

    cards, _ = CardStore(settings.cards_dir, settings.state_dir).load_all()
    spans = [s.turns[1] - s.turns[0] + 1 for c in cards for s in c.sources]
    return max(1, round(sum(spans) / len(spans))) if spans else 11


def memoir_hit(result, q: dict) -> bool:
    want = set(q["answer_lines"])
    for hit in result.hits:
        for s in hit.sources:
            if s.session_id == q["session_id"] and any(s.lines[0] <= line <= s.lines[1] for line in want):
                return True
    return any(t.session_id == q["session_id"] and t.line in want for t in result.turns)


def memoir_exact(result, q: dict) -> bool:
    """Stricter: the answer line itself is shown, as a card's matched turn or as a turn of its own."""
    shown = [t for h in result.hits for t in h.evidence] + list(result.turns)
    return any(t.session_id == q["session_id"] and t.line in q["answer_lines"] for t in shown)


def floor_report(settings, embedder, qs: list[dict]) -> None:
    """Answer hits against the others, by the strength search hides weak hits by."""
    answers, others = [], []
    for q in qs:
        result = search_cards(settings, q["q"], embedder=embedder, k=20)
        for hit in result.hits:
            ok = any(s.session_id == q["session_id"] and any(s.lines[0] <= n <= s.lines[1] for n in q["answer_lines"])
                     for s in hit.sources)
            (answers if ok else others).append(hit_strength(hit))
        for t in result.turns:
            ok = t.session_id == q["session_id"] and t.line in q["answer_lines"]
            (answers if ok else others).append(hit_strength(t))
    print(f"k=20: {len(answers)} answer hits, {len(others)} other hits")
    for floor in (0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.45, 0.50):
        kept = sum(s >= floor for s in answers) / max(1, len(answers))
        hidden = sum(s < floor for s in others) / max(1, len(others))
        print(f"  floor {floor:.2f}: answer hits kept {kept:.3f}   other hits hidden {hidden:.3f}")
    for name, values in (("answer", answers), ("other", others)):
        print(f"  {name} strength p05 {pct(values, 0.05):.3f} p25 {pct(values, 0.25):.3f} "
              f"p50 {pct(values, 0.5):.3f} p75 {pct(values, 0.75):.3f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--verbose", action="store_true", help="print each question and which side found it")
    ap.add_argument("--floor", action="store_true", help="print answer vs other hits by similarity floor")
    args = ap.parse_args()
    qs = questions()
    embedder = search_embedder()  # what `memoir search` loads; the baseline uses it too (same model)
    with tempfile.TemporaryDirectory(prefix="memoir-bench-search-") as tmp:
        settings = load_settings(home=tmp)
        t0 = time.perf_counter()
        summary = run_pipeline(settings, session_files())
        built = time.perf_counter() - t0
        cards = len(list(Path(settings.cards_dir).rglob("*.md")))
        print(f"set: {len(session_files())} sessions, {len(qs)} questions; memoir home built in {built:.1f} s "
              f"({cards} card files)")
        del summary  # the run's own counts are not what this bench measures
        if args.floor:
            floor_report(settings, embedder, qs)
            return 0

        rows = baseline_turns(settings.blob_cap)
        matrix = embedder.encode([text for _, _, text in rows])
        span = mean_card_span(settings)
        windows = window_rows(rows, span)
        wmatrix = embedder.encode([text for _, _, text in windows])
        print(f"baselines: {len(rows)} single turns and {len(windows)} windows of {span} turns (memoir's mean "
              f"card span), embedded with {embedder.model_id}")

        t0 = time.perf_counter()
        search_cards(settings, "warm up the model and the index", embedder=embedder, k=K)
        print(f"first search (reads the ledgered logs into the turn index, embeds every turn): "
              f"{time.perf_counter() - t0:.1f} s")
        found_m = found_b = found_w = exact = 0
        latencies = []
        for q in qs:
            t = time.perf_counter()
            result = search_cards(settings, q["q"], embedder=embedder, k=K)
            latencies.append((time.perf_counter() - t) * 1000)
            m = memoir_hit(result, q)
            exact += memoir_exact(result, q)
            qv = embedder.encode_one(q["q"])
            top = np.argsort(-(matrix @ qv))[:K]
            b = any(rows[i][0] == q["session_id"] and rows[i][1] in q["answer_lines"] for i in top)
            wtop = np.argsort(-(wmatrix @ qv))[:K]
            w = any(windows[i][0] == q["session_id"] and set(windows[i][1]) & set(q["answer_lines"]) for i in wtop)
            found_m += m
            found_b += b
            found_w += w
            if args.verbose:
                print(f"  memoir {'+' if m else '-'}  turn {'+' if b else '-'}  window {'+' if w else '-'}  "
                      f"{latencies[-1]:6.1f} ms  {q['q']}")
    n = len(qs)
    better = max(found_b, found_w)
    print(f"evidence recall@{K}:  memoir search {found_m / n:.3f} ({found_m}/{n})   "
          f"single-turn baseline {found_b / n:.3f} ({found_b}/{n})   window baseline {found_w / n:.3f} ({found_w}/{n})")
    print(f"  memoir / the better baseline: {found_m / better if better else float('inf'):.2f}x (target >= 1.2x)")
    print(f"  stricter, memoir showing the answer turn itself (as evidence or a turn): {exact / n:.3f} ({exact}/{n})")
    print(f"memoir search latency (warm): p50 {pct(latencies, 0.5):.1f} ms   p95 {pct(latencies, 0.95):.1f} ms   "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus: other work on the box shows here)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
