"""The rule stage over literal sessions: one test per rule, each with its own fixture sessions."""

from __future__ import annotations

import json
import random
from dataclasses import replace

from memoir.cards.chain import supersession_chain
from memoir.cards.distill.extract import CONFIRMED_CUE, extract_conclusions, find_disproved
from memoir.cards.distill.merge import merge_signature, same_topic
from memoir.cards.distill.rules import apply_rules
from memoir.cards.draft import draft_card
from memoir.cards.values import Card, Experience
from memoir.cards.segment import segment_session
from memoir.cards.store import parse_card, render_card
from tests.turns import Script

DAY = 24 * 60


def _one(script: Script) -> tuple[Experience, Card]:
    exps = segment_session(script.turns)
    assert len(exps) == 1, [e.boundary for e in exps]
    return exps[0], draft_card(exps[0])


def _apply(plan, library: list[Card]) -> list[Card]:
    """What the pipeline does with a plan: write (replace by id) every card in `write`."""
    by_id = {c.id: c for c in library}
    by_id.update({c.id: c for c in plan.write})
    return [parse_card(render_card(c)) for c in sorted(by_id.values(), key=lambda c: c.id)]


def _run(drafted, library=()):
    plan = apply_rules(drafted, list(library))
    return plan, _apply(plan, list(library))


# --- fixtures: one small session per situation ---------------------------------------------------------


def _edits(s: Script, path: str, old: str = "a", new: str = "b") -> Script:
    """The change the explanation before it describes: a fix is proven only by a change and the check again."""
    args = json.dumps({"file_path": path, "old_string": old, "new_string": new})
    return s.calls("Edit", args).got("Edit", f"The file {path} has been updated.")


def checkout_session(sid: str = "s-1", day: int = 0, cwd: str = "/home/dev/shop") -> Script:
    s = (Script(sid, cwd=cwd).user("test_checkout fails with a stale cart total, can you fix it?", at=day * DAY)
         .runs("pytest tests/test_checkout.py").error("AssertionError: cart total 30 != 20")
         .says("The root cause is that the cart total is cached across requests; clearing it in add_item fixes test_checkout."))
    return _edits(s, f"{cwd}/shop/cart.py").runs("pytest tests/").result("41 passed in 2.1s")


def urllib3_session(sid: str, day: int, goal: str, fix: str) -> Script:
    s = (Script(sid).user(goal, at=day * DAY)
         .runs("python -m shop.sync")
         .error("Traceback (most recent call last):\n  File \"/srv/shop/sync.py\", line 3\n"
                "ImportError: cannot import name 'DEFAULT_CIPHERS' from 'urllib3.util.ssl_' (/venv/lib/urllib3/util/ssl_.py)")
         .says(fix))
    return _edits(s, "/home/dev/shop/requirements.txt").runs("python -m shop.sync").result("synced 120 orders OK")


def pool_session(sid: str, day: float, size: int, why: str, cwd: str = "/home/dev/shop") -> Script:
    s = (Script(sid, cwd=cwd).user("configure the database connection pool for the api server workers", at=day * DAY)
         .runs("cat settings.toml").result("[db]\npool_size = 2")
         .runs("pytest tests/test_pool.py").result("1 failed, 3 passed in 0.41s"))
    return _edits(s, f"{cwd}/settings.toml").runs("pytest tests/test_pool.py").result("4 passed in 0.40s").says(
        f"The fix is setting `pool_size = {size}` in settings.toml under [db]; {why}")


# --- rule 1: dedup ---------------------------------------------------------------------------------------


def test_the_same_log_read_twice_yields_one_card():
    exp, card = _one(checkout_session())
    plan = apply_rules([(exp, card), (exp, card)], [])
    assert [c.id for c in plan.write] == [card.id]
    assert plan.dropped == [(card.id, f"already_in {card.id}")]


def test_a_resumed_session_that_replays_the_turns_yields_one_card_with_both_sources():
    original = _one(checkout_session("s-1"))
    resumed = _one(checkout_session("s-2", day=1))  # the host copied the earlier turns into a new session, later
    plan = apply_rules([original, resumed], [])
    assert len(plan.write) == 1
    (card,) = plan.write
    assert card.id == original[1].id
    assert [s.session_id for s in card.sources] == ["s-1", "s-2"]
    assert plan.dropped == [(resumed[1].id, f"duplicate_of {card.id}")]


