"""Search by words beside meaning: the turn index's word table, its fusion with the nearest turns, and
the floor that keeps a turn holding the question's own terms (an error code, a key, a file name)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memoir.index.embed import default_embedder
from memoir.index.files import TURNS_FILE
from memoir.index.search import TurnMatch, fuse_turns, word_coverage
from memoir.index.search_results import TurnHit, above_floor
from memoir.index.turns import TurnIndex, TurnRow, search_words

RELAYD_LOG = next((Path(__file__).parent / "fixtures" / "conversational").glob("claude-code/-home-kofi-work-relayd/*.jsonl"))
LEAK_LINE = 37  # "deliver_test.go:88: open fds grew from 12 to 1036": a test's output, said nowhere else


@pytest.fixture(scope="module")
def embedder():
    return default_embedder()


def ledgered(log: Path) -> dict:
    st = log.stat()
    return {str(log): ("claude-code", st.st_size, st.st_mtime_ns)}


def row(line: int, text: str = "", session: str = "s") -> TurnRow:
    return TurnRow("f.jsonl", line, "claude-code", session, line, "user", "text", "", "/w", text)


def test_a_turn_is_found_by_the_words_it_says_and_forgotten_with_its_file(tmp_path, embedder):
    turns = TurnIndex(tmp_path, embedder.model_id)
    turns.refresh_files(ledgered(RELAYD_LOG), embedder, 4000)
    found = search_words(tmp_path, "the delivery test where open fds grew to 1036", 3)
    assert found and (found[0][0], found[0][1]) == (str(RELAYD_LOG), LEAK_LINE)
    assert search_words(tmp_path, 'fds" OR NEAR(* 1036 -x:', 3)[0][1] == LEAK_LINE  # user text is never FTS syntax
    assert search_words(tmp_path, "kubernetes helm chart", 3) == []  # words no turn says: nothing
    turns.refresh_files({}, embedder, 4000)  # the log left the ledger: its words go with its turns
    turns.close()
    assert search_words(tmp_path, "open fds grew to 1036", 3) == []


def test_a_turn_index_made_before_the_word_table_fills_it_from_its_turns(tmp_path, embedder):
    turns = TurnIndex(tmp_path, embedder.model_id)
    turns.refresh_files(ledgered(RELAYD_LOG), embedder, 4000)
    with turns.conn:
        turns.conn.execute("DELETE FROM turn_words")
        turns.conn.execute("DELETE FROM meta WHERE key = 'lexical'")
    turns.close()
    assert search_words(tmp_path, "open fds grew to 1036", 3) == []
    TurnIndex(tmp_path, embedder.model_id).close()  # opening it again fills the table, reading no log
    assert search_words(tmp_path, "open fds grew to 1036", 3)[0][1] == LEAK_LINE
    assert search_words(tmp_path / "none", "fds", 3) == []  # no turn index yet: no word matches, no error


def test_a_turn_both_lists_hold_outranks_one_either_holds_alone_and_keeps_its_word_coverage():
    again = row(2, "the import hit sqlstate 40p01 again")
    dense = [TurnMatch(row(1, "a"), 1, 0.6), TurnMatch(again, 2, 0.5)]
    lexical = [(row(3, "SQLSTATE 40P01 deadlock detected"), 0.1), (again, 0.5)]
    fused = fuse_turns(dense, lexical, ["sqlstate", "40p01", "import"], 3)
    assert [(m.row.line, m.rank) for m in fused] == [(2, 1), (1, 2), (3, 3)]
    assert fused[2].similarity == 0.1 and fused[2].words == pytest.approx(2 / 3)
    assert fused[0].words == 1.0 and fused[1].words == 0.0  # the second found by meaning only
    weak = fuse_turns(dense, [(row(4, "what backoff between webhook retries"), 0.3)], ["webhook", "timestamp", "refuse"], 3)
    assert [m.row.line for m in weak] == [1, 2]  # one shared word is no word match: it lifts nothing


def test_word_coverage_counts_subject_terms_only_and_needs_two():
    assert word_coverage(["fix", "error", "test"], "fix the error in the test") == 0.0  # session-work words
    assert word_coverage(["retention_enabled", "loki"], "set retention_enabled true for loki") == 1.0
    assert word_coverage(["retention_enabled", "loki", "chunks"], "retention_enabled: true") == 0.0  # one of three
    assert word_coverage(["sqlstate"], "ERROR (SQLSTATE 40P01)") == 1.0  # a one-term question needs that term


def test_the_floor_keeps_a_turn_said_in_the_questions_words_and_hides_a_weak_one():
    said = TurnHit("claude-code", "s", "f", 69, 69, "user", "text", "", "SQLSTATE 40P01", 0.5, 0.12, 0.03, words=0.5)
    weak = TurnHit("claude-code", "s", "f", 70, 70, "user", "text", "", "ok", 0.0, 0.12, 0.03)
    cards, turns, hidden = above_floor([], [said, weak], 0.30)
    assert turns == [said] and hidden == 1


def test_the_word_table_lives_in_the_turn_index_file(tmp_path, embedder):
    TurnIndex(tmp_path, embedder.model_id).close()
    names = {n for (n,) in sqlite3.connect(tmp_path / TURNS_FILE).execute("SELECT name FROM sqlite_master")}
    assert {"turn_words", "turn_vocab"} <= names
