"""Project identity: a workspace is a project, known by its git identity, with the paths it was seen at as aliases.

A card's `workspace` is the folder its session ran in; a linked worktree, a moved folder or a
second clone of the same repository is another folder of the same project. The project's id is the
normalized `origin` URL (`github.com/acme/shop`: no scheme, credentials, port or `.git`, the host
lowercased) or, with no network remote, the repository's root commit (`root:<sha>`); a path a person
split off is `path:<folder>`. This module is the pure core: what git said (`GitFacts`) becomes an
id, and the registry (`ProjectMap`: alias paths, merges, names) answers which project a path or a
card is of. `cards/project_registry.py` is the I/O edge that asks git and keeps the map on disk.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from memoir.cards.errors import CardsError
from memoir.cards.values import Card

ROOT = "root:"  # a repository with no network remote: its first commit names it wherever it lies
PATH = "path:"  # a folder a person gave a project of its own (`memoir projects split`)
REGISTRY_VERSION = 1


@dataclass(frozen=True, slots=True)
class Project:
    """One project: its id, a short name people read, and every path it was seen at."""

    id: str
    name: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GitFacts:
    """What git said about one folder: enough to name its project, nothing more."""

    toplevel: str  # `rev-parse --show-toplevel`: the checkout (a linked worktree's own folder)
    common_dir: str  # `rev-parse --git-common-dir`: the repository every worktree of it shares
    remote: str = ""  # `config --get remote.origin.url`, as written
    roots: tuple[str, ...] = ()  # `rev-list --max-parents=0 HEAD`: none before the first commit


def norm_path(path: str) -> str:
    """A folder as the registry keys it: forward slashes, no trailing slash, `..` folded."""
    if not path:
        return ""
    return posixpath.normpath(path.replace("\\", "/")).rstrip("/") or "/"


def workspaces_near(a: str, b: str) -> bool:
    """Same directory, or one inside the other (a monorepo package and its root): the path rule."""
    a, b = norm_path(a), norm_path(b)
    return a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/")


def same_place(a_path: str, a_project: str, b_path: str, b_project: str) -> bool:
    """Do two workspaces count as one? Two projects are one when their ids are; two different
    projects never are, however their folders nest or are named. Where either side is no project
    (not a git folder, a card from before projects), the path rule decides (`workspaces_near`)."""
    if a_project and b_project:
        return a_project == b_project
    return bool(a_path and b_path) and workspaces_near(a_path, b_path)


def of_workspace(projects: ProjectMap, workspace: str) -> Callable[[str, str], bool]:
    """A test of `(folder, recorded project)`: is it of `workspace`, that is of its project, or
    (where either is no project) of its folder, one inside it or one it lies inside?"""
    here = projects.project_of(workspace)
    return lambda path, recorded="": bool(path) and same_place(
        workspace, here, path, projects.project_of(path, recorded))


def selects_workspace(projects: ProjectMap, wanted: str, folder: str, cards: Iterable[Card]) -> Callable[[Card], bool]:
    """`--workspace WANTED`'s test of a card: the cards of the project it names, wherever they were written (a
    linked worktree, a moved folder, a second clone). WANTED names it by a folder (`folder`: WANTED made absolute,
    a registered alias or a git folder), a project id, a project's name, or the name of a folder of its cards.
    A card of no project (or WANTED's folder of none) is compared by `same_place`'s path rule, or its folder's name."""
    cards = list(cards)
    here = projects.project_of(folder) if folder else ""
    ids = {projects.project_of(c.workspace, c.project) for c in cards} | {p.id for p in projects.projects()}
    named = {pid for pid in ids if pid and (pid == projects.canonical(wanted) or projects.name_of(pid) == wanted)}
    by_folder_name = {projects.project_of(c.workspace, c.project) for c in cards if _base(c.workspace) == wanted}
    targets = (named | by_folder_name | {here}) - {""}

    def test(card: Card) -> bool:
        pid = projects.project_of(card.workspace, card.project)
        if pid in targets or (folder and same_place(folder, here, card.workspace, pid)):
            return True
        return not pid and _base(card.workspace) == wanted

    return test


def _base(path: str) -> str:
    return posixpath.basename(norm_path(path))


def place_key(path: str, project: str) -> str:
    """The key cards of one workspace share: the project id, or the folder where there is none."""
    return project or norm_path(path)


def related_workspaces(a: str, b: str) -> bool:
    """The rules' path rule: the same folder, one inside the other (a monorepo and its package), or
    folders of the same name (one project seen from two machines, or through an Aider history's folder)."""
    if not a or not b:
        return False
    a, b = a.replace("\\", "/").rstrip("/") + "/", b.replace("\\", "/").rstrip("/") + "/"
    return a.startswith(b) or b.startswith(a) or a.rsplit("/", 2)[-2] == b.rsplit("/", 2)[-2]


def related_places(a_path: str, a_project: str, b_path: str, b_project: str) -> bool:
    """Two cards' workspaces are one for the rules: the same project, never two projects however
    their folders nest or are named; where either is no project, `related_workspaces`."""
    if a_project and b_project:
        return a_project == b_project
    return related_workspaces(a_path, b_path)


def place(card: Card) -> str:
    """The key the rules group a card's workspace by: its project, or its folder where there is none."""
    return place_key(card.workspace, card.project)


# --- remote URLs ---------------------------------------------------------------------------------

_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*)://(.*)$", re.I)
_SCP = re.compile(r"^(?:[^@/\s]+@)?([^:/\s]+):(?!//)(.+)$")  # git@host:a/b, host:a/b (no scheme)
_NETWORK_SCHEMES = frozenset({"http", "https", "ssh", "git", "git+ssh", "ssh+git", "ftp", "ftps"})


