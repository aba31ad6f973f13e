"""Review: a person confirms, rejects or edits the cards the gates held back (DESIGN.md stage 8).

Decisions, one name each:
- **confirm** → `status: active`, `confirmed_by: user`, `gate` cleared (the gate that held it
  back is kept as `held_by`). `verified_by: tN` is the rule stage's different claim: a passing
  test run at turn N backed the conclusion.
- **reject** → the card stays a `candidate` with `gate: rejected_by_user` and `why:` (the reason,
  sanitized, for whoever later wonders why the card never comes back). It is a judgment on the
  card, not a request to forget its turns: it keeps owning its sources so they are not mined
  again, never enters recall, and leaves the review queue. `memoir forget` is the tombstone, for
  turns that must not be kept at all.
- **edit** → the person's text is written as is, without updating the store's manifest, so it
  is a hand edit like any other: no later run overwrites it.

Cards a person confirmed or rejected are never rewritten by the rules (`user_owned`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePath

from memoir.cards.config import Settings
from memoir.cards.draft import conclusion_problem
from memoir.cards.instruction_shapes import instruction_shapes
from memoir.cards.quality_gates import GATE_HELP, failure_conditions_stated, verifiable_judgment
from memoir.cards.title import display_title
from memoir.cards.values import Card
from memoir.cards.sanitize import sanitize
from memoir.cards.sanitize.fields import FIELD_CAP
from memoir.cards.store import CardStore, parse_card, write_atomic
from memoir.cards.errors import CardsError

REVIEWABLE = ("candidate", "incomplete")
REJECTED = "rejected_by_user"
USER = "user"
DEFAULT_WHY = "not worth recalling"
MAX_MATCHES_SHOWN = 5  # an ambiguous prefix lists this many ids, enough to pick a longer prefix


class ReviewError(CardsError):
    """A review action that cannot be applied; the message says why and what to do."""


def _now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def user_owned(card: Card) -> bool:
    """A person has ruled on this card: the rules leave it as it is."""
    return card.confirmed_by == USER or card.gate == REJECTED


def awaiting_review(cards: Iterable[Card]) -> list[Card]:
    """The candidate area: cards held back (candidate or incomplete) that no person has ruled on, oldest first."""
    return sorted((c for c in cards if c.status in REVIEWABLE and not user_owned(c)),
                  key=lambda c: (c.created, c.id))


def confirm(card: Card, *, min_conclusion_chars: int = 0, at: str = "") -> Card:
    """Active, confirmed by the user; refuses a card with no conclusion worth recalling."""
    if card.status not in REVIEWABLE + ("active",):
        raise ReviewError(f"{card.id} is {card.status}; only candidate or incomplete cards are confirmed")
    if len(card.conclusion.strip()) < min_conclusion_chars:
        raise ReviewError(f"{card.id} has no conclusion of at least {min_conclusion_chars} characters; "
                          "edit it first (e in `memoir review`), then confirm")
    extra = {**card.extra, "reviewed_at": at or _now()}
    if card.gate:
        extra["held_by"] = card.gate
    return card.with_(status="active", confirmed_by=USER, gate="", extra=extra)


def reject(card: Card, *, why: str = "", at: str = "") -> Card:
    """Kept as a candidate that never comes back to review or recall."""
    extra = {**card.extra, "reviewed_at": at or _now()}
    if card.gate and card.gate != REJECTED:
        extra["held_by"] = card.gate
    if why.strip():
        # Typed by a person at a prompt: it may hold a pasted token, and it goes into the card file.
        extra["why"] = sanitize(" ".join(why.split()), Settings.blob_cap)
    return card.with_(status="candidate", confirmed_by="", gate=REJECTED, extra=extra)


def find_card(ref: str, ids: Sequence[str], cards_dir: Path) -> str:
    """The id `ref` names: an id, a unique prefix of one (`c-` may be left out), or the card's file.

    Raises:
        ReviewError: nothing matches, the prefix is ambiguous, or the file is not one of this
            home's cards (an exported copy, a tombstone).
    """
    ref = ref.strip()
    if "/" in ref or ref.endswith(".md"):
        path = Path(ref).expanduser()
        if path.resolve().parent != Path(cards_dir).resolve():
            raise ReviewError(f"{ref} is not a card file of this memoir home (its cards are in {cards_dir}/)")
        ref = path.stem
    if ref in ids:
        return ref
    matches = [i for i in ids if ref and (i.startswith(ref) or i.startswith("c-" + ref))]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise ReviewError(f"no card matches {ref!r}; `memoir review --json` lists the cards awaiting review")
    shown = ", ".join(matches[:MAX_MATCHES_SHOWN]) + (", …" if len(matches) > MAX_MATCHES_SHOWN else "")
    raise ReviewError(f"{ref!r} matches {len(matches)} cards ({shown}); give more of the id")


def reviewable_alone(card: Card) -> None:
    """A card named by id may be ruled on unless it is history or a tombstone.

    Raises:
        ReviewError: the card is superseded or forgotten; the message names what to review instead.
    """
    if card.status == "superseded":
        newer = f" by {card.superseded_by}" if card.superseded_by else ""
        raise ReviewError(f"{card.id} was superseded{newer}; it is history, review the newer card")
    if card.status == "forgotten":
        raise ReviewError(f"{card.id} is forgotten; `memoir unforget {card.id}` brings it back first")


@dataclass(frozen=True)
class GateNote:
    """Why a card waits, for the person about to decide: the gate, its reason now, what clears it."""

    gate: str
    help: str
    reason: str = ""  # what the gate finds in the card as it reads now; "" when it cannot tell
    met_now: bool = False  # the card as it reads now passes the gate (after an edit, say)


def gate_note(card: Card, min_conclusion_chars: int = 0) -> GateNote | None:
    """The note for the gate that holds `card`, rechecked on the text where the card alone suffices.

    The other gates need the source turns or the other cards; for them the note only explains.
    """
    if not card.gate:
        return None
    help_text = GATE_HELP.get(card.gate, "no explanation is known for this gate name")
    own = {"verifiable_judgment": verifiable_judgment, "failure_conditions_stated": failure_conditions_stated}
    if card.gate in own:
        result = own[card.gate](card)
        return GateNote(card.gate, help_text, result.reason, result.passed)
    if card.gate.startswith("conclusion_"):
        problem = conclusion_problem(card.conclusion, min_conclusion_chars)
        return GateNote(card.gate, help_text, problem.replace("_", " "), not problem)
    return GateNote(card.gate, help_text)


def instruction_warning(card: Card) -> str:
    """What a person must see before confirming a card whose injected text reads as an instruction
    (role tags, tool-call markup, an override, a pipe into a shell); '' when none does.

    The fields are those recall and the brief inject: title, conclusion, counterexamples, follow-up.
    Orders are the poisoning gate's to judge and do not count here.
    """
    fields = {"title": display_title(card), "conclusion": card.conclusion,
              "counterexamples": card.counterexamples, "follow-up": card.follow_up}
    found = {name: instruction_shapes(text, orders=False) for name, text in fields.items()}
    found = {name: reasons for name, reasons in found.items() if reasons}
    if not found:
        return ""
    reasons = "; ".join(dict.fromkeys(r for rs in found.values() for r in rs))
    return (f"WARNING: instruction-shaped text in the {', '.join(found)} ({reasons}). Recall and the brief "
            "inject it defanged and quoted, but it came from a session log, not from you: confirm only a "
            "real lesson, and edit the shape out or reject the card otherwise.")


def apply_decision(store: CardStore, card: Card) -> None:
    """Write a confirmed or rejected card through the store: the person decided, so `force`."""
    (outcome,) = store.write_many([card], force=True)
    if outcome.action == "failed":
        raise ReviewError(f"cannot write {outcome.path}: {outcome.error}")
    store.save_manifest()


def save_edit(store: CardStore, card_id: str, text: str) -> Card:
    """Write the person's text as the card file, as a hand edit (the manifest is left alone).

    Raises:
        CardFileError: the text does not parse as a card; nothing was written.
        ReviewError: the edit changed the id.
    """
    path = store.path_for(card_id)
    text = sanitize(text, FIELD_CAP)  # memoir writes this file: a pasted secret is redacted here too
    card = parse_card(text, origin=str(path))
    if card.id != card_id:
        raise ReviewError(f"the edit changed the id to {card.id}; the id names the source turns, keep {card_id}")
    write_atomic(path, text)
    return card


@dataclass(frozen=True)
class Pending:
    """One line of `memoir review --json`: what waits for a person, and why."""

    id: str
    status: str
    gate: str
    title: str
    workspace: str
    conclusion: str
    sources: list[dict]
    gate_help: str = ""

    @classmethod
    def of(cls, card: Card) -> Pending:
        line = " ".join((card.goal or card.conclusion).split())
        return cls(card.id, card.status, card.gate, line[:100], card.workspace, card.conclusion,
                   [s.to_dict() for s in card.sources], GATE_HELP.get(card.gate, ""))

    def to_json(self) -> dict:
        return {"id": self.id, "status": self.status, "gate": self.gate, "gate_help": self.gate_help,
                "title": self.title, "workspace": self.workspace, "conclusion": self.conclusion,
                "sources": self.sources}


@dataclass(frozen=True)
class ReviewFilter:
    """Which held cards a review (or a bulk decision) covers: by workspace, gate and topic; empty means any."""

    workspace: str = ""
    gate: str = ""
    topic: str = ""
    place: Callable[[Card], bool] | None = None  # the workspace's project (`projects.selects_workspace`), if known

    def matches(self, card: Card) -> bool:
        where = card.workspace.rstrip("/")
        wanted = self.workspace.rstrip("/")
        in_place = self.place(card) if self.place is not None else where == wanted or PurePath(where).name == wanted
        return ((not wanted or in_place)
                and (not self.gate or card.gate == self.gate)
                and (not self.topic or self.topic.lower() in (t.lower() for t in card.topics)))


@dataclass
class BulkReport:
    """What a bulk confirm or reject did: the cards changed, and those left for one-by-one review, by why."""

    changed: list[str] = field(default_factory=list)
    left: dict[str, str] = field(default_factory=dict)


def decide_all(store: CardStore, cards: Sequence[Card], action: str, *, why: str = "",
               min_conclusion_chars: int = 0, at: str = "") -> BulkReport:
    """Confirm or reject every card of `cards`. A card that cannot be confirmed as it reads (too short a
    conclusion, or text shaped like an instruction to the agent) is left for a person to read one by one."""
    report = BulkReport()
    for card in cards:
        if action == "confirm" and instruction_warning(card):
            report.left[card.id] = "instruction-shaped text: review it alone"
            continue
        try:
            decided = (confirm(card, min_conclusion_chars=min_conclusion_chars, at=at) if action == "confirm"
                       else reject(card, why=why, at=at))
        except ReviewError as exc:
            report.left[card.id] = str(exc)
            continue
        apply_decision(store, decided)
        report.changed.append(card.id)
    return report
