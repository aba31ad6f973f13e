"""Gemini CLI chats: whole JSON and JSON lines, thoughts never text, one session across its copies."""

import hashlib
import json
import shutil
from pathlib import Path

from memoir.cards.collect import collect
from memoir.cards.hosts import detect_host, gemini_cli

CHATS = Path(__file__).parent / "fixtures" / "hosts" / "gemini" / "tmp" / "3f1c9a0b7e6d5c4b3a29180706f5e4d3c2b1a09f8e7d6c5b4a3928170605f4e3" / "chats"
FULL = CHATS / "session-2026-10-01T10-00-1a2b3c4d.json"
JSONL = CHATS / "session-2026-10-02T11-00-9f8e7d6c.jsonl"


def _read(path: Path):
    return gemini_cli.read(path.read_bytes(), str(path))


def test_whole_chat_reads_messages_thoughts_and_tool_calls_in_order():
    r = _read(FULL)
    assert r.session_id == "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
    kinds = [(t.role, t.kind) for t in r.turns]
    assert kinds[:5] == [("user", "text"), ("assistant", "thinking"), ("assistant", "text"),
                         ("assistant", "tool_call"), ("tool", "error")]
    assert r.turns[3].text.startswith("run_shell_command") and "pytest tests/test_parse.py" in r.turns[3].text
    assert "KeyError: 'temp_c'" in r.turns[4].text
    assert [t.kind for t in r.turns if t.role == "tool"] == ["error", "tool_result", "tool_result"]
    assert r.skipped["cli_notice"] == 1 and not r.skipped["unknown_type"]


def test_thoughts_are_thinking_turns_never_assistant_text():
    r = _read(FULL)
    thinking = [t.text for t in r.turns if t.kind == "thinking"]
    assert thinking == ["Reproduce. Probably the fixture changed; run the test to see."]
    assert not any("Probably the fixture" in t.text for t in r.turns if t.kind == "text")


def test_jsonl_form_reads_header_and_a_message_saved_twice_once():
    r = _read(JSONL)
    assert r.session_id == "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a"
    assert r.skipped["message_update"] == 1
    texts = [t.text for t in r.turns if (t.role, t.kind) == ("assistant", "text")]
    assert texts[0].startswith("Checking lint output")  # the later save of the same message id wins
    assert r.turns[0].text == "Why does `make lint` fail on weather/cli.py with E501?"  # content as a list of parts


def test_detected_by_content_pretty_printed_or_one_line():
    assert detect_host(str(FULL), FULL.read_bytes()[:65536]) == "gemini-cli"
    one_line = json.dumps(json.loads(FULL.read_text())).encode()
    assert detect_host("/x/renamed.json", one_line) == "gemini-cli"
    assert detect_host(str(JSONL), JSONL.read_bytes()) == "gemini-cli"


def test_one_session_saved_under_three_names_is_read_once(tmp_path):
    folder = tmp_path / "chats"
    shutil.copytree(CHATS, folder)
    out = collect([folder])
    sessions = {sid for host, sid in out.sessions if host == "gemini-cli"}
    assert sessions == {"1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a"}
    turns = out.sessions[("gemini-cli", "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d")]
    assert len({t.seq for t in turns}) == len(turns)  # no turn twice
    assert {t.source_file for t in turns} == {str(folder / FULL.name)}  # the fullest copy
    assert out.skipped["session_copy"] == 2


def test_a_resaved_chat_is_read_again_from_the_start(tmp_path):
    from memoir.cards.ledger import Ledger

    chat = tmp_path / "session-2026-10-01T10-00-1a2b3c4d.json"
    whole = json.loads(FULL.read_text())
    short = dict(whole, messages=whole["messages"][:2])
    chat.write_text(json.dumps(short, indent=2))
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        first = collect([chat], ledger=ledger)
        first.commit(ledger)
        chat.write_text(json.dumps(whole, indent=2))
        second = collect([chat], ledger=ledger)
    seqs = [t.seq for t in second.sessions[("gemini-cli", whole["sessionId"])]]
    assert seqs[0] == 0 and len(seqs) > len(first.sessions[("gemini-cli", whole["sessionId"])])


