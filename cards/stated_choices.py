"""The choices a user states with their reason: one decision card each, in the user's own words.

A long design discussion settles its questions one message at a time ("skip the quota check for
now, because it is a dynamic request"; "we should avoid DRA in identifiers, it is an abbreviation"),
while the experience around them is one long, often unfinished, task whose own card is a work report
or incomplete. Each such message is a decision the user made, with its reason, and their saying so is
its proof (`cues.stated_choice` reads the two halves from rule tables in every language memoir reads).
The card spans the assistant's words the user answered, the message, and the assistant's reply, so a
reader sees what was chosen between; what the rest of the session says is read as for any card
(`draft.read_past_range`: a later "no, let's not" takes it back).
"""

from __future__ import annotations

import re

from memoir.cards.cues import stated_choice
from memoir.cards.draft import draft_card, goal_of
from memoir.cards.phrasebook import RULE_STATEMENTS, first_rule
from memoir.cards.title import clip_title
from memoir.cards.values import Card, Experience, Turn

MAX_STATED_DECISIONS = 4  # per experience: a discussion that states more is a document, not a few choices
USERS_WORDS = "In the user's words: "


_CLAUSE = re.compile(r"(?<=[,，;；.。!！])\s*")


def _ruled(words: str) -> str:
    """The user's words from the clause that states the rule on ("I think that's it, then we should avoid
    …" names the card by "then we should avoid …")."""
    clauses = _CLAUSE.split(words)
    at = next((i for i, c in enumerate(clauses) if first_rule(RULE_STATEMENTS, c)), 0)
    return "".join(c if c[-1:] in "，；。！" else c + " " for c in clauses[at:]).strip()


def _said(turn: Turn) -> bool:
    return turn.role == "assistant" and turn.kind == "text" and bool(turn.text.strip())


def _span(turns: tuple[Turn, ...], at: int) -> tuple[int, int]:
    """From the assistant's last words before the user's message (what they answered) to its first reply
    after it, never past another message of the user's."""
    start = at
    for i in range(at - 1, -1, -1):
        if turns[i].role == "user" and turns[i].kind == "text":
            break
        if _said(turns[i]):
            start = i
            break
    end = at
    for i in range(at + 1, len(turns)):
        if turns[i].role == "user" and turns[i].kind == "text":
            break
        if _said(turns[i]):
            end = i
            break
    return start, end


def stated_decisions(exp: Experience, drafted: list[tuple[Experience, Card]],
                     min_conclusion_chars: int = 40) -> list[tuple[Experience, Card]]:
    """`drafted` (the experience's cards) and a decision card for each choice the user stated with its
    reason that no card of them already holds in the user's words."""
    held = {c.verified_by for _, c in drafted if c.extra.get("conclusion_source") == "users_words"}
    out = list(drafted)
    turns = exp.turns
    for at, turn in enumerate(turns):
        if len(out) - len(drafted) >= MAX_STATED_DECISIONS:
            break
        if turn.role != "user" or turn.kind != "text" or turn.is_sidechain or f"t{turn.seq}" in held:
            continue
        said = stated_choice(turn.text)
        if not said:
            continue
        start, end = _span(turns, at)
        sub = Experience(exp.host, exp.session_id, turns[start:end + 1], boundary="stated_choice",
                         request=goal_of(exp) or exp.request)
        card = draft_card(sub, min_conclusion_chars, ends_session=False)
        words = " ".join(said.split())
        conclusion = USERS_WORDS + words
        out.append((sub, card.with_(
            status="active", gate="", verified_by=f"t{turn.seq}", conclusion=conclusion, counterexamples="",
            follow_up="", error_signature="", title=clip_title(f"Decision: {_ruled(words)}"),
            extra={**{k: v for k, v in card.extra.items() if k not in ("self_inflicted", "told_by_error")},
                   "kind": "decision", "conclusion_source": "users_words",
                   "proof": f"the user stated the choice and its reason at t{turn.seq}"})))
    return out
