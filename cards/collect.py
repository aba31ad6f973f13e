"""The I/O edge of reading host logs: plan each file against the ledger, read, group.

Host logs are strictly read-only for memoir: a file is opened `O_RDONLY` (with `O_NOATIME` where
the kernel allows it), read up to the size seen at stat time and closed; nothing is written,
moved, renamed, locked or touched. Per-file failures are counted by reason, never raised.
"""

from __future__ import annotations

import bisect
import errno
import hashlib
import os
import re
import stat as stat_mod
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from memoir.cards.hosts.detect import detect_host, undetected_reason
from memoir.cards.hosts.registry import BY_NAME, HEADER_SESSIONS, READERS, reader_for
from memoir.cards.log_files import iter_candidates, utf8_name
from memoir.cards.ledger import FileStat, Ledger, LedgerEntry, LedgerView, ReadPlan, plan_read, sample_spans
from memoir.cards.spool import Packer, Spool, kept_copy
from memoir.cards.values import Turn

HEAD_BYTES = 65536
CHUNK = 1 << 20


@dataclass(slots=True)
class CollectReport:
    """Turns grouped by (host, session id), skip counts, and the ledger updates to commit later."""

    sessions: dict[tuple[str, str], list[Turn]] = field(default_factory=dict)
    skipped: Counter = field(default_factory=Counter)
    plans: Counter = field(default_factory=Counter)
    hosts: Counter = field(default_factory=Counter)  # files read, by the host that wrote them
    files_seen: int = 0
    files_read: int = 0
    bytes_read: int = 0
    pending: list[LedgerEntry] = field(default_factory=list)
    rewritten: set[str] = field(default_factory=set)  # paths whose bytes changed under what was read
    # With a spool, each file's turns go there (sanitized, off the heap) instead of into `sessions`;
    # a worker process's collect packs them for the run's spool instead (`read_file`).
    spool: Spool | Packer | None = None
    workers: int = 1  # the processes that read the files

    @property
    def turn_count(self) -> int:
        return self.spool.turn_count if self.spool is not None else sum(len(t) for t in self.sessions.values())

    @property
    def session_count(self) -> int:
        return len(self.spool) if self.spool is not None else len(self.sessions)

    def take(self, host: str, turns: list[Turn]) -> None:
        """One file's turns, grouped by session, into `sessions` or the spool."""
        if self.spool is None:
            for turn in turns:
                self.sessions.setdefault((host, turn.session_id), []).append(turn)
            return
        mine: dict[str, list[Turn]] = {}
        for turn in turns:
            mine.setdefault(turn.session_id, []).append(turn)
        for sid, part in mine.items():
            self.spool.add((host, sid), part)

    def absorb(self, part: CollectReport) -> None:
        """Add what another collect read (one file, read apart by a fanned-out run) to this report.

        Turns a worker packed go into this report's spool as they are, in the order they were read.
        """
        if isinstance(part.spool, Packer):
            if not isinstance(self.spool, Spool):
                raise TypeError("packed turns need a report with a spool")
            for chunk in part.spool.chunks:
                self.spool.put(chunk)
        for key, turns in part.sessions.items():
            self.sessions.setdefault(key, []).extend(turns)
        self.skipped.update(part.skipped)
        self.plans.update(part.plans)
        self.hosts.update(part.hosts)
        self.files_read += part.files_read
        self.bytes_read += part.bytes_read
        self.pending.extend(part.pending)
        self.rewritten |= part.rewritten

    def finish(self) -> None:
        """Put each session's turns in order, one copy each.

        A host that saves a session whole under several file names (Gemini CLI) hands the same
        turns over once per copy: the copy holding the most of them is kept, the others counted.
        """
        if self.spool is not None:
            self.spool.finish(self.skipped)
            return
        for key, turns in self.sessions.items():
            kept, copies = kept_copy(Counter(t.source_file for t in turns), BY_NAME[key[0]].whole_file)
            if copies:
                self.skipped["session_copy"] += copies
                turns[:] = [t for t in turns if t.source_file in kept]
            turns.sort(key=lambda t: (t.seq, t.line))

    def commit(self, ledger: Ledger) -> int:
        """Move the ledger past what this collect read; call only after its cards are stored."""
        return ledger.commit(self.pending)


