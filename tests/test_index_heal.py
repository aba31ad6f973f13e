"""A corruption corpus: each kind of damage, written as bytes into a real index that memoir built,
is named `corrupt` by `memoir index check`, and one `memoir run` sets the file aside and rebuilds
an index equal to one built fresh from the same cards. No kind may end in a traceback.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import apsw
import numpy as np
import pytest
import sqlite_vec

from memoir.flows.cli.app import CHECK_EXIT
from memoir.index.db import open_index
from memoir.index.embed import default_embedder
from memoir.index.files import INDEX_FILE
from memoir.index.heal import KEEP_SET_ASIDE, SET_ASIDE, set_aside
from memoir.index.rebuild import rebuild_index
from tests.in_process import memoir_in_process
from tests.user_cards import EXAMPLES, store_of

pytestmark = pytest.mark.slow
ENTRY = "from memoir.flows.cli.main import main; main()"


def memoir_process(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MEMOIR_HOME": str(home)}
    return subprocess.run([sys.executable, "-c", ENTRY, *args], env=env, capture_output=True, text=True, timeout=300)


# The base home comes from the console script itself; each damage is then checked and healed in this
# process (tests/in_process.py), which spares a torch import and a model load per command.
memoir = memoir_in_process


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """A home with cards and the index memoir built for them, made by `memoir run` itself."""
    home = tmp_path_factory.mktemp("base") / "home"
    done = memoir_process(home, "run", "--logs", str(EXAMPLES))
    assert done.returncode == 0, done.stderr
    assert memoir_process(home, "index", "check").returncode == 0
    return home


def stored(path: Path, sql: str) -> bytes:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    try:
        value = conn.execute(sql).fetchall()[0][0]
    finally:
        conn.close()
    return value.encode() if isinstance(value, str) else value


def overwrite(path: Path, old: bytes, new: bytes) -> None:
    """Write `new` over every copy of `old` in the file (a freed page may hold an older copy)."""
    data = path.read_bytes()
    at = data.find(old)
    assert at >= 0 and len(old) == len(new)
    with open(path, "r+b") as fh:
        while at >= 0:
            fh.seek(at)
            fh.write(new)
            at = data.find(old, at + 1)


def header(path: Path) -> None:
    with open(path, "r+b") as fh:
        fh.write(b"\0" * 100)


def page(path: Path) -> None:
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        fh.seek((size // 2) // 16384 * 16384)
        fh.write(np.random.default_rng(11).bytes(16384))


def schema(path: Path) -> None:
    overwrite(path, b"CREATE TABLE cards", b"CREATE TABLX cxrds")


def vec_table(path: Path) -> None:
    """The quantized vector of one card no longer matches the card (nor its float vector)."""
    bits = stored(path, "SELECT embedding_bq FROM vec_cards WHERE rowid = 3")
    overwrite(path, bits, bytes(b ^ 0xFF for b in bits[:8]) + bits[8:])


def truncated(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def zero_length(path: Path) -> None:
    os.truncate(path, 0)


def invalid_utf8(path: Path) -> None:
    """Two bytes inside a card's stored text turned invalid: header and b-tree stay intact."""
    text = stored(path, "SELECT retrieval_text FROM cards WHERE n = 3")[10:50]
    overwrite(path, text, text[:5] + b"\xff\xfe" + text[7:])


KINDS = [header, page, schema, vec_table, truncated, zero_length, invalid_utf8]


def rows_and_vectors(index_dir: Path):
    with open_index(index_dir, default_embedder()) as ix:
        rows = ix.rows()
        vectors = ix.vectors([r.id for r in rows])
    return rows, {k: v.tobytes() for k, v in vectors.items()}


@pytest.fixture(scope="module")
def fresh_index(base, tmp_path_factory):
    """The index built fresh from the base home's cards: what every heal must give back."""
    where = tmp_path_factory.mktemp("fresh")
    rebuild_index(store_of_home(base), where, default_embedder())
    return rows_and_vectors(where)


def store_of_home(home: Path):
    from memoir.cards.config import load_settings

    return store_of(load_settings(home=home))


@pytest.mark.parametrize("damage", KINDS, ids=lambda f: f.__name__)
def test_each_kind_of_damage_is_corrupt_and_a_run_heals_it(damage, base, fresh_index, tmp_path):
    home = tmp_path / "home"
    shutil.copytree(base, home)
    path = home / "index" / INDEX_FILE
    damage(path)

    check = memoir(home, "index", "check")
    assert check.returncode == CHECK_EXIT["corrupt"], check.stdout + check.stderr
    assert "index corrupt" in check.stdout and "Traceback" not in check.stderr
    assert memoir(home, "index", "check", "--json").returncode == CHECK_EXIT["corrupt"]

    run = memoir(home, "run", "--logs", str(EXAMPLES))
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    assert "index was corrupt" in run.stdout and "moved aside" in run.stdout, run.stdout
    aside = list((home / "index").glob(SET_ASIDE + "*"))
    assert len(aside) == 1 and aside[0].is_file()  # the damaged file is kept to look at
    assert memoir(home, "index", "check").returncode == CHECK_EXIT["healthy"]
    assert rows_and_vectors(home / "index") == fresh_index


def test_no_index_file_is_missing_not_stale(base, tmp_path):
    home = tmp_path / "home"
    shutil.copytree(base, home)
    (home / "index" / INDEX_FILE).unlink()
    check = memoir(home, "index", "check")
    assert check.returncode == CHECK_EXIT["missing"] and "index missing" in check.stdout, check.stdout
    assert "stale" not in check.stdout


def test_only_the_newest_set_aside_files_are_kept(tmp_path):
    for hour in range(KEEP_SET_ASIDE + 2):
        (tmp_path / INDEX_FILE).write_bytes(b"damaged %d" % hour)
        moved = set_aside(tmp_path, datetime(2026, 1, 1, hour, tzinfo=timezone.utc))
        assert moved is not None and moved.read_bytes() == b"damaged %d" % hour
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert kept == [f"{SET_ASIDE}20260101T{h:02d}0000Z" for h in range(2, KEEP_SET_ASIDE + 2)]
    assert set_aside(tmp_path) is None  # nothing live to move


def test_search_and_recall_on_a_damaged_index_say_so_and_never_trace_back(base, tmp_path):
    home = tmp_path / "home"
    shutil.copytree(base, home)
    invalid_utf8(home / "index" / INDEX_FILE)
    for query in ("docker compose reload", "uvicorn reload", "TS2339 Property json does not exist"):
        search = memoir(home, "search", query, "--json", "--all")
        assert "Traceback" not in search.stderr, search.stderr
        if search.returncode != 0:  # the damaged row was read: said in words, with the command that heals it
            assert "damaged" in search.stderr and "memoir index rebuild" in search.stderr, search.stderr
    recall = memoir(home, "recall", "uvicorn --reload never reloads in docker", "--json")
    assert "Traceback" not in recall.stderr, recall.stderr
