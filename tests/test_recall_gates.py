"""Each of the eleven recall gates rejects, on its own, a candidate that passes every other gate.

Real model, real sqlite-vec, real card files: the variant card is written by `CardStore`,
indexed by `sync_index`, found by `Recaller`, and the debug record in state/recall.jsonl must
name exactly that gate.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from memoir.cards.config import Settings
from memoir.index.db import open_index
from memoir.index.embed import default_embedder
from memoir.index.recall_gates import INJECTED, RECALL_GATE_NAMES
from memoir.index.recall import Recaller
from memoir.index.recall_log import log_path
from memoir.index.sync import sync_index
from tests.recall_cards import (
    BASE, NOW, QUERY, WORKSPACE, entry, fake_aws_key, index_cards, iso, settings_for, variant,
)


@pytest.fixture(scope="module")
def embedder():
    e = default_embedder()
    e.encode_one("warm up")  # the model loads once per test session, outside any budget
    return e


@pytest.fixture
def settings(memoir_home):
    return settings_for(memoir_home)


def recall_one(settings, embedder, card, query=QUERY, workspace=WORKSPACE, session_id=""):
    index_cards(settings, embedder, [card])
    with Recaller(settings, embedder) as r:
        return r.recall(query, workspace=workspace, session_id=session_id, now=NOW, budget_ms=10_000)


def assert_only(result, card_id: str, gate: str, settings) -> None:
    line = entry(result, card_id)
    assert line["failed"] == [gate], line
    assert line["gate"] == gate
    assert card_id not in [c.id for c in result.cards]
    logged = json.loads(log_path(settings.state_dir).read_text().splitlines()[-1])
    assert [c["gate"] for c in logged["candidates"] if c["id"] == card_id] == [gate]


def test_the_base_card_passes_every_gate(settings, embedder):
    result = recall_one(settings, embedder, BASE)
    assert [c.id for c in result.cards] == [BASE.id]
    assert entry(result, BASE.id)["failed"] == []
    assert entry(result, BASE.id)["gate"] == INJECTED
    assert result.record["outcome"] == "injected"


def test_gate_names_are_eleven_and_distinct():
    assert len(RECALL_GATE_NAMES) == 11 == len(set(RECALL_GATE_NAMES))


def test_similarity_below_minimum(settings, embedder):
    card = variant(1, conclusion="Go maps are not safe for concurrent writes; guard the hit counter with a "
                                 "sync.Mutex and verify with go test -race.",
                   counterexamples="A sync.Map Load plus Store is not an atomic increment either.",
                   goal="fatal error: concurrent map writes in the Go hit counter")
    assert_only(recall_one(settings, embedder, card), card.id, "SimilarityBelowMinimum", settings)


def test_status_not_active(settings, embedder):
    card = variant(2, status="candidate")
    assert_only(recall_one(settings, embedder, card), card.id, "StatusNotActive", settings)


def test_conclusion_too_short(settings, embedder):
    card = variant(3, conclusion="Use polling in the container.",
                   counterexamples="uvicorn --reload misses file changes in a Docker Desktop bind mount "
                                   "because watchfiles relies on inotify; native Linux hosts are fine.")
    assert_only(recall_one(settings, embedder, card), card.id, "ConclusionTooShort", settings)


def test_task_type_mismatch(settings, embedder):
    card = variant(4, task_type="refactor")
    result = recall_one(settings, embedder, card, query="fix this: " + QUERY)
    assert result.record["task_type"] == "debug"
    assert_only(result, card.id, "TaskTypeMismatch", settings)


def test_superseded_even_when_status_was_left_active(settings, embedder):
    # A half-applied supersession: the successor is named, the status was never changed.
    card = variant(5, superseded_by="c-00000000000newer")
    assert_only(recall_one(settings, embedder, card), card.id, "Superseded", settings)


def test_unsanitized_content(settings, embedder):
    """memoir writes no secret into a card (the store sanitizes every field), so a person's edit plants it."""
    card = variant(6)
    store = index_cards(settings, embedder, [card])
    path = store.path_for(card.id)
    path.write_text(path.read_text().replace(BASE.evidence, BASE.evidence + f"\n- [t5] result: AWS_ACCESS_KEY_ID {fake_aws_key()}"))
    assert fake_aws_key() in path.read_text()
    with open_index(settings.index_dir, embedder) as index:
        sync_index(store, index)
    with Recaller(settings, embedder) as r:
        result = r.recall(QUERY, workspace=WORKSPACE, now=NOW, budget_ms=10_000)
    assert_only(result, card.id, "UnsanitizedContent", settings)


