"""The index file with the real model and real sqlite-vec: upserts, hash skips, both query paths."""

from __future__ import annotations

import shutil
import time

import numpy as np
import pytest

from memoir.cards.store import content_hash, render_card
from memoir.index.card_fields import KEY_NAME
from memoir.index.codes import Codes, quantize
from memoir.index.db import SHARDS, open_index
from memoir.index.files import INDEX_FILE
from memoir.index.plan import retrieval_text
from memoir.index.embed import default_embedder
from memoir.index.errors import ModelMismatch
from tests.index_fixtures import QUERIES, make_card

pytestmark = pytest.mark.slow


class CountingEmbedder:
    """The real embedder, counting the texts it is asked to embed (to pin the hash skip)."""

    def __init__(self):
        self.inner = default_embedder()
        self.model_id, self.dim, self.texts = self.inner.model_id, self.inner.dim, 0

    def encode(self, texts):
        self.texts += len(texts)
        return self.inner.encode(texts)


@pytest.fixture(scope="module")
def cards():
    return [make_card(i) for i in range(64)]


@pytest.fixture(scope="module")
def built(tmp_path_factory, cards):
    """One embedded index per module; each test gets its own copy of the file."""
    directory = tmp_path_factory.mktemp("built")
    with open_index(directory, default_embedder()) as ix:
        ix.apply(cards, {c.id: content_hash(render_card(c)) for c in cards})
    return directory / INDEX_FILE


@pytest.fixture
def index(tmp_path, built):
    (tmp_path / "index").mkdir()
    shutil.copyfile(built, tmp_path / "index" / INDEX_FILE)
    shutil.copyfile(built.parent / KEY_NAME, tmp_path / "index" / KEY_NAME)  # the seal key travels with its index
    ix = open_index(tmp_path / "index", CountingEmbedder())
    yield ix
    ix.close()


def test_a_card_whose_hash_is_indexed_is_not_embedded_again(index, cards):
    hashes = {c.id: content_hash(render_card(c)) for c in cards}
    before = index.embedder.texts
    report = index.apply(cards, hashes)
    assert report.embedded == 0 and len(report.skipped) == len(cards)
    changed = cards[5].with_(conclusion="A new conclusion about E0382 and cloning.")
    hashes[changed.id] = content_hash(render_card(changed))
    report = index.apply([changed, *cards[:5]], hashes)
    assert report.updated == (changed.id,) and index.embedder.texts == before + 1
    assert index.get([changed.id])[changed.id].retrieval_text.startswith("A new conclusion")
    assert index.count() == len(cards) and index.verify() == []


def test_rows_hold_metadata_and_short_text_never_evidence(index, cards):
    rows = index.rows()
    assert [r.id for r in rows] == sorted(c.id for c in cards)
    row, card = rows[3], cards[3]
    assert row.topics == card.topics and row.status == card.status and row.workspace == card.workspace
    assert row.conclusion_len == len(card.conclusion) and row.error_signature == card.error_signature
    assert all("EVIDENCE-ONLY-TOKEN" not in r.retrieval_text for r in rows)
    assert index.meta()["card_count"] == str(len(cards)) and index.meta()["shards"] == str(SHARDS)


def test_quantized_knn_finds_the_exact_top10(index):
    vectors = default_embedder().encode(QUERIES)
    for q in vectors:
        approx, exact = index.knn(q, 10), index.knn(q, 10, exact=True)
        assert [i for i, _ in approx] == [i for i, _ in exact]
        assert np.allclose([s for _, s in approx], [s for _, s in exact], atol=1e-4)
        assert approx[0][1] >= approx[-1][1]


@pytest.mark.parametrize("query, expected", [
    ("E0382", "E0382"), ("enoent", "ENOENT"), ("max_connections", "max_connections"),
    ("compilerOptions.strict", "compilerOptions.strict"), ("foo.bar", "foo.bar"),
])
def test_fts_matches_error_codes_config_keys_and_module_names(index, query, expected):
    hits = index.fts(query, 5)
    assert hits, query
    rows = index.get([i for i, _ in hits])
    assert all(expected in rows[i].retrieval_text for i, _ in hits)


@pytest.mark.parametrize("query", [
    '"unbalanced', "(E0382", "foo*", "-x", "a:b", 'NEAR("x" "y")', "E0382 AND", "OR", "*", '"" ()', "col:", "^x",
    "max_connections) OR (", "\\", "'; DROP TABLE cards; --",
])
def test_fts_never_raises_on_special_characters(index, query):
    assert isinstance(index.fts(query, 5), list)
    assert index.count() == 64


def test_remove_drops_the_row_from_every_table(index, cards):
    assert index.remove([cards[0].id, "c-not-indexed"]) == 1
    assert cards[0].id not in index.hashes() and index.count() == len(cards) - 1
    assert index.verify() == []  # cards, vec0 and fts still agree row for row
    assert cards[0].id not in [i for i, _ in index.knn(default_embedder().encode_one(cards[0].conclusion), 5)]


