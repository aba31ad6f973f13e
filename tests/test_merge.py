"""Merging many experiences into one card: what a merge gathers is kept, and the card is the same."""

from __future__ import annotations

from memoir.cards.distill.merge import absorb_duplicate, dedup_keys, identifiers, merge_cards
from memoir.cards.distill.rules import apply_rules
from memoir.cards.draft import draft_card
from memoir.cards.segment import segment_session
from tests.turns import Script

DAY = 24 * 60


def _locked_session(sid: str, day: float, fix: str):
    script = (Script(sid, cwd="/home/dev/shop").user("the sync job dies with database is locked, fix it", at=day * DAY)
              .runs("python -m shop.sync")
              .error("Traceback (most recent call last):\n  File \"/srv/shop/sync.py\", line 9\n"
                     "sqlite3.OperationalError: database is locked")
              .says(fix)
              .calls("Edit", '{"file_path": "/home/dev/shop/shop/db.py", "old_string": "a", "new_string": "b"}')
              .got("Edit", "The file /home/dev/shop/shop/db.py has been updated.")
              .runs("python -m shop.sync").result("synced 120 orders OK"))
    (exp,) = segment_session(script.turns)
    return exp, draft_card(exp)


def _drafted(n: int, causes: int = 2):
    """n sessions of one failure; with two causes, each verified (a newer one supersedes: the rules'
    own test), with one cause they all merge into one card."""
    fixes = ("The fix was setting `busy_timeout = 5000` in shop/db.py so writers wait for the lock.",
             "The fix was closing the cursor in shop/sync.py before the commit, which released the lock.")[:causes]
    return [_locked_session(f"s-{i:03d}", i, fixes[i % len(fixes)]) for i in range(n)]


def test_folding_many_cards_with_the_memo_gives_the_card_folding_without_it_gives():
    drafted = _drafted(40)
    cards = [card for _, card in drafted]
    memo: dict = {}
    with_memo, without = cards[0], cards[0]
    for i, (exp, card) in enumerate(drafted[1:], 1):
        if i % 7 == 0:  # a duplicate read in between: it gains provenance through the same memo
            keys = dedup_keys(card, exp)
            with_memo = absorb_duplicate(with_memo, card, keys, memo)
            without = absorb_duplicate(without, card, keys)
        else:
            with_memo = merge_cards(with_memo, card, memo)
            without = merge_cards(without, card)
        assert with_memo == without and with_memo.extra == without.extra
    assert len(with_memo.sources) == 40
    assert "Seen in 40 sessions" in with_memo.background


def test_a_memo_made_for_another_version_of_the_card_is_not_used():
    (e0, c0), (e1, c1), (e2, c2) = _drafted(3)
    memo: dict = {}
    merged = merge_cards(c0, c1, memo)
    edited = merged.with_(sources=merged.sources[:1], extra={**merged.extra, "dedup_keys": ["k-only"]})
    again = merge_cards(edited, c2, memo)
    assert [s.session_id for s in again.sources] == ["s-000", "s-002"]
    assert again.extra["dedup_keys"] == sorted({"k-only", *dedup_keys(c2)})


def test_every_experience_of_one_failure_lands_in_one_card_with_every_source():
    drafted = _drafted(60, causes=1)
    plan = apply_rules(drafted, [])
    (card,) = plan.write
    assert [s.session_id for s in card.sources] == [f"s-{i:03d}" for i in range(60)]
    assert set(card.extra["dedup_keys"]) >= {k for exp, c in drafted for k in dedup_keys(c, exp) if k.startswith("u-")}
    assert plan.counters["merged"] + plan.counters["duplicates"] == 59  # the same text twice is a duplicate


def test_a_card_leaves_the_rules_with_plain_sources_and_sorted_keys_not_the_views_merges_held():
    drafted = _drafted(12, causes=1)
    memo: dict = {}
    merged = drafted[0][1]
    for _, card in drafted[1:]:
        merged = merge_cards(merged, card, memo)
    assert not isinstance(merged.sources, tuple)  # inside the rules: a view of what was gathered
    (card,) = apply_rules(drafted, []).write
    assert type(card.sources) is tuple and len(card.sources) == 12
    keys = card.extra["dedup_keys"]
    assert type(keys) is list and keys == sorted(keys)
    assert set(merged.sources) == set(card.sources)


def test_identifiers_are_the_code_shaped_tokens_of_a_conclusion_and_prose_has_none():
    text = ("Set pool.max_size in settings/db.yaml with --log.level; read_timeout and retryCount stay, "
            "ABcDe keeps its camel hump, utf8 and `x y` not, `pg_hba.conf` does. The configuration works now.")
    assert identifiers(text) == {"pool.max_size", "settings/db.yaml", "log.level", "read_timeout", "retrycount",
                                 "cde", "utf8", "pg_hba.conf"}
    assert identifiers("The configuration of the scheduler works again after the restart.") == frozenset()



def _pasted_keyerror(sid: str, day: float, said: str):
    return (Script(sid, cwd="/home/dev/shop")
            .user(said, at=day * 24 * 60)
            .runs("pytest tests/test_auth.py")
            .error("    return session[\"user_id\"]\nE   KeyError: 'user_id'\n1 failed, 5 passed in 0.3s")
            .edits("/home/dev/shop/app/auth.py", 'return session["user_id"]', 'return session.get("user_id")')
            .runs("pytest tests/test_auth.py").result("6 passed in 0.3s")
            .says("The session loses `user_id` after a re-login, so `current_user` in `app/auth.py` now reads it with "
                  "`session.get(\"user_id\")` and treats a missing id as logged out."))


def test_the_same_error_and_fix_in_other_words_merge_into_one_card_with_both_sources():
    """Two users paste one error in their own sentences; the signature is the error alone, so the cards merge."""
    first = [(e, draft_card(e)) for e in segment_session(_pasted_keyerror(
        "s-a", 0, "I get KeyError: 'user_id' from current_user in app/auth.py after I logged in again").turns)]
    second = [(e, draft_card(e)) for e in segment_session(_pasted_keyerror(
        "s-b", 9, "after login the page shows KeyError: 'user_id' when I open /profile, please fix").turns)]
    assert first[0][1].error_signature == second[0][1].error_signature == "KeyError: <str>"
    plan = apply_rules(first + second, [])
    live = [c for c in plan.write if c.status not in ("superseded", "forgotten")]
    assert len(live) == 1 and {s.session_id for s in live[0].sources} == {"s-a", "s-b"}
    assert plan.counters["merged"] == 1
