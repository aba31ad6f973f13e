"""A tool output's verdict: did the check it ran pass or fail?

`is_passing` / `is_failing` read the pass and fail summaries of many tools (pytest, go test,
cargo, jest/vitest, mocha, tsc, mypy, gradle, terraform, HTTP, …; the vocabulary is
`cards.signals`) and fall back on the error analysis of `cards.signatures`. Text in, bool out:
which tools' results can hold a verdict at all is `cards.commands.may_hold_verdict`.
"""

from __future__ import annotations

import functools
import re

from memoir.cards.signals import (
    ERROR_GATE_WORDS, PASS_ANCHORS, PASS_TAIL, decode_output, exit_code, has_fail_summary, has_pass_summary,
)
from memoir.cards.signatures import is_error_output

GATE_TAIL = 400  # the word gates read the last lines only; the summaries themselves read PASS_TAIL
ERROR_HEAD = 200  # a failure shows at the start (the command refused to run) or at the end of an output


@functools.lru_cache(maxsize=8192)
def shows_failure_summary(text: str) -> bool:
    """A cheap verdict for hot loops: a failure summary or a non-zero exit, without reading error lines."""
    return has_fail_summary(decode_output(text)[0][-PASS_TAIL:]) or (exit_code(text) or 0) != 0


@functools.lru_cache(maxsize=8192)
def _window(text: str) -> tuple[str, str]:
    """(the last lines, the first and last lines) of an output, lowercased once for the word gates.

    The gates only decide whether the full analysis runs: a verdict, or the error line an output
    piped through `tail` ends in, sits in its last few lines.
    """
    t = decode_output(text)[0]
    tail = t[-GATE_TAIL:].lower()
    return tail, tail if len(t) <= ERROR_HEAD + GATE_TAIL else t[:ERROR_HEAD].lower() + "\n" + tail


def _may_be_error(text: str) -> bool:
    low = _window(text)[1]
    return any(w in low for w in ERROR_GATE_WORDS)


@functools.lru_cache(maxsize=8192)
def is_failing(text: str) -> bool:
    """A failure summary (`2 failed`, `FAILED`, `BUILD FAILED`, `✗`), a non-zero exit, or an error line
    in an output that does not end in a pass summary (a green test run may log the errors it tests)."""
    if shows_failure_summary(text):
        return True
    return _may_be_error(text) and not has_pass_summary(decode_output(text)[0][-PASS_TAIL:]) and is_error_output(text)


@functools.lru_cache(maxsize=8192)
def _may_pass(text: str) -> bool:
    if decode_output(text)[1] is not None:
        return True  # an exit status in JSON (Codex) is read by `exit_code`, wherever it sits
    low = _window(text)[0]
    return any(a in low for a in PASS_ANCHORS)


@functools.lru_cache(maxsize=8192)
def is_passing(text: str) -> bool:
    """A pass summary (`5 passed`, `ok  pkg`, `test result: ok`, `Found 0 errors`, `200 OK`) or exit 0; no failure."""
    if not _may_pass(text):
        return False
    if not has_pass_summary(decode_output(text)[0][-PASS_TAIL:]) and exit_code(text) != 0:
        return False
    return not is_failing(text)


# The assistant reading an output it just saw as the failure still there ("Progress, but still
# refused", "Same error.", "That didn't help"): a silent or clipped output says nothing itself.
_STILL_FAILING = re.compile(
    r"(?i)\b(?:still|again)\s+(?:fail\w*|refus\w*|broken|crash\w*|erroring|errors?\b|red\b|times?\s+out|"
    r"timing\s+out|hangs?|hanging|panic\w*|the\s+same\s+error)|\bsame\s+(?:error|failure)\b|"
    r"\b(?:did\s*n[o']t|did\s+not|does\s*n[o']t)\s+(?:help|work|fix\s+it)\b|\bno\s+luck\b"
)
_FIRST_SENTENCE = re.compile(r"(?<=[.!?])\s|\n")


def reads_as_still_failing(text: str) -> bool:
    """Does the assistant's first sentence after an output say the failure is still there?"""
    first = _FIRST_SENTENCE.split(text.strip(), 1)[0][:200]
    return bool(_STILL_FAILING.search(first))
