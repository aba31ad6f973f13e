"""Finding the log files under the paths a run names: walked without recursion, links judged, each file once.

Nothing here opens a log: `cards.collect` reads what this finds. Whatever is passed over is
counted by reason (an unreadable folder, a link that leaves the named folders, a name that is not
UTF-8), never raised.
"""

from __future__ import annotations

import errno
import os
import stat as stat_mod
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from memoir.cards.hosts.registry import companion, shadowing_sibling, wants

_SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv"})


def _is_dir(path: Path) -> bool:
    try:
        return stat_mod.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False  # reported when the file itself is read, as `unreadable`


def _inside(real: str, roots: list[str]) -> bool:
    return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def _link_skip(path: str, roots: list[str], follow: bool) -> str | None:
    """Why a symlink met while walking is not read, or None to read it.

    A link that resolves outside the folders the user named is not followed unless asked: a
    `*.jsonl` link to a file elsewhere would otherwise put that file into cards. A loop or a
    dangling link is counted, never raised.
    """
    try:
        os.stat(path)
    except OSError as exc:
        return "symlink_loop" if exc.errno == errno.ELOOP else "symlink_broken"
    if not follow and not _inside(os.path.realpath(path), roots):
        return "symlink_outside"
    return None


def _walk(root: str, host: str, skipped: Counter, roots: list[str], follow: bool) -> list[tuple[Path, bool]]:
    """(path, is it a link) for each log file under `root`.

    A loop over a stack, not recursion (os.walk recurses on Python 3.11): no depth of folders can
    overflow the interpreter's stack and stop the run.
    """
    found: list[tuple[Path, bool]] = []
    stack = [root]
    walked: set[tuple[int, int]] = set()
    while stack:
        folder = stack.pop()
        if follow:  # a followed link back up the tree would walk forever
            key = _dir_key(folder)
            if key in walked:
                continue
            walked.add(key)
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            skipped["unreadable_dir"] += 1
            continue
        for entry in entries:
            try:
                link = entry.is_symlink()
            except OSError:
                skipped["unreadable"] += 1
                continue
            try:
                is_dir = entry.is_dir()
            except OSError:  # a link loop: _link_skip counts it
                is_dir = False
            if link and (why := _link_skip(entry.path, roots, follow)):
                skipped[why] += 1
                continue
            if not is_dir:
                if companion(entry.name):
                    skipped["session_part"] += 1  # a host's file beside its sessions (a message part, metadata)
                elif (better := shadowing_sibling(entry.name)) and os.path.exists(os.path.join(folder, better)):
                    skipped["shadowed_by_sibling"] += 1  # the sibling holds the same session, more fully
                elif wants(entry.name, host) or (host == "auto" and entry.name.endswith(".json")):
                    found.append((Path(entry.path), link))  # an unknown .json is read far enough to be counted
                continue
            if entry.name in _SKIP_DIRS:
                continue
            # A directory named like a log is surfaced so it is counted, not silently passed over.
            if wants(entry.name, host) and entry.name.endswith(".jsonl"):
                found.append((Path(entry.path), link))
            if follow or not link:  # a link inside the named folders is walked from where it points
                stack.append(entry.path)
    return found


def iter_candidates(paths: list[Path], host: str, skipped: Counter | None = None,
                    follow_symlinks: bool = False, links: set[str] | None = None) -> Iterator[Path]:
    """Log files under `paths`, sorted, each once; a path given as a file is always a candidate.

    A directory that cannot be listed is counted in `skipped` as `unreadable_dir`. Symlinks found
    while walking are read only when they resolve inside one of `paths` (or `follow_symlinks`);
    the others are counted by reason. A file reached twice (a link beside its target) is read once.
    A path that is not UTF-8 is counted as `non_utf8_name`. `links`, when given, gets each candidate
    that may be read through a link (one found as a link and allowed, or a file the user named): any
    other is opened without following links (`collect.collect_file`), so a file swapped for a link
    after this walk is not read.
    """
    seen: set[str] = set()
    real_dirs: dict[str, str] = {}
    skipped = Counter() if skipped is None else skipped
    roots = [os.path.realpath(Path(p).expanduser()) for p in paths]
    for root in paths:
        root = Path(root).expanduser()
        # A directory named like a log file is a candidate itself, counted `unreadable` when read.
        if _is_dir(root) and not (root.name.endswith(".jsonl") if host == "auto" else wants(root.name, host)):
            found = _walk(str(root), host, skipped, roots, follow_symlinks)
        else:
            found = [(root, True)]  # named by the user: read wherever it points
        for path, link in sorted(found):
            key = os.path.abspath(path)
            if not key.isascii() and not utf8_name(key):
                skipped["non_utf8_name"] += 1  # no card, ledger or index can hold its name
                continue
            if link:
                real = os.path.realpath(key)
            else:
                folder, name = os.path.split(key)
                if folder not in real_dirs:
                    real_dirs[folder] = os.path.realpath(folder)
                real = os.path.join(real_dirs[folder], name)
            if real not in seen:
                seen.add(real)
                if link and links is not None:
                    links.add(key)
                yield Path(key)


def utf8_name(name: str) -> bool:
    """Whether `name` can be written as UTF-8 (a card, the ledger and the index hold only that)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # bytes that are not UTF-8 come back from the OS as lone surrogates
        return False
    return True


def _dir_key(path: str) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (-1, hash(path))
    return (st.st_dev, st.st_ino)
