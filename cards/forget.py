"""Forgetting is a tombstone (DESIGN.md stage 8): the same source turns never become a card again.

Where things live, and why:
- the tombstone is a card file in `cards/forgotten/<id>.md`: status `forgotten`, every section,
  topic and signature emptied, the why recorded, sources and dedup keys kept so it stays
  traceable. It sits beside the card files people commit, so a teammate's memoir honours it too,
  and outside the `cards/c-*.md` glob, so the index (sync, check, rebuild) never holds a row for
  it and a ledger reset or an index rebuild cannot bring it back;
- the text the card had before it was forgotten is kept in `state/forgotten/<id>.json` (local,
  never committed) so `memoir unforget` restores it byte for byte; `memoir forget --purge`
  deletes that copy, after which only the tombstone is left.

A card file deleted by hand means the same as `memoir forget`: the next run finds ids the
manifest lists with no file and no tombstone, and writes their tombstones before the rules run.
Such a tombstone knows only the id (the hash of the card's first source turns): the other
sessions a merged card had absorbed are not known once its file is gone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from memoir.cards.distill.merge import dedup_keys
from memoir.cards.spool import loaded
from memoir.cards.values import Card, Experience, Turn
from memoir.cards.sanitize import sanitize
from memoir.cards.sanitize.fields import FIELD_CAP
from memoir.cards.store import CardFileError, CardStore, parse_card, render_card, write_atomic
from memoir.cards.errors import CardsError

FORGOTTEN = "forgotten"
TOMBSTONE_DIR = "forgotten"  # under cards/: tombstones; under state/: the kept pre-forget text
BY_USER = "user"  # `memoir forget`
BY_HAND_DELETE = "file_deleted"  # the card file was deleted by hand


class ForgetError(CardsError):
    """A forget or unforget that cannot be done; the message says what to do instead."""


class NoSuchCard(ForgetError):
    """No card file and no tombstone under this id."""


class AlreadyForgotten(ForgetError):
    """The id is a tombstone already."""


class NotForgotten(ForgetError):
    """`unforget` of an id that has no tombstone."""


class CardInTheWay(ForgetError):
    """`unforget` would overwrite a card file that exists again."""


# --- pure: the tombstone and what it covers ----------------------------------------------------


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def make_tombstone(card: Card, *, why: str = "", by: str = BY_USER, at: str = "") -> Card:
    """The card emptied of everything it said; what it came from and why it went are kept."""
    keys = sorted(set(dedup_keys(card)))
    extra = {"dedup_keys": keys, "forgotten_at": at or now_iso(), "forgotten_by": by}
    if why.strip():
        extra["why"] = " ".join(why.split())
    return Card(
        id=card.id, status=FORGOTTEN, quality=card.quality, workspace=card.workspace, project=card.project,
        created=card.created, updated=card.updated, sources=card.sources,
        supersedes=card.supersedes, superseded_by=card.superseded_by, extra=extra,
    )


def id_only_tombstone(card_id: str, *, at: str = "") -> Card:
    """The tombstone of a file deleted by hand: the id is all that is left of it."""
    return make_tombstone(Card(id=card_id), by=BY_HAND_DELETE, at=at)


@dataclass(frozen=True)
class Tombstones:
    """What every tombstone covers: card ids, source turn ranges per session, dedup keys."""

    ids: frozenset[str] = frozenset()
    ranges: dict[tuple[str, str], tuple[tuple[int, int], ...]] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)  # dedup key -> tombstone id

    @classmethod
    def of(cls, tombstones: Iterable[Card]) -> Tombstones:
        ids, ranges, keys = set(), {}, {}
        for t in tombstones:
            ids.add(t.id)
            for s in t.sources:
                ranges.setdefault((s.host, s.session_id), []).append((t.id, tuple(s.turns)))
            for k in t.extra.get("dedup_keys") or ():
                keys.setdefault(str(k), t.id)
        return cls(frozenset(ids), {k: tuple(v) for k, v in ranges.items()}, keys)

    def covering(self, exp: Experience, card: Card) -> str:
        """The id of the tombstone that covers this drafted experience, or ''.

        Turn ranges match on overlap, not equality: after a ledger reset a session is read whole
        and may be cut a little differently, and a forgotten turn must stay forgotten.
        """
        if card.id in self.ids:
            return card.id
        for s in card.sources:
            for tid, (lo, hi) in self.ranges.get((s.host, s.session_id), ()):
                if s.turns[0] <= hi and lo <= s.turns[1]:
                    return tid
        for k in dedup_keys(card, exp):
            if k in self.keys:
                return self.keys[k]
        return ""

    def covers_turn(self, turn: Turn) -> bool:
        """Is this raw turn inside a forgotten card's sources (deep search over turns hides it)?"""
        return any(lo <= turn.seq <= hi for _, (lo, hi) in self.ranges.get((turn.host, turn.session_id), ()))

    def split(self, drafted: Sequence[tuple[Experience, Card]]
              ) -> tuple[list[tuple[Experience, Card]], list[tuple[str, str]]]:
        """(drafts to keep, (draft id, tombstone id) for each draft a tombstone covers)."""
        keep, covered = [], []
        for exp, card in drafted:
            tid = self.covering(exp, loaded(card)) if self.ids else ""
            if tid:
                covered.append((card.id, tid))
            else:
                keep.append((exp, card))
        return keep, covered


