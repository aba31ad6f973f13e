"""A choice the user states with its reason is a decision card in their words (`cards.stated_choices`);
a request, a reason alone, a question, or a choice taken back later is not."""

from __future__ import annotations

import pytest

from memoir.cards.cues import stated_choice
from memoir.cards.draft import draft_card, read_past_range, with_inner_lessons
from memoir.cards.quality_gates import decide_status, judge_card
from memoir.cards.quality_inputs import EvidenceView
from memoir.cards.stated_choices import settled, stated_decisions, why_given
from memoir.cards.values import Experience
from tests.turns import Script


def _cards(s: Script) -> list:
    """Every card of the script as one experience, after the rest of the session and the gates."""
    exp = Experience(s.host, s.session_id, tuple(s.turns))
    drafted = stated_decisions(exp, with_inner_lessons(exp, draft_card(exp)))
    return [decide_status(c, judge_card(c, EvidenceView.of_experience(e)), model_enabled=False, distilled=False)
            for e, c in read_past_range(tuple(s.turns), drafted)]


def _decisions(cards: list) -> list:
    return [c for c in cards if c.extra.get("conclusion_source") in ("users_words", "settled", "proposed")]


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
    decided = _decisions(_cards(_discussion(choice)))
    assert len(decided) == 1
    card = decided[0]
    assert card.extra["kind"] == "decision" and card.status == "active", card.gate
    assert card.conclusion.startswith("quota accounting skips firstAvailable requests")  # what the reply settled
    assert card.conclusion.endswith("In the user's words: " + " ".join(choice.split()))
    assert card.title.startswith("Decision: ")
    assert card.sources[0].turns == (1, 3)  # the options the user chose between, the choice, the reply
    assert "Option B: skip quota" in card.evidence and "recorded as decision 3" in card.evidence
    assert card.goal.startswith("let's go through the quota design questions")


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
    decided = _decisions(_cards(s))
    assert decided and all(c.status != "active" for c in decided)


def test_a_remembered_rule_is_not_carded_twice():
    s = Script().user("remember: always use pnpm, never npm, because the lockfile is pnpm's")
    s.says("Noted: pnpm only in this repo.")
    cards = _cards(s)
    assert len(_decisions(cards)) == 1


@pytest.mark.parametrize(("answer", "reply", "carded"), [
    ("C", "Settled:\n\n> **`allocationMode: All` skips the quota check and logs a warning.** Same as firstAvailable."
          "\n\n---\n\n## Question 7", True),
    ("可以", "好，敲定：\n\n> **MVP 跳过 partitionable devices 的自动汇总**，log warning。\n\n---\n\n## 问题 5", True),
    ("C", "Let me look at the scheduler code first.", False),  # the reply records nothing settled
    ("no, not that, count them", "Agreed: counting them after all.", False),  # a rejection is no choice made
    ("agree", "Settled: reuse `status.allocated` as it is; no extra work needed.", False),  # nothing changes
])
def test_a_short_answer_the_reply_records_as_settled_is_a_decision(answer, reply, carded):
    s = Script().user("let's settle the quota questions")
    s.says("Question 6: allocationMode All. A: take the max from ResourceSlices. B: cap at the queue capability. "
           "C: skip the quota check and warn.\n\nReasons: it is a dynamic request like firstAvailable, and All is "
           "rare outside tests.\n\nWhat do you think?")
    s.user(answer)
    s.says(reply)
    decided = _decisions(_cards(s))
    assert bool(decided) == carded
    if carded:
        card = decided[0]
        assert card.status == "active" and card.extra["conclusion_source"] == "settled", card.gate
        assert "Question" not in card.conclusion and "问题" not in card.conclusion  # the next question is not it
        assert "C: skip the quota check" in card.evidence  # what was chosen between
        assert "Why: it is a dynamic request like firstAvailable, and All is rare outside tests." in card.conclusion


def test_decisions_settled_in_one_discussion_do_not_supersede_each_other():
    from memoir.cards.distill.rules import apply_rules

    s = Script().user("let's settle the quota design questions for queue DRA support")
    for n, (option, record) in enumerate((
            ("skip", "`FirstAvailable` requests skip the quota check and log a warning."),
            ("C", "`allocationMode: All` skips the quota check and logs a warning, the same as `FirstAvailable`."))):
        s.says(f"Question {n + 1}: how should quota treat these requests? A: count them. B: reject them. "
               f"C: skip the quota check and warn. What do you think?")
        s.user(option)
        s.says(f"Settled: {record}\n\n---\n\n## Question {n + 2}")
    exp = Experience(s.host, s.session_id, tuple(s.turns))
    drafted = stated_decisions(exp, with_inner_lessons(exp, draft_card(exp)))
    settled = [(e, decide_status(c, judge_card(c, EvidenceView.of_experience(e)), model_enabled=False,
                                 distilled=False)) for e, c in read_past_range(tuple(s.turns), drafted)]
    written = apply_rules([(e, c) for e, c in settled if c.extra.get("kind") == "decision"], []).write
    assert len(written) == 2 and all(c.status == "active" and not c.superseded_by for c in written)


