import hashlib

from memoir.cards.hosts.base import Carry
from memoir.cards.ledger import FileStat, Ledger, LedgerEntry, plan_read

DATA = b"line one\nline two\n"


def _entry(**kw) -> LedgerEntry:
    base = dict(
        path="/logs/a.jsonl", host="jsonl", size=len(DATA), mtime_ns=100, offset=len(DATA), lines=2,
        resume_offset=len(DATA), resume_line=2, next_seq=5, prefix_sha256=hashlib.sha256(DATA).hexdigest(),
        session_ids=("s1",), carry=Carry(session_id="s1", seqs=(("s1", 5),)),
    )
    return LedgerEntry(**{**base, **kw})


def _hash_of(content: bytes):
    return lambda n: hashlib.sha256(content[:n]).hexdigest()


def _no_hash(n):
    raise AssertionError("an unchanged file must not be hashed")


def test_unknown_file_is_new():
    assert plan_read(None, FileStat(10, 1), _no_hash).reason == "new"


def test_same_size_and_mtime_is_unchanged_without_hashing():
    assert plan_read(_entry(), FileStat(len(DATA), 100), _no_hash).skip


def test_grown_file_with_same_prefix_reads_only_appended_bytes():
    grown = DATA + b"line three\n"
    plan = plan_read(_entry(), FileStat(len(grown), 200), _hash_of(grown))
    assert (plan.reason, plan.start_offset, plan.start_line, plan.start_seq) == ("appended", len(DATA), 2, 5)
    assert plan.carry.session_id == "s1"


def test_changed_prefix_or_shrunk_file_is_reread_from_zero():
    edited = b"LINE ONE\nline two\nmore\n"
    assert plan_read(_entry(), FileStat(len(edited), 200), _hash_of(edited)).reason == "rewritten"
    assert plan_read(_entry(), FileStat(3, 200), _no_hash).reason == "rewritten"
    plan = plan_read(_entry(), FileStat(len(edited), 200), _hash_of(edited))
    assert (plan.start_offset, plan.start_line, plan.start_seq) == (0, 0, 0)


def test_header_formats_resume_at_stored_offset():
    grown = DATA + b"x\n"
    plan = plan_read(_entry(resume_offset=9, resume_line=1), FileStat(len(grown), 300), _hash_of(grown))
    assert (plan.start_offset, plan.start_line) == (9, 1)


def test_ledger_round_trips_entries(tmp_path):
    with Ledger.in_state_dir(tmp_path / "state") as ledger:
        assert ledger.get("/logs/a.jsonl") is None
        ledger.commit([_entry()])
        ledger.commit([_entry(size=99)])
    with Ledger.in_state_dir(tmp_path / "state") as ledger:
        assert ledger.get("/logs/a.jsonl") == _entry(size=99)
        assert len(ledger.entries()) == 1
    assert (tmp_path / "state" / "ledger.sqlite").exists()


RAW_PATH = "/home/jane.doe@corp.com/.claude/projects/-mnt-10-42/s1.jsonl"
RAW_CWD = "/mnt/10.42.7.19/app"


def _state_bytes(state) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(state.iterdir()) if p.is_file())


def test_ledger_keeps_no_raw_path_or_cwd_and_still_finds_the_file(tmp_path):
    state = tmp_path / "state"
    with Ledger.in_state_dir(state) as ledger:
        ledger.commit([_entry(path=RAW_PATH, carry=Carry(session_id="s1", cwd=RAW_CWD, seqs=(("s1", 5),)))])
        ledger.commit([_entry(path=RAW_PATH, size=99, carry=Carry(session_id="s1", cwd=RAW_CWD))])
        found = ledger.get(RAW_PATH)
        assert found is not None and found.size == 99  # a rerun finds its row: idempotent
        assert [e.size for e in ledger.entries()] == [99]
        assert "jane.doe@corp.com" not in found.path and found.path.endswith("/s1.jsonl")
        assert "10.42.7.19" not in found.carry.cwd
    data = _state_bytes(state)
    assert b"jane.doe@corp.com" not in data and b"10.42.7.19" not in data


