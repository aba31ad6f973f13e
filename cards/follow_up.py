"""Which lines of a card's Follow-up section are open follow-ups a later session could act on.

The rule stage fills Follow-up with every line of the session that matched a follow-up cue, so it
also catches headings ("## 7. **Next Steps**"), the agent narrating its own next move ("Let me
check remaining work…", "I'll create…"), reports of work done, code lines ("throw new Error('not
yet implemented');") and the session's own requests. The brief shows only what is still to do:
a line with an open-work marker (TODO, still need to, not yet, unresolved at end, "Next steps:"
with something after it) or a line that reads as an instruction (a person's "Check the race
detector first.").
"""

from __future__ import annotations

import re

from memoir.cards.signals import DECLINED  # the hosts' words for a declined tool call, one list for all

_LIST_MARK = re.compile(r"^(?:[-*+•>]\s*|\d{1,3}[.)]\s+|\[[ xX]\]\s+)+")
_HEADING = re.compile(r"^#{1,6}\s|^(?:\*\*|__)[^*_]+(?:\*\*|__):?$")
_LABEL_WORDS = frozenset(
    """next step steps follow follow-up follow-ups followup followups up todo todos fixme notes note and
    roadmap optional suggestion suggestions remaining work open question questions summary plan plans the
    for later items""".split()
)
_PLACEHOLDER = re.compile(r"(?i)^(?:none|n/?a|nothing|-+|no follow[- ]?ups?|nothing (?:left|else|open)(?: to do)?|"
                          r"none (?:needed|left|open))\W*$")
# The agent speaking of its own next move, or offering one, inside the session that is over.
_NARRATION = re.compile(
    r"(?i)^(?:(?:now|next|first|then|ok(?:ay)?|great|so|alright|perfect|done|sure)\b[,!.:]?\s+)*"
    r"(?:let me|let's|let us|i'll|i will|i'm|i am|i've|i have|i'd|i can|i could|we'll|we will|we've|we're)\b"
)
_OFFER = re.compile(r"(?i),\s*(?:i|we)(?:'ll|'d| will| can| could| would)\b")
_DONE = re.compile(r"(?i)\b(?:has|have) been (?:created|added|completed|done|fixed|implemented|updated|written|"
                   r"resolved|removed)\b|\bsuccessfully\b")
_CODE = re.compile(
    r"[;{}]\s*$|^(?:const|let|var)\s+\w+\s*=|^(?:def|class|fn|func)\s+\w+|^(?:import|from)\s+[\w.]+\s*(?:import\b|;|$)"
    r"|^(?:throw|raise)\s|^(?:console|System\.out|fmt|log)\.\w+\(|^(?://|/\*|#include\b)"
)
_REQUEST = re.compile(r"(?i)^(?:/[\w:-]+(?:\s|$)|please\b|pls\b|can you\b|could you\b)")
_OPEN = re.compile(
    # A marker, not the noun: "TODO: retry", "FIXME(ana) -", never "the TODO app".
    r"\b(?:TODO|FIXME|XXX)\b\s*(?:\([^)]*\))?\s*[:\-–]|(?i:\btodo:|\bstill (?:need(?:s)? to|ha(?:s|ve) to|to do)\b|\bnot yet\b|\bleft to do\b|"
    r"\bremains? to be\b|\bremaining work\b|\bopen questions?\b|\bfollow[- ]?up (?:on|with)\b|^unresolved at end:|"
    r"\b(?:next steps?|follow[- ]?ups?|to ?do)\s*[:\-–]\s*\S)"
)
_IMPERATIVE = frozenset(
    """add adjust audit avoid bump change check clean confirm consider convert delete document double-check
    drop enable disable ensure file find fix follow handle implement improve install investigate keep look
    measure merge migrate monitor move open pin port profile re-run rerun reduce refactor remove rename
    replace report restore retry revert review revisit rewrite run set split switch test track try turn
    update upgrade use validate verify wire write""".split()
)


def _clean(line: str) -> str:
    return " ".join(_LIST_MARK.sub("", line.strip()).split())


def _is_label(text: str) -> bool:
    """A heading-like line: only label words ("Notes and next steps", "Next steps (optional)")."""
    words = re.findall(r"[a-z][a-z-]*", re.sub(r"\([^)]*\)", " ", text.lower()))
    return not text.rstrip().endswith((".", "!", "?")) and all(w in _LABEL_WORDS for w in words)


def _declined(text: str) -> bool:
    body = text.split(":", 1)[1].strip(" `") if text.lower().startswith("unresolved at end:") else text
    return body.startswith(DECLINED)


def is_open_follow_up(text: str) -> bool:
    """An item still to do, worded so a later session can act on it."""
    if not text or _PLACEHOLDER.match(text) or _HEADING.search(text) or _is_label(text):
        return False
    if _NARRATION.search(text) or _OFFER.search(text) or _REQUEST.search(text) or _CODE.search(text):
        return False
    if _declined(text):
        return False
    if _DONE.search(text) and not _OPEN.search(text):
        return False
    first = re.match(r"[A-Za-z][a-z-]*", text)
    return bool(_OPEN.search(text)) or bool(first and first.group(0).lower() in _IMPERATIVE)


def open_follow_ups(section: str) -> list[str]:
    """The open follow-ups in a Follow-up section, each on one line, in order, without repeats."""
    items = (_clean(line) for line in section.splitlines())
    return list(dict.fromkeys(t for t in items if is_open_follow_up(t)))