def normalize_remote(url: str) -> str:
    """`git@GitHub.com:acme/shop.git` and `https://user:tok@github.com/acme/shop/` alike become
    `github.com/acme/shop`; '' for a local path or a URL with no host (see `local_remote`)."""
    url = url.strip()
    m = _SCHEME.match(url)
    if m:
        if m.group(1).lower() not in _NETWORK_SCHEMES:
            return ""
        rest = m.group(2)
        host, _, path = rest.partition("/")
    else:
        if url.startswith(("/", ".", "~")) or re.match(r"^[A-Za-z]:[\\/]", url):
            return ""  # a local path (or a Windows drive), not a host
        s = _SCP.match(url)
        if not s:
            return ""
        host, path = s.group(1), s.group(2)
    host = host.rpartition("@")[2]  # credentials go
    host = re.sub(r":\d*$", "", host).lower()  # the port is how, not where: ssh and https share a project
    path = re.sub(r"/+", "/", path.strip("/"))
    path = re.sub(r"\.git$", "", path).strip("/")
    if not host or not path:
        return ""
    return f"{host}/{path}"


def local_remote(url: str, toplevel: str) -> str:
    """The folder a local `origin` names (`/srv/shop.git`, `file:///srv/shop`, `../shop`), or ''."""
    url = url.strip()
    if url.lower().startswith("file://"):
        url = url[7:]
    elif _SCHEME.match(url) or normalize_remote(url) or not url:
        return ""
    if not url.startswith("/"):
        url = posixpath.join(toplevel, url)
    return norm_path(url)


def identity(facts: GitFacts) -> str:
    """The project id git's answers give: the network remote, else the root commit ('' before the
    first commit of a repository with no network remote: not a project yet)."""
    remote = normalize_remote(facts.remote)
    if remote:
        return remote
    return ROOT + min(facts.roots) if facts.roots else ""


def main_checkout(facts: GitFacts) -> str:
    """The folder of the repository's main checkout: a worktree's `common_dir` is `<main>/.git`."""
    common = norm_path(facts.common_dir)
    return posixpath.dirname(common) if common.endswith("/.git") else norm_path(facts.toplevel)


def project_name(pid: str, folder: str = "") -> str:
    """A short name for a project: the last part of its URL, else its folder's name."""
    if pid and not pid.startswith((ROOT, PATH)):
        return pid.rsplit("/", 1)[-1]
    if pid.startswith(PATH):
        folder = pid[len(PATH):]
    return posixpath.basename(norm_path(folder)) or pid[:16]


# --- the registry's content ------------------------------------------------------------------------


