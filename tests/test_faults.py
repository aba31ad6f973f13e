"""Faults give messages, never tracebacks (issue 42): a home that cannot be written (immutable folders,
`chattr +i`, undone in teardown) and a disk that fills up during a run (a small tmpfs as the home).
Each command says what could not be written and exits with a code; the host logs are untouched.
Skipped, saying why, where the filesystem has no immutable flag or a tmpfs cannot be mounted."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "cards" / "examples" / "claude-code"


def memoir(home: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memoir.flows.cli.main", "--home", str(home), *args],
                          capture_output=True, text=True, timeout=timeout)


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()


@pytest.fixture
def logs(tmp_path):
    shutil.copytree(EXAMPLES, tmp_path / "logs" / "claude-code")
    return tmp_path / "logs"


def _chattr(flag: str, paths: list[Path]) -> bool:
    return all(subprocess.run(["chattr", flag, str(p)], capture_output=True).returncode == 0 for p in paths)


def test_a_home_that_cannot_be_written_gives_messages_and_no_traceback(tmp_path, logs):
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    home = tmp_path / "home"
    assert memoir(home, "run", "--logs", str(logs)).returncode == 0
    folders = [home, *(p for p in home.iterdir() if p.is_dir())]
    if not _chattr("+i", folders):
        _chattr("-i", folders)
        pytest.skip("this filesystem has no immutable flag")
    before = _digest(logs)
    try:
        for args in (["run", "--logs", str(logs)], ["recall", "add pagination to the products endpoint"],
                     ["brief", "--workspace", "/home/dev/projects/shopapi"], ["search", "pagination"], ["status"],
                     ["cards", "list"], ["review", "--json"], ["index", "check"], ["report"]):
            out = memoir(home, *args)
            said = out.stdout + out.stderr
            assert "Traceback" not in said, (args, said)
            assert out.returncode in (0, 1, 4), (args, out.returncode, said)
            if out.returncode == 1:
                assert said.strip(), args  # a failure says why
    finally:
        _chattr("-i", folders)
    assert _digest(logs) == before


def test_a_disk_that_fills_up_during_a_run_ends_in_a_message_and_loses_nothing(logs):
    mount = Path(tempfile.mkdtemp(prefix="memoir-full-"))
    tried = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(mount)], capture_output=True,
                           text=True)
    if tried.returncode != 0:
        mount.rmdir()
        pytest.skip(f"a tmpfs cannot be mounted here: {tried.stderr.strip()}")
    before = _digest(logs)
    try:
        home = mount / "home"
        out = memoir(home, "run", "--logs", str(logs))
        said = out.stdout + out.stderr
        assert "Traceback" not in said, said
        assert out.returncode in (0, 1), said
        if out.returncode == 1:
            assert "No space left on device" in said or "cannot be written" in said or "cannot write" in said, said
        again = memoir(home, "status")
        assert "Traceback" not in again.stdout + again.stderr
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)
        mount.rmdir()
    assert _digest(logs) == before  # host logs are only read
