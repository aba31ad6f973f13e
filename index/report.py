"""`memoir report`'s page: plain views of the library, the run history and recall, planned from parsed
records, and rendered as one HTML file that needs nothing but itself.

The planner is pure (cards, run records and log events in; frozen views and chart geometry out), so
tests pin it with literals; `render_report` fills the one template with autoescaping on, because card
text is whatever a session said, markup included. The page links only to files (cards, source logs)
and to its own anchors; a Content-Security-Policy forbids every load besides inline style.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from memoir.cards.values import SECTION_TITLES, SECTIONS, STATUSES, Card
from memoir.cards.render import template_environment
from memoir.cards.status import Counts, RunRecord, count_cards
from memoir.cards.title import display_title
from memoir.index.chain_links import ChainLink, chain_links
from memoir.cards.quality_gates import GATE_HELP
from memoir.index.recall_gates import CANDIDATE_GATES, CONTRADICTS, INJECTED, OVER_LIMIT

TEMPLATE = "report.html.j2"
RECALL_OUTCOMES = ("injected", "empty", "timeout", "error")  # what index.recall logs per recall
DAYS_SHOWN = 30  # a month of recall per day reads at a glance; older days are summed in the totals
TOPICS_SHOWN = 15  # the chart's rows; the table below it lists every topic
RUN_ROWS = 50  # the newest runs in the table; the per-night chart covers DAYS_SHOWN nights
QUESTIONS_SHOWN = 200  # the newest recalls listed one by one on the Recall page
# Why a recall gate kept a card out, in words (the gates' own `why`), for a person reading a miss.
RECALL_GATE_WORDS = {**{g.name: g.why for g in CANDIDATE_GATES},
                     CONTRADICTS: "gives the opposite advice to a card that went in first",
                     OVER_LIMIT: "passed every gate, but max_injected better cards went in first"}
# Skip reasons a person reads on the page; a reason not listed shows as its code with spaces.
SKIP_WORDS = {
    "ignored_type": "bookkeeping lines (progress, snapshots, token counts): normal",
    "duplicate": "lines seen twice in one log: normal",
    "session_part": "files a host keeps beside its sessions (message parts, metadata): normal",
    "session_copy": "older copies of a session saved again under another name",
    "shadowed_by_sibling": "task files whose fuller sibling was read instead",
    "message_update": "messages saved again as they grew: normal",
    "empty_text": "empty messages",
    "partial_line": "a last line still being written: read next run",
    "bad_json": "lines that are not JSON",
    "unknown_format": "files no reader recognises",
    "unknown_type": "lines of a type the reader does not know",
    "unreadable": "files memoir may not read",
    "injected": "text the host injected (system reminders, memoir's own context)",
    "no_card_no_request": "experiences with no request from a person",
    "no_card_no_substance": "experiences with nothing worth a card (warm-ups, chit-chat)",
    "bad_line_too_large": "lines past the size cap",
}
BOOKKEEPING = ("ignored_type", "duplicate", "session_part", "message_update")  # listed last: they say nothing wrong


def skip_words(reason: str) -> str:
    return SKIP_WORDS.get(reason, reason.replace("_", " "))


def skip_order(items: Iterable[tuple[str, int]]) -> tuple[tuple[str, int], ...]:
    """Skip counts with what a person should look at first: bookkeeping last, larger counts first."""
    return tuple(sorted(items, key=lambda kv: (kv[0] in BOOKKEEPING, -kv[1], kv[0])))

# Chart geometry, in SVG user units: labels left, bars right, the number after each bar.
LABEL_W, BAR_W, VALUE_W, ROW_H, BAR_H = 170, 300, 50, 20, 14


# --- the views -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rect:
    """One bar segment: `series` names its colour class, `tip` is the hover text."""

    x: float
    y: float
    w: float
    h: float
    series: str
    tip: str


@dataclass(frozen=True)
class Row:
    """One bar: its label, its total, and its segments (one per series with a count)."""

    label: str
    total: int
    y: float
    rects: tuple[Rect, ...]


@dataclass(frozen=True)
class Chart:
    """A horizontal stacked bar chart, laid out: the template only draws what is here."""

    title: str
    series: tuple[str, ...]
    rows: tuple[Row, ...]
    width: int
    height: int
    empty: str = ""  # what to say instead of an empty chart

    @property
    def label_x(self) -> int:
        return LABEL_W - 6

    @property
    def value_x(self) -> int:
        return LABEL_W + BAR_W + 6


@dataclass(frozen=True)
class SourceLink:
    """Where a card's evidence lies: a file:// URL (absolute paths only) and the lines it cites."""

    host: str
    session_id: str
    path: str
    lines: tuple[int, int]
    url: str

    @property
    def label(self) -> str:
        return f"{self.path}:{self.lines[0]}-{self.lines[1]}"


