"""`make bench`: issue 26's table, memoir beside its baseline measured in the same run.

Rows: ingest of the real samples grown to `--real-mb` with fresh ids, of one copy of them alone, and
of copies whose common words are their own (only when `../shared/samples` is present: the copies
repeat every text, so their cards merge; one copy repeats none; the distinct copies draft as many
cards as a first night over that many MB, and the stages that run once per card show) and
of bench.ingest's synthetic corpus, each against reading every file and `json.loads` of every
line; a first night over one copy of the real logs with the index and the turn index, beside the
same night with neither; peak RSS for a corpus and four times it (flat in corpus size); one session of 5k / 20k /
100k turns (CPU seconds, the least of `--repeats` runs: linear in session length); one 200 MB JSON line (bounded memory); the
first `memoir search` after a run on a new home (the second set's logs; beside it, the same search
loading the model itself); recall
at `--recall-cards` cards (bench.recall, its first build takes minutes): in-process p50/p99 with
the query embedding and KNN recall@10, today's path beside the path before issue 26's recall work,
and the warm hook's p95 with four sessions at once beside one busy process, against today's
service and the service on the path before; a workspace-scoped recall at `--scoped-cards` over
`--scoped-workspaces` (bench.scoped) beside the full search filtered to that workspace. Every
memoir figure comes from a child process, so
each peak RSS is its own.
Below the table, each ingest's CPU seconds by step (collect, sanitize, segment, draft, the rest of
the transform, distill: the rules, store, ...). Wall figures follow the neighbours on shared
cores; the CPU figures beside them do not. Prints figures; asserts nothing.

    .venv/bin/python -m bench.speed                      # the full table (several minutes on 2 cores)
    .venv/bin/python -m bench.speed --real-mb 40 --synthetic-mb 40 --turns 2000 8000 40000 --line-mb 50
    .venv/bin/python -m bench.speed --recall-cards 10000 --hook-calls 20   # a smaller recall row
    .venv/bin/python -m bench.speed --real-mb 40 --synthetic-mb 40 --ingest-only   # the ingest rows only
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import types
from collections import Counter
from pathlib import Path

from bench import real_logs
from bench.ingest import make_corpus

STEPS = ("collect", "sanitize", "segment", "draft", "transform (rest)", "retire", "distill", "store", "commit", "record", "other")


def bare_parse(root: Path) -> tuple[float, float, int]:
    """(wall s, CPU s) to read every file under `root` and `json.loads` every line of the JSONL ones; bytes."""
    started, cpu, size = time.perf_counter(), time.process_time(), 0
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        size += len(data)
        if path.suffix == ".jsonl":
            for line in data.splitlines():
                if line.strip():
                    json.loads(line)
    return time.perf_counter() - started, time.process_time() - cpu, size


def ingest(logs: Path, home: Path, host: str = "auto") -> dict:
    """One `memoir run --no-index` over `logs` in a child process: seconds, CPU, steps, peak RSS."""
    out = subprocess.run([sys.executable, "-m", "bench.speed", "--child", str(logs), str(home), host],
                         capture_output=True, text=True, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    w = got["workers"]  # the run's own process, and at most its workers' largest peak each
    got["rss_total_mb"] = got["rss_mb"] + (w["processes"] * w["peak_rss_mb"] if w["processes"] > 1 else 0.0)
    return got


def _cpu_clocks() -> Counter:
    """Per-step CPU seconds of the next run in this process (the run's own `steps_s` are wall seconds).

    Each pipeline step is wrapped in a `process_time` pair, and the transform's own split (sanitize,
    segment, draft) is read with `process_time` as its clock. Bench child only: nothing else runs here.
    """
    from memoir.flows import ingest as flow_ingest
    from memoir.flows import pipeline

    cpu: Counter = Counter()

    def timed(step):
        def fn(run):
            started, workers = time.process_time(), run.summary.workers.cpu_s
            try:
                step.fn(run)
            finally:  # the step's own CPU, and its worker processes' as they reported it
                cpu[step.name] += time.process_time() - started + run.summary.workers.cpu_s - workers
        return dataclasses.replace(step, fn=fn)

    pipeline.STEPS = tuple(timed(step) for step in pipeline.STEPS)
    flow_ingest.time = types.SimpleNamespace(perf_counter=time.process_time)  # plan_experiences' clock
    return cpu


def _child(logs: str, home: str, host: str) -> None:
    from memoir.cards.config import load_settings
    from memoir.flows.pipeline import run_pipeline

    settings = load_settings(home=home)
    cpu_steps = _cpu_clocks()
    wall, cpu = time.perf_counter(), time.process_time()
    summary = run_pipeline(settings, [Path(logs)], host=host, with_index=False)
    main_cpu_s = time.process_time() - cpu
    cpu_s = main_cpu_s + summary.workers.cpu_s  # the worker processes' CPU, as they reported it
    for sub in ("sanitize", "segment", "draft"):  # the transform step's split, in CPU seconds too
        cpu_steps[sub] = summary.steps_s.get(sub, 0.0)
    # Turns are sanitized as each file is read (the spool), so sanitize is the collect step's part.
    cpu_steps["collect"] = max(0.0, cpu_steps["collect"] - cpu_steps["sanitize"])
    cpu_steps["transform (rest)"] = max(0.0, cpu_steps.pop("transform", 0.0) - cpu_steps["segment"] - cpu_steps["draft"])
    cpu_steps["other"] = max(0.0, cpu_s - sum(cpu_steps.values()))  # retire, the lock, settings, the gc switch
    print(json.dumps({
        "s": time.perf_counter() - wall, "cpu_s": cpu_s, "bytes": summary.bytes_read,
        "turns": summary.turns, "cards": sum(summary.cards.values()), "skipped": dict(summary.skipped),
        "steps": {k: round(v, 3) for k, v in cpu_steps.items()},
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "workers": summary.workers.to_dict(),
    }))


def _split(steps: dict) -> str:
    """The CPU split of one ingest, in pipeline order, each step's seconds and share of the run's CPU."""
    shown = [(k, steps[k]) for k in STEPS if k in steps] + [(k, v) for k, v in steps.items() if k not in STEPS]
    total = sum(v for _, v in shown) or 1.0
    return "  ".join(f"{k} {v:.2f}s ({v / total:.0%})" for k, v in shown if v >= 0.005)


def _wide_line_file(path: Path, mb: int) -> None:
    """A Claude Code-shaped file: a request, one `mb` MB wide and shallow JSON line, a reply."""
    sid = "5d1f0c6e-0000-4000-8000-000000000001"
    head = {"type": "user", "sessionId": sid, "uuid": "u1", "timestamp": "2026-11-01T08:00:00Z", "cwd": "/home/dev/app",
            "message": {"role": "user", "content": "the import fails after the upgrade, please fix it"}}
    with path.open("w") as fh:
        fh.write(json.dumps(head) + "\n")
        fh.write('{"type":"user","sessionId":"%s","uuid":"u2","toolUseResult":{' % sid)
        chunk = ",".join(f'"k{i}":{i}' for i in range(100_000))
        written, j = 0, 0
        while written < mb * 1e6:
            part = ("," if j else "") + chunk.replace('"k', f'"k{j}_')
            fh.write(part)
            written += len(part)
            j += 1
        fh.write("}}\n")
        fh.write(json.dumps({**head, "uuid": "u3", "message": {"role": "user", "content": "thanks, that works"}}) + "\n")


def _session_time(turns: int, shape: str, repeats: int = 1) -> float:
    """CPU seconds of one session of `turns` turns, the least of `repeats` runs, each in a process
    of its own: on shared cores a neighbour only ever adds time, so the least is the closest to
    what memoir itself took, and the ratio of two sizes is not one noisy run against another."""
    return min(_session_time_once(turns, shape) for _ in range(max(1, repeats)))


def _session_time_once(turns: int, shape: str) -> float:
    out = subprocess.run([sys.executable, "-m", "bench.session_length", "--turns", str(turns), "--shape", shape, "--json"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["cpu_s"]


SEARCH_SET = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "second_set"
ENTRY = "from memoir.flows.cli.main import main; main()"


def _timed_cli(home: Path, *args: str) -> tuple[float, str]:
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", ENTRY, "--home", str(home), *args], capture_output=True, text=True,
                         check=True)
    return time.perf_counter() - started, out.stdout


def search_row(work: Path, query: str = "upload rejected because the body is too big") -> tuple[str, str, str, str, str]:
    """The first `memoir search` after a run on a new home: the run builds the turn index, and the
    search asks the warm recall service for its query's vector; beside it, the same search in a
    process that loads the model itself (no service running)."""
    from bench.recall import stop_service, wait_warm
    from memoir.cards.config import load_settings

    logs, home = work / "search-logs", work / "home-search"
    for host in ("claude-code", "codex", "aider"):
        if (SEARCH_SET / host).is_dir():
            shutil.copytree(SEARCH_SET / host, logs / host)
    run_s, out = _timed_cli(home, "run", "--logs", str(logs), "--json")
    turns = json.loads(out)["turns"]
    alone_s, _ = _timed_cli(home, "search", query)
    state = load_settings(home=home).state_dir
    service = subprocess.Popen([sys.executable, "-c", ENTRY, "--home", str(home), "serve-recall", "--idle-exit-s", "300"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_warm(state)
        first_s, _ = _timed_cli(home, "search", query)
    finally:
        stop_service(state, service)
    return (f"first `memoir search` after a run ({turns} turns, turn index built in the run {run_s:.0f} s)",
            f"{first_s:.2f} s (warm recall service)", f"{alone_s:.1f} s loading the model itself", "-", "<= 1 s")


def first_night_row(logs: Path, work: Path, name: str) -> tuple[str, str, str, str, str]:
    """A first night on a new home over `logs`: `memoir run` with the card index and the turn index
    (within its share of the run, `turn_index_share`), beside the same night with neither
    (`--no-index`), each in a child process on a home of its own; then `memoir index turns`, which
    does what the night left of the turn index."""
    tag = name.replace(" ", "-").replace(",", "")
    bare_s, _ = _timed_cli(work / f"home-night-bare-{tag}", "run", "--logs", str(logs), "--no-index", "--json")
    full_s, out = _timed_cli(work / f"home-night-full-{tag}", "run", "--logs", str(logs), "--json")
    report = json.loads(out)
    logs, texts = (report["index"].get(k, 0) for k in ("turn_logs_waiting", "turn_texts_waiting"))
    rest_s, rest = _timed_cli(work / f"home-night-full-{tag}", "index", "turns", "--json")
    rest = json.loads(rest[rest.index("{"):])
    after = (f"; it left {logs} logs and {texts} texts, which `memoir index turns` embedded in {rest_s:.0f} s "
             f"({rest['turns_embedded']} turns, {rest['windows_embedded']} windows)") if logs or texts else "; it left nothing"
    return (f"a first night over {name} ({report.get('turns', 0)} turns) with the index and the turn index",
            f"{full_s:.1f} s{after}", f"{bare_s:.1f} s with neither (--no-index)", f"{full_s / bare_s:.1f}x", "<= 2x")


def recall_rows(cards: int, queries: int, hook_calls: int, work: Path) -> list[tuple[str, str, str, str, str]]:
    """bench.recall at `cards` cards in a child process: its summary as rows of the table."""
    summary = work / "recall.json"
    subprocess.run([sys.executable, "-m", "bench.recall", "--sizes", str(cards), "--queries", str(queries),
                    "--hooks", str(hook_calls), "--summary", str(summary)], capture_output=True, text=True, check=True)
    got = json.loads(summary.read_text())[str(cards)]
    now, before, size = got["now"], got["before"], f"{cards // 1000}k cards"
    rows = [(f"recall in-process, {size}, p50 / p99 (embedding included)",
             f"{now['p50']:.1f} / {now['p99']:.1f} ms (CPU p99 {now['cpu_p99']:.1f})",
             f"{before['p50']:.1f} / {before['p99']:.1f} ms path before (CPU p99 {before['cpu_p99']:.1f})",
             f"{now['p99'] / before['p99']:.2f}x p99", "p99 < 20 ms"),
            (f"recall p99 against the query's embedding + KNN alone, {size}", f"{now['p99']:.1f} ms",
             f"{got['alone']['embed_p99']:.1f} + {got['alone']['knn_p99']:.1f} ms (embedding, KNN; same run)",
             f"{now['p99'] / (got['alone']['embed_p99'] + got['alone']['knn_p99']):.2f}x", "<= 1.5x"),
            (f"KNN recall@10 vs exact float KNN, {size}", f"{got['recall_at_10']['now']:.4f}",
             f"{got['recall_at_10']['before']:.4f} path before", "-", ">= 0.99")]
    hooks = got.get("hooks", {})
    if "now" in hooks and "before" in hooks:
        h, b = hooks["now"]["4"], hooks["before"]["4"]
        rows.append((f"warm hook p95, 4 sessions + 1 busy process, {size}", f"{h['p95']:.0f} ms (p50 {h['p50']:.0f})",
                     f"{b['p95']:.0f} ms service on the path before (p50 {b['p50']:.0f})",
                     f"{h['p95'] / b['p95']:.2f}x", "p95 < 100 ms"))
    return rows


def scoped_row(cards: int, workspaces: int, work: Path) -> tuple[str, str, str, str, str]:
    """bench.scoped in a child process (its index cached under /tmp/idx1m): a workspace's question
    answered from its rows, beside the full search filtered to that workspace, same queries."""
    out = work / "scoped.json"
    subprocess.run([sys.executable, "-m", "bench.scoped", "--cards", str(cards), "--workspaces", str(workspaces),
                    "--json", str(out)], capture_output=True, text=True, check=True)
    got = json.loads(out.read_text())
    s, f = got["scoped_ms"], got["full_ms"]
    return (f"workspace-scoped recall (KNN + FTS5 + terms), {cards:,} cards / {workspaces:,} workspaces, p50 / p99",
            f"{s['p50']:.1f} / {s['p99']:.1f} ms", f"{f['p50']:.1f} / {f['p99']:.1f} ms full search, then filtered",
            f"{s['p99'] / f['p99']:.2f}x p99", "p99 <= 50 ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--real-mb", type=float, default=200.0)
    ap.add_argument("--synthetic-mb", type=float, default=200.0)
    ap.add_argument("--rss-mb", type=float, nargs=2, default=(50.0, 200.0), help="two corpus sizes for peak RSS")
    ap.add_argument("--turns", type=int, nargs=3, default=(5000, 20000, 100000))
    ap.add_argument("--repeats", type=int, default=3, help="runs of each session length; the least CPU counts")
    ap.add_argument("--shape", default="same-error", help="bench.session_length shape (default: the rule stage's worst)")
    ap.add_argument("--line-mb", type=int, default=200)
    ap.add_argument("--recall-cards", type=int, default=100_000, help="cards in the recall rows (0: none)")
    ap.add_argument("--recall-queries", type=int, default=200)
    ap.add_argument("--hook-calls", type=int, default=30, help="hook calls per session in the recall rows")
    ap.add_argument("--scoped-cards", type=int, default=1_000_000, help="cards in the workspace-scoped row (0: none)")
    ap.add_argument("--scoped-workspaces", type=int, default=1_000)
    ap.add_argument("--ingest-only", action="store_true", help="only the ingest rows")
    ap.add_argument("--no-first-night", dest="first_night", action="store_false",
                    help="leave out the first-night row (one copy of the real logs run with and without the index)")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(*args.child)
        return

    rows: list[tuple[str, str, str, str, str]] = []
    notes: list[str] = []
    work = Path(tempfile.mkdtemp(prefix="memoir-bench-speed-"))
    try:
        corpora = []
        if real_logs.available():
            real_logs.copy_corpus(work / "real", args.real_mb)
            corpora.append(("real logs", work / "real"))
            # The copies above repeat every text, so whatever memoir caches per text hits across them;
            # one copy shows the cost of logs that repeat nothing.
            real_logs.copy_corpus(work / "real-once", 0.001)
            corpora.append(("real logs, one copy", work / "real-once"))
            # Their cards merge into one copy's; copies with words of their own keep theirs, and the
            # stages that run once per card (the rules, the gates, the writer) grow with the corpus.
            real_logs.copy_corpus(work / "real-distinct", args.real_mb, distinct=True)
            corpora.append(("real logs, copies with distinct words", work / "real-distinct"))
        else:
            notes.append("real logs: ../shared/samples not found, row left out")
        make_corpus(work / "synthetic", args.synthetic_mb)
        corpora.append(("synthetic", work / "synthetic"))
        for name, logs in corpora:
            bare, bare_cpu, size = bare_parse(logs)
            got = ingest(logs, work / f"home-{len(rows)}")
            mb = size / 1e6
            rows.append((f"ingest, {mb:.0f} MB of {name}",
                         f"{mb / got['s']:.1f} MB/s ({mb / got['cpu_s']:.1f} per CPU s)",
                         f"{mb / bare:.0f} MB/s bare parse ({mb / bare_cpu:.0f} per CPU s)",
                         f"{got['s'] / bare:.1f}x ({got['cpu_s'] / bare_cpu:.1f}x CPU)", ">= 25 MB/s and <= 4x"))
            w = got["workers"]
            on = (f"{w['processes']} worker processes (peak RSS {w['peak_rss_mb']:.0f} MB each at most) beside the "
                  f"run's ({got['rss_mb']:.0f} MB)" if w["processes"] > 1 else "the run's own process")
            notes.append(f"{name}, CPU by step: {_split(got['steps'])}; {got['turns']} turns, {got['cards']} cards, "
                         f"{got['cpu_s']:.1f} s CPU ({got['s']:.1f} s wall), on {on}")
        if args.ingest_only:
            _print(rows, notes)
            return
        if args.first_night:
            for night in [(n, p) for n, p in corpora if n in ("real logs, one copy", "real logs")] or corpora[-1:]:
                rows.append(first_night_row(night[1], work, night[0]))
        small, big = args.rss_mb
        rss = []
        for mb in (small, big):
            logs = work / f"rss-{mb:.0f}"
            make_corpus(logs, mb)
            rss.append(ingest(logs, work / f"home-rss-{mb:.0f}")["rss_total_mb"])
            shutil.rmtree(logs, ignore_errors=True)
        rows.append((f"peak RSS, {small:.0f} MB -> {big:.0f} MB of logs", f"{rss[0]:.0f} -> {rss[1]:.0f} MB", "-",
                     f"{rss[1] / rss[0]:.2f}x for {big / small:.0f}x the logs", "<= 1.2x (flat in corpus size)"))
        times = [_session_time(n, args.shape, args.repeats) for n in args.turns]
        label = " / ".join(f"{n // 1000}k" for n in args.turns)
        rows.append((f"one session of {label} turns ({args.shape}, least CPU of {args.repeats} runs)",
                     " / ".join(f"{t:.2f} s" for t in times), "-",
                     f"{times[2] / times[0]:.1f}x for {args.turns[2] / args.turns[0]:.0f}x the turns",
                     f"<= 20x for {args.turns[2] / args.turns[0]:.0f}x"))
        line = work / "line" / "5d1f0c6e-0000-4000-8000-000000000001.jsonl"
        line.parent.mkdir(parents=True)
        _wide_line_file(line, args.line_mb)
        got = ingest(line.parent, work / "home-line", host="claude-code")
        rows.append((f"one {line.stat().st_size / 1e6:.0f} MB JSON line (wide, shallow)", f"{got['rss_total_mb']:.0f} MB peak RSS",
                     "-", f"{got['rss_total_mb'] * 1e6 / line.stat().st_size:.2f}x the line", "<= 512 MB"))
        notes.append(f"the long line: skipped {got['skipped'].get('bad_line_too_large', 0)} as bad_line_too_large, "
                     f"{got['turns']} turns read around it")
        rows.append(search_row(work))
        if args.recall_cards:
            rows.extend(recall_rows(args.recall_cards, args.recall_queries, args.hook_calls, work))
            notes.append("recall: bench.recall's synthetic cards; the path before = files parsed, KNN re-scoring 256 "
                         "Hamming candidates from the file, the lexical search after the embedding, torch's one-text "
                         "encode in process; `python -m bench.recall` prints every figure")
        if args.scoped_cards:
            rows.append(scoped_row(args.scoped_cards, args.scoped_workspaces, work))
            notes.append("workspace-scoped: bench.scoped's rows (random vectors, short synthetic texts), the index "
                         "side of a recall asked in one project; `python -m bench.scoped` prints every figure")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    _print(rows, notes)


def _print(rows: list[tuple[str, str, str, str, str]], notes: list[str]) -> None:
    head = ("what", "memoir", "baseline, same run", "ratio", "target")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(5)]
    for r in [head, tuple("-" * w for w in widths), *rows]:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |")
    print()
    for n in notes:
        print(f"- {n}")


if __name__ == "__main__":
    main()
