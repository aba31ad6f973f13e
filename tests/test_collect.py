import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from memoir.cards.collect import collect
from memoir.cards.ledger import Ledger

FIXTURES = Path(__file__).parent / "fixtures" / "hosts"


def _line(sid: str, text: str) -> bytes:
    return (json.dumps({"session_id": sid, "role": "user", "text": text}) + "\n").encode()


@pytest.fixture
def ledger(tmp_path):
    with Ledger.in_state_dir(tmp_path / "state") as led:
        yield led


def _snapshot(root: Path) -> dict:
    return {p: (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_mode) for p in root.rglob("*") if p.is_file()}


def test_walks_host_trees_and_groups_turns_by_session(tmp_path, ledger):
    project = tmp_path / "claude" / "proj"
    (project / "0b5c1a2e-1111-4222-8333-944455556666" / "subagents").mkdir(parents=True)
    shutil.copy(FIXTURES / "claude_session.jsonl", project / "0b5c1a2e-1111-4222-8333-944455556666.jsonl")
    shutil.copy(FIXTURES / "claude_session.jsonl", project / "0b5c1a2e-1111-4222-8333-944455556666" / "subagents" / "agent-a1.jsonl")
    day = tmp_path / "codex" / "2026" / "02" / "23"
    day.mkdir(parents=True)
    shutil.copy(FIXTURES / "codex_rollout.jsonl", day / "rollout-2026-02-23T12-40-23-019c8a4c-0000-7000-8000-000000000001.jsonl")
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(FIXTURES / "sample.aider.chat.history.md", repo / ".aider.chat.history.md")

    r = collect([tmp_path / "claude", tmp_path / "codex", repo], ledger=ledger)
    assert (r.files_seen, r.files_read) == (4, 4)
    hosts = sorted({h for h, _ in r.sessions})
    assert hosts == ["aider", "claude-code", "codex"]
    assert ("claude-code", "0b5c1a2e-1111-4222-8333-944455556666/agent-a1") in r.sessions
    assert len([k for k in r.sessions if k[0] == "aider"]) == 2
    assert r.plans["new"] == 4


def test_ledger_moves_only_on_commit_and_then_skips_unchanged(tmp_path, ledger):
    log = tmp_path / "a.jsonl"
    log.write_bytes(_line("s", "one"))
    first = collect([log], host="jsonl", ledger=ledger)
    assert first.turn_count == 1
    assert collect([log], host="jsonl", ledger=ledger).turn_count == 1  # not committed: read again
    first.commit(ledger)
    again = collect([log], host="jsonl", ledger=ledger)
    assert (again.turn_count, again.files_read, again.plans["unchanged"]) == (0, 0, 1)


def test_an_appended_session_is_read_again_whole_with_the_seqs_of_a_clean_read(tmp_path, ledger):
    log = tmp_path / "a.jsonl"
    log.write_bytes(_line("s", "one") + _line("s", "two"))
    collect([log], host="jsonl", ledger=ledger).commit(ledger)
    with open(log, "ab") as fh:
        fh.write(_line("s", "three"))
    r = collect([log], host="jsonl", ledger=ledger)
    clean = collect([log], host="jsonl")
    assert [(t.seq, t.line, t.text) for t in r.sessions[("jsonl", "s")]] == [(0, 1, "one"), (1, 2, "two"), (2, 3, "three")]
    assert r.sessions == clean.sessions
    assert r.plans["appended"] == 1


def test_partial_last_line_waits_for_its_newline(tmp_path, ledger):
    log = tmp_path / "a.jsonl"
    full = _line("s", "one") + _line("s", "two")
    log.write_bytes(full[:-9])
    r = collect([log], host="jsonl", ledger=ledger)
    assert r.turn_count == 1 and r.skipped["partial_line"] == 1
    r.commit(ledger)
    log.write_bytes(full)
    r = collect([log], host="jsonl", ledger=ledger)
    assert [t.text for t in r.sessions[("jsonl", "s")]] == ["one", "two"]  # the session, read whole


