import json
from pathlib import Path

from memoir.cards.hosts import claude_code
from memoir.cards.hosts.base import Carry

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


COMMANDS = Path(__file__).parent / "fixtures" / "hosts" / "claude_commands.jsonl"
REAL = Path(__file__).parent / "fixtures" / "real" / "claude-code"
SUBAGENT = REAL / "spotter__258c7280__subagents__agent-a881341.jsonl"


def _commands():
    return claude_code.read(COMMANDS.read_bytes(), str(COMMANDS))


def test_slash_commands_are_user_text_of_name_and_args_only():
    users = [t.text for t in _commands().turns if (t.role, t.kind) == ("user", "text")]
    assert users[0] == "/clear"
    assert users[1] == "/model opus"  # 2.1 writes it as a `local_command` system line
    assert "/review PR 12\nfocus on the export tests" in users  # a text block keeps its typed arguments
    assert users[-1] == "/compact"


def test_command_stdout_and_caveat_are_dropped():
    r = _commands()
    assert r.skipped["command_output"] == 3 and r.skipped["meta"] == 1
    assert not any("Caveat" in t.text or "Compacted" in t.text or "Set model" in t.text for t in r.turns)


def test_interruptions_stay_user_text_exactly():
    users = [t.text for t in _commands().turns if t.role == "user"]
    assert "[Request interrupted by user for tool use]" in users
    assert "[Request interrupted by user]" in users


def test_thinking_blocks_are_thinking_turns():
    r = claude_code.read((REAL / "spotter__short.jsonl").read_bytes(), "spotter__short.jsonl")
    thinking = [t for t in r.turns if t.kind == "thinking"]
    assert thinking and all(t.role == "assistant" for t in thinking)
    texts = {t.text for t in r.turns if t.kind == "text"}
    assert not texts & {t.text for t in thinking}


def test_exit_plan_mode_call_carries_the_whole_plan():
    path = REAL / "spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20__HEAD-TRUNCATED.jsonl"
    r = claude_code.read(path.read_bytes(), str(path))
    call = next(t for t in r.turns if t.kind == "tool_call" and t.tool_name == "ExitPlanMode")
    plan = json.loads(call.text.split(" ", 1)[1])["plan"]
    assert call.text.startswith("ExitPlanMode {") and plan.startswith("# Plan: Enrich TranscriptRenderer")
    assert len(call.text) > 3000 and "chars cut" not in call.text


def test_task_call_carries_the_subagents_description_and_prompt():
    path = REAL / "spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20__HEAD-TRUNCATED.jsonl"
    turns = claude_code.read(path.read_bytes(), str(path)).turns
    call = next(t for t in turns if (t.kind, t.tool_name) == ("tool_call", "Task"))
    args = json.loads(call.text.split(" ", 1)[1])
    assert args["description"] == "Explore Tmux module and test setup"
    assert args["prompt"].startswith("I need to understand:")


def test_todowrite_call_keeps_its_json_with_statuses():
    path = REAL / "dkimuson__1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
    turns = claude_code.read(path.read_bytes(), str(path)).turns
    calls = [t for t in turns if (t.kind, t.tool_name) == ("tool_call", "TodoWrite")]
    todos = [json.loads(c.text.split(" ", 1)[1])["todos"] for c in calls]
    assert {i["status"] for i in todos[-1]} == {"completed"}
    assert {i["status"] for i in todos[0]} >= {"in_progress"}


def test_real_subagent_file_is_a_sidechain_session_of_its_parent():
    data = SUBAGENT.read_bytes()
    nested = "/h/.claude/projects/p/258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a881341.jsonl"
    for path in (str(SUBAGENT), nested):  # named by its path, or (flattened copy) by its first line
        r = claude_code.read(data, path)
        assert r.session_id == "258c7280-ae70-4798-800f-63464d01a85d/agent-a881341"
        assert r.turns and all(t.is_sidechain and t.session_id == r.session_id for t in r.turns)
    first = r.turns[0]
    assert (first.role, first.kind) == ("user", "text")
    assert first.text.startswith("What is the output contract for Claude Code hooks")


