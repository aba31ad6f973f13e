"""The choices a user makes in conversation: one decision card each.

A long design discussion settles its questions one message at a time, while the experience around
them is one long, often unfinished, task whose own card is a work report or incomplete. Three shapes of
message settle a question, each read from rule tables in every language memoir reads
(`cards.phrasebook_choices`):

- a rule the user states with its reason ("skip the quota check for now, because it is a dynamic
  request"; `cues.stated_choice`): their words are the card, their saying so its proof;
- a short answer to the assistant's question ("C", "可以") whose reply opens by recording what was
  settled ("Settled: …", "敲定：…"; `settled`): that record is the card, with the reason the assistant
  gave before the answer when it fits whole, and the answer its proof. A record that changes nothing
  settles no question;
- a proposal of the user's ("I'd suggest …", "我建议是…") that the reply opens by accepting ("Good idea,
  …"; `accepted_proposal`): their words are the card, the reply's first paragraph what was accepted.

The card spans the assistant's words the user answered, the message, and the reply, so a reader sees
what was chosen between; what the rest of the session says is read as for any card
(`draft.read_past_range`: a later "no, let's not" takes it back).
"""

from __future__ import annotations

import re

from memoir.cards.cues import MAX_STATED, stated_choice
from memoir.cards.draft import draft_card, goal_of
from memoir.cards.phrasebook import ACCEPTS, NO_CHANGE, PROPOSALS, REJECTS, RULE_STATEMENTS, SETTLED, first_rule
from memoir.cards.proof import ACTIVE_KINDS
from memoir.cards.title import clip_title
from memoir.cards.values import Card, Experience, Turn

MAX_STATED_DECISIONS = 10  # per experience: a design review settles a handful of questions, rarely more
USERS_WORDS = "In the user's words: "


_CLAUSE = re.compile(r"(?<=[,;.!])\s+|(?<=[，；。！])")  # not inside `v20.11.1` or `1,000`
_CONNECTIVE = re.compile(r"(?i)^(?:然后|那么|那|所以|另外|and then|then|so|also)[,，\s]*")


def _ruled(words: str) -> str:
    """The user's words from the clause that states the rule on, without a leading "then" ("I think that's
    it, then we should avoid …" names the card by "we should avoid …")."""
    clauses = _CLAUSE.split(words)
    at = next((i for i, c in enumerate(clauses) if first_rule(RULE_STATEMENTS, c)), 0)
    ruled = "".join(c if c[-1:] in "，；。！" else c + " " for c in clauses[at:] if c).strip()
    return _CONNECTIVE.sub("", ruled) or ruled


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


SHOWN = 280  # characters of the words around the choice: the end of what was asked, the start of the reply


def _flat(text: str) -> str:
    return " ".join(text.split())


def _evidence(turns: tuple[Turn, ...], start: int, at: int, end: int) -> str:
    """What was chosen between and what came of it: the end of the assistant's words the user answered
    (where its options and question stand), the user's message, the start of the reply."""
    lines = []
    if start < at:
        asked = _flat(turns[start].text)
        lines.append(f"- [t{turns[start].seq}] asked: " + (asked if len(asked) <= SHOWN else "…" + asked[-SHOWN:]))
    lines.append(f"- [t{turns[at].seq}] the user chose: {_flat(turns[at].text)}")
    if end > at:
        reply = _flat(turns[end].text)
        lines.append(f"- [t{turns[end].seq}] replied: " + (reply if len(reply) <= SHOWN else reply[:SHOWN] + "…"))
    return "\n".join(lines)


MAX_ANSWER = 300  # characters: a longer message than this is a request of its own, not an answer to a question
MAX_SETTLED = 600  # characters of the settled statement kept: the decision, not the next question after it
_BREAK = re.compile(r"\n[ \t]*(?:-{3,}|\*{3,}|#{1,4} )")  # [ \t], not \s: a run of blank lines is scanned once


def settled(reply: str) -> str:
    """What the assistant's reply records as settled ("好，敲定：> **…**", "Agreed: …"), up to the next section
    or question; '' when the reply does not open by naming what was settled."""
    text = reply.strip()
    lead = next((m for r in SETTLED if (m := r.pattern.match(text))), None)
    if lead is None:
        return ""
    block = re.split(r"\n[ \t]*\n", _BREAK.split(text[lead.end():], 1)[0].strip(), maxsplit=1)[0]  # its first paragraph
    block = " ".join(line.strip().lstrip(">").strip() for line in block.splitlines() if line.strip())
    if len(block) > MAX_SETTLED:
        cut = max(block.rfind(end, 0, MAX_SETTLED) for end in ("。", ". ", "！", "! "))
        block = block[:cut + 1] if cut > 0 else ""
    return block if len(block) >= 12 and not block.endswith(("?", "？")) else ""  # an open question settles nothing


MAX_WHY = 400  # characters of the reason the assistant gave before the user agreed; longer is left to the evidence
_WHY = re.compile(r"(?im)^[^\w\n]*(?:理由|原因|关键决策点|决策点|why|reasons?|rationale|key (?:decision )?point|trade-?offs?|"
                  r"porque|raison|grund|reden|důvod|이유)[*_]*\s*[:：]\s*")


