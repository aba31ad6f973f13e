"""A decision a later card changes: retraction phrases, the from → to shape, and the older card they name.

Two sessions about one decision rarely share an error signature (the first met an incidental error
on the way, the second has none at all), so the signature rules cannot see that storage moved from
A to B. What the later card says can: "this replaces the September env-var flags", "the earlier fix
(`busy_timeout`) can't help here", "moved the flags from env vars to a table", "X is no longer used".
So does a finding in any language the rule table `cards.phrasebook.RETRACTS` states ("no era la causa",
"war nicht die Ursache", "the earlier change was unnecessary"). Such a sentence names its subject; the older card of the same workspace that is about that subject
is superseded. Only one card (or the cards tied for best) per sentence: supersession is per
experience, and the rest of the older session stays valid.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memoir.cards.phrasebook import RETRACTS, first_rule
from memoir.cards.values import Card

# Phrases that say an earlier decision, fix or judgment no longer holds. Each is a whole shape,
# never a lone word: "instead of failing" or "replace the token" say nothing about an older card.
_RETRACTION = re.compile(
    r"(?ix)\b(?:"
    r"(?:this|that|which|it)\s+(?:now\s+)?(?:replaces|reverses|supersedes|overturns|undoes|reverts|retires)\b"
    r"|(?:replac|revers|overturn|undo|undid|revert|retir)\w*\s+(?:the|our|my|that|this)\s+"
    r"(?:\w+[\s-]+){0,3}?(?:decision|fix|approach|setup|diagnosis|explanation|theory|conclusion|advice|answer|plan|"
    r"choice|design|flags?|config(?:uration)?|settings?|workaround|solution)\b"
    r"|(?:earlier|previous|prior|old|original|former|first)\s+(?:\w+\s+)?(?:fix|decision|approach|diagnosis|"
    r"explanation|theory|conclusion|advice|answer|workaround|solution)\b[^.\n]{0,120}?"
    r"(?:wrong|incorrect|mistaken|not\s+(?:the|enough|it)|didn'?t|did\s+not|doesn'?t|does\s+not|"
    r"can'?t|cannot|never|wasn'?t|was\s+not|isn'?t|no\s+longer)"
    r"|(?:is|are|was|were)\s+no\s+longer\s+(?:used|needed|the|how|where|in|valid|true|right)"
    r"|no\s+longer\s+(?:use|uses|used|need|needs|keep|keeps|store|stores|live|lives|read|reads|handle|handles)\b"
    r"|not\s+(?:used|needed|stored|kept)\s+(?:\w+\s+){0,3}?any\s*more"
    r"|(?<!what\s)(?<!thing\s)(?:was|were)\s+(?:wrong|incorrect|mistaken|a\s+red\s+herring|"
    r"not\s+the\s+(?:cause|fix|problem|reason))\b"  # "what was wrong:" names today's fault, no earlier one
    r"|for\s+real\s+this\s+time"
    r")"
)
# The from → to shape: a change verb, then "from A to B" (or "A with B" after replace).
_FROM_TO = re.compile(
    r"(?ix)\b(?:mov|switch|migrat|chang|port|convert|went|go(?:ne)?|bump|downgrad|upgrad)\w*\s+"
    r"(?:[\w`'\"./-]+\s+){0,4}?from\s+(?P<a>[^.;\n]{2,80}?)\s+(?:to|into|→|->)\s+"
    r"|\breplac\w*\s+(?P<r>[^.;\n]{2,80}?)\s+(?:with|by)\s+"
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_MONTHS = {m: i for i, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
    ("july", "jul"), ("august", "aug"), ("september", "sept", "sep"), ("october", "oct"),
    ("november", "nov"), ("december", "dec")), 1) for m in names}
_MONTH = re.compile(r"(?i)\b(?:the|in|from|since|last|our|that)\s+(" + "|".join(sorted(_MONTHS, key=len, reverse=True))
                    + r")\b")
_TERM = re.compile(r"(?<!\w)[a-z][a-z0-9_]{2,}(?!\w)")
_CODE = re.compile(r"`[^`\n]+`|\b\w+(?:[_.]\w+)+\b|\b[a-z]+[A-Z]\w*\b")
# Words that say a change happened, or name the card's own kind of content: no subject in them.
_NOISE = frozenset(
    "the and for but not are was were has had have this that these those with from into onto than then "
    "there their them they its it's our you your also just only now still again here where when which what "
    "who how why because since until while about after before over under very much many more most some "
    "any all each every other another same such own can can't cannot could would should will won't did didn't "
    "does doesn't done don't was wasn't isn't aren't yes one two first last next earlier previous prior old "
    "original former new newer later replaces replaced replace reverses reversed reverse supersedes overturns "
    "undoes reverts retires decision fix fixed fixes approach setup diagnosis explanation theory conclusion "
    "advice answer plan choice design workaround solution wrong incorrect mistaken longer used use uses using "
    "need needs needed keep keeps kept real time times way thing things work works worked working help "
    "helps here check checked checks applied apply correctly correct issue problem cause reason error errors "
    "make made let get got set like well want done committed commit moved move switched switch changed change "
    "went gone back instead rather actually really".split()
) | frozenset(_MONTHS)
MIN_SHARED = 2  # terms a retraction's subject must share with the older card
MIN_SHARED_POINTER = 4  # ... when the sentence only points back ("this reverses the September decision")
POINTER_TERMS = 2  # a sentence with fewer own subject terms than this is a pointer


@dataclass(frozen=True, slots=True)
class Retraction:
    """One sentence of a later card that says an earlier decision no longer holds."""

    sentence: str
    subject: frozenset[str]  # what changed: the A of "from A to B", else the sentence's own terms
    month: int = 0  # a month the sentence names ("the September decision"): the older card's
    pointer: bool = False  # the sentence names too little itself; the whole card is its subject


def subject_terms(text: str) -> frozenset[str]:
    """Words that can name a subject, lowercased, with a plural's `s` dropped and an identifier's parts."""
    out: set[str] = set()
    for word in _TERM.findall(text.casefold()):
        for part in (word, *word.split("_")) if "_" in word else (word,):
            if len(part) >= 3 and part not in _NOISE and not part.isdigit():
                out.add(part[:-1] if len(part) > 3 and part.endswith("s") and not part.endswith("ss") else part)
    return frozenset(out)


def _code_terms(text: str) -> frozenset[str]:
    """The subject terms found inside code-shaped tokens: identifiers, `quoted` names, dotted paths."""
    return frozenset().union(*(subject_terms(m.group(0)) for m in _CODE.finditer(text)))


def retractions(conclusion: str) -> list[Retraction]:
    """Each sentence of a conclusion that retracts or moves an earlier decision."""
    out: list[Retraction] = []
    for sentence in _SENTENCE.split(conclusion):
        shape = _FROM_TO.search(sentence)
        said = _RETRACTION.search(sentence) or first_rule(RETRACTS, sentence)
        if not (shape or said):
            continue
        moved = subject_terms((shape.group("a") or shape.group("r")) if shape else "")
        subject = moved if len(moved) >= POINTER_TERMS else subject_terms(sentence)
        month = _MONTH.search(sentence)
        out.append(Retraction(sentence.strip(), subject, _MONTHS[month.group(1).lower()] if month else 0,
                              pointer=len(subject) < POINTER_TERMS))
    return out


def shared_subject(r: Retraction, text: str) -> int:
    """How many of a retraction's subject terms `text` holds: 0 below `MIN_SHARED`, or when fewer than
    three are shared and none of them inside a code-shaped token (a name, a key, a path)."""
    shared = r.subject & subject_terms(text)
    if len(shared) < MIN_SHARED or (len(shared) < 3 and not shared & _code_terms(text)):
        return 0
    return len(shared)


def _month(card: Card) -> int:
    m = re.match(r"\d{4}-(\d{2})-", card.created or card.updated)
    return int(m.group(1)) if m else 0


def retracted(new: Card, older: Iterable[Card]) -> list[Card]:
    """The older cards `new`'s retractions name, best match first; empty when it retracts nothing.

    `older` are the live cards of `new`'s workspace that came strictly before it (the caller orders
    them). A sentence with its own subject needs `MIN_SHARED` terms in common with the older card's
    title and conclusion, one of them code-shaped or three in all; a sentence that only points back
    is matched on the whole card and needs `MIN_SHARED_POINTER`. A named month must be the older
    card's. Each sentence takes the card (or cards) that share the most with it.
    """
    said = retractions(new.conclusion)
    if not said:
        return []
    pool = [(c, f"{c.title}\n{c.conclusion}") for c in older if c.id != new.id]
    whole = subject_terms(f"{new.title}\n{new.conclusion}")
    found: dict[str, tuple[int, Card]] = {}
    for r in said:
        scored: list[tuple[int, Card]] = []
        for card, text in pool:
            if r.month and _month(card) != r.month:
                continue
            n = len(whole & subject_terms(text)) if r.pointer else shared_subject(r, text)
            if n >= (MIN_SHARED_POINTER if r.pointer else MIN_SHARED):
                scored.append((n, card))
        if not scored:
            continue
        best = max(n for n, _ in scored)
        for n, card in scored:
            if n == best and n > found.get(card.id, (0, card))[0]:
                found[card.id] = (n, card)
    return [c for _, c in sorted(found.values(), key=lambda nc: (-nc[0], nc[1].id))]

