"""Every rule of every rule table matches its own hits and none of its misses (issue 37: rules are
named rows with examples, run by one generic test)."""

from __future__ import annotations

import pytest

from memoir.cards import phrasebook
from memoir.cards.phrasebook import Rule

TABLES = {name: table for name, table in vars(phrasebook).items()
          if isinstance(table, tuple) and table and all(isinstance(r, Rule) for r in table)}
RULES = [(table, rule) for table, rules in TABLES.items() for rule in rules]


def test_the_tables_are_found():
    assert {"PENDING", "CONFIRMS", "REJECTS", "PROBLEM_REPORTS", "WRAPPER_LINES", "ENVIRONMENT"} <= set(TABLES)


@pytest.mark.parametrize(("table", "rule"), RULES, ids=[f"{t}.{r.name}" for t, r in RULES])
def test_each_rule_matches_its_hits_and_none_of_its_misses(table, rule):
    assert rule.hits and rule.why, f"{table}.{rule.name} needs examples and a reason"
    assert [h for h in rule.hits if not rule.search(h)] == [], f"{table}.{rule.name} misses its own hits"
    assert [m for m in rule.misses if rule.search(m)] == [], f"{table}.{rule.name} matches its own misses"


def test_rule_names_are_unique():
    names = [r.name for _, r in RULES]
    assert len(names) == len(set(names))
