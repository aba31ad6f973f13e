"""`memoir schedule install|remove cron|systemd`: a crontab line and systemd units that real tools accept."""

from __future__ import annotations

import shlex
import shutil
import stat
import subprocess

import pytest
from click.testing import CliRunner

from memoir.cards.config import load_settings
from memoir.flows.cli.main import cli
from memoir.flows.schedule import ScheduleError, on_calendar


def invoke(*args: str):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result


def command_of(line: str) -> str:
    """What cron hands to `/bin/sh -c`: the line after its five time fields, before memoir's mark, `\\%` as `%`."""
    command = line.split(" ", 5)[5].rsplit(" # memoir-nightly", 1)[0]
    return command.replace("\\%", "%")


def test_cron_install_keeps_other_lines_replaces_its_own_and_remove_takes_it_out(tmp_path, memoir_home):
    crontab = tmp_path / "crontab"
    crontab.write_text("MAILTO=me\n0 * * * * backup.sh\n")
    assert invoke("schedule", "install", "cron", "--crontab-file", str(crontab)).exit_code == 0
    assert invoke("schedule", "install", "cron", "--crontab-file", str(crontab)).exit_code == 0  # no second line
    lines = crontab.read_text().splitlines()
    assert lines[:2] == ["MAILTO=me", "0 * * * * backup.sh"] and len(lines) == 3
    line = lines[2]
    assert line.startswith("30 3 * * * umask 077 && /") and f"--home {memoir_home} run --wait 600" in line
    assert line.endswith(f"# memoir-nightly home={memoir_home}") and "state/nightly.log 2>&1" in line
    # The command in the line runs as written: it is an absolute memoir that answers --help.
    argv = shlex.split(command_of(line).split(" && ")[-1].split(" >> ")[0])
    assert argv[0].startswith("/") and argv[-5:] == ["--home", str(memoir_home), "run", "--wait", "600"]
    assert subprocess.run([*argv[:-5], "--help"], capture_output=True, timeout=60).returncode == 0
    assert invoke("schedule", "remove", "cron", "--crontab-file", str(crontab)).exit_code == 0
    assert crontab.read_text() == "MAILTO=me\n0 * * * * backup.sh\n"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_systemd_units_install_into_a_folder_and_pass_systemd_analyze_verify(tmp_path, memoir_home, monkeypatch):
    monkeypatch.setenv("MEMOIR_NIGHTLY_CRON", "15 2 * * 1-5")
    monkeypatch.setenv("MEMOIR_NIGHTLY_TIMEZONE", "Europe/Berlin")
    units = tmp_path / "units"
    out = invoke("schedule", "install", "systemd", "--unit-dir", str(units))
    assert out.exit_code == 0, out.output
    assert sorted(p.name for p in units.iterdir()) == ["memoir.service", "memoir.timer"]
    timer = (units / "memoir.timer").read_text()
    assert "OnCalendar=Mon..Fri *-*-* 02:15:00 Europe/Berlin\n" in timer and "Persistent=true" in timer
    service = (units / "memoir.service").read_text()
    assert f"--home {memoir_home} run --wait 600" in service and "Type=oneshot" in service
    verify = subprocess.run(["systemd-analyze", "verify", str(units / "memoir.service"), str(units / "memoir.timer")],
                            capture_output=True, text=True, timeout=60)
    assert verify.returncode == 0, verify.stderr
    assert invoke("schedule", "remove", "systemd", "--unit-dir", str(units)).exit_code == 0
    assert list(units.iterdir()) == []


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
@pytest.mark.parametrize("cron", ["30 3 * * *", "*/15 * * * *", "0 9-17 * * mon-fri", "0 4 1,15 * *",
                                  "5 0 * * 0", "0 22 * * 7", "@weekly"])
def test_every_cron_shape_memoir_translates_is_a_calendar_systemd_accepts(cron):
    spec = on_calendar(cron)
    check = subprocess.run(["systemd-analyze", "calendar", spec], capture_output=True, text=True, timeout=30)
    assert check.returncode == 0, (spec, check.stderr)


def test_a_cron_systemd_cannot_say_is_refused_with_a_reason():
    with pytest.raises(ScheduleError, match="both"):
        on_calendar("0 3 1 * 1")
    with pytest.raises(ScheduleError, match="five-field"):
        on_calendar("0 3 * *")


def test_a_weekday_schedule_is_translated_to_the_same_days(memoir_home):
    assert on_calendar("0 22 * * 7") == "Sun *-*-* 22:00:00"
    assert on_calendar("30 3 * * *", "UTC") == "*-*-* 03:30:00 UTC"
    assert load_settings(home=memoir_home).nightly_cron == "30 3 * * *"


def test_the_cron_line_runs_under_an_empty_environment_for_a_home_that_does_not_exist(tmp_path, monkeypatch):
    config = tmp_path / "pinned.toml"  # found through MEMOIR_CONFIG at install; cron has no such variable
    config.write_text('model_base_url = "http://127.0.0.1:9/v1"\nmodel_name = "pinned"\n')
    monkeypatch.setenv("MEMOIR_CONFIG", str(config))
    home, crontab, empty = tmp_path / "not" / "yet" / "home", tmp_path / "crontab", tmp_path / "no-logs"
    empty.mkdir()
    out = invoke("--home", str(home), "schedule", "install", "cron", "--crontab-file", str(crontab))
    assert out.exit_code == 0, out.output
    assert stat.S_IMODE((home / "state").stat().st_mode) == 0o700  # install made the folder the log goes to
    shutil.rmtree(tmp_path / "not")  # and the line makes it again when it is gone by the night
    (line,) = crontab.read_text().splitlines()
    command = command_of(line)
    assert f"MEMOIR_CONFIG={config} " in command
    # This machine's own agent logs are not the test's to read: the run gets an empty folder instead.
    command = command.replace(" run --wait 600 >> ", f" run --wait 600 --logs {shlex.quote(str(empty))} >> ")
    night = subprocess.run(["/bin/sh", "-c", command], env={}, capture_output=True, text=True, timeout=300)  # env -i
    assert night.returncode == 0, (night.stdout, night.stderr)
    log = (home / "state" / "nightly.log").read_text()
    assert "files     0 seen, 0 read" in log and "model     on: pinned at http://127.0.0.1:9/v1" in log
    assert log.rstrip().splitlines()[-1].startswith("next      ")
    assert (home / "state" / "runs.jsonl").read_text().count("\n") == 1
    assert stat.S_IMODE(home.stat().st_mode) == 0o700 and "Traceback" not in log
