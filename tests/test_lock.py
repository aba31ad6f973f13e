"""One run at a time per home: the lock, its wait, and two real `memoir run`s racing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from memoir.cards.config import load_settings
from memoir.flows.lock import RunBusy, StepTimeout, run_lock, step_deadline
from tests.flowlogs import write_corpus

HOLD = """
import pathlib, sys, time
from memoir.flows.lock import run_lock
with run_lock(sys.argv[1], 0):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
    pathlib.Path(sys.argv[1], "holder-done").touch()
"""


def _holder(state_dir, seconds):
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(state_dir), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_holder_is_refused_at_once_and_says_who_holds_it(tmp_path):
    proc = _holder(tmp_path, 5)
    try:
        with pytest.raises(RunBusy, match=f"pid {proc.pid}"):
            with run_lock(tmp_path, 0):
                pass
    finally:
        proc.kill()
        proc.wait()


def test_a_waiting_holder_gets_the_lock_when_the_first_finishes(tmp_path):
    proc = _holder(tmp_path, 0.5)
    with run_lock(tmp_path, 10):
        # Order, not elapsed time: the first holder finished its work before the lock came free.
        assert (tmp_path / "holder-done").exists()
    proc.wait()


def test_the_lock_of_a_killed_holder_is_free_at_once(tmp_path):
    proc = _holder(tmp_path, 60)
    proc.kill()
    proc.wait()
    with run_lock(tmp_path, 0):
        pass


def test_a_second_take_in_the_same_process_is_refused_like_any_other_run(tmp_path):
    with run_lock(tmp_path, 0, what="run"):
        with pytest.raises(RunBusy, match=f"pid {os.getpid()}"):
            with run_lock(tmp_path, 0, what="replay"):
                pass
        refused = []

        def other_thread():
            try:
                with run_lock(tmp_path, 0):
                    pass
            except RunBusy:
                refused.append(True)

        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        assert refused == [True]
    # the outer block released it
    subprocess.run([sys.executable, "-c", "import sys; from memoir.flows.lock import run_lock\n"
                    "with run_lock(sys.argv[1], 0): pass", str(tmp_path)], check=True)


def test_a_step_past_its_deadline_raises_step_timeout():
    with pytest.raises(StepTimeout, match="collect"):
        with step_deadline("collect", 0.2):
            time.sleep(5)


def _run(home, logs, *extra):
    env = {**os.environ, "MEMOIR_HOME": str(home)}
    return subprocess.Popen([sys.executable, "-c", "from memoir.flows.cli.main import main; main()", "run", "--json",
                             "--no-index", "--logs", str(logs), *extra], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_until_locked(home, proc):
    lock = home / "state" / "run.lock"
    while not (lock.exists() and lock.read_text()):  # a run that hangs here meets pytest's own timeout
        assert proc.poll() is None, "the first run ended without taking the lock"
        time.sleep(0.02)


def test_two_concurrent_runs_one_works_the_other_exits_3_and_no_card_is_written_twice(tmp_path, memoir_home):
    logs = write_corpus(tmp_path / "logs", sessions=160, loops=6, filler=40)
    a = _run(memoir_home, logs)
    _wait_until_locked(memoir_home, a)
    b = _run(memoir_home, logs)
    out_b, err_b = b.communicate(timeout=120)
    out_a, _ = a.communicate(timeout=120)
    assert a.returncode == 0 and b.returncode == 3, (a.returncode, b.returncode, err_b)
    assert "another memoir" in err_b and "--wait" in err_b
    settings = load_settings(home=memoir_home)
    files = len(list(settings.cards_dir.glob("*.md")))
    assert json.loads(out_a)["cards"] == {"new": files} and files > 0


def test_a_run_told_to_wait_runs_after_the_first_and_writes_nothing_new(tmp_path, memoir_home):
    logs = write_corpus(tmp_path / "logs", sessions=160, loops=6, filler=40)
    a = _run(memoir_home, logs)
    _wait_until_locked(memoir_home, a)
    b = _run(memoir_home, logs, "--wait", "120")
    out_b, err_b = b.communicate(timeout=180)
    out_a, _ = a.communicate(timeout=180)
    assert a.returncode == 0 and b.returncode == 0, err_b
    assert json.loads(out_a)["cards"]["new"] > 0
    assert json.loads(out_b)["cards"].get("new", 0) == 0 and json.loads(out_b)["files_read"] == 0
