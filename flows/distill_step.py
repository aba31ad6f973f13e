"""The distill step of a run: the user's hand, then rules → model → quality gates.

A plain function the run (`flows/pipeline.py`) calls, with or without Prefect.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from memoir.cards.config import Settings, environment
from memoir.cards.distill.llm import BatchReport, ask_model, settle_batch
from memoir.cards.distill.llm_client import endpoints_from_settings
from memoir.cards.distill.merge import MAX_EVIDENCE_BLOCKS, source_label
from memoir.cards.distill.rules import RulesPlan, apply_rules
from memoir.cards.forget import guard_library
from memoir.cards.project_registry import ProjectRegistry
from memoir.cards.values import Card, Experience, card_id
from memoir.cards.review import user_owned
from memoir.cards.spool import SpilledExperience, SpilledJoin
from memoir.cards.store import CardStore
from memoir.flows.progress import AnnouncedLoad
from memoir.index.db import Index
from memoir.index.embed import Embedder

NEIGHBOURS = 5  # active cards the duplicate gate compares a new card with
LEXICAL_POOL = 200  # without an index, the most recent active cards of the same workspace


@dataclass
class DistillReport:
    """The cards to write, plus what the model stage counted and asks to requeue."""

    cards: list[Card]
    counts: Counter = field(default_factory=Counter)
    alerts: list[str] = field(default_factory=list)
    requeue: list[list[tuple[Experience, Card]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    model: str = "off: rule stage only (no model endpoint configured)"
    endpoints: tuple = ()
    judged: dict[str, Card] = field(default_factory=dict)  # id -> the card as the model and gates left it


def fresh_cards(plan: RulesPlan, library: Mapping[str, Card]) -> set[str]:
    """Ids of written cards whose content came from this run (new, or with new sources)."""
    fresh = set()
    for card in plan.write:
        old = library.get(card.id)
        if old is None or old.sources != card.sources or old.conclusion != card.conclusion:
            fresh.add(card.id)
    return fresh


def experience_for(card: Card, by_id: Mapping[str, Experience]) -> Experience | None:
    """The experience(s) a card came from, joined into one when a merge gave it several.

    A merged card is judged by the evidence it shows: the experiences behind its newest
    `MAX_EVIDENCE_BLOCKS` evidence blocks, and the one its conclusion came from. A signature seen
    in thousands of sessions made the gates read every turn of all of them at once (every source
    stays listed in `sources`).
    """
    found = [(s, by_id[k]) for s in card.sources if (k := card_id(s.host, s.session_id, *s.turns)) in by_id]
    if len(found) > MAX_EVIDENCE_BLOCKS:
        said = card.extra.get("conclusion_from")
        newest = found[-MAX_EVIDENCE_BLOCKS:]
        first = next((f for f in found[:-MAX_EVIDENCE_BLOCKS] if source_label(f[0]) == said), None)
        found = ([first] + newest[1:]) if first else newest
    found = [exp for _, exp in found]
    if not found:
        return None
    if len(found) == 1:
        return found[0]
    if any(isinstance(e, SpilledExperience) for e in found):
        return SpilledJoin(tuple(found))  # read back and joined one batch at a time (`spool.loaded`)
    turns = tuple(t for exp in found for t in exp.turns)
    first = found[0]
    return Experience(first.host, first.session_id, turns, first.boundary, first.error_signature)


def judgeable(card: Card) -> bool:
    """Rules decided these states already (conflict, supersession, integrity); gates leave them."""
    return card.status in ("active", "incomplete") and card.gate != "unresolved_conflict" \
        and card.confirmed_by != "user"


class Neighbourhood:
    """Active cards near a new card, and a cached embedding similarity, for the duplicate gate."""

    def __init__(self, library: Sequence[Card], index: Index | None = None, embedder: Embedder | AnnouncedLoad | None = None):
        self.active = [c for c in library if c.status == "active"]
        self.by_id = {c.id: c for c in self.active}
        self.index, self.embedder = index, embedder
        self.vectors: dict[str, np.ndarray] = {}

    def pool(self, cards: Sequence[Card]) -> list[Card]:
        """Without the index or the model: the most recent active cards of `cards`' workspaces, compared by words."""
        spaces = {c.workspace for c in cards}
        pool = [c for c in self.active if c.workspace in spaces]
        return sorted(pool, key=lambda c: (c.updated, c.id))[-LEXICAL_POOL:]

    @property
    def lazy(self) -> bool:
        """With the index and the model, each card's neighbours are found when the duplicate gate asks (`near`)."""
        return self.index is not None and self.embedder is not None

    def near(self, card: Card) -> list[Card]:
        """The active cards nearest one card's conclusion; encodes its text and theirs."""
        text = card.conclusion.strip()
        if not text:
            return []
        self._encode([text])
        found = {cid: self.by_id[cid] for cid, _ in self.index.knn(self.vectors[text], k=NEIGHBOURS) if cid in self.by_id}
        self._encode([c.conclusion.strip() for c in found.values() if c.conclusion.strip()])
        return sorted(found.values(), key=lambda c: c.id)

    def _encode(self, texts: list[str]) -> None:
        missing = sorted({t for t in texts if t not in self.vectors})
        if missing:
            for text, vec in zip(missing, self.embedder.encode(missing)):
                self.vectors[text] = vec

    @property
    def similarity(self) -> Callable[[str, str], float] | None:
        if self.embedder is None:
            return None

        def similarity(a: str, b: str) -> float:
            self._encode([a, b])
            return float(np.dot(self.vectors[a], self.vectors[b]))

        return similarity


