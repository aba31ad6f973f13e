"""The line a fix card ends with when its conclusion never names the change: "The fix: adding `x` to
`config/test.exs`." The change as the log holds it, never invented: a short edit whole, a long one by
the lines that carry a name the failure or the cause named, else the files it edited.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memoir.cards.commands import added_text, changed_names
from memoir.cards.lesson import CONCLUSION_BUDGET, within_budget
from memoir.cards.loop import Loop
from memoir.cards.plain_text import json_unescaped
from memoir.cards.values import Turn


def with_the_fix(conclusion: str, lp: Loop | None, turns: Sequence[Turn] = ()) -> str:
    """The conclusion, and the change that fixed it when the conclusion never names it (a cause stated,
    the fix left to an edit nobody described): "The fix: adding `x` to `config/test.exs`."."""
    attempt = lp.attempts[-1] if lp is not None and lp.attempts else None
    if attempt is None or not conclusion.strip():
        return conclusion
    names = changed_names(attempt.changes)
    added = [line.strip() for t in attempt.changes for line in added_text(t).splitlines() if len(line.strip()) >= 8]
    if any(n and n in conclusion for n in names) or any(a in conclusion for a in added[:5]) or attempt.setting \
            and attempt.setting.split(":")[0] in conclusion:
        return conclusion
    said = attempt.tried()
    if said.strip("`") in conclusion:
        return conclusion
    seen = "\n".join(t.text for t in turns)
    seen += "\n" + json_unescaped(seen)  # an edit's lines stand JSON-escaped in a call
    if any(span not in seen for span in re.findall(r"`([^`]+)`", said)):
        # The edit as the log holds it (a JSON string escapes its quotes): name the files, invent nothing.
        if not names:
            return conclusion
        said = "editing " + ", ".join(f"`{n}`" for n in sorted(names))
    if _ONLY_EDITING.fullmatch(said) and len(names) == 1:
        # Too long to show whole: the lines it added that name what the failure or the cause named, when
        # they fit beside the whole conclusion (the cause is worth more than the lines).
        key = key_lines(added, lp.failure.signature + "\n" + conclusion if lp is not None else conclusion)
        shown = "adding " + ", ".join(f"`{line}`" for line in key) + f" to `{next(iter(names))}`"
        if key and len(conclusion.rstrip()) + len(shown) + 12 <= CONCLUSION_BUDGET:
            said = shown
    return within_budget(conclusion.rstrip() + f"\n\nThe fix: {said}.")


_NAME = re.compile(r"[A-Za-z_][\w.:]*[A-Za-z0-9_]")
_ONLY_EDITING = re.compile(r"editing `[^`]+`(?:, editing `[^`]+`)*(?: and \d+ more)?")
MAX_KEY_LINES, MAX_KEY_LINE = 2, 100


def key_lines(added: Sequence[str], named_in: str) -> list[str]:
    """The added lines that carry a name the failure or the cause names (`secret_key_base`,
    `SpotterWeb.Endpoint`): an identifier with `_`, `.`, `:` or an inner capital, not a plain word."""
    names = {n.strip(":.") for n in _NAME.findall(named_in)
             if len(n) >= 4 and ("_" in n or "." in n.strip(".") or any(c.isupper() for c in n[1:]))}
    out = []
    for line in added:
        if len(out) >= MAX_KEY_LINES:
            break
        line = " ".join(line.split())
        if "`" not in line and len(line) <= MAX_KEY_LINE and any(n in line for n in names) and line not in out:
            out.append(line)
    return out
