"""The nightly pipeline as plain stage functions: collect → sanitize → segment → draft → rules → gates → store → index.

Prefect flows (flows/nightly.py) call these same functions; nothing here knows about Prefect.
Each stage is a pure function over dataclasses except the edges (collect, store, index, ledger).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from cards.collect import CollectResult, collect_file, iter_candidates
from cards.config import Settings
from cards.draft import draft_card
from cards.hosts import default_roots, reader_for
from cards.ledger import Ledger
from cards.model import Card, Experience, Turn
from cards.sanitize import sanitize_with_report
from cards.segment import SegmentRules, segment_session
from cards.store import CardStore

Progress = Callable[[str, int, int], None]


@dataclass
class RunSummary:
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
            "hand_edited": self.hand_edited,
            "queued": dict(sorted(self.queued.items())),
            "model": self.model,
            "index": self.index,
            "notes": self.notes,
            "elapsed_s": round(self.elapsed_s, 3),
        }


def default_log_paths(user_home: Path | None = None) -> list[Path]:
    """The host log folders that exist on this machine."""
    roots = default_roots(user_home or Path.home())
    return [p for p in roots.values() if p.exists()]


def sanitize_turns(turns: Iterable[Turn], blob_cap: int, redacted: Counter) -> list[Turn]:
    """Scrub every turn before anything downstream can store it."""
    out = []
    for turn in turns:
        result = sanitize_with_report(turn.text, blob_cap)
        if result.counts:
            redacted.update(result.counts)
            out.append(_with_text(turn, result.text))
        else:
            out.append(turn)
    return out


def _with_text(turn: Turn, text: str) -> Turn:
    from dataclasses import replace

    return replace(turn, text=text)


def plan_experiences(
    sessions: dict[tuple[str, str], list[Turn]], settings: Settings, redacted: Counter
) -> list[tuple[Experience, Card]]:
    """Sanitize, segment and draft every collected session. Pure apart from counting."""
    rules = SegmentRules(pause=timedelta(minutes=settings.pause_minutes))
    drafted: list[tuple[Experience, Card]] = []
    for key in sorted(sessions):
        clean = sanitize_turns(sessions[key], settings.blob_cap, redacted)
        for exp in segment_session(clean, rules):
            drafted.append((exp, draft_card(exp, settings.min_conclusion_chars)))
    return drafted


def store_cards(store: CardStore, cards: Iterable[Card], summary: RunSummary) -> list[Card]:
    """Write each card (the user's hand wins); returns the cards whose files now changed."""
    changed = []
    for card in cards:
        outcome = store.write(card)
        summary.cards[outcome.action] += 1
        if outcome.action == "hand_edited":
            summary.hand_edited.append(card.id)
        elif outcome.action in ("new", "updated"):
            changed.append(card)
    store.save_manifest()
    return changed


def collect_logs(paths: list[Path], host: str, ledger: Ledger, progress: Progress | None = None) -> CollectResult:
    """Read each candidate log file in turn, so a long run can show progress per file."""
    out = CollectResult()
    files = list(iter_candidates(paths, host, out.skipped))
    if host != "auto":
        reader_for(host)
    for i, path in enumerate(files):
        out.files_seen += 1
        collect_file(path, host, ledger, out)
        if progress:
            progress("collect", i + 1, len(files))
    for turns in out.sessions.values():
        turns.sort(key=lambda t: (t.seq, t.line))
    return out


def run_pipeline(
    settings: Settings,
    paths: list[Path] | None = None,
    host: str = "auto",
    progress: Progress | None = None,
) -> RunSummary:
    """One idempotent run over `paths` (default: host log folders on this machine)."""
    started = time.monotonic()
    summary = RunSummary()
    paths = list(paths) if paths else default_log_paths()
    if not paths:
        summary.notes.append("no host log folders found; pass --logs PATH")
    store = CardStore(settings.cards_dir, settings.state_dir)
    with Ledger.in_state_dir(settings.state_dir) as ledger:
        # Collect
        collected = collect_logs(paths, host, ledger, progress)
        summary.files_seen, summary.files_read = collected.files_seen, collected.files_read
        summary.bytes_read = collected.bytes_read
        summary.skipped.update(collected.skipped)
        summary.turns, summary.sessions = collected.turn_count, len(collected.sessions)
        # Transform
        drafted = plan_experiences(collected.sessions, settings, summary.redacted)
        summary.experiences = len(drafted)
        # Load
        store_cards(store, [card for _, card in drafted], summary)
        collected.commit(ledger)
    summary.elapsed_s = time.monotonic() - started
    return summary
