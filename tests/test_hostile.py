"""Hostile files beside good sessions: each is counted by reason and the batch goes on (issue 17).

memoir may not fix a host log, so a file or line that stopped one run would stop every run after
it. The good sessions must give exactly the cards they give alone.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from memoir.cards.collect import collect
from memoir.cards.hosts.base import Carry, SessionReader
from memoir.cards.hosts.detect import detect_host, undetected_reason
from memoir.cards.store import CardStore
from memoir.flows.cli.main import cli
from tests.nobody import NOBODY, as_nobody


FIXTURES = Path(__file__).parent / "fixtures"
# Real-shaped sessions of three hosts (tests/fixtures/SOURCES.md); each gives cards on its own.
GOOD = (
    "second_set/claude-code/-home-jonas-src-quire",
    "second_set/claude-code/-home-lena-src-fare-engine",
    "second_set/codex/2026/11/27",
    "second_set/aider/quire",
)
BIG_LINE = 50 * 1024 * 1024
PNG_HEAD = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00\x00\x00\x01\x00\x08\x06\x00\x00\x00"


def _claude(sid: str, n: int, role: str, content, **extra) -> dict:
    message = {"role": role, "content": content}
    if role == "assistant":
        message["id"] = f"msg_{sid}_{n}"
    return {"parentUuid": None, "isSidechain": False, "cwd": "/home/dev/toy", "sessionId": sid, "version": "2.1.0",
            "gitBranch": "main", "type": role, "message": message, "uuid": f"{sid}-{n}",
            "timestamp": f"2026-11-20T09:00:{n:02d}Z", **extra}


def _line(obj: dict) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def _hello(sid: str) -> list[bytes]:
    """A greeting and its answer: turns a reader must keep, and nothing a card is made of."""
    return [_line(_claude(sid, 1, "user", "hi")), _line(_claude(sid, 2, "assistant", [{"type": "text", "text": "Hello! What shall we work on?"}]))]


def _plant(root: Path, outside: Path) -> Counter:
    """Write one of each hostile file under `root`; returns the skip counts a run must report."""
    hostile = root / "hostile"
    hostile.mkdir()
    deep = b'{"x": ' + b"[" * 10_000 + b"\n"
    hello = _hello("s-deep")
    (hostile / "deep.jsonl").write_bytes(hello[0] + b"[" * 10_000 + b"\n" + deep + hello[1])
    (hostile / "nul.jsonl").write_bytes(b'{"type": "user", "\x00\x00"}\n' + b"".join(_hello("s-nul")))
    (hostile / "junk.jsonl").write_bytes(b"[1,2,3]\n" + b"".join(_hello("s-junk")))
    with open(hostile / "big.jsonl", "wb") as fh:
        first, second = _hello("s-big")
        fh.write(first)
        fh.write(b'{"type": "blob", "sessionId": "s-big", "data": "' + b"A" * BIG_LINE + b'"}\n')
        fh.write(second)
    os.mkfifo(hostile / "pipe.jsonl")
    os.symlink("loop.jsonl", hostile / "loop.jsonl")
    os.symlink("..", hostile / "up")  # a folder loop: never walked twice
    (outside / "elsewhere.jsonl").write_bytes(b"".join(_hello("s-outside")))
    os.symlink(outside / "elsewhere.jsonl", hostile / "out.jsonl")
    os.symlink(outside, hostile / "out-dir")
    (hostile / "utf16.jsonl").write_bytes(b"".join(_hello("s-utf16")).decode().encode("utf-16"))
    latin = _line(_claude("s-latin", 1, "user", "ça marche, café")).decode().replace("\\u00e7", "ç").replace("\\u00e9", "é")
    (hostile / "latin1.jsonl").write_bytes(latin.encode("latin-1") + _hello("s-latin")[1])
    (hostile / "shut.jsonl").write_bytes(b"".join(_hello("s-shut")))
    (hostile / "shut.jsonl").chmod(0o000)
    (hostile / "empty.jsonl").write_bytes(b"")
    (hostile / "image.jsonl").write_bytes(PNG_HEAD + bytes(range(256)) * 8)
    return Counter({
        "bad_line_too_deep": 2,  # deep.jsonl: the bare `[[[…` line and the `{"x": [[[…` one
        "bad_json": 1, "unknown_shape": 1,  # nul.jsonl's NUL line, junk.jsonl's `[1,2,3]`
        "bad_line_too_large": 1,  # big.jsonl's 50 MB line: past the 16 MiB line cap, never decoded (issue 26)
        "special_file": 1, "symlink_loop": 1, "symlink_outside": 2, "utf16": 1, "bad_encoding": 1,
        "unreadable": 1, "empty": 1, "binary": 1,
    })


def _cards(home: Path) -> dict[str, tuple]:
    cards, problems = CardStore(home / "cards", home / "state").load_all()
    assert not problems
    return {c.id: (c.title, c.background, c.goal, c.evidence, c.conclusion, c.counterexamples, c.follow_up,
                   c.sources, c.status) for c in cards}


def _run(home: Path, logs: Path, env: dict[str, str]) -> tuple[int, dict]:
    result = CliRunner().invoke(cli, ["--home", str(home), "run", "--logs", str(logs), "--no-index", "--json"], env=env)
    if result.exit_code != 0:
        return result.exit_code, {"output": result.output, "exception": repr(result.exception)}
    return result.exit_code, json.loads(result.output)


@pytest.fixture
def base():
    """A world-readable temp folder, so an unprivileged run can reach it wherever the clone lives."""
    path = Path(tempfile.mkdtemp(prefix="memoir-hostile-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def test_hostile_files_are_counted_and_the_good_sessions_give_the_same_cards(base):
    logs, outside = base / "logs", base / "outside"
    outside.mkdir()
    for rel in GOOD:
        shutil.copytree(FIXTURES / rel, logs / rel.replace("/", "__"))
    env = {"XDG_CONFIG_HOME": str(base / "no-config"), "MEMOIR_CONFIG": ""}
    code, alone = _run(base / "home-alone", logs, env)
    assert code == 0, alone
    expected = _plant(logs, outside)
    home = base / "home-hostile"
    home.mkdir()
    if os.geteuid() == 0:
        os.chown(home, NOBODY, NOBODY)
        runs = as_nobody(lambda: [_run(home, logs, env) for _ in range(2)])
    else:
        runs = [_run(home, logs, env) for _ in range(2)]
    assert len(runs) == 2, runs
    (code, mixed), (again_code, again) = runs
    assert code == 0, mixed
    # and the next run too: a host log is never fixed, so whatever one run meets, every run meets
    assert again_code == 0 and not again["cards"], again
    assert alone["cards"]["new"] >= 3
    assert _cards(home) == _cards(base / "home-alone")
    skipped = Counter({k: v for k, v in mixed["skipped"].items() if not k.startswith("no_card_")})
    skipped.subtract({k: v for k, v in alone["skipped"].items() if not k.startswith("no_card_")})
    assert +skipped == expected
    # The lines around each bad one were read: deep, nul, junk, big and latin-1 each add a session.
    assert mixed["sessions"] == alone["sessions"] + 5
    assert mixed["files_read"] == alone["files_read"] + 5
    assert mixed["files_seen"] == alone["files_seen"] + 10  # links out and the loop are never candidates


def test_detection_passes_over_junk_nul_and_deep_first_lines():
    record = _line(_claude("s", 1, "user", "hi"))
    for first in (b"[1,2,3]\n", b"\x00\x00\x00\n", b"[" * 10_000 + b"\n", b'{"a": ' + b"[" * 10_000 + b"\n", b"not json\n"):
        assert detect_host("x.jsonl", first + record) == "claude-code", first[:12]
    assert detect_host("x.jsonl", b"[1,2,3]\n" * 3) is None


@pytest.mark.parametrize("head, reason", [
    (PNG_HEAD + bytes(range(256)), "binary"),
    (b"".join(_hello("s")).decode().encode("utf-16"), "utf16"),
    (b"".join(_hello("s")).decode().encode("utf-16-le"), "utf16"),  # no BOM
    (b"".join(_hello("s")).decode().encode("utf-16-be"), "utf16"),
    (b"[1,2,3]\nnotes\n", "unknown_format"),
])
def test_a_file_without_a_record_is_named_for_what_it_is(head, reason):
    assert detect_host("x.jsonl", head) is None
    assert undetected_reason(head) == reason


def test_bad_lines_are_counted_and_the_lines_around_them_read(tmp_path):
    lines = [_line(_claude("s-mixed", n, "user", f"question {n}")) for n in range(1, 6)]
    latin = b'{"type": "user", "sessionId": "s-mixed", "message": {"role": "user", "content": "caf\xe9"}}\n'
    bad = [b"[1,2,3]\n", b'{"a": "\x00"}\n', b"[" * 10_000 + b"\n", latin]
    log = tmp_path / "mixed.jsonl"
    log.write_bytes(b"".join(x for pair in zip(bad + [b""], lines) for x in pair))
    r = collect([tmp_path])
    assert [t.text for t in r.sessions[("claude-code", "s-mixed")]] == [f"question {n}" for n in range(1, 6)]
    assert {k: r.skipped[k] for k in ("unknown_shape", "bad_json", "bad_line_too_deep", "bad_encoding")} == {
        "unknown_shape": 1, "bad_json": 1, "bad_line_too_deep": 1, "bad_encoding": 1}
    assert r.files_read == 1


class _Strict(SessionReader):
    """A reader that fails on a shape it never expected, as a real reader bug would."""

    host = "jsonl"

    def line(self, obj: dict, line: int) -> None:
        self.add_turn(None, line, "user", "text", obj["text"].upper())


def test_a_line_a_reader_did_not_foresee_is_counted_and_the_next_read():
    reader = _Strict("x.jsonl", Carry(), "s")
    reader.read_lines([(1, {"text": "one"}), (2, {"other": 1}), (3, {"text": 3}), (4, {"text": "four"})])
    assert [t.text for t in reader.turns] == ["ONE", "FOUR"]
    assert reader.skipped == Counter({"bad_line_KeyError": 1, "bad_line_AttributeError": 1})


def test_links_out_of_the_named_folders_are_read_only_when_asked(tmp_path):
    logs, outside = tmp_path / "logs", tmp_path / "outside"
    (logs / "project").mkdir(parents=True)
    (outside / "more").mkdir(parents=True)
    (logs / "project" / "s-in.jsonl").write_bytes(b"".join(_hello("s-in")))
    (outside / "s-out.jsonl").write_bytes(b"".join(_hello("s-out")))
    (outside / "more" / "s-far.jsonl").write_bytes(b"".join(_hello("s-far")))
    os.symlink(outside / "s-out.jsonl", logs / "project" / "linked.jsonl")
    os.symlink(outside / "more", logs / "more")
    os.symlink(logs / "project" / "s-in.jsonl", logs / "again.jsonl")  # inside: the same file, read once
    os.symlink(logs, logs / "project" / "up")  # a folder loop
    os.symlink(outside / "gone.jsonl", logs / "dangling.jsonl")

    plain = collect([logs])
    assert sorted(sid for _, sid in plain.sessions) == ["s-in"]
    assert len(plain.sessions[("claude-code", "s-in")]) == 2
    assert {k: plain.skipped[k] for k in ("symlink_outside", "symlink_broken")} == {"symlink_outside": 2, "symlink_broken": 1}

    followed = collect([logs], follow_symlinks=True)
    assert sorted(sid for _, sid in followed.sessions) == ["s-far", "s-in", "s-out"]
    assert all(len(turns) == 2 for turns in followed.sessions.values())
    assert followed.skipped["symlink_outside"] == 0
    # Named by the user, a link is read: the folders given are the user's choice.
    assert sorted(sid for _, sid in collect([logs / "project" / "linked.jsonl"]).sessions) == ["s-out"]


def test_follow_symlinks_is_a_setting_and_a_run_flag(tmp_path):
    from memoir.cards.config import ConfigError, load_settings

    assert load_settings(home=tmp_path, env={}).follow_symlinks is False
    assert load_settings(home=tmp_path, env={"MEMOIR_FOLLOW_SYMLINKS": "true"}).follow_symlinks is True
    assert load_settings(home=tmp_path, env={"MEMOIR_FOLLOW_SYMLINKS": "0"}).follow_symlinks is False
    with pytest.raises(ConfigError, match="follow_symlinks"):
        load_settings(home=tmp_path, env={"MEMOIR_FOLLOW_SYMLINKS": "sometimes"})
    logs, outside = tmp_path / "logs", tmp_path / "outside"
    logs.mkdir()
    outside.mkdir()
    (outside / "s-out.jsonl").write_bytes(b"".join(_hello("s-out")))
    os.symlink(outside / "s-out.jsonl", logs / "linked.jsonl")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "no-config"), "MEMOIR_CONFIG": ""}
    code, plain = _run(tmp_path / "home-plain", logs, env)
    assert (code, plain["sessions"], plain["skipped"].get("symlink_outside")) == (0, 0, 1)
    said = CliRunner().invoke(cli, ["--home", str(tmp_path / "home-plain"), "run", "--logs", str(logs), "--no-index"], env=env)
    assert "1 symlink_outside" in said.output and "--follow-symlinks" in said.output
    result = CliRunner().invoke(cli, ["--home", str(tmp_path / "home-follow"), "run", "--logs", str(logs),
                                      "--no-index", "--json", "--follow-symlinks"], env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["sessions"] == 1


def test_folders_nested_past_the_stack_limit_are_walked(tmp_path):
    deepest = tmp_path / "logs"
    folders = [deepest]
    for _ in range(1_200):  # os.walk recurses once per level: past ~1000 it raised RecursionError
        deepest = deepest / "d"
        folders.append(deepest)
    for folder in folders:
        folder.mkdir()
    try:
        (deepest / "s-deep.jsonl").write_bytes(b"".join(_hello("s-deep")))
        (tmp_path / "logs" / "s-top.jsonl").write_bytes(b"".join(_hello("s-top")))
        r = collect([tmp_path / "logs"])
        assert sorted(sid for _, sid in r.sessions) == ["s-deep", "s-top"]
    finally:  # shutil.rmtree recurses too
        (deepest / "s-deep.jsonl").unlink(missing_ok=True)
        for folder in reversed(folders[1:]):
            folder.rmdir()


def test_a_tool_output_nested_too_deeply_stays_text():
    from memoir.cards.hosts import codex

    output = '{"metadata": {"exit_code": 1}, "output": ' + "[" * 5_000 + "}"
    lines = [
        {"timestamp": "2026-11-20T09:00:00Z", "type": "session_meta", "payload": {"id": "s1", "cwd": "/home/dev/toy"}},
        {"timestamp": "2026-11-20T09:00:01Z", "type": "response_item",
         "payload": {"type": "function_call", "name": "shell", "arguments": '{"command": ["ls"]}', "call_id": "c1"}},
        {"timestamp": "2026-11-20T09:00:02Z", "type": "response_item",
         "payload": {"type": "function_call_output", "call_id": "c1", "output": output}},
    ]
    r = codex.read(b"".join(_line(o) for o in lines), "rollout-x.jsonl")
    assert not r.skipped
    assert [t.kind for t in r.turns] == ["tool_call", "tool_result"]
    assert r.turns[1].text.startswith('{"metadata": {"exit_code": 1}')


def test_a_lone_surrogate_escape_does_not_stop_the_run(tmp_path):
    # `"\ud800"` is valid JSON but no UTF-8 can hold it: it failed the card's hash and stopped every run.
    sid = "s-surrogate"
    lines = [
        _claude(sid, 1, "user", "pytest fails with ModuleNotFoundError: No module named 'yaml' \ud800"),
        _claude(sid, 2, "assistant", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pip install pyyaml"}}]),
        _claude(sid, 3, "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "Successfully installed PyYAML-6.0.2 \udfff"}]),
        _claude(sid, 4, "assistant", [{"type": "text", "text": "PyYAML was missing from requirements.txt; adding pyyaml there fixes the ModuleNotFoundError \U0001f600."}]),
    ]
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "s.jsonl").write_bytes(b"".join(_line(o) for o in lines))
    assert b"\\ud800" in (logs / "s.jsonl").read_bytes() and b"\\ud83d\\ude00" in (logs / "s.jsonl").read_bytes()
    code, summary = _run(tmp_path / "home", logs, {"XDG_CONFIG_HOME": str(tmp_path / "no-config"), "MEMOIR_CONFIG": ""})
    assert code == 0, summary
    assert summary["cards"] == {"new": 1}
    (card,) = (tmp_path / "home" / "cards").glob("*.md")
    text = card.read_text(encoding="utf-8")
    assert "'yaml' \ufffd" in text and "\U0001f600" in text  # the lone one replaced, the pair kept


def test_a_lone_surrogate_inside_decoded_call_arguments_and_outputs_is_replaced(tmp_path):
    lines = [
        {"timestamp": "2026-11-20T09:00:00Z", "type": "session_meta", "payload": {"id": "s1", "cwd": "/home/dev/toy"}},
        {"timestamp": "2026-11-20T09:00:01Z", "type": "response_item",
         "payload": {"type": "function_call", "name": "shell", "arguments": '{"command": ["echo", "\\ud800"]}', "call_id": "c1"}},
        {"timestamp": "2026-11-20T09:00:02Z", "type": "response_item",
         "payload": {"type": "function_call_output", "call_id": "c1",
                     "output": '{"output": "\\udfff password: hunter2hunter2", "metadata": {"exit_code": 0}}'}},
    ]
    log = tmp_path / "rollout-2026-11-20T09-00-00-s1.jsonl"
    log.write_bytes(b"".join(_line(o) for o in lines))
    (turns,) = collect([log]).sessions.values()
    assert [t.kind for t in turns] == ["tool_call", "tool_result"]
    for turn in turns:
        turn.text.encode("utf-8")  # raised UnicodeEncodeError for the lone surrogate
        assert "\ufffd" in turn.text



def test_timestamps_no_clock_can_show_do_not_stop_the_run(tmp_path):
    # 9999-12-31 at UTC-14 is past the last datetime once in UTC: drafting the card raised OverflowError.
    logs = tmp_path / "logs"
    logs.mkdir()
    for sid, ts in (("s-late", "9999-12-31T23:59:59-14:00"), ("s-early", "0001-01-01T00:00:00+14:00")):
        lines = [
            _claude(sid, 1, "user", "pytest fails with ModuleNotFoundError: No module named 'yaml'"),
            _claude(sid, 2, "assistant", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pip install pyyaml"}}]),
            _claude(sid, 3, "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "Successfully installed PyYAML-6.0.2"}]),
            _claude(sid, 4, "assistant", [{"type": "text", "text": "PyYAML was missing from requirements.txt; adding pyyaml there fixes the ModuleNotFoundError."}]),
        ]
        (logs / f"{sid}.jsonl").write_bytes(b"".join(_line(dict(o, timestamp=ts)) for o in lines))
    code, summary = _run(tmp_path / "home", logs, {"XDG_CONFIG_HOME": str(tmp_path / "no-config"), "MEMOIR_CONFIG": ""})
    assert code == 0, summary
    assert (summary["sessions"], summary["cards"]) == (2, {"new": 1})  # one story told twice: one card


def _codex(n: int, payload: dict, kind: str = "response_item") -> dict:
    return {"timestamp": f"2026-11-20T09:00:{n:02d}Z", "type": kind, "payload": payload}


def test_brackets_deeper_than_the_parser_in_calls_and_outputs_do_not_stop_the_run(tmp_path):
    # A command may print `[[[[…` and a model may send it back: every later json.loads of such
    # text (exit codes, commands, plans, edits) raised RecursionError and stopped every run.
    deep = "[" * 1_500

    def failed_build(n: int, call: str) -> list[dict]:
        return [_codex(n, {"type": "function_call", "name": "exec_command", "arguments": '{"cmd": "cargo build"}', "call_id": call}),
                _codex(n + 1, {"type": "function_call_output", "call_id": call,
                               "output": "Process exited with code 101\nOutput:\nerror: cannot find derive macro `Serialize` in this scope"})]

    lines = [
        _codex(0, {"id": "s-brackets", "cwd": "/home/dev/toy"}, "session_meta"),
        _codex(1, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "cargo build fails: cannot find derive macro `Serialize`"}]}),
        _codex(2, {"type": "function_call", "name": "exec_command", "arguments": '{"cmd": ' + deep + '"gh pr create --body x"]}', "call_id": "c1"}),
        _codex(3, {"type": "function_call_output", "call_id": "c1", "output": '["x", ' + deep}),
        _codex(4, {"type": "function_call", "name": "update_plan", "arguments": '{"plan": ' + deep + "}", "call_id": "c2"}),
        _codex(5, {"type": "function_call_output", "call_id": "c2", "output": '{"output": ' + deep + ', "metadata": {"exit_code": 0}}'}),
        *failed_build(6, "c3"),
        _codex(8, {"type": "custom_tool_call", "name": "apply_patch", "call_id": "c4", "input": '{"path": ' + deep}),
        _codex(9, {"type": "custom_tool_call_output", "call_id": "c4", "output": "Success. Updated the following files:\nM Cargo.toml"}),
        *failed_build(10, "c5"),  # the same error after a change: `tried <change> → still …` describes it
        _codex(12, {"type": "function_call", "name": "exec_command", "arguments": '{"cmd": "cargo build"}', "call_id": "c6"}),
        _codex(13, {"type": "function_call_output", "call_id": "c6", "output": "Process exited with code 0\nOutput:\nFinished dev profile"}),
    ]
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "rollout-2026-11-20T09-00-00-s-brackets.jsonl").write_bytes(b"".join(_line(o) for o in lines))
    code, summary = _run(tmp_path / "home", logs, {"XDG_CONFIG_HOME": str(tmp_path / "no-config"), "MEMOIR_CONFIG": ""})
    assert code == 0, summary
    assert summary["turns"] == 13 and summary["cards"] == {"new": 1}
    assert not [k for k in summary["skipped"] if k.startswith(("bad_", "file_error"))]


@pytest.mark.parametrize("answer", ["[" * 5_000, '{"conclusion": ' + "[" * 5_000])
def test_a_model_answer_nested_too_deeply_is_an_invalid_output(answer):
    from memoir.cards.distill.errors import InvalidOutput
    from memoir.cards.distill.llm_slots import parse_slots
    from tests.openai_server import content, raw
    from tests.test_distill_llm import run as distill

    with pytest.raises(InvalidOutput) as err:
        parse_slots(answer)
    assert err.value.kind == "invalid_format"
    for step in (content(answer), raw(b'{"choices": ' + answer.encode())):
        out, _ = distill([step])
        # Junk: counted, the rule card decided as the rule stage alone decides it, the batch asked again later.
        assert out.counts["invalid_format"] == 1 and out.cards[0].quality == "rule" and out.requeue


def test_a_file_name_that_is_not_utf8_is_counted_and_the_others_read(tmp_path):
    # The name reached the card's sources, which YAML could not encode: every run stopped there.
    logs = tmp_path / "logs"
    lines = [
        _claude("s-odd", 1, "user", "pytest fails with ModuleNotFoundError: No module named 'yaml'"),
        _claude("s-odd", 2, "assistant", [{"type": "text", "text": "PyYAML was missing from requirements.txt; adding pyyaml there fixes the ModuleNotFoundError."}]),
    ]
    odd = os.fsencode(logs) + b"/proj\xe9ct"
    os.makedirs(odd)
    with open(odd + b"/s\xff.jsonl", "wb") as fh:
        fh.write(b"".join(_line(o) for o in lines))
    (logs / "s-good.jsonl").write_bytes(b"".join(_line(dict(o, sessionId="s-good")) for o in lines))
    code, summary = _run(tmp_path / "home", logs, {"XDG_CONFIG_HOME": str(tmp_path / "no-config"), "MEMOIR_CONFIG": ""})
    assert code == 0, summary
    assert (summary["sessions"], summary["cards"], summary["skipped"].get("non_utf8_name")) == (1, {"new": 1}, 1)
