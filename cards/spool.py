"""Sessions read by a run, kept sanitized in a private unnamed temp file instead of in memory.

A run reads every log before it cuts any session (one session may continue across files), so
holding the read turns made its peak memory grow with the corpus. The spool keeps, per (host,
session id), one small record per file that gave turns (`Chunk`); the turns themselves are
sanitized as they arrive and pickled to a temp file that has no name on disk (removed by the OS
when the run ends or is killed), so no raw secret is ever written. `Spool.sessions()` gives the
sessions back one at a time, in the order and shape the transform used to see them.

Sidechain (subagent) turns make no card: the spool keeps only their number, and their place
(sequence, line, file) for the re-derivation of which file gave which card.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from memoir.cards.hosts.registry import BY_NAME
from memoir.cards.sanitize.fields import sanitize_turn, turn_hints
from memoir.cards.values import Card, Experience, Turn, card_id

Place = tuple[int, int, str, bool]  # (seq, line, the raw source file, sidechain) of one turn


@dataclass(frozen=True, slots=True)
class Chunk:
    """One file's turns of one session: where they sit in the spool, and what the transform counts."""

    files: tuple[tuple[str, int], ...]  # (source file, turns) as the turns name them
    turns: int
    at: int
    size: int
    error: str = ""  # the exception sanitizing raised: the session is counted as a session error


@dataclass(slots=True)
class SpooledSession:
    """One session as the transform takes it: clean turns in order, and what it counts about them."""

    key: tuple[str, str]
    clean: list[Turn]  # sanitized, sidechain turns left out, sorted by (seq, line)
    places: list[Place]  # every turn's place, sidechain ones included, sorted the same way
    turns: int
    sidechain: int
    redacted: Counter = field(default_factory=Counter)
    error: str = ""


def kept_copy(files: Counter, whole_file: bool) -> tuple[set[str] | None, int]:
    """(the source files whose turns count, or None for all; copies left out), from turns per file.

    A host that saves a session whole under several file names hands the same turns over once
    per copy: the copy holding the most turns is kept (ties: the first name in order).
    """
    if len(files) > 1 and whole_file:
        return {max(sorted(files), key=lambda f: files[f])}, len(files) - 1
    return None, 0


def kept_files(chunks: Iterable[Chunk], whole_file: bool) -> tuple[set[str] | None, int]:
    """`kept_copy` over a spooled session's chunks."""
    files: Counter = Counter()
    for chunk in chunks:
        for name, n in chunk.files:
            files[name] += n
    return kept_copy(files, whole_file)


