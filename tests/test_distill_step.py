"""The distill step's own choices: which experiences judge a card."""

from __future__ import annotations

from memoir.cards.distill.merge import MAX_EVIDENCE_BLOCKS, source_label
from memoir.cards.values import Card, Experience, Source, Turn
from memoir.flows.distill_step import experience_for


def _experience(n: int) -> tuple[Source, Experience]:
    sid = f"s{n:03d}"
    turns = (Turn("claude-code", sid, 1, "user", "text", f"the build fails again ({n})"),
             Turn("claude-code", sid, 2, "assistant", "text", f"fixed it ({n})"))
    return Source(sid, "claude-code", f"{sid}.jsonl", (1, 2), (1, 2)), Experience("claude-code", sid, turns)


def test_a_merged_card_is_judged_by_the_experiences_behind_the_evidence_it_shows():
    parts = [_experience(n) for n in range(MAX_EVIDENCE_BLOCKS + 6)]
    by_id = {exp.id: exp for _, exp in parts}
    sources = tuple(s for s, _ in parts)
    said = source_label(sources[2])  # the conclusion came from an old session
    card = Card(id="c-merged", sources=sources, extra={"conclusion_from": said})
    judged = experience_for(card, by_id)
    texts = {t.text for t in judged.turns}
    assert len(judged.turns) == 2 * MAX_EVIDENCE_BLOCKS
    assert "fixed it (2)" in texts  # the conclusion's own experience
    assert f"fixed it ({MAX_EVIDENCE_BLOCKS + 5})" in texts  # the newest
    assert "fixed it (6)" not in texts and "fixed it (5)" not in texts  # older than the evidence it shows
    # Fewer than the bound: every experience, in source order.
    few = Card(id="c-few", sources=sources[:3])
    assert [t.text for t in experience_for(few, by_id).turns][::2] == [f"the build fails again ({n})" for n in range(3)]
