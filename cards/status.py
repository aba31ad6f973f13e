"""Status accounting: card counts read from the card files, a run history, and the append-only alarm.

The counts are always computed from the files on disk (they are the truth); the state dir keeps
what only a run can know: how many cards each run added and superseded (`runs.jsonl`) and when
an alarm was raised or cleared (`alarms.jsonl`). Both logs are appended to, and pruned only by the
run's retention (`cards/retention.py`, settings keep_runs / keep_days).

`StatusReport` is built from sections so later stages (queue depth, model incidents) add theirs
with `with_sections` instead of editing this module.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from memoir.cards.review import REJECTED
from memoir.cards.values import STATUSES, Card
from memoir.cards.sanitize.fields import sanitize_field, sanitize_value
from memoir.cards.private import DIR_MODE, FILE_MODE, foreign_folders, home_owner, wider_modes
from memoir.cards.project_registry import ProjectRegistry, workspace_selector
from memoir.cards.projects import ProjectMap
from memoir.cards.store import CardStore
from memoir.cards.jsonl import append_jsonl, read_jsonl

COUNTED = STATUSES + ("rejected",)  # what a count is kept under: the statuses, and rejected in review
RUNS_FILE = "runs.jsonl"
ALARMS_FILE = "alarms.jsonl"
SHOWN_RUNS = 10
SHOWN_ALARM_HISTORY = 10

APPEND_ONLY = "append_only_never_superseded"
# name -> runbook page: every alarm this module can raise has one.
ALARMS = {APPEND_ONLY: "runbooks/append-only-never-superseded.md"}

log = logging.getLogger("memoir.status")


@dataclass(frozen=True)
class Counts:
    """Cards per status. The four that matter for recall come first; `forgotten` are tombstones.

    `rejected` are cards a person rejected in review: a candidate in the file (`gate:
    rejected_by_user`), but no longer waiting for anyone, so not counted as candidate.
    """

    active: int = 0
    superseded: int = 0
    candidate: int = 0
    incomplete: int = 0
    forgotten: int = 0
    rejected: int = 0

    @property
    def total(self) -> int:
        return sum(getattr(self, s) for s in COUNTED)

    def to_dict(self) -> dict[str, int]:
        return {s: getattr(self, s) for s in COUNTED} | {"total": self.total}

    @classmethod
    def from_dict(cls, d: Mapping[str, int]) -> Counts:
        return cls(**{s: int(d.get(s, 0)) for s in COUNTED})

    def line(self) -> str:
        return ", ".join(f"{getattr(self, s)} {s}" for s in COUNTED)


def counted_as(card: Card) -> str:
    """The one name a card is counted under, everywhere a count is shown (`COUNTED`).

    An unknown status (a hand edit) counts as candidate, the cautious reading; a candidate a
    person rejected in review counts as rejected.
    """
    if card.status == "candidate" and card.gate == REJECTED:
        return "rejected"
    return card.status if card.status in STATUSES else "candidate"


def count_cards(cards: Iterable[Card]) -> Counts:
    """Counts per `counted_as` name."""
    seen = Counter(counted_as(c) for c in cards)
    return Counts(**{s: seen[s] for s in COUNTED})


def counts_by_workspace(cards: Iterable[Card]) -> dict[str, Counts]:
    groups: dict[str, list[Card]] = {}
    for card in cards:
        groups.setdefault(card.workspace or "(none)", []).append(card)
    return {ws: count_cards(groups[ws]) for ws in sorted(groups)}


@dataclass(frozen=True)
class PlaceCounts:
    """One project's cards (`id` its project id), or one folder's where the folder is of no project (`id` '')."""

    id: str
    name: str
    folders: tuple[str, ...]
    counts: Counts

    def to_dict(self) -> dict:
        return {"id": self.id, "name": self.name, "folders": list(self.folders), "counts": self.counts.to_dict()}


def counts_by_project(cards: Iterable[Card], projects: ProjectMap) -> list[PlaceCounts]:
    """Counts per project (a worktree's, a moved folder's and a clone's cards are their project's), then per
    folder of no project; by name. A card's project is what the registry says of its folder, else its own."""
    groups: dict[tuple[str, str], list[Card]] = {}
    for card in cards:
        pid = projects.project_of(card.workspace, card.project)
        groups.setdefault((pid, "" if pid else card.workspace or "(none)"), []).append(card)
    out = [PlaceCounts(pid, projects.name_of(pid) if pid else folder,
                       tuple(sorted({c.workspace or "(none)" for c in group})), count_cards(group))
           for (pid, folder), group in groups.items()]
    return sorted(out, key=lambda p: (not p.id, p.name, p.id, p.folders))


