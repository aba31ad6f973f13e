"""Rule segmentation: cut a session's turns into experiences, one problem loop each.

Boundaries come from what happened, never from character or turn counts: an explicit task
switch by the user, a new request after a wrap-up (tests pass, commit, "done"), one error
signature replaced by another, a long pause, a host compaction boundary. Cuts fall only
before a user message, before a tool call, or at a compaction summary, so an assistant's
conclusion is never split across two experiences.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

from cards.model import Experience, Turn
from cards.signatures import error_signature

_SWITCH = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|great|thanks|thank you|cool|perfect|nice|good)\W+)*"
    r"(?:now\b|next\b|new task|another (?:thing|question|task|issue)|moving on|move on|"
    r"let'?s (?:move on|switch|now|turn to|look at something else)|switch(?:ing)? to|unrelated|"
    r"different (?:topic|question|task)|separately|one more thing|on another note|also,? can you|"
    r"new question)",
    re.I,
)
_WRAP_TOOL = re.compile(
    r"\b(?:\d+ passed|all tests pass(?:ed)?|tests? passed|OK \(\d+ tests?\)|"
    r"Ran \d+ tests?[\s\S]{0,40}\bOK\b|build succeeded|compiled successfully)",
    re.I,
)
_WRAP_WORDS = ("pass", "ok (", "ran ", "succeeded", "successfully")  # one is in every _WRAP_TOOL match
_COMMIT_OUTPUT = re.compile(r"\[[\w./-]+ [0-9a-f]{7,}\] ")  # git commit's "[main 1a2b3c4] message"
_WRAP_SAY = re.compile(
    r"\b(?:all (?:tests|checks) (?:now )?pass|(?:it|this|that|everything) (?:now )?works|"
    r"works now|is (?:now )?fixed|fixed it|committed|done[.!]|that'?s done|all set)\b",
    re.I,
)
_STILL_FAILING = re.compile(r"\b(?:[1-9]\d* (?:failed|errors?)|FAILED|FAIL:|Traceback)\b")
_COMMIT = re.compile(r"\bgit commit\b")


@dataclass(frozen=True)
class SegmentRules:
    """The few knobs segmentation has."""

    pause: timedelta = timedelta(minutes=30)


def is_task_switch(text: str) -> bool:
    return bool(_SWITCH.match(text.strip()))


def is_wrap_up(turn: Turn) -> bool:
    """Tool use moving to wrap-up: green tests, a commit, or the assistant declaring it done."""
    if turn.kind == "tool_call":
        return bool(_COMMIT.search(turn.text))
    if turn.kind == "tool_result":
        tail = turn.text[-2000:]
        low = tail.lower()
        wrapped = (any(w in low for w in _WRAP_WORDS) and _WRAP_TOOL.search(tail)) or _COMMIT_OUTPUT.search(tail)
        return bool(wrapped) and not _STILL_FAILING.search(tail)
    if turn.role == "assistant" and turn.kind == "text":
        return bool(_WRAP_SAY.search(turn.text))
    return False


def _is_user_text(turn: Turn) -> bool:
    return turn.role == "user" and turn.kind == "text" and bool(turn.text.strip())


def _last_tool_call(turns: list[Turn]) -> int:
    for i in range(len(turns) - 1, -1, -1):
        if turns[i].kind == "tool_call":
            return i
    return -1


class _Builder:
    def __init__(self, host: str, session_id: str):
        self.host, self.session_id = host, session_id
        self.out: list[Experience] = []
        self.reset()

    def reset(self) -> None:
        self.turns: list[Turn] = []
        self.wrapped = False
        self.signature = ""
        self.resolved_since_signature = False

    def close(self, boundary: str) -> None:
        continued = self.boundary_in == "error_change" and any(t.kind == "tool_call" for t in self.turns)
        if _has_substance(self.turns) or continued:
            self.out.append(self._experience(self.turns, self.boundary_in))
        self.boundary_in = boundary
        self.reset()

    def _experience(self, turns: list[Turn], boundary: str) -> Experience:
        signatures = [error_signature(t.text) for t in turns if t.kind == "error"]
        signatures = [s for s in signatures if s]
        return Experience(
            host=self.host,
            session_id=self.session_id,
            turns=tuple(turns),
            boundary=boundary,
            error_signature=signatures[0] if signatures else "",
        )


def _has_substance(turns: list[Turn]) -> bool:
    """A user asked and the assistant acted or answered at some length; pleasantries are not experiences."""
    asked = sum(len(t.text.strip()) for t in turns if _is_user_text(t))
    acted = any(t.role == "assistant" and t.kind == "tool_call" for t in turns)
    answered = sum(len(t.text.strip()) for t in turns if t.role == "assistant" and t.kind == "text")
    return asked > 0 and (acted or answered >= 40 or (asked >= 20 and answered > 0))


def segment_session(turns: list[Turn] | tuple[Turn, ...], rules: SegmentRules = SegmentRules()) -> list[Experience]:
    """Cut one session's ordered turns into experiences; compaction summaries are boundaries, not content."""
    if not turns:
        return []
    b = _Builder(turns[0].host, turns[0].session_id)
    b.boundary_in = "start"
    last_ts = None
    for turn in turns:
        if turn.kind == "summary":
            b.close("compaction")
            continue
        if b.turns and _is_user_text(turn):
            paused = last_ts and turn.timestamp and turn.timestamp - last_ts > rules.pause
            if paused:
                b.close("pause")
            elif b.wrapped:
                b.close("wrap_up")
            elif is_task_switch(turn.text):
                b.close("task_switch")
        if turn.kind == "error":
            sig = error_signature(turn.text)
            if sig and b.signature and sig != b.signature and b.resolved_since_signature:
                cut = _last_tool_call(b.turns)
                if cut > 0 and _has_substance(b.turns[:cut]):
                    head, tail = b.turns[:cut], b.turns[cut:]
                    b.out.append(b._experience(head, b.boundary_in))
                    b.boundary_in = "error_change"
                    b.reset()
                    b.turns.extend(tail)
            if sig:
                b.signature = sig
                b.resolved_since_signature = False
        elif turn.kind == "tool_result" and b.signature:
            b.resolved_since_signature = True
        b.turns.append(turn)
        if is_wrap_up(turn):
            b.wrapped = True
        elif _is_user_text(turn):
            b.wrapped = False
        if turn.timestamp:
            last_ts = turn.timestamp
    b.close("end")
    return b.out
