"""Quality gates: each one can keep a card out of the active set on its own, and says which it was.

(Not the recall gates of memoir.index.recall_gates, which judge a card against one query.)

The gates judge every card, rule-made or model-made. A card that fails one stays `candidate`
(out of default recall) with the failing gate's name in its front matter; nothing is deleted.
Judging is pure: a card, its source turns (memoir.cards.quality_inputs), the active cards, and a
similarity function go in; a `Verdict` comes out. The embedder is injected (`cards` may not import `index`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memoir.cards.quality_inputs import (
    ORDER, EvidenceView, Similarity, commanding_part, content_words, lexical_similarity, says_unchecked, sentences,
    typed_by_user,
)
from memoir.cards.gate_help import GATE_HELP
from memoir.cards.instruction_shapes import EXFILTRATE, MARKUP, OVERRIDE, REMOTE_EXEC, SHELL_PIPE, TURN_MARKER
from memoir.cards.plain_text import json_unescaped, plain
from memoir.cards.limits import stated_limits
from memoir.cards.signatures import error_signature, mask, shown_error
from memoir.cards.values import Card

# `verified_conclusion` comes first: an answer nothing checked (an opinion, an unverified how-to,
# a parked plan) is held because nothing checked it, whatever else it lacks.
QUALITY_GATE_NAMES = (
    "contradicted_later",
    "work_report",
    "self_inflicted",
    "self_evident",
    "verified_conclusion",
    "verifiable_judgment",
    "failure_conditions_stated",
    "no_unsupported_specifics",
    "instruction_not_self_promoted",
    "not_duplicate",
)
# Statuses the gates never touch: history (superseded) and tombstones (forgotten) are final.
FINAL_STATUSES = ("superseded", "forgotten")

# all-MiniLM-L6-v2 puts close paraphrases of one conclusion at ~0.85-0.9 and unrelated
# engineering sentences at ~0.2; word overlap separates "same advice" from "same topic".
DUPLICATE_SIMILARITY = 0.92  # this close is a duplicate whatever the wording
NEAR_SIMILARITY = 0.80  # this close is a duplicate only if the words overlap too
NEAR_LEXICAL = 0.25
DUPLICATE_LEXICAL = 0.75  # the same words in a different order, whatever the embedder says
MIN_JUDGMENT_WORDS = 4
MIN_FAILURE_WORDS = 3


@dataclass(frozen=True, slots=True)
class GateResult:
    """One gate's answer for one card."""

    gate: str
    passed: bool
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Verdict:
    """All gates' answers; `failed_gate` is the first that failed, in `QUALITY_GATE_NAMES` order."""

    passed: bool
    failed_gate: str = ""
    reasons: tuple[str, ...] = ()
    results: tuple[GateResult, ...] = ()


def _result(gate: str, reason: str) -> GateResult:
    return GateResult(gate, not reason, reason)


# --- gate: verifiable judgment ------------------------------------------------------------------

_EMOTION = re.compile(
    r"(?i)\b(?:frustrat\w*|annoy\w*|happy|glad|relieved|relief|finally|ugh+|yay|phew|awesome|"
    r"amazing|love[ds]?|hate[ds]?|sad|angry|excit\w*|nightmare|painful|horrible|terrible|fun|"
    r"exhaust\w*|tired|proud|thrilled|upset|disappoint\w*|scary|wow|lol)\b|[\U0001F300-\U0001FAFF]"
)
_FEELING = re.compile(r"(?i)^(?:i|we)\s+(?:am|was|were|are|feel|felt|'m)\b|^(?:what a|this was so|so)\b")
_LEAD_IN = re.compile(
    r"(?i)^(?:i|we)\s+(?:found|learned|noticed|realized|realised|confirmed|verified|established)\s+(?:out\s+)?that\s+"
)
_NARRATION = re.compile(
    r"(?i)^(?:(?:first|then|next|after that|afterwards|finally|later)\b[, ]*)?(?:i|we)\s+(?:\w+ed|ran|did|made|saw|"
    r"found|took|wrote|read|went|tried|looked|checked|opened|started|began|spent|got|had|kept|"
    r"then|also|re-?ran|reran)\b|^(?:first|then|next|after that|afterwards)\b"
)
_CLAIM = re.compile(
    r"(?i)\b(?:is|are|was|were|isn't|aren't|causes?|caused|fix(?:es)?|fixed|requires?|needs?|returns?|"
    r"raises?|throws?|fails?|breaks?|works?|means|prevents?|avoids?|leads? to|results? in|depends on|"
    r"must|should|cannot|can't|won't|does not|doesn't|do not|only|unless|because|since|so that|"
    r"instead of|rather than|when|if|whenever|by default|defaults? to|expects?|accepts?|rejects?|"
    r"ignores?|overrides?|blocks?|hangs?|times? out|resolves?|triggers?|has|have|lacks?|"
    # A decision or a move is a claim too: "this replaces A", "flags now live in table B", "no longer".
    r"replace[sd]?|supersedes?|moved?|switch(?:es|ed)?|lives?|lived|stored|drift(?:s|ed)?|no longer|"
    r"deprecated|needed|required)\b"
)


