"""The three Prefect flows memoir is operated with: `nightly`, `replay_backlog`, `rebuild_index`.

Import this module only after `flows.prefect_env.configure_prefect(home)`: Prefect reads its
settings at import. Each flow takes the memoir home and resolves the settings in its body, so a
served flow run reads the config file and `MEMOIR_*` as they are when it runs. `nightly` runs
`flows.pipeline.STEPS` in their order, with collection (a task per log file) and the model stage
(a task per batch) fanned out on the task runner (`flows/fan_out.py`); `rebuild_index` is
`index.rebuild`'s plan, chunks and install, with the chunks embedded in parallel. Tasks pass
values in memory, so nothing is cached or persisted (a card batch is not worth hashing or writing
twice). Deadlines (step_timeout_s) are checked by the flows between files, batches and chunks,
never by Prefect's `timeout_seconds`, which cannot interrupt blocking work in a thread.
"""

from __future__ import annotations

import time
from collections import deque

from prefect import Task, flow, task
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext
from prefect.futures import PrefectFuture
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

from memoir.cards.collect import read_file
from memoir.cards.config import Settings, load_settings
from memoir.cards.spool import Spool, loaded
from memoir.cards.store import CardStore
from memoir.cards.ledger import Ledger
from memoir.flows import fan_out, replay
from memoir.flows.errors import FlowError
from memoir.flows.home_layout import check_home_layout
from memoir.flows.ingest import RunReport
from memoir.flows.lock import Deadline, run_lock, step_deadline
from memoir.flows.pipeline import STEPS, Run, finish_distill, open_run, plan_distill_batches, settle_batch_of, took
from memoir.flows.prefect_env import taken_over
from memoir.index import rebuild
from memoir.index.embed import default_embedder
from memoir.index.pending import PendingIndex

# Big values (collected turns, cards, summaries) pass between tasks as `quote(...)`: Prefect would
# otherwise walk every element looking for futures, which costs more than the step itself.
TASK = dict(cache_policy=NO_CACHE, persist_result=False)


class UnknownRunner(FlowError):
    """A task runner name memoir does not know."""


# --- nightly: the run's steps; collection per file and the model per batch fan out ---------------

start = task(open_run, name="start", **TASK)
STEP_TASKS: dict[str, Task] = {s.name: task(s.fn, name=s.name, **TASK) for s in STEPS}
collect_file_task = task(read_file, name="collect-file", **TASK)
ask_model_task = task(fan_out.ask_one, name="model-batch", **TASK)


def on_threads() -> bool:
    """Whether this flow run's tasks run as threads of its own process (they then share its spool)."""
    ctx = FlowRunContext.get()
    return ctx is None or isinstance(ctx.task_runner, ThreadPoolTaskRunner)


def collect_fanned(run: Run, deadline: Deadline) -> None:
    """`pipeline.collect`, one task per log file on a Dask runner; reports merge in the files' order.

    On threads, the run's own worker processes read instead (`flows/workers.py`): reading and
    sanitizing are pure Python, and threads would share one core. Either way each file's turns
    come back sanitized and packed, and go to the run's spool.
    """
    if on_threads():
        STEP_TASKS["collect"](quote(run))
        return
    settings = run.settings
    with Ledger.in_state_dir(settings.state_dir) as ledger:
        files, collected = fan_out.plan_files(run.paths, run.host, ledger, settings.follow_symlinks, run.reread)
    collected.spool = Spool(settings.state_dir, settings.blob_cap)
    window = 2 * max(1, settings.rebuild_concurrency)  # finished files wait for the ones before them: bounded
    in_flight: deque[PrefectFuture] = deque()
    for path, entry, nofollow in files:
        in_flight.append(collect_file_task.submit(path, run.host, entry, settings.max_line_bytes, settings.blob_cap,
                                                  nofollow))
        while len(in_flight) >= window:
            collected.absorb(in_flight.popleft().result())
            deadline.check()
    while in_flight:
        collected.absorb(in_flight.popleft().result())
        deadline.check()
    collected.finish()
    took(run, collected)


def distill_fanned(run: Run, deadline: Deadline) -> None:
    """`pipeline.distill`: the rules here, the model's part of every batch as parallel tasks, then
    the gates over the batches in order (a card gone active is one the next must not duplicate)."""
    batches = plan_distill_batches(run)
    model_on = bool(run.distilled.endpoints)
    # A Dask worker cannot read the run's spool: the experiences travel with their batch.
    sent = batches if on_threads() else [[(loaded(exp), card) for exp, card in batch] for batch in batches]
    futures = [ask_model_task.submit(batch, run.settings) if model_on else None for batch in sent]
    for batch, future in zip(batches, futures):
        asked = future.result() if future is not None else fan_out.ask_one(batch, run.settings)
        deadline.check()
        settle_batch_of(run, batch, asked)
    finish_distill(run)


FANNED = {"collect": collect_fanned, "distill": distill_fanned}


