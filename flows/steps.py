"""Stage functions the Prefect flows call one task each: the same work `run_pipeline` does, in steps.

Nothing here knows about Prefect. `nightly_direct` runs the nightly steps in order without it, so
the bench and the tests compare the flow with exactly the same calls made directly.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from memoir.cards.collect import CollectResult
from memoir.cards.config import Settings
from memoir.cards.ledger import Ledger
from memoir.cards.values import Card
from memoir.cards.store import CardStore
from memoir.flows.pipeline import (
    Progress,
    RunSummary,
    clean_leftovers,
    collect_logs,
    default_log_paths,
    plan_experiences,
    store_cards,
)
from memoir.flows.lock import step_deadline
from memoir.flows.queue import OverflowQueue
from memoir.flows.replay import queue_distill_batch

_embedder = None  # one model per process: loading it costs seconds


def embedder():
    """The process's embedder (loaded lazily on first encode)."""
    global _embedder
    if _embedder is None:
        from memoir.index.embed import Embedder

        _embedder = Embedder()
    return _embedder


# --- nightly ------------------------------------------------------------------------------------
# The same sequence as `flows.pipeline._run_locked`, one function per flow task. Keep them in step:
# tests/test_flows.py checks that the flow writes the cards `memoir run` writes.


@dataclass
class Run:
    """What the steps of one nightly run share: the store, the queue, the index stage, the summary."""

    settings: Settings
    summary: RunSummary
    store: CardStore
    queue: OverflowQueue
    index: object = None  # flows.stages.IndexStage, or None with --no-index
    plan: object = None  # the rules plan, for the run record
    library: dict = field(default_factory=dict)  # id -> Card as on disk, kept current by store_step


def start_run(settings: Settings, with_index: bool = True, progress: Progress | None = None) -> Run:
    """Open the run's store and queue; remove leftovers of a killed run.

    With `progress`, the embedding model's first load (seconds) is reported as a stage of its own.
    """
    store = CardStore(settings.cards_dir, settings.state_dir)
    queue = OverflowQueue(settings.queue_dir)
    clean_leftovers(settings, queue)
    index = None
    if with_index:
        from memoir.flows.progress import announced
        from memoir.flows.stages import IndexStage
        from memoir.index.embed import default_embedder

        index = IndexStage(settings, store, embedder=announced(default_embedder(), progress))
    return Run(settings, RunSummary(), store, queue, index)


def log_paths(run: Run, logs: list[str]) -> list[Path]:
    """The logs to read (default: host log folders and registered Aider repos on this machine)."""
    paths = [Path(p) for p in logs] or default_log_paths(aider_repos=run.settings.aider_repos)
    if not paths:
        run.summary.notes.append("no host log folders found; pass --logs PATH, or `memoir logs add REPO` for Aider")
    return paths


def check_index(run: Run) -> None:
    """Check the index first; a corrupt one is rebuilt from the card files."""
    if run.index is not None:
        run.index.ensure()


def collect_step(run: Run, paths: list[Path], host: str, progress: Progress | None = None) -> CollectResult:
    """Read what was appended to each log since the ledger's last commit."""
    summary = run.summary
    with Ledger.in_state_dir(run.settings.state_dir) as ledger:
        collected = collect_logs(paths, host, ledger, progress, run.settings.follow_symlinks)
    summary.files_seen, summary.files_read = collected.files_seen, collected.files_read
    summary.bytes_read = collected.bytes_read
    summary.skipped.update(collected.skipped)
    summary.turns, summary.sessions = collected.turn_count, len(collected.sessions)
    return collected


def transform_step(run: Run, collected: CollectResult) -> list:
    """Sanitize, segment and draft: one (experience, card) per problem loop."""
    drafted = plan_experiences(collected.sessions, run.settings, run.summary.redacted, run.summary.skipped)
    run.summary.experiences = len(drafted)
    return drafted


