"""Each row's place (its workspace and project), so a workspace's question is answered from its rows.

Recall and search ask about one workspace first. At 1M cards over 1,000 workspaces a scan of every
row's code (~17 ms p50, ~45 ms p99 on 2 busy cores) and a bm25 ranking of every matching row go to
cards the workspace test then throws away. The index therefore keeps each row's place in a small
table of its own (`card_places`), and a long-lived reader groups the rows by place once per state
of the file: a question about one workspace names the places it accepts (a test over ~1,000
distinct places, not 1M rows), and KNN and FTS5 look at those rows alone (`Index.scope`).

A row whose place the index does not know (an index written before this table, until its next
rebuild or rewrite) is in every scope, and the caller's own test still judges each card it returns.
A long-lived reader's scope may lag a commit by the background read's time (`PlaceCache`): it can
then miss the cards committed since, or be too wide, never let another project's card past the gates.

Imports neither numpy nor sqlite-vec at module level: the lexical-only recall reads it too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memoir.index.apsw_errors import apsw, translate
from memoir.index.held import HeldCopy

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

    def __init__(self, groups: dict[tuple[str, str], Sequence[int]], unplaced: Sequence[int], version: tuple):
        import numpy as np  # deferred: start-up (the lexical-only recall imports this module)

        self.groups = {place: np.asarray(ns, dtype=np.int64) for place, ns in groups.items()}
        self.unplaced = np.asarray(unplaced, dtype=np.int64)
        self.version = version

    @classmethod
    def read(cls, conn, version: tuple) -> Places:
        """Group every row by place: one pass over the small table, and the rows without a place found
        only when the two tables' counts differ.

        One text a row (workspace, NUL, project: a path holds no NUL, so the first one splits it) and
        a small code per distinct place, then one stable argsort: ~0.65 s at 1M rows where a tuple
        key and a list per place took ~1 s (bench/RESULTS.md). Most of what is left is SQLite
        handing over a million strings."""
        import numpy as np  # deferred: start-up

        code_of: dict[str, int] = {}
        ns: list[int] = []
        codes: list[int] = []
        try:
            for n, key in conn.execute("SELECT n, workspace || char(0) || project FROM card_places"):
                ns.append(n)
                codes.append(code_of.setdefault(key, len(code_of)))
        except apsw.SQLError:  # no such table: an index from before places, until its next write
            ns, codes = [], []
        total = conn.execute("SELECT count(*) FROM cards").fetchall()[0][0]
        unplaced: list[int] = []
        if total != len(ns):
            known = set(ns)
            unplaced = [n for (n,) in conn.execute("SELECT n FROM cards") if n not in known]
        rowids, coded = np.asarray(ns, dtype=np.int64), np.asarray(codes, dtype=np.int32)
        order = np.argsort(coded, kind="stable")
        bounds = np.searchsorted(coded[order], np.arange(len(code_of) + 1))
        grouped = rowids[order]
        groups = {tuple(key.split("\0", 1)): grouped[bounds[c]:bounds[c + 1]] for key, c in code_of.items()}
        return cls(groups, unplaced, version)

    def rows(self, test: PlaceTest):
        """The sorted rowids of every place `test` accepts, and of every row without a place."""
        import numpy as np  # deferred: start-up

        taken = [ns for (workspace, project), ns in self.groups.items() if test(workspace, project)]
        return np.sort(np.concatenate([self.unplaced, *taken]))


class PlaceCache(HeldCopy):
    """The `Places` a reader holds. A one-shot reader reads them in its first scoped question, and
    again in the first after any commit, on the request's connection. A long-lived reader (`Index.warm`,
    `keep`) reads them at warm-up and, after a commit, again in the background on a connection of
    its own, as `ScaledCopy` does the int8 copy (~0.65 s at 1M rows: a prompt's deadline is 300 ms).

    Until the new grouping is ready the old one keeps answering. A scope from it is the rows of the
    places the test accepts *as they were*: it misses a card committed since (its row is in no
    group), and may be too wide, never a leak: a removed card's rowid finds no row, and a rowid
    SQLite reused for a new card or a card rewritten with another place are judged by the recall
    gates on the card's own fields (`TooFarFromWorkspace`), which never read this grouping. Before
    the first grouping is held a long-lived reader answers None: no scope, the full search. A failed
    background read drops the old grouping (the full search answers, the requests' own reads say
    why) and is not tried again before the next commit."""

    thread_name = "memoir-index-places"

    def load(self, conn, version: tuple, held: bool) -> Places:
        return Places.read(conn, version)

    def get(self, conn, version: tuple, path) -> Places | None:
        """The places at `version`, or for a long-lived reader the last ones read (None: none yet);
        a failed read in the request raises the index's typed failure for `path`."""
        with self._lock:
            if (fresh := self._fresh(version)) is not None:
                return fresh
            if self.keep and self._connect is not None:
                self._refresh_aside(version)
                return self.current
            try:
                return self._read_in_request(conn, version)
            except apsw.Error as exc:
                raise translate(exc, path) from exc

    def rows(self, conn, version: tuple, path, test: PlaceTest):
        """`Places.rows` of the places `get` gives, or None (search every row) while there are none yet."""
        places = self.get(conn, version, path)
        return places.rows(test) if places is not None else None


def project_rows(index, projects, project: str):
    """The rows a recall asked in `project` may inject (`TooFarFromWorkspace`: its own project's, and
    any of no project), or None where the question is of no project (every row could pass) or no
    grouping is held yet: the full search answers (the slow path). `projects` is the registry's `ProjectMap`."""
    if not project:
        return None
    return index.scope(lambda workspace, recorded: projects.project_of(workspace, recorded) in ("", project))
