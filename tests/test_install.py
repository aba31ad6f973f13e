"""`pip install .` into an empty venv: one import name, and the installed hook works from any folder.

The wheel is built from a copy of the sources (a build writes build/ and *.egg-info beside them),
installed with --no-deps into a venv made for the test; the libraries memoir needs come from the
test's own environment through a .pth file, which never carries the editable install's finder.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.recall_cards import BASE, QUERY, WORKSPACE, index_cards, settings_for

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("cards", "index", "flows", "pyproject.toml", "README.md")

pytestmark = pytest.mark.slow


def _run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv python, wheel path) for a venv holding memoir's wheel and nothing else of memoir."""
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, src / name)
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                  "-w", str(tmp / "dist"), str(src)])
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp / "dist").glob("memoir-*.whl")
    venv = tmp / "venv"
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    put = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
                str(wheel)])
    assert put.returncode == 0, put.stderr
    purelib = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    (purelib / "memoir-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python, wheel


def test_the_wheel_installs_one_top_level_name(installed):
    _, wheel = installed
    with zipfile.ZipFile(wheel) as whl:
        tops = {name.split("/", 1)[0] for name in whl.namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"memoir"}


def test_import_memoir_works_and_the_floor_names_do_not(installed, tmp_path):
    python, _ = installed
    ok = _run([str(python), "-c", "import memoir, memoir.cards.config, memoir.index.errors, memoir.flows.hook_client"],
              cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    for name in ("cards", "index", "flows", "memoir_hook"):
        gone = _run([str(python), "-c", f"import {name}"], cwd=tmp_path)
        assert gone.returncode != 0 and "ModuleNotFoundError" in gone.stderr, name


@pytest.fixture
def project(tmp_path):
    """A user's project with its own flows/, cards/ and index/ packages, and a json.py, all poisoned."""
    folder = tmp_path / "project"
    for pkg in ("flows", "cards", "index", "memoir"):
        (folder / pkg).mkdir(parents=True)
        for name in ("__init__.py", "config.py", "hook_client.py", "recall_service.py"):
            (folder / pkg / name).write_text("raise SystemExit(7)\n")
    (folder / "json.py").write_text("raise SystemExit(7)\n")
    (folder / "hook_client.py").write_text("raise SystemExit(7)\n")
    return folder


def test_the_installed_claude_code_hook_works_from_a_project_with_its_own_packages(
        installed, project, tmp_path, memoir_home):
    python, _ = installed
    user = tmp_path / "user"
    user.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMOIR_", "PYTHON"))}
    env.update(HOME=str(user), MEMOIR_HOME=str(memoir_home), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    memoir = python.parent / "memoir"
    put = _run([str(memoir), "hook", "install", "claude-code"], env=env, cwd=tmp_path)
    assert put.returncode == 0, put.stderr
    hooks = json.loads((user / ".claude" / "settings.json").read_text())["hooks"]
    commands = {event: entries[0]["hooks"][0]["command"] for event, entries in hooks.items()}
    assert set(commands) == {"UserPromptSubmit", "SessionStart"}
    assert str(python.parent.parent) in commands["UserPromptSubmit"]  # the venv's own copy, not the repository

    from memoir.index.embed import default_embedder  # deferred: start-up (the model loads in seconds)

    index_cards(settings_for(memoir_home), default_embedder(), [BASE])
    state = memoir_home / "state"
    state.mkdir(parents=True, exist_ok=True)
    # Hold the service lock as a starting service does, so a cold hook starts no service of its own.
    lock = os.open(state / "recall.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        hook_env = {**env, "PYTHONPATH": str(project), "MEMOIR_SYNC_TIMEOUT_MS": "15000",
                    "MEMOIR_SESSION_START_BUDGET_MS": "30000"}  # wide for a busy machine: the defaults are the product's
        prompt = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": QUERY, "session_id": "s1",
                             "cwd": WORKSPACE})
        out = _run(["bash", "-c", commands["UserPromptSubmit"]], input=prompt, env=hook_env, cwd=project)
        assert out.returncode == 0 and out.stdout == "" and out.stderr == "", out.stderr
        start = json.dumps({"hook_event_name": "SessionStart", "source": "startup", "session_id": "s1",
                            "cwd": WORKSPACE})
        out = _run(["bash", "-c", commands["SessionStart"]], input=start, env=hook_env, cwd=project)
        assert out.returncode == 0, out.stderr
        context = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
        assert BASE.id in context  # the brief came from memoir's index, read by the installed package
    finally:
        os.close(lock)
    outcomes = [json.loads(line)["outcome"] for line in (state / "hook.jsonl").read_text().splitlines()]
    assert outcomes == ["cold_start", "cold_start"]
