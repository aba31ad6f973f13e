"""Review: a person confirms, rejects or edits the cards the gates held back (DESIGN.md stage 8).

Decisions, one name each:
- **confirm** → `status: active`, `confirmed_by: user`, `gate` cleared (the gate that held it
  back is kept as `held_by`). `verified_by: tN` is the rule stage's different claim: a passing
  test run at turn N backed the conclusion.
- **reject** → the card stays a `candidate` with `gate: rejected_by_user` (and the why). It is a
  judgment on the card, not a request to forget its turns: it keeps owning its sources so they
  are not mined again, never enters recall, and leaves the review queue. `memoir forget` is the
  tombstone, for turns that must not be kept at all.
- **edit** → the person's text is written as is, without updating the store's manifest, so it
  is a hand edit like any other: no later run overwrites it.

Cards a person confirmed or rejected are never rewritten by the rules (`user_owned`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone

from cards.model import Card
from cards.store import CardStore, parse_card, write_atomic

REVIEWABLE = ("candidate", "incomplete")
REJECTED = "rejected_by_user"
USER = "user"


class ReviewError(Exception):
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
        extra["why"] = " ".join(why.split())
    return card.with_(status="candidate", confirmed_by="", gate=REJECTED, extra=extra)


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

    @classmethod
    def of(cls, card: Card) -> Pending:
        line = " ".join((card.goal or card.conclusion).split())
        return cls(card.id, card.status, card.gate, line[:100], card.workspace, card.conclusion,
                   [s.to_dict() for s in card.sources])

    def to_json(self) -> dict:
        return {"id": self.id, "status": self.status, "gate": self.gate, "title": self.title,
                "workspace": self.workspace, "conclusion": self.conclusion, "sources": self.sources}
