from pathlib import Path

from memoir.cards.hosts import jsonl

FIXTURE = Path(__file__).parent / "fixtures" / "hosts" / "generic.jsonl"


def test_generic_jsonl_reads_sessions_and_defaults():
    r = jsonl.read(FIXTURE.read_bytes(), str(FIXTURE))
    assert r.session_ids == ("s1", "s2")
    s1 = [t for t in r.turns if t.session_id == "s1"]
    assert [(t.seq, t.role, t.kind) for t in s1] == [
        (0, "user", "text"), (1, "assistant", "tool_call"), (2, "tool", "error"), (3, "system", "summary"),
    ]
    assert s1[0].cwd == "/src/app" and s1[0].timestamp.tzinfo is not None
    s2 = next(t for t in r.turns if t.session_id == "s2")
    assert s2.seq == 0 and s2.timestamp.year == 2026


def test_contract_breaks_are_counted():
    r = jsonl.read(FIXTURE.read_bytes() + b"{oops\n", str(FIXTURE))
    assert (r.skipped["bad_value"], r.skipped["missing_field"], r.skipped["bad_json"]) == (1, 1, 1)


def test_seq_continues_per_session_from_carry():
    first = jsonl.read(FIXTURE.read_bytes(), str(FIXTURE))
    more = jsonl.read(b'{"session_id":"s2","role":"assistant","text":"hi <memoir-context>x</memoir-context>"}\n', "f", 7, first.carry)
    assert (more.turns[0].seq, more.turns[0].line, more.turns[0].text) == (1, 8, "hi")


def test_a_json_tool_call_is_sanitized_decoded():
    import json

    call = json.dumps({"command": "cat > .env <<EOF\npassword: Xy9zHunter2k\nEOF"})
    line = json.dumps({"session_id": "s", "role": "assistant", "kind": "tool_call", "text": call})
    turns = jsonl.read(line.encode() + b"\n", "x.jsonl").turns
    assert len(turns) == 1 and "Xy9zHunter2k" not in turns[0].text and "[REDACTED:" in turns[0].text
