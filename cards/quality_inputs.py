"""What the quality gates read: a card's source turns with who said them, and the word helpers.

`EvidenceView` is the gates' view of an experience (thinking dropped, roles kept); the word and
similarity helpers are shared by several gates and by the model stage's duplicate check.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from memoir.cards.phrasebook import CONFIRMS, UNCONFIRMED, first_rule
from memoir.cards.values import Experience, Turn

Similarity = Callable[[str, str], float]


@dataclass(frozen=True, slots=True)
class EvidenceTurn:
    """A source turn as the gates see it: who said it, what kind, and the text."""

    role: str
    kind: str
    text: str
    seq: int = -1  # the turn's number in its session, when known

    @property
    def typed_by_user(self) -> bool:
        # Claude Code logs tool results under the user role; only user *text* is the user's words.
        return self.role == "user" and self.kind == "text"


@dataclass(frozen=True, slots=True)
class EvidenceView:
    """The text of a card's source turns, with roles, so gates can ask who said what."""

    turns: tuple[EvidenceTurn, ...] = ()

    @classmethod
    def of(cls, turns: Iterable[Turn]) -> EvidenceView:
        return cls(tuple(EvidenceTurn(t.role, t.kind, t.text, t.seq) for t in turns if t.kind != "thinking"))

    @classmethod
    def of_experience(cls, exp: Experience) -> EvidenceView:
        return cls.of(exp.turns)

    @property
    def text(self) -> str:
        return "\n".join(t.text for t in self.turns)

    @property
    def user_words(self) -> tuple[str, ...]:
        return tuple(t.text for t in self.turns if t.typed_by_user)

    def user_confirmation(self, conclusion: str) -> str:
        """The user's own words confirming the experience's answer, which `conclusion` states ('' when
        none did): a short reply after the assistant's first answer such as "that worked" or
        "confirmed, the build is green". The last word counts: a later "still fails" takes an earlier
        "works now" back. A conclusion written after the user's "this worked" restates what they confirmed."""
        turn = self.confirming_turn(conclusion)
        return " ".join(turn.text.split()) if turn else ""

    def confirming_turn(self, conclusion: str) -> EvidenceTurn | None:
        """The user's turn behind `user_confirmation`, or None."""
        anchor = _first_answer(self.turns)
        if anchor is None or not conclusion.strip():
            return None
        found = None
        for turn in self.turns[anchor + 1:]:
            if turn.typed_by_user:
                text = " ".join(turn.text.split())
                if first_rule(UNCONFIRMED, text) or len(text) > MAX_CONFIRMATION_CHARS:
                    found = None  # "that didn't work", or a new request: the answer is not confirmed by it
                elif first_rule(CONFIRMS, text):
                    found = turn
        return found


# The user saying the answer worked, in their own words and any language (`cards.phrasebook.CONFIRMS`);
# a negation or a "but" undoes it (`UNCONFIRMED`).
MAX_CONFIRMATION_CHARS = 300  # a confirmation is a short reply, not a new request with a "works" in it


def _first_answer(turns: Sequence[EvidenceTurn]) -> int | None:
    """Index of the assistant's first text: the user's word after it is about this experience's answer."""
    return next((i for i, t in enumerate(turns) if t.role == "assistant" and t.kind == "text"), None)


# A conclusion that says itself that nothing checked it: "not tested yet", "needs the DNS record
# checked", "one lead: …", "I can't change X from here". A green run elsewhere does not check it.
_SAYS_UNCHECKED = re.compile(
    r"(?i)(?<!\bdo )(?<!\bdoes )\b(?:not|never|couldn'?t|could not|can'?t|cannot|didn'?t|did not|haven'?t|have not|hasn'?t|has not|"
    r"wasn'?t|was not)\s+(?:yet\s+)?(?:been\s+)?(?:able to\s+)?(?:test(?:ed)?|verif(?:y|ied)|check(?:ed)?|confirm(?:ed)?|"
    r"reproduc(?:e|ed)|run (?:it|the tests?)|tried)\b(?!\s+(?:on|in|with|under|for|against|beyond|outside)\b)"
    r"|\b(?:untested|unverified)\b|\bneeds?\s+(?:to be\s+)?(?:\w+\s+){0,4}(?:checked|verified|tested|confirmed)\b"
    r"|\b(?:one|a|the only|my best)\s+(?:lead|hypothesis|guess|theory)\b"
    r"|\bcan'?t\s+(?:change|access|reach|run|test|apply)\b[^.]{0,60}\bfrom here\b"
)


