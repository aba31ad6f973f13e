"""The three Prefect flows memoir is operated with: `nightly`, `replay_backlog`, `rebuild_index`.

Import this module only after `flows.prefect_env.configure_prefect(home)`: Prefect reads its
settings at import. Each task is a thin call to one stage function (flows/steps.py,
flows/replay.py); the flow bodies only orchestrate. Tasks pass values in memory, so nothing
is cached or persisted (a card batch is not worth hashing or writing twice).
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

from memoir.cards.collect import CollectResult
from memoir.cards.config import Settings, load_settings
from memoir.cards.values import Card
from memoir.flows import replay, steps
from memoir.flows.lock import run_lock
from memoir.flows.pipeline import RunSummary

# Big values (collected turns, cards, summaries) pass between tasks as `quote(...)`: Prefect would
# otherwise walk every element looking for futures, which costs more than the stage itself.
STEP_TIMEOUT_S = Settings().step_timeout_s  # per-task ceiling; `memoir` passes the configured one
TASK = dict(cache_policy=NO_CACHE, persist_result=False, timeout_seconds=STEP_TIMEOUT_S)


def _timed(t, settings: Settings):
    """The task with the configured step timeout."""
    return t.with_options(timeout_seconds=settings.step_timeout_s)


@task(**TASK)
def resolve_settings(home: str | None) -> Settings:
    """Settings for the memoir home (TOML + MEMOIR_* env + defaults)."""
    return load_settings(home=home)


@task(**TASK)
def start_run(settings: Settings, with_index: bool) -> steps.Run:
    """Open the store, queue and index stage; clean a killed run's leftovers."""
    return steps.start_run(settings, with_index)


LOCAL_LOGS = "memoir-local-logs:"
_handed: dict[str, list[str]] = {}


def hand_over(logs: list[str]) -> list[str]:
    """`--logs` paths as a token a flow parameter may carry. Prefect keeps every flow run's parameters
    in its database under the memoir home, and a path can hold an e-mail address or a private
    address (`/mnt/10.42.7.19/...`); the token only means something inside this process."""
    if not logs:
        return []
    token = LOCAL_LOGS + secrets.token_hex(8)
    _handed[token] = [str(p) for p in logs]
    return [token]


def taken_over(logs: list[str]) -> list[str]:
    """The paths behind `hand_over`'s tokens; other entries (a deployment's own parameter) as they are."""
    out = []
    for entry in logs:
        if entry.startswith(LOCAL_LOGS):
            if entry not in _handed:
                raise ValueError("these --logs were given to another process; pass them again")
            out.extend(_handed[entry])
        else:
            out.append(entry)
    return out


@task(**TASK)
def log_paths(run: steps.Run, logs: list[str]) -> list[Path]:
    """The logs to read."""
    return steps.log_paths(run, taken_over(logs))


@task(**TASK)
def check_index(run: steps.Run) -> None:
    """Check the index; rebuild it when corrupt."""
    steps.check_index(run)


@task(**TASK)
def collect(run: steps.Run, paths: list[Path], host: str) -> CollectResult:
    """Read the appended part of each log."""
    return steps.collect_step(run, paths, host)


@task(**TASK)
def transform(run: steps.Run, collected: CollectResult) -> list:
    """Sanitize, segment and draft cards."""
    return steps.transform_step(run, collected)


@task(**TASK)
def distill(run: steps.Run, drafted: list) -> list[Card]:
    """Rules, model stage, quality gates."""
    return steps.distill_step(run, drafted)


@task(**TASK)
def store(run: steps.Run, cards: list[Card]) -> list[str]:
    """Write card files; refused writes go to the overflow queue."""
    return steps.store_step(run, cards)


@task(**TASK)
def update_index(run: steps.Run, changed: list[str]) -> None:
    """Index changed cards or queue their ids."""
    steps.index_step(run, changed)


@task(**TASK)
def commit_ledger(run: steps.Run, collected: CollectResult) -> int:
    """Advance the read ledger after the cards are safe."""
    return steps.commit_step(run, collected)


@task(**TASK)
def record(run: steps.Run) -> RunSummary:
    """Append the run to the run history."""
    return steps.record_step(run)


