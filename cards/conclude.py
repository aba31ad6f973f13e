"""Conclusions from what a session settled, ranked, never from hidden reasoning or mid-work lines.

Candidates, best first:
1. `closing_report` — the assistant's report after the last passing check or successful commit;
2. `commit_message` / `tracker_reason` / `pr_body` — what the commit, `bd close --reason` or
   `gh pr create --body` said;
   a terse outcome of either kind ("24 passed; committed 2c6b7e0") is joined to the reason the
   assistant gave right before the change (`pre_fix_explanation+closing_report`): the outcome
   says that it worked, the explanation says why;
3. `pre_fix_explanation` — the explanation right before the change that turned a check green
   (and other cue statements such as "the root cause was …" that a green check confirmed);
4. `cue_statement` — an explicit cue statement nothing confirmed or disproved;
5. `final_answer` — the last answer of a session that ran nothing red at the end (a question).

Never a candidate: thinking blocks (`kind == "thinking"`, Aider's `<thinking-content-…>`), a
question, or text whose last sentence says what the assistant is about to do ("Let me …",
"I'll …"). Never part of one: a code or file dump, which is the change, not what it means (a
fenced block under a bare file-path line, as Aider's whole-file and diff formats write it; a block
in Aider's `<source>`-style tag fences; any block longer than a snippet). What is left must still
say something in words: code alone is no conclusion. When nothing qualifies the card says so (`settled=False`) and stays `candidate`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from memoir.cards.distill.extract import CONFIRMED_CUE, extract_conclusions, find_disproved
from memoir.cards.evidence import evidence_statement
from memoir.cards.loop import LOOKS_AHEAD, Loop, fixed_loop, mentions, names_in
from memoir.cards.values import Turn
from memoir.cards.commands import command_of, is_change, is_inspection, may_hold_verdict
from memoir.cards.verdicts import is_failing, is_passing
from memoir.cards.cues import commit_subject, is_commit_output, is_tooling_error
from memoir.cards.segment import is_go_ahead

MIN_SETTLED_CHARS = 40

_THINKING_TAGS = re.compile(
    r"<(thinking-content-[\w-]*|think|thinking|reasoning)>.*?(?:</\1>|\Z)", re.S | re.I
)
_FORWARD = LOOKS_AHEAD
_OFFER = re.compile(
    r"(?i)^(?:let me know|would you like|do you want|want me to|shall i|should i|if you(?:'d)? (?:like|want)|"
    r"feel free|happy to|i can also|anything else|is there anything)\b"
)
# The assistant asking for something (a file, a command's output) has settled nothing.
_ASKS = re.compile(
    r"(?i)^(?:please (?:add|run|provide|share|paste|send|confirm|clarify)|could you|can you|"
    r"you haven'?t (?:shared|added|provided)|i need (?:to see|you to|more)|to (?:help|answer|do that),? i(?:'ll| will)? need)\b"
)
_EDIT_BLOCK = re.compile(r"(?:^[^\n]*\n)?```[^\n]*\n(?:(?!```)[\s\S])*?<<<<<<< SEARCH[\s\S]*?>>>>>>> REPLACE\s*\n```", re.M)
# A fenced block (``` or longer, or Aider's tag fences), with the bare file-path line above it if any.
_FENCED = re.compile(
    r"(?P<path>^[\w./\\-]*\w\.\w+[ \t]*\n)?"
    r"(?:^(?P<ticks>`{3,})[^\n]*\n|^<(?P<tag>source|code|pre|codeblock|sourcecode)>[^\n]*\n)"
    r"(?P<body>.*?)(?:^(?P=ticks)[ \t]*$|^</(?P=tag)>[ \t]*$|\Z)",
    re.M | re.S,
)
MAX_SNIPPET_LINES = 15  # a longer block is a file's content, not an example in an explanation
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*\"'(\[])|\n+")
_CLAIMISH = re.compile(r"[a-z]{3,}")


@dataclass(frozen=True, slots=True)
class Conclusion:
    """The chosen conclusion, the turn it came from, how it was found, and what verified it."""

    text: str = ""
    seq: int | None = None
    source: str = ""  # closing_report | commit_message | tracker_reason | pr_body | pre_fix_explanation | cue_statement | final_answer
    verified_by: str = ""  # "tN": the passing check at turn N that backs it, as on the card

    @property
    def settled(self) -> bool:
        return bool(self.text)


def visible_text(text: str) -> str:
    """Text without hidden-reasoning blocks some hosts leave inline (Aider, reasoning models)."""
    if "<" not in text:
        return text.strip()
    text = _THINKING_TAGS.sub("", text)
    if "<<<<<<< SEARCH" in text:  # Aider's edit blocks are the change itself, not what it means
        text = _EDIT_BLOCK.sub("", text)
    return text.strip()


def _dump(m: re.Match) -> bool:
    return bool(m.group("path") or m.group("tag")) or m.group("body").count("\n") > MAX_SNIPPET_LINES


def without_dumps(text: str) -> str:
    """Text without the code and file dumps in it (see the module docstring); snippets stay."""
    if "```" not in text and "<" not in text:
        return text
    return _FENCED.sub(lambda m: "" if _dump(m) else m.group(0), text).strip()


def prose_of(text: str) -> str:
    """The words of a text, every code block left out."""
    return _FENCED.sub("", text) if ("```" in text or "<" in text) else text


def settled_text(text: str, allow_trim: bool = True) -> str:
    """The part of an assistant text that states something settled, or '' when none does.

    Trailing offers and questions ("Want me to …?") are dropped. A text whose last remaining
    sentence looks ahead ("Let me …", "I'll …") is mid-work: with `allow_trim` only those
    forward sentences go (a diagnosis before "Let me fix it." stays), without it the text fails.
    """
    text = without_dumps(visible_text(text))
    if not text:
        return ""
    parts = [p for p in _SENTENCE.split(text) if p.strip()]
    while parts and (_OFFER.match(_bare(parts[-1])) or _bare(parts[-1]).endswith("?")):
        parts.pop()
    if not parts:
        return ""
    if _FORWARD.match(_bare(parts[-1])) or parts[-1].rstrip().endswith(":"):
        if not allow_trim:
            return ""
        while parts and (_FORWARD.match(_bare(parts[-1])) or parts[-1].rstrip().endswith(":")):
            parts.pop()
    kept = "\n".join(parts).strip() if "\n" in text else " ".join(p.strip() for p in parts).strip()
    # Keep the original line layout when nothing was dropped (lists, code blocks read as written).
    if len(parts) == len([p for p in _SENTENCE.split(text) if p.strip()]):
        kept = text
    if _ASKS.match(_bare(kept)):
        return ""
    if len(kept) < MIN_SETTLED_CHARS or not _CLAIMISH.search(kept) or _FORWARD.match(_bare(kept)):
        return ""
    prose = prose_of(kept).strip()
    if len(prose) < MIN_SETTLED_CHARS or not _CLAIMISH.search(prose):
        return ""  # code with a caption: it shows a change, it does not say what was learned
    return kept


def _bare(sentence: str) -> str:
    return sentence.strip().lstrip("#>*-• \t").strip()


def _checks(turns: Sequence[Turn]) -> list[int]:
    """Indexes of turns that show a passing check: a green test/build run or a successful commit."""
    out = []
    for i, t in enumerate(turns):
        if t.kind != "tool_result":
            continue
        if is_commit_output(t.text):
            out.append(i)
        elif may_hold_verdict(t) and is_passing(t.text):
            # By index, walking back: a slice would copy every earlier turn for every green check.
            call = next((c for j in range(i - 1, -1, -1)
                         if (c := turns[j]).kind == "tool_call" and c.tool_name == t.tool_name), None)
            # `gh run list` printing ✓ for old runs checks nothing: a command that only looks is no check.
            if call is None or not is_inspection(command_of(call)):
                out.append(i)
    return out


def _red(turn: Turn) -> bool:
    return (turn.kind == "error" and not is_tooling_error(turn)) or (
        turn.kind == "tool_result" and may_hold_verdict(turn) and is_failing(turn.text))


def _closing_report(turns: Sequence[Turn], checks: list[int], dead: set[int]) -> Conclusion | None:
    if not checks:
        return None
    last = checks[-1]
    for t in turns[last + 1:]:
        if _red(t):
            return None
    for t in reversed(turns[last + 1:]):
        if t.role == "assistant" and t.kind == "text" and t.seq not in dead:
            text = settled_text(t.text, allow_trim=False)
            if text:
                # A commit closes the task but proves nothing: the last green check verifies it.
                green = [i for i in checks if is_passing(turns[i].text)]
                return Conclusion(text, t.seq, "closing_report", f"t{turns[green[-1]].seq}" if green else "")
    return None


_BD_REASON = re.compile(r"--reason[= ]")
_PR_BODY = re.compile(r"--body[= ]")


def _flag_value(command: str, flag: str) -> str:
    try:
        words = shlex.split(command, posix=True)
    except ValueError:
        return ""
    for i, w in enumerate(words):
        if w == flag and i + 1 < len(words):
            return words[i + 1]
        if w.startswith(flag + "="):
            return w[len(flag) + 1:]
    return ""


def _closing_words(turns: Sequence[Turn]) -> Conclusion | None:
    """The commit's subject, a tracker's closing reason or a PR's body, newest first."""
    for i in range(len(turns) - 1, -1, -1):
        t = turns[i]
        if t.kind == "tool_result" and is_commit_output(t.text):
            subject = commit_subject(t.text)
            if len(subject) >= 12:
                green = next((f"t{x.seq}" for x in reversed(turns[:i]) if x.kind == "tool_result" and is_passing(x.text)), "")
                return Conclusion(subject, t.seq, "commit_message", green)
        if t.kind == "tool_call" and ("--reason" in t.text or "--body" in t.text):
            command = command_of(t)
            if "bd close" in command and _BD_REASON.search(command):
                reason = _flag_value(command, "--reason")
                if len(reason) >= 12:
                    return Conclusion(reason, t.seq, "tracker_reason")
            if "pr create" in command and _PR_BODY.search(command):
                body = _flag_value(command, "--body").strip()
                if len(body) >= 12:
                    return Conclusion(body, t.seq, "pr_body")
    return None