@dataclass(frozen=True)
class CardView:
    id: str
    title: str
    status: str
    quality: str
    topics: tuple[str, ...]
    workspace: str
    created: str
    updated: str
    error_signature: str
    gate: str
    path: str
    url: str
    sections: tuple[tuple[str, str], ...]  # (heading, text) in the card's order, empty ones kept
    sources: tuple[SourceLink, ...]
    chain: tuple[ChainLink, ...]  # empty when the card neither supersedes nor is superseded
    gate_words: str = ""  # why the gate held the card, and what clears it


@dataclass(frozen=True)
class QuestionView:
    """One recall as a person reads it: when, what was asked, what it got, and for a miss why."""

    when: str
    query: str
    outcome: str
    got: tuple[tuple[str, str], ...]  # (card id, title) injected
    why: str  # for a miss: the gate and figure that decided it


@dataclass(frozen=True)
class TopicRow:
    topic: str
    counts: Counts


@dataclass(frozen=True)
class RunView:
    finished: str
    added: int
    superseded: int
    merged: int
    dropped: int
    conflicts: int
    alarms: tuple[str, ...]
    skipped: tuple[tuple[str, int], ...]
    alerts: tuple[str, ...] = ()  # what the model stage alerted in this run (model-runs.jsonl)


@dataclass(frozen=True)
class LogEvent:
    """One line of the recall or hook log, parsed: its UTC day, its outcome, the gates that said no."""

    day: str
    outcome: str
    rejected_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReportPage:
    generated: str
    home: str
    cards_dir: str
    counts: Counts
    groups: tuple[tuple[str, tuple[CardView, ...]], ...]  # (status, cards), in STATUSES order
    topics: tuple[TopicRow, ...]
    runs: tuple[RunView, ...]  # newest first
    alarm_history: tuple[Mapping, ...]  # newest first
    recall_totals: Mapping[str, int]
    hook_totals: Mapping[str, int]
    top_gate: str  # the gate that rejected the most candidates, "" when none did
    unreadable: tuple[str, ...]
    charts: Mapping[str, Chart]
    questions: tuple[QuestionView, ...] = ()  # newest first

    @property
    def card_count(self) -> int:
        return sum(len(cards) for _, cards in self.groups)


# --- parsing log lines (the boundary) --------------------------------------------------------------------


def _day(value: object) -> str:
    """The UTC date of an ISO timestamp, "" when it is not one (a torn or hand-made line)."""
    try:
        t = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return ""
    t = t if t.tzinfo else t.replace(tzinfo=timezone.utc)
    return t.astimezone(timezone.utc).date().isoformat()


def recall_event(record: Mapping, outcomes: Sequence[str] = RECALL_OUTCOMES) -> LogEvent | None:
    """A recall debug record as an event; the gate of every candidate it did not inject is kept."""
    day = _day(record.get("ts"))
    if not day:
        return None
    outcome = str(record.get("outcome"))
    gates = tuple(str(c.get("gate")) for c in record.get("candidates") or ()
                  if isinstance(c, Mapping) and c.get("gate") and c.get("gate") != INJECTED)
    return LogEvent(day, outcome if outcome in outcomes else "error", gates)


def hook_event(call: Mapping, outcomes: Sequence[str]) -> LogEvent | None:
    """A hook call as an event; an outcome the hook does not name counts as an error."""
    day = _day(call.get("ts"))
    if not day:
        return None
    outcome = str(call.get("outcome"))
    return LogEvent(day, outcome if outcome in outcomes else "error")


def _figure(candidate: Mapping) -> str:
    sim = candidate.get("similarity")
    figure = f"similarity {sim:.2f}" if isinstance(sim, (int, float)) else ""
    detail = str(candidate.get("detail") or "")
    return "; ".join(p for p in (figure, detail) if p)