def test_a_subagent_sidechain_that_repeats_the_parent_is_not_a_second_card():
    parent_exp, parent = _one(checkout_session())
    side_turns = tuple(replace(t, seq=t.seq + 100, line=t.line + 100, is_sidechain=True) for t in parent_exp.turns)
    side_exp = replace(parent_exp, turns=side_turns)
    plan = apply_rules([(parent_exp, parent), (side_exp, draft_card(side_exp))], [])
    assert [c.id for c in plan.write] == [parent.id]
    assert [s.turns for s in plan.write[0].sources] == [(0, 7), (100, 107)]


def test_replayed_turns_with_the_same_host_uuids_dedup_even_when_text_was_rescrubbed():
    def with_uuids(script: Script, suffix: str = "") -> tuple[Experience, Card]:
        exp, _ = _one(script)
        turns = tuple(replace(t, uuid=f"u-{t.seq}", text=t.text + suffix) for t in exp.turns)
        exp = replace(exp, turns=turns)
        return exp, draft_card(exp)

    first = with_uuids(checkout_session("s-1"))
    replay = with_uuids(checkout_session("s-2", day=1), suffix=" [redacted]")
    assert first[1].conclusion != replay[1].conclusion
    plan = apply_rules([first, replay], [])
    assert [c.id for c in plan.write] == [first[1].id]


def test_a_duplicate_of_a_card_already_on_disk_only_adds_its_source():
    _, library = _run([_one(checkout_session("s-1"))])
    plan, _ = _run([_one(checkout_session("s-9"))], library)
    assert [c.id for c in plan.write] == [library[0].id]
    assert [s.session_id for s in plan.write[0].sources] == ["s-1", "s-9"]
    assert plan.write[0].conclusion == library[0].conclusion


# --- rule 2: merge by error signature ------------------------------------------------------------------


def _three_urllib3_sessions():
    return [
        _one(urllib3_session("s-a", 0, "shop.sync crashes on import after the upgrade",
                             "The fix was pinning `urllib3<2` in requirements.txt; botocore 1.29 still imports DEFAULT_CIPHERS.")),
        _one(urllib3_session("s-b", 3, "the nightly sync job dies with an ImportError again",
                             "The fix was pinning `urllib3<2` in requirements.txt; botocore 1.29 still imports DEFAULT_CIPHERS.")),
        _one(urllib3_session("s-c", 9, "sync fails importing DEFAULT_CIPHERS on the new image",
                             "The fix was upgrading botocore to 1.31 in requirements.txt, which no longer imports DEFAULT_CIPHERS, and dropping the urllib3 pin.")),
    ]


def test_the_same_error_in_three_sessions_is_one_card_with_three_sources():
    drafted = _three_urllib3_sessions()
    plan = apply_rules(drafted, [])
    assert len(plan.write) == 1
    (card,) = plan.write
    assert card.id == drafted[0][1].id  # the oldest source keeps its id
    assert [s.session_id for s in card.sources] == ["s-a", "s-b", "s-c"]
    for sid in ("s-a", "s-b", "s-c"):
        assert f"### claude-code session {sid}, turns 0–7" in card.evidence
    assert sorted(reason for _, reason in plan.dropped) == [f"merged_into {card.id}"] * 2


def test_the_newest_resolution_wins_and_the_older_one_becomes_a_counterexample_with_its_source():
    (card,) = apply_rules(_three_urllib3_sessions(), []).write
    assert card.conclusion.startswith("The fix was upgrading botocore to 1.31")
    assert "earlier resolution (claude-code session s-b, turns 0–7)" in card.counterexamples
    assert "pinning `urllib3<2`" in card.counterexamples
    assert "Seen in 3 sessions with the same error signature." in card.background


def test_merging_across_runs_folds_the_new_session_into_the_card_on_disk():
    a, b, c = _three_urllib3_sessions()
    _, library = _run([a, b])
    plan, after = _run([c], library)
    assert [x.id for x in plan.write] == [a[1].id]
    assert len(after) == 1 and len(after[0].sources) == 3
    assert after[0].conclusion.startswith("The fix was upgrading botocore")


