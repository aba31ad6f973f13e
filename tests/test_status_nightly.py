"""`memoir status` names a night that failed before memoir could record a run, from the cron line's log."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone

from click.testing import CliRunner

from memoir.cards.config import load_settings
from memoir.cards.status import record_run
from memoir.flows.cli.main import cli
from memoir.flows.status_sections import nightly_failure

NOT_FOUND = "/bin/sh: 1: /mnt/10.42.7.19/venv/bin/memoir: not found"


def _status(home, *args: str):
    result = CliRunner().invoke(cli, ["--home", str(home), "status", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def _nightly_log(memoir_home, text: str, modified: datetime | None = None):
    state = load_settings(home=memoir_home).state_dir
    state.mkdir(parents=True, exist_ok=True)
    log = state / "nightly.log"
    log.write_text(text)
    if modified is not None:
        os.utime(log, (modified.timestamp(), modified.timestamp()))
    return log


def test_a_night_whose_shell_could_not_start_memoir_shows_its_last_line_in_status(memoir_home):
    log = _nightly_log(memoir_home, f"files     0 seen, 0 read (0.0 MB)\nnext      ...\n{NOT_FOUND}\n\n")
    record_run(log.parent, added=0, superseded=0, counts={}, finished="2000-01-01T00:00:00Z")
    text = _status(memoir_home)
    (line,) = [ln for ln in text.splitlines() if ln.startswith("nightly ")]
    assert line.startswith("nightly    the nightly line wrote to state/nightly.log at ")
    assert "but no run was recorded after it: /bin/sh: 1: /mnt/" in line
    assert line.endswith("/venv/bin/memoir: not found") and "10.42.7.19" not in line  # sanitized like every log line
    data = json.loads(_status(memoir_home, "--json"))["nightly"]
    assert data["message"] == line and data["last_line"].endswith("/venv/bin/memoir: not found")


def test_a_night_with_no_run_ever_recorded_counts_as_after_the_last_run(memoir_home):
    _nightly_log(memoir_home, "Error: cannot write /home/me/.local/share/memoir/state: Read-only file system\n")
    assert "nightly    the nightly line wrote" in _status(memoir_home)


def test_a_log_older_than_the_last_run_shows_nothing(memoir_home):
    hour_ago = datetime.now(timezone.utc) - timedelta(hours=1)
    log = _nightly_log(memoir_home, NOT_FOUND + "\n", modified=hour_ago)
    record_run(log.parent, added=0, superseded=0, counts={})  # a run by hand since: that night is over
    assert "nightly " not in _status(memoir_home)
    assert "nightly" not in json.loads(_status(memoir_home, "--json"))


def test_a_night_that_ended_in_a_run_summary_shows_nothing(memoir_home):
    _nightly_log(memoir_home, "model     off: rule stage only\ntook      0.15 s\n"
                              "next      no cards yet: point `memoir run --logs PATH` at a folder of session logs\n")
    assert "nightly " not in _status(memoir_home)


def test_which_last_lines_count_as_a_failed_night():
    run = datetime(2026, 12, 4, 3, 30, 41, tzinfo=timezone.utc)
    assert nightly_failure(NOT_FOUND, run + timedelta(days=1), run)
    assert nightly_failure(NOT_FOUND, run, None)  # no run recorded at all
    assert not nightly_failure(NOT_FOUND, run + timedelta(seconds=30), run)  # within the slack: that run's own
    assert not nightly_failure("took      0.15 s", run + timedelta(days=1), run)  # a summary without a home
    assert not nightly_failure("}", run + timedelta(days=1), run)  # `run --json`'s object
    assert not nightly_failure("", run + timedelta(days=1), run)  # an empty log says nothing
    assert nightly_failure("Error: another memoir pid 4 is working on this home", run + timedelta(days=1), run)
