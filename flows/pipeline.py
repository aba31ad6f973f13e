"""One run of memoir: its steps, in the one order both `memoir run` and the Prefect `nightly` flow use.

index check → collect → transform → retire → distill → store → index → commit → turn index → record.
Each step is a function of the `Run` alone: it reads what the steps before it left on the run and leaves its
own result there. `run_pipeline` calls `STEPS` in order; `flows/nightly.py` wraps each of the
same `STEPS` as a task. The work inside the steps is in `flows/ingest.py`, `flows/distill_step.py`
and `flows/index_step.py`. Nothing here knows about Prefect.
"""

from __future__ import annotations

import gc
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from memoir.cards.collect import CollectReport
from memoir.cards.config import Settings
from memoir.cards.distill.rules import RulesPlan, keep_what_stands
from memoir.cards.ledger import Ledger
from memoir.cards.private import tighten_home, tightened_note
from memoir.cards.errors import CardsError
from memoir.cards.retention import Retention, prune_log, prune_rotated
from memoir.cards.review import user_owned
from memoir.cards.schema import CARD_SCHEMA
from memoir.cards.status import ALARMS_FILE, COUNTED, RUNS_FILE, count_cards, counted_as, record_run
from memoir.cards.memos import forget_memos
from memoir.cards.spool import Spool, loaded
from memoir.cards.store import CardStore
from memoir.cards.values import Card, Experience
from memoir.flows.alerts import record_model_stage
from memoir.cards.distill.llm import BatchReport
from memoir.flows.distill_step import DistillReport, Neighbourhood, ask_batch, batches_of, plan_distill, settle
from memoir.flows.home_layout import check_home_layout
from memoir.flows.index_step import IndexStep
from memoir.flows.ingest import (
    Origins,
    RunReport,
    clean_leftovers,
    collect_logs,
    default_log_paths,
    plan_experiences,
    plan_spooled,
    rederive,
    session_origins,
    store_cards,
    write_cause,
)
from memoir.flows.lock import StepTimeout, run_lock, step_deadline
from memoir.flows.hook_client import HOOK_LOG
from memoir.flows.model_runs import MODEL_RUNS
from memoir.flows.progress import Progress, announced, stage
from memoir.flows.workers import collect_seldom
from memoir.flows.queue import OverflowQueue
from memoir.flows.replay import queue_distill_batch
from memoir.index.embed import default_embedder
from memoir.index.rebuild import remove_leftovers
from memoir.index.files import RECALL_LOG_FILE


@dataclass
class Run:
    """What the steps of one run share: where it reads and writes, and what each step left for the next."""

    settings: Settings
    store: CardStore
    queue: OverflowQueue
    paths: list[Path]
    host: str = "auto"
    index: IndexStep | None = None  # None with --no-index
    progress: Progress | None = None
    summary: RunReport = field(default_factory=RunReport)
    collected: CollectReport = field(default_factory=CollectReport)
    drafted: list[tuple[Experience, Card]] = field(default_factory=list)
    cards: list[Card] = field(default_factory=list)  # distilled, to write
    changed: list[str] = field(default_factory=list)  # ids whose files the store step changed
    plan: RulesPlan | None = None  # the rules plan, for the run record
    library: dict[str, Card] = field(default_factory=dict)  # id -> Card as on disk, kept current by `store`
    reread: bool = False  # read every log from its first line (`memoir replay --relog`)
    neighbourhood: Neighbourhood | None = None  # the distill step's active cards, for the duplicate gate
    distilled: DistillReport | None = None  # what the model stage and the gates decided so far
    redrawn: set[str] = field(default_factory=set)  # ids a rewritten log drafts again: not in distill's library
    origins: Origins = field(default_factory=dict)  # the log file of each run of a session's turns
    embed_outside_index_s: float = 0.0  # the model's load and encodes before the index step (the duplicate gate)
    started: float = field(default_factory=time.monotonic)


