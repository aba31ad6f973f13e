"""Apply overflow-queue items once their cause is fixed: `memoir replay` and the replay flow.

Each kind has one apply function, idempotent by card id: a card whose file already holds the
queued bytes is a no-op, an index row with the file's hash is not re-embedded, a distilled card
is written like any other. An item whose apply fails goes back to pending with its attempt
count and error, and is not tried again in the same replay: the cause is evidently still there.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memoir.cards.config import Settings, environment
from memoir.cards.distill.llm import distill_batch
from memoir.cards.distill.llm_client import endpoints_from_settings
from memoir.cards.forget import tombstone_path
from memoir.cards.review import user_owned
from memoir.cards.store import CardFileError, CardStore, content_hash, parse_card, render_card, write_atomic
from memoir.cards.values import Card, Experience, Turn
from memoir.flows.alerts import record_model_stage, utc_now
from memoir.flows.errors import FlowError
from memoir.flows.lock import run_lock
from memoir.flows.progress import Progress
from memoir.flows.queue import OverflowQueue, QueueItem
from memoir.index.db import open_index
from memoir.index.embed import default_embedder
from memoir.index.files import INDEX_FILE
from memoir.index.pending import PendingIndex
from memoir.index.sync import index_ids, index_or_queue


@dataclass(frozen=True)
class Applied:
    """What applying one item did; `written` maps card id -> hash of the bytes now on disk."""

    name: str
    kind: str
    ok: bool
    action: str = ""
    error: str = ""
    written: dict = field(default_factory=dict)
    asked: ModelAsked | None = None  # a distill_batch item: what the model stage did with it


@dataclass(frozen=True)
class ModelAsked:
    """What the model stage did with one queued batch: its counts and the alert lines it raised."""

    counts: dict = field(default_factory=dict)
    alerts: tuple[str, ...] = ()


@dataclass
class ReplayReport:
    """The replay's closing summary (`--json` prints exactly this)."""

    applied: int = 0
    failed: int = 0
    left: int = 0
    reclaimed: int = 0
    actions: Counter = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    index: dict = field(default_factory=dict)
    distill: Counter = field(default_factory=Counter)  # the model stage's counts over every batch replayed
    alerts: list[str] = field(default_factory=list)  # incident lines it raised (flows/alerts.py sends them on)
    notes: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0

    def to_dict(self) -> dict:
        return {"applied": self.applied, "failed": self.failed, "left": self.left,
                "reclaimed": self.reclaimed, "actions": dict(sorted(self.actions.items())),
                "errors": self.errors, "index": self.index, "distill": dict(sorted(self.distill.items())),
                "alerts": self.alerts, "notes": self.notes, "elapsed_s": round(self.elapsed_s, 3)}


# --- distillation items: sanitized experiences as JSON --------------------------------------------


def turn_to_dict(turn: Turn) -> dict:
    d = dataclasses.asdict(turn)
    d["timestamp"] = turn.timestamp.isoformat() if turn.timestamp else None
    return d


def turn_from_dict(d: Mapping) -> Turn:
    ts = d.get("timestamp")
    return Turn(**{**d, "timestamp": datetime.fromisoformat(ts) if ts else None})


def experience_to_dict(exp: Experience) -> dict:
    return {"host": exp.host, "session_id": exp.session_id, "boundary": exp.boundary,
            "error_signature": exp.error_signature, "turns": [turn_to_dict(t) for t in exp.turns]}


def experience_from_dict(d: Mapping) -> Experience:
    return Experience(host=d["host"], session_id=d["session_id"], boundary=d["boundary"],
                      error_signature=d["error_signature"],
                      turns=tuple(turn_from_dict(t) for t in d["turns"]))


def queue_distill_batch(queue: OverflowQueue, batch_id: str, pairs: Sequence[tuple[Experience, Card]],
                        reason: str = "") -> QueueItem:
    """Queue experiences the model stage could not distill (their turns are already sanitized)."""
    return queue.add("distill_batch", batch_id, {
        "batch_id": batch_id, "reason": reason,
        "items": [{"experience": experience_to_dict(e), "card": render_card(c)} for e, c in pairs],
    })


# --- apply, one function per kind -----------------------------------------------------------------