# What makes a text say *why*, not only *that*: a cause, a mechanism, a contrast.
_EXPLAINS = re.compile(
    r"(?i), so\b|\b(?:root cause|because|since|caused|causes|came from|comes from|meant|means|turns out|so that|"
    r"the (?:problem|issue|bug|reason|fix) (?:was|is)|instead of|rather than|only when|unless|hence|which is why|"
    r"was (?:not|never|missing|wrong)|wasn'?t|isn'?t|doesn'?t|didn'?t|no longer)\b"
)
_HEDGED = re.compile(r"(?i)\b(?:might|maybe|perhaps|probably|possibly|i think|i suspect|could be|may be|not sure)\b")
MIN_REPORT_EXPLAINS = 160  # a closing report this long that gives a reason stands on its own


# --- a report of the work leads with nothing learned (issue 24) -----------------------------------
# A closing report that lists what was built ("Added X and wired Y. All changes are committed; tests
# pass") says what was done, not what was found on the way. When a failing check turned green in
# the same experience, the card leads with that loop (the explanation before the change that
# worked, or the evidence itself) and keeps the report below it. It is a work report when one of
# its first two sentences reports work done (a build verb with "I"/"we" or no subject, a
# conventional-commit subject) or its status (committed, tests green), and no sentence anywhere
# gives a reason, a limit or a failure.
_BUILT = (r"(?:added|implemented|created|built|wrote|expanded|extended|refactored|moved|removed|introduced|"
          r"wired(?: up)?|updated|improved|cleaned(?: up)?|decluttered|integrated|documented|finished|completed|"
          r"made|set up|converted|renamed|switched|enhanced|reworked|restructured|polished|tidied|generated|"
          r"scaffolded|migrated|ported|replaced|simplified|exposed|surfaced|hooked up|went (?:deeper|further)|"
          r"kept|ensured|validated|committed|pushed)")