def question_view(record: Mapping, titles: Mapping[str, str]) -> QuestionView | None:
    """A recall debug record as a row of the Recall page; None for a torn or hand-made line."""
    when = str(record.get("ts") or "")
    if not _day(when):
        return None
    outcome = str(record.get("outcome") or "error")
    injected = [str(i) for i in record.get("injected") or ()]
    got = tuple((i, titles.get(i, "")) for i in injected)
    why = ""
    if not injected:
        held = [c for c in record.get("candidates") or () if isinstance(c, Mapping) and c.get("gate") != INJECTED]
        if outcome != "empty":
            why = str(record.get("reason") or outcome)
        elif not held:
            why = "no card came near the question"
        else:
            best = held[0]  # the log lists candidates best fused rank first
            gate = str(best.get("gate") or "")
            words = RECALL_GATE_WORDS.get(gate, gate)
            figure = _figure(best)
            why = f"closest {best.get('id')}: {words}" + (f" ({figure})" if figure else "")
    return QuestionView(when[:16].replace("T", " "), str(record.get("query") or ""), outcome, got, why)


# --- planning ------------------------------------------------------------------------------------------


def file_url(path: str) -> str:
    """A file:// URL for an absolute path; "" for anything else, which the page shows as text only."""
    p = Path(path).expanduser() if path else None
    return p.as_uri() if p is not None and p.is_absolute() else ""


def bar_chart(title: str, rows: Sequence[tuple[str, Mapping[str, int]]], series: Sequence[str],
              empty: str = "nothing recorded yet") -> Chart:
    """Lay out stacked horizontal bars, one row per (label, counts by series), scaled to the largest row."""
    biggest = max((sum(counts.get(s, 0) for s in series) for _, counts in rows), default=0)
    scale = BAR_W / biggest if biggest else 0.0
    laid: list[Row] = []
    for i, (label, counts) in enumerate(rows):
        y = i * ROW_H + (ROW_H - BAR_H) / 2
        x = float(LABEL_W)
        rects = []
        for s in series:
            n = counts.get(s, 0)
            if n <= 0:
                continue
            w = round(n * scale, 2)
            rects.append(Rect(round(x, 2), y, w, BAR_H, s, f"{label}: {n} {s}"))
            x += w
        laid.append(Row(label, sum(counts.get(s, 0) for s in series), y, tuple(rects)))
    return Chart(title, tuple(series), tuple(laid), LABEL_W + BAR_W + VALUE_W, max(1, len(laid)) * ROW_H,
                 "" if biggest else empty)


def chain_of(card: Card, by_id: Mapping[str, Card]) -> tuple[ChainLink, ...]:
    """The card's supersession chain (`chain_links`); () when it neither supersedes nor is superseded."""
    links = chain_links(card, by_id)
    return links if len(links) > 1 else ()


def card_view(card: Card, path: Path, by_id: Mapping[str, Card]) -> CardView:
    sources = tuple(SourceLink(s.host, s.session_id, s.file, s.lines, file_url(s.file)) for s in card.sources)
    return CardView(
        id=card.id, title=display_title(card), status=card.status, quality=card.quality, topics=card.topics,
        workspace=card.workspace, created=card.created, updated=card.updated,
        error_signature=card.error_signature, gate=card.gate, path=str(path), url=file_url(str(path)),
        sections=tuple((SECTION_TITLES[name], card.section(name)) for name in SECTIONS),
        sources=sources, chain=chain_of(card, by_id), gate_words=GATE_HELP.get(card.gate, ""),
    )


def _status_of(card: Card) -> str:
    # An unknown status (a hand edit) counts as candidate, as `memoir status` counts it.
    return card.status if card.status in STATUSES else "candidate"


def topic_rows(cards: Iterable[Card]) -> tuple[TopicRow, ...]:
    """Card counts per topic, busiest first; a card with no topic is under "(none)"."""
    groups: dict[str, list[Card]] = {}
    for card in cards:
        for topic in card.topics or ("(none)",):
            groups.setdefault(topic, []).append(card)
    rows = [TopicRow(t, count_cards(cs)) for t, cs in groups.items()]
    return tuple(sorted(rows, key=lambda r: (-r.counts.total, r.topic)))


def _per_day(events: Iterable[LogEvent], days: Sequence[str]) -> list[tuple[str, Counter]]:
    wanted = {d: Counter() for d in days}
    for e in events:
        if e.day in wanted:
            wanted[e.day][e.outcome] += 1
    return [(d, wanted[d]) for d in days if wanted[d]]


def _window(now: datetime, days: int = DAYS_SHOWN) -> list[str]:
    today = now.astimezone(timezone.utc).date()
    return [(today - timedelta(days=n)).isoformat() for n in range(days - 1, -1, -1)]