def apply_card_write(store: CardStore, card_id: str, text: str) -> tuple[str, dict]:
    """Write the queued bytes unless they are already there, or a person edited, ruled on or forgot the card."""
    if tombstone_path(store, card_id).exists():
        return "forgotten", {}
    current = store.read_text(card_id)
    if current is not None:
        try:
            if user_owned(parse_card(current, origin=card_id)):
                return "user_owned", {}
        except CardFileError:
            return "hand_edited", {}
    if current == text:
        return "unchanged", {card_id: content_hash(text)}
    if current is not None and store.is_hand_edited(card_id, current):
        return "hand_edited", {}
    write_atomic(store.path_for(card_id), text)
    return ("new" if current is None else "updated"), {card_id: content_hash(text)}


def apply_index_update(settings: Settings, ids: Sequence[str]) -> str:
    """Index these cards from their files (a hash already indexed is skipped)."""
    store = CardStore(settings.cards_dir, settings.state_dir)
    with open_index(settings.index_dir, default_embedder()) as index:
        report, removed, problems = index_ids(store, index, ids)
    if problems:
        raise RuntimeError("; ".join(problems))
    return f"indexed {report.embedded}, skipped {len(report.skipped)}, removed {len(removed)}"


def apply_distill_batch(settings: Settings, payload: Mapping, endpoints: Sequence) -> tuple[str, dict, ModelAsked]:
    """Distill the queued experiences; cards still undistilled stay in a narrowed item.

    An incident (the endpoint down, hanging, answering junk) comes back in `ModelAsked`, or on the
    `_Narrowed` raised, so the replay records and alerts it like a run's.
    """
    if "items" not in payload:
        # An item with card ids alone cannot be distilled again: the turns are not in it.
        raise ValueError("this distill_batch item holds card ids only, not the sanitized experiences; "
                         "queue batches with flows.replay.queue_distill_batch so a replay can distill them")
    store = CardStore(settings.cards_dir, settings.state_dir)
    pairs = [(experience_from_dict(i["experience"]), parse_card(i["card"])) for i in payload["items"]]
    active = [c for c in store.load_all()[0] if c.status == "active"]
    out = distill_batch(pairs, endpoints, timeout=settings.model_timeout_s, active_cards=active,
                        min_conclusion_chars=settings.min_conclusion_chars, batch_id=payload["batch_id"])
    still = set(out.pending) if out.requeue else set()
    asked = ModelAsked(dict(out.counts), tuple(out.alerts))
    written: dict = {}
    for card in out.cards:
        if card.id in still:
            continue
        _, w = apply_card_write(store, card.id, render_card(card))
        written.update(w)
    if still:
        left = [i for i, (_, c) in zip(payload["items"], pairs) if c.id in still]
        raise _Narrowed(f"model stage still failing: {'; '.join(out.alerts) or 'requeued'}",
                        {**payload, "items": left}, written, asked)
    return f"distilled {len(out.cards)}", written, asked


class _Narrowed(FlowError):
    """Part of a batch went through; the rest goes back to the queue in a smaller item."""

    def __init__(self, message: str, payload: dict, written: dict, asked: ModelAsked):
        super().__init__(message)
        self.payload = payload
        self.written = written
        self.asked = asked


def apply_item(settings: Settings, queue: OverflowQueue, name: str, endpoints: Sequence = ()) -> Applied:
    """Claim one pending item, apply it, then complete it or send it back with the error."""
    item = queue.claim(name)
    if item is None:
        return Applied(name, name.split("--", 1)[0], ok=False, action="gone")
    store = CardStore(settings.cards_dir, settings.state_dir)
    asked = None
    try:
        if item.kind == "card_write":
            action, written = apply_card_write(store, item.payload["card_id"], item.payload["text"])
        elif item.kind == "index_update":
            action, written = apply_index_update(settings, item.payload["ids"]), {}
        else:
            action, written, asked = apply_distill_batch(settings, item.payload, endpoints)
    except _Narrowed as exc:
        queue.fail(item, str(exc), payload=exc.payload)
        return Applied(name, item.kind, ok=False, error=str(exc), written=exc.written, asked=exc.asked)
    except Exception as exc:  # noqa: BLE001 - any failure sends the item back with its error
        error = f"{type(exc).__name__}: {exc}"
        queue.fail(item, error)
        return Applied(name, item.kind, ok=False, error=error)
    queue.complete(item)
    return Applied(name, item.kind, ok=True, action=action, written=written, asked=asked)


