import json
from collections import Counter
from pathlib import Path

from memoir.cards.collect import CollectReport, collect_file
from memoir.cards.log_files import iter_candidates
from memoir.cards.sanitize.fields import sanitize_turn
from memoir.cards.spool import PACK_TURNS, Chunk, Spool, kept_files, loaded
from memoir.cards.values import Experience

SECRET = "AKIAIOSFODNN7EXAMPLE"


def _line(sid: str, text: str) -> str:
    return json.dumps({"session_id": sid, "role": "user", "text": text}) + "\n"


def _read(paths: list[Path], spool: Spool | None) -> CollectReport:
    out = CollectReport(spool=spool)
    for path in iter_candidates(paths, "jsonl"):
        collect_file(path, "jsonl", None, out)
    out.finish()
    return out


def test_a_spooled_session_comes_back_sanitized_in_the_order_memory_gave(tmp_path):
    (tmp_path / "a.jsonl").write_text(_line("s", "one") + _line("t", "other") + _line("s", f"key {SECRET}"))
    (tmp_path / "b.jsonl").write_text(_line("s", "three"))
    in_memory = _read([tmp_path], None)
    spool = Spool(tmp_path / "state", blob_cap=4096)
    spooled = _read([tmp_path], spool)

    sessions = list(spool.sessions())
    assert [s.key for s in sessions] == sorted(in_memory.sessions)
    assert (spooled.turn_count, spooled.session_count) == (in_memory.turn_count, len(in_memory.sessions))
    redacted: Counter = Counter()
    expected = [sanitize_turn(t, 4096, redacted) for t in in_memory.sessions[("jsonl", "s")]]
    assert sessions[0].clean == expected
    assert sessions[0].redacted == redacted
    assert [p[:2] for p in sessions[0].places] == [(t.seq, t.line) for t in in_memory.sessions[("jsonl", "s")]]


def test_a_long_session_is_packed_a_bounded_piece_at_a_time_and_comes_back_whole_in_order(tmp_path):
    turns = 2 * PACK_TURNS + 7
    (tmp_path / "long.jsonl").write_text("".join(_line("s", f"step {i} key {SECRET}") for i in range(turns)))
    in_memory = _read([tmp_path], None)
    spool = Spool(tmp_path / "state", blob_cap=4096)
    _read([tmp_path], spool)

    assert [c.turns for c in spool.chunks[("jsonl", "s")]] == [PACK_TURNS, PACK_TURNS, 7]
    (session,) = spool.sessions()
    redacted: Counter = Counter()
    assert session.clean == [sanitize_turn(t, 4096, redacted) for t in in_memory.sessions[("jsonl", "s")]]
    assert session.turns == turns and session.redacted == redacted


def test_the_spool_file_has_no_name_in_the_state_folder(tmp_path):
    spool = Spool(tmp_path / "state", blob_cap=4096)
    spool.add(("jsonl", "s"), [])
    assert list((tmp_path / "state").iterdir()) == []
    spool.close()


def test_of_whole_file_copies_only_the_fullest_counts():
    chunks = [Chunk((("a.json", 3),), 3, 0, 1), Chunk((("b.json", 5),), 5, 1, 1)]
    assert kept_files(chunks, whole_file=True) == ({"b.json"}, 1)
    assert kept_files(chunks, whole_file=False) == (None, 0)


def test_a_draft_a_worker_pickled_is_stored_as_it_came_and_reads_back_whole(tmp_path):
    """The experience keeps its ids and the card what the rules order it by; both read back whole."""
    from memoir.cards.spool import pack_draft
    from memoir.cards.values import Card, Source

    (tmp_path / "a.jsonl").write_text(_line("s", "one") + _line("s", "two"))
    exp = Experience("jsonl", "s", tuple(_read([tmp_path], None).sessions[("jsonl", "s")]))
    card = Card(id=exp.id, created="2026-11-01T00:00:00Z", conclusion="Pin the broker to 3.6.",
                sources=(Source("s", "jsonl", "a.jsonl", (1, 2), (1, 2)),), extra={"dedup_keys": ["k-1"]})
    spool = Spool(tmp_path, blob_cap=4096)
    spilled, spilled_card = spool.spill_draft(pack_draft(exp, "u-key", card))
    assert (spilled.id, spilled.lines, spilled.first_seq, spilled.uuid_key) == (exp.id, exp.lines, exp.first_seq, "u-key")
    assert (spilled_card.id, spilled_card.created) == (card.id, card.created)
    back = loaded(spilled_card)
    assert loaded(spilled) == exp and back == card and back.extra == card.extra
    assert loaded(exp) is exp and loaded(card) is card


def test_a_run_holds_its_drafts_in_the_spool_until_the_rules_reach_them(tmp_path):
    import dataclasses
    import shutil

    from memoir.cards.config import load_settings
    from memoir.cards.spool import SpilledCard
    from memoir.flows import pipeline

    logs = tmp_path / "logs"
    shutil.copytree(Path(__file__).parent / "fixtures" / "second_set" / "claude-code", logs)
    kept = {}
    original = pipeline.retire

    def watch(run):  # what the transform handed on, seen between the steps
        kept["drafted"] = list(run.drafted)
        original(run)

    steps = pipeline.STEPS
    pipeline.STEPS = tuple(dataclasses.replace(s, fn=watch) if s.name == "retire" else s for s in steps)
    try:
        summary = pipeline.run_pipeline(load_settings(home=tmp_path / "home"), [logs], with_index=False)
    finally:
        pipeline.STEPS = steps
    assert kept["drafted"] and all(isinstance(card, SpilledCard) for _, card in kept["drafted"])
    assert sum(summary.cards.values()) > 0