def _open_ro(path: Path, nofollow: bool = False) -> int:
    # O_NONBLOCK: a file swapped for a FIFO after its stat must not hang the run on open. O_NOFOLLOW: a
    # file walked as a file and swapped for a link since is refused (ELOOP), never followed.
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
    if nofollow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    noatime = getattr(os, "O_NOATIME", 0)
    if noatime:
        try:
            return os.open(path, flags | noatime)
        except PermissionError:
            pass  # O_NOATIME is refused on files we do not own; plain read-only is still read-only
    return os.open(path, flags)


class _PrefixHasher:
    """sha256 of a file's first n bytes, remembering states so a prefix is hashed once."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.states: dict[int, "hashlib._Hash"] = {0: hashlib.sha256()}

    def state(self, n: int) -> "hashlib._Hash":
        if n not in self.states:
            start = max(k for k in self.states if k <= n)
            h = self.states[start].copy()
            pos = start
            while pos < n:
                chunk = os.pread(self.fd, min(CHUNK, n - pos), pos)
                if not chunk:
                    break
                h.update(chunk)
                pos += len(chunk)
            self.states[n] = h
        return self.states[n].copy()

    def hexdigest(self, n: int) -> str:
        return self.state(n).hexdigest()


def _sample_hash(fd: int, size: int) -> str:
    """sha256 of the file's sampled blocks (`ledger.sample_spans`), with the size they were taken at."""
    h = hashlib.sha256(str(size).encode())
    for start, length in sample_spans(size):
        h.update(os.pread(fd, length, start))
    return h.hexdigest()


DEFAULT_LINE_CAP = 16 * 1024 * 1024  # Settings.max_line_bytes


@dataclass(slots=True)
class _Capped:
    """A file's bytes with every line over the cap emptied (its newline kept, so lines keep their numbers)."""

    data: bytes
    cuts: list[int] = field(default_factory=list)  # where in `data` each emptied line sits
    removed: list[int] = field(default_factory=list)  # bytes taken out up to and including that line
    read: int = 0  # bytes read from the file, cut ones included

    def original(self, offset: int) -> int:
        """The file offset of `offset` in `data` (a line end): what was cut before it added back."""
        i = bisect.bisect_left(self.cuts, offset)
        return offset + (self.removed[i - 1] if i else 0)


def _trim(parts: list[bytes], n: int) -> None:
    while n > 0:
        last = parts.pop()
        if len(last) > n:
            parts.append(last[:-n])
        n -= len(last)


def _read_capped(fd: int, start: int, end: int, cap: int) -> _Capped:
    """Read `start..end`, never holding more than `cap` bytes of any one line.

    A chunk is never longer than the cap, so only a line that runs across chunks can pass it:
    the running length of the line still open is the one check, and its bytes are dropped as
    soon as it passes. A line cut off by the end of the file (still being written) stays open.
    """
    step = max(1, min(CHUNK * 16, cap))
    out = _Capped(b"")
    parts: list[bytes] = []
    kept = removed = 0
    open_len = 0  # length so far of the line still open (no newline yet)
    dropping = False
    pos = start
    while pos < end:
        chunk = os.pread(fd, min(step, end - pos), pos)
        if not chunk:
            break
        pos += len(chunk)
        nl = chunk.find(b"\n")
        head = len(chunk) if nl < 0 else nl  # the bytes that continue the open line
        if not dropping and open_len + head <= cap:
            parts.append(chunk)
            kept += len(chunk)
            open_len = open_len + head if nl < 0 else len(chunk) - chunk.rfind(b"\n") - 1
            continue
        if not dropping:  # the open line just passed the cap: give back what was kept of it
            dropping = True
            _trim(parts, open_len)
            kept -= open_len
            removed += open_len
        removed += head
        if nl < 0:
            continue
        dropping = False
        out.cuts.append(kept)
        out.removed.append(removed)
        parts.append(chunk[nl:])
        kept += len(chunk) - nl
        open_len = len(chunk) - chunk.rfind(b"\n") - 1
    out.read = pos - start
    out.data = b"".join(parts)
    return out


