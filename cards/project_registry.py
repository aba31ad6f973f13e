"""The I/O edge of project identity: ask git about a folder, once, and keep the answer in `state/projects.json`.

git is asked read-only (`rev-parse`, `config --get`, `rev-list`, with `--no-optional-locks`) and
with a short timeout; a folder that no longer exists, a machine without git or a folder git does
not know is no error: the registry's alias map decides, or the folder is no project. Every path
git named a project for is written down, so recall (a hook's 300 ms) asks git at most once per
new folder and otherwise reads one small file, and only when it changed.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from memoir.cards.private import make_private_dir, open_private
from memoir.cards.projects import (
    GitFacts, ProjectMap, identity, local_remote, main_checkout, norm_path, of_workspace, plan_merge, plan_split,
    project_name, selects_workspace,
)
from memoir.cards.sanitize.fields import sanitize_field
from memoir.cards.store import write_atomic
from memoir.cards.values import Card

REGISTRY_FILE = "projects.json"
LOCK_FILE = "projects.lock"
# `rev-parse` answers in milliseconds; a folder on a hung network mount must hold neither a run nor a recall.
GIT_TIMEOUT_S = 2.0
MAX_HOPS = 3  # a clone of a clone of a clone: local `origin`s are followed this far to the project they copy
# Global options on every call: take no optional lock (nothing in the repository is ever written)
# and start no fsmonitor daemon on the user's behalf.
GIT_OPTIONS = ("--no-optional-locks", "-c", "core.fsmonitor=false")

Git = Callable[..., "str | None"]


def registry_key(path: str) -> str:
    """A folder as the registry writes it: normalized and sanitized like a card's `workspace` (a path
    holding an e-mail address is kept as `/home/[REDACTED:email:17]/…`), so a card's folder finds it."""
    return norm_path(sanitize_field(norm_path(path)))


