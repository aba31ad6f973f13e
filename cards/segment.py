"""Rule segmentation: cut a session's turns into experiences, one task or problem loop each.

Real agent sessions mark where a task ends, so those marks are the boundaries: a `git commit`
that succeeded, a task tracker closed (`bd close`, `gh issue close`, every TodoWrite/update_plan
item completed), a pull request created, a plan accepted (ExitPlanMode), `/clear` and `/compact`,
a host compaction summary, the user moving to a new task or saying the work is done, a long
pause, and one error signature replaced by another. Never a character or turn count.

Cuts fall only before a user message, before a tool call, or at a compaction summary, so an
assistant's closing report stays with the work it reports on. Weak signals (tests green, the
assistant saying "done", the user's "now …") do not cut while a check is still red: one
red→green cycle is one experience.

`skip_reason` says why an experience is not worth a card (greeting, warm-up, only a slash
command, interrupted before any tool ran, Aider's start-up banner); the run counts those.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

from memoir.cards.values import Experience, Turn
from memoir.cards.commands import command_of, is_inspection, may_hold_verdict, plan_items
from memoir.cards.cues import (
    is_chatter, is_commit_output, is_interruption, is_tooling_error, pasted_signature, problem_signature, slash_command,
)
from memoir.cards.hosts.registry import LOOK_TOOLS, PLAN_ACCEPT_TOOLS, PLAN_TOOLS, commits_each_reply, opens_with_banner
from memoir.cards.loop import runs_check, walk
from memoir.cards.outcomes import verification
from memoir.cards.phrasebook import GO_AHEAD, PROBLEM_REPORTS, QUESTIONS, REJECTS, WAITS_FOR_USER, first_rule
from memoir.cards.verdicts import is_failing, is_passing, shows_failure_summary
from memoir.cards.signatures import error_signature

_SWITCH = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|great|thanks|thank you|cool|perfect|nice|good|alright|awesome)\W+)*"
    r"(?:now\b|next\b|new task|another (?:thing|question|task|issue)|moving on|move on|"
    r"let'?s (?:move on|switch|now|turn to|look at something else)|switch(?:ing)? to|unrelated|"
    r"different (?:topic|question|task)|separately|one more thing|on another note|also,? can you|"
    r"new question|next up\b|on to\b)",
    re.I,
)
# Only these mild openers wait for a red check to go green; any other switch phrase ("ok, next:",
# "new task:", "unrelated, but") cuts at once: the user left the old problem on purpose.
_SOFT_SWITCH = re.compile(r"^\W*(?:now\b|also,? can you)", re.I)
_USER_DONE = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|great|thanks|thank you|cool|perfect|nice|good|awesome|lgtm|looks good)\W+)*"
    r"(?:(?:that|it|this|everything) (?:works|worked|is (?:fixed|working|done))|works now|lgtm|looks good|"
    r"all good|ship it|we'?re done|done for (?:now|today))\b",
    re.I,
)
_WRAP_SAY = re.compile(
    r"\b(?:all (?:tests|checks) (?:now )?pass|(?:it|this|that|everything) (?:now )?works|"
    r"works now|is (?:now )?fixed|fixed it|committed|done[.!]|that'?s done|all set)\b",
    re.I,
)
_COMMIT = re.compile(r"\bgit\b(?:\s+-[Cc]\s+\S+)*\s+commit\b(?!\S*\s+--dry-run)")
_TRACKER_CLOSE = re.compile(
    r"\bbd close\b|\bgh issue close\b|\bbd update\b[^\n]*--status[= ](?:closed|done)|\bjira issue move\b[^\n]*\bdone\b",
    re.I,
)
_PR_CREATE = re.compile(r"\bgh pr create\b|\bglab mr create\b", re.I)
# After a commit, these keep the wrap-up going; any other tool call starts the next piece of work.
_COMMIT_STEPS = re.compile(r"\bgit (?:add|commit|stash)\b", re.I)  # the closed task's own commit follows its close
_WRAP_COMMANDS = re.compile(
    r"\bgit (?:push|log|status|show|diff|tag)\b|\bgh (?:pr|issue) (?:create|close|comment|view)\b|\bbd (?:close|update|sync)\b",
    re.I,
)
# "Pushed. Now let me check the new beads." after a commit: the assistant moves to the next task.
_MOVING_ON = re.compile(r"(?i)(?:^|[.!]\s+)(?:now|next)\b|(?:^|[.!]\s+)(?:let me|let's|i'?ll) "
                        r"(?:check|look|see|find|pick|move|start|continue|work|tackle|get)\b")
# A reply that takes up what came before ("yes, do it", "no, instead …") rather than a new request.
_FOLLOWS_ON = re.compile(
    r"(?i)^\W*(?:yes|yep|yeah|yup|sure|ok(?:ay)?|go ahead|do it|please do|sounds good|proceed|let'?s do|"
    r"no\b|nope|instead|wait|actually|don'?t|stop|continue|try again|retry)"
)
# A request that acts on what was just found: its first words name it as "it", "that", "this"
# ("fix it", "can you change that", "then add a test for it").
_POINTS_BACK = re.compile(
    r"(?i)^\W*(?:(?:please|pls|now|then|so|and|can you|could you|would you|let'?s)\s+)*[a-z]+\b[^.?!\n]{0,24}?"
    r"\b(?:it|that|this|them|those|these)\b"
)
_CLEAR_COMMANDS = frozenset({"/clear", "/new", "/reset"})
# A literal (lower case) that every match of each case-blind pattern above holds: most turns hold
# none, and a substring test is far cheaper than a regex that tries each word boundary.
_WRAP_SAY_STEMS = ("all tests", "all checks", "works", "fixed", "committed", "done", "all set")
_TRACKER_STEMS = ("bd close", "gh issue close", "bd update", "jira issue move")
_PR_STEMS = ("gh pr create", "glab mr create")


def _may_hold(text: str, stems: tuple[str, ...]) -> bool:
    """False only when ASCII `text` holds none of `stems` in any case. Non-ASCII text always may:
    under IGNORECASE `ſ` matches `s`, `ı` matches `i` and the Kelvin sign matches `k`."""
    if not text.isascii():
        return True
    low = text.lower()
    return any(stem in low for stem in stems)


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
        if not may_hold_verdict(turn):
            return False
        return is_passing(turn.text) or (is_commit_output(turn.text) and not is_failing(turn.text))
    if turn.role == "assistant" and turn.kind == "text":
        return _may_hold(turn.text, _WRAP_SAY_STEMS) and bool(_WRAP_SAY.search(turn.text))
    return False


def plan_completed(turn: Turn) -> bool:
    """A TodoWrite / update_plan call whose every item is completed."""
    if turn.kind != "tool_call" or turn.tool_name.lower() not in PLAN_TOOLS:
        return False
    items = plan_items(turn)
    if not items:
        return False
    return all(isinstance(i, dict) and str(i.get("status", "")).lower() == "completed" for i in items)


def _is_user_text(turn: Turn) -> bool:
    return turn.role == "user" and turn.kind == "text" and bool(turn.text.strip())


def _is_request(turn: Turn) -> bool:
    return _is_user_text(turn) and not is_chatter(turn.text)


def _last_tool_call(turns: list[Turn]) -> int:
    for i in range(len(turns) - 1, -1, -1):
        if turns[i].kind == "tool_call":
            return i
    return -1


class _Builder:
    def __init__(self, host: str, session_id: str):
        self.host, self.session_id = host, session_id
        self.out: list[Experience] = []
        self.boundary_in = "start"
        self.request = ""
        self.mid_task = False
        self.reset()

    def reset(self) -> None:
        self.turns: list[Turn] = []
        self.tool_calls = 0  # running tallies of `turns`, kept by `add` (see `_answered_question`)
        self.only_looked = True  # every tool call so far only read, listed or searched
        self.last_request: Turn | None = None
        self.answered_chars = 0
        self.wrapped = ""  # why the task is wrapped up: commit, tests_green, tracker_close, pr, said_done
        self.committed = False  # a commit landed: the next unrelated tool call is new work
        self.plan_accepted = False
        self.tracker_closed = False  # a tracker command closed the task (`bd close`): the next task's call cuts
        self.pending_commit = False
        self.pending_plan = False
        self.red = False  # a check failed and nothing has passed since
        self.interrupted = False  # the user stopped the assistant; a new request starts a new task
        self.signature = ""
        self.resolved_since_signature = False

    def close(self, boundary: str, mid_task: bool = False) -> None:
        if _has_substance(self.turns) or self.continued():
            self.out.append(self._experience(self.turns, self.boundary_in))
        if not mid_task:
            self.request = ""
        self.boundary_in = boundary
        self.mid_task = mid_task
        self.reset()

    def add(self, turn: Turn) -> None:
        self.turns.append(turn)
        if turn.kind == "tool_call":
            self.tool_calls += 1
            if self.only_looked and not _looks(turn):
                self.only_looked = False
        elif turn.role == "assistant" and turn.kind == "text":
            self.answered_chars += len(turn.text)
        elif _is_request(turn):
            self.last_request = turn

    def continued(self) -> bool:
        """A piece cut inside one request (a new error, work after a commit) with work of its own."""
        return (self.boundary_in == "error_change" or self.mid_task) and any(t.kind == "tool_call" for t in self.turns)

    def _experience(self, turns: list[Turn], boundary: str) -> Experience:
        own = any(_is_request(t) for t in turns)
        kept = tuple(turns)  # one tuple: the walks cached for it (by identity) serve drafting too
        return Experience(
            host=self.host,
            session_id=self.session_id,
            turns=kept,
            boundary=boundary,
            error_signature=experience_signature(kept),
            request="" if own else self.request,
        )


def experience_signature(turns: list[Turn] | tuple[Turn, ...]) -> str:
    """The failure an experience is about: an error the user pasted, else the one a verified fix
    cleared, else the first real error seen."""
    for t in turns:
        if _is_user_text(t) and (sig := pasted_signature(t.text)):
            return sig
    seen = list(dict.fromkeys(sig for t in turns if (sig := problem_signature(t))))
    if len(seen) > 1:  # several failures: the one the fix cleared is what the experience is about
        fix = verification(turns)
        if fix is not None and fix.signature:
            return fix.signature
    if len(seen) == 1:
        # The one error turn came from a command that only looks (`cargo tree -i openssl-sys` after the
        # fix: "did not match any packages"), while a check failed through a pipe that hid its exit
        # status (`cargo build … | tail`): the experience is about what the check showed first.
        w = walk(turns if isinstance(turns, tuple) else tuple(turns))
        if seen[0] in w.looked:
            return next((r.signature for r in w.runs if r.failed and r.signature), seen[0])
    return seen[0] if seen else ""


# A follow-up on the same work ("still up?", "and the other test?", "but it still fails"): a green
# check before it did not end the task.
_FOLLOW_UP = re.compile(
    r"(?i)^\W*(?:still|and\b|but\b|it\b|its\b|it'?s\b|that\b|this\b|does it|did it|is it|hmm|wait|same|again|"
    r"what about|how about|why|works\W+so\b|(?:works\W+)?so what was|what was (?:it|the (?:cause|problem|issue)))"
)


# "works. so what was it exactly?": asking why the committed fix worked is still the same task.
_ASKS_WHY = re.compile(r"(?i)^\W*(?:(?:ok(?:ay)?|works|great|nice|thanks)\W+)*(?:so\W+)?(?:what was (?:it|the)|why did|why does|"
                       r"how come|what (?:fixed|caused))")


def is_go_ahead(text: str) -> bool:
    """A short reply that lets the assistant go on ("yes go", "do it", "ok apply"), not a new request."""
    text = text.strip()
    return len(text) <= 80 and bool(_FOLLOWS_ON.match(text))


def _answered_question(b: _Builder, asked: str) -> bool:
    """A question the assistant answered, in words alone or after only looking (reads, searches,
    `git log`): a new request `asked` after it is a new task, unless it points back at the answer
    ("fix it", "can you change that"), which carries on from what was found.

    Asked at every request of a growing block, so it reads the builder's running tallies, never
    the block's turns: a long session must not cost the square of its length.
    """
    if b.last_request is None or b.answered_chars < 200:
        return False
    if not b.tool_calls:
        return b.last_request.text.rstrip().endswith("?")
    return b.only_looked and "?" in b.last_request.text and not _POINTS_BACK.match(asked)


MIN_REQUEST_WORDS = 5  # a shorter message answers the assistant ("pronto", "sim, pode", "ok do it"), in any language
MIN_REPLY_CHARS = 200  # an assistant's reply that ended its turn, not a one-line acknowledgement


def _starts_new_request(b: _Builder, asked: str) -> bool:
    """A request after the assistant's turn ended in a reply: the user asks for something else,
    whatever the host or the language, so each request is its own experience. Not while a check is
    red (the loop is open), not after the assistant handed the turn back (a question, "let me know
    which"), and not a short reply, a go-ahead, words pointing back at the work, a rejection, or a
    report that it still does not work (the same problem goes on). After work that only looked
    around (a warm-up, "get your bearings"), a problem report is the first real request."""
    last = b.turns[-1]
    text = asked.strip()
    if b.red or last.role != "assistant" or last.kind != "text" or len(text.split()) < MIN_REQUEST_WORDS \
            or _FOLLOWS_ON.match(text) or _FOLLOW_UP.match(text) or _POINTS_BACK.match(text) \
            or first_rule(GO_AHEAD, text[:200]) or first_rule(REJECTS, text[:4000]):
        return False
    reports = bool(first_rule(PROBLEM_REPORTS, text[:4000]) or pasted_signature(text))
    if reports and b.only_looked and b.tool_calls:
        return True
    # A question ("how do I …") is a request of its own even after a one-line acknowledgement.
    short_reply = b.answered_chars < MIN_REPLY_CHARS and not first_rule(QUESTIONS, text[:300])
    handed_back = last.text.rstrip().endswith(("?", "？")) or first_rule(WAITS_FOR_USER, last.text[-600:])
    return not (short_reply or handed_back or reports)


def _looks(turn: Turn) -> bool:
    """A tool call that only reads, lists or searches: a read tool, or a shell command that only looks."""
    return turn.tool_name.lower() in LOOK_TOOLS or is_inspection(command_of(turn))


def _has_substance(turns: list[Turn]) -> bool:
    """A user asked and the assistant acted or answered at some length; pleasantries are not experiences."""
    asked = sum(len(t.text.strip()) for t in turns if _is_request(t))
    acted = any(t.role == "assistant" and t.kind == "tool_call" for t in turns)
    answered = sum(len(t.text.strip()) for t in turns if t.role == "assistant" and t.kind == "text")
    return asked > 0 and (acted or answered >= 40 or (asked >= 20 and answered > 0))


def skip_reason(turns: list[Turn] | tuple[Turn, ...]) -> str:
    """Why these turns are worth no card ('' when they are): the run counts each reason."""
    users = [t for t in turns if _is_user_text(t)]
    acted = any(t.kind == "tool_call" for t in turns)
    if not users:
        return "banner" if turns and opens_with_banner(turns[0].host) else "no_request"
    if all(t.text.strip().lower() == "warmup" for t in users):
        return "warmup"
    if all(slash_command(t.text) and is_chatter(t.text) for t in users):
        return "slash_command_only"
    if not acted and any(is_interruption(t.text) for t in users):
        return "interrupted"
    if all(is_chatter(t.text) for t in users):
        return "greeting"
    if not _has_substance(list(turns)):
        return "no_substance"
    return ""


def segment_session(turns: list[Turn] | tuple[Turn, ...], rules: SegmentRules = SegmentRules()) -> list[Experience]:
    """Cut one session's ordered turns into experiences; compaction summaries are boundaries, not content."""
    return segment_with_skips(turns, rules)[0]


@dataclass(frozen=True, slots=True)
class Skipped:
    """A stretch of turns worth no card: why, and which host-log lines it covered."""

    reason: str
    lines: tuple[int, int]


def segment_with_skips(turns: list[Turn] | tuple[Turn, ...],
                       rules: SegmentRules = SegmentRules()) -> tuple[list[Experience], list[Skipped]]:
    """Experiences worth a card, plus each stretch of turns that is not, with its reason."""
    skipped: list[Skipped] = []
    return list(iter_segments(turns, rules, skipped)), skipped


def iter_segments(turns: list[Turn] | tuple[Turn, ...], rules: SegmentRules,
                  skipped: list[Skipped]) -> Iterator[Experience]:
    """`segment_with_skips`, yielding each experience as soon as it is cut (stretches worth no card
    go to `skipped`): a caller that drafts it at once finds what was asked of its turns still in
    the per-text caches, which a long session would otherwise have pushed out."""
    if not turns:
        return
    b = _Builder(turns[0].host, turns[0].session_id)
    original_close = b.close

    def close(boundary: str, mid_task: bool = False) -> None:
        if b.turns and not (_has_substance(b.turns) or b.continued()):
            lines = [t.line for t in b.turns]
            skipped.append(Skipped(skip_reason(b.turns) or "no_substance", (min(lines), max(lines))))
        original_close(boundary, mid_task)

    last_ts = None
    emitted = 0
    for turn in turns:
        if len(b.out) > emitted:
            yield from b.out[emitted:]
            emitted = len(b.out)
        if turn.kind == "summary":
            # The host compressed its context, the task goes on: what follows without a new request is
            # the same request's work (carded under it), not a stretch with no request.
            close("compaction", mid_task=True)
            continue
        if _is_user_text(turn) and (cmd := slash_command(turn.text)) in _CLEAR_COMMANDS | {"/compact"}:
            close("clear" if cmd in _CLEAR_COMMANDS else "compaction")
            continue
        if b.turns and _is_user_text(turn):
            paused = last_ts and turn.timestamp and turn.timestamp - last_ts > rules.pause
            if paused:
                close("pause")
            elif _ASKS_WHY.match(turn.text):
                pass  # "works. so what was it?": the answer belongs with the fix it explains
            elif b.committed or b.plan_accepted or (b.wrapped and not b.red and not (
                    b.wrapped in ("tests_green", "said_done")
                    and (_FOLLOW_UP.match(turn.text) or is_go_ahead(turn.text)))):
                close(b.wrapped or ("plan_accepted" if b.plan_accepted else "commit"))
            elif _is_request(turn) and not _FOLLOWS_ON.match(turn.text) and (b.interrupted or _answered_question(b, turn.text)):
                close("interrupted" if b.interrupted else "question_answered")
            elif is_task_switch(turn.text) and (not b.red or not _SOFT_SWITCH.match(turn.text.strip())):
                close("task_switch")
            elif _is_request(turn) and _starts_new_request(b, turn.text):
                close("new_request")
        elif b.turns and b.committed and commits_each_reply(b.host):
            pass  # the host (Aider) commits every reply by itself: its task ends at the user's next message
        elif b.turns and b.committed and turn.role == "assistant" and turn.kind == "text" \
                and _MOVING_ON.match(turn.text):
            close(b.wrapped or "commit", mid_task=True)
        elif b.turns and turn.kind == "tool_call" and b.tracker_closed and b.wrapped == "tracker_close" and not b.red \
                and not _WRAP_COMMANDS.search(turn.text[:400]) and not _COMMIT_STEPS.search(turn.text[:400]) \
                and not runs_check(command_of(turn) or ""):
            # One autonomous turn through several tracked tasks: each its own (a check or the closed task's
            # commit right after the close still belongs to it).
            close("tracker_close", mid_task=True)
        elif b.turns and turn.kind == "tool_call" and (b.committed or b.plan_accepted):
            if b.plan_accepted or not _WRAP_COMMANDS.search(turn.text[:400]):
                close("plan_accepted" if b.plan_accepted else b.wrapped or "commit", mid_task=True)
        if turn.kind == "error" and not is_tooling_error(turn):
            sig = error_signature(turn.text)
            if sig and b.signature and sig != b.signature and b.resolved_since_signature:
                cut = _last_tool_call(b.turns)
                if cut > 0 and _has_substance(b.turns[:cut]):
                    head, tail = b.turns[:cut], b.turns[cut:]
                    b.out.append(b._experience(head, b.boundary_in))
                    b.boundary_in = "error_change"
                    b.mid_task = True
                    b.reset()
                    for t in tail:
                        b.add(t)
            if sig:
                b.signature = sig
                b.resolved_since_signature = False
            b.red = True
        elif turn.kind == "tool_result" and b.signature and _green_check(b.turns, turn):
            # Only a green result settles an error: red → red → green inside one autonomous turn is one
            # loop, and cutting it at the second error makes the first half a false "still fails" card.
            b.resolved_since_signature = True
        b.add(turn)
        _observe(b, turn)
        if turn.timestamp:
            last_ts = turn.timestamp
    close("end")
    yield from b.out[emitted:]


def _green_check(turns: list[Turn], result: Turn) -> bool:
    """A result that passes the check its call ran (a check command, not a look or an edit)."""
    call = next((t for t in reversed(turns) if t.kind == "tool_call"), None)
    if call is None or not runs_check(command_of(call)):
        return False
    return is_passing(result.text) or not is_failing(result.text)


def _observe(b: _Builder, turn: Turn) -> None:
    """Update the builder's wrap-up state with what this turn shows."""
    if turn.kind == "tool_call":
        if "git" in turn.text and _COMMIT.search(turn.text):
            b.pending_commit = True
        head = turn.text[:2000]
        if _may_hold(head, _TRACKER_STEMS) and _TRACKER_CLOSE.search(head):
            b.wrapped = "tracker_close"
            b.tracker_closed = True
        elif _may_hold(head, _PR_STEMS) and _PR_CREATE.search(head):
            b.wrapped = "pr"
        elif plan_completed(turn):
            b.wrapped = "tracker_close"
        if turn.tool_name.lower() in PLAN_ACCEPT_TOOLS:
            b.pending_plan = True
        return
    if turn.kind in ("tool_result", "error"):
        if b.pending_plan and (turn.tool_name.lower() in PLAN_ACCEPT_TOOLS or not turn.tool_name):
            b.pending_plan = False
            b.plan_accepted = turn.kind == "tool_result"
        if b.pending_commit and turn.kind == "tool_result" and is_commit_output(turn.text):
            b.pending_commit = False
            b.committed = True
            b.wrapped = "commit"
            b.red = False
            return
        if turn.kind == "error":
            if not is_tooling_error(turn):
                b.red = True
            return
        if is_wrap_up(turn):
            b.red = False
            b.wrapped = b.wrapped or "tests_green"
        elif may_hold_verdict(turn) and shows_failure_summary(turn.text):
            b.red = True
        return
    if turn.role == "assistant" and turn.kind == "text":
        if not b.red and _may_hold(turn.text, _WRAP_SAY_STEMS) and _WRAP_SAY.search(turn.text):
            b.wrapped = b.wrapped or "said_done"
        return
    if _is_user_text(turn) and is_interruption(turn.text):
        b.interrupted = True
        return
    if _is_request(turn):
        b.interrupted = False
        if not b.request:
            b.request = turn.text
        if _USER_DONE.match(turn.text.strip()) and not b.red:
            b.wrapped = "user_done"
        else:
            # A new request inside the task: the wrap-up it followed (if any) did not end the task.
            b.wrapped = ""
