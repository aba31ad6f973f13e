"""GitHub Copilot CLI event logs: the session folder's events.jsonl and the older flat file."""

import json
from collections import Counter
from pathlib import Path

from memoir.cards.hosts import copilot_cli, detect_host

STATE = Path(__file__).parent / "fixtures" / "hosts" / "copilot" / "session-state"
EVENTS = STATE / "4b3c2d1e-0f9a-48b7-a6c5-d4e3f2a1b0c9" / "events.jsonl"
FLAT = STATE / "7e6d5c4b-3a29-4180-9f6e-5d4c3b2a1908.jsonl"


def _read(path: Path):
    return copilot_cli.read(path.read_bytes(), str(path))


def test_events_become_prompt_calls_results_and_reply_with_the_session_cwd():
    r = _read(EVENTS)
    assert r.session_id == "4b3c2d1e-0f9a-48b7-a6c5-d4e3f2a1b0c9"
    assert {t.cwd for t in r.turns} == {"/home/lee/src/billing"}
    assert {t.git_branch for t in r.turns} == {"main"}
    tools = [(t.kind, t.tool_name) for t in r.turns if t.role == "tool"]
    assert tools == [("error", "bash"), ("tool_result", "str_replace_editor"), ("tool_result", "bash")]
    assert "TypeError: Cannot read properties of undefined" in r.turns[[t.role for t in r.turns].index("tool")].text
    assert not r.skipped["unknown_type"]


def test_a_call_announced_in_the_reply_and_at_its_start_is_one_turn():
    r = _read(EVENTS)
    calls = [t.text for t in r.turns if t.kind == "tool_call"]
    assert len(calls) == 3 and calls[0].startswith("bash ") and '"npm test"' in calls[0]


def test_flat_session_strips_the_datetime_block_and_reads_abort_as_interruption():
    r = _read(FLAT)
    assert r.session_id == "7e6d5c4b-3a29-4180-9f6e-5d4c3b2a1908"
    users = [t.text for t in r.turns if t.role == "user"]
    assert users == ["Add a --dry-run flag to scripts/export.js", copilot_cli.INTERRUPTED]
    assert r.turns[0].cwd == "/home/lee/src/billing"


def test_detected_by_its_event_envelope_not_read_as_generic_jsonl():
    assert detect_host(str(EVENTS), EVENTS.read_bytes()) == "copilot-cli"
    assert detect_host("/x/whatever.jsonl", FLAT.read_bytes()) == "copilot-cli"


def test_an_event_without_data_is_counted():
    r = copilot_cli.read(b'{"type":"user.message","data":"hi","id":"e1","parentId":null}\n', "/x/events.jsonl")
    assert r.turns == [] and r.skipped["unknown_shape"] == 1


# --- tests/fixtures/copilot-cli: 1.0.60's events.jsonl and the older flat file, in their real shapes ---
SHAPES = Path(__file__).parent / "fixtures" / "copilot-cli" / "session-state"
V1_EVENTS = next(SHAPES.glob("*/events.jsonl"))
OLD_FLAT = next(SHAPES.glob("*.jsonl"))
READ_EVENTS = {"user.message", "assistant.message", "assistant.reasoning", "tool.execution_start",
               "tool.execution_complete", "permission.completed", "abort"}


def _events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_every_event_type_is_read_or_counted_by_name():
    for path in (V1_EVENTS, OLD_FLAT):
        kinds = {e["type"] for e in _events(path)}
        assert kinds <= READ_EVENTS | set(copilot_cli.SKIPPED_EVENTS), kinds - READ_EVENTS
        r = _read(path)
        assert not r.skipped["unknown_type"] and not r.skipped["empty_text"]
        skipped_here = Counter(copilot_cli.SKIPPED_EVENTS[e["type"]] for e in _events(path)
                               if e["type"] in copilot_cli.SKIPPED_EVENTS)
        skipped_here["permission_granted"] = sum(e["type"] == "permission.completed"
                                                 and e["data"]["result"]["kind"] == "approved" for e in _events(path))
        assert r.skipped == +skipped_here


def test_turns_cite_the_line_of_the_event_they_come_from():
    events = _events(V1_EVENTS)
    r = _read(V1_EVENTS)
    want = {"user": {"user.message", "abort"}, "assistant": {"assistant.message", "tool.execution_start"},
            "tool": {"tool.execution_complete", "permission.completed"}}
    assert all(events[t.line - 1]["type"] in want[t.role] for t in r.turns)


def test_init_is_read_with_the_request_it_expanded_into_and_makes_an_experience():
    from memoir.cards.segment import segment_with_skips

    r = _read(V1_EVENTS)
    first = r.turns[0]
    assert (first.role, first.kind, first.line) == ("user", "text", 4)
    assert first.text.startswith("/init\n\nAnalyze this codebase and create a .github/copilot-instructions.md")
    assert "current_datetime" not in first.text and "sql_tables" not in first.text
    experiences, skipped = segment_with_skips(r.turns)
    assert len(experiences) == 2 and not skipped


def test_workspace_from_session_start_or_else_the_system_prompt():
    assert {t.cwd for t in _read(V1_EVENTS).turns} == {"/home/ana/src/tides"}
    old = _read(OLD_FLAT)
    assert old.turns[0].line == 2  # the prompt comes before the system prompt that names the directory
    assert {t.cwd for t in old.turns} == {"/home/ana/src/tides"}


def test_a_non_zero_exit_code_is_a_failure_even_when_the_tool_reports_success():
    results = [(t.kind, t.text.splitlines()[-1]) for t in _read(V1_EVENTS).turns if t.tool_name == "bash" and t.role == "tool"]
    assert results == [("error", "<shellId: 0 completed with exit code 1>"), ("tool_result", "<shellId: 1 completed with exit code 0>")]
    old = [t.kind for t in _read(OLD_FLAT).turns if t.role == "tool"]
    assert old == ["error", "error"]  # `make lint` exited 2; the edit's old_str matched nothing


def test_a_denied_permission_is_the_calls_failed_outcome_and_reasoning_is_thinking():
    from memoir.cards.cues import is_tooling_error

    r = _read(V1_EVENTS)
    denied = next(t for t in r.turns if t.kind == "error" and t.tool_name == "create")
    assert "Create file" in denied.text and "rejected by the user" in denied.text and is_tooling_error(denied)
    assert [t.text for t in r.turns if t.kind == "thinking"] == ["Start with the layout of the repository."]
    assert r.turns[r.turns.index(denied) + 1].text == copilot_cli.INTERRUPTED