@flow(name="nightly", persist_result=False, log_prints=False)
def nightly(home: str | None = None, logs: list[str] | None = None, host: str = "auto",
            lock_wait_s: float = 0.0, with_index: bool = True) -> RunSummary:
    """Collect new log lines, cut them into experiences, distill, write cards, update the index."""
    started = time.monotonic()
    settings = resolve_settings(home)
    with run_lock(settings.state_dir, lock_wait_s, what="nightly flow"):
        run = _timed(start_run, settings)(settings, with_index)
        paths = _timed(log_paths, settings)(quote(run), logs or [])
        _timed(check_index, settings)(quote(run))
        # Extract
        collected = _timed(collect, settings)(quote(run), paths, host)
        # Transform
        drafted = _timed(transform, settings)(quote(run), quote(collected))
        cards = _timed(distill, settings)(quote(run), quote(drafted))
        # Load
        changed = _timed(store, settings)(quote(run), quote(cards))
        _timed(update_index, settings)(quote(run), changed)
        _timed(commit_ledger, settings)(quote(run), quote(collected))
        summary = _timed(record, settings)(quote(run))
    summary.elapsed_s = time.monotonic() - started
    return summary


@task(**TASK)
def plan_replay(settings: Settings, reclaim_after_s: float | None) -> tuple[list[str], int]:
    """Reclaim dead workers' items; snapshot the pending item names."""
    return replay.plan_replay(settings, reclaim_after_s)


@task(**TASK)
def apply_item(settings: Settings, name: str) -> replay.Applied:
    """Claim, apply and complete (or send back) one queue item."""
    return replay.apply_item(settings, replay.OverflowQueue(settings.queue_dir), name,
                             replay.model_endpoints(settings))


@task(**TASK)
def finish_replay(settings: Settings, outcomes: list[replay.Applied], reclaimed: int, started: float) -> replay.ReplayReport:
    """Record written cards, sync the index's pending list, count."""
    return replay.finish_replay(settings, outcomes, reclaimed, started)


@flow(name="replay-backlog", persist_result=False)
def replay_backlog(home: str | None = None, batch_size: int | None = None,
                   reclaim_after_s: float | None = None, lock_wait_s: float = 0.0) -> replay.ReplayReport:
    """Apply every pending overflow item (card writes, distillation batches, index updates) once."""
    settings = resolve_settings(home)
    started = time.monotonic()
    with run_lock(settings.state_dir, lock_wait_s, what="replay flow"):
        # Extract
        names, reclaimed = _timed(plan_replay, settings)(settings, reclaim_after_s)
        # Transform + Load, one batch of items at a time
        outcomes: list[replay.Applied] = []
        for batch in replay.batches(names, batch_size or settings.batch_size):
            futures = [_timed(apply_item, settings).submit(settings, name) for name in batch]
            outcomes.extend(f.result() for f in futures)
        return _timed(finish_replay, settings)(settings, quote(outcomes), reclaimed, started)


@task(**TASK)
def plan_rebuild(settings: Settings) -> list[list[str]]:
    """Card ids in chunks, at least one per worker."""
    return steps.plan_rebuild(settings)


@task(**TASK)
def embed_chunk(settings: Settings, ids: list[str]) -> steps.EmbeddedChunk:
    """Read and embed one chunk of card files."""
    return steps.embed_chunk(settings, ids)


@task(**TASK)
def write_index(settings: Settings, chunks: list[steps.EmbeddedChunk]) -> dict:
    """Write a new index file, verify it, swap it in."""
    return steps.write_rebuilt_index(settings, chunks)


@flow(name="rebuild-index", persist_result=False,
      task_runner=ThreadPoolTaskRunner(max_workers=Settings().rebuild_concurrency))
def rebuild_index(home: str | None = None, lock_wait_s: float = 0.0) -> dict:
    """Rebuild the index from card files alone, embedding chunks in parallel, then swap it in."""
    settings = resolve_settings(home)
    with run_lock(settings.state_dir, lock_wait_s, what="rebuild flow"):
        # Extract
        chunks = _timed(plan_rebuild, settings)(settings)
        # Transform
        futures = [_timed(embed_chunk, settings).submit(settings, ids) for ids in chunks]
        # Load
        return _timed(write_index, settings)(settings, quote([f.result() for f in futures]))


FLOWS = {"nightly": nightly, "replay-backlog": replay_backlog, "rebuild-index": rebuild_index}


def task_runner(spec: str, settings: Settings):
    """`thread` (default), `dask` (a local cluster, one worker per rebuild_concurrency) or `dask:ADDRESS`."""
    if spec in ("", "thread"):
        return ThreadPoolTaskRunner(max_workers=settings.rebuild_concurrency)
    if spec == "dask" or spec.startswith("dask:"):
        from prefect_dask import DaskTaskRunner

        address = spec.partition(":")[2]
        if address:
            return DaskTaskRunner(address=address)
        return DaskTaskRunner(cluster_kwargs={"n_workers": settings.rebuild_concurrency, "threads_per_worker": 1,
                                              "processes": True, "dashboard_address": None})
    raise ValueError(f"unknown runner {spec!r}; use thread, dask or dask:ADDRESS")