def test_rewritten_prefix_is_read_again_from_the_start(tmp_path, ledger):
    log = tmp_path / "a.jsonl"
    log.write_bytes(_line("s", "one") + _line("s", "two"))
    collect([log], host="jsonl", ledger=ledger).commit(ledger)
    log.write_bytes(_line("s", "ONE") + _line("s", "two") + _line("s", "three"))
    r = collect([log], host="jsonl", ledger=ledger)
    assert [(t.seq, t.text) for t in r.sessions[("jsonl", "s")]] == [(0, "ONE"), (1, "two"), (2, "three")]
    assert r.plans["rewritten"] == 1


def test_aider_session_appended_later_keeps_its_id(tmp_path, ledger):
    log = tmp_path / ".aider.chat.history.md"
    log.write_bytes((FIXTURES / "sample.aider.chat.history.md").read_bytes())
    first = collect([log], ledger=ledger)
    first.commit(ledger)
    last_id = ledger.get(str(log)).carry.session_id
    with open(log, "ab") as fh:
        fh.write(b"#### and the lint too  \n\nDone.\n")
    r = collect([log], ledger=ledger)
    assert list(r.sessions) == [("aider", last_id)]
    again = r.sessions[("aider", last_id)]
    assert again[: len(first.sessions[("aider", last_id)])] == first.sessions[("aider", last_id)]
    assert again[-1].text == "Done."


def test_bad_files_are_counted_by_reason_without_raising(tmp_path, ledger):
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "blob.jsonl").write_bytes(b"\x00\x01\x02" * 100)
    (tmp_path / "other.jsonl").write_bytes(b'{"hello": "world"}\n')
    (tmp_path / "dir.jsonl").mkdir()
    (tmp_path / "garbage.jsonl").write_bytes(b'{"session_id":"s","role":"user","text":"ok"}\nnot json\n')
    r = collect([tmp_path], ledger=ledger)
    assert {k: r.skipped[k] for k in ("empty", "binary", "unknown_format", "unreadable", "bad_json")} == {
        "empty": 1, "binary": 1, "unknown_format": 1, "unreadable": 1, "bad_json": 1,
    }
    assert r.turn_count == 1


NOBODY = 65534  # the conventional unprivileged uid/gid