_APPLIES = re.compile(r"(?im)^applies when:.*$")


def verifiable_judgment(card: Card) -> GateResult:
    """The conclusion makes a claim someone could check, not a feeling or a diary of steps."""
    gate = "verifiable_judgment"
    # The model stage appends its boundary as "Applies when: …"; a boundary is not the judgment.
    text = _APPLIES.sub("", card.conclusion).strip()
    if not text:
        return _result(gate, "conclusion is empty")
    parts = sentences(text)
    claims, emotional, narrated = [], 0, 0
    for s in parts:
        s = _LEAD_IN.sub("", s)
        if _FEELING.search(s) or (_EMOTION.search(s) and (s.endswith("!") or not _CLAIM.search(s))):
            emotional += 1
        elif _NARRATION.search(s):
            narrated += 1
        elif _CLAIM.search(s) and len(s.split()) >= MIN_JUDGMENT_WORDS:
            claims.append(s)
    if claims or (card.extra.get("kind") in ("fix", "confirmed_answer", "decision") and len(parts) > emotional + narrated):
        # A proven card's facts are the check: any sentence that is neither feeling nor diary states its lesson.
        return _result(gate, "")
    if narrated and narrated >= emotional:
        return _result(gate, "conclusion is a process log (what was done), not a judgment")
    if emotional:
        return _result(gate, "conclusion is an emotion, not a judgment")
    return _result(gate, "conclusion states no checkable claim")


# --- gates: what the card proves (cards.proof, read back from the card's front matter) ------------


def contradicted_later(card: Card) -> GateResult:
    """The rest of the session contradicts the card (`cards.proof.contradiction`)."""
    said = card.extra.get("contradicted_by") if card.confirmed_by != "user" else ""
    return _result("contradicted_later", f"contradicted later in the session at {said}" if said else "")


def work_report(card: Card) -> GateResult:
    """A change list with no problem before it is not a lesson, however green the suite was after it."""
    report = card.extra.get("kind") == "work_report" and card.confirmed_by != "user"
    return _result("work_report", card.extra.get("proof", "a change list") if report else "")


def self_inflicted_failure(card: Card) -> GateResult:
    """A failure in the agent's own fresh lines, fixed in those lines alone, does not transfer."""
    return _result("self_inflicted", "the failure was in files the agent changed earlier in the same experience, "
                   "and the fix changed only those" if card.extra.get("self_inflicted") and card.confirmed_by != "user" else "")


def self_evident(card: Card) -> GateResult:
    """A fix the failing run's own output printed (`cards.self_evident`): the error says it again next time."""
    told = card.extra.get("told_by_error") and card.confirmed_by != "user"
    return _result("self_evident", "the error's own output printed the fix that cleared it, so the card adds "
                   "nothing the error will not say again" if told else "")


# --- gate: verified conclusion -------------------------------------------------------------------


def checked_by(card: Card, evidence: EvidenceView | None = None) -> str:
    """What checked the conclusion, in a few words, or '' when nothing did: a check that passed
    after the change (`verified_by`), a person in review, or the user in the session (they typed
    it, or confirmed the answer in their own words). Rule-made and model-made cards alike."""
    if card.confirmed_by == "user":
        return "confirmed in review"
    if card.extra.get("kind") in ("unproven", "work_report"):
        return ""  # its own facts say nothing checked it (`cards.proof`): words that match the user's are no check
    if says_unchecked(card.conclusion):
        return ""  # the agent said so itself: a green run elsewhere in the session checked something else
    if card.verified_by:
        return f"check at {card.verified_by}"
    if evidence is not None and card.conclusion.strip():
        if typed_by_user(card.conclusion, evidence.user_words):
            return "the user's own words"
        said = evidence.user_confirmation(card.conclusion)
        if said:
            return f"the user confirmed it: {said[:60]!r}"
    return ""


