"""What the collect, transform and store steps of a run do, as plain functions, and the run's summary.

Find and read the logs (`collect_logs`), sanitize + segment + draft (`plan_experiences`), write
the card files (`store_cards`). The order of a run is in `flows/pipeline.py`; nothing here knows
about Prefect or about that order.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from itertools import chain
from pathlib import Path

from memoir.cards.collect import DEFAULT_LINE_CAP, CollectReport, collect_file, read_file
from memoir.cards.config import Settings
from memoir.cards.distill.merge import turns_key
from memoir.cards.draft import draft_card, read_past_range, with_inner_lessons
from memoir.cards.hosts import aider, default_roots, reader_for
from memoir.cards.log_files import iter_candidates
from memoir.cards.ledger import Ledger, LedgerEntry, LedgerView, retired_ids
from memoir.cards.memos import forget_memos
from memoir.cards.sanitize.fields import sanitize_id, sanitize_turn, turn_hints
from memoir.cards.segment import SegmentRules, Skipped, iter_segments
from memoir.cards.spool import PackedDraft, RawSession, Spool, pack_draft, unpack_session
from memoir.cards.stated_choices import stated_decisions
from memoir.cards.store import CardStore, remove_temp_files, render_card, render_cards
from memoir.cards.values import Card, Experience, Turn
from memoir.flows.progress import Progress
from memoir.flows.queue import OverflowQueue
from memoir.flows.workers import WorkerUse, in_order, local_pool, lost_reason, one_unit, workers_for


@dataclass
class RunReport:
    """What one run did, for the closing summary (`--json` prints exactly this)."""

    files_seen: int = 0
    files_read: int = 0
    hosts: Counter = field(default_factory=Counter)
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
    # Seconds per step, the transform step split into sanitize, segment and draft: where a run's time went.
    steps_s: Counter = field(default_factory=Counter)
    # The processes that read and drafted (1: the run's own), and what they used beside the run's process.
    workers: WorkerUse = field(default_factory=WorkerUse)

    def to_dict(self) -> dict:
        return {
            "files_seen": self.files_seen,
            "files_read": self.files_read,
            "hosts": dict(sorted(self.hosts.items())),
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
            "steps_s": {k: round(v, 3) for k, v in self.steps_s.items()},
            "workers": self.workers.to_dict(),
        }


# --- collect ----------------------------------------------------------------------------------------


def default_log_sources(aider_repos: Iterable[str] = (), user_home: Path | None = None) -> list[tuple[str, Path]]:
    """(host, path) for every log source a run reads without --logs: host folders, registered Aider histories."""
    roots = list(default_roots(user_home or Path.home()).items())
    return roots + [(aider.HOST, Path(aider.history_file(p))) for p in aider_repos]


def default_log_paths(user_home: Path | None = None, aider_repos: Iterable[str] = ()) -> list[Path]:
    """The default log sources that exist on this machine (an Aider repo may not have a history yet)."""
    return [p for _, p in default_log_sources(aider_repos, user_home) if p.exists()]


def collect_logs(paths: list[Path], host: str, ledger: Ledger | None, progress: Progress | None = None,
                 follow_symlinks: bool = False, reread: bool = False,
                 line_cap: int = DEFAULT_LINE_CAP, spool: Spool | None = None, workers: int = 1,
                 use: WorkerUse | None = None) -> CollectReport:
    """Read each candidate log file in turn, so a long run can show progress per file.

    `collect_file` counts whatever one file or line raises under `skipped`; the batch goes on.
    `reread` reads every file from its first line, whatever the ledger says (`memoir replay --relog`).
    With a `spool`, the turns are sanitized and put there as each file is read (`plan_spooled`),
    by `workers` processes (the `read_workers` setting, 0: `workers_for` decides from what there is to read);
    `use` adds up what they used.
    """
    out = CollectReport(spool=spool)
    links: set[str] = set()  # the candidates that may be read through a link; the rest open without following one
    files = list(iter_candidates(paths, host, out.skipped, follow_symlinks, links))
    if host != "auto":
        reader_for(host)
    entries = [None if reread or ledger is None else ledger.get(str(f)) for f in files]
    out.workers = workers_for(workers, len(files), bytes_to_read(files, entries)) if spool is not None else 1
    with local_pool(out.workers) as pool:
        out.workers = out.workers if pool else 1
        units = [(str(f), host, e, line_cap, spool.blob_cap, str(f) not in links)
                 for f, e in zip(files, entries)] if pool else []
        parts = in_order(pool, read_file, units, _file_lost, use) if pool else None
        asked = LedgerView({str(f): e for f, e in zip(files, entries)})  # each file's entry, looked up once
        for i, path in enumerate(files):
            out.files_seen += 1
            if parts is None:
                with one_unit():
                    collect_file(path, host, asked, out, line_cap, str(path) not in links)  # type: ignore[arg-type]
            else:
                out.absorb(next(parts))
            if progress:
                progress("collect", i + 1, len(files), f"{out.bytes_read / 1e6:.1f} MB")
    out.finish()
    return out


def bytes_to_read(files: list[Path], entries: list[LedgerEntry | None]) -> int:
    """About how many bytes a collect reads: each file past where its ledger entry ends."""
    total = 0
    for path, entry in zip(files, entries):
        try:
            size = path.stat().st_size
        except OSError:
            continue
        total += size - entry.offset if entry is not None and entry.offset <= size else size
    return total


def _file_lost(unit: tuple, exc: BaseException) -> CollectReport:
    """A file whose worker failed or died: counted, as a file that fails its reader is."""
    out = CollectReport()
    out.skipped[f"file_error_{lost_reason(exc)}"] += 1
    return out


# --- transform --------------------------------------------------------------------------------------


def sanitize_turns(turns: Iterable[Turn], blob_cap: int, redacted: Counter) -> list[Turn]:
    """Scrub every stored field of every turn before anything downstream can store it."""
    turns = list(turns)
    return [sanitize_turn(t, blob_cap, redacted, hints) for t, hints in zip(turns, turn_hints(turns))]


def is_subagent(turns: list[Turn]) -> bool:
    """A subagent (sidechain) transcript: its report already sits in the parent's Task/Agent result."""
    return bool(turns) and all(t.is_sidechain for t in turns)


