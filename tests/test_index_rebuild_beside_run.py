"""A rebuild beside a run loses none of the run's index writes; a killed rebuild leaves nothing behind.

Real logs, the real model, real sqlite-vec, two threads of one process doing what `memoir run` and
`memoir index rebuild` do, then the real `memoir index check`.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from memoir.cards.config import load_settings
from memoir.cards.store import CardStore
from memoir.flows.cli.main import cli
from memoir.flows.index_step import rebuild_alone
from memoir.flows.pipeline import run_pipeline
from memoir.index.card_fields import KEY_NAME
from memoir.index.check import HEALTHY, check_index
from memoir.index.db import open_index
from memoir.index.files import INDEX_FILE
from memoir.index.pending import PendingIndex
from memoir.index.rebuild import index_write_lock, remove_leftovers
from memoir.index.sync import index_ids

pytestmark = pytest.mark.slow
FIXTURES = Path(__file__).parent / "fixtures" / "real"


def _logs(tmp_path: Path, host: str) -> Path:
    dst = tmp_path / "logs" / host
    shutil.copytree(FIXTURES / host, dst)
    return dst


def _health(settings, embedder):
    store = CardStore(settings.cards_dir, settings.state_dir)
    return check_index(settings.index_dir, store, embedder.model_id, embedder.dim,
                       pending=PendingIndex(settings.state_dir))


def test_a_run_beside_a_rebuild_loses_no_index_write(tmp_path, embedder):
    settings = load_settings()
    run_pipeline(settings, [_logs(tmp_path, "codex")])  # cards and an index for the rebuild to replace
    before = set(CardStore(settings.cards_dir, settings.state_dir).ids())
    more = _logs(tmp_path, "claude-code")
    rebuilding, run_done = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def hold(_n: int) -> None:
        """The rebuild has written its snapshot of the card files; let the run go, give it time."""
        rebuilding.set()
        run_done.wait(5)

    def run() -> None:
        rebuilding.wait(60)
        try:
            run_pipeline(settings, [more], lock_wait_s=120)
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            failures.append(exc)
        finally:
            run_done.set()

    runner = threading.Thread(target=run)
    runner.start()
    rebuild_alone(settings, embedder, 1, progress=hold, wait_s=120)
    runner.join(120)
    assert not failures
    ids = set(CardStore(settings.cards_dir, settings.state_dir).ids())
    assert ids > before  # the run wrote cards of its own
    health = _health(settings, embedder)
    assert health.status == HEALTHY, health.problems
    with open_index(settings.index_dir, embedder) as index:
        assert set(index.hashes()) == ids
    result = CliRunner().invoke(cli, ["index", "check"])
    assert result.exit_code == 0, result.output


def test_a_card_written_while_the_rebuild_ran_is_in_the_new_file(tmp_path, embedder):
    settings = load_settings()
    run_pipeline(settings, [_logs(tmp_path, "codex")])
    store = CardStore(settings.cards_dir, settings.state_dir)
    victim = store.ids()[0]
    text = store.path_for(victim).read_text(encoding="utf-8")

    def edit_meanwhile(_n: int) -> None:
        """What `memoir review` does beside the rebuild: change a card file, index it in the old file."""
        store.path_for(victim).write_text(text.replace("## Goal", "## Goal\n\nEdited while rebuilding.", 1),
                                          encoding="utf-8")
        with index_write_lock(settings.index_dir), open_index(settings.index_dir, embedder) as index:
            index_ids(store, index, [victim])

    rebuild_alone(settings, embedder, 1, progress=edit_meanwhile)
    health = _health(settings, embedder)
    assert health.status == HEALTHY, health.problems


def test_a_rebuild_refuses_while_a_run_holds_the_home(tmp_path):
    from memoir.flows.lock import RunBusy, run_lock

    settings = load_settings()
    with run_lock(settings.state_dir, 0, what="run"):
        with pytest.raises(RunBusy):
            rebuild_alone(settings, None, 1)
        result = CliRunner().invoke(cli, ["index", "rebuild"])
    assert result.exit_code == 3 and "--wait" in result.output


def _leave(index_dir: Path, *names: str) -> None:
    index_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        (index_dir / name).write_bytes(b"half a database")


def test_a_killed_rebuilds_new_file_and_sidecars_go_on_the_next_start(tmp_path):
    settings = load_settings()
    new = [f"{INDEX_FILE}.new", f"{INDEX_FILE}.new-wal", f"{INDEX_FILE}.new-shm"]
    _leave(settings.index_dir, *new)
    empty = tmp_path / "no-logs"
    empty.mkdir()
    run_pipeline(settings, [empty], with_index=False)
    assert not [n for n in new if (settings.index_dir / n).exists()]


def test_a_kill_between_moving_the_old_file_aside_and_the_swap_puts_it_back(tmp_path):
    index_dir = tmp_path / "index"
    _leave(index_dir, f"{INDEX_FILE}.bak", f"{INDEX_FILE}.new")
    done = remove_leftovers(index_dir)
    assert (index_dir / INDEX_FILE).read_bytes() == b"half a database"
    assert not (index_dir / f"{INDEX_FILE}.bak").exists() and not (index_dir / f"{INDEX_FILE}.new").exists()
    assert len(done) == 2
    _leave(index_dir, f"{INDEX_FILE}.bak", f"{INDEX_FILE}.bak-wal")
    remove_leftovers(index_dir)  # a current file exists: the old copy is only a leftover
    assert sorted(p.name for p in index_dir.iterdir() if p.name != KEY_NAME) == [INDEX_FILE]
