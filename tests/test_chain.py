"""cards/chain.py: the one supersession-chain walk, over hand-edited links too."""

from __future__ import annotations

from memoir.cards.chain import newest_successor, supersession_chain
from tests.user_cards import card


def linked(n: int, created: str, supersedes=(), superseded_by=""):
    return card(n, created=created, supersedes=tuple(f"c-{i:016x}" for i in supersedes),
                superseded_by=f"c-{superseded_by:016x}" if superseded_by else "",
                status="superseded" if superseded_by else "active")


def test_the_chain_is_every_linked_card_oldest_first_from_any_member():
    a = linked(1, "2026-09-01T00:00:00+00:00", superseded_by=2)
    b = linked(2, "2026-09-02T00:00:00+00:00", supersedes=(1,), superseded_by=3)
    c = linked(3, "2026-09-03T00:00:00+00:00", supersedes=(2,))
    by_id = {x.id: x for x in (c, a, b)}
    for start in by_id:
        chain = supersession_chain(start, by_id)
        assert [x.id for x in chain.cards] == [a.id, b.id, c.id] and chain.missing == ()


def test_a_loop_made_by_hand_is_walked_once():
    a = linked(1, "2026-09-01T00:00:00+00:00", supersedes=(2,), superseded_by=2)
    b = linked(2, "2026-09-02T00:00:00+00:00", supersedes=(1,), superseded_by=1)
    chain = supersession_chain(a.id, {a.id: a, b.id: b})
    assert [x.id for x in chain.cards] == [a.id, b.id]


def test_a_link_to_a_deleted_file_is_reported_missing_not_followed():
    b = linked(2, "2026-09-02T00:00:00+00:00", supersedes=(1,), superseded_by=9)
    chain = supersession_chain(b.id, {b.id: b})
    assert [x.id for x in chain.cards] == [b.id]
    assert chain.missing == (f"c-{1:016x}", f"c-{9:016x}")


def test_an_unknown_start_is_only_missing():
    chain = supersession_chain("c-nope", {})
    assert chain.cards == () and chain.missing == ("c-nope",)


def test_the_newest_successor_is_the_end_of_the_forward_links():
    a = linked(1, "2026-09-01T00:00:00+00:00", superseded_by=2)
    b = linked(2, "2026-09-02T00:00:00+00:00", supersedes=(1,), superseded_by=3)
    c = linked(3, "2026-09-03T00:00:00+00:00", supersedes=(2,))
    by_id = {x.id: x for x in (a, b, c)}
    assert newest_successor(a, by_id.get) is c and newest_successor(b, by_id.get) is c
    assert newest_successor(c, by_id.get) is None  # nothing replaced it


def test_a_broken_or_looping_forward_chain_has_no_newest_successor():
    a = linked(1, "2026-09-01T00:00:00+00:00", superseded_by=2)
    assert newest_successor(a, {}.get) is None  # the successor's file is gone
    b = linked(2, "2026-09-02T00:00:00+00:00", superseded_by=1)
    assert newest_successor(a, {a.id: a, b.id: b}.get) is None  # a hand-made loop
