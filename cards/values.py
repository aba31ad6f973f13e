"""The plain values every stage passes along: `Turn`, `Experience`, `Source`, `Card`.

Host readers parse raw lines into `Turn`s at the boundary; nothing past them sees host JSON.
"""

from __future__ import annotations

import hashlib
import operator
from dataclasses import dataclass, field, fields, replace
from datetime import datetime


def _pickled_by_fields(cls):
    """Pickle `cls` as its constructor and its field values, in order.

    The spool pickles every turn of a run: the default for a slotted dataclass asks `fields()` of
    every object, a sixth of the spool's time (it gives the same objects back).
    """
    names = tuple(f.name for f in fields(cls))
    get = operator.attrgetter(*names)
    cls.__reduce__ = lambda self: (cls, get(self))
    return cls


SECTIONS = ("background", "goal", "evidence", "conclusion", "counterexamples", "follow_up")
SECTION_TITLES = {
    "background": "Background",
    "goal": "Goal",
    "evidence": "Evidence",
    "conclusion": "Conclusion",
    "counterexamples": "Counterexamples",
    "follow_up": "Follow-up",
}
STATUSES = ("active", "candidate", "incomplete", "superseded", "forgotten")
ROLES = ("user", "assistant", "tool", "system")
KINDS = ("text", "thinking", "tool_call", "tool_result", "error", "summary")


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Turn:
    """One thing said or done in a session, with where it came from."""

    host: str
    session_id: str
    seq: int
    role: str
    kind: str
    text: str
    timestamp: datetime | None = None
    tool_name: str = ""
    cwd: str = ""
    git_branch: str = ""
    source_file: str = ""
    line: int = 0
    is_sidechain: bool = False
    uuid: str = ""


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Experience:
    """One problem loop cut out of a session: the turns between two boundaries."""

    host: str
    session_id: str
    turns: tuple[Turn, ...]
    boundary: str = "start"
    error_signature: str = ""
    request: str = ""  # the user's request in force, for a piece cut mid-task (after a commit)

    @property
    def first_seq(self) -> int:
        return self.turns[0].seq

    @property
    def last_seq(self) -> int:
        return self.turns[-1].seq

    @property
    def source_file(self) -> str:
        return self.turns[0].source_file

    @property
    def lines(self) -> tuple[int, int]:
        return (min(t.line for t in self.turns), max(t.line for t in self.turns))

    @property
    def workspace(self) -> str:
        return next((t.cwd for t in self.turns if t.cwd), "")

    @property
    def started(self) -> datetime | None:
        return next((t.timestamp for t in self.turns if t.timestamp), None)

    @property
    def ended(self) -> datetime | None:
        return next((t.timestamp for t in reversed(self.turns) if t.timestamp), None)

    @property
    def id(self) -> str:
        return card_id(self.host, self.session_id, self.first_seq, self.last_seq)


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Source:
    """Where a card's evidence lives in the host logs."""

    session_id: str
    host: str
    file: str
    lines: tuple[int, int]
    turns: tuple[int, int]

    def to_dict(self) -> dict:
        return {
            "session_id": self.session_id,
            "host": self.host,
            "file": self.file,
            "lines": list(self.lines),
            "turns": list(self.turns),
        }

    @classmethod
    def from_dict(cls, d: dict) -> Source:
        return cls(
            session_id=str(d.get("session_id", "")),
            host=str(d.get("host", "")),
            file=str(d.get("file", "")),
            lines=tuple(int(x) for x in d.get("lines", (0, 0))),  # type: ignore[arg-type]
            turns=tuple(int(x) for x in d.get("turns", (0, 0))),  # type: ignore[arg-type]
        )


@dataclass(frozen=True, slots=True)
class Card:
    """One experience card: six sections plus the front matter that governs recall."""

    id: str
    title: str = ""  # the card file's `# ` heading; `display_title` falls back for older files
    status: str = "active"
    quality: str = "rule"
    topics: tuple[str, ...] = ()
    task_type: str = ""
    workspace: str = ""
    project: str = ""  # the workspace's project id (`cards.projects`); '' where the folder is no git project
    created: str = ""
    updated: str = ""
    sources: tuple[Source, ...] = ()
    supersedes: tuple[str, ...] = ()
    superseded_by: str = ""
    error_signature: str = ""
    gate: str = ""
    verified_by: str = ""  # "tN": a check that passed at turn N after the change, or the user confirming it there
    confirmed_by: str = ""  # "user": a person confirmed the card in `memoir review`
    background: str = ""
    goal: str = ""
    evidence: str = ""
    conclusion: str = ""
    counterexamples: str = ""
    follow_up: str = ""
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def with_(self, **changes) -> Card:
        return replace(self, **changes)

    def section(self, name: str) -> str:
        return getattr(self, name)


def per_turns(fn):
    """Cache `fn(turns)` by the identity of one tuple of turns (kept alive so its id is not reused).

    Segmenting, drafting and the rules ask several questions of the same experience; hashing every
    turn's text to look it up in an `lru_cache` costs more than some of the answers.
    """
    cache: dict[int, tuple[tuple, object]] = {}

    def wrapper(turns: tuple):
        hit = cache.get(id(turns))
        if hit is not None and hit[0] is turns:
            return hit[1]
        value = fn(turns)
        if len(cache) >= 512:
            cache.pop(next(iter(cache)))
        cache[id(turns)] = (turns, value)
        return value

    wrapper.cache_clear = cache.clear  # type: ignore[attr-defined]
    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    wrapper.__doc__ = fn.__doc__
    return wrapper


def card_id(host: str, session_id: str, first_seq: int, last_seq: int) -> str:
    """Stable id from the source session and turn range, never from the title."""
    digest = hashlib.sha256(f"{host}\0{session_id}\0{first_seq}\0{last_seq}".encode()).hexdigest()
    return f"c-{digest[:16]}"
