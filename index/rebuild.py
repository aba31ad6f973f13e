"""Full rebuild from card files into a new database file, then an atomic swap.

Recovery never patches vector data: a damaged or stale index is replaced whole. The old file is
kept as `index.db.bak` until the new one checks out in place, and put back if it does not.

One rebuild, in three public steps that `memoir index rebuild`, a run's index check and the
Prefect `rebuild-index` flow all use: `plan_rebuild` (the card ids in fixed chunks), one
`EmbeddedChunk` per chunk (`embed_chunk`, or `embedded_chunks` reading ahead on threads), and
`install_index` (write the new file, verify it, swap it in, verify again, put the old one back
if it fails). `rebuild_index` is the three in one process.

No index write is lost to a rebuild. A run and a rebuild never overlap: both hold the home's run
lock. The commands that change one card (`forget`, `review`) write under `index_write_lock`, which
the rebuild also holds from its catch-up to its swap: the catch-up indexes every card file that
changed while the new file was being written, so what such a command wrote to the old file is in
the new one too. A rebuild killed half way leaves `index.db.new` (and its `-wal`, `-shm`);
`remove_leftovers` takes them away at the start of the next run or rebuild.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import apsw
import numpy as np

from memoir.cards.store import CardFileError, CardStore, fsync_dir
from memoir.cards.values import Card
from memoir.cards.private import make_private_dir
from memoir.index.check import CORRUPT, IndexHealth, check_index
from memoir.index.apsw_errors import translate
from memoir.index.db import connect, now_utc, open_index
from memoir.index.files import INDEX_FILE
from memoir.index.heal import set_aside
from memoir.index.errors import IndexFailure, RebuildFailed
from memoir.index.pending import PendingIndex
from memoir.index.plan import retrieval_text
from memoir.index.sync import CardFile, read_card_file, sync_index

# Cards per encode call. Fixed, whatever the concurrency, so every rebuild embeds the same texts in
# the same batches and writes identical rows; large enough that sentence-transformers' sort by
# length keeps padding (and so the overhead against one bare encode of all texts) small.
REBUILD_CHUNK = 2048
PREFETCH = 2  # chunks read ahead of the one being embedded


@dataclass(frozen=True)
class RebuildReport:
    """Figures of one rebuild; `problems` lists card files that could not be read.

    `concurrency` is the rebuild_concurrency it ran with: threads reading card files ahead of
    the embedder (`rebuild_index`), or chunks embedded at once (the Prefect flow).
    """

    cards: int
    seconds: float
    size_bytes: int
    path: str
    replaced: bool  # an older index file existed and was swapped out
    problems: list[str] = field(default_factory=list)
    encode_seconds: float = 0.0
    concurrency: int = 1

    @property
    def cards_per_s(self) -> float:
        return self.cards / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict:
        return {"cards": self.cards, "seconds": round(self.seconds, 3), "cards_per_s": round(self.cards_per_s, 1),
                "size_bytes": self.size_bytes, "path": self.path, "replaced": self.replaced,
                "problems": self.problems, "encode_seconds": round(self.encode_seconds, 3),
                "concurrency": self.concurrency}


@dataclass(frozen=True)
class RebuildPlan:
    """The card ids to embed, in chunks of REBUILD_CHUNK, and the pending ids the rebuild covers.

    `covered` is taken before any card file is read: an id queued later may name a file this
    rebuild read too early, so it stays on the pending list.
    """

    chunks: list[list[str]]
    covered: list[str]
    started: float  # time.perf_counter() when planned, in the process that installs the index


@dataclass(frozen=True)
class EmbeddedChunk:
    """One chunk's cards read from their files, with the file hashes and one vector each."""

    cards: list[Card]
    hashes: dict[str, str]
    vectors: np.ndarray
    problems: list[str] = field(default_factory=list)
    encode_seconds: float = 0.0

    @property
    def size(self) -> int:
        """Card files this chunk covered, read or not (what progress counts)."""
        return len(self.cards) + len(self.problems)


