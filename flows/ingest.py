"""What the collect, transform and store steps of a run do, as plain functions, and the run's summary.

Find and read the logs (`collect_logs`), sanitize + segment + draft (`plan_experiences`), write
the card files (`store_cards`). The order of a run is in `flows/pipeline.py`; nothing here knows
about Prefect or about that order.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from memoir.cards.collect import CollectReport, collect_file, iter_candidates
from memoir.cards.config import Settings
from memoir.cards.draft import draft_card
from memoir.cards.hosts import aider, default_roots, reader_for
from memoir.cards.ledger import Ledger
from memoir.cards.sanitize.fields import sanitize_turn
from memoir.cards.segment import SegmentRules, segment_with_skips
from memoir.cards.store import CardStore, remove_temp_files, render_card
from memoir.cards.values import Card, Experience, Turn
from memoir.flows.progress import Progress
from memoir.flows.queue import OverflowQueue


@dataclass
class RunReport:
    """What one run did, for the closing summary (`--json` prints exactly this)."""

    files_seen: int = 0
    files_read: int = 0
    bytes_read: int = 0
    turns: int = 0
    sessions: int = 0
    experiences: int = 0
    cards: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)
    redacted: Counter = field(default_factory=Counter)
    rules: Counter = field(default_factory=Counter)
    distill: Counter = field(default_factory=Counter)
    alerts: list[str] = field(default_factory=list)
    hand_edited: list[str] = field(default_factory=list)
    queued: Counter = field(default_factory=Counter)
    model: str = "off: rule stage only (no model endpoint configured)"
    index: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0

    def to_dict(self) -> dict:
        return {
            "files_seen": self.files_seen,
            "files_read": self.files_read,
            "bytes_read": self.bytes_read,
            "sessions": self.sessions,
            "turns": self.turns,
            "experiences": self.experiences,
            "cards": dict(sorted(self.cards.items())),
            "skipped": dict(sorted(self.skipped.items())),
            "redacted": dict(sorted(self.redacted.items())),
            "rules": dict(sorted(self.rules.items())),
            "distill": dict(sorted(self.distill.items())),
            "alerts": self.alerts,
            "hand_edited": self.hand_edited,
            "queued": dict(sorted(self.queued.items())),
            "model": self.model,
            "index": self.index,
            "notes": self.notes,
            "elapsed_s": round(self.elapsed_s, 3),
        }


# --- collect ----------------------------------------------------------------------------------------


def default_log_sources(aider_repos: Iterable[str] = (), user_home: Path | None = None) -> list[tuple[str, Path]]:
    """(host, path) for every log source a run reads without --logs: host folders, registered Aider histories."""
    roots = list(default_roots(user_home or Path.home()).items())
    return roots + [(aider.HOST, Path(aider.history_file(p))) for p in aider_repos]


def default_log_paths(user_home: Path | None = None, aider_repos: Iterable[str] = ()) -> list[Path]:
    """The default log sources that exist on this machine (an Aider repo may not have a history yet)."""
    return [p for _, p in default_log_sources(aider_repos, user_home) if p.exists()]


def collect_logs(paths: list[Path], host: str, ledger: Ledger, progress: Progress | None = None,
                 follow_symlinks: bool = False) -> CollectReport:
    """Read each candidate log file in turn, so a long run can show progress per file.

    `collect_file` counts whatever one file or line raises under `skipped`; the batch goes on.
    """
    out = CollectReport()
    files = list(iter_candidates(paths, host, out.skipped, follow_symlinks))
    if host != "auto":
        reader_for(host)
    for i, path in enumerate(files):
        out.files_seen += 1
        collect_file(path, host, ledger, out)
        if progress:
            progress("collect", i + 1, len(files), f"{out.bytes_read / 1e6:.1f} MB")
    for turns in out.sessions.values():
        turns.sort(key=lambda t: (t.seq, t.line))
    return out


# --- transform --------------------------------------------------------------------------------------


def sanitize_turns(turns: Iterable[Turn], blob_cap: int, redacted: Counter) -> list[Turn]:
    """Scrub every stored field of every turn before anything downstream can store it."""
    return [sanitize_turn(t, blob_cap, redacted) for t in turns]


def is_subagent(turns: list[Turn]) -> bool:
    """A subagent (sidechain) transcript: its report already sits in the parent's Task/Agent result."""
    return bool(turns) and all(t.is_sidechain for t in turns)