def open_run(settings: Settings, logs: list[str], host: str = "auto", with_index: bool = True,
             progress: Progress | None = None) -> Run:
    """Make the home private, open the run's store and queue, remove leftovers of a killed run, find the logs.

    Default logs: the host log folders and registered Aider repos on this machine. With
    `progress`, the embedding model's first load (seconds) is reported as a line of its own.
    """
    tightened = tighten_home(settings.home)  # a home made before memoir kept it private, or widened since
    store = CardStore(settings.cards_dir, settings.state_dir)
    queue = OverflowQueue(settings.queue_dir)
    clean_leftovers(settings, queue)
    upgraded = store.upgrade_schema()  # refuses a library a newer memoir wrote, before any write
    remove_leftovers(settings.index_dir)  # a rebuild killed half way: under this run's lock, none is running
    index = IndexStep(settings, store, embedder=announced(default_embedder(), progress)) if with_index else None
    paths = [Path(p) for p in logs] or default_log_paths(aider_repos=settings.aider_repos)
    run = Run(settings, store, queue, paths, host, index, progress)
    if tightened:
        run.summary.notes.append(tightened_note(tightened))
    if upgraded:
        run.summary.notes.append(f"upgraded {len(upgraded)} card files to card schema {CARD_SCHEMA} in place "
                                 "(one line added to each front matter)")
    if not paths:
        run.summary.notes.append("no host log folders found; pass --logs PATH, or `memoir logs add REPO` for Aider")
    return run


# --- the steps, in order ------------------------------------------------------------------------------


def check_index(run: Run) -> None:
    """Check the index first; a corrupt one is rebuilt from the card files."""
    if run.index is not None:
        run.index.ensure()


def collect(run: Run) -> None:
    """Read what was appended to each log since the ledger's last commit."""
    summary = run.summary
    # The turns go to a spool as each file is read: sanitized, off the heap, one session back at a time.
    spool = Spool(run.settings.state_dir, run.settings.blob_cap)
    with Ledger.in_state_dir(run.settings.state_dir) as ledger:
        collected = collect_logs(run.paths, run.host, ledger, run.progress, run.settings.follow_symlinks,
                                 run.reread, run.settings.max_line_bytes, spool, run.settings.read_workers,
                                 summary.workers)
    took(run, collected)


def took(run: Run, collected: CollectReport) -> None:
    """What a collect read, on the run for the steps after it and in its summary."""
    summary = run.summary
    summary.workers.processes = collected.workers
    summary.files_seen, summary.files_read = collected.files_seen, collected.files_read
    summary.bytes_read = collected.bytes_read
    summary.hosts.update(collected.hosts)
    summary.skipped.update(collected.skipped)
    summary.turns, summary.sessions = collected.turn_count, collected.session_count
    run.collected = collected


def transform(run: Run) -> None:
    """Sanitize, segment and draft: one (experience, card) per problem loop."""
    spool = run.collected.spool
    if spool is None:  # a caller that collected into memory
        run.origins = session_origins(run.collected.sessions)  # where each turn came from, for the retire step
        run.drafted = plan_experiences(run.collected.sessions, run.settings, run.summary.redacted,
                                       run.summary.skipped, run.summary.steps_s, consume=True)
    else:
        run.origins = {}
        run.drafted = plan_spooled(spool, run.settings, run.summary.redacted, run.summary.skipped,
                                   run.summary.steps_s, run.origins, run.collected.workers, run.summary.workers)
    run.summary.experiences = len(run.drafted)


def retire(run: Run) -> None:
    """Remove the cards a log that changed no longer gives (a half-written task's, a truncated file's).

    A card a person owns (edited, confirmed or rejected) stays, and the summary names it.
    """
    retired, redrawn = rederive(run.collected, run.drafted, run.origins)
    owned = {i for i in retired + redrawn if _person_owned(run.store, i)}
    removed, edited = run.store.retire(i for i in retired if i not in owned)
    if removed:
        run.summary.cards["retired"] += len(removed)
    # A rewritten file's cards drafted again under their old ids: distill leaves the old version out
    # of the library, so the new draft replaces it (written as updated, or unchanged when the same).
    run.redrawn = {i for i in redrawn if i not in owned and not run.store.is_hand_edited(i)}
    kept = sorted(owned & set(retired) | set(edited))
    if kept:
        run.summary.notes.append(f"{len(kept)} cards a person owns no longer match their logs and were kept: "
                                 + ", ".join(kept[:5]))


def _person_owned(store: CardStore, card_id: str) -> bool:
    try:
        return user_owned(store.read(card_id))
    except (OSError, ValueError, CardsError):
        return False  # unreadable or gone: nothing of a person's to keep