def test_too_old_for_fast_changing_topic(settings, embedder):
    card = variant(7, topics=("docker", "configuration"), created=iso(200), updated=iso(190))
    assert_only(recall_one(settings, embedder, card), card.id, "TooOldForFastChangingTopic", settings)


def test_old_card_on_a_stable_topic_is_not_too_old(settings, embedder):
    card = variant(8, created=iso(400), updated=iso(400))
    result = recall_one(settings, embedder, card)
    assert entry(result, card.id)["gate"] == INJECTED


def test_already_injected_in_this_session(settings, embedder):
    first = recall_one(settings, embedder, BASE, session_id="sess-42")
    assert [c.id for c in first.cards] == [BASE.id]
    with Recaller(settings, embedder) as r:
        again = r.recall(QUERY, workspace=WORKSPACE, session_id="sess-42", now=NOW, budget_ms=10_000)
        assert_only(again, BASE.id, "AlreadyInjected", settings)
        other = r.recall(QUERY, workspace=WORKSPACE, session_id="sess-43", now=NOW, budget_ms=10_000)
    assert [c.id for c in other.cards] == [BASE.id]


def test_quality_candidate_even_when_status_says_active(settings, embedder):
    # The quality gate held the card back (`gate` set) but a hand edit flipped the status.
    card = variant(9, gate="failure_conditions_stated")
    assert_only(recall_one(settings, embedder, card), card.id, "QualityCandidate", settings)


def test_a_card_the_user_confirmed_passes_the_quality_gate(settings, embedder):
    card = variant(11, gate="failure_conditions_stated", confirmed_by="user")
    assert entry(recall_one(settings, embedder, card), card.id)["gate"] == INJECTED


def test_too_far_from_workspace(settings, embedder):
    card = variant(10, conclusion=BASE.conclusion.replace("the compose service environment",
                                                          "docker/compose.dev.yaml"))
    result = recall_one(settings, embedder, card, workspace="/work/another-project")
    assert_only(result, card.id, "TooFarFromWorkspace", settings)
    with Recaller(settings, embedder) as r:
        near = r.recall(QUERY, workspace=WORKSPACE + "/app", now=NOW, budget_ms=10_000)
    assert [c.id for c in near.cards] == [card.id]


def test_contradicting_candidates_are_never_injected_together(settings, embedder):
    other = variant(11, conclusion=BASE.conclusion.replace("WATCHFILES_FORCE_POLLING=true",
                                                           "WATCHFILES_FORCE_POLLING=false"))
    index_cards(settings, embedder, [BASE, other])
    with Recaller(settings, embedder) as r:
        result = r.recall(QUERY, workspace=WORKSPACE, now=NOW, budget_ms=10_000)
    assert result.cards == ()
    for card_id in (BASE.id, other.id):
        assert entry(result, card_id)["failed"] == ["ContradictsCandidate"]
        assert "watchfiles_force_polling" in entry(result, card_id)["detail"]


@pytest.mark.parametrize("query, a, b", [
    ("sync.Map for the hit counter in the redirect handler",
     "Use `sync.Map` for the hit counter in the redirect handler so concurrent writes are safe.",
     "Don't use `sync.Map` for the hit counter in the redirect handler: its Load+Store is not atomic."),
    ("WAL mode for the sqlite database",
     "Enable WAL mode for the sqlite database so readers do not queue behind the writer.",
     "Disable WAL mode for the sqlite database: it does not work on the NFS share."),
])
def test_contradiction_heuristics_cover_polarity(settings, embedder, query, a, b):
    one = variant(12, conclusion=a, counterexamples="", goal=a)
    two = variant(13, conclusion=b, counterexamples="", goal=b)
    index_cards(settings, embedder, [one, two])
    with Recaller(settings, embedder) as r:
        result = r.recall(query, workspace=WORKSPACE, now=NOW, budget_ms=10_000)
    assert result.cards == ()
    assert entry(result, one.id)["gate"] == "ContradictsCandidate"
    assert entry(result, two.id)["gate"] == "ContradictsCandidate"


