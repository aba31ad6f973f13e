"""Recall end to end: the budget, failures, the debug log, the card limit, the CLI, lexical-only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from memoir.flows.cli.main import cli
from memoir.index.card_fields import stored_cards
from memoir.index.embed import default_embedder
from memoir.index.recall_gates import OVER_LIMIT
from memoir.index.recall import Recaller, wait_for_workers
from memoir.index.recall_log import append_record, log_path, read_records
from memoir.index.recall_session import SESSION_TTL_S, injected_in_session, prune_sessions, remember_injected
from tests.recall_cards import BASE, NOW, QUERY, WORKSPACE, entry, fake_aws_key, index_cards, settings_for, variant

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def embedder():
    e = default_embedder()
    e.encode_one("warm up")
    return e


@pytest.fixture
def settings(memoir_home):
    return settings_for(memoir_home)


def test_a_secret_in_the_query_never_reaches_the_debug_log(settings, embedder):
    index_cards(settings, embedder, [BASE])
    key = fake_aws_key(seed=99)
    with Recaller(settings, embedder) as r:
        result = r.recall(f"{QUERY}; deploy uses AWS_ACCESS_KEY_ID={key}", now=NOW, budget_ms=10_000)
    logged = log_path(settings.state_dir).read_text(encoding="utf-8")
    assert key not in logged and key[4:] not in logged
    assert key not in json.dumps(result.to_json()) and key not in json.dumps(result.record)
    assert "[REDACTED:" in result.query and "[REDACTED:" in json.loads(logged.splitlines()[-1])["query"]


def test_timeout_gives_an_empty_answer_and_a_logged_reason(settings, embedder):
    index_cards(settings, embedder, [BASE])
    with Recaller(settings, embedder) as r:
        started = time.perf_counter()
        result = r.recall(QUERY, now=NOW, budget_ms=0.01)
        waited = time.perf_counter() - started
    assert wait_for_workers(10)
    assert result.cards == () and result.outcome == "timeout"
    # This bound tests the timeout itself, with a wide margin so a slow machine passes: only a caller
    # that ignores its deadline and blocks on the worker (a hung model, a locked index) fails it.
    assert waited < 10
    record = read_records(settings.state_dir)[-1]
    assert record["outcome"] == "timeout" and "deadline" in record["reason"]


@pytest.mark.slow
def test_a_cold_model_counts_against_the_budget_and_the_process_still_exits_cleanly(settings, embedder,
                                                                                    memoir_home):
    # A fresh process: importing torch and loading the model takes seconds, the budget is 300 ms.
    index_cards(settings, embedder, [BASE])
    # The 120 s limit only catches a process that never exits (the abandoned load keeping it alive).
    out = subprocess.run([str(Path(sys.executable).parent / "memoir"), "recall", QUERY, "--json", "--timeout-ms", "300"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120,
                         env={**os.environ, "MEMOIR_HOME": str(memoir_home)})
    assert out.returncode == 0, out.stderr  # no C++ abort from the abandoned model load
    assert json.loads(out.stdout)["cards"] == []
    record = read_records(settings.state_dir)[-1]
    # No wall-clock bound on elapsed_ms: the reason shows the caller stopped at its 300 ms deadline
    # while the model was still loading, which is what a slow machine cannot fake.
    assert record["outcome"] == "timeout" and record["budget_ms"] == 300
    assert record["reason"].startswith("deadline of 300 ms passed during embed") and "cold start" in record["reason"]


def test_a_damaged_index_gives_an_empty_answer_not_an_exception(settings, embedder):
    index_cards(settings, embedder, [BASE])
    with Recaller(settings, embedder) as r:
        path = r.index_path
    for side in (Path(f"{path}-wal"), Path(f"{path}-shm")):
        side.unlink(missing_ok=True)
    path.write_bytes(b"this is not a database" * 100)
    with Recaller(settings, embedder) as r:
        result = r.recall(QUERY, now=NOW, budget_ms=10_000)
    assert result.cards == () and result.outcome == "error"
    assert "rebuild" in result.reason
    assert read_records(settings.state_dir)[-1]["outcome"] == "error"


def test_no_index_yet_is_an_empty_answer(settings, embedder):
    with Recaller(settings, embedder) as r:
        result = r.recall(QUERY, now=NOW, budget_ms=10_000)
    assert result.cards == () and "memoir run" in result.reason


def test_at_most_max_injected_cards(settings, embedder, memoir_home):
    cards = [BASE, variant(21), variant(22)]
    index_cards(settings, embedder, cards)
    with Recaller(settings, embedder) as r:
        result = r.recall(QUERY, workspace=WORKSPACE, now=NOW, budget_ms=10_000)
    assert len(result.cards) == 2
    assert sorted(c["gate"] for c in result.record["candidates"]) == [OVER_LIMIT, "injected", "injected"]
    with Recaller(settings_for(memoir_home, max_injected=1), embedder) as r:
        one = r.recall(QUERY, workspace=WORKSPACE, now=NOW, budget_ms=10_000)
    assert len(one.cards) == 1


def test_greetings_alone_search_nothing(settings, embedder):
    index_cards(settings, embedder, [BASE])
    with Recaller(settings, embedder) as r:
        result = r.recall("Thanks a lot!", now=NOW, budget_ms=10_000)
    assert result.cards == () and result.record["candidates"] == []
    assert "nothing to search" in result.reason


def test_lexical_only_recall_finds_the_card_without_a_model(settings, embedder):
    index_cards(settings, embedder, [BASE, variant(31, conclusion="Go maps are not safe for concurrent writes; "
                                                              "guard the counter with a sync.Mutex.")])
    with Recaller(settings, embedder=None) as r:
        result = r.recall("uvicorn reload bind mount Docker Desktop", now=NOW, budget_ms=10_000)
    assert [c.id for c in result.cards] == [BASE.id]
    assert result.record["mode"] == "lexical"
    assert entry(result, BASE.id)["similarity"] >= 0.6


def test_the_lexical_path_imports_neither_numpy_nor_torch(settings, embedder, memoir_home):
    index_cards(settings, embedder, [BASE])
    code = (
        "import sys, json\n"
        "from memoir.cards.config import load_settings\n"
        "from memoir.index.recall import Recaller\n"
        "from memoir.index.containers import immediate_context\n"
        "with Recaller(load_settings(), None) as r:\n"
        "    res = r.recall('uvicorn reload bind mount Docker Desktop', budget_ms=5000)\n"
        "print(json.dumps([len(res.cards), [m for m in ('numpy', 'torch', 'sqlite_vec') if m in sys.modules]]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "MEMOIR_HOME": str(memoir_home)}, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [1, []]


def test_session_memory_is_per_session_and_pruned(tmp_path):
    remember_injected(tmp_path, "s-1", ["c-1", "c-2"], now=1000.0)
    remember_injected(tmp_path, "s-1", ["c-3"], now=1001.0)
    assert injected_in_session(tmp_path, "s-1") == {"c-1", "c-2", "c-3"}
    assert injected_in_session(tmp_path, "s-2") == frozenset()
    assert injected_in_session(tmp_path, "") == frozenset()
    files = list((tmp_path / "recall-sessions").glob("*.json"))
    assert len(files) == 1 and "s-1" not in files[0].name
    os.utime(files[0], (1.0, 1.0))
    assert prune_sessions(tmp_path, now=1.0 + SESSION_TTL_S + 1) == 1


def invoke(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_cli_json_prints_exactly_the_documented_fields(settings, embedder):
    index_cards(settings, embedder, [BASE, variant(41, status="incomplete")])
    res = invoke("recall", QUERY, "--json", "--workspace", WORKSPACE, "--timeout-ms", "20000")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert set(data) == {"query", "cards", "rejected", "elapsed_ms"}
    assert [c["id"] for c in data["cards"]] == [BASE.id]
    card = data["cards"][0]
    assert set(card) == {"id", "conclusion", "counterexamples", "sources", "score", "age_days"}
    assert card["sources"] == [{"session_id": "sess-base", "file": "/logs/sess-base.jsonl", "lines": [10, 42]}]
    assert data["rejected"] == [{"id": "c-0000000000000029", "gate": "StatusNotActive"}]


def test_cli_explain_names_each_gate(settings, embedder):
    index_cards(settings, embedder, [BASE, variant(42, superseded_by="c-x")])
    res = invoke("recall", QUERY, "--explain", "--timeout-ms", "20000")
    assert res.exit_code == 0
    assert "<memoir-context" in res.output and "Historical conclusion, not a current instruction" in res.output
    assert "Superseded" in res.output and "injected" in res.output and "timings" in res.output


def test_cli_recall_says_why_nothing_came_back(settings, embedder):
    res = CliRunner().invoke(cli, ["recall", "how do I center a div", "--timeout-ms", "20000"])
    assert res.exit_code == 0 and res.stdout == ""
    assert "nothing to inject" in res.stderr


def test_a_superseded_hit_brings_the_card_that_replaced_it_and_never_itself(settings, embedder):
    # Worded far from the question: only the chain from the older card can bring it.
    newer = variant(41, goal="Tidy the dev compose file.", background="", evidence="", topics=(),
                    conclusion="Pin the base image by digest and rebuild; the earlier explanation was wrong.",
                    counterexamples="Not for release images, which are pinned already.", supersedes=(BASE.id,))
    older = BASE.with_(status="superseded", superseded_by=newer.id)
    index_cards(settings, embedder, [older, newer])
    with Recaller(settings, embedder) as r:
        result = r.recall(QUERY, workspace=WORKSPACE, now=NOW, budget_ms=10_000)
    assert [c.id for c in result.cards] == [newer.id]
    assert entry(result, older.id)["gate"] != "injected"


def test_a_card_another_hit_says_it_supersedes_is_never_injected_even_when_its_own_file_was_not_marked(
        settings, embedder):
    # Only the newer file was written (a run stopped between the two writes, or a hand edit): the
    # older card still says `active`, yet it is stale.
    newer = variant(42, conclusion=BASE.conclusion + " Since compose 2.22, `develop.watch` replaces the polling.",
                    supersedes=(BASE.id,))
    index_cards(settings, embedder, [BASE, newer])
    with Recaller(settings, embedder) as r:
        result = r.recall(QUERY, workspace=WORKSPACE, now=NOW, budget_ms=10_000)
    assert [c.id for c in result.cards] == [newer.id]
    assert entry(result, BASE.id)["gate"] == "Superseded"


def test_a_long_lived_recaller_sees_a_hand_edit_of_a_card_it_has_parsed(settings, embedder):
    store = index_cards(settings, embedder, [BASE])
    with Recaller(settings, embedder) as r:
        first, _ = r.read_card(BASE.id)
        assert r.read_card(BASE.id)[0] is first  # parsed once per version of the file
        path = store.path_for(BASE.id)
        path.write_text(path.read_text(encoding="utf-8").replace(BASE.conclusion, "Pin the broker to 3.6."),
                        encoding="utf-8")
        edited, text = r.read_card(BASE.id)
    assert edited.conclusion.startswith("Pin the broker to 3.6.") and edited is not first
    assert "Pin the broker to 3.6." in text


def test_recall_takes_a_card_from_the_index_only_while_its_file_still_hashes_to_it(settings, embedder):
    """The index keeps each card parsed; a hand edit the index has not seen is read from the file."""
    store = index_cards(settings, embedder, [BASE])
    with Recaller(settings, embedder) as r:
        stored = stored_cards(r.index().conn, [BASE.id])
        assert set(stored) == {BASE.id}
        card, _ = r.read_card(BASE.id, stored)
        assert card == store.read(BASE.id) and card.extra == store.read(BASE.id).extra
    path = store.path_for(BASE.id)
    path.write_text(path.read_text(encoding="utf-8").replace(BASE.conclusion, "Pin the broker to 3.6."),
                    encoding="utf-8")
    with Recaller(settings, embedder) as r:
        stored = stored_cards(r.index().conn, [BASE.id])
        assert set(stored) == {BASE.id}  # the index still holds the card as it was
        edited, text = r.read_card(BASE.id, stored)
        result = r.recall(QUERY, workspace=WORKSPACE, now=NOW, budget_ms=10_000)
    assert edited.conclusion.startswith("Pin the broker to 3.6.") and "Pin the broker to 3.6." in text
    assert [c.conclusion for c in result.cards] in ([], [edited.conclusion])


def test_an_index_written_before_it_kept_parsed_cards_still_recalls(settings, embedder):
    index_cards(settings, embedder, [BASE])
    with Recaller(settings, embedder) as r:
        conn = r.index().conn
        conn.execute("DROP TABLE card_fields")
        assert stored_cards(conn, [BASE.id]) == {}
        result = r.recall(QUERY, workspace=WORKSPACE, now=NOW, budget_ms=10_000)
    assert [c.id for c in result.cards] == [BASE.id]


def test_the_recall_log_holds_no_secret_whatever_the_record_held(tmp_path):
    """The debug log sanitizes every string of a record, not only the query recall sanitized first."""
    append_record(tmp_path, {"query": "why", "workspace": "/mnt/10.42.7.19/app",
                             "candidates": [{"title": "password: Xy9zHunter2k", "score": 0.5}]})
    data = log_path(tmp_path).read_text()
    assert "10.42.7.19" not in data and "Xy9zHunter2k" not in data
    assert json.loads(data)["candidates"][0]["score"] == 0.5


def test_the_recall_log_redacts_a_value_it_logged_before_once_it_stands_under_a_secret_key(tmp_path):
    """Strings are sanitized once per process, but per key: the key can make a plain word a secret."""
    append_record(tmp_path, {"detail": "Xy9zHunter2k"})
    append_record(tmp_path, {"password": "Xy9zHunter2k"})
    assert "Xy9zHunter2k" not in log_path(tmp_path).read_text().splitlines()[-1]


def test_held_back_near_duplicates_that_fill_both_paths_do_not_crowd_out_the_active_card(settings, embedder):
    # Issue 24, mechanism 9: ten incomplete copies of the card sort before it on both paths (same
    # text, ids first) and fill each path's k. The vector path fetches a wider pool and ranks are
    # counted over what recall may inject, so the active card is found, first; the lexical path
    # keeps its k, so the card is a vector-only find and clears that floor as a near-paraphrase.
    copies = [variant(n, status="incomplete") for n in range(1, 11)]
    index_cards(settings, embedder, copies + [BASE])
    with Recaller(settings, embedder) as r:
        result = r.recall(QUERY, workspace=WORKSPACE, now=NOW, budget_ms=30_000)
    assert [c.id for c in result.cards] == [BASE.id]
    assert (entry(result, BASE.id)["knn_rank"], entry(result, BASE.id)["fts_rank"]) == (1, None)
    assert {entry(result, c.id)["gate"] for c in copies} == {"StatusNotActive"}


def _infra_cards() -> list:
    """Six cards of one infra project: every one says helm; one is about an immutable selector."""
    topics = ["a pending release lock cleared with a rollback", "an ingress-nginx chart bump to 4.11.3",
              "the tfstate bucket versioning", "an atomic rollout that rolled back a migrated schema",
              "a release timeout raised to 10m"]
    cards = [variant(60 + i, workspace="/work/infra", topics=("helm",), goal=f"Deal with {t}.",
                     conclusion=f"For {t}, the helm release of the api chart in staging was changed and applied.",
                     counterexamples="") for i, t in enumerate(topics)]
    cards.append(variant(70, workspace="/work/infra", topics=("helm",), goal="api chart upgrade fails on selector.",
                         conclusion="A Deployment's spec.selector is immutable: keep the version label out of "
                                    "selectorLabels in the helm chart, then upgrade again.", counterexamples=""))
    return cards


def test_a_question_sharing_only_the_projects_stack_words_with_a_card_has_no_subject_in_common(settings, embedder):
    from memoir.index.candidates import LexicalIndex, distinctive_terms

    index_cards(settings, embedder, _infra_cards())
    index = LexicalIndex(settings.index_dir / "index.db")
    try:
        # "helm" is in every card: it names the stack; "selector" names one card's subject.
        assert distinctive_terms(index.conn, ["helm", "selector", "staging"]) == ["selector"]
        # A question whose every word is common still has its rarest one as a subject.
        assert distinctive_terms(index.conn, ["helm", "api"]) != []
    finally:
        index.close()
    with Recaller(settings, embedder) as r:
        result = r.recall("spec.selector field is immutable on helm upgrade", workspace="/work/infra", now=NOW,
                          budget_ms=10_000)
    assert [c.id for c in result.cards] == [variant(70).id]
    assert all(c["shares_subject"] is False for c in result.record["candidates"] if c["id"] != variant(70).id)


def test_cards_the_lexical_side_reads_beside_the_embedding_are_read_as_the_main_path_reads_them(settings, embedder):
    """The lexical hits' cards are read while the model embeds the query: a card read there is the
    one the main path would read, and one whose file broke is skipped, not an error."""
    from memoir.index.recall_reads import CardReader, read_ahead

    store = index_cards(settings, embedder, [BASE])
    with Recaller(settings, embedder) as r:
        early = read_ahead(CardReader(settings.cards_dir), r.index().conn, [BASE.id, "c-no-such-card"])
        assert early[BASE.id][0] == store.read(BASE.id)
        assert isinstance(early["c-no-such-card"], FileNotFoundError)
        assert [c.id for c in r.recall(QUERY, workspace=WORKSPACE, now=NOW, budget_ms=10_000).cards] == [BASE.id]
    store.path_for(BASE.id).write_text("no front matter at all", encoding="utf-8")
    with Recaller(settings, embedder) as r:
        result = r.recall(QUERY, workspace=WORKSPACE, now=NOW, budget_ms=10_000)
    assert not result.cards and result.record["outcome"] == "empty"
