"""Private by default: the one place that decides the modes of everything under a memoir home.

Every folder memoir makes is 0700 and every file 0600, whatever the umask. Writers ask here for
their folders (`make_private_dir`), their files (`open_private`) and their SQLite files
(`private_db_file`, called before the database opens: SQLite gives `-wal`, `-shm` and `-journal`
the database file's own mode, so a 0600 database keeps its sidecars 0600 too). A home made before
this, or files another tool left, are tightened by `tighten_home` at the start of each run, and
`wider_modes` is what `memoir status` reports.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600
PRIVATE_UMASK = 0o077  # for a command or service of memoir's that writes only under the home


@contextmanager
def private_umask() -> Iterator[None]:
    """umask 0o077 for the block, then the caller's again: for a command or service that writes only
    under the home (serve, a flow run, the recall service, the hook, MCP), so what a writer memoir does
    not own makes there (Prefect's database and logs, a session file) is private too. The umask is
    the process's: use it around a command's whole work, never inside a library function."""
    old = os.umask(PRIVATE_UMASK)
    try:
        yield
    finally:
        os.umask(old)


def make_private_dir(path: Path | str) -> Path:
    """`mkdir -p`: each folder it makes is exactly 0700 whatever the umask; existing folders are left."""
    path = Path(path)
    if path.is_dir():
        return path
    missing = []
    here = path
    while not here.is_dir():
        missing.append(here)
        if here.parent == here:
            break
        here = here.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, DIR_MODE)
        except FileExistsError:
            if not folder.is_dir():
                raise
            continue  # another writer made it just now
        os.chmod(folder, DIR_MODE)  # ours, just made: the umask may have taken owner bits too
    return path


def open_private(path: Path | str, flags: int) -> int:
    """`os.open` with `O_CREAT`; a file it creates is 0600 (the umask can only take bits away)."""
    return os.open(path, flags | os.O_CREAT, FILE_MODE)


def private_db_file(path: Path | str) -> Path:
    """Make sure a SQLite file exists and a new one is 0600 before SQLite opens it.

    SQLite creates a database with 0644 less the umask, but a `-wal`, `-shm` or `-journal` with
    exactly the database file's mode: an empty 0600 file made here (SQLite reads an empty file
    as an empty database) keeps all of them private, whichever process opens them later.
    """
    path = Path(path)
    make_private_dir(path.parent)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE)
    except FileExistsError:
        return path
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    return path


def _walk(home: Path):
    """(path, lstat) for the home and everything under it; symlinks are neither followed nor named."""
    try:
        yield home, os.lstat(home)
    except OSError:
        return
    for root, dirs, files in os.walk(home, onerror=lambda exc: None):
        for name in (*dirs, *files):
            path = Path(root) / name
            try:
                yield path, os.lstat(path)
            except OSError:
                continue


def _allowed(st: os.stat_result) -> int | None:
    """The widest mode allowed for this entry, or None for entries that have no mode to keep (links)."""
    if stat.S_ISLNK(st.st_mode):
        return None
    return DIR_MODE if stat.S_ISDIR(st.st_mode) else FILE_MODE


def _label(home: Path, path: Path, mode: int) -> str:
    rel = path.relative_to(home).as_posix() if path != home else "."
    return f"{rel} {mode:04o}"


def wider_modes(home: Path | str) -> list[str]:
    """Each path under the home whose mode is wider than 0700 (folders) or 0600 (files), as 'path mode'."""
    home = Path(home)
    out = []
    for path, st in _walk(home):
        allowed = _allowed(st)
        mode = stat.S_IMODE(st.st_mode)
        if allowed is not None and mode & ~allowed:
            out.append(_label(home, path, mode))
    return out


def tighten_home(home: Path | str) -> list[str]:
    """Take group and other bits (and a file's execute bits) off everything under the home.

    Returns what it changed, as 'path oldmode' relative to the home; empty when all was private.
    """
    home = Path(home)
    changed = []
    for path, st in _walk(home):
        allowed = _allowed(st)
        mode = stat.S_IMODE(st.st_mode)
        if allowed is None or not mode & ~allowed:
            continue
        try:
            os.chmod(path, mode & allowed)
        except OSError:
            continue  # not ours to change (another owner): status keeps naming it
        changed.append(_label(home, path, mode))
    return changed


def tightened_note(changed: list[str]) -> str:
    """The run report's note for what `tighten_home` changed ('' when nothing)."""
    if not changed:
        return ""
    shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    return (f"made the home private: {len(changed)} path(s) had modes wider than "
            f"{DIR_MODE:04o}/{FILE_MODE:04o} and were tightened ({shown})")


def _folders(home: Path):
    """(path, lstat) for the home and each folder under it, files not touched (cheap on a large home)."""
    try:
        st = os.lstat(home)
    except OSError:
        return
    if not stat.S_ISDIR(st.st_mode):
        return
    yield home, st
    for root, dirs, _files in os.walk(home, onerror=lambda exc: None):
        for name in dirs:
            path = Path(root) / name
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                yield path, st


def _owner_name(uid: int) -> str:
    try:
        import pwd  # deferred: start-up (and not on every platform)

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return f"uid {uid}"


def home_owner(home: Path | str) -> str:
    """Who owns the home folder ('' when it does not exist yet): `memoir status` names it."""
    try:
        return _owner_name(os.stat(home).st_uid)
    except OSError:
        return ""


def foreign_folders(home: Path | str) -> list[str]:
    """The home and each folder in it that someone else could change: owned by another user, writable
    by others, or writable by a group other than the user's own. Each as 'path: why'; empty when the
    home is the owner's alone (or does not exist yet: memoir will make it 0700).

    Such a folder lets another user replace a card file, and the owner's next recall would inject it.
    """
    home = Path(home)
    me, my_group = os.geteuid(), os.getegid()
    out = []
    for path, st in _folders(home):
        rel = path.relative_to(home).as_posix() if path != home else str(home)
        mode = stat.S_IMODE(st.st_mode)
        if st.st_uid != me:
            out.append(f"{rel}: owned by {_owner_name(st.st_uid)}")
        elif mode & stat.S_IWOTH:
            out.append(f"{rel}: writable by every user ({mode:04o})")
        elif mode & stat.S_IWGRP and st.st_gid != my_group:
            out.append(f"{rel}: writable by group {st.st_gid} ({mode:04o})")
    return out