def _collect_as_nobody(root: Path) -> tuple[list, int]:
    """`collect` in a forked child that has dropped root: it needs no interpreter, source or venv
    it could not reach (the clone may sit under a 0700 folder), only the already-imported code."""
    collect([root], host="jsonl")  # import anything collect loads lazily while still root
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop privileges, report, and leave without running pytest's exit hooks
        os.close(read_end)
        try:
            os.setgroups([])
            os.setresgid(NOBODY, NOBODY, NOBODY)
            os.setresuid(NOBODY, NOBODY, NOBODY)
            r = collect([root], host="jsonl")
            payload = {"skipped": sorted(r.skipped.items()), "turns": r.turn_count}
        except BaseException as exc:  # noqa: BLE001 - reported to the parent, which fails the test
            payload = {"error": repr(exc)}
        os.write(write_end, json.dumps(payload).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    payload = json.loads(data)
    assert "error" not in payload, payload["error"]
    return [tuple(kv) for kv in payload["skipped"]], payload["turns"]


def test_unreadable_files_and_dirs_are_counted():
    # A world-readable temp folder, so the unprivileged side can reach it wherever the clone lives.
    root = Path(tempfile.mkdtemp(prefix="memoir-unreadable-"))
    secret, closed = root / "secret.jsonl", root / "closed"
    try:
        root.chmod(0o755)
        secret.write_bytes(_line("s", "hidden"))
        closed.mkdir()
        (closed / "inside.jsonl").write_bytes(_line("s", "never seen"))
        (root / "open.jsonl").write_bytes(_line("s", "visible"))
        (root / "open.jsonl").chmod(0o644)
        # Mode 000 keeps out the owner when the suite runs unprivileged; as root, collect runs as nobody.
        secret.chmod(0o000)
        closed.chmod(0o000)
        if os.geteuid() == 0:
            skipped, turns = _collect_as_nobody(root)
        else:
            r = collect([root], host="jsonl")
            skipped, turns = sorted(r.skipped.items()), r.turn_count
    finally:
        closed.chmod(0o755)
        shutil.rmtree(root)
    assert (skipped, turns) == ([("unreadable", 1), ("unreadable_dir", 1)], 1)


def test_collect_leaves_host_logs_byte_and_mtime_identical(tmp_path, ledger):
    root = tmp_path / "logs"
    root.mkdir()
    for name in ("claude_session.jsonl", "codex_rollout.jsonl", "codex_legacy.jsonl", "generic.jsonl"):
        shutil.copy(FIXTURES / name, root / name)
    shutil.copy(FIXTURES / "sample.aider.chat.history.md", root / "x.aider.chat.history.md")
    before = _snapshot(root)
    r = collect([root], ledger=ledger)
    r.commit(ledger)
    collect([root], ledger=ledger)
    assert r.files_read == 5
    assert _snapshot(root) == before
    assert sorted(p.name for p in root.iterdir()) == sorted(p.name for p in before)


# Real logs (copied unchanged, MIT/Apache-2.0) and hand-written ones in the shape of logs whose
# licence did not allow copying; tests/fixtures/SOURCES.md says where each comes from.
REAL_LOGS = [Path(__file__).parent / "fixtures" / kind / host
             for kind in ("real", "real-shaped") for host in ("claude-code", "codex", "aider")]


def test_every_real_log_reads_without_crash_and_yields_turns(ledger):
    roots = [p for p in REAL_LOGS if p.is_dir()]
    r = collect(roots, ledger=ledger)
    files = sorted(p for root in roots for p in root.rglob("*") if p.is_file())
    assert len(files) == 14
    assert r.files_read == len(files)
    per_file = {t.source_file for turns in r.sessions.values() for t in turns}
    assert per_file == {str(p) for p in files}
    assert {h for h, _ in r.sessions} == {"aider", "claude-code", "codex"}
    assert not r.skipped["bad_json"] and not r.skipped["unknown_type"] and not r.skipped["unknown_format"]


def test_directory_named_like_a_log_given_explicitly_is_unreadable(tmp_path, ledger):
    (tmp_path / "dir.jsonl").mkdir()
    r = collect([tmp_path / "dir.jsonl"], ledger=ledger)
    assert (r.files_seen, r.skipped["unreadable"]) == (1, 1)


def test_a_log_swapped_for_a_link_after_the_walk_is_not_followed(tmp_path):
    """Issue 42: a file walked as a file and replaced by a link before it is opened (to a file outside
    the folders named) is counted `symlink_swapped` and not read; a link found as a link and allowed,
    and a file the user named, are still read through."""
    from collections import Counter

    from memoir.cards.collect import CollectReport, collect_file
    from memoir.cards.log_files import iter_candidates

    logs = tmp_path / "logs"
    logs.mkdir()
    line = {"type": "user", "sessionId": "s-1", "uuid": "u1", "timestamp": "2026-01-01T00:00:00Z",
            "cwd": "/w", "message": {"role": "user", "content": "secret plans"}}
    log = logs / "s-1.jsonl"
    log.write_text(json.dumps(line) + "\n")
    outside = tmp_path / "outside.jsonl"
    outside.write_text(json.dumps({**line, "message": {"role": "user", "content": "outside the logs"}}) + "\n")
    links: set[str] = set()
    (walked,) = list(iter_candidates([logs], "auto", Counter(), links=links))
    assert str(walked) not in links  # walked as a file: opened without following a link
    log.unlink()
    log.symlink_to(outside)  # the swap, between the walk and the read
    out = CollectReport()
    collect_file(walked, "auto", None, out, nofollow=str(walked) not in links)
    assert out.skipped["symlink_swapped"] == 1 and not out.sessions
    named: set[str] = set()
    (given,) = list(iter_candidates([log], "auto", Counter(), links=named))
    assert str(given) in named  # a file the user named is read wherever it points
    report = collect([log])
    assert report.sessions and report.skipped["symlink_swapped"] == 0