def distill(run: Run) -> None:
    """Rules, model stage and gates; batches the model could not take go to the queue."""
    for batch in plan_distill_batches(run):
        settle_batch_of(run, batch, ask_batch(batch, run.settings, run.distilled.endpoints))
        forget_memos()  # the gates' memos of this batch's evidence
    finish_distill(run)


def plan_distill_batches(run: Run) -> list[list[tuple[Experience, Card]]]:
    """The user's hand and the rules; the batches the model stage and the gates take next.

    The nightly flow asks the model for these batches in parallel, then settles them in order.
    """
    summary = run.summary
    library, unreadable = run.store.load_all()
    run.library = {c.id: c for c in library}
    summary.notes.extend(f"unreadable card file: {p}" for p in unreadable)
    library = [c for c in library if c.id not in run.redrawn]  # their rewritten logs draft them anew
    index_open = run.index.open() if run.index else None
    run.neighbourhood = Neighbourhood(library, index_open, run.index.embedder if index_open else None)
    run.plan, pairs, run.distilled = plan_distill(run.drafted, library, run.settings, store=run.store)
    forget_memos()  # the rules' memos hold the text of every drafted card; the gates ask other things
    return batches_of(pairs, run.settings.batch_size)


def settle_batch_of(run: Run, batch: list[tuple[Experience, Card]], asked: BatchReport) -> None:
    """The gates over one asked batch; call in the order `plan_distill_batches` gave."""
    settle(batch, asked, run.neighbourhood, run.distilled)


def finish_distill(run: Run) -> None:
    """The cards to write, the counts in the summary, and the batches a model incident sends to the queue."""
    summary, distilled, plan = run.summary, run.distilled, run.plan
    judged = [distilled.judged.get(c.id, c) for c in plan.write]
    run.cards = keep_what_stands(judged, run.library)
    undone = sum(a.status == "superseded" != b.status for a, b in zip(judged, run.cards))
    if undone:  # the held-back card replaced nothing: say so beside the rule stage's own count
        plan.counters["superseded"] -= undone
        plan.counters["supersession_undone"] += undone
    summary.notes.extend(distilled.notes)
    summary.rules.update({k: v for k, v in plan.counters.items() if v})
    summary.model = distilled.model
    # The model stage's own counters (sent, ok, timeout, ...); the cards' statuses are counted once,
    # from the cards the store step writes, so every place that shows them agrees with the files.
    summary.distill.update({k: v for k, v in distilled.counts.items() if k not in COUNTED})
    summary.alerts.extend(distilled.alerts)
    for pairs in distilled.requeue:
        pairs = [(loaded(exp), card) for exp, card in pairs]  # the queue keeps the turns themselves
        queue_distill_batch(run.queue, f"run-{pairs[0][1].id}", pairs, reason="model stage timed out or was down")
        summary.queued["distill_batch"] += 1
    if run.collected.spool is not None:  # no experience is read back after the gates
        run.collected.spool.close()
        run.collected.spool = None


def store(run: Run) -> None:
    """Write the card files; a refused write goes to the overflow queue.

    Queued writes are not a success: the summary names the cause the filesystem gave and the
    command that writes them once it is fixed.
    """
    queued_before = run.summary.queued["card_write"]
    changed = store_cards(run.store, run.cards, run.summary, run.queue, run.collected.workers)
    run.summary.distill.update(counted_as(c) for c in changed)
    run.library.update((c.id, c) for c in changed)
    if run.summary.queued["card_write"] > queued_before:
        ids = {c.id for c in run.cards}
        errors = [str(i.payload.get("error", "")) for i in run.queue.items("pending", "card_write") if i.key in ids]
        n = run.summary.queued["card_write"] - queued_before
        run.summary.notes.append(f"{n} card writes refused: {write_cause(errors, run.settings.cards_dir)}; "
                                 "fix that, then run `memoir replay` (runbooks/overflow-replay.md)")
    run.changed = [c.id for c in changed]


def update_index(run: Run) -> None:
    """Index what changed, or queue the ids when the index cannot take them."""
    if run.index is None:
        return
    run.embed_outside_index_s = getattr(run.index.embedder, "spent_s", 0.0)
    run.index.sync(run.changed)
    run.summary.index = dict(run.index.figures)
    run.summary.notes.extend(run.index.notes)
    run.index.close()


def commit(run: Run) -> None:
    """Advance the ledger, only after the cards are stored (or queued)."""
    with Ledger.in_state_dir(run.settings.state_dir) as ledger:
        run.collected.commit(ledger)


