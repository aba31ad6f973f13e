"""Recall latency: p50/p99 in-process, and the Claude Code hook from process start to output.

For each size (default 1k, 10k, 100k synthetic cards) it prints:
- in-process `Recaller.recall` with the model warm and the index warm (as the service holds them),
  wall and CPU p50/p99 of the whole call (sanitize, rewrite, embed, KNN, FTS, card reads, gates;
  CPU also counts the debug-log append) and of the part after the embedding: now (the service's
  query encoder, ONNX on one thread, stored cards, int8 re-scored KNN) beside before (torch's
  one-text encode, every card file parsed, KNN from the file, no memo: `BeforePath`), same run
  (goal: p99 < 20 ms at 100k on 2 cores; every query text distinct, so no cached vector answers);
- the hook as Claude Code runs it (the command `memoir hook install claude-code` writes, stdin JSON
  to stdout JSON, timed from before the process starts to after it exits), with one other busy
  process on the machine, for 1 and for 4 concurrent agent sessions:
  - cold: no service answers (the hook starts one in the background and answers nothing);
  - warm: `memoir serve-recall` answers; p50/p95 (goal: p95 < 100 ms on 2 cores) and the share of
    calls that have an answer (an unhurried in-process recall injects something) that the hook
    injected (goal: >= 95 %); then warm again against the service on the path before
    (`--serve-baseline`), the same hook command, same run.
Prints figures; asserts nothing; `--summary F` also writes them as JSON (`make bench` reads it).

    .venv/bin/python -m bench.recall                      # 1k, 10k, 100k (first run builds ~5 min)
    .venv/bin/python -m bench.recall --sizes 1000 --queries 50 --pool 500

`--hook-cmd`, `--service-cmd` and `--code-root` measure another hook, e.g. an older checkout:
    --code-root /tmp/old --hook-cmd "$PWD/.venv/bin/python -m flows.recall_service claude-code" \\
    --service-cmd "$PWD/.venv/bin/python -c 'from memoir.flows.cli.main import main; main()' serve-recall"

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
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

from memoir.cards.config import load_settings  # noqa: E402
from memoir.cards.store import content_hash, parse_card, render_card  # noqa: E402
from memoir.flows.cli.hook_settings import hook_command  # noqa: E402
from memoir.flows.lock import held_by_a_live_process  # noqa: E402
from memoir.flows.hook_client import LOCK_NAME  # noqa: E402
from memoir.flows.recall_service import SERVICE_THREADS, ask  # noqa: E402
from memoir.flows.hook_calls import read_calls  # noqa: E402
from memoir.index.db import SCHEMA_VERSION, WIDE_SHORTLIST, open_index  # noqa: E402
from memoir.index.embed import Embedder, default_embedder  # noqa: E402
from memoir.index.plan import retrieval_text  # noqa: E402
from memoir.index.recall import KNN_K, POOL, Recaller, wait_for_workers  # noqa: E402

_spec = importlib.util.spec_from_file_location("bench_index", ROOT / "bench" / "index.py")
bench_index = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_index)
synthetic_card, synthetic_query = bench_index.synthetic_card, bench_index.synthetic_query

MEMOIR = str(Path(sys.executable).parent / "memoir")
SESSIONS = (1, 4)  # concurrent agent sessions, each sending its prompts one after another


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
    # A schema bump must not reuse an old index, nor one without the parsed cards (index/card_fields.py).
    home = cache / f"home-{n}-schema{SCHEMA_VERSION}-fields"
    done = home / ".built"
    if done.exists():
        restamp(home, embedder)
        return home
    t = time.perf_counter()
    settings = load_settings(home=home)
    settings.cards_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(2)
    with open_index(settings.index_dir, embedder) as ix:
        for start in range(0, n, 5000):
            cards, hashes = [], {}
            for i in range(start, min(n, start + 5000)):  # plain writes: a bench corpus needs no fsync per file
                data = render_card(synthetic_card(i, rng)).encode("utf-8")
                card = parse_card(data.decode("utf-8"))  # the index holds the card its file parses to
                (settings.cards_dir / f"{card.id}.md").write_bytes(data)
                cards.append(card)
                hashes[card.id] = content_hash(data)
            ix.write_rows(cards, hashes, mixed_vectors(pool, start, len(cards)))
    done.write_text("ok\n")
    print(f"built {n:,} card files + index in {time.perf_counter() - t:.1f} s", flush=True)
    return home


def restamp(home: Path, embedder) -> None:
    """A cached home built by an older memoir holds cards another card parser stored, which recall
    refuses (it would parse every file): store them again, as a user's first run after an upgrade does."""
    from memoir.cards.store import CardStore
    from memoir.index.sync import file_hashes, restamp_fields

    settings = load_settings(home=home)
    t = time.perf_counter()
    store = CardStore(settings.cards_dir, settings.state_dir)
    with open_index(settings.index_dir, embedder) as ix:
        done = restamp_fields(store, ix, file_hashes(store)[0])
    if done:
        print(f"stored {done:,} cards again as today's card parser reads them, in {time.perf_counter() - t:.1f} s",
              flush=True)