_WORK_DONE = re.compile(
    r"(?i)^(?:(?:progress|work|all) (?:complete|done)\s*[—–:-]\s*)?(?:(?:i|we)(?:['’]ve| have)?\s+|now\s+|also\s+)?"
    r"(?:(?:now|also|then|just|already)\s+)?" + _BUILT + r"\b"
    r"|^(?:feat|chore|refactor|docs|test|style|build|ci|perf)(?:\([^)]*\))?!?:\s"
)
_WORK_STATUS = re.compile(
    r"(?i)^(?:all|everything|the (?:changes?|work|tests?|test suite))\b[^.]{0,60}?\b(?:is|are)\s+(?:now\s+|all\s+)?"
    r"(?:committed|implemented|tested|documented|wired|in sync|green|passing|done|complete|updated|pushed)\b"
)
# A list item's marker, and a line that only heads what follows ("## Schema", "**Fix Applied**", "What's new:").
LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
HEADINGISH = re.compile(r"^\s*(?:#{1,6}\s+|\*\*[^*]+\*\*:?\s*$|[^.!?]{1,60}:\s*$)")
_REQUEST_ECHO = re.compile(  # words to the user before the report: "Great idea —", "Short answer: now yes."
    r"(?i)^(?:great|good|nice) (?:idea|call|catch|question)\W+|^short answer\W+[^.]*\.\s*|^(?:yes|sure|done)\W+"
)
_GIVES_REASON = re.compile(
    _EXPLAINS.pattern + r"|\b(?:must|mustn'?t|cannot|can['’]t|couldn['’]t|won['’]t|requires?|required|"
    r"(?:un|not )supported|fails?|failed|failing|breaks|broke|missing|missed|forgot|wrong|never|confirms?)\b"
)


