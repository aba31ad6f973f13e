"""The model's answer: the fixed JSON slots, their schema, their validation, and the card they make.

Pure: `parse_slots` turns a reply's text into `Slots` or raises `InvalidOutput`; `apply_slots`
lays the slots over the rule card; `evidence_conflict` says when the model's conclusion may not
replace a verified rule conclusion.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from memoir.cards.lesson import CONCLUSION_BUDGET, within_budget
from memoir.cards.distill.errors import InvalidOutput
from memoir.cards.distill.extract import find_disproved
from memoir.cards.outcomes import failure_conditions
from memoir.cards.phrasebook import RETRACTS, REVERSES, first_rule
from memoir.cards.quality_gates import specifics
from memoir.cards.values import Card, Turn

SLOTS = ("conclusion", "applies_when", "fails_when", "topics", "task_type", "confidence")
TASK_TYPES = ("debug", "feature", "refactor", "config", "question")  # what cards.draft assigns
MAX_LEN = {"conclusion": CONCLUSION_BUDGET, "applies_when": 300, "fails_when": 300}
MAX_TOPICS = 5
MAX_TOPIC_LEN = 40

# llama.cpp takes a schema under `json_object` but answers 500 to `json_schema`; the maxLength
# caps keep a looping model from running to max_tokens.
OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "conclusion": {"type": "string", "minLength": 1, "maxLength": MAX_LEN["conclusion"]},
        "applies_when": {"type": "string", "maxLength": MAX_LEN["applies_when"]},
        "fails_when": {"type": "string", "maxLength": MAX_LEN["fails_when"]},
        "topics": {
            "type": "array",
            "items": {"type": "string", "maxLength": MAX_TOPIC_LEN},
            "maxItems": MAX_TOPICS,
        },
        "task_type": {"type": "string", "enum": list(TASK_TYPES)},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": list(SLOTS),
    "additionalProperties": False,
}


@dataclass(frozen=True, slots=True)
class Slots:
    """The fixed output slots, validated."""

    conclusion: str
    applies_when: str
    fails_when: str
    topics: tuple[str, ...]
    task_type: str
    confidence: float


def _strip_fence(text: str) -> str:
    # A hosted model in JSON mode sometimes wraps the object in one fence; that is not prose.
    if text.startswith("```") and text.endswith("```"):
        inner = text[3:-3]
        return inner[4:] if inner.startswith("json") else inner
    return text


def parse_slots(content: str) -> Slots:
    """Validate the model's answer against the fixed slots; anything else raises `InvalidOutput`."""
    text = _strip_fence(content.strip()).strip()
    if not text:
        raise InvalidOutput("empty", "the model returned no content")
    try:
        data = json.loads(text)
    except ValueError as exc:
        what = "truncated JSON" if text.startswith("{") else "free prose, not a JSON object"
        raise InvalidOutput("invalid_format", f"{what}: {exc}") from None
    except RecursionError:  # a session can talk a model into echoing `[[[[…`
        raise InvalidOutput("invalid_format", "JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise InvalidOutput("invalid_format", f"expected a JSON object, got {type(data).__name__}")
    missing, extra = set(SLOTS) - set(data), set(data) - set(SLOTS)
    if missing or extra:
        raise InvalidOutput("invalid_format", f"slots missing {sorted(missing)} extra {sorted(extra)}")
    for name, cap in MAX_LEN.items():
        if not isinstance(data[name], str):
            raise InvalidOutput("invalid_format", f"{name} must be a string")
        if len(data[name]) > cap:
            raise InvalidOutput("invalid_format", f"{name} longer than {cap} characters")
    if not data["conclusion"].strip():
        raise InvalidOutput("invalid_format", "conclusion is empty")
    topics = data["topics"]
    if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics) or len(topics) > MAX_TOPICS:
        raise InvalidOutput("invalid_format", f"topics must be a list of at most {MAX_TOPICS} strings")
    if data["task_type"] not in TASK_TYPES:
        raise InvalidOutput("invalid_format", f"task_type {data['task_type']!r} not one of {TASK_TYPES}")
    conf = data["confidence"]
    if isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0 <= conf <= 1:
        raise InvalidOutput("invalid_format", "confidence must be a number from 0 to 1")
    return Slots(
        conclusion=data["conclusion"].strip(),
        applies_when=data["applies_when"].strip(),
        fails_when=data["fails_when"].strip(),
        topics=tuple(dict.fromkeys(t.strip().lower()[:MAX_TOPIC_LEN] for t in topics if t.strip())),
        task_type=data["task_type"],
        confidence=float(conf),
    )