# --- issue 16: the gates decide on evidence, not on tags (pure: Candidate literals, no model) ------

from memoir.index.recall_gates import (  # noqa: E402
    Candidate, GatePolicy, RecallQuery, SimilarityBelowMinimum, TooOldForFastChangingTopic, fast_changing_fact,
    judge, prefer_newer,
)


def cand(card_id: str = "c-1", **changes) -> Candidate:
    base = dict(id=card_id, status="active", quality="rule", gate="", task_type="debug", workspace=WORKSPACE,
                topics=(), error_signature="", superseded_by="", conclusion=BASE.conclusion,
                counterexamples="", body="", age_days=5.0, similarity=0.6, rrf=0.03, knn_rank=1, fts_rank=1,
                coverage=0.5)
    base.update(changes)
    return Candidate(**base)


def test_the_card_both_paths_rank_first_clears_the_lower_agreed_floor():
    # A pasted one-line error against a long conclusion: 0.30-0.43 while both paths rank it first.
    p, q = GatePolicy.from_settings(Settings()), RecallQuery(text="E0502", best_similarity=0.6)
    assert not SimilarityBelowMinimum(cand(similarity=0.31), q, p)
    assert SimilarityBelowMinimum(cand(similarity=0.29), q, p)
    assert SimilarityBelowMinimum(cand(similarity=0.40, knn_rank=2), q, p)  # not agreed: plain floor
    assert SimilarityBelowMinimum(cand(similarity=0.40, fts_rank=None), q, p)
    # In a small index any card FTS finds ranks first on both paths: it must share the query's terms.
    assert SimilarityBelowMinimum(cand(similarity=0.40, coverage=0.0), q, p)


@pytest.mark.parametrize("conclusion, fact", [
    ("Pin the helm provider with version = \"~> 2.17\" until the set blocks are rewritten.", "2.17"),
    ("Set WATCHFILES_FORCE_POLLING=true in the compose service.", "watchfiles_force_polling=true"),
    ("Bumped pydantic to 2.9 and moved BaseSettings to pydantic-settings.", "2.9"),
    ("Add flyway-database-postgresql; Flyway 10 split the database support into modules.", ""),
    ("The dependency tree lost the linux optional packages; regenerate the lockfile on linux.", ""),
])
def test_a_fast_changing_fact_is_a_pinned_version_or_a_config_value(conclusion, fact):
    found = fast_changing_fact(conclusion)
    assert (fact in found) if fact else found == ""


def test_an_old_card_tagged_configuration_expires_only_when_it_states_a_fast_changing_fact():
    p, q = GatePolicy.from_settings(Settings()), RecallQuery(text="x")
    tagged = dict(topics=("configuration", "dependencies"), age_days=200.0)
    assert not TooOldForFastChangingTopic(cand(conclusion="Regenerate the lockfile on linux so the optional "
                                                          "native packages for every platform are listed.",
                                               **tagged), q, p)
    assert TooOldForFastChangingTopic(cand(conclusion="Pin the provider to ~> 2.17.", **tagged), q, p)
    assert not TooOldForFastChangingTopic(cand(conclusion="Pin the provider to ~> 2.17.", topics=("docker",),
                                               age_days=200.0), q, p)


def test_a_persons_confirmation_or_edit_renews_a_fast_changing_card():
    p, q = GatePolicy.from_settings(Settings()), RecallQuery(text="x")
    old = cand(conclusion="Pin the provider to ~> 2.17.", topics=("versions",), age_days=200.0)
    assert TooOldForFastChangingTopic(old, q, p)
    assert not TooOldForFastChangingTopic(old.__class__(**{**_fields(old), "confirmed_by": "user"}), q, p)
    assert not TooOldForFastChangingTopic(old.__class__(**{**_fields(old), "hand_edited": True}), q, p)


def _fields(c: Candidate) -> dict:
    return {f: getattr(c, f) for f in c.__slots__}