@dataclass(frozen=True)
class ProjectMap:
    """The registry: each alias path's project, projects merged into others, and names.

    `paths` holds the id a path was given (by git, or by a person's split); `merged` maps an id to
    the one a person merged it into. `project_of` is the one question everything else asks.
    """

    paths: Mapping[str, str] = field(default_factory=dict)
    merged: Mapping[str, str] = field(default_factory=dict)
    names: Mapping[str, str] = field(default_factory=dict)

    def canonical(self, pid: str) -> str:
        """The project `pid` stands for now, after every merge (a loop in a hand-edited file stops)."""
        seen = {pid}
        while pid in self.merged:
            pid = self.merged[pid]
            if pid in seen:
                break
            seen.add(pid)
        return pid

    def known(self, path: str) -> str:
        """The project a registered path is of, or '' when the registry does not know the path."""
        pid = self.paths.get(norm_path(path), "")
        return self.canonical(pid) if pid else ""

    def project_of(self, path: str, recorded: str = "") -> str:
        """A card's or a prompt's project: what the registry says of its path (a person's split wins),
        else the id recorded in the card, after merges; '' when neither says."""
        return self.known(path) or (self.canonical(recorded) if recorded else "")

    def aliases(self, pid: str) -> tuple[str, ...]:
        """Every registered path of project `pid` (after merges), sorted."""
        return tuple(sorted(p for p, q in self.paths.items() if self.canonical(q) == pid))

    def name_of(self, pid: str) -> str:
        return self.names.get(pid) or project_name(pid, next(iter(self.aliases(pid)), ""))

    def with_paths(self, found: Mapping[str, str], names: Mapping[str, str] | None = None) -> ProjectMap:
        """The map with `found` (path -> id) and `names` (id -> name) added; names already known stay."""
        return replace(self, paths={**self.paths, **{norm_path(p): i for p, i in found.items()}},
                       names={**(names or {}), **self.names})

    def projects(self, recorded: Iterable[str] = ()) -> list[Project]:
        """Every project the map or the cards (`recorded` ids) name, by id."""
        ids = {self.canonical(p) for p in self.paths.values()} | {self.canonical(r) for r in recorded if r}
        return [Project(pid, self.name_of(pid), self.aliases(pid)) for pid in sorted(ids)]

    def to_json(self) -> dict:
        return {"version": REGISTRY_VERSION, "paths": dict(sorted(self.paths.items())),
                "merged": dict(sorted(self.merged.items())), "names": dict(sorted(self.names.items()))}

    @classmethod
    def from_json(cls, data: object) -> ProjectMap:
        """The map in a registry file; what is not a string-to-string table is left out."""
        def table(key: str) -> dict[str, str]:
            value = data.get(key) if isinstance(data, dict) else None
            if not isinstance(value, dict):
                return {}
            return {str(k): v for k, v in value.items() if isinstance(v, str) and v}

        paths = {norm_path(k): v for k, v in table("paths").items()}
        return cls(paths=paths, merged=table("merged"), names=table("names"))


def with_project(card: Card, projects: ProjectMap | None) -> Card:
    """`card` with the project its folder is of now (`ProjectMap.project_of`); itself when unchanged or no map."""
    if projects is None:
        return card
    pid = projects.project_of(card.workspace, card.project)
    return card if pid == card.project else card.with_(project=pid)


class ProjectChangeRefused(CardsError):
    """A merge or split that cannot be done; the message says why."""


def plan_merge(m: ProjectMap, keep: str, fold: str) -> ProjectMap:
    """`fold`'s aliases and cards become `keep`'s: `fold` is recorded as merged into `keep`."""
    keep, fold = m.canonical(keep), m.canonical(fold)
    if keep == fold:
        raise ProjectChangeRefused(f"both name project {keep} already: nothing to merge")
    return replace(m, merged={**m.merged, fold: keep})


def plan_split(m: ProjectMap, path: str) -> tuple[ProjectMap, str]:
    """`path` (and the registered paths under it of the same project) gets a project of its own,
    `path:<folder>`; returns the new map and the new id."""
    at = norm_path(path)
    own = PATH + at
    current = m.known(at)
    if current == own:
        raise ProjectChangeRefused(f"{at} is already a project of its own ({own})")
    moved = {p: own for p, q in m.paths.items()
             if (p == at or p.startswith(at.rstrip("/") + "/")) and m.canonical(q) == current}
    moved[at] = own
    return replace(m, paths={**m.paths, **moved}, names={**m.names, own: project_name(own)}), own
