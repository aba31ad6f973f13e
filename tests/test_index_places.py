"""A workspace's rows answer its question: scoped KNN and FTS5 on a real index (real model, real sqlite-vec)."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from memoir.cards.projects import ProjectMap, of_workspace
from memoir.cards.store import content_hash, render_card
from memoir.index.db import open_index
from memoir.index.embed import default_embedder
from memoir.index.places import project_rows
from tests.index_fixtures import QUERIES, make_card

pytestmark = pytest.mark.slow

# /work/proj0 and /work/proj1 are git projects; /work/proj2 and /work/proj3 are plain folders.
PROJECTS = {"/work/proj0": "github.com/team/zero", "/work/proj1": "github.com/team/one"}


def placed_card(i: int):
    card = make_card(i)
    return replace(card, project=PROJECTS.get(card.workspace, ""))


@pytest.fixture(scope="module")
def cards():
    return [placed_card(i) for i in range(64)]


@pytest.fixture(scope="module")
def embedder():
    return default_embedder()


@pytest.fixture
def index(tmp_path, cards, embedder):
    with open_index(tmp_path / "index", embedder) as ix:
        ix.apply(cards, {c.id: content_hash(render_card(c)) for c in cards})
        yield ix


def of_place(index, test) -> set[str]:
    rows = index.scope(test).tolist()
    return {i for (i,) in index.conn.execute(
        f"SELECT id FROM cards WHERE n IN ({','.join('?' * len(rows))})", rows)} if rows else set()


@pytest.mark.parametrize("workspace", ["/work/proj0", "/work/proj2"])
def test_a_scoped_query_ranks_the_workspaces_cards_as_the_filtered_full_search_does(index, cards, embedder, workspace):
    here = of_workspace(ProjectMap().with_paths(PROJECTS), workspace)
    ours = {c.id for c in cards if here(c.workspace, c.project)}
    rows = index.scope(here)
    assert of_place(index, here) == ours  # the scope holds exactly the workspace's rows
    for query in QUERIES:
        vector = embedder.encode([query])[0]
        full = [h for h in index.knn(vector, len(cards)) if h[0] in ours]  # every row re-scored: the exact order
        scoped = index.knn(vector, 8, within=rows)
        assert scoped == full[:8] and {i for i, _ in scoped} <= ours
        words = [h for h in index.fts(query, len(cards)) if h[0] in ours]
        assert index.fts(query, 5, within=rows) == words[:5]


def test_a_recall_scope_is_its_projects_rows_and_those_of_no_project(index, cards):
    projects = ProjectMap().with_paths(PROJECTS)
    rows = project_rows(index, projects, "github.com/team/one").tolist()
    got = {i for (i,) in index.conn.execute(f"SELECT id FROM cards WHERE n IN ({','.join('?' * len(rows))})", rows)}
    assert got == {c.id for c in cards if c.project in ("", "github.com/team/one")}
    assert project_rows(index, projects, "") is None  # a question of no project: the full search


def test_a_removed_card_leaves_the_scope_and_rows_of_no_known_place_are_in_every_scope(index, cards, embedder):
    here = of_workspace(ProjectMap().with_paths(PROJECTS), "/work/proj1")
    assert of_place(index, here)  # read once, so the removal must be seen
    gone = next(c.id for c in cards if c.workspace == "/work/proj1")
    index.remove([gone])
    assert gone not in of_place(index, here)
    with open_index(index.path.parent, embedder) as other:  # an index written before places, seen by a reader
        with other.conn:
            other.conn.execute("DROP TABLE card_places")
    # ... holds every row in every scope until its rows are written again: never fewer than the caller keeps
    assert of_place(index, here) == {c.id for c in cards} - {gone}


def _settled(index) -> None:
    """Wait for the long-lived reader's background grouping (pytest's timeout bounds it)."""
    while index._places.loading is not None:
        time.sleep(0.01)


def ids_of(index, rows) -> set[str]:
    rows = rows.tolist()
    return {i for (i,) in index.conn.execute(f"SELECT id FROM cards WHERE n IN ({','.join('?' * len(rows))})", rows)}


def test_a_warmed_index_answers_scoped_queries_from_the_grouping_it_read_at_warm_up(index, cards, embedder):
    index.warm()
    held, reads = index._places.current, index._places.reads
    assert held is not None
    here = of_workspace(ProjectMap().with_paths(PROJECTS), "/work/proj0")
    for query in QUERIES:
        rows = index.scope(here)
        index.knn(embedder.encode([query])[0], 8, within=rows)
        assert ids_of(index, rows) == {c.id for c in cards if here(c.workspace, c.project)}
    assert index._places.current is held and index._places.reads == reads  # no request grouped the rows


def test_after_a_commit_the_old_grouping_answers_until_the_background_one_holds_the_new_card(index, embedder):
    index.warm()
    held = index._places.current
    here = of_workspace(ProjectMap().with_paths(PROJECTS), "/work/proj0")
    new = replace(placed_card(600), id="c-new-in-proj0", workspace="/work/proj0", project=PROJECTS["/work/proj0"])
    with open_index(index.path.parent, embedder) as writer:  # a nightly run's connection
        writer.apply([new], {new.id: content_hash(render_card(new))})
    stale = index.scope(here)  # the commit is seen: a background read starts, the old grouping answers
    assert index._places.loading is not None or index._places.current is not held
    assert new.id not in ids_of(index, stale)  # a stale scope misses the cards committed since
    _settled(index)
    assert index._places.current is not held
    assert new.id in ids_of(index, index.scope(here))


def test_a_stale_scope_is_at_worst_too_wide_where_sqlite_reused_a_removed_cards_rowid(index, cards, embedder):
    index.warm()
    projects = ProjectMap().with_paths(PROJECTS)
    last = max(cards, key=lambda c: index.conn.execute("SELECT n FROM cards WHERE id = ?", (c.id,)).fetchall()[0][0])
    theirs = of_workspace(projects, last.workspace)
    other = next(w for w in PROJECTS if w != last.workspace)
    new = replace(placed_card(601), id="c-reused-rowid", workspace=other, project=PROJECTS[other])
    with open_index(index.path.parent, embedder) as writer:
        writer.remove([last.id])
        writer.apply([new], {new.id: content_hash(render_card(new))})  # takes the removed card's rowid
    # The old grouping still files that rowid under the removed card's place: the scope is too wide,
    # and the recall gates judge the card by its own project (TooFarFromWorkspace, test_recall_gates).
    assert new.id in ids_of(index, index.scope(theirs))
    _settled(index)
    assert new.id not in ids_of(index, index.scope(theirs))


def test_a_reopened_long_lived_reader_searches_every_row_until_its_first_grouping_is_read(index, cards):
    index.keep_scaled()  # as the recall service's reader after a rebuild's swap: nothing read yet
    here = of_workspace(ProjectMap().with_paths(PROJECTS), "/work/proj2")
    assert index.scope(here) is None  # the full search answers; no request waits for the grouping
    _settled(index)
    assert ids_of(index, index.scope(here)) == {c.id for c in cards if here(c.workspace, c.project)}
