"""The pure decisions of the index: change plans, retrieval text, safe FTS expressions."""

from __future__ import annotations

import pytest

from memoir.cards.values import Card
from memoir.index.plan import (
    RETRIEVAL_MAX_CHARS,
    IndexPlan,
    choose_fts_terms,
    fts_match_expression,
    plan_index_changes,
    retrieval_text,
    term_tokens,
)


def test_plan_adds_updates_removes_and_skips_same_hash():
    plan = plan_index_changes({"a": "1", "b": "2", "c": "3"}, {"b": "2", "c": "old", "d": "4"})
    assert plan == IndexPlan(add=("a",), update=("c",), remove=("d",))
    assert plan.changed == ("a", "c")


def test_plan_is_empty_when_every_hash_is_indexed():
    assert plan_index_changes({"a": "1"}, {"a": "1"}).empty


def test_retrieval_text_has_conclusion_failures_signature_topics_but_never_evidence():
    card = Card(id="c-1", conclusion="Clone the Vec.", counterexamples="Type is Copy.",
                error_signature="E0382: moved", topics=("rust", "borrow"), evidence="SECRET-EVIDENCE")
    text = retrieval_text(card)
    assert "Clone the Vec." in text and "Fails when: Type is Copy." in text
    assert "E0382" in text and "Topics: rust, borrow" in text
    assert "SECRET-EVIDENCE" not in text


def test_retrieval_text_leads_with_the_title_a_later_question_resembles():
    card = Card(id="c-1", title="`E0382: use of moved value`: clone the Vec before the loop", conclusion="Clone it.")
    assert retrieval_text(card).startswith("`E0382: use of moved value`: clone the Vec before the loop\nClone it.")
    assert retrieval_text(Card(id="c-2", conclusion="Clone it.")).startswith("Clone it.")  # no title: unchanged


def test_retrieval_text_is_capped():
    assert len(retrieval_text(Card(id="c-1", conclusion="x" * 10_000))) == RETRIEVAL_MAX_CHARS


def test_fts_expression_quotes_every_term_and_drops_stopwords():
    assert fts_match_expression("how do I fix E0382 in foo.bar") == '"fix" OR "E0382" OR "foo.bar"'


@pytest.mark.parametrize("query", ['"', "()", "*", "-", ":", "  ", "the and of", "^*:-"])
def test_fts_expression_is_none_without_a_word(query):
    assert fts_match_expression(query) is None


def test_fts_expression_keeps_config_keys_and_escapes_nothing_dangerous():
    expr = fts_match_expression('set max_connections; "compilerOptions.strict" (NEAR) col:val -x*')
    assert expr == '"set" OR "max_connections" OR "compilerOptions.strict" OR "NEAR" OR "col" OR "val" OR "x"'


def test_rarest_terms_are_kept_within_the_postings_budget():
    counts = [("the", 900), ("E0382", 3), ("client", 400), ("nowhere", 0), ("timeout", 120)]
    assert choose_fts_terms(counts, budget=600) == ["E0382", "timeout", "client"]
    assert choose_fts_terms(counts, budget=100) == ["E0382"]
    assert choose_fts_terms([("common", 5000)], budget=10) == ["common"]  # the rarest always stays
    assert choose_fts_terms([("nowhere", 0)]) == []


def test_term_tokens_follow_the_tokenizer():
    assert term_tokens("compilerOptions.strict") == ("compileroptions", "strict")
    assert term_tokens("max_connections") == ("max_connections",)
