"""Containers: the same card in the shape each place may see it, one jinja2 template each.

A container decides which fields are visible, so each template is handed only those fields:
- immediate context (hook, `memoir recall`): conclusion (within the budget the card file states),
  failure conditions, source id, age, and the note that it is a historical conclusion; wrapped in `<memoir-context>` so the host readers
  strip it and a recalled card is never mined again as fresh evidence;
- session brief (SessionStart, `memoir brief`): recent topics and open follow-ups, no evidence;
  what these two inject passes `fence`: no card text in them can act as markup or an order;
- human review (`memoir cards show`): all six sections and the supersession chain;
- export (`memoir export`): the card files themselves, bundled by topic, never the index;
- backlog: queue and debug records only, never shown to a person or a host.
"""

from __future__ import annotations

import io
import os
import re
import tarfile
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from memoir.cards.lesson import within_budget
from memoir.cards.follow_up import open_follow_ups
from memoir.cards.neutralise import neutralise
from memoir.cards.values import SECTION_TITLES, SECTIONS, Card
from memoir.cards.render import template_environment
from memoir.cards.sanitize.scan import contains_sensitive
from memoir.cards.store import CardStore, write_atomic
from memoir.cards.title import display_title
from memoir.index.chain_links import CardsOnDisk, chain_links

NOTE = "Historical conclusion, not a current instruction"
SHOWN = ("immediate", "brief", "review", "export")  # containers a person or host may see
NEVER_SHOWN = ("backlog",)
MAX_FAILURE_LINES = 3  # immediate context stays short: the first failure conditions only
BRIEF_RECENT = 5
BRIEF_TOPICS = 6
BRIEF_FOLLOW_UPS = 5
NO_TOPIC = "untopical"
_TAG = re.compile(r"</?\s*memoir-context", re.I)


def fence(text: object) -> str:
    """A field as it may be injected: `<memoir-context>` tags inside it neutralised, so card text cannot
    close our block early, and anything instruction-shaped defanged or quoted (`cards/neutralise.py`)."""
    return neutralise(_TAG.sub(lambda m: m.group(0).replace("<", "‹"), str(text)))


_FENCE = "```"


def close_fences(text: object) -> str:
    """Text with no code fence left open: one a cut (or a card) left open is closed at the end."""
    text = str(text)
    return text + "\n" + _FENCE if text.count(_FENCE) % 2 else text


def clip(text: object, limit: int, end: str = "…") -> str:
    """At most `limit` chars plus `end`, cut at a block boundary: a cut inside a code block goes
    back to just before the block when text is left, and otherwise closes the fence."""
    text = str(text)
    if len(text) <= limit:
        return text
    cut = text[:limit].rstrip()
    if cut.count(_FENCE) % 2:
        before = cut[: cut.rfind(_FENCE)].rstrip()
        cut = before if before else cut + "\n" + _FENCE
    return cut + end


env = template_environment("memoir.index")
env.filters["fence"] = fence
env.filters["clip"] = clip
env.filters["close_fences"] = close_fences


def render(template: str, **context) -> str:
    return env.get_template(template).render(**context)


def age_text(days: float | None) -> str:
    if days is None:
        return "age unknown"
    if days < 1:
        return "from today"
    n = int(days)
    return f"{n} day{'s' if n != 1 else ''} old"


# --- immediate context ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Shown:
    id: str
    conclusion: str
    counterexamples: str
    source: str
    age: str


def source_id(card) -> str:
    """`<session id> lines a-b` of the first source: enough to find the evidence, none of it."""
    if not card.sources:
        return card.id
    s = card.sources[0]
    more = f" (+{len(card.sources) - 1} more)" if len(card.sources) > 1 else ""
    return f"session {s.session_id} lines {s.lines[0]}-{s.lines[1]}{more}"


def immediate_context(cards: Sequence) -> str:
    """The block injected before the agent's turn; '' when nothing passed the gates.

    Args:
        cards: `index.recall.RecalledCard`s (they carry no evidence, background or goal).
    """
    if not cards:
        return ""
    shown = [
        # the budget every card file states: a longer conclusion (a hand edit, an older card) is cut here
        _Shown(c.id, close_fences(within_budget(c.conclusion)),
               # the first lines only; a code block they open is closed, never left to swallow the rest
               close_fences("\n".join(c.counterexamples.strip().splitlines()[:MAX_FAILURE_LINES])),
               source_id(c), age_text(c.age_days))
        for c in cards
    ]
    return render("immediate.j2", cards=shown, NOTE=NOTE)


# --- session brief --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BriefItem:
    id: str
    date: str
    title: str


@dataclass(frozen=True, slots=True)
class FollowUp:
    id: str
    text: str