class Spool:
    """Append-only store of sanitized session chunks; one per run, under the run's state folder."""

    def __init__(self, folder: Path | str | None, blob_cap: int) -> None:
        if folder is not None:
            Path(folder).mkdir(parents=True, exist_ok=True)
        # Unnamed where the OS allows it: nothing to clean up after a kill, nothing another user can open.
        self.fh = tempfile.TemporaryFile(dir=folder)
        self.blob_cap = blob_cap
        self.chunks: dict[tuple[str, str], list[Chunk]] = {}
        self.sanitize_s = 0.0
        self._end = 0
        self._kept: dict[tuple[str, str], set[str] | None] = {}

    def close(self) -> None:
        self.fh.close()

    def add(self, key: tuple[str, str], turns: list[Turn]) -> None:
        """Sanitize one file's turns of one session and put them away (`packs`)."""
        for packed in packs(key, turns, self.blob_cap):
            self.put(packed)

    def put(self, packed: PackedChunk) -> None:
        """Put away one chunk packed here or by a worker process (`pack`)."""
        started = time.perf_counter()
        at, size = self._write(packed.data)
        self.chunks.setdefault(packed.key, []).append(Chunk(packed.files, packed.turns, at, size, packed.error))
        self.sanitize_s += packed.sanitize_s + time.perf_counter() - started

    def finish(self, skipped: Counter) -> None:
        """Decide, per session, which copies count (`session_copy`); call once every file is read."""
        for key, chunks in self.chunks.items():
            kept, copies = kept_files(chunks, BY_NAME[key[0]].whole_file)
            self._kept[key] = kept
            if copies:
                skipped["session_copy"] += copies

    @property
    def turn_count(self) -> int:
        total = 0
        for key, chunks in self.chunks.items():
            kept = self._kept.get(key)
            total += sum(n for c in chunks for name, n in c.files if kept is None or name in kept)
        return total

    def __len__(self) -> int:
        return len(self.chunks)

    def _write(self, data: bytes) -> tuple[int, int]:
        """`data` at the end of the spool: (where it starts, its size)."""
        self.fh.seek(self._end)
        self.fh.write(data)
        at, self._end = self._end, self._end + len(data)
        return at, len(data)

    def spill_draft(self, draft: PackedDraft) -> tuple[SpilledExperience, SpilledCard]:
        """Put one drafted experience and its card away, as the bytes the process that drafted them
        pickled: what stays in memory is a few fields of each. A run's drafts are a card per
        experience, and held together they made a run's memory grow with its corpus."""
        return (SpilledExperience(*draft.experience_fields, *self._write(draft.experience), self),
                SpilledCard(draft.card_id, draft.created, *self._write(draft.card), self, draft.workspace))

    def read(self, at: int, size: int):
        """One spilled value; `pread`, so model batches asked from threads may read at once."""
        self.fh.flush()  # what the last writes left in the buffer
        return pickle.loads(os.pread(self.fh.fileno(), size, at))

    def sessions(self) -> Iterator[SpooledSession]:
        """Each session, sorted by key, read back from the spool one at a time."""
        for raw in self.raw_sessions():
            yield unpack_session(raw)

    def raw_sessions(self) -> Iterator[RawSession]:
        """Each session's chunks as the bytes the spool holds, sorted by key: for a worker process to unpack."""
        for key in sorted(self.chunks):
            self.fh.flush()
            chunks = tuple((os.pread(self.fh.fileno(), c.size, c.at), c.error) for c in self.chunks[key])
            yield RawSession(key, chunks, self._kept.get(key))


# --- packing: the part of spooling a worker process can do ----------------------------------------


@dataclass(frozen=True, slots=True)
class PackedDraft:
    """One drafted experience and its card, pickled where they were drafted, with the few fields
    the run keeps of them in memory: the run's process writes the bytes to the spool as they are,
    rather than unpickling a worker's drafts only to pickle them again."""

    experience_fields: tuple  # host, session id, first and last seq, lines, uuid key: SpilledExperience's
    card_id: str
    created: str
    experience: bytes
    card: bytes
    workspace: str = ""  # the card's folder: the run learns each folder's project before the rules


def pack_draft(exp: Experience, uuid_key: str, card: Card) -> PackedDraft:
    return PackedDraft((exp.host, exp.session_id, exp.first_seq, exp.last_seq, exp.lines, uuid_key),
                       card.id, card.created, pickle.dumps(exp, protocol=pickle.HIGHEST_PROTOCOL),
                       pickle.dumps(card, protocol=pickle.HIGHEST_PROTOCOL), card.workspace)


PACK_TURNS = 2000  # turns a chunk holds: a long session is sanitized and pickled a bounded piece at a time


@dataclass(frozen=True, slots=True)
class PackedChunk:
    """Up to `PACK_TURNS` of one file's turns of one session, sanitized and pickled: the bytes the
    spool stores as they are."""

    key: tuple[str, str]
    data: bytes
    files: tuple[tuple[str, int], ...]
    turns: int
    error: str = ""
    sanitize_s: float = 0.0


def pack(key: tuple[str, str], turns: list[Turn], blob_cap: int) -> PackedChunk:
    """Sanitize `turns` (sidechain turns kept as places only) and pickle them. Pure: no raw text leaves it."""
    started = time.perf_counter()
    places = [(t.seq, t.line, t.source_file, t.is_sidechain) for t in turns]
    files = Counter(t.source_file for t in turns)
    clean: list[tuple[str, Turn, Counter | None]] = []
    error = ""
    try:
        kept = [t for t in turns if not t.is_sidechain]
        for t, hints in zip(kept, turn_hints(kept)):
            counts: Counter = Counter()
            clean.append((t.source_file, sanitize_turn(t, blob_cap, counts, hints), counts or None))
    except Exception as exc:  # noqa: BLE001 - counted per session by the transform, as before
        error, clean = type(exc).__name__, []
    data = pickle.dumps((places, clean), protocol=pickle.HIGHEST_PROTOCOL)
    return PackedChunk(key, data, tuple(sorted(files.items())), len(turns), error, time.perf_counter() - started)


