"""A card's limits as the agent stated them: the conclusion's own scope sentences, never the fixed error.

A conclusion often bounds itself ("this does not apply when the pool is shared", "only for
Postgres", "except on Windows"): those sentences are the failure conditions a later reader needs,
so they go to Counterexamples beside what the rule stage found (the user's conditions, attempts
that did not help, disproved claims). The error the session fixed is not a limit: it says what the
fix removed, which Evidence already shows, not when the conclusion stops holding.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from functools import lru_cache

from memoir.cards.signatures import error_signature

MAX_LIMITS = 3
MAX_RESTATING_WORDS = 6  # "pytest tests/x.py fails with" around an error says nothing more than the error
MAX_LIMIT_CHARS = 200

# A sentence that bounds the claim it belongs to. "the only way", "not only … but" do not.
_SCOPE = re.compile(
    r"(?i)\b(?:does\s*n[o']t|do\s*n[o']t|doesn't|don't)\s+apply\b"
    r"|\b(?:does\s*n[o']t|do\s*n[o']t|doesn't|won'?t|will\s+not|would\s*n[o']t|cannot|can'?t)\s+"
    r"(?:apply|work|help|hold|cover|fix|happen)\b(?:\s+\w+){0,3}?\s+(?:when|if|on|in|for|with|under|to|unless|once)\b"
    r"|\bnot\s+(?:applicable|supported|available|needed|required)\s+(?:when|if|on|in|for|with|under|to|by)\b"
    r"|(?<!\bnot\s)\bonly\s+(?:applies|works|matters|helps|happens|holds|affects|when|if|for|with|on|under|after|"
    r"while|as long as)\b"
    r"|\bapplies\s+only\b|\bexcept\s+(?:when|if|on|in|for|with|under|that)\b|\bunless\b|\bas\s+long\s+as\b"
    r"|\b(?:still|also)\s+(?:fails|breaks|happens|occurs|hangs|crashes|appears|shows up)\s+(?:when|if|on|in|for|with|under)\b"
)
# A sentence the agent itself labels as a limit ("Limits: …", "Caveat: …", "Exceptions: …").
_LABELLED = re.compile(
    r"(?i)^(?:\*\*)?(?:limits?|limitations?|caveats?|counterexamples?|exceptions?|(?:[\w ]{1,20} and )?exceptions|"
    r"does not apply|not covered|known (?:issues?|limits?))(?:\*\*)?\s*:(?:\*\*)?\s+\S"
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*\"'(\[])|\n+")


MAX_LABELLED_CHARS = 400  # a paragraph the agent labelled "Limits:" moves whole, up to this much


def split_limits(conclusion: str) -> tuple[str, list[str]]:
    """The conclusion without the paragraphs the agent labelled as limits ("Limits: …",
    "Caveat: …", "Counterexamples: …"), and those paragraphs, each on one line. A conclusion that
    would be left with nothing else keeps them."""
    kept, labelled = [], []
    for para in re.split(r"\n[ \t]*\n", conclusion.strip()):
        line = " ".join(para.split())
        (labelled if _LABELLED.search(line) else kept).append(para if not _LABELLED.search(line) else line)
    if not kept:
        return conclusion.strip(), []
    return "\n\n".join(kept).strip(), [_clip(p, MAX_LABELLED_CHARS) for p in labelled]


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def scope_limits(conclusion: str) -> list[str]:
    """The conclusion's limits, one line each, in order: the paragraphs labelled as limits, then
    the sentences that say where the rest stops holding."""
    return list(_scope_limits(conclusion))


@lru_cache(maxsize=4096)
def _scope_limits(conclusion: str) -> tuple[str, ...]:
    """Cached: drafting, the gates and the title ask about the same conclusion and sentences again."""
    rest, labelled = split_limits(conclusion)
    found = []
    for part in _SENTENCE.split(rest if labelled else conclusion):
        sentence = " ".join(part.strip().lstrip("#>*-• \t").split())
        if sentence and (_LABELLED.search(sentence) or _SCOPE.search(sentence)) and not sentence.startswith("`"):
            found.append(_clip(sentence, MAX_LIMIT_CHARS))
    return tuple(dict.fromkeys(labelled + found))[:MAX_LIMITS]


STATED_LIMIT = "- stated limit: "  # how a Counterexamples line taken from the conclusion begins


def limit_lines(conclusion: str, already: str = "") -> list[str]:
    """Counterexamples lines for the conclusion's scope sentences not already in `already`."""
    return [STATED_LIMIT + s for s in scope_limits(conclusion) if s not in already]


def stated_limits(counterexamples: str) -> list[str]:
    """The limits a card's Counterexamples took from its conclusion, the agent's own words, label off."""
    return [re.sub(r"^[A-Za-z][\w ]{0,30}:\s+", "", line[len(STATED_LIMIT):])
            for line in counterexamples.splitlines() if line.startswith(STATED_LIMIT)]


def restates_error(sentence: str, signatures: Collection[str]) -> bool:
    """A sentence that only names an error of the session ("X fails with <the error>"): the error
    the fix removed restated, not a condition under which the conclusion fails."""
    sig = error_signature(sentence)
    if not sig or sig not in signatures:
        return False
    rest = set(re.findall(r"[\w.-]+", sentence.lower())) - set(re.findall(r"[\w.-]+", sig.lower()))
    return len(rest) <= MAX_RESTATING_WORDS
