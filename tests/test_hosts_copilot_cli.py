"""GitHub Copilot CLI event logs: the session folder's events.jsonl and the older flat file."""

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