def plan_experiences(
    sessions: dict[tuple[str, str], list[Turn]], settings: Settings, redacted: Counter,
    skipped: Counter | None = None, timings: Counter | None = None, consume: bool = False,
) -> list[tuple[Experience, Card]]:
    """Sanitize, segment and draft every collected session. Pure apart from counting.

    A subagent transcript makes no card of its own: it belongs to the parent task whose Task or
    Agent call started it, and that call's result holds its report. Stretches worth no card
    (greetings, warm-ups, bare slash commands, interrupted prompts, banners) are counted in
    `skipped` by reason. `timings` gains the seconds spent in sanitize, segment and draft.
    With `consume`, each session's raw turns leave `sessions` once sanitized, so the raw and the
    clean copy of the corpus are never held at once.
    """
    rules = SegmentRules(pause=timedelta(minutes=settings.pause_minutes))
    skipped = Counter() if skipped is None else skipped
    timings = Counter() if timings is None else timings
    drafted: list[tuple[Experience, Card]] = []
    clock = time.perf_counter
    for key in sorted(sessions):
        turns = sessions.pop(key) if consume else sessions[key]
        if is_subagent(turns):
            skipped["subagent_in_parent_task"] += 1
            continue
        if any(t.is_sidechain for t in turns):
            # Older Claude Code logs interleave a Task's subagent turns with the parent's.
            skipped["subagent_turns_in_parent_task"] += sum(t.is_sidechain for t in turns)
            turns = [t for t in turns if not t.is_sidechain]
        try:
            started = clock()
            clean = sanitize_turns(turns, settings.blob_cap, redacted)
            del turns
            timings["sanitize"] += clock() - started
            mine, reasons, failed = draft_session(clean, rules, settings.min_conclusion_chars, timings)
        except Exception as exc:  # noqa: BLE001 - one session no rule foresaw must not stop the batch
            skipped[f"session_error_{type(exc).__name__}"] += 1
            continue
        skipped.update(f"no_card_{r.reason}" for r in reasons)
        skipped.update(failed)
        drafted.extend(mine)
    return drafted


