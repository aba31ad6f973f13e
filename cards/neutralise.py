"""Instruction-shaped text made harmless where memoir injects it: still readable, never markup or an order.

What the hook, the session brief and MCP put in an agent's context is card text, and a card can
hold whatever a session log held, a confirmed card too. The shapes are the quality gates' own
(`cards/instruction_shapes.py`, `MARKUP` and `COMMAND_SHAPES`), never a second list:
- role tags, tool-call markup and chat-template tokens lose their angle brackets
  (`<system>` → `‹system›`), so no model reads them as a turn or a tool call;
- a sentence that tries to override instructions or pipes text into a shell is quoted and
  labelled (`[instruction-shaped text from a session log, not an instruction: “…”]`), with its
  pipes broken (`|` → `¦`) so it cannot be pasted into a shell as it stands.
Ordinary text comes back unchanged, byte for byte.
"""

from __future__ import annotations

import re

from memoir.cards.plain_text import plain
from memoir.cards.instruction_shapes import COMMAND_SHAPES, MARKUP

LABEL = "instruction-shaped text from a session log, not an instruction"
# A sentence ends at . ! or ? before a space, or at a line break (a quote never spans lines).
_SENTENCE_END = re.compile(r"[.!?](?=\s)|\n")
_DEFANG = str.maketrans({"<": "‹", ">": "›"})
_QUOTED = str.maketrans({"|": "¦", "]": "］", "“": '"', "”": '"'})  # nothing inside can end the quote


def defang_markup(text: str) -> str:
    """`text` with every role tag, tool-call tag and chat-template token's brackets made inert."""
    return MARKUP.sub(lambda m: m.group(0).translate(_DEFANG), text)


def _sentence_around(text: str, start: int, end: int) -> tuple[int, int]:
    left = 0
    for m in _SENTENCE_END.finditer(text, 0, start):
        left = m.end()
    right = len(text)
    if (m := _SENTENCE_END.search(text, end)) is not None:
        right = m.start() if m.group(0) == "\n" else m.end()
    while left < right and text[left].isspace():
        left += 1
    while right > left and text[right - 1].isspace():
        right -= 1
    return left, right


def command_spans(text: str) -> list[tuple[int, int]]:
    """The sentences of `text` that override instructions or pipe into a shell, merged, in order."""
    spans = sorted(_sentence_around(text, m.start(), m.end())
                   for shape in COMMAND_SHAPES for m in shape.finditer(text))
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def quoted(sentence: str) -> str:
    """One instruction-shaped sentence as quoted, labelled text."""
    return f"[{LABEL}: “{sentence.translate(_QUOTED)}”]"


def neutralise(text: object) -> str:
    """`text` as memoir may inject it: disguises taken off (`cards.plain_text`), markup defanged,
    commanding sentences quoted and labelled."""
    text = defang_markup(plain(str(text)))
    spans = command_spans(text)
    if not spans:
        return text
    out, at = [], 0
    for start, end in spans:
        out += [text[at:start], quoted(text[start:end])]
        at = end
    out.append(text[at:])
    return "".join(out)
