"""Cline / Roo Code task folders: the API conversation history first, the UI messages alone."""

import json
import shutil
from pathlib import Path

from memoir.cards.collect import collect
from memoir.cards.hosts import cline, detect_host
from memoir.cards.loop import walk
from memoir.cards.segment import segment_session

TASKS = Path(__file__).parent / "fixtures" / "hosts" / "cline" / "tasks"
API = TASKS / "1759300000000" / "api_conversation_history.json"
UI_ONLY = TASKS / "1759400000000" / "ui_messages.json"


def _read(path: Path):
    return cline.read(path.read_bytes(), str(path))


def test_xml_tools_in_replies_and_bracketed_results_become_calls_and_results():
    r = _read(API)
    assert r.session_id == "1759300000000"
    calls = [(t.tool_name, t.text) for t in r.turns if t.kind == "tool_call"]
    assert [c[0] for c in calls] == ["execute_command", "replace_in_file", "execute_command"]
    assert '"go build ./..."' in calls[0][1]
    results = [(t.kind, t.tool_name) for t in r.turns if t.role == "tool"]
    assert results[0] == ("error", "execute_command")  # `exit status 1`... read as failed by its words
    assert results[-1] == ("tool_result", "execute_command")


def test_task_tags_and_environment_details_are_dropped_but_the_cwd_is_kept():
    r = _read(API)
    first = r.turns[0]
    assert first.role == "user" and first.text == "go build fails: undefined: config.LoadEnv in cmd/server/main.go"
    assert not any("environment_details" in t.text or "VSCode Visible Files" in t.text for t in r.turns)
    assert {t.cwd for t in r.turns} == {"/home/lee/src/relay"}


def test_attempt_completion_is_the_final_reply():
    r = _read(API)
    assert r.turns[-1].role == "assistant" and r.turns[-1].text.startswith("Fixed the build")


def test_ui_messages_skip_bookkeeping_and_read_tools_from_their_json():
    r = _read(UI_ONLY)
    assert dict(r.skipped) == {"api_request": 2, "api_retry": 1}  # api_req_started ×2, error_retry: by name
    calls = [t.tool_name for t in r.turns if t.kind == "tool_call"]
    assert calls == ["readFile", "editedExistingFile", "execute_command"]
    assert r.turns[-1].text.startswith("The docker build failed")
    assert not r.skipped["unknown_type"]


def test_ui_messages_beside_a_conversation_history_are_not_read_twice(tmp_path):
    shutil.copytree(TASKS, tmp_path / "tasks")
    out = collect([tmp_path / "tasks"])
    assert set(out.sessions) == {("cline", "1759300000000"), ("cline", "1759400000000")}
    assert out.skipped["shadowed_by_sibling"] == 1


def test_detected_by_name_and_shape():
    assert detect_host(str(API), API.read_bytes()[:65536]) == "cline"
    assert detect_host("/x/other.json", API.read_bytes()[:65536]) is None


# --- real-shaped UI messages (tests/fixtures/cline/, hand-written in Cline's and Roo Code's shape) -----
CLINE = Path(__file__).parent / "fixtures" / "cline"
PRETTY = CLINE / "vscodium/User/globalStorage/saoudrizwan.claude-dev/tasks/1772442904000/ui_messages.json"
ONE_LINE = CLINE / "roo-code" / "tasks" / "0b5e2c1a-7d3f-4e8a-9c6b-1f2e3d4c5b6a" / "ui_messages.json"
READ_KINDS = {"text", "task", "user_feedback", "user_feedback_diff", "completion_result", "followup",
              "plan_mode_respond", "reasoning", "command", "command_output", "tool", "use_mcp_server",
              "mcp_server_response", "load_mcp_documentation", "error", "diff_error"}


def test_the_first_text_of_a_task_is_the_users_request_and_later_text_the_models():
    turns = _read(PRETTY).turns
    assert (turns[0].role, turns[0].kind) == ("user", "text") and turns[0].text.startswith("`go test ./...` fails")
    said = [(t.role, t.text) for t in turns if t.kind == "text"]
    assert said[1] == ("assistant",
                       "Total adds float64 amounts, so the error accumulates. I will sum integer cents instead.")
    assert ("user", "Does the CSV export round the same way?") in said and ("user", "two decimals") in said
    assert ("assistant", "Should the CSV export print two decimals or whole cents?") in said  # a followup's question
    assert said[-1] == ("assistant", "The export already formats amounts with %.2f, so it prints two decimals.")
    one_line = _read(ONE_LINE).turns
    assert (one_line[0].role, one_line[0].text) == ("user", "Where does the notes app keep its config file?")