def refresh_turns(run: Run) -> None:
    """Embed the turns this run read into the turn index, so the first search finds it ready.

    Runs after the commit and the record: past its share of the run's time (`turn_index_share`) or
    its deadline it stops, keeps every file it read and every batch it embedded, and says what is
    left; the cards, the index, the ledger and the run's record are already written."""
    if run.index is not None and run.settings.turn_index_in_run:
        before = len(run.index.notes)
        now = time.monotonic()
        until = None if run.summary.turns <= TURN_INDEX_WHOLE_TURNS else \
            turn_index_until(now - run.started, run.summary.steps_s, run.embed_outside_index_s,
                             run.settings.turn_index_share, now)
        try:
            refresh = run.index.refresh_turns(run.progress, until)
        except StepTimeout:
            run.index.close()
            run.summary.notes.append(
                "turn index: stopped at its deadline (step_timeout_s) with what it embedded kept; cards, index, "
                "ledger and the run's record were committed before it, and the next run or search continues it")
        else:
            if refresh is not None and refresh.left:
                run.summary.index.update(turn_logs_waiting=refresh.files_pending,
                                         turn_texts_waiting=refresh.pending + refresh.windows_pending)
                run.summary.notes.append(
                    f"turn index: stopped at its share of the run (turn_index_share {run.settings.turn_index_share:g}) "
                    f"with {refresh.read} logs read and {refresh.embedded + refresh.windows_embedded} texts embedded; "
                    f"{refresh.files_pending} logs and {refresh.pending + refresh.windows_pending} texts wait for the "
                    "next run or search (`memoir index turns` does them now)")
        run.summary.notes.extend(run.index.notes[before:])


def turn_index_until(elapsed_s: float, steps_s: Mapping[str, float], embed_outside_s: float, share: float,
                     now: float) -> float | None:
    """When the turn index must stop: indexing so far plus the turn index may take `share` times the
    rest of the run (`elapsed_s` since it started). None: no limit (share 0).

    Indexing is the index steps and the model's load and encodes before them (the duplicate gate
    asks the index inside distill, `embed_outside_s`); the rest of the run is every other second."""
    if share <= 0:
        return None
    indexing = sum(steps_s.get(name, 0.0) for name in INDEX_STEPS) + embed_outside_s
    own = max(0.0, elapsed_s - indexing)
    return now + max(0.0, share * own - indexing)


def record(run: Run) -> None:
    """Append the run to the run history (for `memoir status` and the append-only alarm)."""
    plan, summary = run.plan, run.summary
    cards_now = run.library.values()  # what is on disk now, without parsing every file again
    entry = record_run(run.settings.state_dir, added=summary.cards.get("new", 0),
                       superseded=plan.counters.get("superseded", 0), merged=plan.counters.get("merged", 0),
                       dropped=len(plan.dropped), conflicts=plan.counters.get("conflicts", 0),
                       counts=count_cards(cards_now), append_only_runs=run.settings.append_only_runs,
                       skipped=summary.skipped)
    alerted = record_model_stage(run.settings, entry.finished, summary.model, summary.distill, summary.alerts)
    summary.notes.extend(alerted.notes)
    prune_state_logs(run.settings)


def prune_state_logs(settings: Settings, now: datetime | None = None) -> int:
    """Keep memoir's own logs within keep_runs / keep_days; returns how many records and files went.

    The append-only alarm reads the last append_only_runs runs, so at least that many are kept.
    The live hook and recall logs are appended by other processes without the run lock: only
    their rotated copies (`.1`, never appended to again) are removed once old enough.
    """
    now = now or datetime.now(timezone.utc)
    state = Path(settings.state_dir)
    runs = Retention(max(settings.keep_runs, settings.append_only_runs) if settings.keep_runs else 0,
                     settings.keep_days)
    gone = prune_log(state / RUNS_FILE, "finished", runs, now)
    gone += prune_log(state / MODEL_RUNS, "finished", runs, now)
    gone += prune_log(state / ALARMS_FILE, "at", Retention(settings.keep_runs, settings.keep_days), now,
                      latest_per="name")
    rotated = [state / f"{HOOK_LOG}.1", state / f"{RECALL_LOG_FILE}.1"]
    return gone + len(prune_rotated(rotated, Retention(0, settings.keep_days), now))


