"""A fix the error printed: the change that cleared a failure is text the failure's own output already held.

`bd ready` fails with "Run 'bd sync --import-only' to fix" and the agent runs `bd sync --import-only`; a
framework's error says "Please add {:lazy_html, ...} to your mix.exs" and the edit adds that line. The log
proves the fix, but a card teaches nothing the error will not print again next time, and it takes one of
the two places recall has. Such a card is held (gate `self_evident`), not lost: `memoir review` can
confirm it. Decided from facts alone (the failing run's output, the fix's commands and added lines), so
it holds in any language.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memoir.cards.commands import same_line, added_text, chain_steps, command_of, only_looks, same_target
from memoir.cards.values import Turn

MIN_PIECE = 8  # characters: shorter added lines (`end`, `}`, `],`) and steps say nothing on their own


def _flat(text: str) -> str:
    return " ".join(text.split())


def fix_pieces(changes: Sequence[Turn], failed_command: str) -> list[str]:
    """What the fix consists of: each command step the failed command did not already hold (the check
    run again, a `cd` it also made), and each added line long enough to mean something; [] when a
    change says nothing readable (then nothing can show the error told it). An output that echoes the
    failed command (PowerShell's `At line:1 char:…`) holds its steps, which are no fix."""
    tried = _flat(failed_command)
    pieces: list[str] = []
    for turn in changes:
        added = added_text(turn)
        if added:
            pieces += [line for line in map(same_line, added.splitlines()) if len(_flat(line)) >= MIN_PIECE]
            continue
        command = command_of(turn)
        if not command:
            return []
        pieces += [step for step in chain_steps(command)
                   if not (tried and (same_target(failed_command, step) or _flat(step) in tried))
                   and not only_looks(step) and len(_flat(step)) >= MIN_PIECE]
    return pieces


# Source the output quotes to show where the error is (rustc's and Elixir's `12 | code`, a traceback's code line
# under `File "…", line N`): existing code, which a fix may copy without the error having told it anything.
_GUTTER = re.compile(r"(?m)^[ \t]*\d+[ \t]*[|│].*$")  # [ \t], not \s: blank lines are scanned once
_TRACEBACK_CODE = re.compile(r'(?m)^([ \t]*File "[^"\n]+", line \d+[^\n]*\n)[ \t]+(?!File ")\S[^\n]*$')


def without_excerpts(output: str) -> str:
    """The output without the source lines it quotes: what it *says*, where a remedy would stand."""
    return _TRACEBACK_CODE.sub(r"\1", _GUTTER.sub("", output))


def told_by_error(output: str, changes: Sequence[Turn], failed_command: str) -> bool:
    """Does the failing run's output say every piece of the fix that cleared it, word for word (outside the
    source lines it quotes)?"""
    pieces = fix_pieces(changes, failed_command)
    flat = _flat(without_excerpts(output))
    # Whole: `pip install requests` is not told by an output that says `pip install requests-oauthlib`.
    return bool(pieces) and all(re.search(re.escape(_flat(p)) + r"(?![\w-])", flat) for p in pieces)