def plan_hand_deletes(written: Iterable[str], present: Iterable[str], tombstoned: Iterable[str]) -> list[str]:
    """Ids memoir wrote whose file is gone and that no tombstone records yet: deleted by hand."""
    return sorted(set(written) - set(present) - set(tombstoned))


# --- I/O ----------------------------------------------------------------------------------------


def tombstone_dir(store: CardStore) -> Path:
    return store.cards_dir / TOMBSTONE_DIR


def tombstone_path(store: CardStore, card_id: str) -> Path:
    store.path_for(card_id)  # refuses an id that is a path, before any file is named by it
    return tombstone_dir(store) / f"{card_id}.md"


def kept_path(store: CardStore, card_id: str) -> Path:
    store.path_for(card_id)  # likewise
    return store.manifest_path.parent / TOMBSTONE_DIR / f"{card_id}.json"


def tombstone_ids(store: CardStore) -> list[str]:
    d = tombstone_dir(store)
    return sorted(p.stem for p in d.glob("c-*.md")) if d.is_dir() else []


def load_tombstones(store: CardStore) -> tuple[list[Card], list[str]]:
    """Every tombstone card, plus one message per file that cannot be read."""
    cards, problems = [], []
    for card_id in tombstone_ids(store):
        path = tombstone_path(store, card_id)
        try:
            cards.append(parse_card(path.read_text(encoding="utf-8"), origin=str(path)))
        except (OSError, UnicodeDecodeError, CardFileError) as exc:
            problems.append(str(exc))
    return cards, problems


def read_tombstone(store: CardStore, card_id: str) -> Card | None:
    path = tombstone_path(store, card_id)
    try:
        return parse_card(path.read_text(encoding="utf-8"), origin=str(path))
    except FileNotFoundError:
        return None


@dataclass(frozen=True)
class Guard:
    """What a run must honour before its rules: every tombstone, and the ids it just tombstoned."""

    tombstones: Tombstones
    deleted_by_hand: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()


def guard_library(store: CardStore, at: str = "") -> Guard:
    """Turn card files deleted by hand into tombstones, then load every tombstone.

    Runs under the run lock, before the rules, so an experience whose card was deleted by hand
    is skipped in the same run even when the ledger was reset too.
    """
    deleted = plan_hand_deletes(store.manifest, store.ids(), tombstone_ids(store))
    for card_id in deleted:
        write_atomic(tombstone_path(store, card_id), render_card(id_only_tombstone(card_id, at=at)))
        store.manifest.pop(card_id, None)
    if deleted:
        store.save_manifest()
    cards, problems = load_tombstones(store)
    return Guard(Tombstones.of(cards), tuple(deleted), tuple(problems))


@dataclass(frozen=True)
class ForgetReport:
    """What `forget` did; `kept` is where the pre-forget text waits for `unforget` ('' once purged)."""

    card_id: str
    tombstone: Path
    kept: str = ""
    purged: bool = False


