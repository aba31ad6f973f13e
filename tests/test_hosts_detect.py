from pathlib import Path

import pytest

from memoir.cards.hosts import detect_host, strip_injected
from memoir.cards.hosts.strip import slash_command_text

FIXTURES = Path(__file__).parent / "fixtures" / "hosts"


@pytest.mark.parametrize(
    ("name", "host"),
    [
        ("claude_session.jsonl", "claude-code"),
        ("codex_rollout.jsonl", "codex"),
        ("codex_legacy.jsonl", "codex"),
        ("sample.aider.chat.history.md", "aider"),
        ("windows.aider.chat.history.md", "aider"),
        ("claude_commands.jsonl", "claude-code"),
        ("codex_commands.jsonl", "codex"),
        ("generic.jsonl", "jsonl"),
    ],
)
def test_detects_host_by_content_even_when_renamed(name, host):
    assert detect_host("/tmp/renamed.txt", (FIXTURES / name).read_bytes()[:65536]) == host


def test_detects_claude_from_a_first_line_cut_by_the_head():
    head = b'{"parentUuid":null,"isSidechain":true,"sessionId":"s","message":{"content":"' + b"x" * 70000
    assert detect_host("a.jsonl", head[:65536]) == "claude-code"


@pytest.mark.parametrize("head", [b"", b"\x00\x01binary", b'{"hello": "world"}\n', b"just some notes\n"])
def test_unknown_content_is_none(head):
    assert detect_host("x.jsonl", head) is None


def test_strip_injected_removes_memoir_context_and_host_reminders():
    text = "fix it <memoir-context>\nCard c-1: old advice\n</memoir-context> now<system-reminder>r</system-reminder>"
    assert strip_injected(text) == "fix it  now"
    assert strip_injected("a <memoir-context>never closed") == "a"
    assert strip_injected("<command-name>/x</command-name><command-args>do it</command-args>") == "/x do it"


def test_slash_command_text_is_name_and_typed_arguments_only():
    compact = "<command-name>/compact</command-name>\n            <command-message>compact</command-message>\n" \
              "            <command-args></command-args>"
    assert slash_command_text(compact) == "/compact"
    assert slash_command_text("<command-name>model</command-name><command-args> opus </command-args>") == "/model opus"
    init = "<command-message>init is analyzing…</command-message>\n<command-name>/init</command-name>"
    assert slash_command_text(init) == "/init"
    assert slash_command_text("no command here") == ""
