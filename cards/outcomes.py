"""What a problem loop's turns show about its outcome: was the fix confirmed, and what made it fail.

Pure functions over ordered `Turn`s (a session or one experience), for every host:

- `verification`: the re-run that confirmed a fix: a command that failed is run again after a
  change and now passes; else a passing test/build run after a change that follows the last failure.
- `failure_conditions`: the user's sentences that say when it fails ("only with --workers 6"),
  attempts that did not help (a change, then the same error again), and the error the fix removed.

A result's verdict is `cards.verdicts`; what a call ran and whether it changed something is
`cards.commands`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from memoir.cards.commands import (
    command_of, describe_change, is_change, is_test_or_build, one_line, only_looks, same_target,
)
from memoir.cards.signals import is_declined
from memoir.cards.signatures import error_signature, is_error_output
from memoir.cards.values import Turn, per_turns
from memoir.cards.verdicts import is_failing, is_passing

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
    same_command: bool  # False: no failing command was re-run; a test/build run after the last change passed
    failed_seq: int  # the failing result (or pasted error) it cleared


@dataclass(frozen=True, slots=True)
class FailureCondition:
    """One short line on what made the problem appear."""

    seq: int
    text: str
    kind: str  # condition (the user said when) | attempt (a change that did not help) | error (what the fix removed)


# --- the walk: runs, changes, pasted failures -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Run:
    """A shell command and its result, where both sit in the turn order."""

    call: Turn
    result: Turn
    command: str
    at_call: int  # index of the call in the walked turns
    at_result: int
    failed: bool
    passed: bool
    signature: str


@dataclass(frozen=True, slots=True)
class _Walk:
    runs: tuple[_Run, ...]
    changes: tuple[tuple[int, Turn], ...]  # (index, change turn)
    pasted: tuple[tuple[int, Turn, str], ...]  # (index, user turn, signature) for errors a user pasted


@functools.lru_cache(maxsize=64)  # verification and failure_conditions walk the same turns
@per_turns
def _walk(turns: tuple[Turn, ...]) -> _Walk:
    runs: list[_Run] = []
    changes: list[tuple[int, Turn]] = []
    pasted: list[tuple[int, Turn, str]] = []
    pending: list[tuple[int, Turn]] = []  # calls awaiting results, in order
    for i, turn in enumerate(turns):
        if turn.kind == "tool_call":
            pending.append((i, turn))
            if is_change(turn):
                changes.append((i, turn))
        elif turn.role == "tool" and turn.kind in ("tool_result", "error"):
            if turn.kind == "tool_result" and turn.tool_name == "edit":
                changes.append((i, turn))  # Aider logs the edit its reply made as "Applied edit to x.py"
                continue
            # Results carry no call id here: take the oldest open call of the same tool.
            name = turn.tool_name
            k = next((k for k, (_, c) in enumerate(pending) if not name or c.tool_name == name), None)
            if k is None:
                continue
            at_call, call = pending.pop(k)
            command = command_of(call)
            if not command or is_declined(turn.text):
                continue
            if only_looks(command):
                continue  # `rg x` finding nothing is no failure, and finding something no fix
            if is_change(call) and not is_test_or_build(command):
                continue  # a patch or an install that failed is a failed attempt at a change, not the problem
            failed = turn.kind == "error" or is_failing(turn.text)
            passed = not failed and (turn.kind == "tool_result" or is_passing(turn.text))
            runs.append(_Run(call, turn, command, at_call, i, failed, passed,
                             error_signature(turn.text) if failed else ""))
        elif turn.role == "user" and turn.kind == "text" and is_error_output(turn.text):
            sig = error_signature(turn.text)
            if sig:
                pasted.append((i, turn, sig))
    return _Walk(tuple(runs), tuple(changes), tuple(pasted))


def _changed_between(walk: _Walk, after: int, before: int) -> list[Turn]:
    return [t for i, t in walk.changes if after < i < before]


def _cleared_signature(fails: list[_Run]) -> str:
    """The signature of the latest failure that named one."""
    return next((f.signature for f in reversed(fails) if f.signature), "")


def _same_command(walk: _Walk) -> Verification | None:
    """The latest passing re-run of a failed command, after a change, that no later failure undid."""
    failed = [r for r in walk.runs if r.failed]
    found = None
    for run in walk.runs:
        if not run.passed:
            continue
        fails = [f for f in failed if f.at_result < run.at_call and same_target(f.command, run.command)]
        if not fails or not _changed_between(walk, fails[-1].at_result, run.at_call):
            continue  # never failed, or re-run with nothing changed (a flaky pass proves no fix)
        if any(r.at_call > run.at_result and same_target(run.command, r.command) for r in failed):
            continue  # the fix did not hold
        found = Verification(run.result.seq, run.call.seq, one_line(run.command), _cleared_signature(fails),
                             True, fails[-1].result.seq)
    return found


def _any_check_after_last_failure(walk: _Walk) -> Verification | None:
    """A passing test/build run after a change that follows the last failure (a run or a pasted error)."""
    last_run = next((r for r in reversed(walk.runs) if r.failed), None)
    last_paste = walk.pasted[-1] if walk.pasted else None
    if last_run is None and last_paste is None:
        return None
    if last_run is not None and (last_paste is None or last_run.at_result > last_paste[0]):
        at, failed_seq = last_run.at_result, last_run.result.seq
        sig = _cleared_signature([r for r in walk.runs if r.failed and r.at_result <= at])
    else:
        at, failed_seq, sig = last_paste[0], last_paste[1].seq, last_paste[2]
    first_change = next((i for i, _ in walk.changes if i > at), None)
    if first_change is None:
        return None
    for run in walk.runs:
        if run.at_call > first_change and run.passed and is_test_or_build(run.command):
            return Verification(run.result.seq, run.call.seq, one_line(run.command), sig, False, failed_seq)
    return None


def verification(turns: Sequence[Turn]) -> Verification | None:
    """The fix-confirming re-run in `turns`, or None.

    Args:
        turns: one session's or experience's turns, in order.

    A command that failed (an error result or a failing output) and is later run again, the same
    command or the same test target once wrapping is stripped (`cd x &&`, `FOO=1`, `2>&1 | tail -3`,
    `-x -q -v`), passing after at least one change. Without one, a passing test/build command after
    a change that follows the last failure counts, with `same_command=False`.
    """
    return _verification(tuple(turns))


@per_turns  # segmenting, drafting and the failure conditions all ask of the same turns
def _verification(turns: tuple[Turn, ...]) -> Verification | None:
    walk = _walk(turns)
    return _same_command(walk) or _any_check_after_last_failure(walk)


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


def _attempts(walk: _Walk) -> list[FailureCondition]:
    """Changes followed by the same error again: `tried X → still Y`."""
    out = []
    # A bare `exit code 1` says nothing about which error stayed: only named errors count.
    failures = [(r.at_result, r.result.seq, r.signature) for r in walk.runs
                if r.failed and r.signature and not r.signature.startswith("exit code")]
    failures += [(i, t.seq, sig) for i, t, sig in walk.pasted]
    failures.sort()
    for (at_a, _, sig_a), (at_b, seq_b, sig_b) in zip(failures, failures[1:]):
        if sig_a != sig_b:
            continue
        tried = list(dict.fromkeys(describe_change(t) for t in _changed_between(walk, at_a, at_b)))
        if tried:
            what = ", ".join(tried[:2]) + (f" and {len(tried) - 2} more" if len(tried) > 2 else "")
            out.append(FailureCondition(seq_b, f"tried {what} → still `{sig_b}`", "attempt"))
    return out


def failure_conditions(turns: Sequence[Turn]) -> list[FailureCondition]:
    """What made the problem appear, one short line each, deduplicated, at most MAX_CONDITIONS, in turn order.

    Args:
        turns: one session's or experience's turns, in order.

    The user's sentences that state a condition ("works fine with 1 worker", "only on CI", "since I
    bumped X to 2.0"), changes that did not help (the same error signature again after them), and
    the error a confirmed fix removed.
    """
    turns = tuple(turns)
    walk = _walk(turns)
    found = [FailureCondition(t.seq, s, "condition")
             for t in turns if t.role == "user" and t.kind == "text" for s in _condition_sentences(t.text)]
    found += _attempts(walk)
    fix = verification(turns)
    cleared = None
    if fix and fix.signature:
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