def plan_rebuild(store: CardStore, pending: PendingIndex | None = None) -> RebuildPlan:
    """Every card id, in fixed chunks; the pending ids as they stand now."""
    covered = pending.ids() if pending is not None else []
    ids = store.ids()
    return RebuildPlan([ids[i:i + REBUILD_CHUNK] for i in range(0, len(ids), REBUILD_CHUNK)], covered,
                       time.perf_counter())


def load_card_file(store: CardStore, card_id: str) -> CardFile | str:
    """The parsed card file, or why it cannot be read (such a file is reported, never indexed)."""
    try:
        return read_card_file(store, card_id)
    except (OSError, UnicodeDecodeError, CardFileError) as exc:
        return str(exc)


def embed_files(loaded: list[CardFile | str], embedder) -> EmbeddedChunk:
    """One vector per card file that was read; the others become problems."""
    files = [f for f in loaded if isinstance(f, CardFile)]
    started = time.perf_counter()
    vectors = embedder.encode([retrieval_text(f.card) for f in files])
    return EmbeddedChunk([f.card for f in files], {f.card.id: f.hash for f in files}, vectors,
                         [f for f in loaded if isinstance(f, str)], time.perf_counter() - started)


def embed_chunk(store: CardStore, ids: list[str], embedder) -> EmbeddedChunk:
    """Read and embed one chunk of card files (a flow task on any worker that sees the card folder)."""
    return embed_files([load_card_file(store, i) for i in ids], embedder)


def embedded_chunks(store: CardStore, plan: RebuildPlan, embedder, concurrency: int = 2) -> Iterator[EmbeddedChunk]:
    """The plan's chunks embedded in order, `concurrency` threads reading card files ahead."""
    with ThreadPoolExecutor(max(1, concurrency), thread_name_prefix="memoir-read") as pool:
        ahead: deque[list[Future]] = deque()
        queued = iter(plan.chunks)
        for part in queued:
            ahead.append([pool.submit(load_card_file, store, i) for i in part])
            if len(ahead) > PREFETCH:
                break
        while ahead:
            loaded = [f.result() for f in ahead.popleft()]
            nxt = next(queued, None)
            if nxt is not None:
                ahead.append([pool.submit(load_card_file, store, i) for i in nxt])
            yield embed_files(loaded, embedder)