def plan_report(
    cards: Sequence[Card],
    paths: Mapping[str, Path],
    runs: Sequence[RunRecord],
    *,
    now: datetime,
    home: str = "",
    cards_dir: str = "",
    alarm_history: Sequence[Mapping] = (),
    recalls: Sequence[LogEvent] = (),
    hook_calls: Sequence[LogEvent] = (),
    hook_outcomes: Sequence[str] = (),
    unreadable: Sequence[str] = (),
    run_alerts: Mapping[str, Sequence[str]] = {},
    recall_records: Sequence[Mapping] = (),
) -> ReportPage:
    """The whole page from parsed inputs; pure.

    Args:
        cards: every parseable card file.
        paths: card id -> its file, for the links.
        runs: runs.jsonl, oldest first.
        now: the page's date: it is printed and ends the per-day windows.
        recalls, hook_calls: the recall and hook logs as events (`recall_event`, `hook_event`).
        hook_outcomes: the outcomes the hook logs, in the order the chart stacks them.
        run_alerts: a run's `finished` -> the model stage's alerts in that run.
        recall_records: the recall debug records, oldest first (the page lists the newest).
    """
    by_id = {c.id: c for c in cards}
    titles = {c.id: display_title(c) for c in cards}
    ordered = sorted(cards, key=lambda c: (c.created, c.id), reverse=True)
    groups = tuple((s, tuple(card_view(c, paths.get(c.id, Path(cards_dir) / f"{c.id}.md"), by_id)
                             for c in ordered if _status_of(c) == s)) for s in STATUSES)
    counts = count_cards(cards)
    topics = topic_rows(cards)
    days = _window(now)

    per_night: dict[str, Counter] = {}
    skipped: Counter = Counter()
    for run in runs:
        day = _day(run.finished)
        if day in days:
            per_night.setdefault(day, Counter()).update(added=run.added)
        skipped.update(dict(run.skipped))
    gates = Counter(g for e in recalls for g in e.rejected_by)
    hook_series = tuple(hook_outcomes) or tuple(sorted({e.outcome for e in hook_calls}))

    charts = {
        "status": bar_chart("Cards by status", [(s, {s: getattr(counts, s)}) for s in STATUSES], STATUSES,
                            empty="no cards yet: `memoir run` writes them"),
        "topics": bar_chart(f"Cards by topic (top {TOPICS_SHOWN})",
                            [(r.topic, r.counts.to_dict()) for r in topics[:TOPICS_SHOWN]], STATUSES),
        "nights": bar_chart("Cards added per night", [(d, per_night[d]) for d in days if d in per_night],
                            ("added",)),
        "skipped": bar_chart("Skipped by reason, all runs",
                             [(skip_words(reason), {"skipped": n}) for reason, n in skip_order(skipped.items())],
                             ("skipped",),
                             empty="nothing skipped"),
        "recall": bar_chart("Recalls per day", _per_day(recalls, days), RECALL_OUTCOMES),
        "hook": bar_chart("Hook calls per day", _per_day(hook_calls, days), hook_series),
        "gates": bar_chart("Candidates rejected, by gate", [(g, {"rejected": n}) for g, n in gates.most_common()],
                           ("rejected",), empty="no candidate rejected yet"),
    }
    return ReportPage(
        generated=now.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        home=home,
        cards_dir=cards_dir,
        counts=counts,
        groups=groups,
        topics=topics,
        runs=tuple(RunView(r.finished, r.added, r.superseded, r.merged, r.dropped, r.conflicts, r.alarms,
                           tuple((skip_words(reason), n) for reason, n in skip_order(r.skipped)),
                           tuple(run_alerts.get(r.finished, ()))) for r in reversed(runs[-RUN_ROWS:])),
        alarm_history=tuple(reversed(alarm_history)),
        recall_totals=dict(Counter(e.outcome for e in recalls)),
        hook_totals=dict(Counter(e.outcome for e in hook_calls)),
        top_gate=gates.most_common(1)[0][0] if gates else "",
        unreadable=tuple(unreadable),
        charts=charts,
        questions=tuple(q for q in (question_view(rec, titles) for rec in reversed(recall_records[-QUESTIONS_SHOWN:]))
                        if q is not None),
    )


# --- rendering -------------------------------------------------------------------------------------------

_env = template_environment("memoir.index", html=True)


def render_report(report: ReportPage) -> str:
    """The page: one HTML file, inline CSS and SVG, every piece of card or log text escaped."""
    return _env.get_template(TEMPLATE).render(r=report, statuses=STATUSES)