def plan_experiences(
    sessions: dict[tuple[str, str], list[Turn]], settings: Settings, redacted: Counter,
    skipped: Counter | None = None,
) -> list[tuple[Experience, Card]]:
    """Sanitize, segment and draft every collected session. Pure apart from counting.

    A subagent transcript makes no card of its own: it belongs to the parent task whose Task or
    Agent call started it, and that call's result holds its report. Stretches worth no card
    (greetings, warm-ups, bare slash commands, interrupted prompts, banners) are counted in
    `skipped` by reason.
    """
    rules = SegmentRules(pause=timedelta(minutes=settings.pause_minutes))
    skipped = Counter() if skipped is None else skipped
    drafted: list[tuple[Experience, Card]] = []
    for key in sorted(sessions):
        turns = sessions[key]
        if is_subagent(turns):
            skipped["subagent_in_parent_task"] += 1
            continue
        if any(t.is_sidechain for t in turns):
            # Older Claude Code logs interleave a Task's subagent turns with the parent's.
            skipped["subagent_turns_in_parent_task"] += sum(t.is_sidechain for t in turns)
            turns = [t for t in turns if not t.is_sidechain]
        try:
            clean = sanitize_turns(turns, settings.blob_cap, redacted)
            experiences, reasons = segment_with_skips(clean, rules)
        except Exception as exc:  # noqa: BLE001 - one session no rule foresaw must not stop the batch
            skipped[f"session_error_{type(exc).__name__}"] += 1
            continue
        skipped.update(f"no_card_{r.reason}" for r in reasons)
        for exp in experiences:
            try:
                drafted.append((exp, draft_card(exp, settings.min_conclusion_chars, exp is experiences[-1])))
            except Exception as exc:  # noqa: BLE001 - likewise for one experience
                skipped[f"experience_error_{type(exc).__name__}"] += 1
    return drafted


# --- store ------------------------------------------------------------------------------------------


def store_cards(store: CardStore, cards: Iterable[Card], summary: RunReport,
                queue: OverflowQueue | None = None) -> list[Card]:
    """Write each card (the user's hand wins); returns the cards whose files now changed.

    With a `queue`, a card whose write the filesystem refuses (permission, read-only, quota,
    disk full, sandbox) becomes a `card_write` item and the run goes on; `memoir replay` writes it.
    """
    changed = []
    cards = list(cards)
    for card, outcome in zip(cards, store.write_many(cards)):
        if outcome.action == "failed":
            if queue is None:
                raise OSError(f"cannot write card {card.id}: {outcome.error}")
            queue.add("card_write", card.id, {"card_id": card.id, "text": render_card(card),
                                              "error": outcome.error}, error=outcome.error)
            summary.queued["card_write"] += 1
            continue
        summary.cards[outcome.action] += 1
        if outcome.action in ("new", "updated"):
            changed.append(card)
    store.save_manifest()
    # Every card a person edited, not only those this run tried to write: the summary says which
    # files memoir is leaving alone.
    summary.hand_edited = sorted(set(summary.hand_edited) | set(store.hand_edited_ids()))
    return changed


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


def clean_leftovers(settings: Settings, queue: OverflowQueue) -> int:
    """Delete temp files a killed write left (readers already ignore them); only under the run lock."""
    return remove_temp_files(settings.cards_dir) + remove_temp_files(settings.state_dir) + queue.clean_temp_files()
