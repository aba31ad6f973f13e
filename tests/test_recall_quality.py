"""Recall quality on both labelled sets (issue 16), and what recall injects staying well-formed.

- the example sessions (`cards/examples/`) with `tests/retrieval_set.py`: right cards named by a
  phrase of their text;
- `tests/fixtures/second_set/`: 17 sessions in 6 workspaces, 73 questions labelled with experience
  ids before recall was tuned (`python -m bench.recall_quality` prints both).

Recall is measured alone: cards the quality gates held back although they are labelled verified
fixes are made active first (`--as-built` shows the product as built). Issue 16's thresholds:
precision >= 0.9, recall@2 >= 0.7, correct-empty >= 0.9, no stale card injected. Measured at the
commit that set them: examples 0.943 / 1.000 / 1.000 / 0, second set 0.943 / 0.962 / 0.905 / 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.recall_quality import THRESHOLDS, Figures, evaluate
from memoir.cards.config import load_settings
from memoir.cards.store import CardStore
from memoir.index.containers import clip, close_fences, immediate_context
from memoir.index.embed import default_embedder
from memoir.index.recall import Recaller, RecalledCard
from tests.retrieval_set import AS_OF, QUERIES, build_example_home, score

EXAMPLES = Path(__file__).resolve().parent.parent / "cards" / "examples"


@pytest.fixture(scope="module")
def embedder():
    return default_embedder()


def assert_meets_issue_16(f: Figures) -> None:
    detail = "\n".join(f.notes)
    assert f.precision >= THRESHOLDS["precision"], detail
    assert f.recall_at_2 >= THRESHOLDS["recall_at_2"], detail
    assert f.correct_empty >= THRESHOLDS["correct_empty"], detail
    assert f.stale == 0, detail


@pytest.mark.slow
def test_retrieval_set_meets_the_quality_floors(memoir_home, embedder):
    assert len(QUERIES) >= 40
    settings = load_settings(home=memoir_home)
    build_example_home(settings, EXAMPLES, embedder, activate_held=True)
    with Recaller(settings, embedder) as recaller:
        s = score(recaller, CardStore(settings.cards_dir, settings.state_dir), AS_OF)
    assert s.answerable >= 25 and s.unanswerable >= 12
    detail = "\n".join(s.wrong + s.misses)
    assert s.precision >= 0.85, detail
    assert s.recall_at_2 >= 0.85, detail
    assert s.correct_empty >= 0.9, detail


@pytest.mark.slow
def test_example_set_meets_issue_16_with_no_stale_card(memoir_home, embedder):
    [(_, f)] = evaluate("examples", memoir_home, embedder)
    assert f.answerable >= 25 and f.unanswerable >= 12
    assert_meets_issue_16(f)


@pytest.mark.slow
def test_second_set_meets_issue_16_with_no_stale_card(memoir_home, embedder):
    # Pinned shortly after the set's sessions (2026-11-10..28), whatever today's date is.
    [(_, f)] = evaluate("second_set", memoir_home, embedder)
    assert f.questions == 73
    assert f.answerable >= 45 and f.unanswerable >= 15
    assert_meets_issue_16(f)


# --- cut text never leaves a code fence open (issue 16) ---------------------------------------------

LONG_BLOCK = "Run the migration first:\n```sql\n" + "ALTER TABLE runs ADD COLUMN n INTEGER;\n" * 40 + "```\nDone."


def test_clip_inside_a_code_block_cuts_before_the_block():
    out = clip(LONG_BLOCK, 200, end=" …")
    assert out == "Run the migration first: …"


def test_clip_that_can_only_cut_inside_the_block_closes_the_fence():
    out = clip("```\n" + "x = 1\n" * 100 + "```", 50, end="…")
    assert out.count("```") == 2 and out.endswith("```…")


def test_short_text_and_closed_blocks_are_left_alone():
    assert clip("short", 50) == "short"
    assert close_fences("a\n```\nb\n```") == "a\n```\nb\n```"


def test_immediate_context_closes_a_fence_its_first_failure_lines_leave_open():
    failure = "Fails when the config is:\n```toml\n[tool]\nstrict = true\n```"
    card = RecalledCard("c-0000000000fence1", "Pin the toolchain in rust-toolchain.toml so CI and laptops agree.",
                        failure, (), 0.6, 2.0)
    text = immediate_context([card])
    assert text.count("```") % 2 == 0
    assert "```toml\n[tool]\n```" in text