def work_report_lead(text: str) -> str:
    """The sentence that says what was built when a conclusion only reports the work done (see
    above), else ''."""
    prose = [ln.strip() for ln in prose_of(text).splitlines() if ln.strip()]
    if not prose or _GIVES_REASON.search(" ".join(prose)):
        return ""
    leads = [_REQUEST_ECHO.sub("", part).strip("*_ ") for ln in prose if not LIST_ITEM.match(ln) and not HEADINGISH.match(ln)
             for part in _SENTENCE.split(ln) if part.strip()]
    return next((lead for lead in leads[:2] if _WORK_DONE.match(lead) or _WORK_STATUS.match(lead)), "")


def work_report(text: str) -> bool:
    """Whether a conclusion only reports the work done: what was built, not what was learned."""
    return bool(work_report_lead(text))


def _hedged(text: str) -> bool:
    """A guess rather than an account: hedges in a third or more of its sentences."""
    parts = [p for p in _SENTENCE.split(text) if p.strip()]
    return sum(bool(_HEDGED.search(p)) for p in parts) * 3 >= max(len(parts), 1)


MIN_NEAREST_EXPLANATION = 80  # the text right before the change may explain without a cue word


def _changed(turn: Turn) -> bool:
    # Aider logs its edit as a result ("Applied edit to x.py") of the reply that explained it.
    return is_change(turn) or (turn.kind == "tool_result" and turn.tool_name == "edit")


def _explanation(turns: Sequence[Turn], dead: set[int], upto: int) -> Conclusion | None:
    """The assistant's account of the cause given before the last change that precedes `upto`:
    the nearest settled text when it says enough, else an earlier one that gives a reason.
    In a loop whose check turned green, only the words before the change that worked count."""
    loop = fixed_loop(turns)
    if loop is not None:
        return _fix_explanation(turns, dead, loop)
    change = next((i for i in range(upto - 1, -1, -1) if _changed(turns[i])), None)
    if change is None:
        return None
    nearest = True
    for t in reversed(turns[:change + 1]):
        if t.role == "user" and t.kind == "text" and not is_go_ahead(t.text):
            continue  # the user steered ("just pin it for now"): the reason before it still holds
        if t.role == "assistant" and t.kind == "text" and t.seq not in dead:
            text = settled_text(t.text)
            if text and not _hedged(text) and (
                    _EXPLAINS.search(text) or (nearest and len(text) >= MIN_NEAREST_EXPLANATION)):
                return Conclusion(text, t.seq, "pre_fix_explanation")
            nearest = False
    return None


def _with_reason(outcome: Conclusion, reason: Conclusion | None) -> Conclusion:
    """A terse outcome ("24 passed; committed 2c6b7e0") joined to the reason that came before it."""
    if reason is None or reason.text in outcome.text:
        return outcome
    if len(outcome.text) >= MIN_REPORT_EXPLAINS and _EXPLAINS.search(outcome.text):
        return outcome
    return Conclusion(f"{reason.text}\n\n{outcome.text}", reason.seq, f"{reason.source}+{outcome.source}",
                      outcome.verified_by or reason.verified_by)


def choose_conclusion(turns: Sequence[Turn]) -> Conclusion:
    """The best settled conclusion of an experience's turns (see the module docstring), held to the
    change that worked when a failing check turned green (`_held_to_the_fix`)."""
    turns = tuple(turns)
    return _held_to_the_fix(turns, _best_sentence(turns))