def collect_file(path: Path, host: str, ledger: Ledger | None, out: CollectReport,
                 line_cap: int = DEFAULT_LINE_CAP, nofollow: bool = False) -> None:
    """Read one candidate file into `out` (turns, skip counts, pending ledger entry); never raises.

    Whatever one file does to a reader is counted as `file_error_<Exception>` and the batch goes
    on: memoir may not fix a host log, so a file that fails once would fail every run. A line
    over `line_cap` bytes is counted as `bad_line_too_large` and never decoded. `nofollow`: the file
    was walked as a file, not a link (`log_files.iter_candidates`); a link in its place now is
    counted `symlink_swapped` and not read.
    """
    if nofollow and os.path.islink(path):
        out.skipped["symlink_swapped"] += 1
        return
    try:
        st = os.stat(path)
    except OSError:
        out.skipped["unreadable"] += 1
        return
    if stat_mod.S_ISDIR(st.st_mode):
        out.skipped["unreadable"] += 1
        return
    if not stat_mod.S_ISREG(st.st_mode):
        out.skipped["special_file"] += 1  # a FIFO, socket or device named like a log: never opened
        return
    if st.st_size == 0:
        out.skipped["empty"] += 1
        return
    try:
        fd = _open_ro(path, nofollow)
    except OSError as exc:
        out.skipped["symlink_swapped" if nofollow and exc.errno == errno.ELOOP else "unreadable"] += 1
        return
    try:
        if not stat_mod.S_ISREG(os.fstat(fd).st_mode):
            out.skipped["special_file"] += 1
            return
        _read_open_file(fd, str(path), FileStat(st.st_size, st.st_mtime_ns), host, ledger, out, line_cap)
    except OSError:
        out.skipped["unreadable"] += 1
    except Exception as exc:  # noqa: BLE001 - one hostile file must not stop the batch
        out.skipped[f"file_error_{type(exc).__name__}"] += 1
    finally:
        os.close(fd)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def utf8_turn(turn: Turn) -> Turn:
    """`turn` with each lone UTF-16 surrogate as U+FFFD: JSON allows `"\\ud800"`, UTF-8 cannot hold it.

    One such character in a single line failed the card's hash or file and stopped every run.
    Checked per turn, on bounded text, and only past an isascii() that almost every field passes.
    """
    fields = {"text": turn.text, "session_id": turn.session_id, "cwd": turn.cwd, "git_branch": turn.git_branch,
              "tool_name": turn.tool_name, "uuid": turn.uuid}
    bad = {k: v for k, v in fields.items() if not v.isascii() and not utf8_name(v)}
    return replace(turn, **{k: _LONE_SURROGATE.sub("\ufffd", v) for k, v in bad.items()}) if bad else turn


