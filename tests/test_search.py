"""Deep search: hybrid ranking, no gate but status, every hit labelled with its state and sources."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from memoir.cards.config import load_settings
from memoir.cards.forget import forget
from memoir.flows.cli.main import cli
from memoir.flows.pipeline import run_pipeline
from memoir.index.db import open_index
from memoir.index.embed import default_embedder
from memoir.index.chain_links import newest_in_chain
from memoir.index.search import (
    SEARCH_FLOOR,
    TurnMatch,
    WindowMatch,
    add_turn_ranks,
    merge_turns,
    nearest_turns,
    plan_hits,
    search_cards,
    search_turns,
    state_of,
)
from memoir.index.search_results import SearchHit, TurnHit, above_floor, hit_strength
from memoir.index.turns import WindowRow
from memoir.index.sync import sync_index
from memoir.index.turns import (
    WINDOW_STEP,
    WINDOW_TURNS,
    Span,
    TurnIndex,
    TurnRow,
    WindowRow,
    cut_windows,
    plan_card_changes,
    plan_file_changes,
)
from tests.user_cards import EXAMPLES, build_home, card, store_of

QUERY = "uvicorn --reload misses file changes in a docker bind mount"
OLD, MID, NEW, HELD, HALF, GONE, ELSEWHERE = (card(n).id for n in range(1, 8))
CONVERSATIONAL = Path(__file__).parent / "fixtures" / "conversational"
RELAYD_LOG = next(CONVERSATIONAL.glob("claude-code/-home-kofi-work-relayd/*.jsonl"))
SHOPAPI_LOG = EXAMPLES / "claude-code" / "-home-dev-projects-shopapi" / "55dde895-7f1b-4d55-8dc2-423363ab1e15.jsonl"


def library():
    """A chain OLD → MID → NEW, a held-back candidate, an incomplete card, one to forget, one elsewhere."""
    return [
        card(1, status="superseded", superseded_by=MID,
             conclusion="uvicorn --reload in a Docker bind mount needs --reload-dir /app to see file changes."),
        card(2, status="superseded", superseded_by=NEW, supersedes=(OLD,),
             conclusion="uvicorn --reload in a Docker bind mount needs WATCHFILES_FORCE_POLLING=1 on Docker Desktop."),
        card(3, supersedes=(MID,)),
        card(4, status="candidate", gate="not_duplicate",
             conclusion="uvicorn reload inside docker compose: polling makes file changes visible to the watcher."),
        card(5, status="incomplete", gate="conclusion_cut_off", conclusion="uvicorn reload in docker, so the fix is"),
        card(6, conclusion="uvicorn --reload misses file changes in docker bind mounts: restart the container."),
        card(7, workspace="/work/other",
             conclusion="uvicorn --reload in docker compose needs the bind mount to include the package dir."),
    ]


@pytest.fixture(scope="module")
def embedder():
    e = default_embedder()
    e.encode_one("warm up")
    return e


@pytest.fixture
def settings(memoir_home, embedder):
    settings = load_settings(home=memoir_home)
    store = store_of(settings)
    store.write_many(library())
    store.save_manifest()
    with open_index(settings.index_dir, embedder) as index:
        sync_index(store, index)
    forget(store, GONE)
    with open_index(settings.index_dir, embedder) as index:
        index.remove([GONE])
    return settings


def search(settings, *args):
    out = CliRunner().invoke(cli, ["--home", str(settings.home), "search", QUERY, *args], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return out.output


# --- pure -----------------------------------------------------------------------------------------------


def test_states_and_the_newest_card_of_a_chain():
    cards = {c.id: c for c in library()}
    assert [state_of(c) for c in library()] == ["superseded", "superseded", "active", "candidate", "incomplete",
                                                "active", "active"]
    assert state_of(card(9, status="forgotten")) is None
    assert state_of(card(9, superseded_by=NEW)) == "superseded"  # a half-applied supersession still counts
    assert newest_in_chain(cards[OLD], cards) == NEW
    loop = {OLD: cards[OLD].with_(superseded_by=MID), MID: cards[MID].with_(superseded_by=OLD)}
    assert newest_in_chain(loop[OLD], loop) in (OLD, MID)  # a hand-made loop ends, it does not hang


def test_plan_hits_hides_superseded_unless_asked_and_drops_missing_files():
    cards = {c.id: c for c in library()}
    fused = {OLD: {"rrf": 0.05}, NEW: {"rrf": 0.04}, "c-gone": {"rrf": 0.03}, HELD: {"rrf": 0.02}}
    hits, hidden = plan_hits(fused, cards, k=10)
    assert [h.id for h in hits] == [NEW, HELD] and hidden == 1
    hits, hidden = plan_hits(fused, cards, k=10, include_superseded=True)
    assert [(h.id, h.label) for h in hits][0] == (OLD, f"superseded by {NEW}") and hidden == 0


# --- end to end -------------------------------------------------------------------------------------------


def test_search_returns_superseded_cards_only_with_include_superseded_always_labelled(settings, embedder):
    result = search_cards(settings, QUERY, embedder=embedder, k=10)
    ids = [h.id for h in result.hits]
    assert OLD not in ids and MID not in ids and result.hidden_superseded == 2
    assert GONE not in ids  # forgotten: never
    labels = {h.id: h.label for h in result.hits}
    assert labels[NEW] == "active"
    assert labels[HELD] == "candidate (held back by not_duplicate)"
    assert labels[HALF].startswith("incomplete")
    assert all(h.sources and h.sources[0].session_id for h in result.hits)

    result = search_cards(settings, QUERY, embedder=embedder, k=10, include_superseded=True)
    by_id = {h.id: h for h in result.hits}
    assert by_id[OLD].state == by_id[MID].state == "superseded"
    assert by_id[OLD].replaced_by == by_id[MID].replaced_by == NEW

    text = search(settings)
    assert OLD not in text and MID not in text and "superseded by" not in text
    assert "2 superseded cards hidden; --include-superseded to show" in text
    text = search(settings, "--include-superseded")
    assert f"{OLD}.md" in text and f"{MID}.md" in text and text.count(f"superseded by {NEW}") == 2
    data = json.loads(search(settings, "--include-superseded", "--json"))
    assert {c["id"]: c["label"] for c in data["cards"]}[OLD] == f"superseded by {NEW}"
    assert data["cards"][0]["sources"][0]["file"].startswith("/logs/")


def test_the_terminal_gets_plain_text_and_json_keeps_its_shape(settings):
    text = search(settings)
    assert "<memoir-context" not in text  # that frame is for agents (MCP, the hook)
    first = [n.strip() for n in text.split("\n\n")[1].splitlines()]  # title, state and scores, file, excerpt, source
    assert first[0].startswith("1. ") and first[1].split(" · ")[0] in ("active", "candidate (held back by not_duplicate)")
    assert "score " in first[1] and "similarity " in first[1]
    assert first[2].endswith(".md") and Path(first[2]).is_file()
    assert 0 < len(first[3]) <= 210 and first[4].startswith("from claude-code session")
    data = json.loads(search(settings, "--json"))
    assert {"id", "state", "label", "title", "conclusion", "counterexamples", "sources", "evidence", "score",
            "similarity"} <= set(data["cards"][0])
    assert data["floor"] == 0.30 and all(c["strength"] >= 0.30 for c in data["cards"])


def test_hits_below_the_floor_are_hidden_and_counted_unless_all(settings, embedder):
    off_topic = "how long should sourdough bread proof in a cold oven"
    result = search_cards(settings, off_topic, embedder=embedder, k=10)
    everything = search_cards(settings, off_topic, embedder=embedder, k=10, floor=0.0)
    assert everything.hits and result.hits == () and result.hidden_weak == len(everything.hits)
    assert all(hit_strength(h) < SEARCH_FLOOR for h in everything.hits)
    out = CliRunner().invoke(cli, ["--home", str(settings.home), "search", off_topic])
    assert out.exit_code == 0 and f"{len(everything.hits)} weaker hits hidden" in out.output
    assert "--all to show" in out.output
    shown = CliRunner().invoke(cli, ["--home", str(settings.home), "search", off_topic, "--all", "--json"])
    assert len(json.loads(shown.output)["cards"]) == len(everything.hits)
    # On topic, the floor keeps what the question is about.
    assert NEW in [h.id for h in search_cards(settings, QUERY, embedder=embedder, k=10).hits]


def test_above_floor_keeps_hits_by_their_best_cosine_card_or_turn():
    turn = TurnHit("claude-code", "s", "/l.jsonl", 1, 1, "user", "text", "", "t", 1.0, similarity=0.6)
    weak_card_strong_turn = replace(hit("a", 0.1), similarity=0.1, evidence=(turn,))
    cards, turns, hidden = above_floor([weak_card_strong_turn, replace(hit("b", 0.1), similarity=0.2)],
                                       [turn, replace(turn, similarity=0.29)], 0.3)
    assert [h.id for h in cards] == ["a"] and turns == [turn] and hidden == 2


def test_workspace_keeps_cards_of_that_project(settings, embedder):
    ids = [h.id for h in search_cards(settings, QUERY, embedder=embedder, workspace="/work/other").hits]
    assert ids == [ELSEWHERE]
    assert ELSEWHERE not in [h.id for h in search_cards(settings, QUERY, embedder=embedder, workspace="/work/shop").hits]


def test_search_turns_reads_ledgered_logs_read_only_and_sanitizes_every_turn(memoir_home):
    settings = load_settings(home=memoir_home)
    before = (SHOPAPI_LOG.stat().st_mtime_ns, SHOPAPI_LOG.read_bytes())
    run_pipeline(settings, [SHOPAPI_LOG], with_index=False)
    result = search_turns(settings, "AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY in the env file", k=5)
    assert result.turns
    text = json.dumps(result.to_json())
    assert "AKIA" not in text and "whsec_" not in text
    assert "[REDACTED:aws_access_key:" in text
    hit = result.turns[0]
    assert Path(hit.file) == SHOPAPI_LOG and hit.line > 0 and hit.session_id
    assert (SHOPAPI_LOG.stat().st_mtime_ns, SHOPAPI_LOG.read_bytes()) == before

    out = CliRunner().invoke(cli, ["--home", str(settings.home), "search", "--turns", "stripe webhook secret env file"])
    assert out.exit_code == 0 and "turn of claude-code session" in out.output
    assert search_turns(settings, "hello").turns == ()


# --- fusion with the turn index -----------------------------------------------------------------------------


def row(session: str, line: int, text: str = "t", cwd: str = "/w") -> TurnRow:
    return TurnRow(f"/logs/{session}.jsonl", line, "claude-code", session, line, "assistant", "text", "", cwd, text)


def hit(card_id: str, score: float) -> SearchHit:
    return SearchHit(id=card_id, state="active", title=card_id, conclusion="", counterexamples="", sources=(),
                     workspace="", updated="", score=score, similarity=None)


def test_plan_file_changes_reads_new_and_changed_logs_and_drops_those_the_ledger_forgot():
    ledgered = {"/a": ("claude-code", 10, 1), "/b": ("claude-code", 20, 2), "/c": ("codex", 5, 5)}
    known = {"/a": (10, 1), "/b": (15, 1), "/gone": (3, 3)}
    plan = plan_file_changes(ledgered, known)
    assert plan.read == (("/b", "claude-code"), ("/c", "codex")) and plan.drop == ("/gone",)
    assert plan_card_changes({"c-1": "h1", "c-2": "h2b"}, {"c-2": "h2", "c-3": "h3"}) == (["c-1", "c-2"], ["c-3"])


def test_a_card_gains_the_rank_of_its_best_covering_turn_once_not_one_per_turn():
    spans = {"s1": [Span("c-long", "s1", 1, 100), Span("c-short", "s1", 40, 45)]}
    matches = [TurnMatch(row("s1", 42), 1, 0.9), TurnMatch(row("s1", 10), 2, 0.8), TurnMatch(row("s1", 20), 3, 0.7),
               TurnMatch(row("s2", 5), 4, 0.6)]
    fused = add_turn_ranks({"c-long": {"rrf": 0.01}}, matches, spans)
    assert fused["c-long"]["turn_rank"] == fused["c-short"]["turn_rank"] == 1
    assert fused["c-short"]["rrf"] > 0 and fused["c-long"]["rrf"] - 0.01 == pytest.approx(fused["c-short"]["rrf"])


def test_merge_folds_a_covered_turn_into_its_card_and_ranks_loose_turns_in_the_same_top_k():
    spans = {"s1": [Span("c-a", "s1", 1, 20)]}
    matches = [TurnMatch(row("s1", 7, "the answer is 300 seconds"), 1, 0.8), TurnMatch(row("s2", 3), 2, 0.7),
               TurnMatch(row("s3", 9), 3, 0.6)]
    cards, turns = merge_turns([hit("c-a", 0.05), hit("c-b", 0.001)], matches, spans, ["answer", "seconds"], k=3)
    assert [c.id for c in cards] == ["c-a"] and [t.line for t in turns] == [3, 9]  # c-b ranked below both turns
    assert [(t.line, t.coverage) for t in cards[0].evidence] == [(7, 1.0)]
    assert cards[0].to_json()["evidence"][0]["similarity"] == 0.8


def test_windows_cover_every_turn_of_a_session_overlapping_and_end_at_its_last_turn():
    rows = [row("s1", n, f"turn {n}") for n in range(1, 26)] + [row("s2", n) for n in range(1, 4)]
    windows = cut_windows(rows)
    s1 = [w for w in windows if w.session_id == "s1"]
    assert [(w.lo, w.hi) for w in s1] == [(1, 11), (9, 19), (15, 25)]  # the last one ends the session
    assert all(w.hi - w.lo + 1 == WINDOW_TURNS for w in s1) and WINDOW_STEP < WINDOW_TURNS
    assert [(w.lo, w.hi) for w in windows if w.session_id == "s2"] == [(1, 3)]  # short: one window
    assert s1[0].text.splitlines()[:2] == ["turn 1", "turn 2"]


def test_a_window_no_card_overlaps_is_listed_by_file_and_lines_and_one_a_card_overlaps_lifts_that_card():
    spans = {"s1": [Span("c-a", "s1", 30, 40)]}
    inside = WindowMatch(WindowRow("/logs/s1.jsonl", "s1", "claude-code", 25, 35, 25, 35, "/w", "t"), 1, 0.7)
    outside = WindowMatch(WindowRow("/logs/s2.jsonl", "s2", "claude-code", 1, 11, 1, 11, "/w", "cache eviction"), 2, 0.6)
    fused = add_turn_ranks({}, [], spans, [inside, outside])
    assert fused["c-a"]["window_rank"] == 1 and set(fused) == {"c-a"}
    cards, loose = merge_turns([hit("c-a", fused["c-a"]["rrf"])], [], spans, ["cache", "eviction"], k=5,
                               windows=[inside, outside])
    assert [c.id for c in cards] == ["c-a"]
    assert [(t.kind, t.file, t.line, t.end_line, t.lines) for t in loose] == [
        ("window", "/logs/s2.jsonl", 1, 11, "lines 1-11")]


def test_a_hit_much_nearer_the_question_outranks_one_that_only_ranked_first_in_both_card_lists():
    weak = replace(hit("c-weak", 2 / 61), similarity=0.2)  # first in the vector and the word lists
    near = TurnMatch(row("s9", 4, "the admin port is 9443 in production"), 3, 0.62)
    cards, loose = merge_turns([weak], [near], {}, ["admin", "port"], k=1)
    assert cards == [] and [t.line for t in loose] == [4]


def test_nearest_turns_ranks_by_cosine_and_never_returns_a_masked_turn():
    rows = [row("s", n) for n in (1, 2, 3)]
    matrix = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]], dtype=np.float32)
    found = nearest_turns(rows, matrix, np.array([0.0, 1.0], dtype=np.float32), 2)
    assert [(m.row.line, m.rank) for m in found] == [(3, 1), (2, 2)]
    keep = np.array([True, True, False])
    assert [m.row.line for m in nearest_turns(rows, matrix, np.array([0.0, 1.0]), 5, keep=keep)] == [2, 1]


@pytest.fixture(scope="module")
def relayd(tmp_path_factory, embedder):
    """A home built from one long conversational session: five cards over 68 lines."""
    return build_home(tmp_path_factory.mktemp("relayd") / "home", [RELAYD_LOG])


TIMESTAMP_Q = "how old can a webhook timestamp be before we refuse it"
TIMESTAMP_LINE = 32  # the agent's answer (300 seconds), in the middle of the docker build card's source
ASKED_LINE = 31  # the question that answer follows: the turn nearest to TIMESTAMP_Q


def covering_card(settings, line: int) -> str:
    store = store_of(settings)
    ids = [p.stem for p in Path(settings.cards_dir).rglob("c-*.md")
           if any(s.lines[0] <= line <= s.lines[1] for s in store.read(p.stem).sources)]
    assert len(ids) == 1, ids
    return ids[0]


def test_a_question_answered_only_in_a_turn_of_a_cards_source_finds_that_card(relayd, embedder):
    card_id = covering_card(relayd, TIMESTAMP_LINE)
    held = store_of(relayd).read(card_id)
    assert "300" not in held.conclusion and "timestamp" not in (held.title + held.conclusion).lower()
    result = search_cards(relayd, TIMESTAMP_Q, embedder=embedder, k=3)
    assert result.hits[0].id == card_id
    (lo, hi), = [src.lines for src in held.sources]
    assert result.hits[0].evidence[0].line == ASKED_LINE and lo <= ASKED_LINE < TIMESTAMP_LINE <= hi
    assert all(lo <= t.line <= hi for t in result.hits[0].evidence)
    assert all(t.line != TIMESTAMP_LINE for t in result.turns)  # shown once, as the card's evidence
    assert len(result.hits) + len(result.turns) <= 3

    data = json.loads(CliRunner().invoke(cli, ["--home", str(relayd.home), "search", TIMESTAMP_Q, "--k", "3",
                                               "--json"]).output)
    assert data["cards"][0]["id"] == card_id and data["cards"][0]["evidence"][0]["line"] == ASKED_LINE
    assert set(data) == {"query", "note", "cards", "turns", "hidden_superseded", "hidden_weak", "floor"}


def test_a_forgotten_cards_turns_are_never_matched_and_another_workspace_sees_none(relayd, embedder, tmp_path):
    assert search_cards(relayd, TIMESTAMP_Q, embedder=embedder, workspace="/home/other/project").turns == ()
    settings = load_settings(home=tmp_path / "copy")
    shutil.copytree(relayd.home, settings.home)
    card_id = covering_card(settings, TIMESTAMP_LINE)
    (lo, hi), = [src.lines for src in store_of(settings).read(card_id).sources]
    forget(store_of(settings), card_id)
    with open_index(settings.index_dir, embedder) as index:
        index.remove([card_id])
    result = search_cards(settings, TIMESTAMP_Q, embedder=embedder, k=10)
    assert card_id not in [h.id for h in result.hits]
    shown = [t.line for t in result.turns] + [t.line for h in result.hits for t in h.evidence]
    assert shown and not [line for line in shown if lo <= line <= hi]


def test_turn_index_embeds_only_turn_texts_it_has_not_seen(tmp_path, embedder):
    log = tmp_path / "session.jsonl"
    lines = RELAYD_LOG.read_text(encoding="utf-8").splitlines(keepends=True)
    log.write_text("".join(lines[:20]), encoding="utf-8")

    def ledgered():
        st = log.stat()
        return {str(log): ("claude-code", st.st_size, st.st_mtime_ns)}

    turns = TurnIndex(tmp_path / "state", embedder.model_id)
    first = turns.refresh_files(ledgered(), embedder, 4000)
    assert first.read == 1 and first.embedded > 10 and not first.problems
    before = len(turns.load()[0])  # a text said twice (a re-run command) is embedded once
    again = turns.refresh_files(ledgered(), embedder, 4000)
    assert (again.read, again.embedded) == (0, 0)
    with log.open("a", encoding="utf-8") as f:
        f.write(lines[20])  # one more turn: the file is read again, only its new text embedded
    grown = turns.refresh_files(ledgered(), embedder, 4000)
    assert (grown.read, grown.embedded) == (1, 1)
    assert len(turns.load()[0]) == before + 1
    turns.close()
    capped = TurnIndex(tmp_path / "capped", embedder.model_id)  # a large ledger is embedded a batch per search
    texts = first.embedded + 1
    assert (capped.refresh_files(ledgered(), embedder, 4000, budget=5).pending, len(capped.load()[0])) == (texts - 5, 5)
    assert capped.refresh_files(ledgered(), embedder, 4000, budget=5).embedded == 5
    capped.close()
    other = TurnIndex(tmp_path / "state", "another-model")  # vectors of another model are dropped, text kept
    assert other.load()[0] == [] and other.refresh_files({}, embedder, 4000).dropped == 1
    other.close()
