"""The one supersession-chain walk: every card linked to a card by supersedes / superseded_by.

Hand edits can make a loop or point at a deleted file, so each id is visited once and an id with
no card is reported apart, never followed. Rules (what a new card replaces), the review
container, the report and search ask `supersession_chain`; recall asks `newest_successor`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from memoir.cards.values import Card


@dataclass(frozen=True, slots=True)
class Chain:
    """A chain, oldest first (by created, then id), and the linked ids that have no card."""

    cards: tuple[Card, ...]
    missing: tuple[str, ...]


def supersession_chain(card_id: str, by_id: Mapping[str, Card]) -> Chain:
    """Walk both directions from `card_id`; `by_id.get` may load lazily (a store-backed mapping)."""
    seen: dict[str, Card] = {}
    missing: set[str] = set()
    todo = [card_id]
    while todo:
        cid = todo.pop()
        if cid in seen or cid in missing:
            continue
        card = by_id.get(cid)
        if card is None:
            missing.add(cid)
            continue
        seen[cid] = card
        todo.extend(card.supersedes)
        if card.superseded_by:
            todo.append(card.superseded_by)
    ordered = tuple(sorted(seen.values(), key=lambda c: (c.created, c.id)))
    return Chain(ordered, tuple(sorted(missing)))


class Linked(Protocol):
    """A card, or a recall candidate made from one: what the forward walk reads."""

    id: str
    superseded_by: str


def newest_successor(card: Linked, get: Callable[[str], Card | None]) -> Card | None:
    """The last card down `card`'s superseded_by links, or None: no successor, an unreadable link, a loop.

    Recall uses it to answer with the card that replaced a hit; a broken chain answers nothing
    rather than a card in the middle of it.
    """
    seen = {card.id}
    nxt, last = card.superseded_by.strip(), None
    while nxt:
        if nxt in seen:
            return None
        seen.add(nxt)
        last = get(nxt)
        if last is None:
            return None
        nxt = last.superseded_by.strip()
    return last
