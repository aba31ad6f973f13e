"""Deep search against a plain turn index: evidence recall@5 and latency on memoir's search sets.

    python -m bench.search [--set conversational|coding_sessions|all] [--verbose]

Two sets in `tests/fixtures/`: `conversational/` (six sessions, eight topics each, 53 questions)
and `coding_sessions/` (four long coding sessions of ~300 lines, seven tasks each, 61 questions:
paraphrases, questions naming an exact identifier, and span questions whose answer needs two
turns far apart, every one of them shown for a hit). `--set all` (the default) runs both.

For each set: builds a temp memoir home from its sessions (the pipeline, then the index) and,
beside it, the baseline the issue names: one MiniLM vector per single sanitized turn of the same
files (the same embedder), brute-force cosine top 5. For every question of `questions.jsonl`:

- memoir: `search_cards(..., k=5)`, which returns at most 5 results in all, cards and the turns
  and windows no returned card covers (index/search.py); a hit when a returned card's source (same
  session) covers an answer line, or a returned turn or window holds one;
- baseline: a hit when one of its 5 turns is an answer line.
A span question (`all_of`) is a hit only when every one of its groups of lines is, on each side.

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

SETS = {name: ROOT / "tests" / "fixtures" / name for name in ("conversational", "coding_sessions")}
SET = SETS["conversational"]
K = 5


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))] if s else float("nan")


def questions(root: Path = SET) -> list[dict]:
    return [json.loads(line) for line in (root / "questions.jsonl").read_text(encoding="utf-8").splitlines()]


def session_files(root: Path = SET) -> list[Path]:
    return sorted(root.glob("claude-code/*/*.jsonl"))


def groups(q: dict) -> list[set[int]]:
    """The groups of answer lines a hit must show: one per turn for a span question, else one of all."""
    return [set(g) for g in q["all_of"]] if q.get("all_of") else [set(q["answer_lines"])]


def baseline_turns(blob_cap: int, root: Path = SET) -> list[tuple[str, int, str]]:
    """(session id, line, sanitized text) for every turn with text, thinking left out as search does."""
    out = CollectReport()
    for path in session_files(root):
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
    """Every group shown: by a returned card's source lines, or a returned turn or window's lines."""
    ranges = [s.lines for hit in result.hits for s in hit.sources if s.session_id == q["session_id"]]
    ranges += [(t.line, max(t.line, t.end_line)) for t in result.turns if t.session_id == q["session_id"]]
    return all(any(lo <= line <= hi for lo, hi in ranges for line in g) for g in groups(q))


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


def run_set(name: str, root: Path, embedder, args) -> None:
    """Build a home from one set, then memoir and both baselines over its questions, same model, same run."""
    qs = questions(root)
    files = session_files(root)
    with tempfile.TemporaryDirectory(prefix="memoir-bench-search-") as tmp:
        settings = load_settings(home=tmp)
        t0 = time.perf_counter()
        run_pipeline(settings, files)  # the run's own counts are not what this bench measures
        built = time.perf_counter() - t0
        cards = len(list(Path(settings.cards_dir).rglob("*.md")))
        print(f"== {name}: {len(files)} sessions, {len(qs)} questions; memoir home built in {built:.1f} s "
              f"({cards} card files)")
        if args.floor:
            floor_report(settings, embedder, qs)
            return

        rows = baseline_turns(settings.blob_cap, root)
        matrix = embedder.encode([text for _, _, text in rows])
        span = mean_card_span(settings)
        windows = window_rows(rows, span)
        wmatrix = embedder.encode([text for _, _, text in windows])
        print(f"baselines: {len(rows)} single turns and {len(windows)} windows of {span} turns (memoir's mean "
              f"card span), embedded with {embedder.model_id}")

        t0 = time.perf_counter()
        search_cards(settings, "warm up the model and the index", embedder=embedder, k=K)
        print(f"first search (the turn index is ready from the run): {time.perf_counter() - t0:.1f} s")
        found: dict[str, list[int]] = {}  # kind -> [memoir, turn, window, questions]
        exact = 0
        latencies = []
        for q in qs:
            t = time.perf_counter()
            result = search_cards(settings, q["q"], embedder=embedder, k=K)
            latencies.append((time.perf_counter() - t) * 1000)
            m = memoir_hit(result, q)
            exact += memoir_exact(result, q)
            qv = embedder.encode_one(q["q"])
            top = np.argsort(-(matrix @ qv))[:K]
            b = all(any(rows[i][0] == q["session_id"] and rows[i][1] in g for i in top) for g in groups(q))
            wtop = np.argsort(-(wmatrix @ qv))[:K]
            w = all(any(windows[i][0] == q["session_id"] and set(windows[i][1]) & g for i in wtop) for g in groups(q))
            for kind in ("all", q.get("kind", "paraphrase")):
                tally = found.setdefault(kind, [0, 0, 0, 0])
                for j, ok in enumerate((m, b, w, True)):
                    tally[j] += ok
            if args.verbose:
                print(f"  memoir {'+' if m else '-'}  turn {'+' if b else '-'}  window {'+' if w else '-'}  "
                      f"{latencies[-1]:6.1f} ms  {q['q']}")
    found_m, found_b, found_w, n = found["all"]
    better = max(found_b, found_w)
    print(f"evidence recall@{K}:  memoir search {found_m / n:.3f} ({found_m}/{n})   "
          f"single-turn baseline {found_b / n:.3f} ({found_b}/{n})   window baseline {found_w / n:.3f} ({found_w}/{n})")
    print(f"  memoir / the better baseline: {found_m / better if better else float('inf'):.2f}x (target >= 1.2x)")
    for kind, (km, kb, kw, kn) in sorted(found.items()):
        if kind != "all" and len(found) > 2:
            print(f"  {kind:<11} ({kn:>2}): memoir {km / kn:.3f}   turn {kb / kn:.3f}   window {kw / kn:.3f}")
    print(f"  stricter, memoir showing the answer turn itself (as evidence or a turn): {exact / n:.3f} ({exact}/{n})")
    print(f"memoir search latency (warm): p50 {pct(latencies, 0.5):.1f} ms   p95 {pct(latencies, 0.95):.1f} ms   "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus: other work on the box shows here)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", choices=[*SETS, "all"], default="all", help="which search set (default: both)")
    ap.add_argument("--verbose", action="store_true", help="print each question and which side found it")
    ap.add_argument("--floor", action="store_true", help="print answer vs other hits by similarity floor")
    args = ap.parse_args()
    embedder = search_embedder()  # what `memoir search` loads; the baselines use it too (same model)
    for name, root in SETS.items():
        if args.set in (name, "all"):
            run_set(name, root, embedder, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