def says_unchecked(conclusion: str) -> str:
    """The conclusion's own words saying nothing checked it ('' when it says no such thing)."""
    m = _SAYS_UNCHECKED.search(conclusion)
    return m.group(0) if m else ""


# --- text helpers -------------------------------------------------------------------------------

_STOP = frozenset(
    """a an the and or but if then else when while of to in on at by for with from into onto as is are
    was were be been being it its this that these those there here so such than too very can could
    should would will shall may might must do does did not no nor only own same just also any all
    each every both few more most other some i we you he she they me us our your my their them what
    which who whom whose why how about after before again against over under up down out off once
    always never don't dont make sure ensure please since because while""".split()
)
_WORD = re.compile(r"[a-z0-9][a-z0-9_.\-/]*[a-z0-9]|[a-z0-9]")


def content_words(text: str) -> set[str]:
    """Lower-cased words that carry meaning (no stop words, no order words)."""
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1}


@lru_cache(maxsize=4096)
def _frozen_words(text: str) -> frozenset[str]:
    """`content_words`, kept: the duplicate gate compares each card with every active card."""
    return frozenset(content_words(text))


def lexical_similarity(a: str, b: str) -> float:
    """Jaccard overlap of content words: the deterministic stand-in for an embedder."""
    wa, wb = _frozen_words(a), _frozen_words(b)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def embedding_similarity(encode: Callable[[list[str]], Sequence[Sequence[float]]]) -> Similarity:
    """Cosine similarity over `encode` (texts -> unit vectors), each text encoded once per run.

    The duplicate gate compares a card with every active card; caching keeps that one encode per card.
    """
    cache: dict[str, Sequence[float]] = {}

    def vector(text: str) -> Sequence[float]:
        if text not in cache:
            cache[text] = encode([text])[0]
        return cache[text]

    def similarity(a: str, b: str) -> float:
        return float(sum(x * y for x, y in zip(vector(a), vector(b))))

    return similarity


def sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+|\n+", text)
    return [p.strip(" -*>#/\t") for p in parts if p.strip(" -*>#/\t")]


# --- orders: who may give one ---------------------------------------------------------------------

USER_COVERAGE = 0.6  # share of an order's content words that the user must have typed
# An order-shaped sentence ("always run X", "never Y", "you must Z").
ORDER = re.compile(
    # At the start of a sentence, after an optional short label ("NOTE TO AI AGENTS:", "Important -").
    r"(?i)^(?:[^.:!?\n]{0,40}[:\-\u2013]\s*)?(?:always|never|you (?:must|should|need to|have to|are required to)|"
    r"must|do not|don't|make sure|be sure to|ensure|under no circumstances|it is mandatory|from now on|"
    r"going forward)\b"
    # Anywhere: an order addressed to the reader, or always/never + an action.
    r"|\b(?:you|agents?|assistants?|ai|llms?)\s+(?:must|should|need to|have to|are required to)\b"
    r"|\b(?:always|never)\s+(?:run|use|set|add|commit|push|pipe|disable|enable|skip|delete|remove|install|"
    r"export|call|write|pass|ignore|trust|merge|deploy|upload|send|chmod)\b"
)


_REASON = re.compile(r"(?i)[;,]?\s*\b(?:because|since|as otherwise|so that|otherwise|to avoid|which)\b")


def commanding_part(sentence: str, order: re.Match | None) -> str:
    """The order itself, from where `ORDER` matched to before its reason (`sentence` whole without a match)."""
    clause = sentence[order.start():] if order else sentence
    reason = _REASON.search(clause)
    return clause[: reason.start()] if reason else clause


def typed_by_user(order: str, user_words: Iterable[str]) -> bool:
    """Whether the user typed most of `order`'s content words in one of their own turns."""
    want = content_words(order)
    if not want:
        return False
    return any(len(want & content_words(said)) / len(want) >= USER_COVERAGE for said in user_words)