def test_subagent_file_lines_without_the_flag_are_still_sidechain():
    line = b'{"type":"user","sessionId":"s","uuid":"u","message":{"role":"user","content":"look around"}}\n'
    r = claude_code.read(line, "/h/.claude/projects/p/s/subagents/agent-a1.jsonl")
    assert [(t.session_id, t.is_sidechain) for t in r.turns] == [("s/agent-a1", True)]


def test_tool_input_is_sanitized_decoded_not_as_its_json_text():
    """`password: …` on its own line of a multi-line command is a secret; in JSON it sits after `\\n`."""
    line = {"type": "assistant", "sessionId": "s", "uuid": "u1", "timestamp": "2026-12-01T10:00:00Z",
            "message": {"id": "m1", "role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                        "input": {"command": "cat > .env <<EOF\npassword: Xy9zHunter2k\nEOF\nmake test"}}]}}
    call = next(t for t in _read(json.dumps(line).encode() + b"\n").turns if t.kind == "tool_call")
    assert "Xy9zHunter2k" not in call.text
    assert call.text.startswith('Bash {"command":"cat > .env <<EOF\\npassword: [REDACTED:')


def test_a_long_output_is_never_cut_inside_a_secret():
    token = "ghp_" + "A1b2C3d4E5" * 3 + "F6g7H8"
    text = "ok " * 882 + token + " done\n" + "line\n" * 400  # the cut at 2666 falls 20 chars into the token
    lines = [{"type": "assistant", "sessionId": "s", "uuid": "u1", "timestamp": "2026-12-01T10:00:00Z",
              "message": {"id": "m1", "role": "assistant", "content": [
                  {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}}]}},
             {"type": "user", "sessionId": "s", "uuid": "u2", "timestamp": "2026-12-01T10:00:01Z",
              "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": text}]}}]
    out = next(t for t in _read(b"".join(json.dumps(o).encode() + b"\n" for o in lines)).turns if t.role == "tool")
    assert "chars cut" in out.text
    assert out.text.split("\n…[")[0].endswith("ok ")  # the cut moved back to where the token starts
    assert not any(token[i:i + 8] in out.text for i in range(len(token) - 8))


def test_a_cut_moves_off_a_secret_at_either_end_and_keeps_a_key_with_its_value():
    from memoir.cards.hosts.base import clip_whole
    from memoir.cards.sanitize import sanitize

    token = "ghp_" + "A1b2C3d4E5" * 3 + "F6g7H8"
    text = "ok " * 1000 + "DB_PASSWORD=Zq7vX9mR2kLpW4 " + "mid " * 500 + token + " end" + " fin" * 40
    clipped = clip_whole(text, 600)  # head cut at 400 (in the ok run), tail cut inside the token
    assert "chars cut" in clipped and not any(token[i:i + 8] in clipped for i in range(len(token) - 8))
    assert clipped.endswith(" end" + " fin" * 40)
    across = "ok " * 130 + "password: Zq7vX9mR2kLpW4" + " x" * 400  # the head cut falls inside the value
    kept = sanitize(clip_whole(across, 600), 4000)  # the default blob_cap
    assert "Zq7vX9" not in kept and "password: " in kept


def test_a_permission_mode_line_is_settings_counted_by_name_not_an_unknown_type():
    lines = [{"type": "permission-mode", "permissionMode": "default", "sessionId": "s"},
             {"type": "user", "sessionId": "s", "uuid": "u1", "timestamp": "2026-04-08T13:53:15Z", "cwd": "/w",
              "message": {"role": "user", "content": "why does the build fail?"}}]
    r = _read("\n".join(json.dumps(x) for x in lines).encode() + b"\n")
    assert r.skipped["ignored_type"] == 1 and "unknown_type" not in r.skipped
    assert [t.text for t in r.turns] == ["why does the build fail?"]
