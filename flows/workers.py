"""A run's local worker processes: log files read and sanitized, sessions segmented and drafted, cards rendered, on every core.

Reading, sanitizing, segmenting and drafting are pure Python, so threads share one core; a run
with enough to read hands them to a few processes instead (`workers_for`). Each unit of work is a
plain function of picklable values (`read_file`, `draft_spooled` in `flows/ingest.py`, `render_cards`), and its
results are taken in the order the units were planned, never the order they finished, so a run
on four processes writes the same card files as a run on one. Raw log text stays in the process
that read it: a file's turns leave it sanitized and pickled (`cards.spool.pack`).

The processes fork from a fresh server process (`forkserver`), never from the run itself, whose
threads (Prefect's, the progress line's) may hold locks a forked child would inherit. They ignore
Ctrl-C: the run stops them. A worker that dies (killed, out of memory) costs the unit it held,
counted by the caller, and nothing else (`in_order`).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import resource
import signal
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

MAX_AUTO_WORKERS = 4
# Below this much to read, starting processes (about a third of a second) costs more than it saves.
POOL_MIN_BYTES = 32 * 1024 * 1024
# The caller's own `__main__` too: each worker would import it again otherwise (the CLI's is guarded).
PRELOAD = ["__main__", "memoir.flows.worker_boot"]
START_TIMEOUT_S = 60


def workers_for(setting: int, files: int, to_read: int, cpus: int | None = None) -> int:
    """How many processes a run uses: the `read_workers` setting, or with 0 one per core (at most
    `MAX_AUTO_WORKERS`) once the run has `POOL_MIN_BYTES` to read in two files or more. 1: the run's own."""
    if setting > 0:
        return setting
    if cpus is None:  # the cores this process may run on (a container's share), not the machine's
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(cpus, MAX_AUTO_WORKERS, files) if cpus > 1 and files > 1 and to_read >= POOL_MIN_BYTES else 1


@dataclass
class WorkerUse:
    """What a run's worker processes used: CPU seconds over every unit, the largest peak RSS among them."""

    processes: int = 1
    cpu_s: float = 0.0
    peak_rss_mb: float = 0.0

    def to_dict(self) -> dict:
        return {"processes": self.processes, "cpu_s": round(self.cpu_s, 3), "peak_rss_mb": round(self.peak_rss_mb, 1)}


def lost_reason(exc: BaseException) -> str:
    """How a unit lost to its worker is counted: `WorkerDied` when the process died, else what it raised."""
    return "WorkerDied" if isinstance(exc, BrokenProcessPool) else type(exc).__name__


@contextmanager
def one_unit() -> Iterator[None]:
    """One unit of work (a file read, a session drafted, cards rendered) with the cyclic collector
    asleep, then one young collection for the cycles it left. A unit frees what it allocates by
    reference count and leaves almost none (65 objects over every sample log); a collection woken
    inside it walks the unit's live turns, so a session twenty times longer cost 21x, not 20x."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
            gc.collect(0)


def _measured(fn: Callable[..., R], *unit) -> tuple[R, float, float]:
    """`fn(*unit)` in a worker, with the CPU seconds it took and the worker's peak RSS so far (MB)."""
    started = time.process_time()
    with one_unit():
        result = fn(*unit)
    return result, time.process_time() - started, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


GC_YOUNG = 50_000  # objects a run's processes allocate between young collections (Python's default: 700)


def collect_seldom() -> tuple[int, int, int]:
    """Leave what is loaded now out of the cyclic collector's walks and wake it every `GC_YOUNG`
    allocations; returns the thresholds before. A run's turns and drafts are freed by reference
    count, and the default threshold walked them every 700 allocations."""
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(GC_YOUNG, before[1], before[2])
    return before