def candidate_conflicts(cards: Iterable[Card]) -> list[tuple[str, str]]:
    """Pairs the rule stage could not settle (`conflicts_with` on a card still waiting as candidate)."""
    pairs = set()
    for card in cards:
        if card.status != "candidate":
            continue
        for other in card.extra.get("conflicts_with") or ():
            pairs.add(tuple(sorted((card.id, str(other)))))
    return sorted(pairs)  # type: ignore[arg-type]


@dataclass(frozen=True)
class RunRecord:
    """One line of `runs.jsonl`: what a run changed and the counts it left behind."""

    finished: str
    added: int
    superseded: int
    merged: int = 0
    dropped: int = 0
    conflicts: int = 0
    counts: Counts = Counts()
    alarms: tuple[str, ...] = ()
    skipped: tuple[tuple[str, int], ...] = ()  # (reason, count), sorted: what the run could not read

    def to_dict(self) -> dict:
        return {
            "finished": self.finished, "added": self.added, "superseded": self.superseded,
            "merged": self.merged, "dropped": self.dropped, "conflicts": self.conflicts,
            "counts": self.counts.to_dict(), "alarms": list(self.alarms), "skipped": dict(self.skipped),
        }

    @classmethod
    def from_dict(cls, d: Mapping) -> RunRecord:
        return cls(
            finished=str(d.get("finished", "")), added=int(d.get("added", 0)),
            superseded=int(d.get("superseded", 0)), merged=int(d.get("merged", 0)),
            dropped=int(d.get("dropped", 0)), conflicts=int(d.get("conflicts", 0)),
            counts=Counts.from_dict(d.get("counts") or {}), alarms=tuple(d.get("alarms") or ()),
            skipped=_reasons(d.get("skipped")),
        )


def _reasons(value: object) -> tuple[tuple[str, int], ...]:
    """A run record's skipped counts; records written before they were kept have none."""
    if not isinstance(value, Mapping):
        return ()
    out = []
    for reason, n in value.items():
        try:
            out.append((str(reason), int(n)))
        except (TypeError, ValueError):
            continue
    return tuple(sorted(out))


@dataclass(frozen=True)
class Alarm:
    """Something a person must look at; `line` is what goes to the log and to `memoir status`."""

    name: str
    detail: str

    @property
    def runbook(self) -> str:
        return ALARMS[self.name]

    @property
    def line(self) -> str:
        return f"memoir incident {self.name}: {self.detail}; runbook {self.runbook}"

    def to_dict(self) -> dict:
        return {"name": self.name, "detail": self.detail, "runbook": self.runbook, "line": self.line}


def append_only_alarm(runs: Sequence[RunRecord], window: int) -> Alarm | None:
    """Raised when each of the last `window` runs that added cards superseded none.

    Runs that added nothing say nothing about conflict detection, so they neither count nor
    clear the alarm. `window` <= 0 turns the alarm off.
    """
    if window <= 0:
        return None
    busy = [r for r in runs if r.added or r.superseded]
    last = busy[-window:]
    if len(last) < window or any(r.superseded for r in last):
        return None
    added = sum(r.added for r in last)
    return Alarm(
        APPEND_ONLY,
        f"{added} cards added over the last {window} runs that added cards and none superseded; "
        "same-topic conflict detection may not be working",
    )


# --- the state dir logs ------------------------------------------------------------------------------


def _append_line(path: Path, record: Mapping) -> None:
    """One JSON line, flushed and fsynced. Every string in it is sanitized first."""
    append_jsonl(path, sanitize_value(dict(record)))


def read_runs(state_dir: Path) -> list[RunRecord]:
    return [RunRecord.from_dict(d) for d in read_jsonl(Path(state_dir) / RUNS_FILE)]


