"""The one supersession-chain walk: every card linked to a card by supersedes / superseded_by.

Hand edits can make a loop or point at a deleted file, so each id is visited once and an id with
no card is reported apart, never followed. Rules (what a new card replaces), the review
container, the report and search all ask this walk.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

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
