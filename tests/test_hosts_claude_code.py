from pathlib import Path

from cards.hosts import claude_code
from cards.hosts.base import Carry

FIXTURE = Path(__file__).parent / "fixtures" / "hosts" / "claude_session.jsonl"


def _read(data: bytes | None = None, path: str = str(FIXTURE)):
    return claude_code.read(FIXTURE.read_bytes() if data is None else data, path)


def test_reads_conversation_with_tool_results_as_tool_turns():
    r = _read()
    kinds = [(t.role, t.kind) for t in r.turns]
    assert ("tool", "error") in kinds and ("tool", "tool_result") in kinds
    err = next(t for t in r.turns if t.kind == "error")
    assert err.tool_name == "Bash" and "ImportError" in err.text
    call = next(t for t in r.turns if t.kind == "tool_call")
    assert call.text.startswith('Bash {"command":"pytest -x"')


def test_split_assistant_lines_sharing_message_id_are_not_duplicated():
    r = _read()
    calls = [t for t in r.turns if t.kind == "tool_call"]
    assert [c.text.split()[1] for c in calls] == ['{"command":"pytest', '{"command":"pip']
    assert r.skipped["duplicate"] == 1


def test_progress_and_bookkeeping_lines_are_counted_not_read():
    r = _read()
    assert r.skipped["ignored_type"] == 3
    assert "bad_json" not in r.skipped


def test_summary_and_compact_boundary_become_summary_turns():
    kinds = [t.kind for t in _read().turns]
    assert kinds[0] == "summary"
    assert kinds[-2:] == ["summary", "summary"]


def test_sidechain_meta_and_injected_text():
    r = _read()
    assert [t.is_sidechain for t in r.turns if "Sub-agent" in t.text] == [True]
    assert r.skipped["meta"] == 1
    user = next(t for t in r.turns if t.role == "user")
    assert user.text == "pytest fails with ImportError"
    assert all("memoir-context" not in t.text and "Card c-123" not in t.text for t in r.turns)


def test_turn_metadata_session_seq_and_lines():
    r = _read()
    assert r.session_id == "0b5c1a2e-1111-4222-8333-944455556666"
    assert [t.seq for t in r.turns] == list(range(len(r.turns)))
    user = next(t for t in r.turns if t.role == "user")
    assert (user.cwd, user.git_branch, user.line, user.uuid) == ("/src/app", "main", 4, "u-1")
    assert user.timestamp is not None and user.timestamp.tzinfo is not None


def test_subagent_file_gets_its_own_session_id():
    path = "/h/.claude/projects/p/0b5c1a2e-1111-4222-8333-944455556666/subagents/agent-a88.jsonl"
    assert _read(path=path).session_id == "0b5c1a2e-1111-4222-8333-944455556666/agent-a88"


def test_garbage_and_truncated_last_line_are_counted():
    data = FIXTURE.read_bytes() + b"not json at all\n[1, 2]\n" + b'{"type":"user","message":{"content":"half'
    r = _read(data)
    assert (r.skipped["bad_json"], r.skipped["unknown_shape"], r.skipped["partial_line"]) == (1, 1, 1)
    assert r.consumed == len(data) - len(b'{"type":"user","message":{"content":"half')


def test_unknown_line_type_is_counted():
    r = _read(b'{"type":"hologram","sessionId":"x","uuid":"z"}\n')
    assert r.turns == [] and r.skipped["unknown_type"] == 1


def test_incremental_read_continues_seq_from_carry():
    lines = FIXTURE.read_bytes().splitlines(keepends=True)
    first = claude_code.read(b"".join(lines[:9]), str(FIXTURE))
    rest = claude_code.read(b"".join(lines[9:]), str(FIXTURE), start_line=first.lines, carry=first.carry)
    whole = _read()
    assert [t.seq for t in first.turns + rest.turns] == [t.seq for t in whole.turns]
    assert [t.line for t in first.turns + rest.turns] == [t.line for t in whole.turns]
    assert isinstance(rest.carry, Carry) and rest.session_id == whole.session_id


def test_slash_command_keeps_command_and_args_as_user_text():
    line = (
        b'{"type":"user","sessionId":"s","uuid":"u","message":{"role":"user","content":'
        b'"<command-message>review is running</command-message>\\n<command-name>/review</command-name>\\n'
        b'<command-args>PR 12</command-args>"}}\n'
    )
    assert [t.text for t in _read(line).turns] == ["/review PR 12"]