def test_broken_chat_is_counted_not_raised():
    r = gemini_cli.read(b'{"sessionId": "s", "projectHash": "h", "messages": [', "/x/session-a.json")
    assert r.turns == [] and r.skipped["bad_json"] == 1


# --- tests/fixtures/gemini-cli: a chat without tool calls, in the pretty-printed shape the CLI saves ---
TIDES = next((Path(__file__).parent / "fixtures" / "gemini-cli" / "tmp").glob("*/chats/session-*.json"))


def _message_lines(path: Path) -> dict[str, int]:
    """Each message id and the line its object opens on (`{` the line above its `"id"`), found by hand."""
    lines = path.read_text().split("\n")
    return {ln.strip()[len('"id": "'):].split('"')[0]: i - 1 for i, ln in enumerate(lines, start=1)
            if ln.startswith('      "id": ') and lines[i - 2].strip() == "{"}


def test_turns_cite_the_physical_line_their_message_starts_on():
    r = _read(TIDES)
    starts = _message_lines(TIDES)
    messages = json.loads(TIDES.read_text())["messages"]
    by_type = {m["id"]: m["type"] for m in messages}
    assert sorted({t.line for t in r.turns}) == sorted(s for i, s in starts.items() if by_type[i] != "info")
    lines = TIDES.read_text().split("\n")
    assert all(lines[t.line - 1].strip() == "{" for t in r.turns)
    assert [t.line for t in r.turns if t.role == "user"] == [starts[m["id"]] for m in messages if m["type"] == "user"]


def test_every_prompt_is_one_user_text_turn_without_the_editor_state():
    r = _read(TIDES)
    users = [(t.role, t.kind, t.text) for t in r.turns if t.role == "user"]
    assert users == [
        ("user", "text", "Why does the chart from /home/ana/src/tides/tides/render.py put high water at Brest an hour late?"),
        ("user", "text", "Thanks. New task: add a section to the README on how to add a new port."),
    ]


def test_two_requests_with_their_own_answers_are_two_experiences():
    from memoir.cards.segment import segment_session

    experiences = segment_session(_read(TIDES).turns)
    assert len(experiences) == 2
    assert [sum(t.role == "user" for t in e.turns) for e in experiences] == [1, 1]


def test_workspace_is_the_named_path_whose_hash_is_the_project_hash():
    r = _read(TIDES)
    assert {t.cwd for t in r.turns} == {"/home/ana/src/tides"}
    assert TIDES.parent.parent.name == hashlib.sha256(b"/home/ana/src/tides").hexdigest()


def test_no_workspace_when_no_named_path_has_the_project_hash():
    chat = json.loads(TIDES.read_text())
    chat["projectHash"] = hashlib.sha256(b"/somewhere/else").hexdigest()
    r = gemini_cli.read(json.dumps(chat, indent=2).encode(), "/x/session-a.json")
    assert r.turns and {t.cwd for t in r.turns} == {""}


def test_project_root_tries_each_parent_and_either_drive_letter_case():
    texts = [r"see C:\Users\ana\tides\render.py", "and /home/ana/src/tides/tides/ports.py."]
    assert gemini_cli.project_root(hashlib.sha256(rb"c:\Users\ana\tides").hexdigest(), texts) == r"c:\Users\ana\tides"
    assert gemini_cli.project_root(hashlib.sha256(b"/home/ana/src/tides").hexdigest(), texts) == "/home/ana/src/tides"
    assert gemini_cli.project_root("not-a-hash", texts) == ""


def test_one_line_chat_and_json_lines_cite_their_own_lines():
    one_line = json.dumps(json.loads(TIDES.read_text())).encode()
    assert {t.line for t in gemini_cli.read(one_line, "/x/session-a.json").turns} == {1}
    r = _read(JSONL)
    assert [t.line for t in r.turns if t.role == "user"] == [2]
    assert min(t.line for t in r.turns if t.role == "assistant") == 3  # a message saved again is cited where it began
    assert max(t.line for t in r.turns) == 6
