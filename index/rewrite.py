"""Turn a prompt into a retrieval statement: drop greetings and filler, keep what identifies the problem.

A prompt is written for an agent ("hi! ok, next: could you please look at…"); the index holds
conclusions. What carries over is the observed error, module and file names, config keys, the
constraints and the wanted result, so those are kept (errors first) and the chatter is dropped.
Pure text in, text out: the input is already sanitized.
"""

from __future__ import annotations

import re

from memoir.cards.hosts.strip import strip_injected
from memoir.cards.signals import is_error_line
from memoir.cards.signatures import error_signature

MAX_QUERY_CHARS = 1000  # MiniLM reads ~256 word pieces; a pasted log must not crowd out the question
MAX_ERROR_LINES = 3

# Openers and politeness that say nothing about the problem; matched at the start of a clause.
_FILLER = re.compile(
    r"(?i)^(?:\s*(?:(?:hi|hello|hey|yo)(?: there| all| team| again)?|good (?:morning|afternoon|evening)|thanks?(?: you)?|thx|ok(?:ay)?|"
    r"so|well|alright|great|cool|please|pls|hmm+|um+|also|and|now|next|"
    r"new task|one more thing|unrelated,? but|quick question|"
    r"(?:can|could|would|will) you(?: please)?|i(?:'d| would) like you to|i need you to|"
    r"help me(?: (?:to|out|with this|please))?|let'?s|i want you to)\b[\s,:;.!?-]*)+"
)
# Whole sentences that are only social.
_SOCIAL = re.compile(
    r"(?i)^\s*(?:thanks?(?: you)?(?: (?:a lot|so much|very much))?|cheers|much appreciated|"
    r"hope you'?re (?:well|doing well)|you'?re (?:the best|great)|sorry(?: for .*)?|no rush)\s*[.!]*\s*$"
)
# Traceback frames and log prefixes: every stack has them, none identifies the problem.
_NOISE = re.compile(r'(?i)^\s*(?:traceback \(most recent call last\):?|file "[^"]*", line \d+.*|at [\w.$<>]+\(.*\))\s*$')
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'])|\n+")

_DEBUG = re.compile(
    r"(?i)\b(?:error|exception|traceback|fail(?:s|ed|ing|ure)?|crash(?:es|ed|ing)?|broken|bug|panic(?:s|ked)?|"
    r"hang(?:s|ing)?|stuck|doesn'?t work|not working|wrong|regression|fix)\b"
)
_REFACTOR = re.compile(r"(?i)\b(?:refactor(?:ing)?|rename|clean ?up|restructure|extract (?:a |the )?(?:function|class|module))\b")
_CONFIG = re.compile(r"(?i)\b(?:configure|config(?:uration)?|set ?up|install|settings?|env(?:ironment)? var(?:iable)?s?)\b")
# A choice between alternatives ("workspaces vs one state per environment, which is better"): a
# decision, answered by a card that chose (config, feature, refactor, an answer), not by a bug fix.
_DECISION = re.compile(r"(?i)\b(?:vs\.?|versus)\s|\bwhich (?:one )?(?:is|would be) (?:better|best|preferable)\b|"
                       r"\b(?:should|do) (?:we|i) (?:use|pick|choose|go with)\b[^?]*\bor\b")
_FEATURE = re.compile(r"(?i)\b(?:add|implement|support|build|create|introduce|new (?:endpoint|command|option|feature))\b")


def _clauses(text: str) -> list[str]:
    return [c.strip() for c in _SENTENCE.split(text) if c and c.strip()]


def _defill(clause: str) -> str:
    return _FILLER.sub("", clause, count=1).strip()


def rewrite_query(text: str) -> str:
    """A retrieval statement: error signature first, then the prompt without greetings and filler.

    Args:
        text: a sanitized prompt (host-injected blocks such as `<memoir-context>` are dropped here).
    """
    text = strip_injected(text)
    kept: list[str] = []
    errors: list[str] = []
    for clause in _clauses(text):
        if _SOCIAL.match(clause) or _NOISE.match(clause):
            continue
        clause = _defill(clause)
        if not clause or not re.search(r"\w", clause):
            continue
        if is_error_line(clause) and len(errors) < MAX_ERROR_LINES and len(clause) > 200:
            # A long pasted log line: its error part is what a card would name.
            errors.append(clause[:200])
            continue
        kept.append(clause)
    signature = error_signature(text)
    parts = ([signature] if signature and signature not in text[:400] else []) + kept + errors
    out = " ".join(" ".join(parts).split())
    # Nothing left (a bare "thanks"): there is nothing to search for, and recall answers empty.
    return out[:MAX_QUERY_CHARS]


def query_task_type(text: str) -> str:
    """The task type a prompt asks for, only on a clear cue; '' (unknown) lets every card through."""
    if error_signature(text) or _DEBUG.search(text):
        return "debug"
    if _DECISION.search(text):
        return "decision"
    if _REFACTOR.search(text):
        return "refactor"
    if _CONFIG.search(text):
        return "config"
    if _FEATURE.search(text):
        return "feature"
    return ""