def test_every_message_kind_is_read_or_skipped_by_name():
    kinds = {m.get("say") or m.get("ask") for m in json.loads(PRETTY.read_text()) + json.loads(ONE_LINE.read_text())}
    assert kinds <= READ_KINDS | set(cline.SKIPPED_KINDS)
    assert dict(_read(PRETTY).skipped) == {
        "api_request": 7, "api_retry": 3, "checkpoint": 2, "progress_list": 2, "resume_prompt": 2, "host_notice": 3,
        "empty_text": 2,  # a streamed `text` left empty, and the `ask: completion_result` prompt
    }
    assert dict(_read(ONE_LINE).skipped) == {"api_request": 2, "checkpoint": 1}
    newer = b'[{"ts": 1, "type": "say", "say": "text", "text": "hi"}, {"ts": 2, "type": "say", "say": "hologram"}]'
    assert cline.read(newer, "/t/1/ui_messages.json").skipped == {"unknown_type": 1}


def test_streamed_command_output_is_one_result_of_its_command_and_a_mcp_error_is_an_error():
    turns = _read(PRETTY).turns
    steps = [(t.kind, t.tool_name) for t in turns if t.kind in ("tool_call", "tool_result", "error")]
    assert steps[:5] == [("tool_call", "execute_command"), ("tool_result", "execute_command"),
                         ("tool_call", "editedExistingFile"), ("tool_call", "execute_command"),
                         ("tool_result", "execute_command")]
    failing = turns[3]
    assert "Total() = 10.299999" in failing.text and "FAIL\tledger/internal/ledger" in failing.text
    assert ("error", "use_mcp_tool") in steps and ("tool_call", "use_mcp_tool") in steps
    assert [t.text for t in turns if t.role == "system"][0] == "diff_error: internal/export/csv.go"


def test_the_failing_then_passing_test_run_is_one_red_to_green_loop():
    fix = segment_session(_read(PRETTY).turns)[0]
    assert [(run.command, run.failed, run.passed) for run in walk(fix.turns).runs] == [
        ("go test ./...", True, False), ("go test ./...", False, True)]


def test_the_workspace_is_the_current_working_directory_cline_sent_with_each_request():
    # the task itself too, said before any request
    assert {t.cwd for t in _read(PRETTY).turns} == {"/home/ren/src/ledger"}
    assert {t.cwd for t in _read(ONE_LINE).turns} == {"/home/ren/src/notes"}


def test_each_turn_cites_the_physical_line_its_message_starts_on():
    lines = PRETTY.read_text().split("\n")
    r = _read(PRETTY)
    assert r.turns[0].line == 2  # `[` alone on line 1, the first message's `{` on line 2
    for t in r.turns:
        assert lines[t.line - 1] == "    {", t
        assert f'"ts": {int(t.timestamp.timestamp() * 1000)},' in lines[t.line]  # the message that starts there
    assert {t.line for t in _read(ONE_LINE).turns} == {1}  # one line holds every message
    assert b"\n" not in ONE_LINE.read_bytes()


def test_a_task_folder_is_found_whatever_the_folders_above_it_are_called(tmp_path):
    shutil.copytree(CLINE, tmp_path / "anything")
    out = collect([tmp_path / "anything"])
    assert set(out.sessions) == {("cline", "1772442904000"), ("cline", "0b5e2c1a-7d3f-4e8a-9c6b-1f2e3d4c5b6a")}
    assert out.skipped["session_part"] == 1  # task_metadata.json beside it
    assert out.skipped["unknown_type"] == 0 and out.skipped["unknown_format"] == 0


def test_a_renamed_copy_is_known_by_its_shape_and_is_its_own_task(tmp_path):
    copy = tmp_path / "ledger__ui_messages.json"
    copy.write_bytes(PRETTY.read_bytes())
    other = tmp_path / "export.json"
    other.write_bytes(ONE_LINE.read_bytes())
    assert detect_host(str(copy), copy.read_bytes()[:65536]) == "cline"
    assert detect_host(str(other), other.read_bytes()[:65536]) == "cline"  # the UI shape alone is enough
    out = collect([tmp_path])
    assert set(out.sessions) == {("cline", "ledger__ui_messages"), ("cline", "export")}