@flow(name="nightly", persist_result=False, log_prints=False)
def nightly(home: str | None = None, logs: list[str] | None = None, host: str = "auto",
            lock_wait_s: float = 0.0, with_index: bool = True) -> RunReport:
    """Collect new log lines, cut them into experiences, distill, write cards, update the index.

    The steps run in `pipeline.STEPS` order in the flow's process; collection (one task per file)
    and the model stage (one task per batch) fan out on the task runner (threads, or Dask workers
    with `--runner dask`). Each step's deadline (step_timeout_s) is checked by the work itself,
    between files and batches.
    """
    started = time.monotonic()
    settings = load_settings(home=home)
    check_home_layout(settings.home)  # a served run: `memoir run --flow` has refused before Prefect started
    with run_lock(settings.state_dir, lock_wait_s, what="nightly flow"):
        run: Run = start(settings, taken_over(logs or []), host, with_index)
        for step in STEPS:
            deadline = Deadline(step.name, settings.step_timeout_s if step.deadline else None)
            with step_deadline(step.name, deadline.seconds):  # also interrupts a blocking read, in the main thread
                if step.name in FANNED:
                    FANNED[step.name](run, deadline)
                else:
                    STEP_TASKS[step.name](quote(run))
    run.summary.elapsed_s = time.monotonic() - started
    return run.summary


# --- replay-backlog -------------------------------------------------------------------------------


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
    settings = load_settings(home=home)
    started = time.monotonic()
    with run_lock(settings.state_dir, lock_wait_s, what="replay flow"):
        # Extract
        deadline = Deadline("replay", settings.step_timeout_s)
        names, reclaimed = plan_replay(settings, reclaim_after_s)
        # Transform + Load, one batch of items at a time; the deadline is checked between batches
        outcomes: list[replay.Applied] = []
        for batch in replay.batches(names, batch_size or settings.batch_size):
            deadline.check()
            futures = [apply_item.submit(settings, name) for name in batch]
            outcomes.extend(f.result() for f in futures)
        return finish_replay(settings, quote(outcomes), reclaimed, started)


# --- rebuild-index: index.rebuild's plan, chunks and install -------------------------------------


@task(**TASK)
def plan_rebuild(settings: Settings) -> rebuild.RebuildPlan:
    """Card ids in fixed chunks, and the pending ids the rebuild covers."""
    return rebuild.plan_rebuild(CardStore(settings.cards_dir, settings.state_dir), PendingIndex(settings.state_dir))


@task(**TASK)
def embed_chunk(settings: Settings, ids: list[str]) -> rebuild.EmbeddedChunk:
    """Read and embed one chunk of card files (on any worker that sees the card folder)."""
    return rebuild.embed_chunk(CardStore(settings.cards_dir, settings.state_dir), ids, default_embedder())


@task(**TASK)
def install_index(settings: Settings, plan: rebuild.RebuildPlan, chunks: list[rebuild.EmbeddedChunk],
                  workers: int) -> dict:
    """Write a new index file, verify it, swap it in, verify it again (or put the old one back)."""
    report = rebuild.install_index(settings.index_dir, default_embedder(), plan, chunks,
                                   pending=PendingIndex(settings.state_dir), concurrency=workers,
                                   store=CardStore(settings.cards_dir, settings.state_dir))
    return report.to_dict()


@flow(name="rebuild-index", persist_result=False)
def rebuild_index(home: str | None = None, lock_wait_s: float = 0.0) -> dict:
    """Rebuild the index from card files alone, `rebuild_concurrency` chunks embedded at once, then swap it in."""
    settings = load_settings(home=home)
    workers = max(1, settings.rebuild_concurrency)
    with run_lock(settings.state_dir, lock_wait_s, what="rebuild flow"):
        rebuild.remove_leftovers(settings.index_dir)  # a rebuild killed before this one
        # Extract
        deadline = Deadline("rebuild", settings.step_timeout_s)
        plan = plan_rebuild(settings)
        # Transform: at most `workers` chunks in flight, results kept in the plan's order
        chunks: list[rebuild.EmbeddedChunk] = []
        in_flight: deque[PrefectFuture] = deque()
        for ids in plan.chunks:
            if len(in_flight) >= workers:
                chunks.append(in_flight.popleft().result())
                deadline.check()
            in_flight.append(embed_chunk.submit(settings, ids))
        chunks.extend(f.result() for f in in_flight)
        deadline.check()
        # Load
        return install_index(settings, quote(plan), quote(chunks), workers)


FLOWS = {"nightly": nightly, "replay-backlog": replay_backlog, "rebuild-index": rebuild_index}


def task_runner(spec: str, settings: Settings):
    """`thread` (default), `dask` (a local cluster, one worker per rebuild_concurrency) or `dask:ADDRESS`."""
    if spec in ("", "thread"):
        return ThreadPoolTaskRunner(max_workers=settings.rebuild_concurrency)
    if spec == "dask" or spec.startswith("dask:"):
        from prefect_dask import DaskTaskRunner  # deferred: start-up

        address = spec.partition(":")[2]
        if address:
            return DaskTaskRunner(address=address)
        return DaskTaskRunner(cluster_kwargs={"n_workers": settings.rebuild_concurrency, "threads_per_worker": 1,
                                              "processes": True, "dashboard_address": None})
    raise UnknownRunner(f"unknown runner {spec!r}; use thread, dask or dask:ADDRESS")
