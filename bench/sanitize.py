"""Micro-bench for cards/sanitize/: MB/s over ~50 MB of turn-sized, session-like text, or the
secrets corpora's counts (what is redacted, what leaks, which near-misses survive). Each number is
printed twice, measured in the same run: "before" is the provider-table detector alone
(`generic=False`, the detector as it was), "after" adds the provider-independent rules.

Run: .venv/bin/python bench/sanitize.py [megabytes]
     .venv/bin/python -m bench.sanitize --corpus
     .venv/bin/python -m bench.sanitize --real [../shared/samples]
"""

from __future__ import annotations

import base64
import json
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from memoir.cards.config import Settings
from memoir.cards.sanitize import sanitize
from memoir.cards.sanitize.prefilter import hints
from memoir.cards.sanitize.scan import sanitize_with_report

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "secrets" / "corpus.jsonl"
UNLISTED = CORPUS.with_name("unlisted.jsonl")  # shapes no provider table names
PROVIDERS = CORPUS.with_name("providers.jsonl")  # provider formats and credential file shapes, bare

PROSE = (
    "I'll look at the failing test first. The error says the token budget was exceeded when the "
    "retriever returned more than two cards, so the fix is probably in recall.py where we cap the "
    "candidates. Let me check the key handling in the config loader and the password prompt too.\n"
)
CODE = '''def load(path: str, api_key: str | None = None) -> dict[str, Any]:
    """Read the settings file; the key comes from the environment."""
    token = os.environ.get("MEMOIR_TOKEN")
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    for key, value in data.items():
        if key == "max_tokens":
            data[key] = int(value)
    return {"model": data["model"], "token": token, "timeout": 30}
'''
TOOL = (
    "$ git log --oneline -3\n4f1c2a9 Fix retry loop in uploader\n9b0e7d1 Add sha256 check to cache\n"
    "e8afcc6 CLI skeleton\n$ pytest -q tests/test_recall.py\n....F.\nFAILED tests/test_recall.py::"
    "test_two_cards - AssertionError: assert 3 == 2\n/home/dev/proj/index/recall.py:88: in recall\n"
    "  uuid=6f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b version 10.0.0 at 2024-05-01T12:00:00Z\n"
)
JSONL = (
    '{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01A",'
    '"name":"mcp__task-master-ai__next_task","input":{"projectRoot":"/home/dev/proj"}}]},'
    '"cwd":"/home/dev/proj","gitBranch":"main","sessionId":"6f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b"}\n'
)
SECRETS = (
    "export GITHUB_TOKEN=ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8\n",
    "curl -H 'Authorization: Bearer abcDEF1234567890ghiJKL' https://api.example.com/v1\n",
    "DATABASE_URL=postgres://app:Sup3rS3cret@10.1.2.3:5432/app\n",
    "contact jane.doe@acme-corp.io about @pytest.fixture decorators\n",
)


