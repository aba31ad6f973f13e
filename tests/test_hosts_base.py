"""What every JSON host reader shares: lines parsed one at a time, each bad one counted by reason."""

from __future__ import annotations

from collections import Counter

from memoir.cards.hosts.base import iter_json_lines, split_head


def test_lines_are_parsed_one_at_a_time_as_the_reader_reaches_them_and_bad_ones_counted_on_the_way():
    lines = [b'{"a": 1}', b"", b"not json", b"[1, 2]", b'{"b": 2}', b'{"c": 3}']
    skipped: Counter = Counter()
    parsed = iter_json_lines(lines, 10, skipped)
    assert next(parsed) == (11, {"a": 1}) and not skipped  # nothing past the first line was parsed yet
    head, everything = split_head(parsed, 1)
    assert head == [(15, {"b": 2})] and skipped == Counter(bad_json=1, unknown_shape=1)
    assert list(everything) == [(15, {"b": 2}), (16, {"c": 3})]
