"""A query asked again is answered from the recent query vectors, with the vector it had the first time."""

from __future__ import annotations

import numpy as np

from memoir.index.embed import RECENT_QUERIES


def test_a_repeated_query_reuses_its_vector_and_a_caller_cannot_change_the_kept_one(embedder):
    before = embedder.recent_hits
    first = embedder.encode_one("pytest fails with database is locked in the sync job")
    first_copy = first.copy()
    first *= 0  # what a caller does to its copy never reaches the kept vector
    again = embedder.encode_one("pytest fails with database is locked in the sync job")
    assert embedder.recent_hits == before + 1
    assert np.array_equal(again, first_copy)
    assert float(again @ embedder.encode(["pytest fails with database is locked in the sync job"])[0]) > 0.99999


def test_only_the_most_recent_queries_are_kept(embedder):
    assert embedder.recent_max == RECENT_QUERIES
    embedder.recent_max = 3
    try:
        embedder.encode_one("the oldest query of all")
        for i in range(3):
            embedder.encode_one(f"query number {i}")
        before = embedder.recent_hits
        embedder.encode_one("query number 2")  # still kept
        embedder.encode_one("the oldest query of all")  # pushed out by newer ones: embedded again
        assert embedder.recent_hits == before + 1
    finally:
        embedder.recent_max = RECENT_QUERIES