def read_alarm_history(state_dir: Path) -> list[dict]:
    return read_jsonl(Path(state_dir) / ALARMS_FILE)


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def record_run(
    state_dir: Path,
    *,
    added: int,
    superseded: int,
    counts: Counts | Mapping[str, int],
    merged: int = 0,
    dropped: int = 0,
    conflicts: int = 0,
    append_only_runs: int = 5,
    finished: str | None = None,
    skipped: Mapping[str, int] | None = None,
) -> RunRecord:
    """Append this run to `runs.jsonl`, then raise or clear alarms (each transition logged once).

    Args:
        state_dir: settings.state_dir.
        added: new card files this run wrote.
        superseded: cards this run marked superseded.
        counts: card counts after the run (`count_cards` over the library).
        append_only_runs: settings.append_only_runs, the alarm's window.
        finished: ISO timestamp; now (UTC) by default.
        skipped: what the run skipped, by reason (the run summary's counts).

    Returns:
        The record written, with the names of the alarms standing after this run.
    """
    state_dir = Path(state_dir)
    counts = counts if isinstance(counts, Counts) else Counts.from_dict(counts)
    record = RunRecord(finished or _now(), added, superseded, merged, dropped, conflicts, counts,
                       skipped=_reasons(dict(skipped or {})))
    history = read_runs(state_dir) + [record]
    standing = [a for a in (append_only_alarm(history, append_only_runs),) if a is not None]
    record = replace(record, alarms=tuple(a.name for a in standing))
    _append_line(state_dir / RUNS_FILE, record.to_dict())
    _log_transitions(state_dir, standing, record.finished)
    return record


def _log_transitions(state_dir: Path, standing: list[Alarm], at: str) -> None:
    last_state = {d.get("name"): d.get("state") for d in read_alarm_history(state_dir)}
    raised = {a.name: a for a in standing}
    for name in sorted(ALARMS):
        if name in raised and last_state.get(name) != "raised":
            log.warning(sanitize_field(raised[name].line))
            _append_line(state_dir / ALARMS_FILE, {"at": at, "state": "raised", **raised[name].to_dict()})
        elif name not in raised and last_state.get(name) == "raised":
            _append_line(state_dir / ALARMS_FILE, {"at": at, "state": "cleared", "name": name, "runbook": ALARMS[name]})


# --- the report ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StatusSection:
    """One block of `memoir status`: `data` goes to --json under `name`, `lines` to the terminal."""

    name: str
    data: object
    lines: tuple[str, ...] = ()


@dataclass(frozen=True)
class StatusReport:
    """Everything `memoir status` shows. Core sections are fields; later stages append `sections`."""

    cards_dir: str
    counts: Counts
    workspaces: dict[str, Counts]
    conflicts: list[tuple[str, str]]
    alarms: list[Alarm]
    alarm_history: list[dict]
    runs: list[RunRecord]
    unreadable: list[str] = field(default_factory=list)
    sections: tuple[StatusSection, ...] = ()
    projects: tuple[PlaceCounts, ...] = ()
    workspace: str = ""  # `--workspace`: the counts are of its project's cards alone

    def with_sections(self, *more: StatusSection) -> StatusReport:
        return replace(self, sections=self.sections + tuple(more))

    def to_dict(self) -> dict:
        data = {
            "cards_dir": self.cards_dir,
            "counts": self.counts.to_dict(),
            "workspaces": {ws: c.to_dict() for ws, c in self.workspaces.items()},
            "projects": [p.to_dict() for p in self.projects],
            "workspace": self.workspace or None,
            "conflicts": [list(p) for p in self.conflicts],
            "alarms": [a.to_dict() for a in self.alarms],
            "alarm_history": self.alarm_history,
            "runs": [r.to_dict() for r in self.runs],
            "unreadable": self.unreadable,
        }
        for section in self.sections:
            data[section.name] = section.data
        return data

    def lines(self) -> list[str]:
        scope = f" of workspace {self.workspace}'s project" if self.workspace else ""
        out = [f"cards      {self.counts.line()} ({self.counts.total} files{scope} in {self.cards_dir})"]
        for place in self.projects:
            out.append(f"  {place.name} ({place.id}): {place.counts.line()}" if place.id
                       else f"  {place.name}: {place.counts.line()} (no project: by folder)")
            if place.id and len(place.folders) == 1:
                out.append(f"    {place.folders[0]}")
            elif place.id:  # a worktree, a clone, a moved folder: each folder's share of the project's cards
                out += [f"    {ws}: {self.workspaces[ws].line()}" for ws in place.folders if ws in self.workspaces]
        if self.workspace and not self.counts.total:
            out.append(f"  no card of {self.workspace}'s project (`memoir projects` lists the projects)")
        for a, b in self.conflicts:
            out.append(f"conflict   {a} ↔ {b} (both candidate; settle by editing one card's status)")
        for alarm in self.alarms:
            out.append(f"ALARM      {alarm.line}")
        if not self.alarms:
            out.append("alarms     none")
        for run in self.runs:
            out.append(
                f"run        {run.finished}  +{run.added} added, {run.superseded} superseded, "
                f"{run.merged} merged, {run.conflicts} conflicts"
            )
        if not self.runs:
            out.append("runs       none recorded yet (memoir run records one per run)")
        for problem in self.unreadable:
            out.append(f"unreadable {problem}")
        for section in self.sections:
            out.extend(section.lines)
        return out


