"""index.advice: which active cards of a workspace disagree, listed by `memoir status` for review."""

from __future__ import annotations

from memoir.cards.values import Card
from memoir.index.advice import contradicting_pairs

SHOP, BLOG = "/home/dev/shop", "/home/dev/blog"


def _card(cid: str, conclusion: str, *, created: str = "2026-11-01T00:00:00Z", workspace: str = SHOP,
          status: str = "active") -> Card:
    return Card(id=cid, title=cid, workspace=workspace, created=created, updated=created, status=status,
                conclusion=conclusion, task_type="debug")


def test_two_active_cards_of_a_workspace_with_opposite_values_are_listed_with_why():
    cards = [_card("c-a", "The worker needs `POOL_SIZE=2` so the test database keeps one writer."),
             _card("c-b", "Set `POOL_SIZE=8`: two connections starve the worker under load."),
             _card("c-c", "Bundle DejaVuSans.ttf under `shop/static/fonts/`; the CI image has no fonts.")]
    assert contradicting_pairs(cards) == [("c-a", "c-b", "pool_size=2 vs pool_size=8")]


def test_a_newer_card_that_calls_the_older_ones_cause_wrong_is_listed_while_both_stay_active():
    old = _card("c-old", "Committing inside the `seed_orders` fixture releases the write lock.",
                created="2026-10-01T00:00:00Z")
    new = _card("c-new", "Committing in `seed_orders` no era la causa real: cerrar `audit_conn` libera el bloqueo.",
                created="2026-11-01T00:00:00Z")
    ((a, b, why),) = contradicting_pairs([old, new])
    assert (a, b) == ("c-new", "c-old") and why.startswith("takes back") and "seed" in why


def test_cards_of_other_workspaces_or_not_active_are_never_paired():
    cards = [_card("c-a", "Set `POOL_SIZE=2` for the test database."),
             _card("c-b", "Set `POOL_SIZE=8` for the blog's workers.", workspace=BLOG),
             _card("c-c", "Set `POOL_SIZE=4` for the test database.", status="superseded")]
    assert contradicting_pairs(cards) == []
