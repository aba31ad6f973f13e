"""What a card advises, and when two cards' advice is opposite: values, polarity, direction, retraction.

Recall's `ContradictsCandidate` gate (index/recall_gates.py) asks `contradiction` of every pair of
survivors, so two cards with opposite advice are never injected together; the age gate asks
`assignments` for the config value a conclusion states.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from memoir.cards.distill.decisions import retractions, shared_subject, subject_terms
from memoir.cards.values import Card


class Advice(Protocol):
    """A card, or a recall candidate made from one: what the comparison reads."""

    conclusion: str
    error_signature: str


_ASSIGN = re.compile(
    r"(?i)\bset(?:ting)?\s+`?([A-Za-z_][\w.\-]{2,})`?\s+to\s+[`'\"]?([\w.\-]+)[`'\"]?"
    r"|`?([A-Za-z_][\w.\-]{2,})`?\s*=\s*[`'\"]?([\w.\-]+)[`'\"]?"
)
_NEG = r"(?:don'?t|do\s+not|never|should\s+not|shouldn'?t|must\s+not|no\s+need\s+to)"
_POS_VERB = r"(?:use|enable|add|keep|call|install|prefer|pass)"
_NEG_ONLY = r"(?:avoid|disable|remove|drop|stop\s+using)"
_OBJ = r"(?:the\s+|a\s+|an\s+)?(`[^`\n]{1,60}`|[A-Za-z_][\w.\-]*)"
_NEGATED = re.compile(rf"(?i)\b{_NEG}\s+{_POS_VERB}\s+{_OBJ}|\b{_NEG_ONLY}\s+{_OBJ}")
_AFFIRMED = re.compile(rf"(?i)(?<!\bt )(?<!not )(?<!never )\b{_POS_VERB}\s+{_OBJ}")
_UP = frozenset("raise raising increase increasing bump higher longer larger bigger more grow extend".split())
_DOWN = frozenset("lower lowering decrease decreasing reduce reducing shorter short smaller less shrink".split())
_WORD = re.compile(r"[a-z_][a-z0-9_]*")
_DIRECTION_WINDOW = 5  # tokens between a direction word and the thing it moves
_SKIP_OBJECTS = frozenset("it this that them a an the to of in on for and or".split())


def _clean(obj: str) -> str:
    return obj.strip("`'\".,;:()").lower()


def assignments(text: str) -> dict[str, str]:
    """`KEY=VALUE` / `set KEY to VALUE` pairs in a conclusion, lowercased; a key stated twice keeps its
    last value (the state found comes before the one left or advised: "because of X=1 ... set X=2")."""
    out: dict[str, str] = {}
    for m in _ASSIGN.finditer(text):
        key, value = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        if _clean(value):
            out[key.lower()] = _clean(value)
    return out


def polarities(text: str) -> dict[str, bool]:
    """Objects a conclusion says to use (True) or not to use (False)."""
    out: dict[str, bool] = {}
    negated_spans = []
    for m in _NEGATED.finditer(text):
        obj = _clean(m.group(1) or m.group(2) or "")
        if obj and obj not in _SKIP_OBJECTS:
            out[obj] = False
        negated_spans.append(m.span())
    for m in _AFFIRMED.finditer(text):
        if any(s <= m.start() < e for s, e in negated_spans):
            continue
        obj = _clean(m.group(1))
        if obj and obj not in _SKIP_OBJECTS:
            out.setdefault(obj, True)
    return out


def directions(text: str) -> dict[str, int]:
    """Words a conclusion says to move up (+1) or down (-1): "raise the timeout" -> {"timeout": 1}."""
    out: dict[str, int] = {}
    for sentence in re.split(r"(?<=[.;!?])\s+|\n", text.lower()):
        words = _WORD.findall(sentence)
        for i, w in enumerate(words):
            sign = 1 if w in _UP else -1 if w in _DOWN else 0
            if not sign:
                continue
            lo, hi = max(0, i - _DIRECTION_WINDOW), i + _DIRECTION_WINDOW + 1
            for near in words[lo:hi]:
                if len(near) >= 4 and near not in _UP and near not in _DOWN:
                    out.setdefault(near, sign)
    return out


def contradiction(a: Advice, b: Advice) -> str:
    """Why two conclusions disagree ('' if they do not): opposite values, polarity or direction."""
    va, vb = assignments(a.conclusion), assignments(b.conclusion)
    for key in sorted(va.keys() & vb.keys()):
        if va[key] != vb[key]:
            return f"{key}={va[key]} vs {key}={vb[key]}"
    pa, pb = polarities(a.conclusion), polarities(b.conclusion)
    for obj in sorted(pa.keys() & pb.keys()):
        if pa[obj] != pb[obj]:
            return f"use {obj} vs do not use {obj}"
    # Direction words are vague on their own; only trust them about the same failure.
    if a.error_signature and a.error_signature == b.error_signature:
        da, db = directions(a.conclusion), directions(b.conclusion)
        for word in sorted(da.keys() & db.keys()):
            if da[word] != db[word]:
                return f"{'raise' if da[word] > 0 else 'lower'} {word} vs " \
                       f"{'raise' if db[word] > 0 else 'lower'} {word}"
    return ""


def retraction(older: Advice, newer: Advice) -> str:
    """Why `newer` takes back what `older` advises ('' if it does not): one of its sentences retracts
    or moves a decision ("X is no longer used", "moved from X to Y") about a subject `older` holds.
    A sentence that only points back ("this reverses the September decision") names nothing to match."""
    for r in retractions(newer.conclusion):
        if not r.pointer and shared_subject(r, older.conclusion):
            return f"takes back {', '.join(sorted(r.subject & subject_terms(older.conclusion))[:3])}"
    return ""


MAX_PAIR_BUCKET = 50  # cards that share one advised key; a key every card names (`tests`) pairs nothing


def contradicting_pairs(cards: Sequence[Card]) -> list[tuple[str, str, str]]:
    """(id, id, why) for the active cards of one workspace whose advice disagrees (`contradiction`), or
    whose newer card takes the older one's back (`retraction`) while both stay active: what `memoir
    status` lists for review. Only cards that advise about one key are compared (a hash map by key),
    so the cost stays near-linear in the library."""
    by_key: dict[tuple[str, str], list[Card]] = {}
    for card in cards:
        if card.status != "active":
            continue
        keys = {*assignments(card.conclusion), *polarities(card.conclusion), *subject_terms(card.conclusion)}
        for key in keys:
            by_key.setdefault((card.workspace, key), []).append(card)
    out: dict[tuple[str, str], str] = {}
    for bucket in by_key.values():
        if len(bucket) > MAX_PAIR_BUCKET:
            continue
        for i, a in enumerate(bucket):
            for b in bucket[i + 1:]:
                pair = tuple(sorted((a.id, b.id)))
                if pair in out:
                    continue
                old, new = (a, b) if (a.created, a.id) <= (b.created, b.id) else (b, a)
                why = contradiction(a, b) or retraction(old, new)
                if why:
                    out[pair] = why  # type: ignore[index]
    return sorted((a, b, why) for (a, b), why in out.items())