def plan_distill(
    drafted: list[tuple[Experience, Card]],
    library: list[Card],
    settings: Settings,
    env: Mapping[str, str] | None = None,
    store: CardStore | None = None,
) -> tuple[RulesPlan, list[tuple[Experience, Card]], DistillReport]:
    """The user's hand first (tombstones, hand edits), then rules (dedup, merge, disprove, supersede):
    the plan, the (experience, card) pairs the model stage and the gates judge next
    (`judge_batches`), and the report they fill. `memoir replay --dry-run` stops here.

    `store` defaults to the settings' card store; card files deleted by hand become tombstones here.
    """
    store = store or CardStore(settings.cards_dir, settings.state_dir)
    guard = guard_library(store)
    drafted, covered = guard.tombstones.split(drafted)
    # A person's card (hand-edited, confirmed or rejected in review) is never rewritten by a rule.
    frozen = set(store.hand_edited_ids()) | {c.id for c in library if user_owned(c)}
    # Each folder's project, asked of git once and then registered: a worktree, a moved folder or a
    # second clone is its project's workspace, and the cards it drafts are compared as such.
    projects = ProjectRegistry(settings.state_dir).learn({c.workspace for c in library}
                                                         | {c.workspace for _, c in drafted})
    plan = apply_rules(drafted, library, frozen=frozen, projects=projects)
    if guard.deleted_by_hand:
        plan.counters["deleted_by_hand"] += len(guard.deleted_by_hand)  # each one is now a tombstone
    if covered:
        plan.counters["forgotten"] += len(covered)
        plan.dropped.extend((cid, f"forgotten {tid}") for cid, tid in covered)
    library_by_id = {c.id: c for c in library}
    fresh = fresh_cards(plan, library_by_id)
    by_exp = {exp.id: exp for exp, _ in drafted}
    endpoints = endpoints_from_settings(settings, environment(settings.model_api_key_env) if env is None else env)
    outcome = DistillReport(cards=[], notes=[f"forgotten: {cid} (card file deleted by hand)" for cid in guard.deleted_by_hand]
                             + [f"unreadable tombstone: {p}" for p in guard.problems])
    outcome.endpoints = endpoints
    if endpoints:
        outcome.model = f"on: {settings.model_name or 'model'} at {settings.model_base_url}"
    pairs = []
    for card in plan.write:
        exp = experience_for(card, by_exp) if card.id in fresh and judgeable(card) else None
        if exp is not None:
            pairs.append((exp, card))
    return plan, pairs, outcome


def judge_batches(pairs: Sequence[tuple[Experience, Card]], settings: Settings, neighbourhood: Neighbourhood,
                  outcome: DistillReport, prefix: str = "run") -> None:
    """The model stage (when `outcome.endpoints`) and the quality gates, `batch_size` pairs at a time."""
    for batch in batches_of(pairs, settings.batch_size):
        judge_batch(batch, settings, neighbourhood, outcome, prefix)


def batches_of(pairs: Sequence[tuple[Experience, Card]], size: int) -> list[list[tuple[Experience, Card]]]:
    size = max(1, size)
    return [list(pairs[i:i + size]) for i in range(0, len(pairs), size)]


def judge_batch(batch: Sequence[tuple[Experience, Card]], settings: Settings, neighbourhood: Neighbourhood,
                outcome: DistillReport, prefix: str = "run") -> None:
    """One batch: the model's part, then the gates (the nightly flow asks batches in parallel instead)."""
    settle(batch, ask_batch(batch, settings, outcome.endpoints, prefix), neighbourhood, outcome)


def ask_batch(batch: Sequence[tuple[Experience, Card]], settings: Settings, endpoints: Sequence,
              prefix: str = "run") -> BatchReport:
    """The model's part of one batch: the requests, nothing that depends on another batch."""
    return ask_model(batch, endpoints, timeout=settings.model_timeout_s,
                     min_conclusion_chars=settings.min_conclusion_chars, batch_id=f"{prefix}-{batch[0][1].id}")


def settle(batch: Sequence[tuple[Experience, Card]], asked: BatchReport, neighbourhood: Neighbourhood,
           outcome: DistillReport) -> None:
    """The gates over one asked batch, against the cards active so far: call in the batches' order."""
    # With the model, only a card the other gates let through is embedded, against its own neighbours.
    active = neighbourhood.near if neighbourhood.lazy else neighbourhood.pool([c for _, c in batch])
    result = settle_batch(batch, asked, bool(outcome.endpoints), active, neighbourhood.similarity)
    outcome.counts.update(result.counts)
    outcome.alerts.extend(result.alerts)
    if result.requeue and result.pending:
        waiting = set(result.pending)
        outcome.requeue.append([(exp, card) for exp, card in batch if card.id in waiting])
    for card in result.cards:
        outcome.judged[card.id] = card
        if card.status == "active":
            neighbourhood.active.append(card)
            neighbourhood.by_id[card.id] = card