HOOK_CWD = "/work/bench"  # the folder every hook call says it runs in


def prompt(q: str, i: int) -> str:
    # A fresh session per call and per run: `AlreadyInjected` must not empty the answers of a rerun.
    return json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": q,
                       "session_id": f"bench-{os.getpid()}-{time.monotonic_ns()}-{i}",
                       "cwd": HOOK_CWD, "transcript_path": "/tmp/t.jsonl"})


def run_hooks(home: Path, queries: list[str], cmd: list[str], cwd: Path) -> list[tuple[float, str]]:
    """Each query through one hook process, one after another: (wall ms from spawn to exit, stdout)."""
    env = {**os.environ, "MEMOIR_HOME": str(home)}
    out = []
    for i, q in enumerate(queries):
        t = time.perf_counter()
        done = subprocess.run(cmd, input=prompt(q, i), capture_output=True, text=True, env=env, cwd=cwd)
        out.append(((time.perf_counter() - t) * 1000, done.stdout.strip()))
    return out


def run_sessions(home: Path, queries: list[str], cmd: list[str], cwd: Path, sessions: int) -> list[tuple[float, str, str]]:
    """`sessions` agent sessions at once, each sending every query: (ms, stdout, query) per call."""
    results: list[list] = [[] for _ in range(sessions)]

    def one(k: int) -> None:
        results[k] = [(ms, out, q) for (ms, out), q in zip(run_hooks(home, queries, cmd, cwd), queries)]

    threads = [threading.Thread(target=one, args=(k,)) for k in range(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [r for rs in results for r in rs]


def service_pid(state_dir: Path) -> int | None:
    """The pid of the service holding the lock (warm or warming), else None."""
    path = state_dir / LOCK_NAME
    if not held_by_a_live_process(path):
        return None
    text = path.read_text().strip()
    return int(text) if text.isdigit() else None


def stop_service(state_dir: Path, proc: subprocess.Popen | None = None) -> None:
    """Stop the service this bench started, directly or through a cold hook, and wait for it to exit."""
    pid = service_pid(state_dir)
    if proc is not None and proc.poll() is None:
        proc.terminate()
        proc.wait(timeout=60)
    elif pid is not None:
        os.kill(pid, signal.SIGTERM)
    end = time.monotonic() + 60
    while service_pid(state_dir) is not None and time.monotonic() < end:
        time.sleep(0.2)


def wait_warm(state_dir: Path, limit_s: float = 300) -> bool:
    end = time.monotonic() + limit_s
    while ask(state_dir, {"op": "ping"}, 1.0) is None:
        if time.monotonic() > end:
            return False
        time.sleep(0.2)
    return True


def process_cpu_ms(pid: int | None) -> float:
    """User + system CPU a running process has used so far (Linux /proc), in ms; nan when unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, TypeError):
        return float("nan")


def children_cpu_ms() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (ru.ru_utime + ru.ru_stime) * 1000


def line(label: str, calls: list[tuple[float, str, str]], answerable: set[str] | None = None) -> str:
    walls = [c[0] for c in calls]
    injected = sum(bool(c[1]) for c in calls)
    text = (f"{label:<24} p50 {pct(walls, .5):6.1f} ms  p95 {pct(walls, .95):6.1f} ms  max {max(walls):6.1f} ms  "
            f"({len(calls)} calls, {injected} injected")
    if answerable is not None:
        have = [c for c in calls if c[2] in answerable]
        got = sum(bool(c[1]) for c in have)
        text += f"; {got}/{len(have)} = {100 * got / max(1, len(have)):.0f} % of calls that have an answer"
    return text + ")"


def warm_sessions(label: str, home: Path, state: Path, queries: list[str], answerable: set[str], cmd: list[str],
                  cwd: Path, pid: int | None) -> dict:
    """The warm hook for 1 and for 4 sessions at once: p50/p95 wall and CPU per call, printed and returned."""
    out = {}
    run_sessions(home, queries[:3], cmd, cwd, 1)
    for n in SESSIONS:
        client0, service0 = children_cpu_ms(), process_cpu_ms(pid)
        calls = run_sessions(home, queries, cmd, cwd, n)
        client, served = children_cpu_ms() - client0, process_cpu_ms(pid) - service0
        walls = [c[0] for c in calls]
        out[n] = {"p50": pct(walls, .5), "p95": pct(walls, .95), "client_cpu_ms": client / len(calls),
                  "service_cpu_ms": served / len(calls)}
        # CPU per call does not depend on the machine's load the way wall time does: with one
        # core left by the busy process, n sessions wait about n times this for their answer.
        print(line(f"{label}, {n} session{'s' if n > 1 else ''}", calls, answerable)
              + ("  goal p95 < 100 ms" if n == 4 else "")
              + f"\n{'':<24} CPU per call: hook process {client / len(calls):5.1f} ms + "
              f"service {served / len(calls):5.1f} ms", flush=True)
    return out


def bench_hooks(home: Path, settings, queries: list[str], answerable: set[str], args) -> dict:
    """The hook end to end, cold and warm, 1 and 4 sessions, beside one busy process; then warm again
    against the service on the path before issue 26's recall work (`--serve-baseline`), same run."""
    state = settings.state_dir
    cmd = shlex.split(args.hook_cmd or hook_command(None))
    cwd = args.code_root
    env = {**os.environ, "MEMOIR_HOME": str(home)}
    print(f"hook command: {shlex.join(cmd)}", flush=True)
    stop_service(state)
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    service = None
    figures = {}
    try:
        for n in SESSIONS:
            stop_service(state)
            before = len(read_calls(str(state)))
            calls = run_sessions(home, queries, cmd, cwd, n)
            # The first cold call starts the service; once it is warm, later calls of the batch are not cold.
            cold = sum(c.get("outcome") == "cold_start" for c in read_calls(str(state))[before:])
            print(line(f"hook cold, {n} session{'s' if n > 1 else ''}", calls)
                  + f" {cold} recorded as cold_start", flush=True)
        t = time.perf_counter()
        if service_pid(state) is None and ask(state, {"op": "ping"}, 0.5) is None:
            # The hook started no service (an older hook): start it as a person would.
            service = subprocess.Popen(shlex.split(args.service_cmd), env=env, cwd=cwd, stderr=subprocess.DEVNULL)
        if not wait_warm(state):
            print("recall service did not become warm", flush=True)
            return figures
        print(f"recall service warm {time.perf_counter() - t:.1f} s after the cold calls", flush=True)
        pid = service_pid(state) or (service.pid if service is not None else None)
        figures["now"] = warm_sessions("hook warm", home, state, queries, answerable, cmd, cwd, pid)
        if not args.no_baseline_service:
            stop_service(state, service)
            service = subprocess.Popen([sys.executable, "-m", "bench.recall", "--serve-baseline"], env=env, cwd=ROOT,
                                       stderr=subprocess.DEVNULL)
            if wait_warm(state):
                figures["before"] = warm_sessions("hook warm, baseline", home, state, queries, answerable, cmd, cwd,
                                                  service.pid)
            else:
                print("baseline recall service did not become warm", flush=True)
    finally:
        busy.kill()
        busy.wait()
        stop_service(state, service)
    return figures


class BeforePath:
    """Recall as it ran before issue 26's recall work, for the baseline rows of this same run: every
    card file parsed (no stored cards), KNN re-scoring 256 Hamming candidates from the file (no int8
    copy), the lexical search after the embedding on the same connection, every string of the debug
    record, card body and term count looked at afresh (no memo)."""

    def __enter__(self):
        import memoir.index.recall as recall_module
        from memoir.index.db import Index

        self.saved = (recall_module.stored_cards, Index.warm, recall_module.Recaller.recall,
                      recall_module.Recaller._lexical_for, recall_module.words_side)
        recall_module.stored_cards = lambda conn, ids: {}
        Index.warm = lambda index: index._codes()
        recall_module.Recaller._lexical_for = lambda recaller, index: index
        recall_module.words_side = lambda words, text, terms: (
            _Later(words.fts, text, recall_module.FTS_K), _Later(recall_module.distinctive_terms, words.conn, terms))
        plain = recall_module.Recaller.recall

        def recall(recaller, *a, **kw):
            forget_memos()
            return plain(recaller, *a, **kw)

        recall_module.Recaller.recall = recall
        return self

    def __exit__(self, *exc):
        import memoir.index.recall as recall_module
        from memoir.index.db import Index

        (recall_module.stored_cards, Index.warm, recall_module.Recaller.recall,
         recall_module.Recaller._lexical_for, recall_module.words_side) = self.saved


class _Later:
    """A list computed when first read, by the thread that reads it: the lexical search and the
    term counts after the KNN, on the same connection, as before."""

    def __init__(self, fn, *args):
        self.call, self.value = (fn, args), None

    def __iter__(self):
        if self.value is None:
            fn, args = self.call
            self.value = list(fn(*args))
        return iter(self.value)


def forget_memos() -> None:
    from memoir.index import candidates, recall_gates, recall_log

    recall_log._clean.clear()
    recall_gates._sensitive.cache_clear()
    candidates._doc_counts.clear()


def in_process(settings, enc, queries: list[str], n: int, answerable: set[str]) -> dict:
    """Warm model and open index, as the recall service holds them: figures of `queries`, each text distinct."""
    with Recaller(settings, enc) as r:
        r.index().warm()
        for q in queries[:5]:
            r.recall(q + " warm", budget_ms=60_000)
        total, after_embed, cpu = [], [], []
        for i, q in enumerate(queries):
            c = time.process_time()
            # Distinct in every size (no cached vector answers), from the hook's folder: a call "has an
            # answer" only where the hook's own workspace gate would let one through.
            res = r.recall(f"{q} (#{i}, {n})", workspace=HOOK_CWD, budget_ms=60_000)
            cpu.append((time.process_time() - c) * 1000)
            total.append(res.elapsed_ms)
            t = res.record["timings_ms"]
            after_embed.append(sum(v for k, v in t.items() if k not in ("embed", "start", "sanitize", "rewrite")))
            if res.cards:
                answerable.add(q)
    return {"p50": pct(total, .5), "p99": pct(total, .99), "cpu_p50": pct(cpu, .5), "cpu_p99": pct(cpu, .99),
            "after_embed_p50": pct(after_embed, .5), "after_embed_p99": pct(after_embed, .99)}


def alone(settings, enc, queries: list[str], n: int) -> dict:
    """The floor recall stands on: the query's embedding alone and the KNN alone (the warm index, the
    shortlist recall asks for), each timed per query on texts recall never saw, in the same run."""
    with open_index(settings.index_dir, enc) as index:
        index.warm()
        embed, knn = [], []
        for i, q in enumerate(queries):
            started = time.perf_counter()
            v = enc.encode_one(f"{q} (alone #{i}, {n})")
            middle = time.perf_counter()
            index.knn(v, KNN_K * POOL)
            embed.append((middle - started) * 1000)
            knn.append((time.perf_counter() - middle) * 1000)
    return {"embed_p50": pct(embed, .5), "embed_p99": pct(embed, .99), "knn_p50": pct(knn, .5), "knn_p99": pct(knn, .99)}


def knn_recall(settings, enc, queries: list[str]) -> dict:
    """Share of the exact float top 10 that KNN returns (a tie with the tenth counts), now and before."""
    with open_index(settings.index_dir, enc) as plain, open_index(settings.index_dir, enc) as warm:
        warm.warm()
        matrix = np.frombuffer(b"".join(r[0] for r in plain.conn.execute("SELECT embedding FROM cards ORDER BY n")),
                               dtype=np.float32).reshape(-1, enc.dim)
        hits = {"now": [], "before": []}
        for q in queries:
            v = enc.encode_one(q + " (recall@10)")
            tenth = np.partition(matrix @ v, -10)[-10]
            for label, index in (("now", warm), ("before", plain)):
                hits[label].append(sum(1 for _, s in index.knn(v, 10) if s >= tenth - 1e-5) / 10)
    return {label: float(np.mean(h)) for label, h in hits.items()}


def bench_size(n: int, args, pool: np.ndarray, embedder) -> dict:
    home = build(n, args.cache, pool, embedder)
    settings = load_settings(home=home)
    rng = random.Random(3)
    queries = [synthetic_query(rng) for _ in range(args.queries)]
    print(f"\n== {n:,} cards ({settings.sync_timeout_ms} ms budget; {os.cpu_count()} CPUs) ==", flush=True)

    # In-process, warm model and open index: what the recall service does per request. Before: torch's
    # one-text encode and the path before issue 26's recall work (`BeforePath`); now: the service's
    # query embedder (ONNX, one thread) and today's path; same run, same queries.
    answerable: set[str] = set()
    figures = {}
    for label, enc, before in (("before", embedder, True), ("now", args.service_embedder, False)):
        if before:
            with BeforePath():
                got = in_process(settings, enc, queries, n, answerable)
        else:
            forget_memos()
            got = in_process(settings, enc, queries, n, answerable)
        figures[label] = got
        print(f"in-process recall, {label:<7} p50 {got['p50']:6.1f} ms  p99 {got['p99']:6.1f} ms  "
              f"CPU p50 {got['cpu_p50']:5.1f}  p99 {got['cpu_p99']:5.1f} ms  (after embedding: p50 "
              f"{got['after_embed_p50']:5.1f}  p99 {got['after_embed_p99']:5.1f} ms; "
              f"{len(answerable)}/{len(set(queries))} distinct queries have an answer)"
              + ("  goal p99 < 20 ms at 100k" if label == "now" else ""), flush=True)
    floor = figures["alone"] = alone(settings, args.service_embedder, queries, n)
    base = floor["embed_p99"] + floor["knn_p99"]
    print(f"alone, same run: embedding p50 {floor['embed_p50']:.1f} / p99 {floor['embed_p99']:.1f} ms, KNN p50 "
          f"{floor['knn_p50']:.1f} / p99 {floor['knn_p99']:.1f} ms; recall p99 {figures['now']['p99']:.1f} ms = "
          f"{figures['now']['p99'] / base:.2f}x their p99s' sum (goal <= 1.5x at 100k)", flush=True)
    figures["recall_at_10"] = knn_recall(settings, args.service_embedder, queries[:100])
    print(f"KNN recall@10 vs exact float KNN ({len(queries[:100])} queries): now {figures['recall_at_10']['now']:.4f} "
          f"(int8 re-scored {WIDE_SHORTLIST}-wide Hamming shortlist), before "
          f"{figures['recall_at_10']['before']:.4f} (256 from the file); goal >= 0.99", flush=True)
    if args.hooks:
        figures["hooks"] = bench_hooks(home, settings, queries[:args.hooks], answerable, args)
    return figures


def serve_baseline() -> None:
    """`--serve-baseline`: the recall service on the path before issue 26's recall work (`BeforePath`)."""
    from memoir.flows import recall_service

    settings = load_settings()
    with BeforePath():
        recall_service.serve(settings, Embedder(threads=SERVICE_THREADS, query_backend="onnx"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[1000, 10_000, 100_000])
    ap.add_argument("--queries", type=int, default=200, help="in-process queries per size")
    ap.add_argument("--hooks", type=int, default=40, help="hook runs per session, size and mode (0: in-process only)")
    ap.add_argument("--hook-cmd", default="", help="the hook's command line (default: what `memoir hook "
                    "install claude-code` writes)")
    ap.add_argument("--service-cmd", default=f"{MEMOIR} serve-recall",
                    help="starts the service when the hook does not")
    ap.add_argument("--code-root", type=Path, default=ROOT, help="the folder the hook and the service run in")
    ap.add_argument("--pool", type=int, default=2000, help="distinct texts the model encodes")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/memoir-bench-recall"))
    ap.add_argument("--no-baseline-service", action="store_true",
                    help="measure the warm hook against today's service only")
    ap.add_argument("--summary", type=Path, default=None, help="also write the figures as JSON here")
    ap.add_argument("--serve-baseline", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_baseline:
        serve_baseline()
        return
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}", flush=True)
    embedder = default_embedder()
    args.service_embedder = Embedder(threads=SERVICE_THREADS, query_backend="onnx")  # what `serve-recall` uses
    t = time.perf_counter()
    embedder.encode_one("warm up")
    args.service_embedder.encode_one("warm up")
    print(f"model loaded in {time.perf_counter() - t:.1f} s (in-process figures below exclude it)", flush=True)
    pool = pool_vectors(embedder, args.pool, args.cache)
    summary = {n: bench_size(n, args, pool, embedder) for n in args.sizes}
    if args.summary:
        args.summary.write_text(json.dumps(summary, indent=1) + "\n")
    wait_for_workers(10)


if __name__ == "__main__":
    main()
