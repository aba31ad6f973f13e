"""Sanitizing structured values and stored fields (cards/sanitize/fields.py)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

from memoir.cards.values import Turn
from memoir.cards.sanitize.fields import sanitize_id, sanitize_json_text, sanitize_path, sanitize_turn, sanitize_value

PASSWORD = "Xy9zHunter2k"
COMMAND = f"cat > .env <<EOF\npassword: {PASSWORD}\nEOF\nmake test"


def test_string_leaves_are_sanitized_decoded_where_the_json_rendering_hides_them():
    value = {"command": COMMAND, "timeout": 30, "env": [{"note": f"password: {PASSWORD}"}, None]}
    counts: Counter = Counter()
    clean = sanitize_value(value, counts)
    assert PASSWORD in json.dumps(value)  # the JSON form the text pass used to see
    assert PASSWORD not in json.dumps(clean) and counts["secret_assignment"] == 2
    assert clean["timeout"] == 30 and clean["env"][1] is None and list(clean) == ["command", "timeout", "env"]
    assert clean["command"].startswith("cat > .env <<EOF\npassword: [REDACTED:")


def test_a_value_nested_as_deep_as_json_allows_does_not_exhaust_the_stack():
    deep: object = f"password: {PASSWORD}"
    for _ in range(5000):
        deep = [deep]
    clean = sanitize_value(deep)
    for _ in range(5000):
        clean = clean[0]
    assert clean == f"password: [REDACTED:secret_assignment:{len(PASSWORD)}]"


def test_json_output_is_rewritten_only_when_a_leaf_held_a_secret():
    plain = '{ "ok": true,  "log": "3 passed" }'
    assert sanitize_json_text(plain) is plain  # the tool's own formatting is kept
    leaked = json.dumps({"log": f"connecting\npassword: {PASSWORD}\nok"})
    assert PASSWORD not in sanitize_json_text(leaked)
    assert sanitize_json_text("not json: password") == "not json: password"


def test_a_sanitized_id_stays_apart_from_another_that_differs_only_in_what_was_redacted():
    a, b = sanitize_id("/mnt/10.42.7.19/repo#1"), sanitize_id("/mnt/10.42.7.20/repo#1")
    assert "10.42.7" not in a + b and a != b
    assert sanitize_id(a) == a and sanitize_id("3f1c-plain-id") == "3f1c-plain-id"


def test_every_stored_field_of_a_turn_is_sanitized():
    turn = Turn(host="codex", session_id="s1", seq=0, role="user", kind="text", text=f"password: {PASSWORD}",
                cwd="/mnt/10.42.7.19/app", source_file="/home/jane.doe@corp.com/log.jsonl", git_branch="main")
    counts: Counter = Counter()
    clean = sanitize_turn(turn, 4000, counts)
    stored = " ".join((clean.text, clean.cwd, clean.source_file, clean.session_id, clean.git_branch))
    assert PASSWORD not in stored and "10.42.7.19" not in stored and "jane.doe@corp.com" not in stored
    assert clean.source_file.endswith("/log.jsonl") and clean.git_branch == "main"
    assert counts["secret_assignment"] == 1


def test_the_claude_code_folder_named_after_a_private_cwd_is_sanitized_with_it():
    cwd = "/home/jane.doe@corp.com/app"
    path = "/root/.claude/projects/-home-jane-doe-corp-com-app/3f1c.jsonl"
    stored = sanitize_path(path, cwd)
    assert "jane" not in stored and stored.startswith("/root/.claude/projects/-home-[REDACTED:")
    assert stored.endswith("-app/3f1c.jsonl")
    assert sanitize_path("/logs/-home-dev-app/3f1c.jsonl", "/home/dev/app") == "/logs/-home-dev-app/3f1c.jsonl"


def test_a_value_under_a_secret_key_is_redacted_as_the_assignment_it_is():
    clean = sanitize_value({"password": PASSWORD, "max_tokens": "4096", "env": [{"api_key": "abcDEF123456ghi"}]})
    assert clean == {"password": f"[REDACTED:secret_assignment:{len(PASSWORD)}]", "max_tokens": "4096",
                     "env": [{"api_key": "[REDACTED:secret_assignment:15]"}]}


def test_terminal_control_sequences_never_reach_a_stored_turn():
    raw = ("\x1b[31mFAILED\x1b[0m tests/test_x.py::test_y\x00 - AssertionError\n"
           "\x1b]0;owned title\x07\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\ done\tok\r\n")
    turn = Turn(host="claude-code", session_id="s1", seq=0, role="tool", kind="tool_output", text=raw)
    text = sanitize_turn(turn, 4000).text
    assert text == "FAILED tests/test_x.py::test_y - AssertionError\nlink done\tok\r\n"
    assert sanitize_turn(replace(turn, text="plain\ttext\n"), 4000).text == "plain\ttext\n"