def test_the_same_signature_in_another_workspace_is_not_merged():
    a = _one(urllib3_session("s-a", 0, "sync crashes on import", "The fix was pinning `urllib3<2` in requirements.txt today."))
    exp, _ = _one(urllib3_session("s-x", 1, "billing crashes on import", "The fix was pinning `urllib3<2` in requirements.txt as well."))
    exp = replace(exp, turns=tuple(replace(t, cwd="/home/dev/billing") for t in exp.turns))
    plan = apply_rules([a, (exp, draft_card(exp))], [])
    assert len(plan.write) == 2


def test_a_bare_signature_is_too_vague_to_merge_on():
    card = Card(id="c-1", error_signature="KeyError: <str>")
    assert merge_signature(card) == ""
    assert merge_signature(card.with_(error_signature="ImportError: cannot import name <str> from <str>"))


# --- rule 3: explicit conclusions ------------------------------------------------------------------------


def test_each_explicit_cue_is_extracted_with_the_turn_it_came_from():
    s = (Script().user("why is the export empty?")
         .says("Checking the query first.")
         .says("Turns out the export filter compares naive and aware datetimes.")
         .says("So the answer is to make created_at timezone-aware in models.py before filtering.")
         .says("It works now because the comparison uses UTC on both sides."))
    found = extract_conclusions(s.turns)
    assert [(st.seq, st.cue) for st in found] == [(2, "turns out"), (3, "so the answer is"), (4, "works now because")]
    assert found[1].text.startswith("So the answer is to make created_at")


def test_a_statement_starts_at_its_cue_sentence_so_a_disproval_preamble_is_left_out():
    s = (Script().user("fix the flaky test")
         .says("That wasn't it either. The root cause is the shared tmp dir; each test now gets its own."))
    (st,) = extract_conclusions(s.turns)
    assert st.text == "The root cause is the shared tmp dir; each test now gets its own."


def test_a_change_verified_by_a_passing_test_run_is_a_conclusion_without_a_cue():
    s = (Script().user("the slug test fails on unicode titles")
         .runs("pytest tests/test_slug.py").error("AssertionError: 'caf' != 'cafe'")
         .says("Normalising titles with unicodedata NFKD before stripping accents in slugify().")
         .runs("sed -i 's/ascii/NFKD/' shop/slug.py").result("")
         .runs("pytest tests/test_slug.py").result("5 passed in 0.2s"))
    (st,) = extract_conclusions(s.turns)
    assert (st.seq, st.cue, st.verified_by) == (3, CONFIRMED_CUE, "t7")
    assert draft_card(_one(s)[0]).verified_by == "t7"


def test_a_passing_run_without_a_change_confirms_nothing():
    s = (Script().user("do the slug tests pass?")
         .says("Running the slug tests to check the current state of slugify().")
         .runs("pytest tests/test_slug.py").result("5 passed in 0.2s"))
    assert extract_conclusions(s.turns) == ()


# --- rule 4: disproved judgments ------------------------------------------------------------------------------


def guess_then_fix() -> Script:
    s = (Script().user("test_checkout fails intermittently, can you fix it?")
         .runs("pytest tests/test_checkout.py").error("AssertionError: expected 3 items, got 2")
         .says("The issue is probably the Redis cache returning stale carts; clearing it in the fixture should fix it.")
         .runs("pytest tests/test_checkout.py").error("AssertionError: expected 3 items, got 2")
         .says("The root cause is that test_cart leaks an item into the shared session fixture; a function-scoped fixture fixes it."))
    return _edits(s, "/home/dev/shop/tests/conftest.py", '@pytest.fixture(scope="session")',
                  '@pytest.fixture(scope="function")').runs("pytest tests/").result("41 passed")


def test_a_guess_followed_by_the_same_failure_is_disproved_and_never_the_conclusion():
    s = guess_then_fix()
    dead = find_disproved(s.turns)
    assert {seq: (d.by, d.reason) for seq, d in dead.items()} == {3: (5, "still_failing")}
    card = draft_card(_one(s)[0])
    assert "Redis" not in card.conclusion and "Redis" in card.counterexamples
    assert "disproved (same failure again at t5)" in card.counterexamples


