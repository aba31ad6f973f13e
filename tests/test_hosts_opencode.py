"""OpenCode storage: a session gathered from its session, message and part files."""

import shutil
from pathlib import Path

from memoir.cards.collect import collect
from memoir.cards.hosts import opencode

STORAGE = Path(__file__).parent / "fixtures" / "hosts" / "opencode" / "storage"
SESSION = STORAGE / "session" / "4d3c2b1a09f8e7d6" / "ses_5a4b3c2d1e0fXyZ.json"


def test_assembled_session_reads_text_reasoning_and_tool_parts_in_message_order():
    r = opencode.read(opencode.assemble(str(SESSION)), str(SESSION))
    assert r.session_id == "ses_5a4b3c2d1e0fXyZ"
    kinds = [(t.role, t.kind) for t in r.turns]
    assert kinds[:4] == [("user", "text"), ("assistant", "thinking"), ("assistant", "tool_call"), ("tool", "tool_result")]
    assert {t.cwd for t in r.turns} == {"/home/lee/src/notes"}
    assert r.turns[2].text.startswith("bash ") and "cargo test slug" in r.turns[2].text
    assert "FAILED" in r.turns[3].text
    assert r.turns[-1].text.startswith("Fixed: `slugify`")
    assert r.skipped["ignored_type"] == 2  # step-start, step-finish


def test_a_failed_tool_state_is_an_error_and_a_running_one_waits():
    doc = (b'{"session": {"id": "ses_x"}, "messages": [{"id": "msg_1", "role": "assistant", "time": {"created": 1},'
           b' "parts": [{"type": "tool", "tool": "bash", "state": {"status": "error", "input": {"command": "make"},'
           b' "error": "make: *** No rule to make target"}}, {"type": "tool", "tool": "bash",'
           b' "state": {"status": "running", "input": {"command": "sleep 9"}}}]}]}')
    r = opencode.read(doc, "/s/session/p/ses_x.json")
    assert [(t.kind, t.text[:4]) for t in r.turns if t.role == "tool"] == [("error", "make")]
    assert r.skipped["tool_not_finished"] == 1


def test_collect_reads_the_session_file_and_counts_message_and_part_files_as_its_parts(tmp_path):
    shutil.copytree(STORAGE, tmp_path / "storage")
    out = collect([tmp_path / "storage"])
    assert list(out.sessions) == [("opencode", "ses_5a4b3c2d1e0fXyZ")]
    assert out.skipped["session_part"] == 13
    assert not out.skipped["unknown_format"]


def test_a_session_whose_messages_are_gone_reads_as_empty(tmp_path):
    session = tmp_path / "storage" / "session" / "p" / "ses_lonely.json"
    session.parent.mkdir(parents=True)
    session.write_text('{"id": "ses_lonely", "projectID": "p", "directory": "/w"}')
    r = opencode.read(opencode.assemble(str(session)), str(session))
    assert r.turns == []
