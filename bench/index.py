"""Index benchmark: rebuild throughput against bare `model.encode`, size, query latency, recall.

For each size it writes synthetic card files, then prints:
- embedding throughput of the rebuild pipeline (read, parse, embed, write, verify, swap) next to a
  bare `model.encode` of the same retrieval texts, and their ratio (goal >= 0.9);
- rebuild wall time and index size on disk;
- per query, wall and CPU p50/p99 of the query's real MiniLM encode (distinct question texts, so
  no cached vector answers), KNN and FTS, today's path (ONNX encode, Hamming over the codes in
  memory, a 4096-wide shortlist re-scored against the int8 copy, the best 32 (2 k at least) exactly) beside the
  path before issue 26 (torch encode, 16 vec0 partition scans), same run, same queries (goal:
  encode + KNN + FTS p99 < 20 ms at 100k);
- recall@10 of that KNN with the ONNX query vector against exact float search with the torch query
  vector (goal >= 0.99), and a sweep of the int8 re-scored shortlist's width.
Prints figures; asserts nothing.

    .venv/bin/python bench/index.py --sizes 10000
    .venv/bin/python bench/index.py                 # 10,000 and 100,000 cards (100k: ~20+ min on 2 cores)
    .venv/bin/python bench/index.py --sizes 100000 --bare-max 10000   # bare encode on a 10k sample
    .venv/bin/python bench/index.py --sizes 100000 --random-vectors   # query latency only, in a minute
    .venv/bin/python -m bench.index --cards 1000000   # a team's year: build time, recall p99, size

`--random-vectors` skips the model for the cards: rows get random unit vectors, so it measures
query latency (brute force: independent of what the vectors hold) and a pessimistic recall (random
vectors quantize worse than sentence embeddings); queries are still the real model's; it prints
no throughput figures. `--cards N` from 100,000 on implies it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

from memoir.cards.values import Card, Source  # noqa: E402
from memoir.cards.store import CardStore  # noqa: E402
from memoir.index.db import SHARDS, SHORTLIST, WIDE_SHORTLIST, open_index  # noqa: E402
from memoir.index.embed import Embedder  # noqa: E402
from memoir.index.plan import retrieval_text  # noqa: E402
from memoir.index.rebuild import rebuild_index  # noqa: E402

COMPONENTS = [
    "sync client", "session factory", "health route", "build config", "cache layer", "job queue",
    "auth middleware", "upload handler", "scheduler", "metrics exporter", "search indexer", "mail sender",
    "payment webhook", "feature flag service", "image resizer", "rate limiter", "config loader",
    "migration runner", "websocket gateway", "pdf renderer", "cron worker", "graphql resolver",
    "s3 uploader", "kafka consumer", "redis lock", "oauth callback", "csv importer", "test fixture",
    "docker entrypoint", "ci pipeline", "terraform module", "helm chart", "nginx proxy", "celery beat",
    "django admin", "react form", "vite build", "jest runner", "cargo workspace", "go module",
]
SYMPTOMS = [
    "hangs when the upstream stalls", "fails with database is locked", "returns 500 after the upgrade",
    "breaks the production build", "serves stale values after a deploy", "runs jobs twice after a restart",
    "rejects valid tokens near midnight", "truncates large uploads", "leaks file descriptors",
    "deadlocks under parallel tests", "times out only in CI", "double-encodes unicode",
    "loses messages on rebalance", "crashes with out of memory", "ignores the environment override",
    "panics on an empty list", "reports the wrong timezone", "retries forever on 4xx",
    "compiles but fails at import", "writes partial files on crash",
]
CAUSES = [
    ("ETIMEDOUT", "the client is created with timeout=None", "set an explicit connect and read timeout"),
    ("SQLITE_BUSY", "two writers share one SQLite file without WAL", "enable journal_mode=WAL and one writer"),
    ("TypeError", "a sync handler is awaited by the framework", "make the handler async or wrap it in run_sync"),
    ("MODULE_NOT_FOUND", "it imports ./env.local which exists only locally", "load env files through the config loader"),
    ("E0382", "the vector is moved into the loop", "iterate by reference or clone before the loop"),
    ("ENOENT", "the path is resolved against the process cwd", "resolve paths against __dirname"),
    ("max_connections", "the pool size exceeds the server limit", "cap pool_size below max_connections"),
    ("compilerOptions.strict", "strict mode was enabled for all files at once", "enable strict per directory"),
    ("ExpiredSignatureError", "no leeway is configured for clock drift", "allow 30 seconds of leeway"),
    ("413", "the proxy body limit is lower than the app limit", "raise client_max_body_size to match"),
    ("EMFILE", "responses are never closed", "close responses in a finally block or use a context manager"),
    ("OOMKilled", "the whole file is read into memory", "stream the file in chunks"),
    ("UnicodeDecodeError", "the file is opened without an encoding", "open files with encoding='utf-8'"),
    ("RebalanceInProgress", "offsets are committed before processing", "commit offsets after processing"),
    ("KeyError", "the settings dict is read before defaults merge", "merge defaults at the entrypoint"),
    ("E0502", "a mutable borrow overlaps an immutable one", "end the immutable borrow before push"),
    ("TS2345", "the union type is not narrowed", "narrow with a type guard before the call"),
    ("ECONNRESET", "keep-alive sockets are reused after the server closed them", "lower the pool idle timeout"),
    ("DeadlockDetected", "rows are locked in different orders", "lock rows in primary key order"),
    ("ImportError", "a circular import between models and services", "move the shared type to its own module"),
    ("EACCES", "the container runs as root but the volume is owned by uid 1000", "run with --user 1000"),
    ("non-fast-forward", "the branch was rebased after pushing", "push with --force-with-lease"),
    ("flaky", "tests share a global temp directory", "give each test its own tmp_path"),
    ("SIGKILL", "the worker exceeds the memory limit on large batches", "lower the batch size"),
    ("429", "retries have no backoff", "retry with exponential backoff and jitter"),
    ("ValidationError", "optional fields are declared without defaults", "give optional fields default None"),
    ("ERR_REQUIRE_ESM", "an ESM-only package is required from CommonJS", "use a dynamic import"),
    ("PermissionError", "the lock file sits in a read-only directory", "put lock files in the state directory"),
    ("StaleElementReference", "the page re-renders between find and click", "re-query the element before clicking"),
    ("InvalidCacheKey", "cache keys include the request timestamp", "drop volatile fields from the key"),
]
WORDS = ("amber basalt cedar delta ember fjord garnet harbor indigo juniper krypton lagoon meadow nickel "
         "onyx prairie quartz raven sierra tundra umber violet willow xenon yarrow zephyr").split()
TOPICS = ("python", "rust", "typescript", "postgres", "docker", "ci", "networking", "auth", "testing", "build")


def synthetic_card(i: int, rng: random.Random) -> Card:
    comp, sym = rng.choice(COMPONENTS), rng.choice(SYMPTOMS)
    code, cause, fix = rng.choice(CAUSES)
    name = f"{rng.choice(WORDS)}-{rng.choice(WORDS)}-{i % 997}"
    return Card(
        id=f"c-{i:016x}",
        status=rng.choice(("active",) * 8 + ("candidate", "superseded")),
        topics=tuple(sorted({rng.choice(TOPICS), rng.choice(TOPICS)})),
        task_type=rng.choice(("debug", "config", "build", "test")),
        workspace=f"/work/{name}",
        created="2024-05-01T10:00:00+00:00", updated="2024-05-02T10:00:00+00:00",
        sources=(Source(f"sess-{i}", "claude_code", f"/logs/sess-{i}.jsonl", (1, 80), (3, 41)),),
        error_signature=f"{code}: the {comp} {sym}",
        goal=f"Find out why the {comp} in {name} {sym}.",
        background=f"The {comp} of {name} started to misbehave after a change.",
        evidence=f"$ pytest -x\n{code} raised in {comp}\n" * 8,
        conclusion=f"The {comp} in {name} {sym} because {cause}; {fix}.",
        counterexamples=f"Does not apply when the {comp} is not on the {rng.choice(WORDS)} path.",
    )


def synthetic_query(rng: random.Random) -> str:
    comp, sym = rng.choice(COMPONENTS), rng.choice(SYMPTOMS)
    code, cause, _ = rng.choice(CAUSES)
    return rng.choice((
        f"why does the {comp} {sym}? I see {code}",
        f"{code} in the {comp}",
        f"the {comp} {sym}, probably because {cause}",
        f"how do I fix {code} when {cause}",
    ))


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


class RandomVectors:
    """Stands in for the model in `--random-vectors` runs: same identity, random unit vectors."""

    def __init__(self, embedder: Embedder):
        self.model_id, self.dim, self.rng = embedder.model_id, embedder.dim, np.random.default_rng(0)

    def encode(self, texts) -> np.ndarray:
        x = self.rng.standard_normal((len(texts), self.dim)).astype(np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True)


def build_random(n: int, cards: list[Card], root: Path, fake: RandomVectors) -> None:
    t = time.perf_counter()
    with open_index(root / "index", fake) as ix:
        for start in range(0, n, 5000):
            part = cards[start:start + 5000]
            ix.write_rows(part, {c.id: "random" for c in part}, fake.encode(part))
    size = sum(p.stat().st_size for p in (root / "index").iterdir())
    print(f"random-vector index: {n:,} rows written in {time.perf_counter() - t:.1f} s, "
          f"{size / 1e6:.1f} MB on disk ({size / n:.0f} B/card); no model, no throughput figures", flush=True)


def bench_size(n: int, args, embedder: Embedder) -> None:
    print(f"\n== {n:,} cards ==", flush=True)
    root = Path(tempfile.mkdtemp(prefix=f"memoir-bench-{n}-", dir=args.tmp))
    rng = random.Random(n)
    cards = [synthetic_card(i, rng) for i in range(n)]
    if args.random_vectors:
        fake = RandomVectors(embedder)
        build_random(n, cards, root, fake)
        measure_queries(root, args, fake)
        shutil.rmtree(root, ignore_errors=True)
        return
    store = CardStore(root / "cards", root / "state")
    t = time.perf_counter()
    for card in cards:
        store.write(card)
    print(f"wrote {n:,} card files in {time.perf_counter() - t:.1f} s (setup, not timed below)", flush=True)

    texts = [retrieval_text(c) for c in cards]
    sample = texts if len(texts) <= args.bare_max else random.Random(1).sample(texts, args.bare_max)
    model = embedder._load()
    t = time.perf_counter()
    model.encode(sample, batch_size=embedder.batch_size, normalize_embeddings=True, convert_to_numpy=True,
                 show_progress_bar=False)
    bare_s = time.perf_counter() - t
    bare_rate = len(sample) / bare_s
    note = "" if len(sample) == len(texts) else f" (uniform sample of {len(sample):,} of the same texts)"
    print(f"bare model.encode: {len(sample):,} texts in {bare_s:.1f} s = {bare_rate:.1f} cards/s{note}", flush=True)

    t = time.perf_counter()
    report = rebuild_index(store, root / "index", embedder, args.concurrency)
    wall = time.perf_counter() - t
    rate = n / wall
    print(f"rebuild (concurrency {args.concurrency}): {wall:.1f} s wall = {rate:.1f} cards/s "
          f"(embedding {report.encode_seconds:.1f} s, everything else {wall - report.encode_seconds:.1f} s)")
    print(f"  throughput ratio pipeline/bare = {rate / bare_rate:.3f} (goal >= 0.9); "
          f"rebuild vs bare encode time of all texts = {wall / (n / bare_rate):.3f}x (goal <= 1.10)")
    # The same model.encode calls timed inside the rebuild: robust when other work shares the CPUs.
    print(f"  in-run: model.encode {report.encode_seconds / wall:.1%} of the rebuild wall time, "
          f"everything else {1 - report.encode_seconds / wall:.1%} (in-run ratio {report.encode_seconds / wall:.3f})")
    print(f"index size on disk: {report.size_bytes / 1e6:.1f} MB ({report.size_bytes / n:.0f} B/card)", flush=True)
    measure_queries(root, args, embedder)
    if args.keep:
        print(f"kept {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)


def vec0_shortlist(ix, q: np.ndarray, k: int, shortlist: int) -> list[tuple[str, float]]:
    """The KNN before issue 26, kept here as the baseline: one vec0 scan per shard, then exact cosine."""
    per_shard = max(k, -(-max(shortlist, k) // SHARDS))
    qbits = ix.conn.execute("SELECT vec_quantize_binary(?)", (q.tobytes(),)).fetchall()[0][0]
    rowids = []
    for shard in range(SHARDS):
        rowids.extend(r for (r,) in ix.conn.execute(
            "SELECT rowid FROM vec_cards WHERE embedding_bq MATCH vec_bit(?) AND k = ? AND shard = ?",
            (qbits, per_shard, shard)))
    found = ix.conn.execute("SELECT id, embedding FROM cards WHERE n IN (SELECT value FROM json_each(?))",
                            (json.dumps(rowids),)).fetchall()
    scores = np.frombuffer(b"".join(b for _, b in found), dtype=np.float32).reshape(len(found), -1) @ q
    order = sorted(range(len(found)), key=lambda j: (-scores[j], found[j][0]))[:k]
    return [(found[j][0], float(scores[j])) for j in order]


def timed(fn, *a, **kw):
    """(result, wall ms, CPU ms of this thread and the threads it waits on in-process)."""
    w, c = time.perf_counter(), time.process_time()
    out = fn(*a, **kw)
    return out, (time.perf_counter() - w) * 1e3, (time.process_time() - c) * 1e3


def row(label: str, wall: list[float], cpu: list[float], goal: str = "") -> str:
    return (f"  {label:<38} wall p50 {pct(wall, .5):6.2f}  p99 {pct(wall, .99):6.2f} ms   "
            f"CPU p50 {pct(cpu, .5):6.2f}  p99 {pct(cpu, .99):6.2f} ms  {goal}")


def measure_queries(root: Path, args, embedder) -> None:
    """Per query: the real model's vector of a question text (each one distinct, so no cache answers),
    KNN and FTS; today's path (ONNX query encode, in-memory codes) beside the path before issue 26
    (torch encode, 16 vec0 scans), in the same run on the same queries."""
    qrng = random.Random(7)
    queries = [f"{synthetic_query(qrng)} (#{i})" for i in range(args.queries)]
    torch_enc, onnx_enc = Embedder(threads=1), Embedder(threads=1, query_backend="onnx")
    t = time.perf_counter()
    torch_enc.encode_one("warm up"), onnx_enc.encode_one("warm up")
    print(f"query encoders ready in {time.perf_counter() - t:.1f} s (one thread each; the onnx one took the "
          f"{onnx_enc.query_path} path)", flush=True)
    with open_index(root / "index", embedder) as ix:
        all_ids = [r[0] for r in ix.conn.execute("SELECT id FROM cards ORDER BY n")]
        matrix = np.frombuffer(b"".join(r[0] for r in ix.conn.execute("SELECT embedding FROM cards ORDER BY n")),
                               dtype=np.float32).reshape(len(all_ids), -1)
        _, load_ms, _ = timed(ix.warm)  # the recall service's reader: codes and the int8 copy in memory
        for qt in queries[:5]:  # warm the page cache like a live process would be
            q = torch_enc.encode_one(qt + " warm")
            ix.knn(q, 10, shortlist=args.shortlist), vec0_shortlist(ix, q, 10, args.shortlist), ix.fts(qt, 10)
        figures: dict[str, tuple[list, list]] = {}

        def add(name, wall, cpu):
            figures.setdefault(name, ([], []))
            figures[name][0].append(wall)
            figures[name][1].append(cpu)

        recall, close = [], []
        for qt in queries:
            qv_torch, w_te, c_te = timed(torch_enc.encode_one, qt)
            qv, w_oe, c_oe = timed(onnx_enc.encode_one, qt)
            old, w_ok, c_ok = timed(vec0_shortlist, ix, qv_torch, 10, args.shortlist)
            approx, w_k, c_k = timed(ix.knn, qv, 10, shortlist=args.shortlist)
            _, w_f, c_f = timed(ix.fts, qt, 10)
            add("encode, torch (before)", w_te, c_te)
            add("encode, onnx (now)", w_oe, c_oe)
            add("KNN, 16 vec0 scans (before)", w_ok, c_ok)
            add("KNN, codes + int8 copy (now)", w_k, c_k)
            add("FTS", w_f, c_f)
            add("encode+KNN+FTS before", w_te + w_ok + w_f, c_te + c_ok + c_f)
            add("encode+KNN+FTS now", w_oe + w_k + w_f, c_oe + c_k + c_f)
            close.append(float(qv @ qv_torch))
            # Exact reference: the torch vector against every float vector; a tie with the 10th counts.
            tenth = np.partition(matrix @ qv_torch, -10)[-10]
            recall.append(sum(1 for _, s in approx if s >= tenth - 1e-5) / 10)
        exact_ms = [timed(ix.knn, q, 10, exact=True)[1] for q in torch_enc.encode(queries[:10])]
        sweep = []
        for wide in (1024, 2048, 4096, 8192):
            hits = []
            for qt in queries[:100]:
                q = torch_enc.encode_one(qt)
                tenth = np.partition(matrix @ q, -10)[-10]
                got, ms, _ = timed(ix.knn, q, 10, shortlist=args.shortlist, wide=wide)
                hits.append((sum(1 for _, s in got if s >= tenth - 1e-5) / 10, ms))
            sweep.append(f"{wide}: recall {statistics.mean(h for h, _ in hits):.4f}, "
                         f"p50 {pct([m for _, m in hits], .5):.1f} ms")
    print(f"per query over {len(queries)} distinct questions (k=10, shortlist {args.shortlist}; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs: wall follows the neighbours, CPU does not):")
    for name, (wall, cpu) in figures.items():
        print(row(name, wall, cpu, "goal p99 < 20 ms at 100k" if name.endswith("now") else ""))
    print(f"  codes and int8 vectors loaded into memory once in {load_ms:.0f} ms "
          f"({len(all_ids) * embedder.dim * 9 // 8 / 1e6:.1f} MB); "
          f"exact float KNN (vec_distance_cosine scan) p50 {statistics.median(exact_ms):.1f} ms")
    print(f"recall@10 of the onnx query's quantized + re-scored KNN vs exact float KNN of the torch query: "
          f"{statistics.mean(recall):.4f} (min {min(recall):.1f}; goal >= 0.99); onnx vs torch query vector "
          f"cosine min {min(close):.7f}", flush=True)
    print(f"  int8 re-scored Hamming shortlist sweep (100 queries, torch query; now {WIDE_SHORTLIST}): "
          + " | ".join(sweep), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--concurrency", type=int, default=2, help="reader threads in the rebuild")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--shortlist", type=int, default=SHORTLIST)
    parser.add_argument("--bare-max", type=int, default=20_000,
                        help="bare encode at most this many texts (a uniform sample above it)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--tmp", default=None, help="directory for the synthetic homes")
    parser.add_argument("--keep", action="store_true", help="keep the synthetic card files and index")
    parser.add_argument("--random-vectors", action="store_true",
                        help="no model: random unit vectors, query latency and pessimistic recall only")
    parser.add_argument("--cards", type=int, default=None,
                        help="one size instead of --sizes; from 100,000 on it implies --random-vectors "
                             "(embedding a million cards takes hours on 2 cores): a team's year, 1000000")
    args = parser.parse_args()
    if args.cards:
        args.sizes = [args.cards]
        args.random_vectors = args.random_vectors or args.cards >= 100_000
    embedder = Embedder(threads=args.threads)
    if args.random_vectors:
        for n in args.sizes:
            bench_size(n, args, embedder)
        return
    t = time.perf_counter()
    embedder.encode(["warm up"])
    import torch

    print(f"model {embedder.model_id} loaded in {time.perf_counter() - t:.1f} s; torch threads "
          f"{torch.get_num_threads()}, cpus {os.cpu_count()}")
    for n in args.sizes:
        bench_size(n, args, embedder)


if __name__ == "__main__":
    main()