# --- a replay: plan, apply in batches, finish -----------------------------------------------------


def plan_replay(settings: Settings, reclaim_after_s: float | None = None) -> tuple[list[str], int]:
    """Reclaim items of dead workers, then snapshot the pending names (oldest first).

    Card writes go first so that index updates and distillation see the cards on disk.
    """
    queue = OverflowQueue(settings.queue_dir, claim_timeout_s=settings.step_timeout_s)
    reclaimed = queue.reclaim_stale(reclaim_after_s)
    queue.clean_temp_files()
    order = {"card_write": 0, "distill_batch": 1, "index_update": 2}
    names = sorted(queue.names("pending"), key=lambda n: order.get(n.split("--", 1)[0], 9))
    return names, len(reclaimed)


def batches(names: Sequence[str], size: int) -> list[list[str]]:
    size = max(1, size)
    return [list(names[i:i + size]) for i in range(0, len(names), size)]


def finish_replay(settings: Settings, outcomes: Sequence[Applied], reclaimed: int, started: float) -> ReplayReport:
    """Record what was written in the manifest, sync the index's own pending list, count, and send the
    model stage's incidents the way a run's go (`memoir status`, `alert_command`)."""
    store = CardStore(settings.cards_dir, settings.state_dir)
    report = ReplayReport(reclaimed=reclaimed)
    written: dict = {}
    for o in outcomes:
        written.update(o.written)
        if o.asked is not None:
            report.distill.update(o.asked.counts)
            report.alerts.extend(o.asked.alerts)
        if o.ok:
            report.applied += 1
            report.actions[f"{o.kind}:{o.action}"] += 1
        elif o.action != "gone":
            report.failed += 1
            report.errors.append(f"{o.name}: {o.error}")
    if written:
        store.manifest.update(written)
        store.save_manifest()
    report.index = sync_pending_index(settings, list(written))
    if report.distill.get("sent") or report.alerts:  # the model was asked: its answer opens or closes incidents
        model = f"replay: {settings.model_name or 'model'} at {settings.model_base_url or 'the endpoints given'}"
        report.notes.extend(record_model_stage(settings, utc_now(), model, report.distill, report.alerts).notes)
    report.left = len(OverflowQueue(settings.queue_dir).names("pending"))
    report.elapsed_s = time.monotonic() - started
    return report


def sync_pending_index(settings: Settings, written_ids: list[str]) -> dict:
    """Drain the index's pending list and index cards the replay wrote, when an index exists."""
    pending = PendingIndex(settings.state_dir)
    if not (settings.index_dir / INDEX_FILE).exists() or not (written_ids or len(pending)):
        return {}
    store = CardStore(settings.cards_dir, settings.state_dir)
    outcome = index_or_queue(store, settings.index_dir, default_embedder(), sorted(set(written_ids) | set(pending.ids())),
                             pending)
    pending.discard(outcome.indexed)  # indexed now: off the list, so `index check` sees the index current
    return {"indexed": len(outcome.indexed), "queued": len(outcome.queued), "error": outcome.error}


def replay_queue(settings: Settings, batch_size: int | None = None, endpoints: Sequence = (),
                 reclaim_after_s: float | None = None, progress: Progress | None = None,
                 lock_wait_s: float | None = None) -> ReplayReport:
    """Apply every pending item once, in batches; the direct (Prefect-free) replay, under the run lock."""
    wait = settings.run_lock_timeout_s if lock_wait_s is None else lock_wait_s
    with run_lock(settings.state_dir, wait, what="replay"):
        return _replay_locked(settings, batch_size, endpoints, reclaim_after_s, progress)


def _replay_locked(settings, batch_size, endpoints, reclaim_after_s, progress) -> ReplayReport:
    started = time.monotonic()
    names, reclaimed = plan_replay(settings, reclaim_after_s)
    queue = OverflowQueue(settings.queue_dir)
    outcomes: list[Applied] = []
    for batch in batches(names, batch_size or settings.batch_size):
        for name in batch:
            outcomes.append(apply_item(settings, queue, name, endpoints))
            if progress:
                progress("replay", len(outcomes), len(names))
    return finish_replay(settings, outcomes, reclaimed, started)


def model_endpoints(settings: Settings) -> tuple:
    """The model endpoints, key included, resolved where a worker process starts (flow tasks)."""
    return endpoints_from_settings(settings, environment(settings.model_api_key_env))
