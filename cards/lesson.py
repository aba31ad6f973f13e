"""What is kept of a conclusion: the lesson and its evidence, without filler, next steps or file lists, within a budget.

A card is handed to an agent later, so it says what was learned and stops: no opening
acknowledgement, no closing offer, no inventory of every file touched, and at most
`CONCLUSION_BUDGET` characters (every card file states it, the model's slot is as long).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memoir.cards.conclude import HEADINGISH, LIST_ITEM, MIN_SETTLED_CHARS, prose_of
from memoir.cards.phrasebook import WRAPPER_LINES, first_rule
from memoir.cards.quality_inputs import ORDER, commanding_part, typed_by_user

# --- the lesson as a card keeps it: no filler, no next steps, no file lists, within a budget -------

CONCLUSION_BUDGET = 600  # characters; every card file states it (`conclusion_budget`), the model's slot is as long

# An acknowledgement before the lesson: "Good catch — thanks for the traceback. You're right:".
_LEAD_IN = re.compile(
    r"^(?:(?:good (?:catch|call|idea|news|question|point)|great (?:catch|call|idea|point|question|news)|nice catch|thanks(?: for [^.!:—–]{1,40})?|"
    r"thank you(?: for [^.!:—–]{1,40})?|you['’]?re (?:absolutely |completely )?right|you were (?:absolutely )?right|"
    r"perfect|excellent|great|awesome|done|all set|success|sure|got it|understood|"
    r"(?:here'?s|here is) (?:what|the summary)[^:]{0,30})\s*[!.:,—–-]+\s*)+",
    re.I,
)
# A first sentence that only points back at what was just said ("That explains why it only shows up
# now.", "This confirms it.", "That makes sense."): it names nothing of its own, so out of its
# conversation it reads as a riddle, and as a title it says nothing. The sentence after it is the lesson.
_POINTS_BACK = re.compile(
    r"^(?:that|this|which)(?:['’]s| is| was)?\s+(?:(?:exactly |also )?(?:explains?|would explain|confirms?|"
    r"makes (?:sense|it clear)|matches|fits|checks out|tracks|is consistent with|is (?:exactly )?(?:it|why|what|the (?:clue|key|missing piece))))"
    r"\b[^.!?`'\"\d\n]{0,80}[.!]\s+(?=\S)",
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
    r"(?:when|once) you(?:'re| are)? ready|if you want(?: to)?,? (?:i|we) can|"
    # "Now update the renderer test to cover …": an order the agent gives itself, the next step
    r"(?:now|next|then),? (?:(?:i|we)(?:['’]ll| will| need to| should) |let(?:['’]s| me| us) )?(?:update|add|run|fix|write|"
    r"check|create|implement|test|move|make|remove|commit|push|wire|refactor|verify|handle|cover|rename|clean|"
    r"look|try|build|deploy|migrate|document|extend|port)\b)"
)
# A heading that opens an inventory ("What's in the GUI now:", "Files changed:", "Summary of changes").
_INVENTORY = re.compile(
    r"(?i)^(?:what['’]?s (?:in|new|there)\b[^:]{0,40}|what (?:changed|was (?:done|changed|fixed|added))|"
    r"what (?:i|we) (?:did|fixed|changed|added|updated|built|implemented)|summary(?: of (?:the )?changes)?|"
    r"(?:a )?(?:reminder|overview|recap|list|tour) of\b[^:]{0,50}|(?:recent|new|current|other) [\w -]{0,30}features|"
    r"changes(?: made)?|(?:files?|paths?) (?:changed|modified|touched|updated|created|added|edited)|"
    r"(?:changed|modified|touched|updated|created|new) files?|deliverables|artifacts|how to (?:run|try|use) it)\s*:?\s*$"
)
# A list item that leads with a file: "`src/app.py` — …", "Spec: `specs/x/spec.md`", "app/db.py: …".
_FILE_LED = re.compile(
    r"^(?:[\w .-]{1,24}:\s*)?`?(?:[~.]{0,2}/)?[\w.@-]+(?:/[\w.@-]+)+`?|^(?:[\w .-]{1,24}:\s*)?`?[\w.-]+\.[A-Za-z]{1,5}`?(?:\s|:|$)"
)


def _bare_line(line: str) -> str:
    return LIST_ITEM.sub("", line).strip().strip("*_# ").strip()


def _blocks(lines: list[str]) -> list[list[str]]:
    """Lines grouped as paragraphs, with a list and the heading line right above it in one block."""
    blocks: list[list[str]] = []
    for line in lines:
        if not line.strip():
            blocks.append([])
            continue
        item = bool(LIST_ITEM.match(line))
        if blocks and blocks[-1] and (item or not LIST_ITEM.match(blocks[-1][-1])):
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
    items = [ln for ln in block if LIST_ITEM.match(ln)]
    if not items:
        return lines
    first = block.index(items[0])
    head = _bare_line(block[first - 1]) if first else ""  # the line right above the list labels it
    if _INVENTORY.match(head) or _NEXT_STEP.match(head) or _is_file_list(items):
        prose = [ln for ln in lines if not LIST_ITEM.match(ln)]
        if prose and (_INVENTORY.match(head) or _NEXT_STEP.match(head) or HEADINGISH.match(prose[-1])
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
    if back := _POINTS_BACK.match(lines[0]):
        rest = lines[0][back.end():]
        lines[0] = rest[:1].upper() + rest[1:]
    kept = [_keep_block(b) for b in _blocks(lines)]
    out = _without_closing_sentences("\n\n".join("\n".join(b) for b in kept if b).strip())
    return out if len(prose_of(out).strip()) >= MIN_SETTLED_CHARS else text.strip()


def _without_closing_sentences(text: str) -> str:
    """`text` without trailing sentences that only offer more or point at next steps."""
    while True:
        head, sep, last = text.rpartition(". ")
        if not sep or "\n" in last or not (_CLOSING.match(last.strip()) or _NEXT_STEP.match(last.strip())):
            return text
        text = head + "."


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")


def without_orders(text: str, user_words: Sequence[str]) -> str:
    """`text` without the sentences that give an order the user never typed ("Don't switch CI to
    `--no-frozen-lockfile`; always commit the lockfile."). An order is the agent's advice, not what
    the log shows, and it counts only in the user's own words (`instruction_not_self_promoted`):
    left in, it held a card whose lesson the evidence verifies. Text that would be left with
    nothing to say is kept as it was, and that gate judges it."""
    kept_lines = []
    for line in text.splitlines():
        marker = LIST_ITEM.match(line)
        head, body = (line[: marker.end()], line[marker.end():]) if marker else ("", line)
        parts = _SENTENCE_END.split(body)
        kept = [p for p in parts if not _agents_order(p.strip(" *_>#\t"), user_words)]
        if len(kept) == len(parts):
            kept_lines.append(line)
        elif kept:
            kept_lines.append(head + " ".join(kept))
    out = "\n".join(kept_lines).strip()
    return out if len(prose_of(out).strip()) >= MIN_SETTLED_CHARS else text


def _agents_order(sentence: str, user_words: Sequence[str]) -> bool:
    order = ORDER.search(sentence)
    return order is not None and not typed_by_user(commanding_part(sentence, order), user_words)


# A sentence that says what caused it or what fixed it: kept first when the whole conclusion does not fit.
_CAUSE_OR_FIX = re.compile(
    r"(?i)\b(?:the (?:real )?fix|fixed (?:it )?by|the solution|root cause|caused by|because|instead of|switch(?:ed|ing)? to|"
    r"replac(?:e|ed|ing)|now (?:uses|sets|calls|imports|passes)|(?:set|add|import|pin|move)(?:s|ed|ing)? `)"
)
_SENTENCES = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*(\[])|\n\n+")


def within_budget(text: str, budget: int = CONCLUSION_BUDGET) -> str:
    """At most `budget` characters, cut after a whole paragraph or sentence (never inside a code
    block), marked `[…]` when cut. When it does not fit, the sentences that name the cause or the
    fix are kept before the rest, in their order, so a cut never takes the fix and leaves the wrapper."""
    text = text.strip()
    if len(text) <= budget:
        return text
    parts = [p.strip() for p in _SENTENCES.split(text) if p.strip()]
    if len(parts) > 1 and "```" not in text:
        room = budget - len(" […]")
        keep = [i for i, p in enumerate(parts) if _CAUSE_OR_FIX.search(p)]
        # Dropped first: what follows the last cause-or-fix sentence (results, offers), then from the end back.
        last = keep[-1] if keep else len(parts)
        order = [i for i in range(len(parts) - 1, -1, -1) if i not in keep]
        order.sort(key=lambda i: i < last)
        chosen = list(range(len(parts)))
        for i in order:
            if sum(len(parts[j]) + 1 for j in chosen) <= room:
                break
            chosen.remove(i)
        if chosen and keep and keep[0] in chosen and sum(len(parts[j]) + 1 for j in chosen) <= room + 1:
            return " ".join(parts[i] for i in sorted(chosen)) + (" […]" if len(chosen) < len(parts) else "")
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


_WRAPPER_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*\"'(\[])")


def without_wrapper(text: str) -> str:
    """The conclusion without its wrapper (`cards.phrasebook.WRAPPER_LINES`): headings, status lines,
    "fixed." openers, commit notices and predictions, so the budget goes to the cause and the fix.
    A line or sentence goes only as a whole; text that is nothing but wrapper is left as it was."""
    kept_lines = []
    for line in text.splitlines():
        if first_rule(WRAPPER_LINES, line) in ("heading", "status_line"):
            continue
        parts = _WRAPPER_SENTENCE.split(line)
        kept = [p for p in parts if not first_rule(WRAPPER_LINES, p.strip())]
        if parts and not kept:
            continue
        kept_lines.append(" ".join(kept) if len(kept) != len(parts) else line)
    out = "\n".join(kept_lines).strip()
    out = re.sub(r"\n{3,}", "\n\n", out)
    return out if len(out) >= MIN_SETTLED_CHARS else text