@pytest.mark.parametrize(("asked", "why"), [
    ("B is simpler.\n\n**Why:** the flags drifted between web and worker.\n\nOK?", "the flags drifted between web and worker."),
    ("对比如上。\n\n关键决策点：**方案 A 还没实现弹性抢占**，而方案 B 直接复用。\n\n你倾向于？", "**方案 A 还没实现弹性抢占**，而方案 B 直接复用。"),
    ("Option C is simplest. What do you think?", ""),  # no reason given: the evidence shows what was asked
])
def test_the_reason_given_before_the_answer_is_its_paragraph_whole(asked, why):
    assert why_given(asked) == why


def test_a_settled_record_may_name_its_subject_before_the_colon():
    assert settled("好，敲定命名规范：**避免用 `DRA` 作为前缀。**\n\n对应调整：") == "**避免用 `DRA` 作为前缀。**"
    assert settled("Settled on naming: no `DRA` prefix in identifiers.") == "no `DRA` prefix in identifiers."
    assert settled("I agreed with the plan and started on the cache") == ""


@pytest.mark.parametrize(("message", "reply", "carded"), [
    ("I'd suggest we sum the totals from the ResourceSlices, and let a value set on the root queue win.",
     "Good idea, the same as totalResource does for nodes: cluster totals, with a manual override.\n\nPlan:", True),
    ("我建议是可以watch集群中的真实的resourceSlice，如果手动指定则以指定的为准。",
     "好思路，和现有 totalResource 的逻辑保持一致：从集群汇总，root queue 可以手动 override。\n\n具体方案：", True),
    ("I'd suggest we sum the totals from the ResourceSlices.", "Not a good idea: slices can be partitioned.", False),
    ("add a totals column to the queue status", "Good idea, adding it now.", False),  # a request, not a proposal
])
def test_a_proposal_the_reply_accepts_is_the_users_decision(message, reply, carded):
    s = Script().user("let's settle where the device totals come from")
    s.says("Question 4: the cluster total for device classes. Nodes do not list DRA devices. Where should it come from?")
    s.user(message)
    s.says(reply)
    decided = _decisions(_cards(s))
    assert bool(decided) == carded
    if carded:
        card = decided[0]
        assert card.status == "active" and card.extra["conclusion_source"] == "proposed", card.gate
        assert card.conclusion.startswith("In the user's words: " + " ".join(message.split()))
        assert "\n\nAccepted: " in card.conclusion and "Plan:" not in card.conclusion and "具体方案" not in card.conclusion


def test_a_choice_that_is_the_whole_experience_is_its_one_card_in_the_users_words():
    s = Script().user("asked earlier: which package manager for the web app?")
    s.says("npm or pnpm both work here. Which one?")
    s.user("we should use pnpm, not npm, because the lockfile in the repo is pnpm's")
    s.says("OK.")
    exp = Experience(s.host, s.session_id, tuple(s.turns[1:]))  # the experience is exactly the choice's span
    drafted = stated_decisions(exp, with_inner_lessons(exp, draft_card(exp)))
    assert len({c.id for _, c in drafted}) == len(drafted) == 1  # one id for one range: the decision, not lost
    card = drafted[0][1]
    assert card.extra["conclusion_source"] == "users_words"  # a plain "OK." records nothing: the user's words
    assert card.conclusion == "In the user's words: we should use pnpm, not npm, because the lockfile in the repo is pnpm's"


@pytest.mark.parametrize("text", [
    "The dev server always fails to start because the port is taken. can you look?",
    "it should work now because I restarted",
    "这个测试总是失败，因为端口被占用",
    "it returns null instead of the user because the cache is stale",
])
def test_a_problem_report_with_a_reason_is_no_stated_choice(text):
    assert stated_choice(text) == ""


@pytest.mark.parametrize("reply", [
    "Good idea, but it won't work here: the slices can be partitioned.",
    "Open decision: should we cache the totals?",
    "待确定：缓存方案。",
])
def test_a_reply_that_turns_down_or_leaves_open_makes_no_decision(reply):
    s = Script().user("let's settle where the totals come from")
    s.says("Question 4: where should the device totals come from? A: slices. B: the root queue. What do you think?")
    s.user("I'd suggest we sum the totals from the ResourceSlices.")
    s.says(reply)
    assert _decisions(_cards(s)) == []
