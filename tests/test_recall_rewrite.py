"""Pure pieces of recall: query rewrite, task type, fusion, workspace distance, contradiction heuristics."""

from __future__ import annotations

import pytest

from memoir.cards.config import Settings
from memoir.index.advice import assignments, contradiction, directions, polarities
from memoir.index.recall_gates import Candidate, GatePolicy, RecallQuery, judge, project_bound, workspaces_near
from memoir.index.candidates import fuse, lexical_coverage, query_terms
from memoir.index.rewrite import query_task_type, rewrite_query


@pytest.mark.parametrize("prompt, expected", [
    ("Hi! Could you please help me? ok, next: tests/test_load.py fails with `database is locked`. Thanks!",
     "tests/test_load.py fails with `database is locked`."),
    ("hello there, how do I paginate GET /products with limit and offset?",
     "how do I paginate GET /products with limit and offset?"),
    ("Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\n"
     "sqlite3.ProgrammingError: SQLite objects created in a thread",
     "sqlite3.ProgrammingError: SQLite objects created in a thread"),
    ("<memoir-context>old card text</memoir-context> why is uvicorn --reload not reloading?",
     "why is uvicorn --reload not reloading?"),
    ("Thank you so much!", ""),
])
def test_rewrite_drops_greetings_and_keeps_the_problem(prompt, expected):
    assert rewrite_query(prompt) == expected


@pytest.mark.parametrize("prompt, kind", [
    ("cargo build fails with E0502", "debug"),
    ("rename the module and clean up imports", "refactor"),
    ("set up pre-commit with ruff", "config"),
    ("add an endpoint for refunds", "feature"),
    ("what is a good name for this variable", ""),
    ("terraform workspaces vs one state per environment, which is better", "decision"),
    ("should we use celery beat or a plain cron for the nightly batch?", "decision"),
    ("redis vs memcached: the cache fails on reconnect", "debug"),  # a failure named: a bug to fix
])
def test_task_type_only_on_clear_cues(prompt, kind):
    assert query_task_type(prompt) == kind


def test_fusion_orders_by_rank_and_never_adds_scores():
    hits = fuse([("a", 0.9), ("b", 0.5)], [("b", 12.0), ("c", 3.0)])
    assert hits["b"]["rrf"] > hits["a"]["rrf"] > hits["c"]["rrf"]
    assert hits["b"]["cosine"] == 0.5 and hits["b"]["bm25"] == 12.0
    assert "cosine" not in hits["c"]  # recall fills it from the stored vector


def test_lexical_coverage_needs_most_terms_and_at_least_two():
    terms = query_terms("the uvicorn reload in docker")
    assert terms == ["uvicorn", "reload", "docker"]
    assert lexical_coverage(terms, "uvicorn --reload misses docker bind mounts") == 1.0
    assert lexical_coverage(terms, "docker only") == 0.0


def test_workspace_distance():
    assert workspaces_near("/work/shop", "/work/shop/")
    assert workspaces_near("/work/shop/api", "/work/shop")
    assert not workspaces_near("/work/shop", "/work/shopping")
    assert project_bound("see app/db.py for the pool", "/x")
    assert project_bound("edit /work/shop/settings.toml", "/work/shop")
    assert not project_bound("use https://example.org/a/b.html and a mutex", "/work/shop")


def test_contradiction_heuristics():
    assert assignments("set FOO_BAR to true, and `x.y = 3`") == {"foo_bar": "true", "x.y": "3"}
    assert polarities("Don't use `sync.Map`; use a mutex") == {"sync.map": False, "mutex": True}
    assert directions("raise the timeout")["timeout"] == 1
    assert directions("put the timeout back to a short value")["timeout"] == -1


def cand(i: str, conclusion: str, sim: float = 0.8, sig: str = "", **kw) -> Candidate:
    base = dict(id=i, status="active", quality="rule", gate="", task_type="debug", workspace="", topics=(),
                error_signature=sig, superseded_by="", conclusion=conclusion, counterexamples="",
                body=conclusion, age_days=1.0, similarity=sim, fts_rank=1)
    base.update(kw)
    return Candidate(**base)


def test_judge_rejects_both_sides_of_a_contradiction_and_keeps_the_rest():
    cs = [cand("a", "Set POOL_SIZE=10 for the worker pool to stop the timeouts."),
          cand("b", "Set POOL_SIZE=50 for the worker pool to stop the timeouts."),
          cand("c", "Close the cursor before returning the connection to the pool.")]
    out = {j.candidate.id: j.gate for j in judge(cs, RecallQuery("q"), GatePolicy.from_settings(Settings()))}
    assert out == {"a": "ContradictsCandidate", "b": "ContradictsCandidate", "c": "injected"}


def test_direction_words_only_count_for_the_same_error():
    a = cand("a", "Raise the timeout on the connection.", sig="OperationalError: database is locked")
    b = cand("b", "Put the timeout back to a short value.", sig="OperationalError: database is locked")
    assert contradiction(a, b)
    assert not contradiction(a, cand("b", b.conclusion, sig="TimeoutError"))


def test_similarity_floor_is_relative_to_the_best_eligible_card_and_stricter_for_vector_only():
    cs = [cand("best", "Close the cursor before returning the connection.", sim=0.80),
          cand("near", "Use a context manager for every cursor in handlers.", sim=0.72),
          cand("far", "Pin the driver to 2.9 in requirements.", sim=0.60),
          cand("vec", "Enable the slow query log to find the statement.", sim=0.69, fts_rank=None),
          cand("stale", "An inactive card with a better score than all.", sim=0.95, status="candidate")]
    out = {j.candidate.id: j.gate for j in judge(cs, RecallQuery("q"), GatePolicy.from_settings(Settings(max_injected=5)))}
    assert out == {"best": "injected", "near": "injected", "far": "SimilarityBelowMinimum",
                   "vec": "SimilarityBelowMinimum", "stale": "StatusNotActive"}


def test_recall_commands_have_help_text():
    from click.testing import CliRunner

    from memoir.flows.cli.main import cli

    for args in (["recall"], ["brief"], ["export"], ["serve-recall"], ["hook", "claude-code"],
                 ["hook", "install", "claude-code"]):
        out = CliRunner().invoke(cli, [*args, "--help"])
        assert out.exit_code == 0 and len(out.output.split("Options:")[0].split()) > 8, args


def test_a_conclusion_that_tells_the_old_value_then_advises_another_holds_the_advised_one():
    # Issue 24, mechanism 9: two cards with opposite advice are never injected together, also when
    # one of them first names the value the other advises (the state it found) and then moves off it.
    assert assignments("because of `retries = 5` the job hung; set `retries = 0` instead") == {"retries": "0"}
    found = cand("c-found", "The pool now sets `retries = 5` so a flaky upstream is retried.")
    moved = cand("c-moved", "Because of `retries = 5` a dead upstream stalled the queue; I'd set `retries = 0`.",
                 fts_rank=2)
    assert contradiction(found, moved) == "retries=5 vs retries=0"
    out = {j.candidate.id: j.gate for j in judge([found, moved], RecallQuery("q"), GatePolicy.from_settings(Settings()))}
    assert out == {"c-found": "ContradictsCandidate", "c-moved": "ContradictsCandidate"}


def test_a_choice_between_alternatives_is_not_answered_by_a_bug_fix():
    from memoir.index.recall_gates import COMPATIBLE_TASK_TYPES
    assert "debug" not in COMPATIBLE_TASK_TYPES["decision"] and "config" in COMPATIBLE_TASK_TYPES["decision"]