def _turn(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.02:
        return "thinking signature: " + base64.b64encode(rng.randbytes(rng.randint(300, 3000))).decode() + "\n"
    if roll < 0.03:
        return "var a=function(b){return b+1};" * rng.randint(150, 400) + "\n"
    parts = [rng.choice((PROSE, CODE, TOOL, JSONL)) for _ in range(rng.randint(1, 6))]
    if rng.random() < 0.05:
        parts.append(rng.choice(SECRETS))
    return "".join(parts)


def _measure(name: str, turns: list[str]) -> None:
    """Wall and CPU time: CPU time is the fairer number on a shared machine. "before" is the
    provider-table detector alone (`generic=False`), "after" adds the provider-independent rules."""
    size = sum(map(len, turns))
    line = f"{name:8s} {len(turns):6d} turns {size / 1e6:5.1f} MB"
    for label, generic in (("before", False), ("after", True)):
        w0, c0 = time.perf_counter(), time.process_time()
        for t in turns:
            sanitize_with_report(t, Settings.blob_cap, generic)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        line += f"  {label}: wall {size / 1e6 / wall:4.0f} MB/s cpu {size / 1e6 / cpu:4.0f} MB/s"
    print(line)


def main(megabytes: float = 50.0) -> None:
    rng = random.Random(7)
    turns: list[str] = []
    size = 0
    while size < megabytes * 1e6:
        turns.append(_turn(rng))
        size += len(turns[-1])
    _measure("mixed", turns)
    for name, block in (("prose", PROSE), ("code", CODE), ("tool", TOOL), ("jsonl", JSONL)):
        _measure(name, [block * 4] * int(megabytes * 1e6 / 5 / len(block * 4)))


@dataclass(frozen=True)
class CorpusCounts:
    """What `sanitize` did to a secrets corpus, one line at a time."""

    secrets: int
    shapes: int
    near_misses: int
    redacted: int
    leaked: list[str]  # ids of secret lines whose secret (or another secret on the line) survived
    intact: int
    eaten: list[str]  # ids of near-miss lines that did not come out unchanged


def corpus_counts(path: Path = CORPUS, generic: bool = True) -> CorpusCounts:
    entries = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    secrets = [e for e in entries if "secret" in e]
    near = [e for e in entries if "near_miss" in e]

    def clean(line: str) -> str:
        return sanitize_with_report(line, Settings.blob_cap, generic).text

    leaked = [e["id"] for e in secrets if any(s in clean(e["line"]) for s in [e["secret"], *e.get("also", [])])]
    eaten = [e["id"] for e in near if clean(e["line"]) != e["line"]]
    return CorpusCounts(
        secrets=len(secrets),
        shapes=len({e["shape"] for e in secrets}),
        near_misses=len(near),
        redacted=len(secrets) - len(leaked),
        leaked=leaked,
        intact=len(near) - len(eaten),
        eaten=eaten,
    )


def print_corpus(counts: CorpusCounts, label: str = "") -> None:
    print(f"{label}secrets {counts.secrets} of {counts.shapes} shapes, near-misses {counts.near_misses}")
    print(f"{label}redacted {counts.redacted}  leaked {len(counts.leaked)}" + (f" ({', '.join(counts.leaked)})" if counts.leaked else ""))
    print(f"{label}near-misses intact {counts.intact}  eaten {len(counts.eaten)}" + (f" ({', '.join(counts.eaten)})" if counts.eaten else ""))


def print_corpora() -> None:
    """Both corpora, before (the provider table alone) and after (with the provider-independent rules)."""
    for path in (CORPUS, UNLISTED, PROVIDERS):
        for label, generic in (("before", False), ("after", True)):
            print_corpus(corpus_counts(path, generic), f"{path.name} {label}: ")


SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "samples"


def print_real(samples: Path = SAMPLES, rounds: int = 3) -> None:
    """MB/s (CPU, best of `rounds`, same run) over the real samples' turn texts, for the rules before the
    shape rules, with them (`cards/sanitize/shapes.py`), with the maintained rules behind them, and with the
    polars prefilter in front (`cards/sanitize/prefilter.py`, its own pass counted, 512 texts a batch)."""

    import memoir.cards.sanitize.detect as detect  # deferred: the bench swaps the shape rules out and back
    from memoir.cards.collect import collect  # deferred: start-up

    report = collect([samples])
    texts = [t.text for turns in report.sessions.values() for t in turns]
    size = sum(map(len, texts)) / 1e6
    shapes, none = detect.shape_spans, (lambda *a, **k: iter(()))
    best: dict[str, float] = {}
    for _ in range(rounds):
        for label, with_shapes, maintained in (("before (no shape rules, no Betterleaks)", False, False),
                                               ("+ shape rules", True, False), ("+ shape rules + Betterleaks", True, True)):
            detect.shape_spans = shapes if with_shapes else none
            c0 = time.process_time()
            for t in texts:
                sanitize_with_report(t, Settings.blob_cap, True, maintained)
            best[label] = max(best.get(label, 0.0), size / (time.process_time() - c0))
        c0 = time.process_time()
        found = [h for at in range(0, len(texts), 512) for h in hints(texts[at:at + 512])]
        for t, h in zip(texts, found):
            sanitize_with_report(t, Settings.blob_cap, True, True, h)
        label = "+ shape rules + Betterleaks + polars prefilter"
        best[label] = max(best.get(label, 0.0), size / (time.process_time() - c0))
    detect.shape_spans = shapes
    print(f"real turn texts of {samples}: {size:.1f} MB, {len(texts)} turns (CPU MB/s, best of {rounds}, same run)")
    for label, rate in best.items():
        print(f"  {label:48s} {rate:5.1f} MB/s")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--corpus"]:
        print_corpora()
    elif sys.argv[1:2] == ["--real"]:
        print_real(Path(sys.argv[2]) if len(sys.argv) > 2 else SAMPLES)
    else:
        main(float(sys.argv[1]) if len(sys.argv) > 1 else 50.0)