def why_given(asked: str) -> str:
    """The reason the assistant's words gave for what it proposed ("理由：1. … 2. …", "Why: …"): its paragraph,
    whole, or '' when there is none or it does not fit."""
    lead = _WHY.search(asked)
    if lead is None:
        return ""
    reason = " ".join(re.split(r"\n[ \t]*\n", asked[lead.end():].strip(), maxsplit=1)[0].split())
    if reason.count("**") % 2 and reason.startswith("**"):
        reason = reason[2:].lstrip()  # the bold that closed the label ("**Why:** …"), not one the reason opens
    return reason if 12 <= len(reason) <= MAX_WHY else ""


def accepted_proposal(message: str, reply: str) -> str:
    """The reply's first paragraph when the user's message proposes how a thing should work ("I'd suggest
    …", "我建议是…") and the reply opens by accepting it ("Good idea: …", "好思路，…"); else ''."""
    text = message.strip()
    if not text or len(text) > MAX_STATED or text.endswith(("?", "？")) or not first_rule(PROPOSALS, text):
        return ""
    if not first_rule(ACCEPTS, reply.strip()[:80]):
        return ""
    first = " ".join(re.split(r"\n[ \t]*\n", reply.strip(), maxsplit=1)[0].split())
    return first if 12 <= len(first) <= MAX_SETTLED else ""


_PROPOSING = re.compile(r"(?i)^.{0,12}?(?:i(?: would|'d)? (?:suggest|propose|recommend)(?: that)?|my (?:suggestion|proposal) is"
                        r"(?: that)?|我的建议是|我建议是|我建议|建议是)[,，:：\s]*")


def _proposed(words: str) -> str:
    """The proposal without its lead ("I'd suggest we watch …" names the card by "we watch …")."""
    return _PROPOSING.sub("", words, count=1) or words


def _plain(text: str) -> str:
    return re.sub(r"\*\*|__", "", text)


def stated_decisions(exp: Experience, drafted: list[tuple[Experience, Card]],
                     min_conclusion_chars: int = 40) -> list[tuple[Experience, Card]]:
    """`drafted` (the experience's cards) and a decision card for each choice the user made in the
    conversation that no card of them already holds: a rule stated with its reason, a short answer the
    reply records as settled, or a proposal the reply accepts (the module docstring). A choice whose span
    is the whole experience takes the place of its card, unless that card is already proven."""
    held = {c.verified_by for _, c in drafted
            if c.extra.get("conclusion_source") in ("users_words", "settled", "proposed")}
    out = list(drafted)
    turns = exp.turns
    for at, turn in enumerate(turns):
        if len(out) - len(drafted) >= MAX_STATED_DECISIONS or not out:
            break
        if turn.role != "user" or turn.kind != "text" or turn.is_sidechain or f"t{turn.seq}" in held:
            continue
        said = stated_choice(turn.text)
        start, end = _span(turns, at)
        answered = start < at < end and len(turn.text.strip()) <= MAX_ANSWER and not first_rule(REJECTS, turn.text)
        record = settled(turns[end].text) if answered else ""
        record = "" if first_rule(NO_CHANGE, record) else record  # keeping things as they are settles nothing
        accepted = accepted_proposal(turn.text, turns[end].text) if end > at and not (said or record) else ""
        if not (said or record or accepted):
            continue
        sub = Experience(exp.host, exp.session_id, turns[start:end + 1], boundary="stated_choice",
                         request=goal_of(exp) or exp.request)
        card = draft_card(sub, min_conclusion_chars, ends_session=False)
        words = " ".join(said.split())
        if record:
            why = why_given(turns[start].text)
            conclusion = record + (f"\n\nWhy: {why}" if why else "") + (f"\n\n{USERS_WORDS}{words}" if said else "")
            title, source = _plain(record), "settled"
            proof = f"the user answered at t{turn.seq}, and the reply at t{turns[end].seq} recorded it as settled"
        elif accepted:
            words = " ".join(turn.text.split())
            conclusion, title, source = f"{USERS_WORDS}{words}\n\nAccepted: {accepted}", _proposed(words), "proposed"
            proof = f"the user proposed it at t{turn.seq}, and the reply at t{turns[end].seq} accepted it"
        else:
            conclusion, title, source = USERS_WORDS + words, _ruled(words), "users_words"
            proof = f"the user stated the choice and its reason at t{turn.seq}"
        decided = (sub, card.with_(
            goal=card.goal if start == at else goal_of(exp) or card.goal, evidence=_evidence(turns, start, at, end),
            status="active", gate="", verified_by=f"t{turn.seq}", conclusion=conclusion, counterexamples="",
            follow_up="", error_signature="", title=clip_title(f"Decision: {title}"),
            extra={**{k: v for k, v in card.extra.items() if k not in ("self_inflicted", "told_by_error")},
                   "kind": "decision", "conclusion_source": source, "proof": proof}))
        if (sub.first_seq, sub.last_seq) != (exp.first_seq, exp.last_seq):
            out.append(decided)
        elif out[0][1].extra.get("kind") not in ACTIVE_KINDS:
            out[0] = decided  # the whole experience is this choice: one card (one id) for its range, the decision
    return out