def test_the_newer_verified_card_for_the_same_signature_wins_and_both_are_never_injected():
    sig = "panic: runtime error: index out of range [3] with length 1"
    older = cand("c-old", error_signature=sig, age_days=30.0, similarity=0.62, knn_rank=1, fts_rank=1, rrf=0.033)
    newer = cand("c-new", error_signature=sig, age_days=3.0, similarity=0.50, knn_rank=2, fts_rank=2, rrf=0.032,
                 verified=True)
    ranked = prefer_newer([older, newer])
    assert ranked[0].superseded_by == "c-new"
    assert (ranked[1].similarity, ranked[1].knn_rank, ranked[1].fts_rank) == (0.62, 1, 1)
    out = judge(ranked, RecallQuery(text=sig, workspace=WORKSPACE), GatePolicy.from_settings(Settings()))
    assert [j.candidate.id for j in out if j.gate == INJECTED] == ["c-new"]
    assert [j.gate for j in out if j.candidate.id == "c-old"] == ["Superseded"]


def test_an_unverified_newer_card_or_another_workspace_does_not_replace_the_older_one():
    sig = "Error acquiring the state lock"
    older = cand("c-old", error_signature=sig, age_days=30.0)
    assert prefer_newer([older, cand("c-new", error_signature=sig, age_days=3.0)])[0].superseded_by == ""
    elsewhere = cand("c-new", error_signature=sig, age_days=3.0, verified=True, workspace="/work/other")
    assert prefer_newer([older, elsewhere])[0].superseded_by == ""


def test_the_card_that_names_the_pasted_error_clears_the_agreed_floor_and_cards_for_other_errors_go():
    sig = "panic: runtime error: index out of range [<n>] with length <n>"
    right = cand("c-right", error_signature=sig, similarity=0.43, knn_rank=3, fts_rank=1, rrf=0.0323)
    other = cand("c-other", error_signature="panic: assignment to entry in nil map", similarity=0.46,
                 knn_rank=2, fts_rank=5, rrf=0.0315)
    plain = cand("c-plain", similarity=0.47, knn_rank=4, fts_rank=4, rrf=0.0312)
    out = judge([right, other, plain], RecallQuery(text=sig, signature=sig), GatePolicy.from_settings(Settings()))
    assert {j.candidate.id: j.gate for j in out} == {
        "c-right": INJECTED, "c-other": "SimilarityBelowMinimum", "c-plain": INJECTED}
    # Without the pasted error nothing names it: the usual floor and margin decide.
    out = judge([right, other, plain], RecallQuery(text="the tides import panics"), GatePolicy.from_settings(Settings()))
    assert {j.candidate.id: j.gate for j in out} == {
        "c-right": "SimilarityBelowMinimum", "c-other": INJECTED, "c-plain": INJECTED}


# --- issue 24, mechanism 9: recall ranks only what it may inject (pure: Candidate literals) -------


def _injected(out) -> list[str]:
    return [j.candidate.id for j in out if j.gate == INJECTED]


def test_an_ineligible_card_at_rank_one_does_not_keep_the_eligible_card_from_the_agreement():
    # A held-back card tops both paths, no closer in meaning; the active card is second on both.
    # Counted over what may be injected, the active card is first on both: the agreed floor applies.
    held = cand("c-held", status="candidate", gate="NoVerification", similarity=0.40, knn_rank=1, fts_rank=1)
    active = cand("c-active", similarity=0.36, knn_rank=2, fts_rank=2, rrf=0.032)
    out = judge([held, active], RecallQuery(text="q", workspace=WORKSPACE), GatePolicy.from_settings(Settings()))
    assert _injected(out) == ["c-active"]
    assert {j.candidate.id: j.gate for j in out}["c-held"] == "StatusNotActive"
    ranked = next(j.candidate for j in out if j.candidate.id == "c-active")
    assert (ranked.knn_rank, ranked.fts_rank) == (1, 1)


def test_a_superseded_card_at_rank_one_does_not_lend_its_rank_to_a_neighbour():
    # The superseded card and an unrelated neighbour: the neighbour was second on the vector path
    # only, and stays a vector-only card that must be a near-paraphrase.
    old = cand("c-old", superseded_by="c-new", similarity=0.7, knn_rank=1, fts_rank=1)
    neighbour = cand("c-near", similarity=0.55, knn_rank=2, fts_rank=None, rrf=0.016)
    out = judge([old, neighbour], RecallQuery(text="q"), GatePolicy.from_settings(Settings()))
    assert _injected(out) == []


