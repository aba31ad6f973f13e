"""The in-memory KNN helpers of index/codes.py and the kept lexical threads of index/recall_reads.py."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from memoir.index.codes import Scaled, best_first
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