def test_a_ledger_keyed_by_raw_paths_is_rewritten_hashed_when_opened(tmp_path):
    import json
    import sqlite3

    state = tmp_path / "state"
    state.mkdir()
    old = sqlite3.connect(state / "ledger.sqlite")
    old.execute("CREATE TABLE files (path TEXT PRIMARY KEY, host TEXT NOT NULL, size INTEGER NOT NULL,"
                " mtime_ns INTEGER NOT NULL, offset INTEGER NOT NULL, lines INTEGER NOT NULL,"
                " resume_offset INTEGER NOT NULL, resume_line INTEGER NOT NULL, next_seq INTEGER NOT NULL,"
                " prefix_sha256 TEXT NOT NULL, session_ids TEXT NOT NULL, carry TEXT NOT NULL, updated TEXT NOT NULL)")
    old.execute("INSERT INTO files VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (RAW_PATH, "jsonl", 18, 100, 18, 2, 18, 2, 5, "ab", json.dumps(["s1"]),
                 json.dumps(Carry(session_id="s1", cwd=RAW_CWD).to_dict()), "2026-12-01T00:00:00+00:00"))
    old.commit()
    old.close()
    with Ledger.in_state_dir(state) as ledger:
        entry = ledger.get(RAW_PATH)
        assert entry is not None and (entry.size, entry.next_seq, entry.session_ids) == (18, 5, ("s1",))
    data = _state_bytes(state)
    assert b"jane.doe@corp.com" not in data and b"10.42.7.19" not in data


def test_a_same_size_same_mtime_file_with_other_sampled_bytes_is_rewritten():
    entry = _entry(sample_sha256="old")
    assert plan_read(entry, FileStat(len(DATA), 100), _no_hash, sample_hash_fn=lambda n: "old").skip
    plan = plan_read(entry, FileStat(len(DATA), 100), _no_hash, sample_hash_fn=lambda n: "new")
    assert (plan.reason, plan.start_offset, plan.start_seq) == ("rewritten", 0, 0)
    # A ledger row from before sampling has nothing to compare: the stat decides, as it did.
    assert plan_read(_entry(), FileStat(len(DATA), 100), _no_hash, sample_hash_fn=lambda n: "new").skip


def test_a_file_of_one_session_is_read_again_whole_when_it_grows():
    grown = DATA + b"line three\n"
    plan = plan_read(_entry(resume_offset=0, resume_line=0), FileStat(len(grown), 200), _hash_of(grown))
    assert (plan.reason, plan.start_offset, plan.start_line, plan.start_seq, plan.carry) == ("appended", 0, 0, 0, Carry())


def test_sampled_blocks_cover_a_small_file_whole_and_a_big_one_from_first_to_last_block():
    from memoir.cards.ledger import SAMPLE_BLOCK, SAMPLE_BLOCKS, sample_spans

    assert sample_spans(100) == [(0, 100)]
    big = SAMPLE_BLOCK * SAMPLE_BLOCKS * 10 + 7
    spans = sample_spans(big)
    assert len(spans) == SAMPLE_BLOCKS and spans[0] == (0, SAMPLE_BLOCK) and spans[-1] == (big - SAMPLE_BLOCK, SAMPLE_BLOCK)
    assert all(a[0] < b[0] for a, b in zip(spans, spans[1:]))


def test_retired_ids_are_the_earlier_reads_cards_not_derived_again():
    from memoir.cards.ledger import retired_ids

    assert retired_ids(_entry(card_ids=("c-a", "c-b", "c-c")), ["c-a", "c-d"]) == ["c-b", "c-c"]


def test_samples_and_card_ids_round_trip_and_an_older_ledger_gains_the_columns(tmp_path):
    import sqlite3

    state = tmp_path / "state"
    with Ledger.in_state_dir(state) as ledger:
        ledger.commit([_entry(sample_sha256="abc", card_ids=("c-1", "c-2"))])
        assert (ledger.get("/logs/a.jsonl").sample_sha256, ledger.get("/logs/a.jsonl").card_ids) == ("abc", ("c-1", "c-2"))
    db = sqlite3.connect(state / "ledger.sqlite")
    db.execute("ALTER TABLE files DROP COLUMN sample_sha256")
    db.execute("ALTER TABLE files DROP COLUMN card_ids")
    db.commit()
    db.close()
    with Ledger.in_state_dir(state) as ledger:
        entry = ledger.get("/logs/a.jsonl")
        assert (entry.size, entry.sample_sha256, entry.card_ids) == (len(DATA), "", ())