def forget(store: CardStore, card_id: str, *, why: str = "", purge: bool = False, at: str = "") -> ForgetReport:
    """Replace a card by its tombstone; the caller then drops the index row (`index.Index.remove`).

    Order: keep the text, write the tombstone, remove the card file, forget the manifest entry.
    A crash in between leaves both files; running `forget` again finishes the job.

    Raises:
        NoSuchCard: neither a card file nor a tombstone has this id.
        AlreadyForgotten: only a tombstone is left (with `purge`, the kept text is deleted instead).
        CardFileError: the card file does not parse; fix it, or delete it (which forgets it too).
    """
    text = store.read_text(card_id)
    tomb = tombstone_path(store, card_id)
    if text is None:
        if not tomb.exists():
            raise NoSuchCard(f"no card {card_id} in {store.cards_dir}; see `memoir cards list`")
        if purge:
            return ForgetReport(card_id, tomb, purged=_purge(store, card_id))
        raise AlreadyForgotten(f"{card_id} is forgotten already ({tomb}); `memoir unforget {card_id}` restores it")
    card = parse_card(text, origin=str(store.path_for(card_id)))
    kept = kept_path(store, card_id)
    if not purge:
        # The kept copy is memoir's write: a secret a person typed into the card is not copied raw.
        record = {"id": card_id, "text": sanitize(text, FIELD_CAP), "manifest_hash": store.manifest.get(card_id), "forgotten_at": at or now_iso()}
        write_atomic(kept, json.dumps(record, ensure_ascii=False, indent=1) + "\n")
    write_atomic(tomb, render_card(make_tombstone(card, why=why, at=at)))
    os.unlink(store.path_for(card_id))
    store.manifest.pop(card_id, None)
    store.save_manifest()
    if purge:
        _purge(store, card_id)
    return ForgetReport(card_id, tomb, "" if purge else str(kept), purge)


def _purge(store: CardStore, card_id: str) -> bool:
    try:
        os.unlink(kept_path(store, card_id))
        return True
    except FileNotFoundError:
        return False


@dataclass(frozen=True)
class UnforgetReport:
    """`restored`: the card file is back as it was; False when no text was kept (only the tombstone went)."""

    card_id: str
    restored: bool
    path: Path


def unforget(store: CardStore, card_id: str) -> UnforgetReport:
    """Put the kept pre-forget text back exactly and remove the tombstone; the caller re-indexes the id.

    Without kept text (purged, or the file had been deleted by hand) only the tombstone goes: the
    turns may then be mined again after a ledger reset.

    Raises:
        NotForgotten: no tombstone with this id.
        CardInTheWay: a card file with this id exists again; move it away first.
    """
    tomb = tombstone_path(store, card_id)
    if not tomb.exists():
        raise NotForgotten(f"{card_id} is not forgotten; `memoir cards list --status forgotten` lists what is")
    path = store.path_for(card_id)
    if path.exists():
        raise CardInTheWay(f"{path} exists again; move it away, then `memoir unforget {card_id}`")
    kept = kept_path(store, card_id)
    try:
        record = json.loads(kept.read_text(encoding="utf-8"))
    except FileNotFoundError:
        record = None
    except ValueError as exc:
        raise ForgetError(f"the kept text {kept} is damaged ({exc}); nothing was changed") from exc
    if record is not None:
        write_atomic(path, record["text"])
        if record.get("manifest_hash"):
            # A hand-edited card comes back hand-edited: the manifest keeps what memoir last wrote.
            store.manifest[card_id] = record["manifest_hash"]
        else:
            store.manifest.pop(card_id, None)
        store.save_manifest()
    os.unlink(tomb)
    if record is not None:
        os.unlink(kept)
    return UnforgetReport(card_id, record is not None, path)


__all__ = [
    "AlreadyForgotten", "CardInTheWay", "ForgetError", "ForgetReport", "Guard", "NoSuchCard", "NotForgotten",
    "Tombstones", "UnforgetReport", "forget", "guard_library", "id_only_tombstone",
    "load_tombstones", "make_tombstone", "plan_hand_deletes", "read_tombstone", "tombstone_ids", "unforget",
]
