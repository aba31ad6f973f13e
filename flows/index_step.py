"""The index step of a run: check the derived index before (rebuild on corruption), sync it after.

A failing index never stops a run: card files are the source of truth, so what could not be
indexed goes on the pending list and the run says so in its notes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memoir.cards.config import Settings
from memoir.cards.ledger import Ledger, LedgerError
from memoir.cards.store import CardStore
from memoir.flows.progress import AnnouncedLoad
from memoir.index.db import Index, open_index
from memoir.index.embed import Embedder, default_embedder
from memoir.index.errors import IndexFailure
from memoir.index.pending import PendingIndex
from memoir.flows.lock import run_lock
from memoir.index.rebuild import RebuildReport, ensure_index, rebuild_index, remove_leftovers
from memoir.index.sync import sync_index
from memoir.index.turns import EMBED_STEP, TurnIndex, TurnRefresh

UNTIL_STEP = 64  # texts per encode call when the refresh has a time limit: it stops within a few seconds of it


@dataclass
class IndexStep:
    """The derived index around a run: check (rebuild on corruption) before, sync after."""

    settings: Settings
    store: CardStore
    embedder: Embedder | AnnouncedLoad | None = None
    notes: list[str] = field(default_factory=list)
    figures: dict = field(default_factory=dict)

    def __post_init__(self):
        self.embedder = self.embedder or default_embedder()
        self.pending = PendingIndex(self.settings.state_dir)
        self._index: Index | None = None

    def ensure(self) -> None:
        """`memoir index check` first; a corrupt index or one built for another model is rebuilt."""
        try:
            outcome = ensure_index(self.store, self.settings.index_dir, self.embedder,
                                   concurrency=self.settings.rebuild_concurrency, pending=self.pending)
        except (IndexFailure, OSError) as exc:
            self.notes.append(f"index check failed ({exc}); run `memoir index rebuild`")
            return
        if outcome.reason:
            self.notes.append(outcome.reason)
            self.figures["rebuilt"] = outcome.rebuilt.cards if outcome.rebuilt else 0

    def open(self) -> Index | None:
        """The open index for neighbour look-ups, or None when it cannot be opened now."""
        if self._index is None:
            try:
                self._index = open_index(self.settings.index_dir, self.embedder)
            except (IndexFailure, OSError) as exc:
                self.notes.append(f"index unavailable for duplicate checks ({exc})")
                return None
        return self._index

    def sync(self, changed_ids: Sequence[str]) -> None:
        """Index what changed on disk (hand edits too) and drain the pending list; queue on failure."""
        index = self.open()
        if index is None:
            self.pending.add(changed_ids)
            self.figures["queued"] = len(changed_ids)
            return
        try:
            report = sync_index(self.store, index, self.pending)
        except (IndexFailure, OSError) as exc:
            self.pending.add(changed_ids)
            self.figures["queued"] = len(changed_ids)
            self.notes.append(f"index update failed ({exc}); {len(changed_ids)} cards queued for `memoir replay`")
            return
        self.figures.update(added=len(report.added), updated=len(report.updated), removed=len(report.removed))
        if report.restamped:
            self.notes.append(f"stored {report.restamped} cards again in the index as this memoir's card parser "
                              "reads them (memoir was upgraded); recall reads them without parsing their files")
        if report.still_pending:
            self.figures["queued"] = len(report.still_pending)
        self.notes.extend(report.problems)

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None

    def refresh_turns(self, progress: Callable | None = None, until: float | None = None) -> TurnRefresh | None:
        """Bring the turn index deep search reads up to the committed ledger, every new turn embedded
        (or as much as fits before `until`, a `time.monotonic()`: the rest is counted and waits).

        Done here, with progress, so that the first `memoir search` on a home finds it built rather
        than reading and embedding every log in silence. A failure is a note (and None): search
        refreshes it too.
        """
        state = self.settings.state_dir
        try:
            with Ledger.in_state_dir(state) as ledger:
                ledgered = ledger.as_read()
            turn_index = TurnIndex(state, self.embedder.model_id)
            try:
                refresh = turn_index.refresh_files(ledgered, self.embedder, self.settings.blob_cap,
                                                   budget=None, progress=progress, until=until,
                                                   step=EMBED_STEP if until is None else UNTIL_STEP)
                index = self.open()
                problems = list(refresh.problems)
                if index is not None:
                    problems += turn_index.refresh_spans(index.hashes(), self.store)
            finally:
                turn_index.close()
                self.close()
        except (sqlite3.Error, LedgerError, IndexFailure, OSError) as exc:
            self.notes.append(f"turn index not refreshed ({exc}); the next `memoir search` refreshes it")
            return None
        self.notes.extend(f"turn index: {p}" for p in problems)
        return refresh


def rebuild_alone(settings: Settings, embedder, concurrency: int, progress: Callable[[int], None] | None = None,
                  wait_s: float = 0.0) -> RebuildReport:
    """`memoir index rebuild`: under the home's run lock, so no run writes the index it is replacing.

    Waits `wait_s` for a run in progress (then `RunBusy`); a killed rebuild's leftovers go first.
    """
    with run_lock(settings.state_dir, wait_s, what="index rebuild"):
        remove_leftovers(settings.index_dir)
        return rebuild_index(CardStore(settings.cards_dir, settings.state_dir), settings.index_dir, embedder,
                             concurrency, progress=progress, pending=PendingIndex(settings.state_dir))


def refresh_turns_alone(settings: Settings, embedder, progress: Callable | None = None,
                        wait_s: float = 0.0) -> tuple[TurnRefresh | None, list[str]]:
    """`memoir index turns`: finish the turn index a run left within its share of time, under the
    home's run lock (a run refreshes it too). Returns what was done (None: it could not) and the notes."""
    with run_lock(settings.state_dir, wait_s, what="turn index"):
        step = IndexStep(settings, CardStore(settings.cards_dir, settings.state_dir), embedder)
        return step.refresh_turns(progress), step.notes

