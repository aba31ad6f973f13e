"""A card's supersession chain as people see it (the review container, the report, search's
"superseded by"): the one chain walk, `cards.chain.supersession_chain`, over card files read only
when the walk reaches them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from memoir.cards.chain import supersession_chain
from memoir.cards.store import CardFileError, CardStore
from memoir.cards.title import display_title
from memoir.cards.values import Card


@dataclass(frozen=True, slots=True)
class ChainLink:
    """One card of a supersession chain; `known` is False for an id that has no card file."""

    id: str
    title: str
    status: str
    here: bool  # the card the chain was asked for
    known: bool = True


class CardsOnDisk(Mapping):
    """Card id -> card, read from the store on first ask; an unreadable file reads as absent (its
    error kept in `problems` when given: a broken hand edit, which `memoir index check` names too)."""

    def __init__(self, store: CardStore, first: Card | None = None, problems: list[str] | None = None):
        self.store = store
        self.problems = problems
        self.loaded: dict[str, Card] = {first.id: first} if first is not None else {}
        self.absent: set[str] = set()

    def get(self, card_id, default=None):
        if card_id in self.loaded:
            return self.loaded[card_id]
        if card_id in self.absent:
            return default
        try:
            card = self.store.read(card_id)
        except FileNotFoundError:
            self.absent.add(card_id)
            return default
        except (OSError, UnicodeDecodeError, CardFileError) as exc:
            self.absent.add(card_id)
            if self.problems is not None:
                self.problems.append(str(exc))
            return default
        self.loaded[card_id] = card
        return card

    def __getitem__(self, card_id: str) -> Card:
        card = self.get(card_id)
        if card is None:
            raise KeyError(card_id)
        return card

    def __iter__(self) -> Iterator[str]:
        return iter(self.loaded)

    def __len__(self) -> int:
        return len(self.loaded)


def chain_links(card: Card, by_id: Mapping[str, Card]) -> tuple[ChainLink, ...]:
    """The card's chain, oldest first, then the ids it names that have no card file (sorted).

    A card that neither supersedes nor is superseded is a chain of one.
    """
    chain = supersession_chain(card.id, by_id)
    links = [ChainLink(c.id, display_title(c), c.status, c.id == card.id) for c in chain.cards]
    links += [ChainLink(i, "", "missing", i == card.id, known=False) for i in chain.missing]
    return tuple(links)


def newest_in_chain(card: Card, by_id: Mapping[str, Card]) -> str:
    """The card that replaced `card` in the end: the newest card of its chain that nothing replaced,
    or the id a link names when that card's file is gone; '' when nothing replaced it."""
    chain = supersession_chain(card.id, by_id)
    if not chain.cards:
        return card.superseded_by.strip()
    heads = [c for c in chain.cards if not c.superseded_by.strip()]
    newest = heads[-1] if heads else chain.cards[-1]
    named = newest.superseded_by.strip()
    if newest.id == card.id or (not heads and named in chain.missing):
        return named
    return newest.id
