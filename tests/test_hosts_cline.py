"""Cline / Roo Code task folders: the API conversation history first, the UI messages alone."""

import shutil
from pathlib import Path

from memoir.cards.collect import collect
from memoir.cards.hosts import cline, detect_host

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
    assert r.skipped["ignored_type"] == 3  # api_req_started ×2, error_retry
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