def test_ranks_past_each_paths_k_among_eligible_cards_are_dropped():
    # The recaller fetches a wider pool; what survives is what an index of eligible cards would give.
    held = [cand(f"c-h{i}", status="incomplete", knn_rank=i, fts_rank=None) for i in (1, 2)]
    a = cand("c-a", knn_rank=3, fts_rank=None, similarity=0.9)
    b = cand("c-b", knn_rank=4, fts_rank=None, similarity=0.9)
    out = judge(held + [a, b], RecallQuery(text="q"), GatePolicy.from_settings(Settings(max_injected=5)), 60, (1, 1))
    assert _injected(out) == ["c-a"]
    assert "c-b" not in {j.candidate.id for j in out}


def test_a_same_signature_card_from_another_project_gets_no_lowered_floor():
    sig = "Error: another operation (<path>) is in progress"
    p = GatePolicy.from_settings(Settings())
    q = RecallQuery(text=sig, workspace=WORKSPACE, signature=sig, best_similarity=0.36)
    here = cand("c-here", error_signature=sig, similarity=0.36, knn_rank=2, fts_rank=3)
    there = cand("c-there", error_signature=sig, similarity=0.36, knn_rank=2, fts_rank=3, workspace="/work/other")
    assert not SimilarityBelowMinimum(here, q, p)
    assert SimilarityBelowMinimum(there, q, p)


def test_a_same_signature_card_from_another_project_does_not_push_this_projects_cards_out():
    sig = "panic: runtime error: index out of range [<n>] with length <n>"
    there = cand("c-there", error_signature=sig, workspace="/work/other", similarity=0.5, knn_rank=1, fts_rank=1)
    here = cand("c-here", error_signature="FAIL: TestImport", similarity=0.55, knn_rank=2, fts_rank=2, rrf=0.032)
    out = judge([there, here], RecallQuery(text=sig, workspace=WORKSPACE, signature=sig),
                GatePolicy.from_settings(Settings()))
    assert "c-here" in _injected(out)


def test_a_card_whose_signature_is_an_error_met_on_the_way_is_not_about_another_error():
    # Its signature field names a failing test; its conclusion explains the pasted error itself.
    sig = "database is locked (<n>) (SQLITE_BUSY)"
    right = cand("c-right", error_signature=sig, similarity=0.5, knn_rank=1, fts_rank=1)
    on_the_way = cand("c-way", error_signature="FAIL: TestSettleConcurrent", similarity=0.5, knn_rank=2,
                      fts_rank=2, rrf=0.032, conclusion=f"Writers failed with `{sig}`: add a busy timeout to the DSN.")
    other = cand("c-other", error_signature="FAIL: TestMigrate", similarity=0.5, knn_rank=3, fts_rank=3, rrf=0.031)
    out = judge([right, on_the_way, other], RecallQuery(text=sig, signature=sig),
                GatePolicy.from_settings(Settings(max_injected=5)))
    assert {j.candidate.id: j.gate for j in out} == {
        "c-right": INJECTED, "c-way": INJECTED, "c-other": "SimilarityBelowMinimum"}


from memoir.index.candidates import coverage_text, lexical_coverage, subject_terms  # noqa: E402
from memoir.index.plan import retrieval_text  # noqa: E402


def test_a_question_in_words_needs_a_subject_term_in_common_with_the_card():
    p = GatePolicy.from_settings(Settings())
    question = RecallQuery(text="where do we keep uploaded avatars", best_similarity=0.5)
    # A neighbour in meaning only (same stack, no shared subject term) stays out ...
    assert SimilarityBelowMinimum(cand(similarity=0.5, fts_rank=3, coverage=0.0), question, p)
    # ... unless it is a near-paraphrase, or the card shares the question's subject terms.
    assert not SimilarityBelowMinimum(cand(similarity=0.72, fts_rank=3, coverage=0.0), question, p)
    assert not SimilarityBelowMinimum(cand(similarity=0.5, fts_rank=3, coverage=0.5), question, p)
    # A pasted error that shares terms with the card is judged by the error rules; one that shares
    # none is a neighbour too (`test_a_pasted_error_that_shares_no_term_with_the_card_needs_a_near_paraphrase`).
    pasted = RecallQuery(text="KeyError: <str>", signature="KeyError: <str>", best_similarity=0.5)
    assert not SimilarityBelowMinimum(cand(similarity=0.5, fts_rank=3, coverage=0.5), pasted, p)
    # Words every session uses are no subject; the card's goal (the asker's words) counts.
    assert subject_terms(["fix", "error", "n", "uploaded", "avatars"]) == ["uploaded", "avatars"]
    card = BASE.with_(goal="where do uploaded avatars end up?")
    assert lexical_coverage(["uploaded", "avatars"], retrieval_text(card)) == 0.0
    assert lexical_coverage(["uploaded", "avatars"], coverage_text(card, retrieval_text(card))) == 1.0
    # An identifier's parts are terms of the card, and a one-term question needs that one term.
    assert lexical_coverage(["broker"], "set CELERY_BROKER_URL to memory://") == 1.0