def distill_step(run: Run, drafted: list) -> list[Card]:
    """Rules, model stage and gates; batches the model could not take go to the queue."""
    from memoir.flows.stages import Neighbourhood, distill

    summary = run.summary
    library, unreadable = run.store.load_all()
    run.library = {c.id: c for c in library}
    summary.notes.extend(f"unreadable card file: {p}" for p in unreadable)
    index_open = run.index.open() if run.index else None
    neighbourhood = Neighbourhood(library, index_open, run.index.embedder if index_open else None)
    plan, distilled = distill(drafted, library, run.settings, neighbourhood, store=run.store)
    summary.notes.extend(distilled.notes)
    run.plan = plan
    summary.rules.update({k: v for k, v in plan.counters.items() if v})
    summary.model = distilled.model
    summary.distill.update(distilled.counts)
    summary.alerts.extend(distilled.alerts)
    for pairs in distilled.requeue:
        queue_distill_batch(run.queue, f"run-{pairs[0][1].id}", pairs, reason="model stage timed out or was down")
        summary.queued["distill_batch"] += 1
    return distilled.cards


def store_step(run: Run, cards: list[Card]) -> list[str]:
    """Write the card files; a refused write goes to the overflow queue. Returns changed ids.

    Queued writes are not a success: the summary names the cause the filesystem gave and the
    command that writes them once it is fixed.
    """
    queued_before = run.summary.queued["card_write"]
    changed = store_cards(run.store, cards, run.summary, run.queue)
    run.library.update((c.id, c) for c in changed)
    if run.summary.queued["card_write"] > queued_before:
        ids = {c.id for c in cards}
        errors = [str(i.payload.get("error", "")) for i in run.queue.items("pending", "card_write") if i.key in ids]
        n = run.summary.queued["card_write"] - queued_before
        run.summary.notes.append(f"{n} card writes refused: {write_cause(errors, run.settings.cards_dir)}; "
                                 "fix that, then run `memoir replay` (runbooks/overflow-replay.md)")
    return [c.id for c in changed]


_OS_ERROR = re.compile(r"^\[Errno \d+\] (?P<why>[^:]+)(?:: '(?P<path>.*)')?")


def write_cause(errors: list[str], cards_dir: Path) -> str:
    """The most common reason among refused card writes, said once: "Operation not permitted on <dir>"."""
    causes: Counter = Counter()
    for error in errors:
        m = _OS_ERROR.match(error)
        if m is None:
            causes[error or "unknown error"] += 1
            continue
        where = m["path"] or ""
        if where and (Path(where).parent == Path(cards_dir) or Path(cards_dir) in Path(where).parents):
            where = str(cards_dir)
        causes[f"{m['why']} on {where}" if where else m["why"]] += 1
    if not causes:
        return "unknown error"
    (cause, _), *others = causes.most_common()
    return cause + (f" (and {len(others)} other errors)" if others else "")


def index_step(run: Run, changed: list[str]) -> None:
    """Index what changed, or queue the ids when the index cannot take them."""
    if run.index is None:
        return
    run.index.sync(changed)
    run.summary.index = dict(run.index.figures)
    run.summary.notes.extend(run.index.notes)
    run.index.close()


def commit_step(run: Run, collected: CollectResult) -> int:
    """Advance the ledger, only after the cards are stored (or queued)."""
    with Ledger.in_state_dir(run.settings.state_dir) as ledger:
        return collected.commit(ledger)


def record_step(run: Run) -> RunSummary:
    """Append the run to the run history (for `memoir status` and the append-only alarm)."""
    from memoir.cards.status import count_cards, record_run

    plan, summary = run.plan, run.summary
    cards_now = run.library.values()  # what is on disk now, without parsing every file again
    from memoir.flows.status_sections import record_model_run

    record = record_run(run.settings.state_dir, added=summary.cards.get("new", 0),
                        superseded=plan.counters.get("superseded", 0), merged=plan.counters.get("merged", 0),
                        dropped=len(plan.dropped), conflicts=plan.counters.get("conflicts", 0),
                        counts=count_cards(cards_now), append_only_runs=run.settings.append_only_runs,
                        skipped=summary.skipped)
    record_model_run(run.settings.state_dir, record.finished, summary.model, dict(summary.distill), summary.alerts)
    return summary


