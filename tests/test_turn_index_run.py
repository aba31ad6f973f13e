"""`memoir run` builds the turn index deep search reads, so the first search has nothing left to embed."""

from __future__ import annotations

import json
import shutil
import time

import numpy as np
from pathlib import Path

from click.testing import CliRunner

from memoir.cards.config import load_settings
from memoir.cards.ledger import Ledger
from memoir.flows import pipeline
from memoir.flows.cli.main import cli
from memoir.flows.pipeline import run_pipeline
from memoir.index.embed import default_embedder
from memoir.index.turns import EMBEDDED_KINDS, TurnIndex, waiting
from tests.user_cards import FEEDCLI_LOG

SECOND_SET = Path(__file__).resolve().parent / "fixtures" / "second_set"


def _ledgered(settings):
    with Ledger.in_state_dir(settings.state_dir) as ledger:
        return ledger.as_read()


def test_a_run_leaves_every_read_turn_embedded_and_every_card_span_recorded(tmp_path, embedder, monkeypatch):
    monkeypatch.setenv("MEMOIR_TURN_INDEX_IN_RUN", "1")  # the default; the suite turns it off elsewhere
    monkeypatch.setenv("MEMOIR_TURN_INDEX_SHARE", "0")  # no share of time: every turn, however slow the machine
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(FEEDCLI_LOG, logs / FEEDCLI_LOG.name)
    seen = []
    settings = load_settings(home=tmp_path / "home")
    run_pipeline(settings, [logs], progress=lambda stage, done, total, detail="": seen.append((stage, done, total)))
    turns = TurnIndex(settings.state_dir, default_embedder().model_id)
    try:
        rows, matrix, spans = turns.load()
        assert rows and matrix.shape[0] == len(rows)  # every turn has its vector
        assert spans  # the cards' sources are known to the turn index
        again = turns.refresh_files(_ledgered(settings), embedder, settings.blob_cap)
        assert (again.read, again.embedded, again.pending) == (0, 0, 0)  # a first search has nothing to do
        assert (again.windows_embedded, again.windows_pending) == (0, 0)
    finally:
        turns.close()
    done = [(d, t) for stage, d, t in seen if stage == "turn index"]
    assert done and done[-1][0] == done[-1][1]  # the run drew the turn index's progress to the end