def plan_status(
    cards: Sequence[Card],
    runs: Sequence[RunRecord],
    *,
    cards_dir: str = "",
    append_only_runs: int = 5,
    alarm_history: Sequence[dict] = (),
    unreadable: Sequence[str] = (),
    projects: ProjectMap | None = None,
    workspace: str = "",
) -> StatusReport:
    """The report from parsed cards and run history, grouped by `projects`' projects; pure. `workspace` names
    what `cards` were selected by (`--workspace`); the run history and alarms are the whole home's."""
    alarm = append_only_alarm(runs, append_only_runs)
    return StatusReport(
        cards_dir=cards_dir,
        counts=count_cards(cards),
        workspaces=counts_by_workspace(cards),
        conflicts=candidate_conflicts(cards),
        alarms=[alarm] if alarm else [],
        alarm_history=list(alarm_history)[-SHOWN_ALARM_HISTORY:],
        runs=list(runs)[-SHOWN_RUNS:],
        unreadable=list(unreadable),
        projects=tuple(counts_by_project(cards, projects or ProjectMap())),
        workspace=workspace,
    )


def build_status(cards_dir: Path, state_dir: Path, append_only_runs: int = 5, workspace: str = "") -> StatusReport:
    """Read the card files, the project registry and the state dir logs, then plan the report.

    `workspace` (a folder, a project id or name) keeps the counts to its project's cards. git is asked about
    folders the registry does not know, and nothing is written: status only reads the home.
    """
    store = CardStore(cards_dir, state_dir)
    cards, unreadable = store.load_all()
    registry = ProjectRegistry(state_dir)
    projects = registry.learn({c.workspace for c in cards if not c.project}, register=False)
    if workspace:
        chosen = workspace_selector(registry, workspace, cards, register=False)
        cards = [c for c in cards if chosen(c)]
    return plan_status(
        cards,
        read_runs(state_dir),
        cards_dir=str(cards_dir),
        append_only_runs=append_only_runs,
        alarm_history=read_alarm_history(state_dir),
        unreadable=unreadable,
        projects=projects,
        workspace=workspace,
    )


SHOWN_WIDE_MODES = 5


def privacy_section(home: Path) -> StatusSection:
    """Where the home is and who owns it; folders another user could change (memoir refuses such a home);
    paths with modes wider than 0700 (folders) / 0600 (files)."""
    wide = wider_modes(home)
    foreign = foreign_folders(home)
    owner = home_owner(home)
    data = {"home": str(home), "owner": owner, "foreign": foreign, "private": not wide and not foreign,
            "dir_mode": f"{DIR_MODE:04o}", "file_mode": f"{FILE_MODE:04o}", "wider": wide}
    lines = [f"home       {home}" + (f" (owner {owner})" if owner else " (not made yet)")]
    if foreign:
        lines.append(f"privacy    REFUSED: {len(foreign)} folder(s) another user could change; every command but "
                     "`status` refuses this home and the hook injects nothing (`--allow-shared-home` overrides)")
        lines += [f"  shared   {f}" for f in foreign[:SHOWN_WIDE_MODES]]
    if not wide:
        return StatusSection("privacy", data, tuple(lines))
    lines += [f"privacy    {len(wide)} path(s) under {home} wider than {DIR_MODE:04o}/{FILE_MODE:04o}: other "
              f"users may read them; the next `memoir run` tightens them (or `chmod -R go-rwx {home}`)"]
    lines += [f"  wide     {w}" for w in wide[:SHOWN_WIDE_MODES]]
    if len(wide) > SHOWN_WIDE_MODES:
        lines.append(f"  wide     … and {len(wide) - SHOWN_WIDE_MODES} more (`memoir status --json`)")
    return StatusSection("privacy", data, tuple(lines))
