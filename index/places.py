"""Each row's place (its workspace and project), so a workspace's question is answered from its rows.

Recall and search ask about one workspace first. At 1M cards over 1,000 workspaces a scan of every
row's code (~17 ms p50, ~45 ms p99 on 2 busy cores) and a bm25 ranking of every matching row go to
cards the workspace test then throws away. The index therefore keeps each row's place in a small
table of its own (`card_places`), and a long-lived reader groups the rows by place once per state
of the file: a question about one workspace names the places it accepts (a test over ~1,000
distinct places, not 1M rows), and KNN and FTS5 look at those rows alone (`Index.scope`).

The scope only ever holds more rows than the caller keeps, never fewer: a row whose place the
index does not know (an index written before this table, until its next rebuild or rewrite) is in
every scope, and the caller's own test still judges each card it returns.

Imports neither numpy nor sqlite-vec at module level: the lexical-only recall reads it too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from memoir.index.apsw_errors import apsw, translate

PLACES_SQL = ("CREATE TABLE IF NOT EXISTS card_places "
              "(n INTEGER PRIMARY KEY, workspace TEXT NOT NULL, project TEXT NOT NULL)")

PlaceTest = Callable[[str, str], bool]  # (workspace folder, recorded project) -> is it of the scope?


def put_place(cur, n: int, workspace: str, project: str) -> None:
    """Record row `n`'s place (beside `put_fields`, in the same transaction)."""
    cur.execute("INSERT OR REPLACE INTO card_places (n, workspace, project) VALUES (?, ?, ?)", (n, workspace, project))


def drop_place(cur, n: int) -> None:
    cur.execute("DELETE FROM card_places WHERE n = ?", (n,))


class Places:
    """The rowids of each place, read at one `data_version`; `unplaced` rows are in every scope."""

    def __init__(self, groups: dict[tuple[str, str], list[int]], unplaced: list[int], version: tuple):
        import numpy as np  # deferred: start-up (the lexical-only recall imports this module)

        self.groups = {place: np.asarray(ns, dtype=np.int64) for place, ns in groups.items()}
        self.unplaced = np.asarray(unplaced, dtype=np.int64)
        self.version = version

    @classmethod
    def read(cls, conn, version: tuple) -> Places:
        """Group every row by place: one pass over the small table (~0.6 s at 1M rows), and the rows
        without a place found only when the two tables' counts differ."""
        groups: dict[tuple[str, str], list[int]] = {}
        try:
            placed = conn.execute("SELECT n, workspace, project FROM card_places").fetchall()
        except apsw.SQLError:  # no such table: an index from before places, until its next write
            placed = []
        for n, workspace, project in placed:
            groups.setdefault((workspace, project), []).append(n)
        total = conn.execute("SELECT count(*) FROM cards").fetchall()[0][0]
        unplaced: list[int] = []
        if total != len(placed):
            known = {n for n, _, _ in placed}
            unplaced = [n for (n,) in conn.execute("SELECT n FROM cards") if n not in known]
        return cls(groups, unplaced, version)

    def rows(self, test: PlaceTest):
        """The sorted rowids of every place `test` accepts, and of every row without a place."""
        import numpy as np  # deferred: start-up

        taken = [ns for (workspace, project), ns in self.groups.items() if test(workspace, project)]
        return np.sort(np.concatenate([self.unplaced, *taken]))


class PlaceCache:
    """The `Places` a reader holds: read on the first scoped question, again after any commit."""

    def __init__(self):
        self._current: Places | None = None
        self._lock = threading.Lock()

    def get(self, conn, version: tuple, path) -> Places:
        """The places at `version`; a failed read raises the index's typed failure for `path`."""
        with self._lock:
            if self._current is None or self._current.version != version:
                self._current = None  # never two copies at once
                try:
                    self._current = Places.read(conn, version)
                except apsw.Error as exc:
                    raise translate(exc, path) from exc
            return self._current


def project_rows(index, projects, project: str):
    """The rows a recall asked in `project` may inject (`TooFarFromWorkspace`: its own project's, and
    any of no project), or None where the question is of no project: every row could pass, so the
    full search answers (the slow path). `projects` is the registry's `ProjectMap`."""
    if not project:
        return None
    return index.scope(lambda workspace, recorded: projects.project_of(workspace, recorded) in ("", project))
