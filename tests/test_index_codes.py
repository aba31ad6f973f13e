"""The in-memory KNN helpers of index/codes.py and the kept lexical threads of index/recall_reads.py."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from memoir.index.codes import Scaled, best_first, rescore
from memoir.index.recall_reads import Aside


def test_best_first_picks_what_a_stable_sort_of_every_score_picks_ties_included():
    rng = np.random.default_rng(7)
    for _ in range(300):
        scores = rng.integers(-4, 4, int(rng.integers(0, 120))).astype(np.float32)
        scores[rng.integers(0, max(len(scores), 1), len(scores) // 5)] = -np.inf
        n = int(rng.integers(0, 40))
        assert best_first(scores, n).tolist() == np.argsort(-scores, kind="stable")[:n].tolist()


def _scaled(rowids: list[int], dim: int = 8) -> Scaled:
    values = np.random.default_rng(1).standard_normal((len(rowids), dim)).astype(np.float32)
    scales = np.abs(values).max(axis=1) / 127.0
    return Scaled(np.asarray(rowids, dtype=np.int64), np.rint(values / scales[:, None]).astype(np.int8),
                  scales.astype(np.float32), ("v",))


@pytest.mark.parametrize("rowids", [[1, 2, 3, 5, 8, 13], [3, 10_000_000]])  # a dense table, and too sparse for one
def test_scaled_scores_rows_by_rowid_and_gives_minus_infinity_for_a_rowid_it_does_not_hold(rowids):
    scaled = _scaled(rowids)
    vector = np.linspace(-1, 1, 8, dtype=np.float32)
    asked = np.asarray(rowids[::-1] + [4, 0, -2, 20_000_000], dtype=np.int64)
    got = scaled.scores(asked, vector)
    for rowid, score in zip(asked.tolist(), got.tolist()):
        if rowid in rowids:
            row = rowids.index(rowid)
            expected = float(np.einsum("j,j->", scaled.values[row].astype(np.float32), vector) * scaled.scales[row])
            assert score == pytest.approx(expected, rel=1e-6)
        else:
            assert score == -np.inf


def test_asides_running_at_once_each_return_their_own_result_and_raise_their_own_error():
    gate = threading.Barrier(6)

    def slow(i: int) -> int:
        gate.wait(timeout=10)  # all six must run at the same time: none may queue behind another
        if i == 3:
            raise ValueError("three")
        return i * i

    asides = [Aside(slow, i) for i in range(6)]
    for i, aside in enumerate(asides):
        if i == 3:
            with pytest.raises(ValueError, match="three"):
                aside.result()
        else:
            assert aside.result() == i * i
    assert [Aside(lambda x: x + 1, i).result() for i in range(20)] == list(range(1, 21))  # kept threads again


def test_rescore_ranks_by_exact_cosine_ties_by_id_and_skips_a_blob_of_another_length():
    vector = np.asarray([0.6, 0.8, 0.0], dtype=np.float32)
    blob = lambda *xs: np.asarray(xs, dtype=np.float32).tobytes()  # noqa: E731
    found = [("b", blob(0.6, 0.8, 0.0)), ("a", blob(0.6, 0.8, 0.0)), ("c", blob(1.0, 0.0, 0.0)),
             ("damaged", blob(1.0, 0.0)), ("d", blob(0.0, 0.0, 1.0))]
    assert [(i, round(s, 4)) for i, s in rescore(found, vector, 3)] == [("a", 1.0), ("b", 1.0), ("c", 0.6)]
    assert rescore([], vector, 3) == [] and rescore([("damaged", blob(1.0))], vector, 3) == []