def test_opening_with_another_model_raises_model_mismatch(index, tmp_path):
    class OtherModel:
        model_id, dim = "other/model@1", 384

    index.close()
    with pytest.raises(ModelMismatch, match="memoir index rebuild"):
        open_index(tmp_path / "index", OtherModel())


def test_the_in_memory_codes_are_sqlite_vecs_quantization_and_its_hamming_order(index):
    vectors = default_embedder().encode(QUERIES)
    for q in vectors:
        stored = index.conn.execute("SELECT vec_quantize_binary(?)", (q.tobytes(),)).fetchall()[0][0]
        assert quantize(q).tobytes() == stored
        # sqlite-vec's own Hamming distance over every stored code is the reference order.
        reference = [r for (r,) in index.conn.execute(
            "SELECT rowid FROM vec_cards ORDER BY vec_distance_hamming(embedding_bq, vec_bit(?)), rowid LIMIT 12",
            (stored,))]
        assert index._codes().nearest(q, 12) == reference


@pytest.mark.parametrize("dim", [384, 40])
def test_the_hamming_shortlist_is_the_n_nearest_codes_ties_by_rowid_whatever_n(dim):
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((3000, dim)).astype(np.float32)
    rowids = rng.permutation(9000)[:3000].astype(np.int64)
    codes = Codes(rowids, np.stack([quantize(v) for v in vectors]), (1,))
    for n in (1, 17, 2999, 3000, 4096):
        q = rng.standard_normal(dim).astype(np.float32)
        bits = np.unpackbits(np.stack([quantize(v) for v in vectors]) ^ quantize(q), axis=1).sum(axis=1)
        expected = [r for _, r in sorted(zip(bits.tolist(), rowids.tolist()))][:n]
        assert codes.nearest(q, n) == expected


def test_knn_sees_rows_written_by_this_connection_and_by_another_process(index, cards, tmp_path):
    embedder = default_embedder()
    new = make_card(500).with_(conclusion="Zanzibar quokka lattice: the marmalade resolver needs a fresh spoon.")
    query = embedder.encode_one(new.conclusion)
    assert new.id not in [i for i, _ in index.knn(query, 3)]  # the codes are loaded now
    index.apply([new], {new.id: content_hash(render_card(new))})
    assert index.knn(query, 1)[0][0] == new.id
    other = make_card(501).with_(conclusion="Obsidian walrus kettle: the tapioca scheduler skips every prime.")
    with open_index(tmp_path / "index", embedder) as writer:  # a nightly run's connection
        writer.apply([other], {other.id: content_hash(render_card(other))})
    assert index.knn(embedder.encode_one(other.conclusion), 1)[0][0] == other.id
    index.remove([new.id])
    assert new.id not in [i for i, _ in index.knn(query, 3)]


def test_one_vector_per_distinct_text_a_changed_file_with_the_same_text_is_not_embedded_again(index, cards):
    before = index.embedder.texts
    renewed = cards[7].with_(updated="2025-01-01T00:00:00+00:00", status="superseded")
    twins = [make_card(600).with_(conclusion="Twin conclusion: pin the resolver."),
             make_card(601).with_(conclusion="Twin conclusion: pin the resolver.")]
    twins[1] = twins[1].with_(error_signature=twins[0].error_signature, topics=twins[0].topics,
                              counterexamples=twins[0].counterexamples)
    assert retrieval_text(twins[0]) == retrieval_text(twins[1])
    batch = [renewed, *twins]
    report = index.apply(batch, {c.id: content_hash(render_card(c)) for c in batch})
    assert report.updated == (renewed.id,) and report.added == tuple(sorted(c.id for c in twins))
    assert report.encoded == 1 and index.embedder.texts == before + 1
    assert index.get([renewed.id])[renewed.id].status == "superseded"
    vectors = index.vectors([renewed.id, *(c.id for c in twins)])
    assert np.array_equal(vectors[twins[0].id], vectors[twins[1].id])
    assert float(vectors[renewed.id] @ default_embedder().encode([retrieval_text(renewed)])[0]) > 0.9999
    assert index.verify() == []


def test_codes_read_from_vec0s_chunk_tables_are_the_codes_the_virtual_table_returns(index, cards):
    index.remove([cards[3].id, cards[40].id])  # empty slots in a chunk are skipped
    loaded = index._codes()
    scanned = dict(index.conn.execute("SELECT rowid, embedding_bq FROM vec_cards"))
    assert sorted(loaded.rowids.tolist()) == sorted(scanned)
    codes = np.ascontiguousarray(loaded.columns.T).view(np.uint8).reshape(len(loaded), -1)
    assert all(codes[j].tobytes() == scanned[int(r)] for j, r in enumerate(loaded.rowids))


def test_knn_from_several_threads_at_once_answers_each_as_alone(index):
    from concurrent.futures import ThreadPoolExecutor

    vectors = default_embedder().encode(QUERIES)
    alone = [index.knn(q, 5) for q in vectors]
    index._writes += 1  # as after a commit: the threads below meet codes that must be read again
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda q: index.knn(q, 5), list(vectors) * 4))
    assert together == alone * 4


