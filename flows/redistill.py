"""Backlog replay over the library: `memoir replay --redistill` and `memoir replay --relog PATH…`.

`--redistill` runs the current rules, and the model stage when one is configured, over cards
already in the library: each card's source turns are read again (read-only) from the log its
`sources` name, drafted by today's rules and judged by the model and the gates. A person's cards
(edited by hand, confirmed or rejected in review, forgotten) are never touched. The journal
`state/redistill.json` makes it idempotent and resumable: a card is done for one *generation*
(memoir's version and the model) once its new file is recorded there, and the cards a batch is
about to write are recorded first, so a replay killed mid-batch (kill -9) recognises its own
writes when it starts again. `--relog` is a run over logs the ledger already holds, read from
their first line: rules recognise what is in the library, and what today's segmenter cuts
differently becomes new cards.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memoir.cards.collect import CollectReport, collect_file
from memoir.cards.config import Settings, environment
from memoir.cards.distill.llm_client import endpoints_from_settings
from memoir.cards.draft import draft_card
from memoir.cards.forget import tombstone_path
from memoir.cards.review import user_owned
from memoir.cards.store import CardStore, content_hash, render_card, write_atomic
from memoir.cards.values import Card, Experience
from memoir.flows.alerts import record_model_stage, utc_now
from memoir.flows.distill_step import (DistillReport, Neighbourhood, experience_for, judge_batch, judgeable,
                                      plan_distill)
from memoir.flows.ingest import collect_logs, plan_experiences
from memoir.flows.lock import run_lock
from memoir.flows.progress import Progress
from memoir.index.embed import Embedder, default_embedder
from memoir.index.files import INDEX_FILE
from memoir.index.pending import PendingIndex
from memoir.index.sync import index_or_queue

JOURNAL = "redistill.json"
KEPT = ("superseded", "forgotten")  # cross-card decisions a redraft of one card cannot revisit


@dataclass
class RedistillReport:
    """What a redistill did, or with `dry_run` would do (`--json` prints exactly this)."""

    dry_run: bool = False
    cards: int = 0  # eligible cards this replay takes (or would take)
    model_calls: int = 0  # requests sent to the model (dry run: that it would send)
    skipped: Counter = field(default_factory=Counter)
    written: Counter = field(default_factory=Counter)
    distill: Counter = field(default_factory=Counter)
    alerts: list[str] = field(default_factory=list)
    index: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    model: str = ""
    elapsed_s: float = 0.0

    def to_dict(self) -> dict:
        return {"dry_run": self.dry_run, "cards": self.cards, "model_calls": self.model_calls,
                "skipped": dict(sorted(self.skipped.items())), "written": dict(sorted(self.written.items())),
                "distill": dict(sorted(self.distill.items())), "alerts": self.alerts, "index": self.index,
                "notes": self.notes, "model": self.model, "elapsed_s": round(self.elapsed_s, 3)}


def generation(endpoints: Sequence) -> str:
    """What a card is redistilled *for*: this memoir's rules and the model; a new one takes every card again."""
    from importlib.metadata import version  # deferred: start-up (metadata scan)

    model = ",".join(f"{e.model}@{e.base_url}" for e in endpoints) or "rules"
    return f"memoir {version('memoir')}; {model}"


# --- the journal ----------------------------------------------------------------------------------


def read_journal(state_dir: Path, gen: str) -> dict:
    """{"generation", "done": {id: file hash}, "writing": {id: hash}}; another generation starts empty."""
    try:
        data = json.loads((Path(state_dir) / JOURNAL).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict) or data.get("generation") != gen:
        return {"generation": gen, "done": {}, "writing": {}}
    return {"generation": gen, "done": dict(data.get("done") or {}), "writing": dict(data.get("writing") or {})}


def save_journal(state_dir: Path, journal: dict) -> None:
    write_atomic(Path(state_dir) / JOURNAL, json.dumps(journal, sort_keys=True, indent=0) + "\n")


def recover(store: CardStore, journal: dict) -> int:
    """Cards a killed replay renamed into place before it saved the manifest: its own, not hand edits."""
    mine = 0
    for card_id, wanted in journal["writing"].items():
        text = store.read_text(card_id)
        if text is not None and content_hash(text) == wanted:
            store.manifest[card_id] = wanted
            journal["done"][card_id] = wanted
            mine += 1
    journal["writing"] = {}
    return mine


