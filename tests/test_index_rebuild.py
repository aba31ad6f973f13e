"""The index is derived data: deleted, damaged or locked, it comes back from the card files alone.

Real model, real sqlite-vec, real card files written through `CardStore.write`, the real CLI.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import apsw
import numpy as np
import pytest
from click.testing import CliRunner

from memoir.cards.store import CardStore
from memoir.flows.cli.app import CHECK_EXIT
from memoir.flows.cli.main import cli
from memoir.index.card_fields import KEY_NAME
from memoir.index.check import CORRUPT, HEALTHY, MISSING, STALE, check_index
from memoir.index.db import open_index
from memoir.index.files import INDEX_FILE
from memoir.index.embed import default_embedder
from memoir.index.errors import IndexBusy
from memoir.index.pending import PendingIndex
from memoir.index.rebuild import ensure_index, rebuild_index
from memoir.index.sync import index_or_queue, sync_index
from tests.index_fixtures import QUERIES, make_card, store_at, write_cards

pytestmark = pytest.mark.slow
N_CARDS = 48


@pytest.fixture(scope="module")
def query_vectors():
    return default_embedder().encode(QUERIES)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Card files and their index, built once; tests that need an index start from a copy."""
    home = tmp_path_factory.mktemp("built")
    write_cards(store_at(home), [make_card(i) for i in range(N_CARDS)])
    rebuild_index(store_at(home), home / "index", default_embedder())
    return home / "index" / INDEX_FILE


@pytest.fixture
def home(memoir_home):
    write_cards(store_at(memoir_home), [make_card(i) for i in range(N_CARDS)])
    return memoir_home


@pytest.fixture
def indexed(home, built):
    (home / "index").mkdir()
    shutil.copyfile(built, home / "index" / INDEX_FILE)
    shutil.copyfile(built.parent / KEY_NAME, home / "index" / KEY_NAME)  # the seal key travels with its index
    assert check(home) == HEALTHY  # card files render to the same bytes, so the copy matches
    return home


def snapshot(index_dir, query_vectors):
    """Rows, vectors and top-10 neighbours of the fixed queries: what must survive a rebuild."""
    with open_index(index_dir, default_embedder()) as ix:
        rows = ix.rows()
        vectors = ix.vectors([r.id for r in rows])
        top = [[i for i, _ in ix.knn(q, 10)] for q in query_vectors]
    return rows, vectors, top


def memoir(home, *args):
    return CliRunner().invoke(cli, ["--home", str(home), *args], catch_exceptions=False)


def check(home) -> str:
    return check_index(home / "index", store_at(home), default_embedder().model_id, 384,
                       pending=PendingIndex(home / "state")).status


def test_deleted_index_rebuilds_to_the_same_rows_and_neighbours(home, query_vectors):
    store, index_dir = store_at(home), home / "index"
    first = rebuild_index(store, index_dir, default_embedder(), concurrency=1)
    assert first.cards == N_CARDS and not first.replaced and first.size_bytes > 0
    rows, vectors, top = snapshot(index_dir, query_vectors)
    assert len(rows) == N_CARDS and all(len(t) == 10 for t in top)

    shutil.rmtree(index_dir)
    assert check(home) == MISSING
    second = rebuild_index(store, index_dir, default_embedder(), concurrency=4)
    rows2, vectors2, top2 = snapshot(index_dir, query_vectors)
    assert second.cards == N_CARDS
    assert rows2 == rows and top2 == top
    assert all(np.array_equal(vectors[i], vectors2[i]) for i in vectors)  # same for any concurrency
    assert check(home) == HEALTHY
    assert sorted(p.name for p in index_dir.iterdir()) == [KEY_NAME, INDEX_FILE]  # no .bak, .new or WAL left