def test_a_claim_the_user_contradicts_is_disproved():
    s = (Script().user("the login page 500s")
         .says("The problem is the session secret missing from .env; adding SECRET_KEY fixes it.")
         .user("that wasn't it, SECRET_KEY is set. Look at the logs.")
         .says("Looking at the logs now to find the failing request."))
    assert {seq: d.reason for seq, d in find_disproved(s.turns).items()} == {1: "contradicted"}
    assert extract_conclusions(s.turns) == ()


def test_a_reverted_change_disproves_the_claim_behind_it():
    s = (Script().user("speed up the report query")
         .says("The fix is an index on orders.created_at, which should help the report query.")
         .runs("alembic upgrade head").result("ok")
         .runs("git revert HEAD --no-edit").result("[main 1a2b3c4] Revert add index"))
    assert {seq: d.reason for seq, d in find_disproved(s.turns).items()} == {1: "reverted"}


def test_a_confirmed_claim_is_not_disproved_by_a_later_unrelated_error():
    s = (Script().user("fix the checkout test")
         .runs("pytest").error("AssertionError: total 30 != 20")
         .says("The root cause is the cached cart total; clearing it fixes test_checkout.")
         .runs("pytest").result("41 passed")
         .runs("npm run build").error("TypeError: Cannot read properties of undefined (reading 'map')"))
    assert find_disproved(s.turns) == {}


def test_a_disproved_guess_never_reaches_a_merged_conclusion():
    exp1, card1 = _one(guess_then_fix())
    s2 = (Script("s-2").user("test_checkout fails again on CI", at=5 * DAY)
          .runs("pytest tests/test_checkout.py").error("AssertionError: expected 3 items, got 2")
          .says("The issue is probably the Redis cache again; flushing it in conftest should fix it.")
          .runs("pytest tests/test_checkout.py").error("AssertionError: expected 3 items, got 2"))
    exp2 = segment_session(s2.turns)[0]
    (card,) = apply_rules([(exp1, card1), (exp2, draft_card(exp2))], []).write
    assert "Redis" not in card.conclusion
    assert card.conclusion.startswith("The root cause is that test_cart leaks")


# --- rule 5: supersession --------------------------------------------------------------------------------


def test_a_newer_conclusion_supersedes_the_older_and_both_files_say_so():
    old_pair = _one(pool_session("s-old", 0, 5, "that keeps the api server within the database limit."))
    new_pair = _one(pool_session("s-new", 7, 20, "5 starved the workers under load."))
    _, library = _run([old_pair])
    plan, after = _run([new_pair], library)
    old_id, new_id = old_pair[1].id, new_pair[1].id
    assert sorted(c.id for c in plan.write) == sorted([old_id, new_id])
    assert plan.counters["superseded"] == 1 and plan.superseded == [old_id]
    texts = {c.id: render_card(c) for c in plan.write}
    assert "status: superseded\n" in texts[old_id]
    assert f"superseded_by: {new_id}\n" in texts[old_id]
    assert f"supersedes:\n- {old_id}\n" in texts[new_id]
    assert "status: active\n" in texts[new_id]
    old_after = next(c for c in after if c.id == old_id)
    assert old_after.conclusion == old_pair[1].conclusion  # superseded, never emptied or deleted


def test_an_older_card_read_late_is_superseded_by_the_newer_one_on_disk():
    old_pair = _one(pool_session("s-old", 0, 5, "that keeps the api server within the database limit."))
    new_pair = _one(pool_session("s-new", 7, 20, "5 starved the workers under load."))
    _, library = _run([new_pair])
    plan, _ = _run([old_pair], library)
    by_id = {c.id: c for c in plan.write}
    assert by_id[old_pair[1].id].status == "superseded"
    assert by_id[new_pair[1].id].supersedes == (old_pair[1].id,)


def test_cards_in_different_workspaces_never_supersede_each_other():
    a = _one(pool_session("s-a", 0, 5, "that keeps the api server within the database limit."))
    b = _one(pool_session("s-b", 7, 20, "5 starved the workers under load.", cwd="/home/dev/billing"))
    plan = apply_rules([a, b], [])
    assert {c.status for c in plan.write} == {"active"}
    assert not same_topic(a[1], b[1])


