from pathlib import Path

from cards.hosts import aider

FIXTURE = Path(__file__).parent / "fixtures" / "hosts" / "sample.aider.chat.history.md"


def _read(data: bytes | None = None):
    return aider.read(FIXTURE.read_bytes() if data is None else data, str(FIXTURE))


def test_one_file_yields_a_session_per_header():
    r = _read()
    assert len(r.session_ids) == 2
    assert r.session_ids[0] == aider.session_id_for(str(FIXTURE), 2)
    first = [t for t in r.turns if t.session_id == r.session_ids[0]]
    assert [t.seq for t in first] == list(range(len(first)))
    assert {t.timestamp.isoformat()[:19] for t in first} == {"2025-07-15T11:38:37"}


def test_consecutive_user_lines_are_one_message_and_search_replace_stays_assistant():
    turns = _read().turns
    assert [(t.role, t.kind) for t in turns[:4]] == [
        ("tool", "tool_result"), ("user", "text"), ("assistant", "text"), ("tool", "tool_result"),
    ]
    assert turns[1].text == "add a header comment to schema.ts\nand keep it short"
    assert ">>>>>>> REPLACE" in turns[2].text


def test_tool_output_keeps_commit_drops_cost_and_flags_errors():
    turns = _read().turns
    assert turns[3].text == "Applied edit to schema.ts\nCommit dde0244 feat: add header comment"
    assert turns[-1].kind == "error" and "Cannot find module zod" in turns[-1].text


def test_resume_points_at_last_session_header():
    data = FIXTURE.read_bytes()
    r = _read(data)
    assert data[r.resume_at:].startswith(b"# aider chat started at 2025-07-16")
    assert r.resume_line == data[: r.resume_at].count(b"\n")


def test_rereading_from_last_header_gives_same_ids_and_seqs():
    data = FIXTURE.read_bytes()
    whole = _read(data)
    again = aider.read(data[whole.resume_at:], str(FIXTURE), start_line=whole.resume_line, carry=whole.carry)
    last = [t for t in whole.turns if t.session_id == whole.session_id]
    assert again.turns == last


def test_partial_last_line_is_left_for_next_run():
    r = _read(FIXTURE.read_bytes() + b"#### half typed")
    assert r.skipped["partial_line"] == 1 and "half typed" not in r.turns[-1].text
