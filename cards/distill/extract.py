"""The rule stage within one experience: explicit conclusions, and claims a later turn disproved.

`extract_conclusions` finds explicit conclusion statements (a cue phrase, or the account of a
change a passing check then confirmed) and `find_disproved` finds claims a later turn
contradicted: "that wasn't it", the same error or failing test again, a revert.
`cards.conclude` ranks them with the closing report and the commit message.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from memoir.cards.commands import is_change, may_hold_verdict
from memoir.cards.loop import failed_explanations
from memoir.cards.signals import failing_tests
from memoir.cards.signatures import error_signature
from memoir.cards.values import Turn, per_turns
from memoir.cards.verdicts import is_passing, shows_failure_summary  # one verdict for every stage

# --- explicit conclusions and disproved judgments (within one experience) ------------------------

CONCLUSION_CUE = re.compile(
    r"(?i)\b(?:the fix (?:was|is)|root cause|turns out|so the answer is|works now because|"
    r"the (?:problem|issue|bug) (?:was|is)|the solution (?:was|is)|this (?:fixes|fixed)|"
    r"fixed (?:by|it by)|the reason (?:was|is)|in short|to summari[sz]e|conclusion)\b"
)
# A guess is a claim too: it can be disproved even though it never states a conclusion.
HYPOTHESIS_CUE = re.compile(
    r"(?i)\b(?:should (?:fix|solve|resolve|help)|probably|likely|i think|my guess|i suspect|"
    r"the culprit|must be)\b"
)
DISPROVAL = re.compile(
    r"(?i)\b(?:that wasn'?t it|that (?:didn'?t|did not) (?:work|help|fix)|still (?:fail(?:s|ing)?|broken|"
    r"the same error)|same error|wrong (?:guess|assumption)|my (?:earlier|previous) (?:guess|assumption|"
    r"claim) was wrong|not the (?:cause|problem|issue)|revert(?:ed|ing)?)\b"
)
_REVERT_CALL = re.compile(r"\bgit (?:revert|reset --hard|restore|checkout --)|\bundo\b", re.I)

CONFIRMED_CUE = "confirmed_test_run"


@dataclass(frozen=True, slots=True)
class Statement:
    """An explicit conclusion a session made, with the turn it came from."""

    seq: int
    text: str
    cue: str
    verified_by: str = ""  # "tN": a passing test run at turn N after a change confirmed it (as on a card)


@dataclass(frozen=True, slots=True)
class Disproval:
    """A claim (turn `seq`) that turn `by` contradicted; `reason` says how."""

    seq: int
    by: int
    reason: str  # contradicted | still_failing | reverted | failed_attempt


def _is_text(turn: Turn, role: str | None = None) -> bool:
    return turn.kind == "text" and bool(turn.text.strip()) and (role is None or turn.role == role)


def is_claim(turn: Turn) -> bool:
    return _is_text(turn, "assistant") and _states_claim(turn.text)


@lru_cache(maxsize=4096)
def _states_claim(text: str) -> bool:
    """Cached: each experience's turns are asked again by every later search for a disproval."""
    return bool(CONCLUSION_CUE.search(text) or HYPOTHESIS_CUE.search(text))


def find_disproved(turns: Sequence[Turn]) -> dict[int, Disproval]:
    """Claims a later turn contradicted: "that wasn't it", the same error or test failing again, a revert.

    Only the latest open claim can be disproved by a turn; a passing test run closes it (confirmed).
    Beside cue-worded claims, the explanation of a change after which the same check failed again
    with the same error is a failed attempt (`cards.loop.failed_explanations`), whatever its words.
    """
    turns = tuple(turns)
    found = dict(_find_disproved(turns))
    for seq, by in failed_explanations(turns).items():
        found.setdefault(seq, Disproval(seq, by, "failed_attempt"))
    return found


@per_turns  # drafting one card asks this of the same turns three times
def _find_disproved(turns: tuple[Turn, ...]) -> dict[int, Disproval]:
    out: dict[int, Disproval] = {}
    claim: Turn | None = None
    target_sig, target_tests = "", frozenset()
    last_sig, failing = "", frozenset()

    def disprove(by: Turn, reason: str) -> None:
        nonlocal claim
        assert claim is not None
        out[claim.seq] = Disproval(claim.seq, by.seq, reason)
        claim = None

    for turn in turns:
        if claim is not None and _is_text(turn) and turn.role in ("user", "assistant") and DISPROVAL.search(turn.text):
            disprove(turn, "contradicted")
        if is_claim(turn):
            claim, target_sig, target_tests = turn, last_sig, failing
            continue
        if turn.kind == "tool_call":
            if claim is not None and _REVERT_CALL.search(turn.text):
                disprove(turn, "reverted")
            continue
        if turn.kind not in ("error", "tool_result"):
            continue
        if turn.kind == "tool_result" and not may_hold_verdict(turn):
            continue  # a file body or an edit's acknowledgement neither confirms nor disproves
        bad = turn.kind == "error" or shows_failure_summary(turn.text)
        sig = error_signature(turn.text) if bad else ""
        tests = failing_tests(turn.text) if bad else frozenset()  # a run that lists FAILED tests is bad
        if claim is not None and ((sig and sig == target_sig) or (tests & target_tests)):
            disprove(turn, "still_failing")
        elif claim is not None and not bad and is_passing(turn.text):
            claim = None  # confirmed: a later error is a new problem, not a verdict on this claim
        if bad:
            last_sig = sig or last_sig
            failing = tests or failing
        elif is_passing(turn.text):
            last_sig, failing = "", frozenset()
    return out


def _confirmation(turns: Sequence[Turn], i: int) -> int | None:
    """Seq of a passing test run after a change that follows statement `i`, with no error between."""
    changed = False
    for j in range(i + 1, len(turns)):  # by index: a slice would copy the rest of the turns for every statement
        turn = turns[j]
        if _is_text(turn, "user"):
            return None
        if turn.kind == "error" or (turn.kind == "tool_result" and may_hold_verdict(turn) and shows_failure_summary(turn.text)):
            return None
        if not changed and _is_text(turn, "assistant") and len(turn.text.strip()) >= 40:
            return None  # a later statement is closer to the change than this one
        if is_change(turn):
            changed = True
        elif changed and turn.kind == "tool_result" and may_hold_verdict(turn) and is_passing(turn.text):
            return turn.seq
    return None


def _from_sentence(text: str, pos: int) -> str:
    """The text from the start of the sentence holding `pos` to the end: drops a disproval preamble."""
    ends = [i + len(sep) for sep in (". ", "! ", "? ", "\n") if (i := text.rfind(sep, 0, pos)) >= 0]
    return text[max(ends, default=0):].strip()


def extract_conclusions(turns: Sequence[Turn]) -> tuple[Statement, ...]:
    """Explicit conclusion statements that were not disproved, oldest first.

    A statement is a cue phrase ("the fix was", "root cause", "turns out", "so the answer is",
    "works now because", …) or, without one, the assistant's account of a change that a passing
    test run then confirmed.
    """
    dead = find_disproved(turns)
    found: list[Statement] = []
    for i, turn in enumerate(turns):
        if not _is_text(turn, "assistant") or turn.seq in dead:
            continue
        at = _confirmation(turns, i)
        confirmed = f"t{at}" if at is not None else ""
        m = CONCLUSION_CUE.search(turn.text)
        if m:
            found.append(Statement(turn.seq, _from_sentence(turn.text, m.start()), m.group(0).lower(), confirmed))
        elif confirmed:
            found.append(Statement(turn.seq, turn.text.strip(), CONFIRMED_CUE, confirmed))
    return tuple(found)
