"""Progress on long work: drawn on stderr for a person, never in --json output, never into a pipe."""

from __future__ import annotations

import io
import json
import os

from click.testing import CliRunner

from memoir.flows.cli.main import cli
from memoir.flows.progress import Display, announced, stage, wanted
from tests.user_cards import FEEDCLI_LOG

FORCED = {"MEMOIR_PROGRESS": "1", "COLUMNS": "140"}


def test_wanted_only_on_a_terminal_never_with_json_and_forced_by_the_env():
    master, slave = os.openpty()
    with os.fdopen(slave, "w") as terminal:
        assert wanted(False, env={}, stream=terminal) is False  # draw, rich sees the terminal itself
        assert wanted(True, env={}, stream=terminal) is None  # --json wins
        assert wanted(False, env={"MEMOIR_PROGRESS": "0"}, stream=terminal) is None
    os.close(master)
    pipe = io.StringIO()
    assert wanted(False, env={}, stream=pipe) is None
    assert wanted(False, env={"MEMOIR_PROGRESS": "1"}, stream=pipe) is True
    assert wanted(True, env={"MEMOIR_PROGRESS": "1"}, stream=pipe) is None


def test_display_draws_counted_stages_and_spinners_only_when_enabled():
    out = io.StringIO()
    with Display(force=True, stream=out) as progress:
        progress("collect", 1, 2, "0.1 MB")
        progress("collect", 2, 2, "0.3 MB")
        done = stage(progress, "distill")
        done("28 cards")
    text = out.getvalue()
    assert "Reading log files" in text and "2/2 files" in text and "0.3 MB" in text
    assert "Checking cards against the library" in text and "28 cards" in text
    quiet = io.StringIO()
    with Display(as_json=True, stream=quiet, env={"MEMOIR_PROGRESS": "1"}) as progress:
        progress("collect", 1, 1)
    assert quiet.getvalue() == ""


def test_the_first_model_load_is_reported_once_and_vectors_are_unchanged(embedder):
    from memoir.index.embed import Embedder

    seen = []
    fresh = Embedder()  # not loaded yet: its first encode loads the model
    wrapped = announced(fresh, lambda *a: seen.append(a[:3]))
    vectors = wrapped.encode(["a test failed", "the build is green"])
    wrapped.encode(["again"])
    assert seen == [("model", 0, 0), ("model", 1, 1)]
    assert wrapped.model_id == fresh.model_id and wrapped.dim == 384
    assert abs(float(vectors[0] @ embedder.encode(["a test failed"])[0]) - 1.0) < 1e-5
    assert announced(fresh, None) is fresh


def test_run_draws_progress_on_stderr_and_keeps_stdout_for_the_summary(memoir_home):
    result = CliRunner().invoke(cli, ["run", "--no-index", "--logs", str(FEEDCLI_LOG)], env=FORCED)
    assert result.exit_code == 0, result.output
    assert "Reading log files" in result.stderr and "1/1 files" in result.stderr and " MB" in result.stderr
    assert "Writing card files" in result.stderr
    assert "Reading log files" not in result.stdout
    assert f"cards in  {memoir_home / 'cards'}:" in result.stdout
    assert "next      `memoir" in result.stdout


def test_run_with_json_draws_nothing_even_when_forced(memoir_home):
    result = CliRunner().invoke(cli, ["run", "--no-index", "--json", "--logs", str(FEEDCLI_LOG)], env=FORCED)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["files_read"] == 1
    assert result.stderr == ""


def test_run_into_a_pipe_draws_nothing(memoir_home):
    result = CliRunner().invoke(cli, ["run", "--no-index", "--logs", str(FEEDCLI_LOG)],
                                env={"MEMOIR_PROGRESS": None})
    assert result.exit_code == 0, result.output
    assert "Reading log files" not in result.stderr and "Reading log files" not in result.stdout


def test_index_rebuild_counts_the_cards_it_embeds_on_stderr(memoir_home):
    first = CliRunner().invoke(cli, ["run", "--logs", str(FEEDCLI_LOG)], env=FORCED)
    assert first.exit_code == 0, first.output
    assert "Updating the index" in first.stderr
    n = len(list((memoir_home / "cards").glob("*.md")))
    result = CliRunner().invoke(cli, ["index", "rebuild"], env=FORCED)
    assert result.exit_code == 0, result.output
    assert f"{n}/{n} cards" in result.stderr and "Embedding cards" in result.stderr
    assert "Embedding" not in result.stdout and f"{n} cards" in result.stdout
