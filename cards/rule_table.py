"""A named rule: one pattern with the texts it must and must not match, and why it exists.

Every rule table (`cards.phrasebook`, `cards.phrasebook_cjk`) is made of these rows, and one test
(`tests/test_phrasebook.py`) runs each row against its own hits and misses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Rule:
    """One named pattern, with examples it must match (`hits`) and must not (`misses`)."""

    name: str
    pattern: re.Pattern
    hits: tuple[str, ...]
    misses: tuple[str, ...]
    why: str

    def search(self, text: str) -> bool:
        return self.pattern.search(text) is not None


def rx(pattern: str) -> re.Pattern:
    return re.compile(pattern, re.IGNORECASE | re.UNICODE)


def first_rule(table: tuple[Rule, ...], text: str) -> str:
    """The name of the first rule of `table` that matches `text`, or ''."""
    return next((r.name for r in table if r.search(text)), "")
