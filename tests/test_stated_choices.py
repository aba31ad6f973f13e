"""A choice the user states with its reason is a decision card in their words (`cards.stated_choices`);
a request, a reason alone, a question, or a choice taken back later is not."""

from __future__ import annotations

import pytest

from memoir.cards.cues import stated_choice
from memoir.cards.draft import draft_card, read_past_range, with_inner_lessons
from memoir.cards.quality_gates import decide_status, judge_card
from memoir.cards.quality_inputs import EvidenceView
from memoir.cards.stated_choices import stated_decisions
from memoir.cards.values import Experience
from tests.turns import Script


def _cards(s: Script) -> list:
    """Every card of the script as one experience, after the rest of the session and the gates."""
    exp = Experience(s.host, s.session_id, tuple(s.turns))
    drafted = stated_decisions(exp, with_inner_lessons(exp, draft_card(exp)))
    return [decide_status(c, judge_card(c, EvidenceView.of_experience(e)), model_enabled=False, distilled=False)
            for e, c in read_past_range(tuple(s.turns), drafted)]


def _discussion(choice: str, after: str = "continue with the design doc") -> Script:
    s = Script().user("let's go through the quota design questions one by one")
    s.says("Question 3: requests that list alternatives (firstAvailable) have no fixed size. Option A: count "
           "the first alternative. Option B: skip quota for them and log a warning. Which do you prefer?")
    s.user(choice)
    s.says("Agreed: quota accounting skips firstAvailable requests and logs a warning; recorded as decision 3.")
    s.user(after)
    s.calls("Edit", '{"file_path": "/home/dev/q/docs/design.md", "old_string": "TBD", "new_string": "Decision 3"}')
    return s


@pytest.mark.parametrize("choice", [
    "let's skip the quota check for firstAvailable for now, because it is a dynamic request",
    "先skip firstavailable的配额检查吧，后续再考虑支持（因为这是一个动态的请求）",
    "deberíamos evitar contar firstAvailable por ahora, porque es una petición dinámica",
])
def test_a_choice_stated_with_its_reason_is_an_active_decision_in_the_users_words(choice):
    decided = [c for c in _cards(_discussion(choice)) if c.extra.get("conclusion_source") == "users_words"]
    assert len(decided) == 1
    card = decided[0]
    assert card.extra["kind"] == "decision" and card.status == "active", card.gate
    assert card.conclusion.endswith(" ".join(choice.split()))
    assert card.title.startswith("Decision: ")
    assert card.sources[0].turns == (1, 3)  # the options the user chose between, the choice, the reply


@pytest.mark.parametrize("text", [
    "add a dark mode toggle",  # a request
    "it fails because the port is taken",  # a reason with no rule
    "should we skip firstAvailable because it is dynamic?",  # a question
    "always add tests",  # a rule with no reason
    "/review always because",  # a slash command
])
def test_a_request_a_bare_reason_a_question_or_a_bare_rule_is_no_stated_choice(text):
    assert stated_choice(text) == ""


def test_a_choice_the_user_takes_back_later_is_not_active():
    s = _discussion("let's skip the quota check for firstAvailable for now, because it is a dynamic request",
                    after="no, that's wrong, we need to count them after all")
    decided = [c for c in _cards(s) if c.extra.get("conclusion_source") == "users_words"]
    assert decided and all(c.status != "active" for c in decided)


def test_a_remembered_rule_is_not_carded_twice():
    s = Script().user("remember: always use pnpm, never npm, because the lockfile is pnpm's")
    s.says("Noted: pnpm only in this repo.")
    cards = _cards(s)
    assert len([c for c in cards if c.extra.get("conclusion_source") == "users_words"]) == 1