def test_second_on_both_paths_to_a_held_back_card_is_its_neighbour_not_an_agreed_answer():
    # The held-back card is what the question is about (far closer); the active card next to it on
    # both paths must not come in at the agreed floor because the held-back one left rank 1 to it.
    held = cand("c-held", status="incomplete", similarity=0.7, knn_rank=1, fts_rank=1)
    neighbour = cand("c-near", similarity=0.36, knn_rank=2, fts_rank=2, rrf=0.032)
    out = judge([held, neighbour], RecallQuery(text="q"), GatePolicy.from_settings(Settings()))
    assert _injected(out) == []
    # First on one path over every card, and first on both among eligible ones: agreed.
    lexical_first = cand("c-lex", similarity=0.36, knn_rank=2, fts_rank=1, rrf=0.032)
    out = judge([replace(held, fts_rank=2), lexical_first], RecallQuery(text="q"), GatePolicy.from_settings(Settings()))
    assert _injected(out) == ["c-lex"]


# --- issue 24, mechanism 9: the subject of a card, opposite advice, stale links (pure) -------------

from memoir.index.candidates import names_pasted_error, pasted_error  # noqa: E402


def test_a_pasted_error_is_its_class_and_message_and_a_sentence_is_none():
    assert pasted_error("ConnectionError: Error -<n> connecting to redis:<n>. Name or service not known.") == (
        "ConnectionError", ("error", "connecting", "redis", "name", "service", "known"))
    assert pasted_error("error: future cannot be sent between threads safely")[0] == ""  # a bare "error:"
    assert pasted_error("vitest tests in a new workspace package can't find the DOM") is None
    assert pasted_error("go: modernc.org/sqlite@v<n> requires go >= <n>") is None  # a log prefix, no failure kind


def test_a_card_names_the_pasted_error_by_its_class_and_most_of_its_message():
    pasted = pasted_error("ReferenceError: window is not defined")
    assert names_pasted_error(pasted, "vitest ran in node, where `window` is not defined (ReferenceError)")
    assert not names_pasted_error(pasted, "ReferenceError: document is not defined: run vitest in jsdom")
    assert not names_pasted_error(pasted, "Next compiles the ui package once transpilePackages names it")
    assert names_pasted_error(None, "anything at all")


def test_a_card_holding_only_the_namespace_of_the_name_a_query_asks_about_gets_no_agreed_floor():
    from memoir.index.candidates import holds_a_name, query_names
    q = "Received unregistered task of type 'shop.tasks.notify_front_desk'. The message has been ignored."
    names = query_names(q)
    assert names == ("shop.tasks.notify_front_desk",)
    assert not holds_a_name(names, "The worker drops `shop.tasks.send_receipt` when the flag is off")
    assert holds_a_name(names, "register shop.tasks.notify_front_desk in CELERY_IMPORTS")
    assert holds_a_name(query_names("why does the nightly batch run twice?"), "anything")
    assert query_names("ReferenceError: document is not defined\n ❯ src/CartDrawer.test.tsx:21:5") == ()
    neighbour = cand("c-neighbour", similarity=0.36, knn_rank=1, fts_rank=1, coverage=0.4, names_identifier=False)
    out = judge([neighbour], RecallQuery(text=q, workspace=WORKSPACE), GatePolicy.from_settings(Settings()))
    assert out[0].gate != INJECTED
    named = cand("c-named", similarity=0.36, knn_rank=1, fts_rank=1, coverage=0.4)
    out = judge([named], RecallQuery(text=q, workspace=WORKSPACE), GatePolicy.from_settings(Settings()))
    assert out[0].gate == INJECTED


