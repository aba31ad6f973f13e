"""Logs that change under memoir end with the cards of a clean run over what they hold now.

A log replaced by one of the same size and mtime, a log that grows while a task is being written
into it, and a log truncated then restored: each home's card files must be byte-identical to a
fresh home that read the final file once. Real files, real runs (no index: it is derived).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from memoir.cards.collect import collect
from memoir.cards.config import load_settings
from memoir.cards.ledger import SAMPLE_BLOCK, SAMPLE_BLOCKS, Ledger
from memoir.flows.pipeline import run_pipeline

FIXTURES = Path(__file__).parent / "fixtures" / "real"
SID = "7d1c2a90-5b3e-4c1f-9a7e-2f0d3c4b5a61"


def _line(uuid: str, parent: str | None, kind: str, content, ts: str) -> str:
    role = "assistant" if kind == "assistant" else "user"
    message = {"role": role, "content": content}
    if role == "assistant":
        message["id"] = f"msg_{uuid}"
    return json.dumps({"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/dev/app",
                       "sessionId": SID, "version": "2.1.0", "gitBranch": "main", "type": kind,
                       "message": message, "uuid": uuid, "timestamp": ts}) + "\n"


def _call(uuid, parent, tool_id, name, args, ts):
    return _line(uuid, parent, "assistant", [{"type": "tool_use", "id": tool_id, "name": name, "input": args}], ts)


def _result(uuid, parent, tool_id, text, ts):
    return _line(uuid, parent, "user", [{"type": "tool_result", "tool_use_id": tool_id, "content": text}], ts)


def _say(uuid, parent, text, ts):
    return _line(uuid, parent, "assistant", [{"type": "text", "text": text}], ts)


# Two tasks; the second is cut (CUT_AT) after its failing test run, before the fix and the green run.
SESSION = [
    _line("u1", None, "user", "pytest fails with ModuleNotFoundError: No module named 'yaml'", "2026-11-03T10:00:00Z"),
    _call("a1", "u1", "t1", "Bash", {"command": "pip install pyyaml"}, "2026-11-03T10:00:05Z"),
    _result("u2", "a1", "t1", "Successfully installed PyYAML-6.0.2", "2026-11-03T10:00:09Z"),
    _say("a2", "u2", "The root cause was that PyYAML was missing from requirements.txt; adding pyyaml there "
         "fixes the ModuleNotFoundError.", "2026-11-03T10:00:15Z"),
    _line("u3", "a2", "user", "new task: add a --verbose flag to the cli and cover it with a test", "2026-11-03T10:05:00Z"),
    _call("a3", "u3", "t2", "Edit", {"file_path": "cli.py", "old_string": "args", "new_string": "args, verbose"},
          "2026-11-03T10:05:05Z"),
    _result("u4", "a3", "t2", "The file cli.py has been updated.", "2026-11-03T10:05:06Z"),
    _call("a4", "u4", "t3", "Bash", {"command": "pytest -q tests/test_cli.py"}, "2026-11-03T10:05:10Z"),
    _result("u5", "a4", "t3", "F....\nFAILED tests/test_cli.py::test_verbose - AssertionError: expected level "
            "DEBUG, got WARNING\n1 failed, 4 passed in 0.31s", "2026-11-03T10:05:14Z"),
    _say("a5", "u5", "The flag is parsed after logging.basicConfig ran, so the level never changes; I will "
         "configure logging after the arguments are parsed.", "2026-11-03T10:05:20Z"),
    _call("a6", "a5", "t4", "Edit", {"file_path": "cli.py", "old_string": "basicConfig()",
                                      "new_string": "basicConfig(level=level)"}, "2026-11-03T10:05:30Z"),
    _result("u6", "a6", "t4", "The file cli.py has been updated.", "2026-11-03T10:05:31Z"),
    _call("a7", "u6", "t5", "Bash", {"command": "pytest -q tests/test_cli.py"}, "2026-11-03T10:05:35Z"),
    _result("u7", "a7", "t5", ".....\n5 passed in 0.29s", "2026-11-03T10:05:39Z"),
    _say("a8", "u7", "Added --verbose: logging is now configured after the arguments are parsed, so the flag "
         "sets DEBUG. All 5 tests pass.", "2026-11-03T10:05:45Z"),
]
FULL = "".join(SESSION).encode()
CUT_AT = len("".join(SESSION[:9]).encode())  # just after the failing test run


def _home(root: Path, name: str):
    return load_settings(home=root / name)


def _run(settings, logs: Path):
    return run_pipeline(settings, [logs], with_index=False)


def _cards(settings) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(settings.cards_dir.glob("*.md"))}


def _clean(tmp_path: Path, logs: Path) -> dict[str, bytes]:
    clean = _home(tmp_path, "clean")
    _run(clean, logs)
    return _cards(clean)


def _log(tmp_path: Path, data: bytes) -> tuple[Path, Path]:
    logs = tmp_path / "projects"
    log = logs / "-home-dev-app" / f"{SID}.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_bytes(data)
    return logs, log


@pytest.mark.parametrize("cut", [CUT_AT, CUT_AT + 57], ids=["at_a_line_end", "mid_line"])
def test_a_task_cut_by_the_end_of_a_growing_file_gets_the_card_of_a_clean_run(tmp_path, cut):
    logs, log = _log(tmp_path, FULL[:cut])
    home = _home(tmp_path, "growing")
    first = _run(home, logs)
    assert first.cards["new"] == 2  # the finished task, and what the second had so far
    with log.open("ab") as fh:
        fh.write(FULL[cut:])
    second = _run(home, logs)
    assert second.cards["retired"] == 1 and second.skipped["no_card_no_request"] == 0
    assert _cards(home) == _clean(tmp_path, logs)


def _halves(data: bytes) -> int:
    """A cut near the middle of a real log, inside a line."""
    return len(data) // 2 + 17


@pytest.mark.parametrize("fixture", [
    "codex/opk__rollout-2025-10-31T19-02-58-c61729d4-da6d-46a4-9a29-ec2c614e5e23.jsonl",
    "claude-code/dkimuson__1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
    "aider/afi-core__.aider.chat.history.md",
])
def test_a_real_log_read_half_then_whole_ends_with_a_clean_runs_cards(tmp_path, fixture):
    data = (FIXTURES / fixture).read_bytes()
    logs = tmp_path / "logs"
    log = logs / Path(fixture).name
    logs.mkdir()
    log.write_bytes(data[:_halves(data)])
    home = _home(tmp_path, "growing")
    _run(home, logs)
    with log.open("ab") as fh:
        fh.write(data[_halves(data):])
    _run(home, logs)
    assert _cards(home) == _clean(tmp_path, logs)


@pytest.mark.parametrize("keep", [CUT_AT, len(SESSION[0]) + 10], ids=["mid_second_task", "inside_the_first"])
def test_a_truncated_then_restored_file_leaves_no_stale_card(tmp_path, keep):
    logs, log = _log(tmp_path, FULL)
    home = _home(tmp_path, "truncated")
    _run(home, logs)
    full_cards = _cards(home)
    with log.open("r+b") as fh:
        fh.truncate(keep)
    _run(home, logs)
    assert _cards(home) == _clean(tmp_path / "short", logs)  # what the file holds now, no more
    log.write_bytes(FULL)
    _run(home, logs)
    assert _cards(home) == full_cards == _clean(tmp_path, logs)


def _same_size_other_bytes() -> bytes:
    swapped = FULL.replace(b"--verbose", b"--quieter")
    assert len(swapped) == len(FULL) and swapped != FULL
    return swapped


def _replace_in_place(log: Path, data: bytes) -> None:
    st = log.stat()
    with log.open("r+b") as fh:
        fh.write(data)
    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns))


def _rename_over(log: Path, data: bytes) -> None:
    st = log.stat()
    tmp = log.with_name(log.name + ".part")
    tmp.write_bytes(data)
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp, log)


@pytest.mark.parametrize("replace", [_replace_in_place, _rename_over], ids=["in_place", "renamed_over"])
def test_a_same_size_same_mtime_replacement_is_read_again(tmp_path, replace):
    logs, log = _log(tmp_path, FULL)
    home = _home(tmp_path, "replaced")
    _run(home, logs)
    before = log.stat()
    replace(log, _same_size_other_bytes())
    after = log.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    with Ledger.in_state_dir(home.state_dir) as ledger:
        again = collect([logs], ledger=ledger)
    assert again.plans["rewritten"] == 1
    assert any("--quieter" in t.text for turns in again.sessions.values() for t in turns)
    _run(home, logs)
    cards = _cards(home)
    assert any(b"--quieter" in v for v in cards.values()) and not any(b"--verbose" in v for v in cards.values())
    assert cards == _clean(tmp_path, logs)


@pytest.mark.parametrize("where", ["head", "tail"])
def test_a_same_size_change_at_either_end_of_a_big_file_is_noticed(tmp_path, where):
    """Past the size hashed whole, the first and the last block are always among the sampled ones."""
    filler = [_say(f"f{i}", None, f"note {i:05d} " + "x" * 200, "2026-11-03T09:00:00Z") for i in range(400)]
    data = "".join(filler).encode() + FULL
    assert len(data) > SAMPLE_BLOCK * SAMPLE_BLOCKS
    logs, log = _log(tmp_path, data)
    with Ledger.in_state_dir(tmp_path / "state") as ledger:
        collect([logs], ledger=ledger).commit(ledger)
        at = data.index(b"note 00000") if where == "head" else data.rindex(b"5 passed")
        _replace_in_place(log, data[:at] + b"NOTE" + data[at + 4:])
        assert collect([logs], ledger=ledger).plans["rewritten"] == 1


def test_an_untouched_file_is_not_read_again(tmp_path):
    logs, log = _log(tmp_path, FULL)
    home = _home(tmp_path, "still")
    _run(home, logs)
    again = _run(home, logs)
    assert (again.files_read, again.cards.get("retired", 0)) == (0, 0)
    shutil.rmtree(logs)


def test_a_partial_card_a_person_edited_stays_when_its_task_is_finished(tmp_path):
    logs, log = _log(tmp_path, FULL[:CUT_AT])
    home = _home(tmp_path, "edited")
    _run(home, logs)
    partial = next(p for p in home.cards_dir.glob("*.md") if b"--verbose" in p.read_bytes())
    partial.write_bytes(partial.read_bytes() + b"\nMy own note on this half-done task.\n")
    with log.open("ab") as fh:
        fh.write(FULL[CUT_AT:])
    second = _run(home, logs)
    assert partial.exists() and b"My own note" in partial.read_bytes()
    assert second.cards.get("retired", 0) == 0 and any(partial.stem in n for n in second.notes)
    assert set(_cards(home)) - {partial.name} == set(_clean(tmp_path, logs))
