"""The host registry: one Host record per format, and the tables every stage reads from it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from memoir.cards.hosts import HOSTS, READERS, ReaderError, detect_host
from memoir.cards.hosts import detect as detect_module
from memoir.cards.hosts.base import Host
from memoir.cards.hosts.registry import (
    BY_NAME, EDIT_TOOLS, HEADER_SESSIONS, PLAN_ACCEPT_TOOLS, PLAN_TOOLS, QUIET_TOOLS, ROWS, SHELL_TOOLS,
    commits_each_reply, default_roots, host, opens_with_banner, reader_for, wants,
)


def test_every_row_is_whole():
    assert HOSTS == ("claude-code", "codex", "aider", "gemini-cli", "copilot-cli", "cline", "opencode", "jsonl")
    for row in ROWS:
        assert isinstance(row, Host) and READERS[row.name] is row.read is reader_for(row.name)
        assert all(name == name.lower() for name in row.shell_tools | row.edit_tools | row.quiet_tools)
    with pytest.raises(ReaderError, match="unknown host 'cursor'"):
        host("cursor")


def test_the_tool_tables_are_the_union_of_the_rows():
    assert SHELL_TOOLS == {"run", "lint", "bash", "shell", "exec_command", "local_shell", "run_terminal_cmd",
                           "run_command", "execute_command", "terminal", "run_shell_command", "shell_command",
                           "container.exec", "powershell"}
    assert EDIT_TOOLS == {"edit", "multiedit", "write", "notebookedit", "apply_patch", "str_replace_editor",
                          "str_replace_based_edit_tool", "create_file", "edit_file", "write_file", "replace", "insert",
                          "create", "write_to_file", "replace_in_file", "apply_diff", "insert_content",
                          "search_and_replace", "editedexistingfile", "newfilecreated", "patch"}
    assert PLAN_TOOLS == {"todowrite", "update_plan", "update_todo", "write_todos"}
    assert PLAN_ACCEPT_TOOLS == {"exitplanmode"}
    assert EDIT_TOOLS | PLAN_TOOLS | PLAN_ACCEPT_TOOLS | {"read", "grep", "webfetch", "skill"} <= QUIET_TOOLS
    assert not SHELL_TOOLS & QUIET_TOOLS


def test_roots_file_names_and_host_traits():
    home = Path("/home/dev")
    assert default_roots(home) == {
        "claude-code": home / ".claude" / "projects", "codex": home / ".codex" / "sessions",
        "gemini-cli": home / ".gemini" / "tmp", "copilot-cli": home / ".copilot" / "session-state",
        "cline": home / ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks",
        "opencode": home / ".local/share/opencode/storage/session",
    }
    assert wants("rollout-2025-01-01.jsonl", "codex") and not wants("x.jsonl", "codex")
    assert wants(".aider.chat.history.md", "aider") and wants(".aider.chat.history.md") and wants("x.jsonl")
    assert not wants("notes.md")
    assert HEADER_SESSIONS == {"aider"}
    assert commits_each_reply("aider") and opens_with_banner("aider")
    assert not commits_each_reply("codex") and not opens_with_banner("no-such-host")


def test_detection_asks_each_row_and_the_surest_sniff_wins():
    codex_and_claude = b'{"type": "session_meta", "payload": {}, "sessionId": "x"}\n'
    assert detect_host("x.jsonl", codex_and_claude) == "codex"  # 4 (envelope) beats 3 (Claude's keys)
    generic = b'{"session_id": "s", "role": "user", "text": "hi", "type": "user", "message": {}}\n'
    assert detect_host("x.jsonl", generic) == "jsonl"  # 2 beats Claude's record type alone (1)


def test_a_new_row_is_detected_without_touching_detect(monkeypatch):
    gemini = Host(name="gemini-cli", read=BY_NAME["jsonl"].read, wants=lambda n: n.endswith(".json"),
                  sniff_record=lambda obj: 3 if "geminiSession" in obj else 0)
    monkeypatch.setattr(detect_module, "ROWS", (*ROWS, gemini))
    assert detect_host("chat.json", b'{"geminiSession": "g1", "role": "user"}\n') == "gemini-cli"
    tie = replace(gemini, name="later", sniff_record=lambda obj: 4 if "payload" in obj else 0)
    monkeypatch.setattr(detect_module, "ROWS", (*ROWS, tie))
    assert detect_host("x.jsonl", b'{"type": "event_msg", "payload": {}}\n') == "codex"  # a tie: the earlier row