def test_conclusions_about_different_identifiers_are_different_topics():
    a = _one(pool_session("s-a", 0, 5, "that keeps the api server within the database limit."))
    b = _one(Script("s-b").user("configure the database connection pool for the api server workers", at=7 * DAY)
             .runs("cat settings.toml").result("[db]\npool_size = 2")
             .says("The fix is raising `max_overflow` in gunicorn.conf.py so bursts borrow extra connections."))
    assert not same_topic(a[1], b[1])
    assert apply_rules([a, b], []).counters["superseded"] == 0


def test_the_supersession_chain_runs_oldest_to_newest():
    pairs = [_one(pool_session(f"s-{i}", i * 7, size, f"sized for release {i} of the workers."))
             for i, size in enumerate((5, 10, 20))]
    library: list[Card] = []
    for pair in pairs:
        _, library = _run([pair], library)
    by_id = {c.id: c for c in library}
    ids = [p[1].id for p in pairs]
    assert [c.id for c in supersession_chain(ids[1], by_id).cards] == ids
    assert [by_id[i].status for i in ids] == ["superseded", "superseded", "active"]
    assert by_id[ids[2]].supersedes == (ids[1],)


# --- rule 6: unresolvable conflict -----------------------------------------------------------------------


def test_an_unresolvable_conflict_leaves_both_cards_candidate_and_listed():
    # Two agents worked at the same time: neither session came after the other.
    a = _one(pool_session("s-a", 0, 5, "that keeps the api server within the database limit."))
    b = _one(pool_session("s-b", 0, 20, "5 starved the workers under load."))
    plan = apply_rules([a, b], [])
    by_id = {c.id: c for c in plan.write}
    assert {c.status for c in by_id.values()} == {"candidate"}
    assert plan.conflicts == [tuple(sorted(by_id))]
    for card in by_id.values():
        text = render_card(card)
        assert "status: candidate\n" in text and "gate: unresolved_conflict\n" in text
        (other,) = set(by_id) - {card.id}
        assert f"conflicts_with:\n- {other}\n" in text


def test_a_later_session_settles_a_conflict_by_superseding_both():
    a = _one(pool_session("s-a", 0, 5, "that keeps the api server within the database limit."))
    b = _one(pool_session("s-b", 0, 20, "5 starved the workers under load."))
    c = _one(pool_session("s-c", 9, 12, "measured as the best throughput under load."))
    _, library = _run([a, b])
    plan, _ = _run([c], library)
    by_id = {x.id: x for x in plan.write}
    assert by_id[a[1].id].status == by_id[b[1].id].status == "superseded"
    assert by_id[c[1].id].supersedes == tuple(sorted((a[1].id, b[1].id)))


# --- placeholders, determinism, idempotency -------------------------------------------------------------


def _mixed_drafts():
    return [
        _one(checkout_session("s-1")),
        _one(checkout_session("s-2")),
        *_three_urllib3_sessions(),
        _one(pool_session("s-old", 0, 5, "that keeps the api server within the database limit.")),
        _one(pool_session("s-new", 7, 20, "5 starved the workers under load.")),
        _one(Script("s-cut").user("why does the deploy hang on migrations?", at=2 * DAY)
             .runs("kubectl logs job/migrate").result("waiting for advisory lock 7421 (held by pod api-old-1)")
             .says("The migration waits on an advisory lock held by the old pods, so the fix is therefore")),
    ]


def test_rules_alone_yield_traceable_rule_cards_even_when_incomplete():
    plan = apply_rules(_mixed_drafts(), [])
    assert plan.write
    for card in plan.write:
        assert card.quality == "rule"
        assert card.sources and all(s.session_id and s.host and s.file and s.lines[0] >= 1 for s in card.sources)
    cut = next(c for c in plan.write if c.sources[0].session_id == "s-cut")
    assert cut.status == "incomplete" and cut.gate == "ended_mid_sentence"