def nightly_direct(settings: Settings, logs: list[str], host: str = "auto", with_index: bool = True,
                   progress: Progress | None = None) -> RunSummary:
    """The nightly steps in order without Prefect: what `memoir run` does, and what the flow calls."""
    from memoir.flows.progress import stage

    started = time.monotonic()
    step_s = settings.step_timeout_s
    run = start_run(settings, with_index, progress)
    paths = log_paths(run, logs)
    # Extract
    with step_deadline("index check", step_s):
        done = stage(progress if with_index else None, "index check")
        check_index(run)
        done()
    with step_deadline("collect", step_s):
        collected = collect_step(run, paths, host, progress)
    # Transform
    with step_deadline("transform", step_s):
        done = stage(progress, "transform", f"{collected.turn_count} turns")
        drafted = transform_step(run, collected)
        done(f"{len(drafted)} experiences")
    with step_deadline("distill", step_s):
        done = stage(progress, "distill")
        cards = distill_step(run, drafted)
        done(f"{len(cards)} cards")
    # Load
    with step_deadline("store", step_s):
        done = stage(progress, "store", f"{len(cards)} cards")
        changed = store_step(run, cards)
        done(f"{len(changed)} changed")
    with step_deadline("index", step_s):
        done = stage(progress if with_index else None, "index", f"{len(changed)} cards")
        index_step(run, changed)
        done()
    commit_step(run, collected)
    summary = record_step(run)
    summary.elapsed_s = time.monotonic() - started
    return summary


# --- rebuild ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EmbeddedChunk:
    """Cards read from their files, with the file hashes and one vector each."""

    cards: list[Card]
    hashes: dict[str, str]
    vectors: np.ndarray
    problems: list[str] = field(default_factory=list)


def plan_rebuild(settings: Settings) -> list[list[str]]:
    """Card ids in chunks: at least one per concurrent worker, never more than REBUILD_CHUNK each."""
    from memoir.index.rebuild import REBUILD_CHUNK

    ids = CardStore(settings.cards_dir, settings.state_dir).ids()
    if not ids:
        return []
    n = max(settings.rebuild_concurrency, math.ceil(len(ids) / REBUILD_CHUNK))
    size = math.ceil(len(ids) / n)
    return [ids[i:i + size] for i in range(0, len(ids), size)]


def embed_chunk(settings: Settings, ids: list[str]) -> EmbeddedChunk:
    """Read and embed one chunk of card files (runs on any worker that sees the card directory)."""
    from memoir.index.plan import retrieval_text
    from memoir.index.sync import read_card_file

    store = CardStore(settings.cards_dir, settings.state_dir)
    files, problems = [], []
    for card_id in ids:
        try:
            files.append(read_card_file(store, card_id))
        except Exception as exc:  # noqa: BLE001 - an unreadable file is reported, never indexed
            problems.append(f"{card_id}: {exc}")
    vectors = embedder().encode([retrieval_text(f.card) for f in files])
    return EmbeddedChunk([f.card for f in files], {f.card.id: f.hash for f in files}, vectors, problems)


def write_rebuilt_index(settings: Settings, chunks: list[EmbeddedChunk]) -> dict:
    """Write every chunk into a new index file, verify it, swap it in atomically."""
    from memoir.index.db import INDEX_FILE, now_utc, open_index
    from memoir.index.errors import RebuildFailed
    from memoir.index.pending import PendingIndex
    from memoir.index.rebuild import _remove_db, swap_in

    final = settings.index_dir / INDEX_FILE
    new, bak = final.with_name(f"{INDEX_FILE}.new"), final.with_name(f"{INDEX_FILE}.bak")
    covered = PendingIndex(settings.state_dir).ids()
    _remove_db(new)
    written = sum(len(c.cards) for c in chunks)
    index = open_index(settings.index_dir, embedder(), path=new)
    try:
        for chunk in chunks:
            index.write_rows(chunk.cards, chunk.hashes, chunk.vectors)
        index.set_meta(built_at=now_utc())
        index.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        damage, count = index.verify(), index.count()
    finally:
        index.close()
    if damage or count != written:
        _remove_db(new)
        raise RebuildFailed(f"the new index did not check out ({'; '.join(damage) or f'{count} rows'}); "
                            "the previous index is untouched")
    replaced = swap_in(new, final, bak)
    _remove_db(bak)
    PendingIndex(settings.state_dir).discard(covered)
    return {"cards": written, "replaced": replaced, "path": str(final),
            "problems": [p for c in chunks for p in c.problems]}