def draft_session(clean: list[Turn], rules: SegmentRules, min_conclusion_chars: int, timings: Counter
                  ) -> tuple[list[tuple[Experience, Card]], list[Skipped], Counter]:
    """Segment one sanitized session and draft each experience: (drafts, stretches worth no card, failures).

    Each experience is drafted as soon as it is cut, while the answers about its turns are still
    cached; what a session drafted counts only once the whole session segmented (an exception
    from the segmenter is the caller's, for the whole session).
    """
    clock = time.perf_counter
    reasons: list[Skipped] = []
    mine: list[tuple[Experience, Card]] = []
    failed: Counter = Counter()
    drafting = 0.0
    started = clock()
    # One experience behind the segmenter: the last of a session is drafted knowing it is the last
    # (a session that stops mid-step leaves its last experience unresolved).
    held = None
    for exp in chain(iter_segments(clean, rules, reasons), (None,)):  # lazily: each drafted as it is cut
        if held is not None:
            began = clock()
            drafted = []
            try:
                drafted = with_inner_lessons(held, draft_card(held, min_conclusion_chars, exp is None),
                                             min_conclusion_chars)
                drafted = stated_decisions(held, drafted, min_conclusion_chars)
            except Exception as exc:  # noqa: BLE001 - likewise for one experience; what was drafted stays
                failed[f"experience_error_{type(exc).__name__}"] += 1
            mine.extend(drafted)
            drafting += clock() - began
        held = exp
    timings["segment"] += clock() - started - drafting
    began = clock()
    mine = read_past_range(tuple(clean), mine)
    timings["draft"] += drafting + clock() - began
    return mine, reasons, failed


def plan_spooled(spool: Spool, settings: Settings, redacted: Counter, skipped: Counter, timings: Counter,
                 origins: Origins, workers: int = 1, use: WorkerUse | None = None) -> list[tuple[Experience, Card]]:
    """`plan_experiences` over a spool: one session in memory at a time, its turns already sanitized.

    Each session is segmented and drafted by `draft_spooled`, on `workers` processes, and taken
    back in key order. Fills `origins` as it goes. Each experience's turns go back to the spool
    once drafted (`SpilledExperience`): the spool must stay open while they are read.
    """
    drafted: list[tuple[Experience, Card]] = []
    timings["sanitize"] += spool.sanitize_s
    units = ((raw, settings.pause_minutes, settings.min_conclusion_chars) for raw in spool.raw_sessions())
    with local_pool(workers) as pool:
        for planned in in_order(pool, draft_spooled, units, _session_lost, use):
            host, sid = planned.key
            origins[(host, sanitize_id(sid))] = planned.origins
            skipped.update(planned.skipped)
            redacted.update(planned.redacted)
            timings.update(planned.timings)
            drafted.extend(spool.spill_draft(d) for d in planned.drafted)
    return drafted


@dataclass(slots=True)
class SessionPlan:
    """What drafting one spooled session gave: its drafts (pickled where they were drafted), and what the run counts about it."""

    key: tuple[str, str]
    origins: list[tuple[int, int, str]] = field(default_factory=list)
    drafted: list[PackedDraft] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)
    redacted: Counter = field(default_factory=Counter)
    timings: Counter = field(default_factory=Counter)


def draft_spooled(raw: RawSession, pause_minutes: int, min_conclusion_chars: int) -> SessionPlan:
    """Segment and draft one spooled session, on any process. Pure apart from the reading helpers' memos,
    forgotten before it returns, so a run's memory follows its largest session, not its corpus."""
    session = unpack_session(raw)
    plan = SessionPlan(raw.key, origin_runs((seq, path) for seq, _, path, _ in session.places))
    skipped = plan.skipped
    if session.sidechain == session.turns:
        skipped["subagent_in_parent_task"] += 1
        return plan
    if session.sidechain:
        # Older Claude Code logs interleave a Task's subagent turns with the parent's.
        skipped["subagent_turns_in_parent_task"] += session.sidechain
    if session.error:
        skipped[f"session_error_{session.error}"] += 1
        return plan
    plan.redacted.update(session.redacted)
    rules = SegmentRules(pause=timedelta(minutes=pause_minutes))
    try:
        mine, reasons, failed = draft_session(session.clean, rules, min_conclusion_chars, plan.timings)
    except Exception as exc:  # noqa: BLE001 - one session no rule foresaw must not stop the batch
        skipped[f"session_error_{type(exc).__name__}"] += 1
        return plan
    finally:
        del session
        forget_memos()
    skipped.update(f"no_card_{r.reason}" for r in reasons)
    skipped.update(failed)
    plan.drafted = [pack_draft(exp, turns_key(exp), card) for exp, card in mine]
    return plan


def _session_lost(unit: tuple, exc: BaseException) -> SessionPlan:
    """A session whose worker failed or died: counted as a session error, its origins still known."""
    raw = unit[0]
    plan = SessionPlan(raw.key)
    plan.skipped[f"session_error_{lost_reason(exc)}"] += 1
    return plan


# --- re-derive --------------------------------------------------------------------------------------


