"""Shared fixtures: every test gets its own memoir home and offline, quiet third-party libraries."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


# The files that take longest, longest first. Under `make test`'s xdist workers (each takes a whole
# file; --no-loadscope-reorder keeps this order) they start at once, instead of last, where the
# slowest would run alone on one core while the other worker sits idle. A one-process run keeps the
# usual order; a name missing here only runs in its usual place.
LONGEST_FIRST = (
    "test_flows.py", "test_no_leaks.py", "test_index_heal.py", "test_first_hour.py", "test_report.py",
    "test_pipeline.py", "test_private.py", "test_replay_backlog.py", "test_index_rebuild_beside_run.py",
    "test_flows_fanout.py", "test_serve_status.py", "test_review.py", "test_snapshots_runs.py", "test_search.py",
    "test_hook.py", "test_rules_labels.py", "test_recall.py",
)


def pytest_collection_modifyitems(config, items):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
        items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


@pytest.fixture(autouse=True)
def memoir_home(tmp_path, monkeypatch):
    """Point MEMOIR_HOME (and XDG config) at a temp dir so no test touches the real home."""
    home = tmp_path / "memoir-home"
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.delenv("MEMOIR_CONFIG", raising=False)
    # Embedding every turn of every log a test reads would take most of the suite's time: tests
    # that pin the turn index built during a run turn it back on (tests/test_turn_index_run.py).
    monkeypatch.setenv("MEMOIR_TURN_INDEX_IN_RUN", "0")
    return home


@pytest.fixture(autouse=True)
def prefect_variables_restored():
    """A command run in-process (`serve`, `run --flow` through CliRunner) exports PREFECT_* for its own
    home; put back what was there before, so a later test's subprocess never inherits another
    test's Prefect database (a served deployment from an earlier test then shows up in it)."""
    before = {k: v for k, v in os.environ.items() if k.startswith("PREFECT_")}
    yield
    for key in [k for k in os.environ if k.startswith("PREFECT_") and k not in before]:
        del os.environ[key]
    os.environ.update(before)


@pytest.fixture(scope="module")
def embedder():
    """The real model, loaded and warmed once per test module."""
    from memoir.index.embed import default_embedder

    e = default_embedder()
    e.encode_one("warm up")
    return e


@pytest.fixture(scope="module")
def built(tmp_path_factory, embedder):
    """A home built once per module from the feedcli example log; tests copy it before changing it."""
    from tests.user_cards import FEEDCLI_LOG, build_home

    return build_home(tmp_path_factory.mktemp("built") / "home", [FEEDCLI_LOG])