def test_a_verified_card_names_the_error_its_check_cleared_even_when_the_lesson_does_not_repeat_it():
    from memoir.index.recall_policy import card_about as _about
    sig = "IndexError: list index out of range"
    lesson = "partition() assumed every day has a row; it now skips empty days before taking the first"
    verified = replace(BASE, error_signature=sig, conclusion=lesson, counterexamples="", verified_by="t7")
    assert names_pasted_error(pasted_error(sig), _about(verified))
    unverified = replace(verified, verified_by="")  # a signature alone may be an error met on the way
    assert not names_pasted_error(pasted_error(sig), _about(unverified))


def test_a_card_about_another_error_is_neither_agreed_nor_a_rival_for_rank():
    # Both paths rank the neighbour first (same stack, same words); it never names the pasted class.
    # Counted without it, the card that does name it is first on both paths and clears the agreed floor.
    sig = "ReferenceError: document is not defined"
    neighbour = cand("c-neighbour", similarity=0.45, knn_rank=1, fts_rank=None, names_error=False)
    right = cand("c-right", similarity=0.41, knn_rank=2, fts_rank=1, coverage=0.43)
    out = judge([neighbour, right], RecallQuery(text=sig, workspace=WORKSPACE, signature=sig),
                GatePolicy.from_settings(Settings()))
    assert _injected(out) == ["c-right"]
    assert {j.candidate.id: j.gate for j in out}["c-neighbour"] == "SimilarityBelowMinimum"


def test_an_error_the_card_only_met_on_the_way_earns_no_lowered_floor():
    # The card's signature field holds the pasted error, but its own words are about something else.
    sig = "panicked: Cannot drop a runtime in a context where blocking is not allowed."
    p, q = GatePolicy.from_settings(Settings()), RecallQuery(text=sig, workspace=WORKSPACE, signature=sig)
    assert SimilarityBelowMinimum(cand(error_signature=sig, similarity=0.5, names_error=False), q, p)
    assert not SimilarityBelowMinimum(cand(error_signature=sig, similarity=0.5), q, p)


def test_another_projects_card_gets_no_agreed_floor():
    p, q = GatePolicy.from_settings(Settings()), RecallQuery(text="helm upgrade field is immutable", workspace=WORKSPACE)
    assert not SimilarityBelowMinimum(cand(similarity=0.35), q, p)
    assert SimilarityBelowMinimum(cand(similarity=0.35, workspace="/work/other-infra"), q, p)


def test_a_newer_card_that_takes_an_older_ones_advice_back_is_injected_without_it():
    older = cand("c-env", age_days=60.0, conclusion="Per-store flags live in env vars: set `SHOP_FLAG_GIFT_WRAP` "
                                                    "in the web and worker deployments.")
    newer = cand("c-table", age_days=2.0, rrf=0.029, conclusion="Per-store flags moved from the `SHOP_FLAG_*` env "
                                                                "vars to table `shop_storefeatureflag`; flip them "
                                                                "in the admin.")
    out = judge([older, newer], RecallQuery(text="where do we turn a store flag on", workspace=WORKSPACE),
                GatePolicy.from_settings(Settings()))
    gates = {j.candidate.id: j.gate for j in out}
    assert gates == {"c-env": "ContradictsCandidate", "c-table": INJECTED}


def test_two_cards_with_opposite_advice_and_no_retraction_are_never_injected_together():
    a = cand("c-a", age_days=30.0, conclusion="Don't use `sync.Map` for the limiter; a plain mutex is simpler.")
    b = cand("c-b", age_days=3.0, rrf=0.029, conclusion="Use `sync.Map` for the limiter's per-host buckets.")
    out = judge([a, b], RecallQuery(text="limiter map", workspace=WORKSPACE), GatePolicy.from_settings(Settings()))
    assert _injected(out) == []


def test_a_card_holding_none_of_the_querys_distinctive_terms_needs_a_near_paraphrase():
    p, q = GatePolicy.from_settings(Settings()), RecallQuery(text="spec.selector is immutable on helm upgrade",
                                                             workspace=WORKSPACE, best_similarity=0.5)
    assert not SimilarityBelowMinimum(cand(similarity=0.48), q, p)
    assert SimilarityBelowMinimum(cand(similarity=0.48, shares_subject=False), q, p)  # agreed, but only "helm"
    assert not SimilarityBelowMinimum(cand(similarity=0.72, shares_subject=False), q, p)


