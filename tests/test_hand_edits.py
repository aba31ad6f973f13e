"""The user's hand wins: an edited card file is never overwritten, and its edit is what the index and recall see."""

from __future__ import annotations

from datetime import datetime, timezone

from memoir.cards.distill.rules import apply_rules
from memoir.cards.values import Experience, Source, Turn
from memoir.cards.store import content_hash
from memoir.flows.pipeline import run_pipeline
from memoir.index.db import open_index
from memoir.index.recall import recall
from tests.user_cards import (
    FEEDCLI_CARD,
    FEEDCLI_LOG,
    card,
    copy_home,
    store_of,
)

NEW_CONCLUSION = (
    "The build broke because undici's fetch returns Response.json() as Promise<unknown>; the fix that "
    "lasted was validating the feed with the existing zod FeedSchema.parse() in fetchFeed, never a cast."
)
QUERY = "npm run build fails with TS2339 after switching fetchFeed to undici fetch: Response.json() is unknown"
NOW = datetime(2026, 10, 15, tzinfo=timezone.utc)


def reset_ledger(settings) -> None:
    """`rm state/ledger.sqlite` (and its WAL files): the next run reads and drafts every session again."""
    for suffix in ("", "-wal", "-shm"):
        (settings.state_dir / f"ledger.sqlite{suffix}").unlink(missing_ok=True)


def edit_conclusion(text: str, new: str) -> str:
    head, rest = text.split("## Conclusion\n", 1)
    _, tail = rest.split("\n## ", 1)
    return f"{head}## Conclusion\n\n{new}\n\n## {tail}"


def test_a_hand_edited_card_survives_three_runs_byte_identical_and_recall_returns_its_new_conclusion(
        built, memoir_home, embedder):
    settings = copy_home(built, memoir_home)
    path = store_of(settings).path_for(FEEDCLI_CARD)
    edited = edit_conclusion(path.read_text(encoding="utf-8"), NEW_CONCLUSION).encode("utf-8")
    path.write_bytes(edited)

    for _ in range(3):
        reset_ledger(settings)  # each run drafts the same experience again from the log
        summary = run_pipeline(settings, [FEEDCLI_LOG])
        assert path.read_bytes() == edited
        assert FEEDCLI_CARD in summary.hand_edited  # listed although no rule tried to write it

    with open_index(settings.index_dir, embedder) as index:
        row = index.get([FEEDCLI_CARD])[FEEDCLI_CARD]
    assert row.file_hash == content_hash(edited)
    assert "FeedSchema.parse()" in row.retrieval_text

    result = recall(settings, QUERY, embedder=embedder, workspace="/home/dev/projects/feedcli", now=NOW,
                    budget_ms=60_000)
    assert [c.id for c in result.cards][:1] == [FEEDCLI_CARD], result.record
    assert result.cards[0].conclusion == NEW_CONCLUSION


def test_a_hand_set_status_is_kept_by_runs_and_respected_by_recall(built, memoir_home, embedder):
    settings = copy_home(built, memoir_home)
    path = store_of(settings).path_for(FEEDCLI_CARD)
    edited = path.read_text(encoding="utf-8").replace("\nstatus: active\n", "\nstatus: candidate\n", 1).encode()
    path.write_bytes(edited)
    reset_ledger(settings)
    summary = run_pipeline(settings, [FEEDCLI_LOG])
    assert path.read_bytes() == edited
    assert summary.hand_edited == [FEEDCLI_CARD]
    result = recall(settings, QUERY, embedder=embedder, workspace="/home/dev/projects/feedcli", now=NOW,
                    budget_ms=60_000)
    assert FEEDCLI_CARD not in [c.id for c in result.cards]
    assert (FEEDCLI_CARD, "StatusNotActive") in result.rejected


def _drafted(n: int, **fields):
    c = card(n, **fields)
    s = c.sources[0]
    turn = Turn(s.host, s.session_id, s.turns[0], "user", "text", c.goal, source_file=s.file, line=s.lines[0])
    return Experience(s.host, s.session_id, (turn,)), c


SIGNATURE = "KeyError: missing config key database url"


def test_rules_never_merge_into_supersede_or_refresh_a_card_a_person_owns():
    mine = card(1, error_signature=SIGNATURE, updated="2026-10-01T11:00:00+00:00")
    newer = _drafted(2, error_signature=SIGNATURE, created="2026-10-05T10:00:00+00:00",
                     updated="2026-10-05T11:00:00+00:00",
                     conclusion="Set DATABASE_URL in .env.local; the loader no longer reads .env at all.")
    merged = apply_rules([newer], [mine])
    assert [c.id for c in merged.write] == [mine.id]  # without the hand: merged into the older card

    plan = apply_rules([newer], [mine], frozen={mine.id})
    assert [c.id for c in plan.write] == [newer[1].id]  # stands beside it
    assert plan.write[0].status == "active" and not plan.write[0].supersedes


def test_a_duplicate_of_a_person_owned_card_is_dropped_without_touching_it():
    mine = card(1)
    again = _drafted(1)  # the same experience read again (same id and sources)
    copy = _drafted(3, sources=(Source("sess-copy", "claude-code", "/logs/copy.jsonl", (1, 5), (0, 4)),))
    plan = apply_rules([again, copy], [mine], frozen={mine.id})
    assert plan.write == []
    assert sorted(reason.split()[0] for _, reason in plan.dropped) == ["already_in", "duplicate_of"]
