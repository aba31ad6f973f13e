"""What a problem loop's turns show about its outcome: was the fix confirmed, and what made it fail.

Pure functions over ordered `Turn`s (a session or one experience), for every host:

- `verification`: the check that confirmed a fix: it failed before a change and passes after it
  (the same check, or the same outcome by another route), and no later failure undid it; else a
  test/build run that passes after the change and was not already green before it.
- `failure_conditions`: the user's sentences that say when it fails ("only with --workers 6"),
  attempts that did not help (a change, then the same check failing again), and the error the fix removed.

The walk of checks and changes is `cards.loop`; a result's verdict is `cards.verdicts`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memoir.cards.commands import one_line, same_target, undoes
from memoir.cards.phrasebook import PROBLEM_REPORTS, first_rule
from memoir.cards.loop import Walk, fixed_loop, loops, runs_check, walk
from memoir.cards.values import Turn, per_turns

MAX_CONDITIONS = 8
MAX_SENTENCE = 160

# --- conditions in what the user said ---------------------------------------------------------------
# A sentence that says when the problem shows, on its own ("only fails with --workers 6") ...
_CONDITION = re.compile(
    r"(?i)\bwork(?:s|ed)?\s+(?:fine|ok|okay|well|perfectly|great)\s+(?:with|when|on|in|if|locally|before|under)\b|"
    r"\bwork(?:s|ed)\s+(?:with|when|on|if|locally|before|under)\b|"
    r"\bonly\s+(?:when|with|on|in|if|after|under|for|happens|fails|breaks|occurs|sometimes|once)\b|"
    r"\b(?:happens|fails|failing|breaks|crashes|occurs|hangs)\s+(?:only\s+|just\s+)?"
    r"(?:when|with|under|after|if|once|whenever)\b|\berrors?\s+(?:only\s+)?(?:when|whenever|once)\b|"
    r"\b(?:does\s*n[o']t|doesn't|never)\s+(?:happen|fail|break|occur)\b|"
    r"\b(?:intermittent(?:ly)?|flaky|randomly|occasionally|every\s+other|under\s+load)\b"
)
# ... or a context ("since I bumped X", "after upgrading", "on CI") in a sentence about the problem:
# a pasted spec's "after switching tools" is no condition.
_CONTEXT = re.compile(
    r"(?i)\bsince\s+(?:i|we|you|they)\s+\w+ed\b|\bsince\s+(?:upgrading|updating|bumping|switching|moving|"
    r"migrating|the\s+(?:upgrade|update|migration|bump|switch|deploy|merge|release))\b|"
    r"\bafter\s+(?:i\s+|we\s+)?(?:upgrading|updating|bumping|switching|moving|migrating|installing|enabling|"
    r"changing|adding|merging|deploying|upgraded|updated|bumped|switched|moved|changed|the\s+(?:upgrade|update|"
    r"migration|bump|deploy|merge))\b|"
    r"\b(?:on|in)\s+(?:CI|the\s+CI|GitHub\s+Actions|production|prod|staging|Windows|macOS|Linux|docker|"
    r"the\s+container|the\s+server)\b|\blocally\b|\bon\s+my\s+machine\b"
)
_PROBLEM = re.compile(
    r"(?i)\b(?:fail\w*|errors?|crash\w*|break\w*|broke|broken|bug|issue|wrong|hang\w*|lock(?:ed|s)?|slow|"
    r"time(?:s|d)?\s*out|timeout|shows?\s+up|started|appears|happens|red|exception|panic\w*|"
    r"does\s*n[o']t\s+work|not\s+working|stopped)\b"
)
_CONDITION_HINTS = ("work", "only", "happen", "fail", "break", "crash", "occur", "hang", "error", "since",
                    "after", " on ", " in ", "local", "machine", "never", "intermittent", "flaky", "random",
                    "occasional", "every other", "load")
_FENCE = re.compile(r"```.*?(?:```|$)", re.S)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_LOG_LINE = ("at ", "File \"", "Traceback", "E  ", "$ ", "> ", "[")


@dataclass(frozen=True, slots=True)
class Verification:
    """The run that confirmed a fix: a command that failed before passes after a change."""

    seq: int  # the passing result turn
    command_seq: int  # the tool call that ran it
    command: str  # the command, one line
    signature: str  # the error it cleared ('' when the failure named none)
    same_command: bool  # False: the failure was pasted (another route confirmed it), or none failed before
    failed_seq: int | None  # the failing result (or pasted error) it cleared; None when it cleared none


@dataclass(frozen=True, slots=True)
class FailureCondition:
    """One short line on what made the problem appear."""

    seq: int
    text: str
    kind: str  # condition (the user said when) | attempt (a change that did not help) | error (what the fix removed)


# --- verification -------------------------------------------------------------------------------


def _from_loop(turns: tuple[Turn, ...]) -> Verification | None:
    """The latest loop whose check passed again after a change, and that nothing later undid."""
    lp = fixed_loop(turns)
    if lp is None or lp.fix is None:
        return None
    run = lp.fix.check
    sigs = [lp.failure.signature] + [a.check.signature for a in lp.failed_attempts]
    cleared = next((s for s in reversed(sigs) if s), "")
    last_failed = lp.failed_attempts[-1].check.result.seq if lp.failed_attempts else lp.failure.seq
    return Verification(run.result.seq, run.call.seq, one_line(run.command), cleared,
                        bool(lp.failure.command), last_failed)


def _fresh_check(w: Walk) -> Verification | None:
    """A passing test/build run after the work's first change (after the last failure, if any), of a
    check that was not already green before that change and did not fail again after.

    It clears no failure: a check that passed before the change proves nothing, and one that never
    failed cannot say the failure is gone.
    """
    last_failure = max([r.at_result for r in w.runs if r.failed] + [i for i, _, _ in w.pasted], default=-1)
    first_change = next((i for i, _ in w.changes if i > last_failure), None)
    if first_change is None:
        return None
    found = None
    for run in w.runs:
        if run.at_call < first_change or not run.passed or not runs_check(run.command):
            continue
        if any(undoes(t) for i, t in w.changes if first_change < i <= run.at_call):
            continue  # this work was put back as it was: a green check after that proves no change
            # (a revert that is itself the first change, of an earlier commit, is the fix)
        if any(r.passed and r.at_result < first_change and same_target(r.command, run.command) for r in w.runs):
            continue  # already green before the change
        if any(r.failed and r.at_call > run.at_result and same_target(run.command, r.command) for r in w.runs):
            continue  # the check did not hold
        found = Verification(run.result.seq, run.call.seq, one_line(run.command), "", False, None)
    return found


def verification(turns: Sequence[Turn]) -> Verification | None:
    """The run that confirms the change in `turns`, or None.

    Args:
        turns: one session's or experience's turns, in order.

    A check that failed (an error result, a failing output, or an error the user pasted) passes
    after a change: the same command or test target once wrapping is stripped (`cd x &&`, `FOO=1`,
    `2>&1 | tail -3`, `-x -q -v`), or the same outcome by another route (`cards.loop.same_check`);
    a later failure on the same goal cancels it. Without one, a test/build run that passes after
    the change, and was not already green before it, counts with `same_command=False` and no
    cleared signature.
    """
    return _verification(tuple(turns))


@per_turns  # segmenting, drafting and the failure conditions all ask of the same turns
def _verification(turns: tuple[Turn, ...]) -> Verification | None:
    return _from_loop(turns) or _fresh_check(walk(turns))


# --- failure conditions -----------------------------------------------------------------------------


def _shorten(text: str, limit: int = MAX_SENTENCE) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip(",;:") + "…"


def _condition_sentences(text: str) -> list[str]:
    """Sentences of a user message that state when the problem shows (pasted code and logs left out)."""
    low = text.lower()
    if not any(h in low for h in _CONDITION_HINTS):
        return []
    prose = _FENCE.sub(" ", text[:8000]) if "```" in text else text[:8000]
    out = []
    for sentence in _SENTENCE_END.split(prose):
        sentence = sentence.strip()
        if sentence.startswith(_LOG_LINE) or not 8 <= len(sentence) <= 400:
            continue  # a pasted stack frame or log line, not something the user said
        if _CONDITION.search(sentence) or (_CONTEXT.search(sentence) and _PROBLEM.search(sentence)):
            out.append(_shorten(sentence))
    return out


def _attempts(turns: tuple[Turn, ...]) -> list[FailureCondition]:
    """Changes after which the same check still failed with a named error: `tried X → still Y`."""
    out = []
    for lp in loops(turns):
        before = lp.failure.signature
        for attempt in lp.attempts:
            sig = attempt.check.signature
            # A bare `exit code 1` says nothing about which error stayed: only named errors count; a
            # different error after the change is progress, not an attempt that did not help.
            if not attempt.worked and sig == before and sig and not sig.startswith("exit code"):
                out.append(FailureCondition(attempt.check.result.seq, f"tried {attempt.tried()} → still `{sig}`", "attempt"))
            before = sig
    return out


REPORT_LEAD = 400  # characters of a user's message read for a problem told in words


def failure_conditions(turns: Sequence[Turn]) -> list[FailureCondition]:
    """What made the problem appear, one short line each, deduplicated, at most MAX_CONDITIONS, in turn order.

    Args:
        turns: one session's or experience's turns, in order.

    The user's sentences that state a condition ("works fine with 1 worker", "only on CI", "since I
    bumped X to 2.0"), changes that did not help (the same error signature again after them), and
    the error a confirmed fix removed.
    """
    turns = tuple(turns)
    # A condition is the user's only in a message that tells of a problem (its lead, or the sentence
    # itself): a feature request's "only after X is Y shown" is a requirement, not when a failure shows.
    found = [FailureCondition(t.seq, s, "condition")
             for t in turns if t.role == "user" and t.kind == "text" for s in _condition_sentences(t.text)
             if first_rule(PROBLEM_REPORTS, t.text[:REPORT_LEAD]) or first_rule(PROBLEM_REPORTS, s)]
    found += _attempts(turns)
    fix = verification(turns)
    cleared = None
    if fix and fix.signature and fix.failed_seq is not None:
        cleared = FailureCondition(fix.failed_seq, f"fails with `{fix.signature}` before the fix", "error")
    seen: set[str] = set()
    unique = []
    for item in sorted(found, key=lambda c: c.seq):
        key = item.text.lower()
        if key not in seen:
            seen.add(key)
            unique.append(item)
    # The cleared error always stays: it is what the fix is about.
    kept = unique[: MAX_CONDITIONS - 1 if cleared else MAX_CONDITIONS]
    if cleared and cleared.text.lower() not in seen:
        kept.append(cleared)
    return sorted(kept, key=lambda c: c.seq)