def _worker_start() -> None:
    """Ignore Ctrl-C (it reaches the whole group: the run stops us), and collect as seldom as the
    run's own process does (`pipeline.fewer_collections`); what the forkserver preloaded is never garbage."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    collect_seldom()


class Workers:
    """A pool of `size` worker processes, made anew when one of them dies (which breaks the pool)."""

    def __init__(self, size: int) -> None:
        methods = multiprocessing.get_all_start_methods()
        self.ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
        if self.ctx.get_start_method() == "forkserver":
            self.ctx.set_forkserver_preload(PRELOAD)
        self.size = size
        self.executor = self._new(size)

    def _new(self, size: int) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=size, mp_context=self.ctx, initializer=_worker_start)

    def renew(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.executor = self._new(self.size)

    def alone(self, fn: Callable[..., R], unit: tuple) -> tuple[R, float, float]:
        """`fn(*unit)` in a process of its own: a unit that kills its worker kills only that one."""
        one = self._new(1)
        try:
            return one.submit(_measured, fn, *unit).result()
        finally:
            one.shutdown(wait=True)

    def stop(self) -> None:
        """Stop now, units still running included (the run stops on an error, a deadline, Ctrl-C)."""
        processes = list((getattr(self.executor, "_processes", None) or {}).values())
        self.executor.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            try:
                process.terminate()
            except (OSError, ValueError, AttributeError):
                pass  # already gone


@contextmanager
def local_pool(workers: int) -> Iterator[Workers | None]:
    """`workers` processes, or None for one (the caller works in its own process); stopped on the way out.

    None too when they cannot start (no interpreter this user may run, a sandbox without process
    creation): the run then works in its own process, as with one worker.
    """
    pool = _started(workers) if workers > 1 else None
    if pool is None:
        yield None
        return
    try:
        yield pool
    except BaseException:
        pool.stop()
        raise
    else:
        pool.executor.shutdown(wait=True)


def _started(workers: int) -> Workers | None:
    pool = None
    try:
        pool = Workers(workers)
        pool.executor.submit(os.getpid).result(timeout=START_TIMEOUT_S)
        return pool
    except Exception:  # noqa: BLE001 - any reason a process cannot start: this run works without
        if pool is not None:
            pool.stop()
        return None


def in_order(pool: Workers | None, fn: Callable[..., R], units: Iterable[tuple],
             lost: Callable[[tuple, BaseException], R], use: WorkerUse | None = None, window: int = 8) -> Iterator[R]:
    """`fn(*unit)` for each unit, in the units' order, at most `window` units a worker in flight.

    Without a pool each unit runs here. A unit that raised gives `lost(unit, error)` instead. When a
    worker dies the pool breaks and every unit in flight fails with it: each of those runs again in
    a process of its own, so only the one that kills its process is lost, and a new pool takes the
    rest. `use` adds up what the workers used. A finished unit waits for the ones before it, so
    `window` bounds what is held.
    """
    if pool is None:
        for unit in units:
            with one_unit():
                result = fn(*unit)
            yield result
        return
    flight: deque[tuple[tuple, Future | None]] = deque()  # None: to run alone
    it = iter(units)
    while True:
        while len(flight) < window * pool.size and (unit := next(it, None)) is not None:
            flight.append((unit, pool.executor.submit(_measured, fn, *unit)))
        if not flight:
            return
        unit, future = flight.popleft()
        try:
            result, cpu_s, rss_mb = future.result() if future is not None else pool.alone(fn, unit)
        except BrokenProcessPool as exc:
            if future is not None:  # the pool broke under this unit and those beside it: each again, alone
                flight.appendleft((unit, None))
                flight = deque((u, None if f is None or not f.done() or f.exception() else f) for u, f in flight)
                pool.renew()
                continue
            yield lost(unit, exc)
        except Exception as exc:  # noqa: BLE001 - one unit no rule foresaw must not stop the batch
            yield lost(unit, exc)
        else:
            if use is not None:
                use.cpu_s += cpu_s
                use.peak_rss_mb = max(use.peak_rss_mb, rss_mb)
            yield result
