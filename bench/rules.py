"""Bench for cards/distill/rules.py: the rule stage over synthetic experiences at 1k, 10k and 50k.

For each library size n it prints: drafting throughput, `apply_rules` over all n drafted cards
(cards/s, peak traced memory, time / (n log n) relative to the smallest n), and one incremental
run of 1,000 new experiences against the library of n that the first step built. Cost that grows
no worse than n log n shows as a flat or falling ratio column.

The mix mimics real logs: 30% share an error signature with 29 others (merge), 10% replay an
earlier experience in a resumed session (dedup), 20% are settings decisions revised over time in
one workspace (supersession), 40% are unrelated.

Run: .venv/bin/python -m bench.rules [sizes…]      e.g. python -m bench.rules 1000 10000 50000
     .venv/bin/python -m bench.rules --labelled [--misses]   signatures, verification, status and
     supersession against the hand labels of tests/fixtures/real and tests/fixtures/second_set
"""

from __future__ import annotations

import math
import sys
import time
import tracemalloc
from datetime import datetime, timedelta, timezone

from bench.rules_labels import main as labelled
from memoir.cards.distill.rules import apply_rules
from memoir.cards.draft import draft_card
from memoir.cards.values import Experience, Turn

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
LETTERS = "bcdfghjklmnpqrstvwxz"
INCREMENT = 1000


def word(n: int, length: int = 4) -> str:
    """Digit-free names: signatures mask digits, so families must differ in letters."""
    out = []
    for _ in range(length):
        n, r = divmod(n, len(LETTERS))
        out.append(LETTERS[r])
    return "".join(out)


def _turns(sid: str, start: datetime, ws: str, script: list[tuple[str, str, str]]) -> tuple[Turn, ...]:
    return tuple(
        Turn(host="claude-code", session_id=sid, seq=i, role=role, kind=kind, text=text,
             timestamp=start + timedelta(seconds=20 * i), tool_name="Bash" if kind != "text" else "",
             cwd=ws, git_branch="main", source_file=f"/logs/{sid}.jsonl", line=i + 1)
        for i, (role, kind, text) in enumerate(script)
    )


def experience(i: int) -> Experience:
    """Synthetic experience number i (deterministic)."""
    start = T0 + timedelta(minutes=10 * i)
    kind = i % 10
    if kind == 3 and i >= 3:  # a resumed session replaying experience i-3 (an error family member)
        base = experience(i - 3)
        turns = tuple(Turn(**{**{f: getattr(t, f) for f in t.__slots__}, "session_id": f"r-{i}",
                              "source_file": f"/logs/r-{i}.jsonl"}) for t in base.turns)
        return Experience("claude-code", f"r-{i}", turns, error_signature=base.error_signature)
    if kind in (0, 1, 2, 3):
        family = i // 100
        ws = f"/home/dev/{word(family % 40, 3)}"
        err = f"RuntimeError: {word(family)} queue rejected the {word(family + 7)} batch"
        script = [
            ("user", "text", f"the {word(family)} importer dies again, job {word(i, 5)}"),
            ("assistant", "tool_call", f"Bash python -m {word(family)}.importer"),
            ("tool", "error", f"Traceback (most recent call last):\n{err}"),
            ("assistant", "text", f"The fix was raising `{word(family)}_queue_limit` to {i % 7 + 2}00 in "
                                  f"{word(family)}.toml so the batch fits; verified on run {word(i, 5)}."),
            ("assistant", "tool_call", f"Bash python -m {word(family)}.importer"),
            ("tool", "tool_result", "imported 1200 rows OK"),
        ]
        return Experience("claude-code", f"s-{i}", _turns(f"s-{i}", start, ws, script), error_signature=err.split(" batch")[0])
    if kind in (4, 5):
        topic = i // 50
        ws = f"/home/dev/{word(topic % 40, 3)}"
        script = [
            ("user", "text", f"configure the {word(topic)} cache eviction policy for the {word(topic + 3)} service"),
            ("assistant", "tool_call", f"Bash cat {word(topic)}.toml"),
            ("tool", "tool_result", "[cache]\nttl = 60"),
            ("assistant", "text", f"The fix is setting `{word(topic)}_ttl` to {word(i, 5)} in {word(topic)}.toml; "
                                  f"the {word(topic + 3)} service needed it for release {word(i, 3)}."),
        ]
        return Experience("claude-code", f"s-{i}", _turns(f"s-{i}", start, ws, script))
    ws = f"/home/dev/{word(i % 40, 3)}"
    script = [
        ("user", "text", f"add a {word(i, 5)} endpoint to the {word(i + 1, 5)} module"),
        ("assistant", "tool_call", f"Bash cat {word(i, 5)}/{word(i + 2, 5)}.py"),
        ("tool", "tool_result", "def handler(): ..."),
        ("assistant", "text", f"Added `{word(i, 5)}_handler` in {word(i, 5)}/{word(i + 2, 5)}.py; it answers "
                              f"the {word(i + 1, 5)} route and is covered by test_{word(i, 5)}."),
    ]
    return Experience("claude-code", f"s-{i}", _turns(f"s-{i}", start, ws, script))


def drafted(lo: int, hi: int):
    return [(exp, draft_card(exp)) for exp in map(experience, range(lo, hi))]


def timed(fn, *args, repeat: int = 1):
    """Best of `repeat` wall times: the machine's noise only ever adds time."""
    best, out = math.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn(*args)
        best = min(best, time.perf_counter() - t)
    return out, best


def peak_mb(fn, *args) -> float:
    tracemalloc.start()
    fn(*args)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 1e6


def main(sizes: list[int]) -> None:
    print(f"{'n':>7} {'draft/s':>9} {'rules s':>8} {'cards/s':>9} {'peak MB':>8} {'s/(n log n) rel':>16} "
          f"{'+1k vs n: s':>12} {'written':>8} {'merged':>7} {'dups':>6} {'supersd':>8}")
    base = None
    for n in sizes:
        batch, t_draft = timed(drafted, 0, n)
        plan, t_rules = timed(apply_rules, batch, [], repeat=3 if n <= 10000 else 2)
        mem = peak_mb(apply_rules, batch, [])
        per = t_rules / (n * math.log2(n))
        base = base or per
        library = plan.write
        more = drafted(n, n + INCREMENT)
        plan2, t_inc = timed(apply_rules, more, library, repeat=3)
        c = plan.counters
        print(f"{n:>7} {n / t_draft:>9.0f} {t_rules:>8.2f} {n / t_rules:>9.0f} {mem:>8.1f} {per / base:>16.2f} "
              f"{t_inc:>12.2f} {len(library):>8} {c['merged']:>7} {c['duplicates']:>6} {c['superseded']:>8}")
        del batch, plan, library, more, plan2


if __name__ == "__main__":
    if "--labelled" in sys.argv[1:]:
        # Quality against the two hand-labelled sets instead of throughput (see bench/rules_labels.py).
        raise SystemExit(labelled([a for a in sys.argv[1:] if a != "--labelled"]))
    main([int(a) for a in sys.argv[1:]] or [1000, 10000, 50000])