def verified_conclusion(card: Card, evidence: EvidenceView) -> GateResult:
    """Something checked the conclusion (`checked_by`); anything else is a guess, however well it
    reads. A model's card is held to this as a rule card is: it inherits only the rule card's check."""
    gate = "verified_conclusion"
    if checked_by(card, evidence):
        return _result(gate, "")
    own = says_unchecked(card.conclusion)
    if own:
        return _result(gate, f"nothing checked it, as the conclusion says itself ({own!r}); confirm it in `memoir review`")
    why = card.extra.get("proof", "")
    return _result(gate, "nothing checked it: no check failed before the change and passed after it, and the "
                         "user did not confirm it" + (f" ({why})" if why else "") + "; confirm it in `memoir review`")


# --- gate: failure conditions stated ------------------------------------------------------------

_PLACEHOLDER = re.compile(r"(?i)^\W*(?:none|n/?a|nothing|unknown|tbd|todo|-+|no counterexamples?|not known|always applies)\W*$")


def failure_conditions_stated(card: Card, checked: bool | None = None) -> GateResult:
    """The card says when its conclusion stops holding, or a check stands in for the limits.

    A checked conclusion (`checked`; by default its own `verified_by` or a person's confirmation)
    may have no known limit: an empty Counterexamples then holds nothing back.

    Args:
        checked: whether something checked the conclusion (`checked_by`); None reads the card alone.
    """
    gate = "failure_conditions_stated"
    if checked is None:
        checked = bool(checked_by(card))
    text = card.counterexamples.strip()
    if not text and checked:
        return _result(gate, "")
    if not text or _PLACEHOLDER.match(text):
        return _result(gate, "no failure conditions (Counterexamples is empty or a placeholder)")
    if len(content_words(text)) < MIN_FAILURE_WORDS:
        return _result(gate, f"failure conditions too thin: {text[:60]!r}")
    return _result(gate, "")


# --- gate: no unsupported specifics -------------------------------------------------------------

_SPECIFIC_PATTERNS = (
    ("url", re.compile(r"https?://[^\s`'\")\]]+")),
    ("code", re.compile(r"`([^`\n]+)`")),
    ("flag", re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")),
    # A path has a root, two slashes or a file extension: "n/a" and "and/or" are prose.
    ("path", re.compile(r"(?<![\w/])(?:(?:~|\.{1,2})?/[\w.-]+(?:/[\w.-]+)*|[\w.-]+/[\w.-]+/[\w./-]+|[\w.-]+/[\w-]+\.\w+)")),
    ("call", re.compile(r"\b[A-Za-z_][\w.]*(?=\()")),
    ("dotted", re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b")),
    ("snake", re.compile(r"\b[A-Za-z]\w*_\w+\b")),
    ("camel", re.compile(r"\b(?:[a-z]+[A-Z]|[A-Z][a-z0-9]+[A-Z])\w*\b")),
    ("header", re.compile(r"\b[A-Z][a-z]+(?:-[A-Z][a-z]+)+\b")),
    ("error_code", re.compile(r"\b[A-Z]{1,5}\d{2,}\b")),
)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,:]\d+)*")


def specifics(text: str) -> list[tuple[str, str]]:
    """(kind, token) for every number, identifier, API, flag, file name or URL in `text`."""
    found: list[tuple[str, str]] = []
    for kind, rx in _SPECIFIC_PATTERNS:
        for m in rx.finditer(text):
            token = (m.group(1) if rx.groups else m.group(0)).strip().rstrip(".,:;")
            if kind == "dotted" and (len(token) < 4 or max(len(p) for p in token.split(".")) < 2):
                continue  # "e.g", "i.e"
            if token:
                found.append((kind, token))
    for m in _NUMBER.finditer(text):
        found.append(("number", m.group(0).rstrip(".,:")))
    return list(dict.fromkeys(found))