def _read_open_file(fd: int, path: str, fstat: FileStat, host: str, ledger: Ledger | None, out: CollectReport,
                    line_cap: int) -> None:
    head = os.pread(fd, min(HEAD_BYTES, fstat.size), 0)
    if not head.strip():
        out.skipped["empty"] += 1
        return
    # A NUL byte or a junk line costs that line, not the file: detection skips to the first record.
    detected = detect_host(path, head) if host == "auto" or b"\x00" in head else host
    if detected is None:
        out.skipped[undetected_reason(head)] += 1
        return
    file_host = detected if host == "auto" else host
    hasher = _PrefixHasher(fd)
    entry = ledger.get(path) if ledger is not None else None
    plan: ReadPlan = plan_read(entry, fstat, hasher.hexdigest, file_host, lambda n: _sample_hash(fd, n))
    out.plans[plan.reason] += 1
    if plan.reason == "rewritten":
        out.rewritten.add(path)
    if plan.skip:
        return
    row = BY_NAME[file_host]
    if row.whole_file:  # written again whole on each change: what was read before says nothing of now
        plan = ReadPlan(0, 0, 0, plan.reason)
    if row.assemble is not None:  # the session is put together from several files: no line cap applies
        assembled = row.assemble(path)
        capped = _Capped(assembled, read=len(assembled))
    else:
        capped = _read_capped(fd, plan.start_offset, fstat.size, line_cap)
    data = capped.data
    result = reader_for(file_host)(data, path, plan.start_line, plan.carry)
    out.files_read += 1
    out.hosts[file_host] += 1
    out.bytes_read += capped.read
    out.skipped.update(result.skipped)
    if row.assemble is not None:  # the bytes read are not the file's: the ledger marks the file whole
        result = replace(result, consumed=fstat.size, resume_at=fstat.size)
    consumed = capped.original(result.consumed)
    if too_large := sum(1 for at in capped.cuts if at < result.consumed):
        out.skipped["bad_line_too_large"] += too_large
    out.take(file_host, [utf8_turn(turn) for turn in result.turns])
    if row.assemble is not None:
        prefix = hasher.state(plan.start_offset)
        prefix.update(os.pread(fd, fstat.size, 0))
    elif capped.cuts:  # the ledger hashes the file's own bytes, read again from disk a chunk at a time
        prefix = hasher.state(plan.start_offset + consumed)
    else:
        prefix = hasher.state(plan.start_offset)
        prefix.update(memoryview(data)[: result.consumed])
    # Where an appended read starts again: the last session's header, or (one session a file) the
    # start, so an experience cut off by the end of the file is read whole once it is finished.
    whole = file_host not in HEADER_SESSIONS
    out.pending.append(
        LedgerEntry(
            path=path,
            host=file_host,
            size=fstat.size,
            mtime_ns=fstat.mtime_ns,
            offset=plan.start_offset + consumed,
            lines=plan.start_line + result.lines,
            resume_offset=0 if whole else plan.start_offset + capped.original(result.resume_at),
            resume_line=0 if whole else plan.start_line + result.resume_line,
            next_seq=result.carry.next_seq(result.session_id),
            prefix_sha256=prefix.hexdigest(),
            session_ids=tuple(dict.fromkeys((entry.session_ids if entry and plan.reason == "appended" else ()) + result.session_ids)),
            carry=result.carry,
            sample_sha256=_sample_hash(fd, fstat.size),
            card_ids=entry.card_ids if entry is not None else (),  # the pipeline puts this read's in
        )
    )


def read_file(path: str, host: str, entry: LedgerEntry | None, line_cap: int, blob_cap: int,
              nofollow: bool = False) -> CollectReport:
    """One log file read (read-only) from where its ledger `entry` ends, on any process.

    Its turns leave sanitized and pickled (`spool.pack`), ready for the run's spool (`absorb`): a
    worker never hands raw log text back, and the run's process never sanitizes it again.
    """
    out = CollectReport(spool=Packer(blob_cap))
    collect_file(Path(path), host, LedgerView({path: entry}), out, line_cap, nofollow)  # type: ignore[arg-type]
    return out


def collect(paths: list[Path], host: str = "auto", ledger: Ledger | None = None,
            follow_symlinks: bool = False, line_cap: int = DEFAULT_LINE_CAP) -> CollectReport:
    """Read every new or appended log under `paths` (read-only) into turns grouped by session.

    Args:
        paths: files or directories (`~/.claude/projects`, `~/.codex/sessions`, a repo with
            `.aider.chat.history.md`, …).
        host: a key of `READERS` or "auto" (detected per file from its first lines).
        ledger: where earlier reads are recorded; None reads every file from the start.
        follow_symlinks: also read links that resolve outside `paths`.
        line_cap: a longer line is skipped unread, as `bad_line_too_large`.
    """
    if host != "auto":
        reader_for(host)
    out = CollectReport()
    links: set[str] = set()
    for path in iter_candidates(paths, host, out.skipped, follow_symlinks, links):
        out.files_seen += 1
        collect_file(path, host, ledger, out, line_cap, nofollow=str(path) not in links)
    out.finish()
    return out


__all__ = ["READERS", "CollectReport", "collect", "collect_file", "read_file"]