def _sidecars(path: Path) -> list[Path]:
    return [Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")]


def _remove_db(path: Path) -> None:
    for p in (path, *_sidecars(path)):
        p.unlink(missing_ok=True)


def _checkpoint(path: Path) -> None:
    """Fold the old file's WAL into it so no stale WAL can ever be replayed onto the new file."""
    try:
        conn = connect(path, busy_timeout_ms=2000)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
    except (IndexFailure, apsw.Error):
        pass  # a corrupt file cannot checkpoint; its sidecars are moved aside below


def swap_in(new: Path, final: Path, bak: Path) -> bool:
    """Move `new` over `final` atomically; the old file stays reachable as `bak`. True if one existed."""
    existed = final.exists()
    if existed:
        _checkpoint(final)
        _remove_db(bak)
        try:
            os.link(final, bak)  # readers keep seeing the old file until the rename below
        except OSError:
            os.replace(final, bak)
        for side, bak_side in zip(_sidecars(final), _sidecars(bak)):
            if side.exists():
                os.replace(side, bak_side)
    os.replace(new, final)
    fsync_dir(final.parent)
    return existed


def _restore(final: Path, bak: Path) -> None:
    _remove_db(final)
    if bak.exists():
        os.replace(bak, final)
        for bak_side, side in zip(_sidecars(bak), _sidecars(final)):
            if bak_side.exists():
                os.replace(bak_side, side)


@contextmanager
def index_write_lock(index_dir: Path) -> Iterator[None]:
    """Hold the index's write lock for the block: no rebuild swaps the file while a write is in it.

    A writer opens the index inside the block, so it writes to the file that is current, never to
    one a swap has just put aside. The lock is an flock on the index folder itself (no file to
    leave behind); the kernel drops it when its holder dies.
    """
    index_dir = Path(index_dir)
    make_private_dir(index_dir)
    fd = os.open(index_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def remove_leftovers(index_dir: Path) -> list[str]:
    """Take away what a killed rebuild left; returns the names removed or put back.

    `index.db.new` (+ sidecars) is a half-written file. `index.db.bak` is the previous file: put
    back when the kill came between moving it aside and swapping the new one in, else removed.
    Call only while no rebuild can be running (under the run lock).
    """
    index_dir = Path(index_dir)
    final, new, bak = (index_dir / INDEX_FILE, index_dir / f"{INDEX_FILE}.new", index_dir / f"{INDEX_FILE}.bak")
    done = [p.name for p in (new, *_sidecars(new)) if p.exists()]
    _remove_db(new)
    if bak.exists() and not final.exists():
        _restore(final, bak)
        done.append(f"{bak.name} (put back as {final.name})")
    elif any(p.exists() for p in (bak, *_sidecars(bak))):
        done.extend(p.name for p in (bak, *_sidecars(bak)) if p.exists())
        _remove_db(bak)
    return done


def _write_new(new: Path, index_dir: Path, embedder, chunks: Iterable[EmbeddedChunk],
               progress: Callable[[int], None] | None, catch_up: Callable[[object], int]) -> tuple[int, list[str], float]:
    """Write every chunk into `new`, catch it up, verify it there; returns (rows, problems, encode s)."""
    problems: list[str] = []
    written = 0
    encode_s = 0.0
    index = open_index(index_dir, embedder, path=new)
    try:
        index.conn.execute("PRAGMA synchronous = OFF")  # a crash discards this file anyway
        for chunk in chunks:
            index.write_rows(chunk.cards, chunk.hashes, chunk.vectors)
            written += len(chunk.cards)
            problems.extend(chunk.problems)
            encode_s += chunk.encode_seconds
            if progress is not None:
                progress(chunk.size)
        written += catch_up(index)
        index.set_meta(built_at=now_utc())
        index.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        damage = index.verify()
        count = index.count()
    except apsw.Error as exc:
        index.close()
        _remove_db(new)
        raise translate(exc, new) from exc
    except BaseException:
        index.close()
        _remove_db(new)
        raise
    index.close()
    if damage or count != written:
        _remove_db(new)
        raise RebuildFailed(f"the new index did not check out ({'; '.join(damage) or f'{count} rows, {written} cards'}); "
                            f"the previous index is untouched")
    return written, problems, encode_s


def install_index(index_dir: Path, embedder, plan: RebuildPlan, chunks: Iterable[EmbeddedChunk], *,
                  pending: PendingIndex | None = None, progress: Callable[[int], None] | None = None,
                  concurrency: int = 1, store: CardStore | None = None) -> RebuildReport:
    """Write `chunks` into a new index file, verify it, swap it in, verify again.

    Args:
        index_dir: where `index.db` lives; the new file is built beside it as `index.db.new`.
        embedder: the embedding model's identity (model id, dimension) for the meta table.
        plan: what `plan_rebuild` planned; its covered pending ids leave the list on success.
        chunks: the plan's chunks, embedded; consumed one at a time (an iterator keeps memory flat).
        pending: the pending-index list.
        progress: called with the number of card files finished after each chunk.
        concurrency: the figure the report gives (how the chunks were read or embedded).
        store: the card files; with it, the new file is caught up with every card file that
            changed while it was written, under `index_write_lock`, just before the swap.

    Raises:
        RebuildFailed: the new file did not check out (the previous index is left in place), or
            the swapped-in file did not (the previous file was put back).
    """
    index_dir = Path(index_dir)
    make_private_dir(index_dir)
    final = index_dir / INDEX_FILE
    new = index_dir / f"{INDEX_FILE}.new"
    bak = index_dir / f"{INDEX_FILE}.bak"
    _remove_db(new)
    with ExitStack() as held:
        def catch_up(index) -> int:
            """Rows the catch-up added (less those it removed)."""
            held.enter_context(index_write_lock(index_dir))  # held until the new file is in place
            if store is None:
                return 0
            report = sync_index(store, index)
            return len(report.added) - len(report.removed)

        written, problems, encode_s = _write_new(new, index_dir, embedder, chunks, progress, catch_up)
        replaced = swap_in(new, final, bak)
        try:
            with open_index(index_dir, embedder) as fresh:
                damage = fresh.verify(quick=True)
                if fresh.count() != written:
                    damage.append(f"{fresh.count()} rows after the swap, {written} written")
        except (IndexFailure, apsw.Error) as exc:
            damage = [str(exc)]
        if damage:
            _restore(final, bak)
            raise RebuildFailed(f"the swapped-in index did not check out ({'; '.join(damage)}); the previous "
                                f"file was put back")
    _remove_db(bak)
    if pending is not None:
        pending.discard(plan.covered)
    size = sum(p.stat().st_size for p in (final, *_sidecars(final)) if p.exists())
    return RebuildReport(written, time.perf_counter() - plan.started, size, str(final), replaced, problems,
                         encode_s, concurrency)


def rebuild_index(store: CardStore, index_dir: Path, embedder, concurrency: int = 2,
                  progress: Callable[[int], None] | None = None,
                  pending: PendingIndex | None = None) -> RebuildReport:
    """Embed every card file into a new index file, verify it, swap it in, verify again.

    Args:
        store: the card files (the only input).
        index_dir: where `index.db` lives.
        embedder: the one embedding stream; its model id and dimension go into the meta table.
        concurrency: threads reading and parsing card files ahead of the embedder; the rows
            written are the same for any value.
        progress: called with the number of cards finished after each chunk.
        pending: the pending-index list; ids queued before the rebuild read the files are
            covered by it and leave the list.

    Raises:
        RebuildFailed: the new file did not check out; the previous index is left in place.
    """
    plan = plan_rebuild(store, pending)
    workers = max(1, concurrency)
    with closing(embedded_chunks(store, plan, embedder, workers)) as chunks:
        return install_index(index_dir, embedder, plan, chunks, pending=pending, progress=progress,
                             concurrency=workers, store=store)


@dataclass(frozen=True)
class EnsureReport:
    """What `memoir run` did about the index before its own work: nothing, or a rebuild and why.

    `set_aside` is where a corrupt file went (`index/heal.py`); empty when none was moved.
    """

    health: IndexHealth
    rebuilt: RebuildReport | None = None
    reason: str = ""
    set_aside: str = ""


def ensure_index(store: CardStore, index_dir: Path, embedder, *, concurrency: int = 2,
                 pending: PendingIndex | None = None,
                 progress: Callable[[int], None] | None = None,
                 now: datetime | None = None) -> EnsureReport:
    """Check first; rebuild by itself when the file is corrupt or built for another model.

    A corrupt file is first set aside (`index.db.corrupt-<time>`, see `index/heal.py`), so the
    rebuild starts from the card files alone and the damaged file is still there to look at.
    A merely stale or missing index (cards changed since) is left to `sync_index`, which costs far less.

    Raises:
        IndexFailure: the check or the rebuild failed.
    """
    live = Path(index_dir) / INDEX_FILE
    # A folder, a link or a pipe where the index file belongs is damage too: SQLite cannot open it, and a
    # link could lead writes outside the home. It is moved aside like a corrupt file, never followed.
    misplaced = live.is_symlink() or (live.exists() and not live.is_file())
    health = check_index(index_dir, store, embedder.model_id, embedder.dim, pending=pending)
    if misplaced or health.status == CORRUPT or health.model_mismatch:
        why = ("not a file" if misplaced else "corrupt") if misplaced or health.status == CORRUPT \
            else "built for another model"
        aside = set_aside(Path(index_dir), now) if misplaced or health.status == CORRUPT else None
        report = rebuild_index(store, index_dir, embedder, concurrency, progress, pending)
        moved = f"; the damaged file was moved aside to {aside}" if aside else ""
        reason = (f"index was {why} ({'; '.join(health.problems[:2])}){moved}; rebuilt from "
                  f"{report.cards} card files in {report.seconds:.1f} s")
        return EnsureReport(health, report, reason, str(aside or ""))
    return EnsureReport(health)
