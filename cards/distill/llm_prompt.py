"""The prompt for one experience: the card's six sections and as many source turns as the budget holds.

Pure: `build_prompt` renders the two messages (templates distill_system.j2 and distill_user.j2)
and keeps the user's words and the errors first when the budget is short.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from memoir.cards.distill.llm_slots import MAX_LEN, MAX_TOPICS, TASK_TYPES
from memoir.cards.render import render
from memoir.cards.values import SECTION_TITLES, SECTIONS, Card, Experience, Turn

# Bounded input: ~3k tokens leaves room in a 4k-context local model for the answer.
MAX_SECTION_CHARS = 1500
MAX_TURN_CHARS = 600
MAX_INPUT_CHARS = 12_000
# Which turns to keep first when the budget is short: the user's words, then what failed.
TURN_PRIORITY = {("user", "text"): 0, ("*", "error"): 1, ("assistant", "text"): 2, ("*", "tool_call"): 3}


@dataclass(frozen=True, slots=True)
class Prompt:
    """What is sent for one experience, and how big it is."""

    messages: tuple[tuple[str, str], ...]
    turns_sent: int
    turns_total: int
    empty: bool

    @property
    def chars(self) -> int:
        return sum(len(text) for _, text in self.messages)


def _clip_middle(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    half = (limit - 30) // 2
    return f"{text[:half]} …[{len(text) - 2 * half} chars elided]… {text[-half:]}"


def _priority(turn: Turn) -> int:
    return TURN_PRIORITY.get((turn.role, turn.kind), TURN_PRIORITY.get(("*", turn.kind), 4))


def build_prompt(exp: Experience, card: Card, max_chars: int = MAX_INPUT_CHARS) -> Prompt:
    """The whole structured experience: six sections plus as many source turns as the budget holds."""
    sections = [(SECTION_TITLES[n], _clip_middle(card.section(n), MAX_SECTION_CHARS)) for n in SECTIONS]
    usable = [t for t in exp.turns if t.kind != "thinking" and t.text.strip()]
    empty = not usable and not any(text for _, text in sections)
    system = render("distill_system.j2", max_len=MAX_LEN, max_topics=MAX_TOPICS, task_types=TASK_TYPES)

    def user_message(turns: list[Turn]) -> str:
        shown = [replace(t, text=_clip_middle(t.text, MAX_TURN_CHARS)) for t in turns]
        return render(
            "distill_user.j2", exp=exp, card=card, sections=sections, turns=shown,
            shown=len(shown), total=len(usable), omitted=len(usable) - len(shown),
        )

    budget = max_chars - len(system) - len(user_message([])) - 64
    chosen: list[Turn] = []
    for turn in sorted(usable, key=lambda t: (_priority(t), t.seq)):
        cost = min(len(turn.text), MAX_TURN_CHARS) + 40
        if cost <= budget:
            chosen.append(turn)
            budget -= cost
    chosen.sort(key=lambda t: t.seq)
    return Prompt(
        messages=(("system", system), ("user", user_message(chosen))),
        turns_sent=len(chosen),
        turns_total=len(usable),
        empty=empty,
    )
