"""Every named shape rule of the sanitizer (cards.sanitize.shapes.SHAPE_RULES) against its own hits and
misses: a rule that drifts fails a test that names it."""

from __future__ import annotations

import pytest

from memoir.cards.sanitize import sanitize
from memoir.cards.sanitize.shapes import SHAPE_RULES

CAP = 4000
ROWS = [(r, t, True) for r in SHAPE_RULES for t in r.hits] + [(r, t, False) for r in SHAPE_RULES for t in r.misses]


@pytest.mark.parametrize(("rule", "text", "hit"), ROWS, ids=[f"{r.name}-{'hit' if h else 'miss'}{i}" for i, (r, _, h) in enumerate(ROWS)])
def test_each_shape_rule_finds_its_hits_and_none_of_its_misses(rule, text, hit):
    found = list(rule.find(text))
    assert bool(found) == hit, (rule.name, text, found)
    if hit:
        # The whole sanitizer removes what the rule found, whatever other rule names it.
        out = sanitize(text, CAP)
        assert all(text[s:e] not in out for _, s, e in found)


def test_every_shape_rule_has_a_name_hits_misses_and_a_reason():
    assert len({r.name for r in SHAPE_RULES}) == len(SHAPE_RULES)
    assert all(r.hits and r.misses and len(r.why) > 40 for r in SHAPE_RULES)