@dataclass(frozen=True)
class Step:
    """One step of a run: its name (deadline, progress line, flow task), its function, how it shows.

    `before` and `after` give the progress line's detail when the step starts and ends (`after`
    None keeps `before`'s). A step `drawn` False draws its own progress (collect, per file) or
    none; one `needs_index` is not drawn with --no-index. Past `deadline` False nothing is cut
    short: the cards are safe and the ledger commits.
    """

    name: str
    fn: Callable[[Run], None]
    before: Callable[[Run], str] = lambda run: ""
    after: Callable[[Run], str] | None = None
    drawn: bool = True
    needs_index: bool = False
    deadline: bool = True


STEPS: tuple[Step, ...] = (
    # Extract
    Step("index check", check_index, needs_index=True),
    Step("collect", collect, drawn=False),
    # Transform
    Step("transform", transform, before=lambda r: f"{r.collected.turn_count} turns",
         after=lambda r: f"{len(r.drafted)} experiences"),
    Step("retire", retire, drawn=False),
    Step("distill", distill, after=lambda r: f"{len(r.cards)} cards"),
    # Load
    Step("store", store, before=lambda r: f"{len(r.cards)} cards", after=lambda r: f"{len(r.changed)} changed"),
    Step("index", update_index, before=lambda r: f"{len(r.changed)} cards", needs_index=True),
    Step("commit", commit, drawn=False, deadline=False),
    Step("record", record, drawn=False, deadline=False),
    # After the commit and the record: the turn index reads what the ledger says was read, and a deadline
    # there keeps what it embedded (index.turns) and stops nothing committed.
    Step("turn index", refresh_turns, drawn=False, needs_index=True),
)
INDEX_STEPS = ("index check", "index")  # the steps that exist only for the index (`turn_index_until`)
# A run that read this many turns or fewer (a night of a day's sessions) brings the turn index fully up
# to date, however long that takes beside its own second of reading: the share is for a backlog.
TURN_INDEX_WHOLE_TURNS = 2000


def run_step(run: Run, step: Step) -> None:
    """One step, drawn on the run's progress and cut at settings.step_timeout_s (`StepTimeout`)."""
    shown = step.drawn and (run.index is not None or not step.needs_index)
    with step_deadline(step.name, run.settings.step_timeout_s if step.deadline else None):
        done = stage(run.progress if shown else None, step.name, step.before(run))
        started = time.perf_counter()
        step.fn(run)
        run.summary.steps_s[step.name] += time.perf_counter() - started
        if step.after is None:
            done()
        else:
            done(step.after(run))


@contextmanager
def fewer_collections():
    """Run with the cyclic collector seldom woken, and what was loaded before left out of its walks.

    A run allocates millions of short-lived strings and turns and frees almost all of them by
    reference count; the collector's default wakes every 700 allocations and, once the corpus is
    in memory, its older generations re-walk every live turn (about a tenth of a run's CPU).
    The modules and settings loaded before the run are frozen out of its walks. Restored on exit.
    """
    before = collect_seldom()
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


def run_pipeline(
    settings: Settings,
    paths: list[Path] | None = None,
    host: str = "auto",
    progress: Progress | None = None,
    lock_wait_s: float | None = None,
    with_index: bool = True,
    reread: bool = False,
) -> RunReport:
    """One idempotent run over `paths` (default: host log folders on this machine): every step in order.

    `reread=True` reads every log from its first line, whatever the ledger says (`replay --relog`).
    `with_index=False` skips the derived index (check, duplicate look-ups, sync); card files are
    the source of truth and `memoir index rebuild` or the next run catches the index up.
    Holds the home's run lock (waits `lock_wait_s`, default settings.run_lock_timeout_s, then
    raises `flows.lock.RunBusy`); each step raises `StepTimeout` past settings.step_timeout_s.
    """
    wait = settings.run_lock_timeout_s if lock_wait_s is None else lock_wait_s
    check_home_layout(settings.home)  # a file where state/ or index/ belongs: a message, not a traceback
    with run_lock(settings.state_dir, wait, what="run"), fewer_collections():
        started = time.monotonic()
        run = open_run(settings, [str(p) for p in paths or []], host, with_index, progress)
        run.reread = reread
        for step in STEPS:
            run_step(run, step)
        run.summary.elapsed_s = time.monotonic() - started
        return run.summary
