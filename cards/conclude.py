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

import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from memoir.cards.distill.extract import CONFIRMED_CUE, extract_conclusions, find_disproved
from memoir.cards.values import Turn
from memoir.cards.commands import command_of, is_change, is_inspection, may_hold_verdict
from memoir.cards.verdicts import is_failing, is_passing
from memoir.cards.cues import commit_subject, is_commit_output, is_tooling_error
from memoir.cards.segment import is_go_ahead

MIN_SETTLED_CHARS = 40

_THINKING_TAGS = re.compile(
    r"<(thinking-content-[\w-]*|think|thinking|reasoning)>.*?(?:</\1>|\Z)", re.S | re.I
)
_FORWARD = re.compile(
    r"(?i)^(?:(?:now|next|first|then|ok(?:ay)?|so|great|perfect|good|alright)[,!.]?\s+)*"
    r"(?:let me|let's|i'?ll|i will|i'?m going to|i am going to|i need to|we need to|i should|"
    r"i'?m gonna|going to|time to|i can now|i want to|now i)\b"
)
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


def _prose(text: str) -> str:
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
    prose = _prose(kept).strip()
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
            call = next((c for c in reversed(turns[:i]) if c.kind == "tool_call" and c.tool_name == t.tool_name), None)
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


def _command_of(call: Turn) -> str:
    """The shell command inside a tool call's text (`Bash {"command": "…"}` or a plain string)."""
    text = call.text.split(" ", 1)[1] if " " in call.text else call.text
    m = re.search(r'"(?:command|cmd)"\s*:\s*(\[[^\]]*\]|"(?:[^"\\]|\\.)*")', text)
    if not m:
        return text
    try:
        value = json.loads(m.group(1))
    except (ValueError, RecursionError):
        return text
    if isinstance(value, list):
        value = value[-1] if value else ""
    return str(value)


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
            command = _command_of(t)
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
    the nearest settled text when it says enough, else an earlier one that gives a reason."""
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
    """The best settled conclusion of an experience's turns (see the module docstring)."""
    turns = tuple(turns)
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


# --- the lesson as a card keeps it: no filler, no next steps, no file lists, within a budget -------

CONCLUSION_BUDGET = 600  # characters; every card file states it (`conclusion_budget`), the model's slot is as long

# An acknowledgement before the lesson: "Good catch — thanks for the traceback. You're right:".
_LEAD_IN = re.compile(
    r"^(?:(?:good (?:catch|call|news|question|point)|great (?:catch|question|news)|nice catch|thanks(?: for [^.!:—–]{1,40})?|"
    r"thank you(?: for [^.!:—–]{1,40})?|you['’]?re (?:absolutely |completely )?right|you were (?:absolutely )?right|"
    r"perfect|excellent|great|awesome|done|all set|success|sure|got it|understood|"
    r"(?:here'?s|here is) (?:what|the summary)[^:]{0,30})\s*[!.:,—–-]+\s*)+",
    re.I,
)
# Closing filler: offers, wishes and invitations that teach nothing.
_CLOSING = re.compile(
    r"(?i)^(?:let me know|would you like|do you want|want me to|shall i|should i|if you(?:'d)? (?:like|want|need)|"
    r"feel free|happy to|i can also|anything else|is there anything|hope (?:this|that) helps|happy coding|"
    r"enjoy|good luck|cheers|(?:just )?(?:ping|tell) me|if you (?:see|hit|run into|notice|encounter|get|have) (?:any|another|more|other)\b)"
)
# Next-step lines: where the work goes from here, not what was learned.
_NEXT_STEP = re.compile(
    r"(?i)^(?:next steps?|next up|suggested next steps?|what['’]?s next|follow[- ]?ups?|to ?dos?|"
    r"ready for (?:the )?next (?:phase|step)|you can now|now you can|to (?:try|test|run|use|see) it|"
    r"(?:when|once) you(?:'re| are)? ready|if you want(?: to)?,? (?:i|we) can)\b"
)
# A heading that opens an inventory ("What's in the GUI now:", "Files changed:", "Summary of changes").
_INVENTORY = re.compile(
    r"(?i)^(?:what['’]?s (?:in|new|there)\b[^:]{0,40}|what (?:changed|was (?:done|changed|fixed|added))|"
    r"what (?:i|we) (?:did|fixed|changed|added|updated|built|implemented)|summary(?: of (?:the )?changes)?|"
    r"(?:a )?(?:reminder|overview|recap|list|tour) of\b[^:]{0,50}|(?:recent|new|current|other) [\w -]{0,30}features|"
    r"changes(?: made)?|(?:files?|paths?) (?:changed|modified|touched|updated|created|added|edited)|"
    r"(?:changed|modified|touched|updated|created|new) files?|deliverables|artifacts|how to (?:run|try|use) it)\s*:?\s*$"
)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_HEADINGISH = re.compile(r"^\s*(?:#{1,6}\s+|\*\*[^*]+\*\*:?\s*$|[^.!?]{1,60}:\s*$)")
# A list item that leads with a file: "`src/app.py` — …", "Spec: `specs/x/spec.md`", "app/db.py: …".
_FILE_LED = re.compile(
    r"^(?:[\w .-]{1,24}:\s*)?`?(?:[~.]{0,2}/)?[\w.@-]+(?:/[\w.@-]+)+`?|^(?:[\w .-]{1,24}:\s*)?`?[\w.-]+\.[A-Za-z]{1,5}`?(?:\s|:|$)"
)