class _Support:
    """The evidence text prepared once per card: merged cards carry hundreds of turns."""

    SETTING = re.compile(r"^([\w.-]+): ([\w.-]+)$")

    def __init__(self, text: str):
        # Tool calls are kept as JSON: a quote of an edit's line (`f("x", 4)`) stands there escaped.
        if '\\"' in text:
            text += "\n" + json_unescaped(text)
        self.text = text
        self.lower = text.lower()

    def has(self, kind: str, token: str) -> bool:
        if kind == "number":
            return _has_number(self.text, token)
        # A setting quoted `name: value` (a changed call argument) stands as `"name":"value"` or `name=value`.
        setting = self.SETTING.match(token) if kind == "code" else None
        return token.lower() in self.lower or bool(setting) and re.search(
            re.escape(setting[1]) + r"[\"']?\s*[:=]\s*[\"']?" + re.escape(setting[2]) + r"\b", self.text) is not None


def _has_number(text: str, number: str) -> bool:
    """`number` standing alone (no digit right before or after it): str.find, not a regex scan."""
    at = text.find(number)
    while at >= 0:
        end = at + len(number)
        if (at == 0 or not text[at - 1].isdigit()) and (end == len(text) or not text[end].isdigit()):
            return True
        at = text.find(number, at + 1)
    return False


def no_unsupported_specifics(card: Card, evidence: EvidenceView) -> GateResult:
    """No number, identifier, API, flag or file name in the claims that the evidence never shows."""
    gate = "no_unsupported_specifics"
    # The rule-made sections were copied from the turns; the claims are what a model may invent.
    support_text = "\n".join((evidence.text, card.background, card.goal, card.evidence))
    support = _Support(support_text)
    claims = "\n".join((card.conclusion, card.counterexamples))
    # A quoted error clipped for length ("…") is supported when what is left of it is.
    unsupported = [(k, t) for k, t in specifics(claims) if not support.has(k, t.rstrip("…").rstrip())]
    if any(k == "code" for k, _ in unsupported):
        # Rule cards quote error signatures with paths and numbers masked (`<path>`, `<n>`), in the
        # normalised form `cards.signatures` gives every host ("fatal: …" for Go's "fatal error: …").
        signatures = {card.error_signature} | {error_signature(t.text) for t in evidence.turns if t.kind == "error"}
        signatures |= {error_signature(t.text) for t in evidence.turns if t.typed_by_user}
        signatures.discard("")

        def quoted_signature(token: str) -> bool:
            token = token.rstrip("…").rstrip()
            return token in signatures or any(s.startswith(token) for s in signatures)

        unsupported = [(k, t) for k, t in unsupported if not (k == "code" and quoted_signature(t))]
        if any(k == "code" for k, _ in unsupported):  # an error as the log showed it (`signatures.shown_error`)
            shown = {shown_error(t.text, sig) for t in evidence.turns if (sig := error_signature(t.text))}
            unsupported = [(k, t) for k, t in unsupported if not (k == "code" and any(
                s.startswith(t.rstrip("…").rstrip()) for s in shown))]
        if any(k == "code" for k, _ in unsupported):
            masked = mask(support_text)  # costly on a merged card's evidence: only when still needed
            unsupported = [(k, t) for k, t in unsupported if not (k == "code" and mask(t) in masked)]
    if unsupported:
        return _result(gate, "absent from the evidence: " + ", ".join(f"{k} {t!r}" for k, t in unsupported[:8]))
    return _result(gate, "")


# --- gate: instruction not self-promoted --------------------------------------------------------

def _order_clauses(card: Card) -> list[str]:
    """The commanding part of each order-shaped sentence (its reason is judged by the other gates)."""
    found = []
    # A limit taken from the conclusion is still the agent's conclusion: an order there counts too.
    ordered = sentences(plain("\n".join((card.conclusion, card.follow_up, *stated_limits(card.counterexamples)))))
    for s in dict.fromkeys(ordered + sentences(plain(card.counterexamples))):
        m = ORDER.search(s) if s in ordered else None
        if m is None and not (SHELL_PIPE.search(s) or REMOTE_EXEC.search(s)):
            continue
        found.append(commanding_part(s, m))
    return found


def instruction_not_self_promoted(card: Card, evidence: EvidenceView) -> GateResult:
    """An order stays candidate unless the user typed it: a planted file is read again every session,
    and repetition is not corroboration; the agent repeating it is no authority either."""
    gate = "instruction_not_self_promoted"
    claims = plain("\n".join((card.title, card.conclusion, card.counterexamples, card.follow_up)))
    if OVERRIDE.search(claims):
        return _result(gate, "conclusion tries to override instructions")
    # Whoever typed it and whatever proved the card: text that would command the agent that reads it waits
    # for a person (`memoir review` shows why).
    for shape, why in ((MARKUP, "carries role, tool-call or memoir container markup"),
                       (TURN_MARKER, "carries a chat turn marker"), (EXFILTRATE, "sends a credential file somewhere")):
        if shape.search(claims):
            return _result(gate, f"card text {why}: held until a person confirms it")
    for order in _order_clauses(card):
        if not typed_by_user(order, evidence.user_words):
            return _result(gate, f"order not in the user's own words (only tool/file/agent text): {order[:80]!r}")
    return _result(gate, "")