def _settled(index) -> None:
    """Wait for the long-lived reader's background read of its int8 copy (pytest's timeout bounds it)."""
    while index._scaled.loading is not None:
        time.sleep(0.01)


def _codes_settled(index) -> None:
    """Wait for the long-lived reader's background read of its binary codes (pytest's timeout bounds it)."""
    while index._code_cache.loading is not None:
        time.sleep(0.01)


def test_a_long_lived_readers_knn_over_its_int8_copy_answers_as_the_file_does(index):
    vectors = default_embedder().encode(QUERIES)
    from_file = [index.knn(q, 5) for q in vectors]
    index.warm()
    assert index._scaled.current is not None and len(index._scaled.current.rowids) == index.count()
    assert [index.knn(q, 5, shortlist=8, wide=64) for q in vectors] == from_file


def test_a_long_lived_reader_ranks_a_commits_rows_once_its_codes_are_read_again_in_the_background(index, tmp_path):
    embedder = default_embedder()
    index.warm()
    other = make_card(502).with_(conclusion="Vermilion ibex ledger: the croissant cache forgets every Tuesday.")
    query = embedder.encode_one(other.conclusion)
    with open_index(tmp_path / "index", embedder) as writer:  # a nightly run's connection
        writer.apply([other], {other.id: content_hash(render_card(other))})
    # The old codes and the int8 copy of their version answer: the new row is in no shortlist yet.
    assert other.id not in [i for i, _ in index.knn(query, 3)]
    _codes_settled(index)
    assert index.knn(query, 1)[0][0] == other.id  # the new codes; their int8 copy is stale: ranked from the file
    _settled(index)
    assert index._scaled.current is not None and len(index._scaled.current.rowids) == index.count()
    assert index.knn(query, 1)[0][0] == other.id  # and from the fresh copy once read


def test_a_warmed_index_answers_after_a_commit_without_reading_the_codes_in_the_request(index, tmp_path):
    embedder = default_embedder()
    index.warm()
    held, reads = index._code_cache.current, index._code_cache.reads
    vectors = embedder.encode(QUERIES)
    before = [index.knn(q, 5) for q in vectors]
    assert index._code_cache.current is held and index._code_cache.reads == reads  # no commit: nothing read
    new = make_card(503).with_(conclusion="Saffron narwhal abacus: the teapot linker drops odd symbols.")
    query = embedder.encode_one(retrieval_text(new))
    with open_index(tmp_path / "index", embedder) as writer:  # a nightly run's connection
        writer.apply([new], {new.id: content_hash(render_card(new))})
    # Had the request read the codes, the new card (its own text's nearest) would lead this answer.
    assert new.id not in [i for i, _ in index.knn(query, 5)]
    assert index.knn(vectors[0], 5) == before[0]
    _codes_settled(index)
    assert index._code_cache.current is not held and index._code_cache.reads == reads + 1  # one read, aside
    (n,) = index.conn.execute("SELECT n FROM cards WHERE id = ?", (new.id,)).fetchall()[0]
    assert index._code_cache.current.nearest(query, 1) == [n]
    assert index.knn(query, 1)[0][0] == new.id


def test_old_codes_skip_a_removed_cards_rowid_and_score_a_reused_one_as_the_card_now_there(index, cards, tmp_path):
    embedder = default_embedder()
    index.warm()
    stale = index._code_cache.current
    rowid = dict(index.conn.execute("SELECT id, n FROM cards"))
    gone, last = cards[5], max(cards, key=lambda c: rowid[c.id])
    query = embedder.encode_one(retrieval_text(gone))
    assert stale.nearest(query, 1) == [rowid[gone.id]] and rowid[last.id] in stale.rowids.tolist()
    new = make_card(504).with_(conclusion="Cobalt lemur pulley: the sorbet queue retries forever.")
    with open_index(tmp_path / "index", embedder) as writer:
        writer.remove([gone.id, last.id])
        writer.apply([new], {new.id: content_hash(render_card(new))})  # takes the last card's rowid
    assert index.conn.execute("SELECT id FROM cards WHERE n = ?", (rowid[last.id],)).fetchall() == [(new.id,)]
    # The first request after the commit answers from the old codes. k=32 re-scores 2 k = 64 rowids
    # exactly from the file: every old one, the removed card's and the reused one among them.
    found = index.knn(query, 32)
    assert len(found) == 32 and gone.id not in dict(found) and last.id not in dict(found)
    vectors = index.vectors(dict(found))
    for card_id, score in found:  # each card scored by its own stored vector, never the removed card's
        assert score == pytest.approx(float(vectors[card_id] @ query), abs=1e-5)
    _codes_settled(index)
    held = index._code_cache.current.rowids.tolist()
    assert rowid[gone.id] not in held and rowid[last.id] in held and len(held) == index.count()
