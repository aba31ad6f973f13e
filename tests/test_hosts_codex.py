import json
from pathlib import Path

from memoir.cards.hosts import codex

FIXTURES = Path(__file__).parent / "fixtures" / "hosts"


def _read(name: str):
    path = FIXTURES / name
    return codex.read(path.read_bytes(), str(path))


def test_text_written_as_item_and_event_is_emitted_once():
    r = _read("codex_rollout.jsonl")
    users = [t.text for t in r.turns if t.role == "user"]
    assistant = [t.text for t in r.turns if (t.role, t.kind) == ("assistant", "text")]
    thinking = [t.text for t in r.turns if t.kind == "thinking"]
    assert users == ["cargo build fails on the serde derive"]
    assert assistant == ["Let me build it."]
    assert thinking == ["Checking Cargo features"]


def test_developer_and_environment_context_are_not_turns():
    r = _read("codex_rollout.jsonl")
    assert not any("permissions" in t.text or "environment_context" in t.text for t in r.turns)
    assert r.skipped["injected"] == 1


def test_failed_function_output_is_error_and_tools_are_named():
    r = _read("codex_rollout.jsonl")
    tools = [(t.kind, t.tool_name) for t in r.turns if t.role == "tool"]
    assert tools == [("error", "exec_command"), ("tool_result", "apply_patch")]
    calls = [t for t in r.turns if t.kind == "tool_call"]
    assert calls[0].text == 'exec_command {"cmd":"cargo build"}'
    assert calls[-1].tool_name == "web_search" and "serde derive feature" in calls[-1].text


def test_session_meta_sets_session_cwd_branch_and_compaction_is_summary():
    r = _read("codex_rollout.jsonl")
    assert r.session_id == "019c8a4c-0000-7000-8000-000000000001"
    assert {(t.cwd, t.git_branch) for t in r.turns} == {("/src/api", "feature/x")}
    assert r.turns[-1].kind == "summary"
    assert r.skipped["ignored_type"] == 2  # token_count, task_complete


def test_legacy_rollout_reads_bare_items():
    r = _read("codex_legacy.jsonl")
    assert r.session_id == "cf4def41-0000-4000-8000-000000000002"
    assert [(t.role, t.kind) for t in r.turns] == [
        ("user", "text"),
        ("assistant", "thinking"),
        ("assistant", "tool_call"),
        ("tool", "error"),
        ("assistant", "tool_call"),
        ("tool", "tool_result"),
        ("assistant", "text"),
    ]
    assert r.turns[3].text.startswith("rg: the literal")
    assert r.turns[0].cwd == "/home/user/viewer" and r.turns[0].git_branch == "main"
    assert r.turns[0].timestamp is not None
    assert r.skipped["ignored_type"] == 2


def test_session_id_falls_back_to_rollout_file_name():
    data = b'{"timestamp":"2026-02-23T11:40:29Z","type":"event_msg","payload":{"type":"context_compacted"}}\n'
    r = codex.read(data, "/x/rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl")
    assert r.session_id == "019c8a4c-ed82-79a1-aa28-7738fc5ab61a"


def test_bad_lines_are_counted_by_reason():
    data = b'garbage\n{"timestamp":"t","type":"mystery","payload":{}}\n"str"\n{"timestamp":"t","type":"resp'
    r = codex.read(data, "/x/rollout-a.jsonl")
    assert dict(r.skipped) == {"bad_json": 1, "unknown_type": 1, "unknown_shape": 1, "partial_line": 1}
    assert r.turns == []


def test_output_text_and_failed():
    assert codex.output_text_and_failed("Exit code: 0\nOutput:\nok") == ("Exit code: 0\nOutput:\nok", False)
    assert codex.output_text_and_failed("error: patch did not apply")[1] is True
    assert codex.output_text_and_failed({"content": "boom", "success": False}) == ("boom", True)


def test_update_plan_keeps_its_whole_arguments_json_with_statuses():
    r = _read("codex_commands.jsonl")
    call = next(t for t in r.turns if t.kind == "tool_call" and t.tool_name == "update_plan")
    args = json.loads(call.text.split(" ", 1)[1])
    assert len(call.text) > 3000 and len(args["plan"]) == 15
    assert {step["status"] for step in args["plan"]} == {"completed"}


def test_reasoning_summaries_are_thinking_never_text():
    r = _read("codex_commands.jsonl")
    assert [(t.role, t.kind, t.text) for t in r.turns if "Planning" in t.text] == [
        ("assistant", "thinking", "**Planning the split**")]


def test_interrupted_turn_is_the_interruption_user_text():
    r = _read("codex_commands.jsonl")
    users = [t.text for t in r.turns if t.role == "user"]
    assert users == ["split the fare calculator into modules", "[Request interrupted by user]",
                     "skip the tests, just compact"]
    assert r.skipped["ignored_type"] == 1  # a turn aborted because it was replaced is no interruption


def test_compaction_written_twice_is_one_summary_turn():
    r = _read("codex_commands.jsonl")
    summaries = [t for t in r.turns if t.kind == "summary"]
    assert [t.text for t in summaries] == ["Split fares/calc.py into one module per rule family; tests not run yet."]
    assert r.turns[-1] is summaries[0]


def test_function_call_arguments_are_decoded_then_sanitized():
    """Codex arguments are a JSON string holding JSON: two escapes deep, the secret is still found."""
    args = json.dumps({"cmd": ["bash", "-lc", "cat > .env <<EOF\npassword: Xy9zHunter2k\nEOF"]})
    line = {"timestamp": "2026-12-01T10:00:00Z", "type": "response_item",
            "payload": {"type": "function_call", "name": "exec_command", "arguments": args, "call_id": "c1"}}
    turns = codex.read(json.dumps(line).encode() + b"\n", "rollout-x.jsonl").turns
    assert len(turns) == 1 and "Xy9zHunter2k" not in turns[0].text and "[REDACTED:" in turns[0].text