Origins = dict[tuple[str, str], list[tuple[int, int, str]]]


def session_origins(sessions: dict[tuple[str, str], list[Turn]]) -> Origins:
    """Per (host, sanitized session id): the runs of turn numbers each log file gave, as (first, last, path).

    Small beside the turns themselves, so it can outlive them: the transform lets each session's
    raw turns go once it is sanitized, and the re-derivation still needs where each turn came from.
    """
    return {(host, sanitize_id(sid)): origin_runs((t.seq, t.source_file) for t in turns)  # experiences carry
            for (host, sid), turns in sessions.items()}  # the sanitized session id


def origin_runs(places: Iterable[tuple[int, str]]) -> list[tuple[int, int, str]]:
    """(first, last, path) of each run of turns in order that one log file gave."""
    runs: list[tuple[int, int, str]] = []
    for seq, path in places:
        if runs and runs[-1][2] == path and runs[-1][1] <= seq:
            runs[-1] = (runs[-1][0], seq, path)
        else:
            runs.append((seq, seq, path))
    return runs


def derived_by_file(origins: Origins, drafted: Iterable[tuple[Experience, Card]]) -> dict[str, list[tuple[int, str]]]:
    """Per log file read: (first line, card id) of each card drafted from its turns."""
    out: dict[str, list[tuple[int, str]]] = {}
    for exp, card in drafted:
        path = next((p for lo, hi, p in origins.get((exp.host, exp.session_id), ()) if lo <= exp.first_seq <= hi), None)
        if path is not None:
            out.setdefault(path, []).append((exp.lines[0], card.id))
    return out


def rederive(collected: CollectReport, drafted: list[tuple[Experience, Card]], origins: Origins
             ) -> tuple[list[str], list[str]]:
    """Record on each file's ledger update the cards this read derived; return (retired, redrawn).

    A file read again (grown, truncated, replaced) derives its cards from what it holds now. The
    ids its earlier read derived and this one did not (a half-written task's partial card, turns
    the file lost) are retired, unless another file's turns derived them now. The ids a rewritten
    file derives again are redrawn: the new draft replaces the old card whole (the rules would keep
    a card already in the library as it is).
    """
    by_file = derived_by_file(origins, drafted)
    retired: set[str] = set()
    redrawn: set[str] = set()
    pending = []
    for entry in collected.pending:
        mine = by_file.get(entry.path, [])
        derived = {cid for _, cid in mine}
        retired.update(retired_ids(entry, derived))
        if entry.path in collected.rewritten:
            redrawn.update(set(entry.card_ids) & derived)
        kept = sorted({cid for line, cid in mine if line > entry.resume_line})  # what the next read derives again
        pending.append(replace(entry, card_ids=tuple(kept)))
    collected.pending = pending
    return sorted(retired - {card.id for _, card in drafted}), sorted(redrawn)


# --- store ------------------------------------------------------------------------------------------


RENDER_CHUNK = 32  # cards one unit of rendering holds: sending a card costs far less than rendering it


def render_all(cards: list[Card], workers: int, use: WorkerUse | None = None) -> list[str | None]:
    """`render_card` of each card on `workers` processes, when there are enough cards to share out
    (a first night writes thousands, each sanitized once more and dumped as YAML: a sixth of its
    time, on one core). [] means the writer renders them all; a chunk a worker lost
    comes back as Nones, which the writer renders itself."""
    if workers <= 1 or len(cards) < 2 * RENDER_CHUNK:
        return []
    chunks = [(cards[i:i + RENDER_CHUNK],) for i in range(0, len(cards), RENDER_CHUNK)]
    rendered: list[str | None] = []
    with local_pool(min(workers, len(chunks))) as pool:
        for texts in in_order(pool, render_cards, chunks, lambda unit, exc: [None] * len(unit[0]), use):
            rendered.extend(texts)
    return rendered


def store_cards(store: CardStore, cards: Iterable[Card], summary: RunReport,
                queue: OverflowQueue | None = None, workers: int = 1) -> list[Card]:
    """Write each card (the user's hand wins); returns the cards whose files now changed.

    With a `queue`, a card whose write the filesystem refuses (permission, read-only, quota,
    disk full, sandbox) becomes a `card_write` item and the run goes on; `memoir replay` writes it.
    The cards are rendered on `workers` processes (`render_all`), written here in order.
    """
    changed = []
    cards = list(cards)
    for card, outcome in zip(cards, store.write_many(cards, rendered=render_all(cards, workers, summary.workers))):
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