def _best_sentence(turns: tuple[Turn, ...]) -> Conclusion:
    dead = set(find_disproved(turns))
    checks = _checks(turns)
    found = _closing_report(turns, checks, dead) or _closing_words(turns)
    if found:
        at = next((i for i, t in enumerate(turns) if t.seq == found.seq), len(turns))
        return _with_reason(found, _explanation(turns, dead, at))
    statements = [s for s in extract_conclusions(turns) if s.seq not in dead]
    confirmed = [s for s in statements if s.verified_by]
    for group, source in ((confirmed, "pre_fix_explanation"), ([s for s in statements if s.cue != CONFIRMED_CUE], "cue_statement")):
        for s in reversed(group):
            text = settled_text(s.text)
            if text:
                return Conclusion(text, s.seq, source, s.verified_by)
    for t in reversed(turns):
        if t.role == "assistant" and t.kind == "text" and t.seq not in dead:
            text = settled_text(t.text, allow_trim=False)
            return Conclusion(text, t.seq, "final_answer") if text else Conclusion()
    return Conclusion()


# --- mechanism: a conclusion is built from the change that worked (issue 24) ------------------------
# In a loop (failing check -> changes -> the same check again, `cards.loop`), an explanation counts
# only if it precedes the change after which the check turned green and names something in that
# change or in the error; words before a change after which the check still failed are a failed
# attempt (`find_disproved`, reason `failed_attempt`). With no sentence that qualifies, the
# conclusion is the evidence itself: what failed, what was changed, what passed.

_AFTER_FIX = ("closing_report", "commit_message", "tracker_reason", "pr_body")


def _fix_explanation(turns: Sequence[Turn], dead: set[int], loop: Loop) -> Conclusion | None:
    """The latest settled, unhedged text before the change that worked that names what it changed or the error."""
    fix = loop.fix
    if fix is None:
        return None
    names = names_in(fix, loop.failure)
    said = set(fix.said)
    for t in reversed(turns):
        if t.seq in said and t.seq not in dead:
            text = settled_text(t.text)
            if text and not _hedged(text) and mentions(text, names):
                return Conclusion(text, t.seq, "pre_fix_explanation")
    return None


MAX_SHORT_REASON = 200


def _short_reason(turns: Sequence[Turn], dead: set[int], loop: Loop) -> str:
    """The assistant's words right before the change that worked, too short to stand alone as a
    conclusion ("Need to import `Phoenix.ChannelTest`:") but naming what it changed."""
    fix = loop.fix
    if fix is None:
        return ""
    names = names_in(fix, loop.failure)
    for t in reversed(turns):
        if t.seq in fix.said and t.seq not in dead:
            text = " ".join(visible_text(t.text).split()).rstrip(":").strip()
            if (text and len(text) <= MAX_SHORT_REASON and not text.endswith("?") and not _FORWARD.match(_bare(text))
                    and "```" not in text and mentions(text, names)):
                return text if text.endswith((".", "!")) else text + "."
    return ""


def _held_to_the_fix(turns: tuple[Turn, ...], found: Conclusion) -> Conclusion:
    loop = fixed_loop(turns)
    if loop is None or loop.fix is None:
        return found
    fix = loop.fix
    names = names_in(fix, loop.failure)
    verified = f"t{fix.check.result.seq}"
    start = min(fix.said, default=fix.changes[0].seq if fix.changes else fix.check.call.seq)
    outcome = found.source.rsplit("+", 1)[-1]
    report = "+" not in found.source and work_report(found.text)  # joined to a reason, it leads with it
    if found.settled and found.seq is not None and mentions(found.text, names) and not report and (
            found.seq >= start or outcome in _AFTER_FIX):
        return found
    dead = set(find_disproved(turns))
    reason = _fix_explanation(turns, dead, loop)
    if reason is not None:
        if report and found.seq is not None and found.seq > reason.seq:  # the why first, then what was built
            return Conclusion(f"{reason.text}\n\n{found.text}", found.seq, f"{reason.source}+{outcome}", verified)
        return Conclusion(reason.text, reason.seq, reason.source, verified)
    evidence = evidence_statement(loop)
    words = _short_reason(turns, dead, loop)
    if words:
        evidence = f"{evidence} Said before the change: “{words}”"
    if found.settled and outcome in _AFTER_FIX and found.seq is not None and found.seq >= fix.check.call.seq \
            and not work_report(found.text):
        # What the session said after the fix, which names nothing of it: kept below the evidence (a change
        # list of the task around the fix is no part of its lesson).
        return Conclusion(f"{evidence}\n\n{found.text}", found.seq, f"evidence+{outcome}", verified)
    return Conclusion(evidence, fix.check.result.seq, "evidence", verified)