def test_another_projects_card_is_no_rival_for_the_agreement_unless_it_is_far_closer():
    # Asked in this workspace: this project's card is first on both paths among this project's
    # cards, another project's card splits the ranks with it at about the same distance.
    p = GatePolicy.from_settings(Settings())
    here = cand("c-here", similarity=0.43, knn_rank=1, fts_rank=2, rrf=0.032)
    there = cand("c-there", similarity=0.42, knn_rank=2, fts_rank=1, rrf=0.032, workspace="/work/other")
    out = judge([here, there], RecallQuery(text="q", workspace=WORKSPACE), p)
    assert _injected(out) == ["c-here"]
    # The other project's card far closer in meaning: this one is its neighbour, no agreement.
    far = cand("c-there", similarity=0.72, knn_rank=1, fts_rank=1, rrf=0.033, workspace="/work/other")
    near_one = cand("c-here", similarity=0.43, knn_rank=2, fts_rank=2, rrf=0.032)
    out = judge([far, near_one], RecallQuery(text="q", workspace=WORKSPACE), p)
    assert "c-here" not in _injected(out)


def test_a_card_that_shares_words_but_no_meaning_is_no_rival_for_the_agreement():
    # The right card is first by meaning and second by words; the card first by words is far from
    # the query in meaning (below the lowest floor any rule applies): no rule could inject it.
    p = GatePolicy.from_settings(Settings())
    right = cand("c-right", similarity=0.44, knn_rank=1, fts_rank=2, rrf=0.032)
    wordy = cand("c-wordy", similarity=0.22, knn_rank=2, fts_rank=1, rrf=0.032)
    out = judge([right, wordy], RecallQuery(text="q", workspace=WORKSPACE), p)
    assert _injected(out) == ["c-right"]
    # Without a model, similarity is lexical coverage: the rule does not apply.
    lexical = judge([right, wordy], RecallQuery(text="q", workspace=WORKSPACE, lexical=True), p)
    assert "c-wordy" not in _injected(lexical)


def test_a_pasted_error_that_shares_no_term_with_the_card_needs_a_near_paraphrase():
    # The card is about the same library (its words are near), but holds none of the pasted
    # error's search terms: a neighbour in meaning, as for a question in words.
    p = GatePolicy.from_settings(Settings())
    sig = "reqwest::Error: { kind: Builder, source: RelativeUrlWithoutBase }"
    q = RecallQuery(text=sig, workspace=WORKSPACE, signature=sig, best_similarity=0.47)
    assert SimilarityBelowMinimum(cand(similarity=0.47, coverage=0.0, knn_rank=1, fts_rank=1), q, p)
    assert not SimilarityBelowMinimum(cand(similarity=0.47, coverage=0.4, knn_rank=1, fts_rank=1), q, p)


def test_the_secret_scan_runs_only_for_a_candidate_no_other_gate_keeps_out():
    """The scan is most of the gates' CPU: a card another gate rejects is not scanned, and one every
    other gate lets through still is (and is held back by it)."""
    from memoir.index.recall_gates import _sensitive
    from tests.recall_cards import fake_aws_key

    secret = f"- [t5] result: AWS_ACCESS_KEY_ID {fake_aws_key()}"
    _sensitive.cache_clear()
    policy = GatePolicy.from_settings(Settings())
    far = cand("c-far", similarity=0.05, knn_rank=9, fts_rank=None, body="far " + secret)
    held = cand("c-held", status="candidate", body="held " + secret)
    near = cand("c-near", body="near " + secret)
    out = {j.candidate.id: j for j in judge([far, held, near], RecallQuery(text="q", workspace=WORKSPACE), policy)}
    assert out["c-far"].failed == ("SimilarityBelowMinimum",)
    assert out["c-held"].failed[0] == "StatusNotActive" and "UnsanitizedContent" not in out["c-held"].failed
    assert out["c-near"].failed == ("UnsanitizedContent",) and out["c-near"].gate == "UnsanitizedContent"
    assert _sensitive.cache_info().currsize == 1  # only the card nothing else kept out was scanned