# --- gate: not a duplicate ----------------------------------------------------------------------


def _retrieval_text(card: Card) -> str:
    return card.conclusion.strip()


def not_duplicate(card: Card, active_cards: Sequence[Card], similarity: Similarity | None = None) -> GateResult:
    """Not a substantive duplicate of an active card: embedding similarity plus word overlap."""
    gate = "not_duplicate"
    mine = _retrieval_text(card)
    if not mine:
        return _result(gate, "")
    for other in active_cards:
        if other.id == card.id or other.status != "active" or not _retrieval_text(other):
            continue
        theirs = _retrieval_text(other)
        lexical = lexical_similarity(mine, theirs)
        sim = similarity(mine, theirs) if similarity is not None else lexical
        if sim >= DUPLICATE_SIMILARITY or lexical >= DUPLICATE_LEXICAL or (
            sim >= NEAR_SIMILARITY and lexical >= NEAR_LEXICAL
        ):
            return _result(gate, f"duplicates active card {other.id} (similarity {sim:.2f}, overlap {lexical:.2f})")
    return _result(gate, "")


# --- verdict and status -------------------------------------------------------------------------


def judge_card(
    card: Card,
    evidence: EvidenceView,
    active_cards: Sequence[Card] | Callable[[Card], Sequence[Card]] = (),
    similarity: Similarity | None = None,
) -> Verdict:
    """Run every gate; the first failure (in `QUALITY_GATE_NAMES` order) names the verdict.

    Args:
        card: the card to judge, rule-made or model-made.
        evidence: the card's source turns with roles.
        active_cards: cards already active (the card itself skipped by id), or a function of the card giving
            them, asked only when every other gate passed (it needs the model; a held card is decided).
        similarity: embedding similarity in [0, 1]; lexical overlap alone when None.
    """
    verified = verified_conclusion(card, evidence)
    results = (
        contradicted_later(card),
        work_report(card),
        self_inflicted_failure(card),
        self_evident(card),
        verified,
        verifiable_judgment(card),
        failure_conditions_stated(card, checked=verified.passed),
        no_unsupported_specifics(card, evidence),
        instruction_not_self_promoted(card, evidence),
    )
    if not callable(active_cards) or all(r.passed for r in results):
        results += (not_duplicate(card, active_cards(card) if callable(active_cards) else active_cards, similarity),)
    else:
        results += (_result("not_duplicate", ""),)  # held already: not asked (see `active_cards`)
    failed = [r for r in results if not r.passed]
    return Verdict(
        passed=not failed,
        failed_gate=failed[0].gate if failed else "",
        reasons=tuple(f"{r.gate}: {r.reason}" for r in failed),
        results=results,
    )


def decide_status(card: Card, verdict: Verdict, model_enabled: bool, distilled: bool) -> Card:
    """Status and quality from the verdict and the model stage's state.

    Model off: a passing rule card is `active`, `quality: rule`. Model on: a card waits as
    `candidate` until it is distilled and passes (`quality: model`), or until the model's answer
    was overruled by the evidence (`model_overruled`: the rule card is judged, `quality: rule`).
    A failing card is `candidate` with `gate: <name>`. Superseded and forgotten cards are never touched, and an
    `incomplete` rule card stays incomplete (the conclusion integrity check owns that state).
    """
    # A rule card whose model answer was overruled by its evidence (`model_overruled`) stays `rule`.
    quality = "model" if distilled and not card.extra.get("model_overruled") else card.quality
    if card.status in FINAL_STATUSES:
        return card
    if card.status == "incomplete" and not distilled:
        return card.with_(gate=card.gate or verdict.failed_gate)
    if not verdict.passed:
        return card.with_(status="candidate", quality=quality, gate=verdict.failed_gate)
    if distilled or not model_enabled:
        return card.with_(status="active", quality=quality, gate="")
    return card.with_(status="candidate", quality=quality, gate="")
