"""`memoir serve`: time zone, schedule, one line per run, the status file, `--status`, stopping.

The fast tests drive serve's parts with real files, locks, signals and processes; the slow one
starts a real `memoir serve` (a Prefect server: 15-60 s), runs the nightly deployment with the
command serve prints, and stops it with SIGINT sent to the memoir process alone.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from memoir.cards.status import record_run
from memoir.flows import serve as sv
from memoir.flows.cli.app import EXIT_BUSY, EXIT_FAILED, EXIT_USAGE
from memoir.flows.cli.main import cli

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=timezone.utc)


# --- time zone and schedule -------------------------------------------------------------------------


def test_local_timezone_from_tz_then_etc_timezone_then_the_localtime_link(tmp_path):
    etc = tmp_path / "etc"
    etc.mkdir()
    assert sv.local_timezone({}, etc) == "UTC"
    (etc / "localtime").symlink_to("/usr/share/zoneinfo/Asia/Tokyo")
    assert sv.local_timezone({}, etc) == "Asia/Tokyo"
    (etc / "timezone").write_text("Europe/Berlin\n")
    assert sv.local_timezone({}, etc) == "Europe/Berlin"
    assert sv.local_timezone({"TZ": ":America/New_York"}, etc) == "America/New_York"
    assert sv.local_timezone({"TZ": "Not/AZone"}, etc) == "Europe/Berlin"


def test_the_cron_is_read_in_its_time_zone_across_daylight_saving():
    winter = sv.next_run("30 3 * * *", "Europe/Berlin", NOW)
    assert winter.isoformat() == "2026-12-04T03:30:00+01:00"
    assert winter.astimezone(timezone.utc).hour == 2
    summer = sv.next_run("30 3 * * *", "Europe/Berlin", datetime(2026, 7, 1, 12, tzinfo=timezone.utc))
    assert summer.isoformat() == "2026-07-02T03:30:00+02:00"
    assert sv.next_run("30 3 * * *", "UTC", NOW).isoformat() == "2026-12-04T03:30:00+00:00"


def test_a_bad_time_zone_or_cron_is_a_usage_error_before_prefect_starts(tmp_path):
    runner = CliRunner()
    bad_zone = runner.invoke(cli, ["serve", "--timezone", "Mars/Olympus"])
    assert bad_zone.exit_code == EXIT_USAGE and "unknown time zone 'Mars/Olympus'" in bad_zone.output
    bad_cron = runner.invoke(cli, ["serve", "--cron", "61 * * * *", "--timezone", "UTC"])
    assert bad_cron.exit_code == EXIT_USAGE and "bad cron expression" in bad_cron.output
    assert not (tmp_path / "memoir-home" / "prefect").exists()


# --- one line per run -------------------------------------------------------------------------------


def _snap(holder=None, runs=0, last=None):
    return sv.Snapshot(holder, runs, last)


def test_run_events_say_start_finish_with_cards_and_skips_and_a_run_that_left_no_record():
    holder = {"pid": 41, "started": "2026-12-03T03:30:00+0100", "what": "nightly flow"}
    lines, result = sv.run_events(_snap(), _snap(holder), "03:30:01")
    assert lines == ["03:30:01 run started: nightly flow, pid 41"] and result is None
    assert sv.run_events(_snap(holder), _snap(holder), "03:30:03") == ([], None)
    record = {"finished": "2026-12-03T02:31:00Z", "added": 3, "superseded": 1,
              "skipped": {"bad_json": 2, "no_card_banner": 5}, "alarms": []}
    lines, result = sv.run_events(_snap(holder), _snap(None, 1, record), "03:31:00")
    assert lines == ["03:31:00 run finished: 3 new cards, 1 superseded, skipped 7 (5 no_card_banner, 2 bad_json)"]
    assert result == {"result": "finished", **record}
    # The record can show a poll before the lock's release: that release is the same finished run.
    assert sv.run_events(_snap(holder, 1, record), _snap(None, 1, record), "03:31:02") == ([], None)
    # A lock released with only an older record (finished before this holder started): the run failed.
    older = {**record, "finished": "2026-12-02T02:31:00Z"}
    lines, result = sv.run_events(_snap(holder, 1, older), _snap(None, 1, older), "03:40:00")
    assert "ended without recording a result" in lines[0] and result["result"] == "failed"
    lines, result = sv.run_events(_snap(holder), _snap(None), "03:40:00")
    assert "ended without recording a result" in lines[0] and result["result"] == "failed"
    # At keep_runs the log stays as long (one pruned, one appended): the new last record still counts.
    later = {**record, "finished": "2026-12-04T02:31:00Z"}
    lines, result = sv.run_events(_snap(holder, 1000, record), _snap(None, 1000, later), "03:31:00")
    assert lines[0].startswith("03:31:00 run finished") and result == {"result": "finished", **later}


def test_watch_prints_a_line_per_run_and_keeps_the_status_file(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    said: list[str] = []
    status = sv.ServeStatus(pid=os.getpid(), started="2026-12-03T12:00:00+00:00", api_url="http://127.0.0.1:1/api",
                            cron="30 3 * * *", timezone="UTC")
    watch = sv.Watch(state, status, said.append, poll_s=3600).start()
    try:
        (state / "run.lock").write_text(json.dumps({"pid": 77, "started": "x", "what": "nightly flow"}))
        watch.poll()
        record_run(state, added=2, superseded=0, counts={}, skipped={"unreadable": 1})
        (state / "run.lock").write_text("")
        watch.poll()
    finally:
        watch.stop()
    assert [line.split(" ", 2)[2] for line in said] == [
        "run started: nightly flow, pid 77", "run finished: 2 new cards, 0 superseded, skipped 1 (1 unreadable)"]
    saved = sv.read_status(state)
    assert saved.last_run["added"] == 2 and saved.last_run["result"] == "finished"


# --- the status file, the serve lock and `--status` -------------------------------------------------


def _hold_serve_lock(state: Path) -> subprocess.Popen:
    """Another process holding the serve lock, as a live serve does."""
    code = ("import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
            "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(120)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(state / sv.SERVE_LOCK)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_status_says_running_only_while_a_process_holds_the_serve_lock(memoir_home):
    state = memoir_home / "state"
    state.mkdir(parents=True)
    runner = CliRunner()
    none = runner.invoke(cli, ["serve", "--status"])
    assert none.exit_code == EXIT_FAILED and "not running" in none.output

    holder = _hold_serve_lock(state)
    try:
        sv.write_status(state, sv.ServeStatus(pid=holder.pid, started="2026-12-03T12:00:00+00:00",
                                              api_url="http://127.0.0.1:4200/api", cron="30 3 * * *",
                                              timezone="Europe/Berlin"))
        live = runner.invoke(cli, ["serve", "--status"])
        assert live.exit_code == 0, live.output
        assert f"running, pid {holder.pid}" in live.output and "4200" in live.output
        assert re.search(r"next run \d{4}-\d\d-\d\d 03:30\+01:00", live.output)
        data = json.loads(runner.invoke(cli, ["serve", "--status", "--json"]).output)
        assert data["running"] is True and data["next_run"].endswith("03:30:00+01:00")
        with pytest.raises(sv.ServeBusy, match=f"pid {holder.pid}"):
            with sv.serve_lock(state):
                pass
    finally:
        holder.kill()
        holder.wait()
    # Killed without a word: the kernel dropped its lock, so it is not taken for a live serve.
    dead = runner.invoke(cli, ["serve", "--status"])
    assert dead.exit_code == EXIT_FAILED
    assert f"not running (last: pid {holder.pid}" in dead.output and "without stopping cleanly" in dead.output


def test_a_second_serve_on_the_same_home_exits_busy(memoir_home):
    state = memoir_home / "state"
    state.mkdir(parents=True)
    holder = _hold_serve_lock(state)
    try:
        result = CliRunner().invoke(cli, ["serve", "--timezone", "UTC"])
    finally:
        holder.kill()
        holder.wait()
    assert result.exit_code == EXIT_BUSY and "already serves this home" in result.output


# --- stopping -------------------------------------------------------------------------------------


def test_a_signal_sets_the_stop_event_instead_of_raising():
    # Whatever was there before comes back: default_int_handler at a terminal, SIG_IGN for SIGINT in
    # a background job or under nohup (which may also leave SIGHUP ignored), pytest's own otherwise.
    signals = (signal.SIGINT, signal.SIGTERM)
    before = {sig: signal.getsignal(sig) for sig in signals}
    with sv.stop_on_signals() as stopping:
        os.kill(os.getpid(), signal.SIGTERM)
        assert stopping.wait(5)
    assert {sig: signal.getsignal(sig) for sig in signals} == before


def test_stop_children_ends_a_whole_tree_even_one_that_ignores_sigterm():
    # parent -> a child that ignores SIGTERM -> a grandchild; only the parent's descendants go.
    inner = "import signal, subprocess, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); " \
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); time.sleep(120)"
    outer = f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {inner!r}]); time.sleep(120)"
    parent = subprocess.Popen([sys.executable, "-c", outer], start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while len(psutil.Process(parent.pid).children(recursive=True)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        tree = psutil.Process(parent.pid).children(recursive=True)
        assert len(tree) == 2
        assert sv.stop_children(grace_s=1, pid=parent.pid) == 2
        assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in tree)
        assert parent.poll() is None
    finally:
        parent.kill()
        parent.wait()


# --- the real thing -----------------------------------------------------------------------------------


def _read_until(stream, pattern: str, timeout: float, seen: list[str]) -> re.Match | None:
    """Lines from `stream` (read on a thread) until one matches `pattern`."""
    found: list[re.Match] = []

    def read():
        for line in stream:
            seen.append(line)
            if m := re.search(pattern, line):
                found.append(m)
                return

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(timeout)
    return found[0] if found else None


@pytest.mark.slow
def test_real_serve_runs_the_printed_command_prints_the_run_and_stops_on_sigint(tmp_path, memoir_home):
    env = {**os.environ, "HOME": str(tmp_path), "PREFECT_API_URL": ""}
    env.pop("PREFECT_API_URL")
    entry = "from memoir.flows.cli.main import main; main()"
    proc = subprocess.Popen([sys.executable, "-c", entry, "serve", "--timezone", "Europe/Berlin"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    err: list[str] = []
    out: list[str] = []
    try:
        hint = _read_until(proc.stderr, r"PREFECT_API_URL=(\S+) (.+?) deployment run (\S+)\)", 240, err)
        assert hint, "".join(err)
        assert any("(Europe/Berlin); next run" in line for line in err)
        status = subprocess.run([sys.executable, "-c", entry, "serve", "--status"], env=env,
                                capture_output=True, text=True, timeout=60)
        assert status.returncode == 0 and f"pid {proc.pid}" in status.stdout, status.stdout
        # The printed command works as printed, with nothing exported.
        api, prefect, name = hint.groups()
        # The dashboard at the printed address asks its API at that same address.
        with urllib.request.urlopen(api.removesuffix("/api") + "/ui-settings", timeout=30) as resp:
            assert json.loads(resp.read())["api_url"] == api
        started = subprocess.run(f"PREFECT_API_URL={api} {prefect} deployment run {name}", shell=True, env=env,
                                 capture_output=True, text=True, timeout=120)
        assert started.returncode == 0, started.stdout + started.stderr
        assert _read_until(proc.stdout, r"run finished: \d+ new cards", 240, out), "".join(out + err)
        children = psutil.Process(proc.pid).children(recursive=True)
        assert children  # at least the Prefect server
        os.kill(proc.pid, signal.SIGINT)  # the memoir process alone, not its group
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
    after = subprocess.run([sys.executable, "-c", entry, "serve", "--status"], env=env,
                           capture_output=True, text=True, timeout=60)
    assert after.returncode == EXIT_FAILED and "stopped" in after.stdout
    assert sv.read_status(memoir_home / "state").last_run["result"] == "finished"


# --- the recipes in the docs ------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
_COMMAND = re.compile(r"(?:^|[\s/=])memoir((?: [a-z][a-z-]*)+)")


def _recipe_commands(text: str) -> set[tuple[str, ...]]:
    """`memoir <subcommand…>` in every code block of `text` (options and paths left out)."""
    blocks = re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.DOTALL)
    found = set()
    for block in blocks:
        for line in block.splitlines():
            for m in _COMMAND.finditer(line.split("#", 1)[0] if not line.startswith("#") else ""):
                found.add(tuple(m.group(1).split()))
    return found


def test_every_memoir_command_in_the_scheduling_recipes_exists():
    operating = (ROOT / "docs" / "operating.md").read_text()
    section = operating[operating.index("## Scheduled runs"):]
    section = section[:section.index("\n## ")]
    runbook = (ROOT / "runbooks" / "scheduling.md").read_text()
    found = _recipe_commands(section) | _recipe_commands(runbook)
    assert {("run",), ("serve",), ("flow", "run", "nightly")} <= found
    assert ("schedule", "install", "systemd") in found or "OnCalendar=" in section  # units written by memoir
    assert ("every", "night") not in found
    runner = CliRunner()
    for words in sorted(found):
        result = runner.invoke(cli, [*words, "--help"])
        assert result.exit_code == 0, f"memoir {' '.join(words)} --help: {result.output}"
    # The options the recipes pass are real options of those commands.
    assert "--wait" in runner.invoke(cli, ["run", "--help"]).output
    serve_help = runner.invoke(cli, ["serve", "--help"]).output
    assert "--status" in serve_help and "--timezone" in serve_help


def test_memoir_status_shows_serve_once_one_has_run(memoir_home):
    runner = CliRunner()
    assert "serve " not in runner.invoke(cli, ["status"]).output
    state = memoir_home / "state"
    state.mkdir(parents=True, exist_ok=True)
    sv.write_status(state, sv.ServeStatus(pid=1, started="2026-12-03T12:00:00+00:00", api_url="x", cron="30 3 * * *",
                                          timezone="UTC", last_run={"result": "failed", "finished": "t", "pid": 9},
                                          stopped="2026-12-03T13:00:00+00:00"))
    result = runner.invoke(cli, ["status"])
    assert "serve      not running (last: pid 1" in result.output and "last run FAILED" in result.output
    data = json.loads(runner.invoke(cli, ["status", "--json"]).output)
    assert data["serve"]["running"] is False and data["serve"]["last_run"]["result"] == "failed"