def run_git(path: str, *args: str) -> str | None:
    """git's output for `git -C path args…`, or None: no git, not a repository, an error or a timeout."""
    import subprocess  # deferred: start-up

    try:
        done = subprocess.run(["git", *GIT_OPTIONS, "-C", path, *args], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_S, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return done.stdout if done.returncode == 0 else None


def git_facts(path: str, git: Git = run_git) -> GitFacts | None:
    """What git says about the folder `path`: None when it is gone, or no git repository (or no git)."""
    if not path or not os.path.isdir(path):
        return None
    out = git(path, "rev-parse", "--show-toplevel", "--git-common-dir")
    lines = (out or "").splitlines()
    if len(lines) < 2 or not lines[0].strip():
        return None  # not a repository, or a bare one (no checkout: no session works in it)
    top, common = lines[0].strip(), lines[1].strip()
    common = common if os.path.isabs(common) else os.path.join(path, common)
    remote = (git(path, "config", "--get", "remote.origin.url") or "").strip()
    roots = tuple(sorted((git(path, "rev-list", "--max-parents=0", "HEAD") or "").split()))
    return GitFacts(toplevel=norm_path(top), common_dir=norm_path(common), remote=remote, roots=roots)


def project_for(facts: GitFacts, known: ProjectMap, git: Git = run_git, hops: int = MAX_HOPS) -> str:
    """The id `facts` name: a registered checkout's project (a person's split or merge stands), else
    the network remote, else, for a clone of a folder, that folder's project, else the root commit."""
    if pid := known.paths.get(registry_key(facts.toplevel)):
        return pid
    origin = local_remote(facts.remote, facts.toplevel)
    if origin and hops > 0:
        # A clone of a local folder: its `origin` is a place, not a name. The folder it copies says
        # which project it is (its own remote, or the root commit both share).
        if pid := known.paths.get(registry_key(origin)):
            return pid
        copied = git_facts(origin, git)
        if copied is not None and copied.toplevel != facts.toplevel:
            return project_for(copied, known, git, hops - 1)
    return sanitize_field(identity(facts))  # as a card file records it


class ProjectRegistry:
    """`state/projects.json`: read when it changed, written atomically (0600) under a lock file.

    Args:
        state_dir: the memoir home's state folder.
        git: how git is asked (`run_git`); tests pass another only to count the calls.
    """

    def __init__(self, state_dir: Path | str, git: Git = run_git):
        self.path = Path(state_dir) / REGISTRY_FILE
        self._git = git
        self._map = ProjectMap()
        self._stamp: tuple | None = None
        self._unknown: set[str] = set()  # folders git named no project for, asked once per process
        self._unwritten: tuple[dict[str, str], dict[str, str]] = ({}, {})  # learnt with `register` off: paths, names
        self._lock = threading.Lock()

    def load(self) -> ProjectMap:
        """The registry as it is on disk now; an empty map when there is none or it cannot be read."""
        try:
            st = os.stat(self.path)
        except OSError:
            return ProjectMap()
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        with self._lock:
            if stamp != self._stamp:
                self._map, self._stamp = _read(self.path), stamp
            return self._map

    def resolve(self, path: str) -> str:
        """The project of the folder `path` ('' for none): the registry, else git once (then registered)."""
        return self.learn([path]).project_of(registry_key(path)) if path else ""

    def learn(self, paths: Iterable[str], register: bool = True) -> ProjectMap:
        """Ask git about every folder the registry does not know yet, register what it names, and
        return the map. A folder that is gone or no project is asked again only by a new process.
        `register` off: the answers are in the map returned and nothing is written (`memoir status`)."""
        paths_seen, names_seen = self._unwritten
        known = self.load().with_paths({p: i for p, i in paths_seen.items() if p not in self.load().paths}, names_seen)
        new = {registry_key(p): p for p in sorted({norm_path(p) for p in paths if p})}
        found: dict[str, str] = {}
        names: dict[str, str] = {}
        for key, path in new.items():
            if key in known.paths or key in self._unknown:
                continue
            facts = git_facts(path, self._git)  # the folder as it is: git is asked of the real path
            pid = project_for(facts, known, self._git) if facts is not None else ""
            if not pid:
                self._unknown.add(key)
                continue
            found[key] = pid
            found.setdefault(registry_key(facts.toplevel), pid)  # the checkout: a folder inside it takes its project
            names.setdefault(pid, sanitize_field(project_name(pid, main_checkout(facts))))
        if not found:
            return known
        if not register:
            self._unwritten = ({**paths_seen, **found}, {**names, **names_seen})
            return known.with_paths(found, names)
        return self.update(lambda m: m.with_paths({p: i for p, i in found.items() if p not in m.paths}, names))

    def merge(self, keep: str, fold: str) -> ProjectMap:
        """Project `fold` (its aliases and its cards) counts as `keep` from now on."""
        return self.update(lambda m: plan_merge(m, keep, fold))

    def split(self, path: str) -> tuple[ProjectMap, str]:
        """`path` gets a project of its own again; returns the map and the new project's id."""
        out: list[str] = []

        def change(m: ProjectMap) -> ProjectMap:
            new, own = plan_split(m, registry_key(path))
            out.append(own)
            return new

        return self.update(change), out[0]

    def update(self, change: Callable[[ProjectMap], ProjectMap]) -> ProjectMap:
        """Read, change and write the registry under its lock: a run and a recall may both register."""
        make_private_dir(self.path.parent)
        fd = open_private(self.path.parent / LOCK_FILE, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            new = change(_read(self.path))
            write_atomic(self.path, json.dumps(new.to_json(), indent=1, sort_keys=True) + "\n")
        finally:
            os.close(fd)  # closing drops the lock
        with self._lock:
            self._stamp = None  # read back on the next `load`: one stat, then the file as written
        return new


def workspace_test(state_dir: Path | str, workspace: str) -> Callable[[str, str], bool] | None:
    """For a search kept to `workspace`: `projects.of_workspace` over the registry (git asked once
    if the folder is new to it); None when no workspace is given."""
    if not workspace:
        return None
    return of_workspace(ProjectRegistry(state_dir).learn([workspace]), workspace)


def workspace_selector(registry: ProjectRegistry, wanted: str, cards: Iterable[Card],
                       register: bool = True) -> Callable[[Card], bool]:
    """`--workspace WANTED` of `memoir review` and `memoir status`: `projects.selects_workspace` over the registry,
    git asked once about WANTED's folder and the folders of cards that recorded no project."""
    cards = list(cards)
    folder = os.path.abspath(os.path.expanduser(wanted))
    known = registry.learn([folder, *(c.workspace for c in cards if not c.project)], register)
    return selects_workspace(known, wanted, registry_key(folder), cards)


def _read(path: Path) -> ProjectMap:
    try:
        return ProjectMap.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return ProjectMap()  # a damaged registry is rebuilt from git's answers as folders come back

