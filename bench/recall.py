"""Recall latency: p50/p99 in-process, and end to end through the Claude Code hook, warm and cold.

For each size (default 1k, 10k, 100k synthetic cards) it prints:
- in-process `Recaller.recall` with the model warm: p50/p99 of the whole call (sanitize, rewrite,
  embed, KNN, FTS, card reads, gates, debug-log append) and of the part after the embedding
  (goal: p99 < 50 ms at 100k on 2 cores);
- the hook end to end (`python -m flows.recall_service claude-code` as a subprocess, stdin JSON
  to stdout JSON) with `memoir serve-recall` warm: p50/p95/p99 (goal: p95 < 150 ms);
- the same hook with no service running (lexical-only, no torch): p50/p95/max against the budget.
Prints figures; asserts nothing.

    .venv/bin/python bench/recall.py                      # 1k, 10k, 100k (first run builds ~5 min)
    .venv/bin/python bench/recall.py --sizes 1000 --queries 50

Vectors: encoding 100k retrieval texts takes ~20 min on 2 cores, and latency does not depend on
which vector belongs to which text (the KNN scans every row's bits whatever they hold, FTS matches
on text, at most 16 card files are read). So the real model encodes `--pool` distinct card texts
once, and every other card gets a mix of two pool vectors plus noise, renormalised: realistic
sentence-embedding geometry (clusters, not uniform noise) at any size. Card files and the index
are real and cached under --cache between runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

from cards.config import load_settings  # noqa: E402
from cards.store import render_card, content_hash  # noqa: E402
from flows.recall_service import ask  # noqa: E402
from index.db import open_index  # noqa: E402
from index.embed import default_embedder  # noqa: E402
from index.plan import retrieval_text  # noqa: E402
from index.recall import Recaller, wait_for_workers  # noqa: E402

_spec = importlib.util.spec_from_file_location("bench_index", ROOT / "bench" / "index.py")
bench_index = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_index)
synthetic_card, synthetic_query = bench_index.synthetic_card, bench_index.synthetic_query

HOOK = [sys.executable, "-m", "flows.recall_service", "claude-code"]
MEMOIR = str(Path(sys.executable).parent / "memoir")


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))] if s else float("nan")


def pool_vectors(embedder, pool: int, cache: Path) -> np.ndarray:
    path = cache / f"pool-{pool}.npy"
    if path.exists():
        return np.load(path)
    rng = random.Random(1)
    texts = [retrieval_text(synthetic_card(i, rng)) for i in range(pool)]
    t = time.perf_counter()
    vecs = embedder.encode(texts)
    print(f"encoded a pool of {pool} distinct card texts in {time.perf_counter() - t:.1f} s", flush=True)
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, vecs)
    return vecs


def mixed_vectors(pool: np.ndarray, start: int, n: int) -> np.ndarray:
    """Card i: pool[i] for i < len(pool), else a noisy mix of two pool vectors (renormalised)."""
    p = len(pool)
    idx = np.arange(start, start + n)
    rng = np.random.default_rng(start)
    a, b = pool[idx % p], pool[(idx * 7919 + 13) % p]
    mix = np.where((idx < p)[:, None], a, a + 0.5 * b + 0.05 * rng.standard_normal(a.shape).astype(np.float32))
    return (mix / np.linalg.norm(mix, axis=1, keepdims=True)).astype(np.float32)


def build(n: int, cache: Path, pool: np.ndarray, embedder) -> Path:
    """A memoir home with n card files and their index (cached: built once per size)."""
    home = cache / f"home-{n}"
    done = home / ".built"
    if done.exists():
        return home
    t = time.perf_counter()
    settings = load_settings(home=home)
    settings.cards_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(2)
    with open_index(settings.index_dir, embedder) as ix:
        for start in range(0, n, 5000):
            cards = [synthetic_card(i, rng) for i in range(start, min(n, start + 5000))]
            hashes = {}
            for c in cards:  # plain writes: a bench corpus needs no fsync per file
                data = render_card(c).encode("utf-8")
                (settings.cards_dir / f"{c.id}.md").write_bytes(data)
                hashes[c.id] = content_hash(data)
            ix.write_rows(cards, hashes, mixed_vectors(pool, start, len(cards)))
    done.write_text("ok\n")
    print(f"built {n:,} card files + index in {time.perf_counter() - t:.1f} s", flush=True)
    return home


def prompt(q: str, i: int) -> str:
    # A fresh session per call and per run: `AlreadyInjected` must not empty the answers of a rerun.
    return json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": q,
                       "session_id": f"bench-{os.getpid()}-{time.monotonic_ns()}-{i}",
                       "cwd": "/work/bench", "transcript_path": "/tmp/t.jsonl"})


def run_hooks(home: Path, queries: list[str], cmd: list[str]) -> tuple[list[float], int]:
    env = {**os.environ, "MEMOIR_HOME": str(home)}
    walls, answered = [], 0
    for i, q in enumerate(queries):
        t = time.perf_counter()
        out = subprocess.run(cmd, input=prompt(q, i), capture_output=True, text=True, env=env, cwd=ROOT)
        walls.append((time.perf_counter() - t) * 1000)
        answered += bool(out.stdout.strip())
    return walls, answered


def bench_size(n: int, args, pool: np.ndarray, embedder) -> None:
    home = build(n, args.cache, pool, embedder)
    settings = load_settings(home=home)
    rng = random.Random(3)
    queries = [synthetic_query(rng) for _ in range(args.queries)]
    print(f"\n== {n:,} cards ({settings.sync_timeout_ms} ms budget) ==", flush=True)

    # In-process, warm model and open index: what the recall service does per request.
    with Recaller(settings, embedder) as r:
        for q in queries[:5]:
            r.recall(q, budget_ms=60_000)
        total, after_embed, injected = [], [], 0
        for q in queries:
            res = r.recall(q, budget_ms=60_000)
            total.append(res.elapsed_ms)
            t = res.record["timings_ms"]
            after_embed.append(sum(v for k, v in t.items() if k not in ("embed", "start", "sanitize", "rewrite")))
            injected += bool(res.cards)
    print(f"in-process recall      p50 {pct(total, .5):6.1f} ms  p99 {pct(total, .99):6.1f} ms  "
          f"(after embedding: p50 {pct(after_embed, .5):5.1f}  p99 {pct(after_embed, .99):5.1f} ms; "
          f"{injected}/{len(queries)} injected something)", flush=True)

    # Hook with no service: lexical-only, no torch, within the budget.
    hook_q = queries[:args.hooks]
    cold, answered = run_hooks(home, hook_q, HOOK)
    print(f"hook, no service       p50 {pct(cold, .5):6.1f} ms  p95 {pct(cold, .95):6.1f} ms  "
          f"max {max(cold):6.1f} ms  ({answered}/{len(cold)} answered; "
          f"{sum(w <= settings.sync_timeout_ms for w in cold)}/{len(cold)} within {settings.sync_timeout_ms} ms "
          f"wall incl. interpreter start)", flush=True)

    # Hook with the service warm.
    env = {**os.environ, "MEMOIR_HOME": str(home)}
    t = time.perf_counter()
    service = subprocess.Popen([MEMOIR, "serve-recall"], env=env, cwd=ROOT, stderr=subprocess.DEVNULL)
    try:
        while ask(settings.state_dir, {"op": "ping"}, 1.0) is None:
            if service.poll() is not None or time.perf_counter() - t > 300:
                print("recall service did not start", flush=True)
                return
            time.sleep(0.2)
        print(f"recall service warm after {time.perf_counter() - t:.1f} s (model load + index open)", flush=True)
        run_hooks(home, hook_q[:3], HOOK)
        warm, answered = run_hooks(home, hook_q, HOOK)
        print(f"hook, service warm     p50 {pct(warm, .5):6.1f} ms  p95 {pct(warm, .95):6.1f} ms  "
              f"p99 {pct(warm, .99):6.1f} ms  ({answered}/{len(warm)} answered)", flush=True)
        via_cli, _ = run_hooks(home, hook_q[:10], [MEMOIR, "hook", "claude-code"])
        print(f"`memoir hook` (CLI)    p50 {pct(via_cli, .5):6.1f} ms  (same hook through click and every "
              f"command module's imports)", flush=True)
    finally:
        service.terminate()
        service.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[1000, 10_000, 100_000])
    ap.add_argument("--queries", type=int, default=200, help="in-process queries per size")
    ap.add_argument("--hooks", type=int, default=40, help="hook subprocess runs per size and mode")
    ap.add_argument("--pool", type=int, default=2000, help="distinct texts the model encodes")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/memoir-bench-recall"))
    args = ap.parse_args()
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}", flush=True)
    embedder = default_embedder()
    t = time.perf_counter()
    embedder.encode_one("warm up")
    print(f"model loaded in {time.perf_counter() - t:.1f} s (in-process figures below exclude it)", flush=True)
    pool = pool_vectors(embedder, args.pool, args.cache)
    for n in args.sizes:
        bench_size(n, args, pool, embedder)
    wait_for_workers(10)


if __name__ == "__main__":
    main()