# --- which cards, and what they become ------------------------------------------------------------


def select_cards(library: Iterable[Card], store: CardStore, done: dict, model_on: bool,
                 since: str = "", workspace: str = "") -> tuple[list[Card], Counter]:
    """The cards a redistill takes, oldest first, and why each other card was left alone."""
    skipped: Counter = Counter()
    hand = set(store.hand_edited_ids())
    chosen = []
    for card in sorted(library, key=lambda c: (c.created, c.id)):
        text = store.read_text(card.id)
        if since and card.created[:len(since)] < since:
            skipped["before_since"] += 1
        elif workspace and not (card.workspace == workspace or card.workspace.startswith(workspace.rstrip("/") + "/")):
            skipped["other_workspace"] += 1
        elif card.id in hand:
            skipped["hand_edited"] += 1
        elif user_owned(card):
            skipped["review_decision"] += 1
        elif card.status in KEPT or tombstone_path(store, card.id).exists():
            skipped[card.status if card.status in KEPT else "forgotten"] += 1
        elif text is not None and done.get(card.id) == content_hash(text):
            skipped["done"] += 1
        elif model_on and card.quality == "model":
            skipped["model_already"] += 1
        elif not card.sources:
            skipped["no_source"] += 1
        else:
            chosen.append(card)
    return chosen, skipped


def redraft(card: Card, exp: Experience, min_conclusion_chars: int) -> Card:
    """Today's rules over the card's own turns; what rules decided across cards (its id, sources,
    links, conflicts, dedup keys) stays. A card merged from several experiences keeps its text."""
    if len(card.sources) != 1 or card.gate == "unresolved_conflict":
        return card
    new = draft_card(exp, min_conclusion_chars)
    return new.with_(id=card.id, sources=card.sources, supersedes=card.supersedes, superseded_by=card.superseded_by,
                     extra={**card.extra, **new.extra})


def source_experiences(cards: Sequence[Card], settings: Settings, skipped: Counter) -> dict[str, Experience]:
    """The experiences behind `cards`, by id, from their source logs read again from the first line."""
    out = CollectReport()
    files = sorted({(s.file, s.host) for c in cards for s in c.sources})
    for path, host in files:
        if not Path(path).is_file():
            skipped["source_log_gone"] += 1
            continue
        collect_file(Path(path), host, None, out)
    drafted = plan_experiences(out.sessions, settings, Counter(), Counter())
    return {exp.id: exp for exp, _ in drafted}


# --- the replay -----------------------------------------------------------------------------------


def redistill(settings: Settings, since: str = "", workspace: str = "", dry_run: bool = False,
              progress: Progress | None = None, lock_wait_s: float | None = None,
              endpoints: Sequence | None = None, embedder: Embedder | None = None) -> RedistillReport:
    """Redistill the eligible cards, `batch_size` at a time, under the run lock; see the module docstring."""
    wait = settings.run_lock_timeout_s if lock_wait_s is None else lock_wait_s
    with run_lock(settings.state_dir, wait, what="replay --redistill"):
        return _redistill_locked(settings, since, workspace, dry_run, progress, endpoints, embedder)


def _redistill_locked(settings, since, workspace, dry_run, progress, endpoints, embedder) -> RedistillReport:
    started = time.monotonic()
    if endpoints is None:
        endpoints = endpoints_from_settings(settings, environment(settings.model_api_key_env))
    report = RedistillReport(dry_run=dry_run, model=f"on: {settings.model_name or 'model'} at "
                             f"{settings.model_base_url}" if endpoints else "off: rules only")
    store = CardStore(settings.cards_dir, settings.state_dir)
    journal = read_journal(settings.state_dir, generation(endpoints))
    if journal["writing"] and not dry_run:
        if n := recover(store, journal):
            report.notes.append(f"{n} cards written by a replay that was stopped are recognised as its own")
        store.save_manifest()
        save_journal(settings.state_dir, journal)
    library, unreadable = store.load_all()
    report.notes.extend(f"unreadable card file: {p}" for p in unreadable)
    cards, report.skipped = select_cards(library, store, journal["done"], bool(endpoints), since, workspace)
    by_exp = source_experiences(cards, settings, report.skipped)
    pairs = []
    for card in cards:
        exp = experience_for(card, by_exp)
        if exp is None:
            report.skipped["source_turns_gone"] += 1
            continue
        pairs.append((exp, redraft(card, exp, settings.min_conclusion_chars)))
    report.cards = len(pairs)
    if dry_run:
        report.model_calls = sum(judgeable(c) for _, c in pairs) if endpoints else 0
        report.elapsed_s = time.monotonic() - started
        return report
    embedder = embedder or default_embedder()
    changed: list[str] = []
    size = max(1, settings.batch_size)
    for start in range(0, len(pairs), size):
        batch = pairs[start:start + size]
        changed += _one_batch(settings, store, journal, batch, endpoints, embedder, report)
        if progress:
            progress("redistill", min(start + size, len(pairs)), len(pairs))
    report.index = _index(settings, store, embedder, changed)
    if report.distill.get("sent") or report.alerts:  # incidents go where a run's go: status, alert_command
        report.notes.extend(record_model_stage(settings, utc_now(), f"redistill: {report.model}", report.distill,
                                               report.alerts).notes)
    report.elapsed_s = time.monotonic() - started
    return report