def apply_slots(card: Card, slots: Slots, model_name: str) -> Card:
    """The distilled card: the model's conclusion and boundaries over the rule card's evidence,
    the conclusion within the budget every card states (its "Applies when" line goes first)."""
    conclusion = slots.conclusion
    if slots.applies_when:
        conclusion += f"\n\nApplies when: {slots.applies_when}"
    conclusion = within_budget(conclusion)
    failures = [f"Fails when: {slots.fails_when}"] if slots.fails_when else []
    if card.counterexamples.strip():
        failures.append(card.counterexamples.strip())  # the rule stage's disproved claims stay
    return card.with_(
        conclusion=conclusion,
        counterexamples="\n\n".join(failures),
        topics=tuple(sorted(set(card.topics) | set(slots.topics))),
        task_type=slots.task_type,
        quality="model",
        extra={**card.extra, "confidence": round(slots.confidence, 2), "distilled_by": model_name},
    )


# What a conclusion names: identifiers, files, flags, calls, error codes (not numbers or prose).
_NAMED_KINDS = frozenset({"url", "code", "flag", "path", "call", "dotted", "snake", "camel", "header", "error_code"})
_NEGATED = re.compile(r"(?i)\b(?:not|never|no longer|instead of|rather than|did not help|didn'?t help|wasn'?t|isn'?t)\b|n't\b")


def _names(text: str) -> set[str]:
    return {token.lower().strip("`") for kind, token in specifics(text) if kind in _NAMED_KINDS and len(token) >= 3}


def _named_in(name: str, text: str) -> bool:
    return name in text.lower()


CONTRADICTS_EVIDENCE = "model_contradicts_evidence"


def contradicts_evidence(text: str, named: set[str]) -> str:
    """The sentence of a model's conclusion that negates, reverses or calls unnecessary the change the
    evidence shows working ('' if none): "the change was unnecessary, so revert it", "committing inside
    the fixture does not fix it". It must be about what the verified conclusion names (any language the
    tables `RETRACTS` and `REVERSES` state)."""
    for sentence in re.split(r"(?<=[.!?;])\s+|\n+", text):
        if (first_rule(REVERSES, sentence) or first_rule(RETRACTS, sentence)) and (
                not named or any(_named_in(n, sentence) for n in named)):
            return sentence.strip()[:160]
    return ""


def evidence_conflict(rule: Card, model: Card, turns: Sequence[Turn]) -> str:
    """Why `model`'s conclusion may not replace `rule`'s verified one ('' when it may).

    It must not negate, reverse or call unnecessary the change the evidence shows working
    (`model_contradicts_evidence`), must name what the evidence names (an identifier, file, flag or the
    error kind of the verified rule conclusion) and contradict none of it: a thing the log shows failing (an attempt
    that did not help, a claim a later turn disproved) is never offered as the answer.
    """
    if not (rule.verified_by and rule.conclusion.strip()) or rule.status != "active":
        return ""  # nothing verified to protect: the gates judge the model's card on its own
    text = model.conclusion
    named = _names(rule.conclusion)
    kind = rule.error_signature.split(":", 1)[0].strip()
    if kind and len(kind) >= 4 and " " not in kind:
        named.add(kind.lower())
    reversed_ = contradicts_evidence(text, named)
    if reversed_:
        return f"{CONTRADICTS_EVIDENCE}: {reversed_}"
    if named and not any(_named_in(n, text) for n in named):
        return "names none of what the verified conclusion names: " + ", ".join(sorted(named)[:5])
    dead = find_disproved(turns)
    failed_texts = [t.text for t in turns if t.seq in dead]
    failed_texts += [c.text for c in failure_conditions(turns) if c.kind == "attempt"]
    failed = set().union(*(_names(t) for t in failed_texts)) - _names(rule.conclusion) if failed_texts else set()
    for sentence in re.split(r"(?<=[.!?;])\s+|\n+", text):
        offered = [n for n in sorted(failed) if _named_in(n, sentence)]
        if offered and not _NEGATED.search(sentence):
            return f"offers what the log shows failing: {offered[0]}"
    return ""