def _bare_line(line: str) -> str:
    return _LIST_ITEM.sub("", line).strip().strip("*_# ").strip()


def _blocks(lines: list[str]) -> list[list[str]]:
    """Lines grouped as paragraphs, with a list and the heading line right above it in one block."""
    blocks: list[list[str]] = []
    for line in lines:
        if not line.strip():
            blocks.append([])
            continue
        item = bool(_LIST_ITEM.match(line))
        if blocks and blocks[-1] and (item or not _LIST_ITEM.match(blocks[-1][-1])):
            blocks[-1].append(line)
        else:
            blocks.append([line])
    return [b for b in blocks if b]


MAX_FILE_ITEM_WORDS = 4  # "Spec: `specs/x/spec.md` (all items checked)" lists a file; a longer item says what changed


def _bare_file(item: str) -> bool:
    m = _FILE_LED.match(item)
    return bool(m) and len(re.findall(r"[A-Za-z]{2,}", item[m.end():])) <= MAX_FILE_ITEM_WORDS


def _is_file_list(items: list[str]) -> bool:
    files = sum(_bare_file(_bare_line(i)) for i in items)
    return len(items) >= 2 and files * 2 >= len(items)


def _is_label(line: str) -> bool:
    """A short line with no sentence in it ("New test", "What I fixed"): the title of the list below."""
    bare = _bare_line(line)
    return len(bare.split()) <= MAX_LABEL_WORDS and not re.search(r"[.!?;]\s*$|`", bare)


MAX_LABEL_WORDS = 6
_LABEL_TAIL = re.compile(r"(?<=[.!?])\s+([^.!?]{1,60}):\s*$")  # "… hence X. Changes:" ends on a list's label


def _keep_block(block: list[str]) -> list[str]:
    """A block without filler lines, and without its list when that is an inventory, a list of
    files or next steps (the prose above the list stays; a line that only labels it goes)."""
    lines = [ln for ln in block if not (_CLOSING.match(_bare_line(ln)) or _NEXT_STEP.match(_bare_line(ln)))]
    items = [ln for ln in block if _LIST_ITEM.match(ln)]
    if not items:
        return lines
    first = block.index(items[0])
    head = _bare_line(block[first - 1]) if first else ""  # the line right above the list labels it
    if _INVENTORY.match(head) or _NEXT_STEP.match(head) or _is_file_list(items):
        prose = [ln for ln in lines if not _LIST_ITEM.match(ln)]
        if prose and (_INVENTORY.match(head) or _NEXT_STEP.match(head) or _HEADINGISH.match(prose[-1])
                      or _is_label(prose[-1])):
            prose = prose[:-1]  # the list's own label
        if prose:
            tail = _LABEL_TAIL.search(prose[-1])
            if tail and (_INVENTORY.match(tail.group(1)) or _NEXT_STEP.match(tail.group(1))):
                prose[-1] = prose[-1][: tail.start()]
        return prose
    return lines


def without_filler(text: str) -> str:
    """The lesson and its evidence: no opening acknowledgement ("Good catch — you're right:"), no
    closing offer ("Let me know if …"), no next-step lines, no inventory of what changed or list
    of every file touched. Prose that would be left with nothing to say keeps the text as it was."""
    if not text.strip():
        return text
    lines = text.strip().splitlines()
    first = _LEAD_IN.sub("", lines[0]).strip()
    if not first and len(lines) > 1:
        lines = lines[1:]  # a first line of only "Done." or "Perfect!"
    elif first and first != lines[0]:
        lines[0] = first[:1].upper() + first[1:]
    kept = [_keep_block(b) for b in _blocks(lines)]
    out = _without_closing_sentences("\n\n".join("\n".join(b) for b in kept if b).strip())
    return out if len(_prose(out).strip()) >= MIN_SETTLED_CHARS else text.strip()


def _without_closing_sentences(text: str) -> str:
    """`text` without trailing sentences that only offer more or point at next steps."""
    while True:
        head, sep, last = text.rpartition(". ")
        if not sep or "\n" in last or not (_CLOSING.match(last.strip()) or _NEXT_STEP.match(last.strip())):
            return text
        text = head + "."


def within_budget(text: str, budget: int = CONCLUSION_BUDGET) -> str:
    """At most `budget` characters, cut after a whole paragraph or sentence (never inside a code
    block), marked `[…]` when cut."""
    text = text.strip()
    if len(text) <= budget:
        return text
    room = budget - len(" […]")
    cut = text[:room]
    stop = max(cut.rfind("\n\n"), cut.rfind(". "), cut.rfind(".\n"), cut.rfind("; "))
    cut = (cut[: stop + 1] if stop > room // 2 else cut[: cut.rfind(" ")] if " " in cut else cut).rstrip()
    if cut.count("```") % 2:
        cut = cut[: cut.rfind("```")].rstrip()
    return cut + " […]"


def lesson(text: str, budget: int = CONCLUSION_BUDGET) -> str:
    """A conclusion as a card keeps it: `without_filler`, then `within_budget`."""
    return within_budget(without_filler(text), budget)