def test_garbage_in_the_middle_reads_corrupt_and_a_rebuild_restores_it(indexed, query_vectors):
    home = indexed
    rows, _, top = snapshot(home / "index", query_vectors)
    path = home / "index" / INDEX_FILE
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        fh.seek((size // 2) // 4096 * 4096)
        fh.write(np.random.default_rng(7).bytes(16384))

    result = memoir(home, "index", "check")
    assert result.exit_code == CHECK_EXIT["corrupt"], result.output
    assert "corrupt" in result.output and "index-corruption.md" in result.output
    assert memoir(home, "index", "check", "--json").exit_code == CHECK_EXIT["corrupt"]

    result = memoir(home, "index", "rebuild", "--concurrency", "3")
    assert result.exit_code == 0, result.output
    assert f"{N_CARDS} cards" in result.output and "cards/s" in result.output
    assert memoir(home, "index", "check").exit_code == 0
    rows2, _, top2 = snapshot(home / "index", query_vectors)
    assert rows2 == rows and top2 == top


def test_damage_inside_a_vector_blob_is_caught_by_row_hashes(indexed):
    home = indexed
    conn = apsw.Connection(str(home / "index" / INDEX_FILE))
    blob = conn.execute("SELECT embedding FROM cards WHERE n = 3").fetchall()[0][0]
    # Same length, different floats: SQLite's integrity_check cannot see this.
    conn.execute("UPDATE cards SET embedding = ? WHERE n = 3", (blob[4:] + blob[:4],))
    conn.close()
    assert check(home) == CORRUPT


def test_a_failed_index_write_leaves_the_body_and_queues_the_id_once(indexed):
    home = indexed
    store, index_dir, pending = store_at(home), home / "index", PendingIndex(home / "state")
    new = make_card(500)
    store.write(new)
    body = store.path_for(new.id).read_bytes()

    blocker = apsw.Connection(str(index_dir / INDEX_FILE))
    blocker.execute("BEGIN EXCLUSIVE")  # another process holds the write lock
    try:
        outcome = index_or_queue(store, index_dir, default_embedder(), [new.id], pending, busy_timeout_ms=50)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert outcome.queued == (new.id,) and "locked" in outcome.error
    assert store.path_for(new.id).read_bytes() == body
    assert pending.ids() == [new.id]
    assert check(home) == STALE

    with open_index(index_dir, default_embedder()) as ix:
        report = sync_index(store, ix, pending)
        assert report.drained == (new.id,) and report.added == (new.id,) and report.embedded == 1
        assert pending.ids() == []
        assert list(ix.hashes()).count(new.id) == 1
        again = sync_index(store, ix, pending)
        assert again.embedded == 0 and again.unchanged == N_CARDS + 1
    assert check(home) == HEALTHY


def test_sync_follows_edits_and_deletions_of_card_files(indexed):
    home = indexed
    store, index_dir = store_at(home), home / "index"
    with open_index(index_dir, default_embedder()) as ix:
        assert sync_index(store, ix).embedded == 0  # every file hash is indexed already
        path = store.path_for(make_card(4).id)
        path.write_text(path.read_text().replace("## Conclusion\n\n", "## Conclusion\n\nEdited by hand. "))
        store.path_for(make_card(9).id).unlink()
        report = sync_index(store, ix)
        assert report.updated == (make_card(4).id,) and report.removed == (make_card(9).id,)
        assert report.embedded == 1 and ix.get([make_card(4).id])[make_card(4).id].retrieval_text.startswith("Edited")
    assert check(home) == HEALTHY


def test_model_mismatch_forces_a_rebuild(indexed):
    home = indexed
    store, index_dir = store_at(home), home / "index"
    with open_index(index_dir, default_embedder()) as ix:
        ix.set_meta(model="sentence-transformers/some-older-model@0")
    assert memoir(home, "index", "check").exit_code == CHECK_EXIT["stale"]
    outcome = ensure_index(store, index_dir, default_embedder())
    assert outcome.rebuilt is not None and "another model" in outcome.reason
    assert check(home) == HEALTHY
    assert ensure_index(store, index_dir, default_embedder()).rebuilt is None


def test_check_of_an_unreadable_file_and_a_missing_table_is_corrupt(home):
    index_dir = home / "index"
    index_dir.mkdir()
    (index_dir / INDEX_FILE).write_bytes(b"this is not a database" * 100)
    assert check(home) == CORRUPT
    (index_dir / INDEX_FILE).unlink()
    conn = apsw.Connection(str(index_dir / INDEX_FILE))
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.close()
    assert check(home) == CORRUPT
    outcome = ensure_index(store_at(home), index_dir, default_embedder())
    assert outcome.rebuilt is not None and outcome.set_aside and check(home) == HEALTHY
    assert Path(outcome.set_aside).exists()  # the damaged file is kept beside the new one


def test_help_texts_name_the_runbook():
    for args in (["index", "rebuild", "--help"], ["index", "check", "--help"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0 and "runbooks/index-corruption.md" in result.output


def test_an_empty_card_directory_is_healthy_without_an_index(home):
    empty = CardStore(home / "nothing", home / "state")
    assert check_index(home / "no-index", empty, default_embedder().model_id, 384).status == HEALTHY


def test_a_new_index_fills_from_the_card_files_on_sync(home):
    few = CardStore(home / "few", home / "state")
    write_cards(few, [make_card(i) for i in range(3)])
    with open_index(home / "index", default_embedder()) as ix:
        report = sync_index(few, ix)
        assert report.added == tuple(sorted(make_card(i).id for i in range(3))) and ix.count() == 3


def test_a_writer_holding_the_lock_makes_check_busy_not_corrupt(indexed):
    blocker = apsw.Connection(str(indexed / "index" / INDEX_FILE))
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(IndexBusy):
            check_index(indexed / "index", store_at(indexed), default_embedder().model_id, 384,
                        busy_timeout_ms=50)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()


def test_after_an_upgrade_of_the_card_parser_a_sync_stores_every_card_again_once(indexed):
    """Stored cards another parser made are refused by recall (it parses the files); the next sync
    stores each again, nothing re-embedded, and says so; the sync after that does nothing."""
    import json
    import zlib

    from memoir.index.card_fields import STAMP_KEY, card_of_blob, parser_stamp, stored_cards

    home = indexed
    store, index_dir = store_at(home), home / "index"
    with open_index(index_dir, default_embedder()) as ix:
        assert ix.meta()[STAMP_KEY] == parser_stamp()  # a new index starts with today's parser
        ids = sorted(ix.hashes())
        # As an older memoir left it: every stored card made by another parser, the index saying so.
        old = {}
        for card_id, (file_hash, blob) in stored_cards(ix.conn, ids).items():
            data = json.loads(zlib.decompress(blob))
            data["parser"] = "an-older-parser"
            old[card_id] = zlib.compress(json.dumps(data).encode())
        with ix.conn:
            for card_id, blob in old.items():
                ix.conn.execute("UPDATE card_fields SET fields = ? WHERE n = (SELECT n FROM cards WHERE id = ?)",
                                (blob, card_id))
            ix.conn.execute("UPDATE meta SET value = 'an-older-parser' WHERE key = ?", (STAMP_KEY,))
        vectors = ix.vectors(ids)

        report = sync_index(store, ix)
        assert report.embedded == 0 and report.restamped == len(old) > 0
        assert ix.meta()[STAMP_KEY] == parser_stamp()
        for card_id, (file_hash, blob) in stored_cards(ix.conn, ids).items():
            assert card_of_blob(blob) == store.read(card_id)
        after = ix.vectors(ids)
        assert all(np.array_equal(vectors[i], after[i]) for i in ids)
        assert sync_index(store, ix).restamped == 0