def test_applying_the_plan_then_the_same_drafts_again_changes_nothing():
    drafted = _mixed_drafts()
    _, library = _run(drafted)
    before = {c.id: render_card(c) for c in library}
    plan = apply_rules(drafted, library)
    assert plan.write == []
    assert {reason.split()[0] for _, reason in plan.dropped} == {"already_in"}
    assert {c.id: render_card(c) for c in _apply(plan, library)} == before


def test_the_plan_does_not_depend_on_input_order():
    drafted = _mixed_drafts()
    first = [render_card(c) for c in apply_rules(drafted, []).write]
    for seed in range(3):
        shuffled = drafted[:]
        random.Random(seed).shuffle(shuffled)
        assert [render_card(c) for c in apply_rules(shuffled, []).write] == first


def test_drafts_arriving_one_run_at_a_time_end_in_the_same_files_as_one_big_run():
    drafted = _mixed_drafts()
    _, at_once = _run(drafted)
    library: list[Card] = []
    for pair in sorted(drafted, key=lambda p: (p[1].created, p[1].id)):
        _, library = _run([pair], library)
    assert {c.id: c.status for c in library} == {c.id: c.status for c in at_once}
    assert {c.id: len(c.sources) for c in library} == {c.id: len(c.sources) for c in at_once}


def test_no_library_card_is_ever_dropped_from_the_plan_output():
    _, library = _run(_mixed_drafts()[:3])
    plan = apply_rules(_mixed_drafts()[3:], library)
    dropped_ids = {cid for cid, _ in plan.dropped}
    assert not dropped_ids & {c.id for c in library}


def test_a_complete_redraft_of_an_incomplete_placeholder_replaces_it_once():
    cut = (Script("s-cut").user("why does the deploy hang on migrations?")
           .runs("kubectl logs job/migrate").result("waiting for advisory lock 7421 (held by pod api-old-1)")
           .says("The migration waits on an advisory lock held by the old pods, so the fix is therefore"))
    exp, placeholder = _one(cut)
    assert placeholder.status == "incomplete"
    _, library = _run([(exp, placeholder)])
    full_turns = exp.turns[:-1] + (replace(exp.turns[-1], text=exp.turns[-1].text + " to drain the old pods before migrating."),)
    fixed_exp = replace(exp, turns=full_turns)
    fixed = draft_card(fixed_exp)
    assert fixed.id == placeholder.id and fixed.status == "active"
    plan, after = _run([(fixed_exp, fixed)], library)
    assert [c.id for c in plan.write] == [placeholder.id] and plan.counters["refreshed"] == 1
    assert after[0].status == "active" and after[0].conclusion.endswith("before migrating.")
    assert apply_rules([(fixed_exp, fixed)], after).write == []


def test_a_generic_tool_failure_line_is_no_signature_to_merge_on():
    for sig in ("tool call error: tool call failed for `<path>`", "error: Failed to find expected lines [<str>] in <path>"):
        assert merge_signature(Card(id="c-1", error_signature=sig)) == ""
    assert merge_signature(Card(id="c-1", error_signature="TS2345: Argument of type <str> is not assignable"))


def test_a_supersession_by_a_card_the_gates_held_back_is_undone_and_the_old_card_stands():
    """A later night's card that superseded an active one in the rule stage, then failed a gate, proves
    nothing: the active card comes back as it was, and the held card no longer claims to replace it."""
    from memoir.cards.distill.merge import supersede
    from memoir.cards.distill.rules import keep_what_stands

    night_one = draft_card(_one(checkout_session("s-1", day=0))[0])
    held = draft_card(_one(checkout_session("s-2", day=3))[0])
    assert night_one.status == "active"
    old, new = supersede(night_one, held.with_(id="c-later"))
    gated = new.with_(status="candidate", gate="no_unsupported_specifics")
    kept = {c.id: c for c in keep_what_stands([old, gated], {night_one.id: night_one})}
    assert kept[night_one.id] == night_one
    assert kept["c-later"].supersedes == () and "Supersedes" not in kept["c-later"].background
    # an active new card keeps its supersession; a card first drafted in the same run stays superseded
    assert keep_what_stands([old, new], {night_one.id: night_one})[0].status == "superseded"
    assert keep_what_stands([old, gated], {})[0].status == "superseded"