def test_a_run_without_the_index_leaves_the_turn_index_alone(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(FEEDCLI_LOG, logs / FEEDCLI_LOG.name)
    settings = load_settings(home=tmp_path / "home")
    run_pipeline(settings, [logs], with_index=False)
    assert not (settings.state_dir / "turns.sqlite").exists()


class _Killed(BaseException):
    """What a kill looks like to the code it stops: nothing after it runs."""


class _DiesAfter:
    """The real embedder, stopped for good after `calls` encode calls (a night killed mid-way)."""

    def __init__(self, embedder, calls: int):
        self.model_id, self._embedder, self._left = embedder.model_id, embedder, calls

    def encode(self, texts):
        if self._left == 0:
            raise _Killed()
        self._left -= 1
        return self._embedder.encode(texts)


def test_a_turn_index_stopped_mid_way_keeps_what_it_embedded_and_the_next_refresh_continues(tmp_path, embedder):
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(FEEDCLI_LOG, logs / FEEDCLI_LOG.name)
    settings = load_settings(home=tmp_path / "home")
    run_pipeline(settings, [logs], with_index=False)  # cards, ledger: committed before any turn is embedded
    ledgered = _ledgered(settings)
    turns = TurnIndex(settings.state_dir, embedder.model_id)
    try:
        turns.refresh_files(ledgered, _DiesAfter(embedder, calls=2), settings.blob_cap, budget=None, step=4)
        raise AssertionError("the refresh should have been stopped")
    except _Killed:
        pass
    finally:
        turns.close()
    turns = TurnIndex(settings.state_dir, embedder.model_id)
    try:
        kept = turns.conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
        assert kept == 8  # two batches of four, each committed on its own
        assert turns.conn.execute("SELECT count(*) FROM files").fetchone()[0] == 1  # the log read stays read
        total = turns.conn.execute("SELECT count(DISTINCT hash) FROM turns WHERE kind IN (%s)"
                                   % ",".join("?" * len(EMBEDDED_KINDS)), EMBEDDED_KINDS).fetchone()[0]
        again = turns.refresh_files(ledgered, embedder, settings.blob_cap, budget=None)
        assert again.read == 0 and again.embedded == total - kept  # only what the stopped night left
        rows, matrix, _ = turns.load()
        assert matrix.shape[0] == len(rows)
    finally:
        turns.close()


def test_a_turn_index_past_its_deadline_leaves_the_run_committed_and_recorded(tmp_path, embedder, monkeypatch):
    """The turn index runs after the commit and the record: its deadline stops it, keeps what it embedded,
    and says so, and nothing committed is lost or called uncommitted."""
    from dataclasses import replace

    from memoir.cards.status import read_runs
    from memoir.flows.pipeline import STEPS, open_run, run_step

    monkeypatch.setenv("MEMOIR_TURN_INDEX_IN_RUN", "1")
    logs = tmp_path / "logs"
    for host in ("claude-code", "codex"):  # hundreds of turns: embedding them takes far longer than the deadline
        shutil.copytree(SECOND_SET / host, logs / host)
    settings = load_settings(home=tmp_path / "home")
    run = open_run(settings, [str(logs)], "auto", True, None)
    for step in STEPS:
        if step.name == "turn index":
            assert read_runs(settings.state_dir)  # recorded before the turn index starts
            run.settings = replace(run.settings, step_timeout_s=1)
        run_step(run, step)  # no StepTimeout escapes
    assert any("turn index: stopped at its deadline" in n for n in run.summary.notes), run.summary.notes
    assert _ledgered(settings) and list(settings.cards_dir.glob("*.md"))  # committed
    again = TurnIndex(settings.state_dir, embedder.model_id)
    try:
        refresh = again.refresh_files(_ledgered(settings), embedder, settings.blob_cap, budget=8)
        assert refresh.embedded + refresh.windows_embedded > 0  # the next refresh continues the work
    finally:
        again.close()


def test_a_tools_output_gets_no_vector_of_its_own_and_is_scored_by_the_window_that_holds_it(tmp_path, embedder):
    """Lexical first: a tool's output is found by its words; its vector is its window's, so a word match
    on it is weighed by the stretch of session around it, and the dense list holds only own vectors."""
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(FEEDCLI_LOG, logs / FEEDCLI_LOG.name)
    settings = load_settings(home=tmp_path / "home")
    run_pipeline(settings, [logs], with_index=False)
    turns = TurnIndex(settings.state_dir, embedder.model_id)
    try:
        turns.refresh_files(_ledgered(settings), embedder, settings.blob_cap, budget=None)
        embedded_kinds = {k for (k,) in turns.conn.execute(
            "SELECT DISTINCT t.kind FROM turns t JOIN vectors v ON v.hash = t.hash")}
        assert embedded_kinds and embedded_kinds <= set(EMBEDDED_KINDS)
        assert turns.conn.execute("SELECT count(*) FROM turns WHERE kind = 'tool_result'").fetchone()[0] > 0
        rows, matrix, _ = turns.load()
        outputs = [i for i, r in enumerate(rows) if r.kind == "tool_result"]
        assert outputs  # every output is still a row: a word match on it is shown
        windows, wmatrix = turns.load_windows()
        for i in outputs[:5]:
            r = rows[i]
            holder = next(j for j, w in enumerate(windows)
                          if w.file == r.file and w.session_id == r.session_id and w.first_seq <= r.seq <= w.last_seq)
            assert np.array_equal(matrix[i], wmatrix[holder])
    finally:
        turns.close()


def test_a_refresh_past_its_time_reads_and_embeds_nothing_more_and_counts_what_waits(tmp_path, embedder):
    logs = tmp_path / "logs"
    for host in ("claude-code", "codex"):
        shutil.copytree(SECOND_SET / host, logs / host)
    settings = load_settings(home=tmp_path / "home")
    run_pipeline(settings, [logs], with_index=False)
    ledgered = _ledgered(settings)
    turns = TurnIndex(settings.state_dir, embedder.model_id)
    try:
        first = turns.refresh_files(ledgered, embedder, settings.blob_cap, budget=None, until=time.monotonic())
        assert (first.read, first.embedded, first.windows_embedded) == (0, 0, 0)
        assert first.files_pending == len(ledgered) and first.left == len(ledgered)
        odd = tmp_path / "a home ?#x"  # read-only, by a URI: a folder name with URI characters still opens
        odd.mkdir()
        turns.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the copy holds what the log file held
        shutil.copy(settings.state_dir / "turns.sqlite", odd / "turns.sqlite")
        assert waiting(odd, ledgered) == (len(ledgered), 0)
        rest = turns.refresh_files(ledgered, embedder, settings.blob_cap, budget=None)
        assert rest.read == len(ledgered) and rest.embedded > 0 and rest.left == 0  # the next one does it all
    finally:
        turns.close()


def test_a_run_past_its_share_of_time_says_what_waits_and_index_turns_finishes_it(tmp_path, embedder, monkeypatch):
    """A first night over a large backlog stops its turn index at its share of the run; `memoir index
    turns` (or the next run) does the rest, and then nothing is left."""
    monkeypatch.setenv("MEMOIR_TURN_INDEX_IN_RUN", "1")
    monkeypatch.setenv("MEMOIR_TURN_INDEX_SHARE", "0.000001")
    monkeypatch.setattr(pipeline, "TURN_INDEX_WHOLE_TURNS", 0)  # a run as big as a backlog
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(FEEDCLI_LOG, logs / FEEDCLI_LOG.name)
    settings = load_settings(home=tmp_path / "home")
    report = run_pipeline(settings, [logs])
    waits = [n for n in report.notes if n.startswith("turn index: stopped at its share of the run")]
    assert waits and "1 logs and 0 texts wait" in waits[0], report.notes
    assert (report.index["turn_logs_waiting"], report.index["turn_texts_waiting"]) == (1, 0)
    assert list(settings.cards_dir.glob("*.md")) and _ledgered(settings)  # the night itself is whole
    status = CliRunner().invoke(cli, ["--home", str(settings.home), "status", "--json"])
    assert json.loads(status.output[status.output.index("{"):])["index"]["turn_index_waiting"]["logs"] == 1
    out = CliRunner().invoke(cli, ["--home", str(settings.home), "index", "turns", "--json"])
    assert out.exit_code == 0, out.output
    figures = json.loads(out.output[out.output.index("{"):])
    assert figures["logs_read"] == 1 and figures["turns_embedded"] > 0 and figures["left"] == 0
    status = CliRunner().invoke(cli, ["--home", str(settings.home), "status"])
    assert "index" in status.output and "turn index:" not in status.output  # nothing waits: no line
    turns = TurnIndex(settings.state_dir, embedder.model_id)
    try:
        again = turns.refresh_files(_ledgered(settings), embedder, settings.blob_cap, budget=None)
        assert again.left == 0 and (again.read, again.embedded) == (0, 0)
    finally:
        turns.close()


def test_index_turns_on_a_home_that_never_ran_says_so_and_fails(tmp_path):
    out = CliRunner().invoke(cli, ["--home", str(tmp_path / "nowhere"), "index", "turns"])
    assert out.exit_code != 0 and "nothing has run here yet" in out.output