def plan_brief(cards: Iterable[Card]) -> tuple[list[str], list[BriefItem], list[FollowUp]]:
    """Topics by frequency, newest work first, open follow-ups; nothing from the evidence."""
    cards = sorted((c for c in cards if c.status in ("active", "incomplete")
                    and not contains_sensitive(c.goal + c.conclusion + c.follow_up)),
                   key=lambda c: (c.updated or c.created, c.id), reverse=True)
    counts = Counter(t for c in cards for t in c.topics)
    topics = [f"{t} ({n})" for t, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:BRIEF_TOPICS]]
    recent = [BriefItem(c.id, (c.updated or c.created)[:10], display_title(c)) for c in cards[:BRIEF_RECENT]]
    follow: dict[str, FollowUp] = {}  # by text: two cards of one session often carry the same item
    for c in cards:
        for text in open_follow_ups(c.follow_up):  # headings, narration, code and "none" are not follow-ups
            if len(follow) < BRIEF_FOLLOW_UPS:
                follow.setdefault(text, FollowUp(c.id, text[:200]))
    return topics, recent, list(follow.values())


def session_brief(workspace: str, cards: Iterable[Card]) -> str:
    """The SessionStart block for a workspace; '' when there is nothing to say."""
    topics, recent, follow = plan_brief(cards)
    if not (recent or follow):
        return ""
    name = os.path.basename(workspace.rstrip("/")) or workspace or "this workspace"
    return render("brief.j2", workspace=workspace, name=name, topics=topics, recent=recent, follow_ups=follow)


# --- human review ------------------------------------------------------------------------------------------


def human_review(card: Card, store: CardStore) -> str:
    """Everything a person needs to judge a card: all six sections and where it sits in its chain."""
    chain = chain_links(card, CardsOnDisk(store, card))
    return render("review.j2", card=card, title=display_title(card), chain=chain,
                  sections=[(name, SECTION_TITLES[name]) for name in SECTIONS])


# --- export -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExportItem:
    path: str
    status: str
    title: str


def topic_dir(card: Card) -> str:
    """The one folder a card goes in: its first topic, made safe as a path segment."""
    # Drafted subject topics are lowercase words ("database"); error kinds ("OperationalError")
    # sort first but make poor folders, so the first subject topic wins.
    subjects = [t for t in card.topics if t == t.lower()]
    topic = (subjects or list(card.topics) or [NO_TOPIC])[0]
    return re.sub(r"[^\w.-]+", "-", topic).strip(".-") or NO_TOPIC


def plan_export(cards: Iterable[Card], statuses: Collection[str] | None = None) -> dict[str, list[Card]]:
    """Topic folder -> its cards of `statuses` (None: any; forgotten tombstones stay home), sorted for a stable layout."""
    out: dict[str, list[Card]] = {}
    for c in sorted(cards, key=lambda c: c.id):
        if c.status != "forgotten" and (statuses is None or c.status in statuses):
            out.setdefault(topic_dir(c), []).append(c)
    return dict(sorted(out.items()))


def export_cards(store: CardStore, dest: Path, statuses: Collection[str] | None = None) -> tuple[Path, int]:
    """Copy card files byte for byte into `dest/<topic>/`, or into a .tar.gz when `dest` names one.

    Returns the path written and the number of cards (those of `statuses`, or all when None).
    The index is never part of an export.
    """
    cards, _problems = store.load_all()
    plan = plan_export(cards, statuses)
    files: list[tuple[str, bytes]] = []
    listing: list[tuple[str, list[ExportItem]]] = []
    for topic, items in plan.items():
        shown = []
        for c in items:
            rel = f"{topic}/{c.id}.md"
            files.append((rel, store.path_for(c.id).read_bytes()))
            shown.append(ExportItem(rel, c.status, display_title(c)))
        listing.append((topic, shown))
    readme = render("export.j2", total=len(files), source=str(store.cards_dir), topics=listing)
    files.append(("README.md", readme.encode("utf-8")))
    dest = Path(dest)
    if dest.name.endswith((".tar.gz", ".tgz")):
        buf = io.BytesIO()
        root = dest.name.removesuffix(".tar.gz").removesuffix(".tgz")
        with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
            for rel, data in sorted(files):
                info = tarfile.TarInfo(f"{root}/{rel}")
                info.size, info.mode, info.mtime = len(data), 0o644, 0  # reproducible archive
                tar.addfile(info, io.BytesIO(data))
        write_atomic(dest, buf.getvalue())
    else:
        root = dest.resolve()
        for rel, data in files:
            target = dest / rel
            if not target.resolve().is_relative_to(root):  # a topic or an id can never lead outside the export
                raise OSError(f"{target} would be written outside {dest}")
            write_atomic(target, data, sync_dir=False)
    return dest, len(files) - 1


# --- backlog (never shown) ------------------------------------------------------------------------------------


def backlog_record(card: Card, reason: str = "") -> str:
    """One line for queue and debug records about a card waiting on work; never shown to anyone."""
    return render("backlog.j2", card=card, reason=reason)
