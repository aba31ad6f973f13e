"""Cards and helpers the index tests share: real card files written through `CardStore.write`."""

from __future__ import annotations

from pathlib import Path

from memoir.cards.values import Card, Source
from memoir.cards.store import CardStore

# Real-shaped experiences: the lexical path must find the codes, keys and modules in them.
PROBLEMS = [
    ("rust", "E0382", "borrow of moved value in a loop", "clone the Vec before the loop or iterate by reference",
     "the element type is Copy, so no move happens"),
    ("rust", "E0502", "cannot borrow as mutable while borrowed as immutable",
     "end the immutable borrow before calling push, e.g. collect the indices first", "the borrow is two-phase"),
    ("node", "ENOENT", "no such file or directory when spawning the build script",
     "resolve the path against __dirname instead of the process cwd", "the script runs from the repo root"),
    ("postgres", "max_connections", "too many clients already",
     "raise max_connections in postgresql.conf and put pgbouncer in front", "the pool size already exceeds it"),
    ("typescript", "compilerOptions.strict", "implicit any errors after upgrading",
     "enable compilerOptions.strict gradually with per-file ts-expect-error comments", "the project uses JS files"),
    ("python", "ModuleNotFoundError", "No module named foo.bar in the test run",
     "install the package in editable mode so foo.bar resolves from src/", "tests run from an installed wheel"),
    ("docker", "EACCES", "permission denied writing the bind mount",
     "run the container with the host uid via --user", "rootless docker maps uids already"),
    ("git", "non-fast-forward", "push rejected after a rebase",
     "push with --force-with-lease after checking the remote log", "others pushed to the same branch"),
]


def make_card(i: int) -> Card:
    """Card number i: deterministic, varied, with evidence the index must never hold."""
    topic, code, symptom, fix, fails = PROBLEMS[i % len(PROBLEMS)]
    variant = i // len(PROBLEMS)
    return Card(
        id=f"c-{i:016x}",
        status="active" if i % 7 else "candidate",
        topics=(topic, f"area{variant % 5}"),
        task_type="debug" if i % 3 else "config",
        workspace=f"/work/proj{variant % 4}",
        created=f"2024-0{1 + i % 9}-1{i % 10}T10:00:00+00:00",
        updated=f"2024-0{1 + i % 9}-2{i % 10}T10:00:00+00:00",
        sources=(Source(f"sess-{i}", "claude_code", f"/logs/sess-{i}.jsonl", (1, 40), (2, 19)),),
        error_signature=f"{code}: {symptom}",
        goal=f"Fix {code} ({symptom}) in service {variant}",
        background=f"Service {variant} started failing with {code}.",
        evidence=f"EVIDENCE-ONLY-TOKEN-{i} stack trace lines " * 5,
        conclusion=f"For {symptom} ({code}) in service {variant}: {fix}.",
        counterexamples=f"Does not apply when {fails}.",
        follow_up="",
    )


def write_cards(store: CardStore, cards: list[Card]) -> None:
    for card in cards:
        store.write(card)
    store.save_manifest()


def store_at(home: Path) -> CardStore:
    return CardStore(home / "cards", home / "state")


QUERIES = [
    "borrow of moved value E0382",
    "ENOENT spawning build script",
    "too many clients max_connections",
    "compilerOptions.strict implicit any",
    "No module named foo.bar",
    "docker bind mount permission denied",
    "git push rejected after rebase",
]