def _one_batch(settings, store, journal, batch, endpoints, embedder, report) -> list[str]:
    """Judge one batch against the library as it is on disk now, write it, record it in the journal."""
    library, _ = store.load_all()  # the same view whether or not an earlier replay was stopped
    outcome = DistillReport(cards=[], endpoints=tuple(endpoints))
    judge = [(e, c) for e, c in batch if judgeable(c)]
    if judge:
        judge_batch(judge, settings, Neighbourhood(library, None, embedder), outcome, prefix="redistill")
    report.model_calls += outcome.counts.get("sent", 0)
    report.distill.update(outcome.counts)
    report.alerts.extend(outcome.alerts)
    waiting = {c.id for pairs in outcome.requeue for _, c in pairs}  # the model was down: not done, next time
    cards = [outcome.judged.get(c.id, c) for _, c in batch if c.id not in waiting]
    report.skipped["model_unavailable"] += len(waiting)
    journal["writing"] = {c.id: content_hash(render_card(c)) for c in cards}
    save_journal(settings.state_dir, journal)
    outcomes = store.write_many(cards)
    store.save_manifest()
    changed = []
    for card, out in zip(cards, outcomes):
        report.written[out.action] += 1
        if out.action in ("new", "updated", "unchanged"):
            journal["done"][card.id] = journal["writing"][card.id]
        if out.action in ("new", "updated"):
            changed.append(card.id)
        if out.action == "failed":
            report.notes.append(f"cannot write {card.id}: {out.error}")
    journal["writing"] = {}
    save_journal(settings.state_dir, journal)
    return changed


def _index(settings: Settings, store: CardStore, embedder, changed: list[str]) -> dict:
    """Index the cards this replay changed, or leave their ids on the pending list for the next run."""
    if not changed or not (settings.index_dir / INDEX_FILE).exists():
        return {}
    pending = PendingIndex(settings.state_dir)
    outcome = index_or_queue(store, settings.index_dir, embedder, changed, pending)
    return {"indexed": len(outcome.indexed), "queued": len(outcome.queued), "error": outcome.error}


def plan_relog(settings: Settings, paths: Sequence[Path], host: str = "auto",
               endpoints: Sequence | None = None) -> RedistillReport:
    """`--relog --dry-run`: the cards a run reading `paths` from their first line would write, and
    the model calls it would make; nothing is written and the ledger is not moved."""
    started = time.monotonic()
    env = None if endpoints is None else {}
    report = RedistillReport(dry_run=True)
    collected = collect_logs(list(paths), host, None, follow_symlinks=settings.follow_symlinks, reread=True)
    report.skipped.update(collected.skipped)
    drafted = plan_experiences(collected.sessions, settings, Counter(), report.skipped)
    library, _ = CardStore(settings.cards_dir, settings.state_dir).load_all()
    plan, pairs, outcome = plan_distill(drafted, library, settings, env)
    if endpoints is not None:
        outcome.endpoints = tuple(endpoints)
    report.cards = len(plan.write)
    report.model_calls = len(pairs) if outcome.endpoints else 0
    report.skipped.update({k: v for k, v in plan.counters.items() if k == "already_in_library" and v})
    report.model = outcome.model
    report.elapsed_s = time.monotonic() - started
    return report