def packs(key: tuple[str, str], turns: list[Turn], blob_cap: int) -> Iterator[PackedChunk]:
    """`turns` packed `PACK_TURNS` at a time: a long session's file packed at once held all its
    sanitized turns and their pickle together, and cost more than its length. The spool joins a
    session's chunks again in (seq, line) order (`unpack_session`)."""
    for at in range(0, len(turns), PACK_TURNS):
        yield pack(key, turns[at:at + PACK_TURNS], blob_cap)


class Packer:
    """Where a worker process's collect puts each file's sessions: packed, kept for the run's spool."""

    def __init__(self, blob_cap: int) -> None:
        self.blob_cap = blob_cap
        self.chunks: list[PackedChunk] = []

    def add(self, key: tuple[str, str], turns: list[Turn]) -> None:
        self.chunks.extend(packs(key, turns, self.blob_cap))


@dataclass(frozen=True, slots=True)
class RawSession:
    """One session's spooled chunks, still pickled, and which source files count (None: all)."""

    key: tuple[str, str]
    chunks: tuple[tuple[bytes, str], ...]  # (pickled places and clean turns, the error sanitizing raised)
    kept: frozenset[str] | set[str] | None


def unpack_session(raw: RawSession) -> SpooledSession:
    """The session as the transform takes it: clean turns in (seq, line) order, copies left out."""
    places: list[Place] = []
    clean: list[tuple[str, Turn, Counter | None]] = []
    error = ""
    for data, chunk_error in raw.chunks:
        got_places, got_clean = pickle.loads(data)
        places.extend(got_places)
        clean.extend(got_clean)
        error = error or chunk_error
    if raw.kept is not None:
        places = [p for p in places if p[2] in raw.kept]
        clean = [c for c in clean if c[0] in raw.kept]
    places.sort(key=lambda p: (p[0], p[1]))  # stable: equal places keep the order the files were read in
    clean.sort(key=lambda c: (c[1].seq, c[1].line))
    redacted: Counter = Counter()
    for _, _, counts in clean:
        if counts:
            redacted.update(counts)
    return SpooledSession(raw.key, [t for _, t, _ in clean], places, len(places),
                          sum(1 for p in places if p[3]), redacted, error)


# --- experiences ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class SpilledExperience:
    """An experience whose turns wait in the spool: what the rules and the re-derivation read of it, kept.

    The rules match it by `uuid_key` (`merge.turns_key`, worked out before its turns left memory);
    the gates and the model stage `load()` it, one batch at a time.
    """

    host: str
    session_id: str
    first_seq: int
    last_seq: int
    lines: tuple[int, int]
    uuid_key: str
    at: int
    size: int
    spool: Spool

    @property
    def id(self) -> str:
        return card_id(self.host, self.session_id, self.first_seq, self.last_seq)

    def load(self) -> Experience:
        return self.spool.read(self.at, self.size)


@dataclass(frozen=True, slots=True, eq=False)
class SpilledJoin:
    """Several spilled experiences one merged card came from, joined into one when loaded."""

    parts: tuple[SpilledExperience, ...]

    def load(self) -> Experience:
        found = [p.load() for p in self.parts]
        first = found[0]
        return Experience(first.host, first.session_id, tuple(t for e in found for t in e.turns),
                          first.boundary, first.error_signature)


@dataclass(frozen=True, slots=True, eq=False)
class SpilledCard:
    """A drafted card waiting in the spool: its id and creation time (the rules' order), kept."""

    id: str
    created: str
    at: int
    size: int
    spool: Spool
    workspace: str = ""

    def load(self) -> Card:
        return self.spool.read(self.at, self.size)


def loaded(value):
    """The experience or card itself: loaded from the spool when it waits there."""
    return value.load() if isinstance(value, (SpilledExperience, SpilledJoin, SpilledCard)) else value


def loaded_turns(exp) -> Iterator[Turn]:
    """The experience's turns in order, a join's parts read back one at a time.

    A merged card can stand for thousands of experiences: joining them first held every part's
    whole turns at once, where a reader that keeps a few fields of each turn needs one part at a time.
    """
    for part in exp.parts if isinstance(exp, SpilledJoin) else (exp,):
        yield from loaded(part).turns
