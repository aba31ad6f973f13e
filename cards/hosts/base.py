"""What every host reader returns, and the small helpers they share.

A reader is a pure function `read(data, path, start_line=0, carry=Carry()) -> ReadReport`:
`data` is the bytes of a file from some offset on, `start_line` the number of lines before that
offset, `carry` what an earlier read of the same file learnt (session id, cwd, next turn seq).
"""

from __future__ import annotations

import itertools
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import PurePath

from memoir.cards.errors import CardsError

from memoir.cards.hosts.strip import strip_injected
from memoir.cards.values import Turn
from memoir.cards.sanitize.scan import find_secrets
from memoir.cards.sanitize.fields import sanitize_json_text, sanitize_value

TOOL_CALL_CHARS = 2000  # a call's arguments: enough to see what was run, not a pasted file
TOOL_RESULT_CHARS = 4000  # head and tail of an output keep the command echo and the final error
TEXT_CHARS = 20000  # a single message; longer ones are pastes, the sanitizer caps them further
EMPTY_OUTPUT = "(no output)"  # a silent successful command is still a result the segmenter needs


class ReaderError(CardsError):
    """A reader was asked for a host it does not know."""


@dataclass(frozen=True, slots=True)
class Carry:
    """State one read hands to the next read of the same file (stored in the ledger)."""

    session_id: str = ""
    cwd: str = ""
    git_branch: str = ""
    started: str = ""
    seqs: tuple[tuple[str, int], ...] = ()

    def next_seq(self, session_id: str) -> int:
        return dict(self.seqs).get(session_id, 0)

    def to_dict(self) -> dict:
        return {
            "session_id": self.session_id,
            "cwd": self.cwd,
            "git_branch": self.git_branch,
            "started": self.started,
            "seqs": [list(p) for p in self.seqs],
        }

    @classmethod
    def from_dict(cls, d: dict) -> Carry:
        return cls(
            session_id=str(d.get("session_id", "")),
            cwd=str(d.get("cwd", "")),
            git_branch=str(d.get("git_branch", "")),
            started=str(d.get("started", "")),
            seqs=tuple((str(s), int(n)) for s, n in d.get("seqs", ())),
        )


@dataclass(frozen=True, slots=True)
class ReadReport:
    """Turns read from one chunk of a file, what was skipped by reason, and where to go on.

    `consumed`/`lines` cover whole lines only. `resume_at`/`resume_line` (relative to the chunk)
    is where the next read must start; it equals `consumed` except for formats whose sessions
    can only be understood from their header (aider), where it points at the last header.
    """

    turns: list[Turn]
    skipped: Counter
    session_id: str
    session_ids: tuple[str, ...]
    consumed: int
    lines: int
    carry: Carry
    resume_at: int
    resume_line: int


def _no_lines(lines: Sequence[str], path: PurePath) -> bool:
    return False


def _no_record(obj: dict) -> int:
    return 0


def _no_raw(line: str) -> int:
    return 0


def _no_name(name: str) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class Host:
    """One host, whole: how its logs are found, recognised and read, and what its tools are called.

    The registry (`memoir.cards.hosts.registry`) lists one per host; collect, detect, segment,
    outcomes and the command reading ask it, never a host's name. Tool names are lowercased.
    Sniffs answer how sure they are: 0 is "not mine", and the surest host wins (ties go to the
    earlier registry row).
    """

    name: str
    read: Callable[..., ReadReport]
    wants: Callable[[str], bool]  # a file name this host writes its logs under
    sniff_lines: Callable[[Sequence[str], PurePath], bool] = _no_lines  # a text format's first lines
    sniff_record: Callable[[dict], int] = _no_record  # one parsed JSON record of the head
    sniff_raw: Callable[[str], int] = _no_raw  # a first record too long to parse: its keys
    root: str = ""  # where its logs live under the home folder; '' = only read from paths given
    shell_tools: frozenset[str] = frozenset()  # a call that runs a shell command
    edit_tools: frozenset[str] = frozenset()  # a call that changes a file
    quiet_tools: frozenset[str] = frozenset()  # reads, searches, plans: their results hold no verdict
    plan_tools: frozenset[str] = frozenset()  # a to-do list whose items all completed ends a task
    plan_accept_tools: frozenset[str] = frozenset()  # accepting a plan ends the planning
    header_sessions: bool = False  # sessions are named by a header: an appended read restarts there
    commits_each_reply: bool = False  # the host commits by itself: a commit does not end a task
    banner: bool = False  # a session opens with the host's start-up banner, no request
    whole_file: bool = False  # the host writes the whole file again on each change: always read from the start
    # A file this host keeps beside its sessions (a message or part of one): read through its session, not alone.
    companion: Callable[[str], bool] = _no_name
    # A file whose session is better read from a sibling file, when that sibling exists: (this name, sibling name).
    shadowed_by: tuple[tuple[str, str], ...] = ()
    # For a session stored across many files: the I/O that gathers them into the bytes `read` takes.
    assemble: Callable[[str], bytes] | None = None


@dataclass(slots=True)
class Seqs:
    """Next turn number per session, seeded from the carry."""

    next: dict[str, int] = field(default_factory=dict)

    def take(self, session_id: str) -> int:
        n = self.next.get(session_id, 0)
        self.next[session_id] = n + 1
        return n

    def frozen(self) -> tuple[tuple[str, int], ...]:
        return tuple(sorted(self.next.items()))


class SessionReader:
    """What every JSON host reader keeps while it walks one chunk: ids, turn numbers, turns, skips."""

    host = ""

    def __init__(self, path: str, carry: Carry, session_id: str) -> None:
        self.path = path
        self.session_id = session_id
        self.seqs = Seqs(dict(carry.seqs))
        self.cwd = carry.cwd
        self.branch = carry.git_branch
        self.turns: list[Turn] = []
        self.skipped: Counter = Counter()
        self.tool_names: dict[str, str] = {}

    def line(self, obj: dict, line: int) -> None:
        raise NotImplementedError

    def read_lines(self, parsed: Iterable[tuple[int, dict]]) -> None:
        """Each parsed line in turn; whatever one line raises is counted by reason, and the next is read."""
        for line_no, obj in parsed:
            try:
                self.line(obj, line_no)
            except Exception as exc:  # noqa: BLE001 - a host log is never fixed, so one line must not stop every run
                self.skipped[line_error(exc)] += 1

    def result(self, consumed: int, lines: int) -> ReadReport:
        """What a one-session chunk yields: its turns, skips, and the carry for the next read."""
        carry = Carry(session_id=self.session_id, cwd=self.cwd, git_branch=self.branch, seqs=self.seqs.frozen())
        return ReadReport(
            turns=self.turns,
            skipped=self.skipped,
            session_id=self.session_id,
            session_ids=(self.session_id,),
            consumed=consumed,
            lines=lines,
            carry=carry,
            resume_at=consumed,
            resume_line=lines,
        )

    def add_turn(self, ts: object, line: int, role: str, kind: str, text: str, tool_name: str = "",
                 limit: int = TEXT_CHARS, *, is_sidechain: bool = False, uuid: str = "") -> None:
        """One bounded, stripped Turn; an empty tool output still counts as a (silent) result."""
        if role == "tool":
            text = sanitize_json_text(text)  # a JSON output's escapes would hide its values from the text pass
        text = strip_injected(text)
        text = clip_whole(text, limit) or (EMPTY_OUTPUT if role == "tool" else "")
        if not text:
            self.skipped["empty_text"] += 1
            return
        self.turns.append(
            Turn(
                host=self.host,
                session_id=self.session_id,
                seq=self.seqs.take(self.session_id),
                role=role,
                kind=kind,
                text=text,
                timestamp=parse_ts(ts),
                tool_name=tool_name,
                cwd=self.cwd,
                git_branch=self.branch,
                source_file=self.path,
                line=line,
                is_sidechain=is_sidechain,
                uuid=uuid,
            )
        )


def line_error(exc: BaseException) -> str:
    """The skip reason for an exception one line raised: `bad_line_too_deep` or `bad_line_<Exception>`."""
    return "bad_line_too_deep" if isinstance(exc, RecursionError) else f"bad_line_{type(exc).__name__}"


def complete_lines(data: bytes) -> tuple[list[bytes], int]:
    """Split `data` into whole lines; bytes after the last newline are a line still being written."""
    end = data.rfind(b"\n") + 1
    if end == 0:
        return [], 0
    lines = data[:end].split(b"\n")
    lines.pop()
    return lines, end


def iter_json_lines(
    lines: list[bytes], start_line: int, skipped: Counter, ignore: Callable[[bytes], bool] | None = None
) -> Iterator[tuple[int, dict]]:
    """(1-based line number, object) for each JSON-object line, one at a time; the rest counted by reason.

    `ignore` is a cheap byte check run before parsing, for line types that dominate big files
    and carry nothing (Claude Code's `progress`, Codex's `token_count`). A reader walks it holding
    one parsed line, not the file's: every parsed line of a long session held at once was most of
    a run's memory and made its time grow faster than the session (each later pass walked objects
    long out of the CPU's cache).
    """
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        if ignore is not None and ignore(raw):
            skipped["ignored_type"] += 1
            continue
        try:
            obj = json.loads(raw)
        except UnicodeDecodeError:
            skipped["bad_encoding"] += 1  # not UTF-8 (a latin-1 or UTF-16 line): the formats are UTF-8
            continue
        except ValueError:
            skipped["bad_json"] += 1
            continue
        except RecursionError:
            skipped["bad_line_too_deep"] += 1  # `[[[[…` past the parser's depth: one line, not the run
            continue
        if not isinstance(obj, dict):
            skipped["unknown_shape"] += 1
            continue
        yield start_line + i + 1, obj



def split_head(parsed: Iterator[tuple[int, dict]], n: int) -> tuple[list[tuple[int, dict]], Iterator[tuple[int, dict]]]:
    """The first `n` parsed lines (where a reader finds its session's id) and all of them again, in order."""
    head = list(itertools.islice(parsed, n))
    return head, itertools.chain(head, parsed)

EARLIEST_TS = datetime(1970, 1, 1, tzinfo=timezone.utc)  # no agent log is older
LATEST_TS = datetime(3000, 1, 1, tzinfo=timezone.utc)


def parse_ts(value: object) -> datetime | None:
    """ISO-8601 (with `Z`) or epoch seconds/millis to an aware datetime; naive means UTC.

    None when unreadable or outside 1970..3000.
    """
    if isinstance(value, str) and value:
        try:
            ts = datetime.fromisoformat(value)
        except ValueError:
            return None
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            ts = datetime.fromtimestamp(value / 1000 if value > 1e11 else value, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    else:
        return None
    ts = ts if ts.tzinfo else ts.replace(tzinfo=timezone.utc)
    # Year 1 or 9999 with an offset cannot even be shown in UTC: every later step would fail on it.
    return ts if EARLIEST_TS <= ts < LATEST_TS else None


def clip(text: str, limit: int) -> str:
    """Bound `text` to about `limit` chars, keeping head and tail (where commands and errors are)."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    return f"{text[:head]}\n…[{len(text) - limit} chars cut]…\n{text[-tail:]}"


CUT_MARGIN = 2048  # text read on each side of a cut for secrets it could split: longer than any key + value


def clip_whole(text: str, limit: int) -> str:
    """`clip`, with each cut moved off any secret it would split (or part from its key), so the
    pass over the kept text sees every secret whole. Only the text around the two cuts is
    searched, not all of a long output that is mostly thrown away."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail_at = len(text) - (limit - head)
    for f in find_secrets(text[: head + CUT_MARGIN]):
        if f.start < head < f.end:
            head = f.start
    start = max(0, tail_at - CUT_MARGIN)
    for f in find_secrets(text[start:]):
        if f.start + start < tail_at < f.end + start:
            tail_at = f.end + start
    return f"{text[:head]}\n…[{tail_at - head} chars cut]…\n{text[tail_at:]}"


def compact_json(value: object, limit: int = TOOL_CALL_CHARS, short_first: bool = False) -> str:
    """One-line JSON of a tool input, bounded; `short_first`: a dict's long texts after its other values."""
    def dumps(v: object) -> str:
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    try:
        if short_first and isinstance(value, dict) and all(isinstance(k, str) for k in value):
            text = "{" + ",".join(f"{dumps(k)}:{dumps(value[k])}" for k in _short_first(value)) + "}"
        else:
            text = dumps(value)
    except (TypeError, ValueError):
        text = str(value)
    except RecursionError:
        text = "(input nested too deeply to show)"
    return clip(text, limit)


LONG_TEXT = 200  # a string argument longer than this (a file's content, an edit's text) comes after the others


def _short_first(args: dict) -> list:
    """A call's argument names in name order, its long texts last: a write's `path` sorts after its
    `content` or `file_text`, and the bound on a call's text would cut the path away, or a shown
    excerpt would show the content and not which file it went to."""
    return sorted(args, key=lambda k: (isinstance(args[k], str) and len(args[k]) > LONG_TEXT, k))


def tool_call_text(name: str, args: object, limit: int = TOOL_CALL_CHARS) -> str:
    """`name {json args}`: the readable form of a tool call, its arguments bounded by `limit`, long
    texts last.

    Every string argument is sanitized decoded, before it is rendered as JSON (where `\\n` and
    `\\"` would hide `password: …` from the text rules) and before it is bounded (where a cut
    could split a secret from its key).
    """
    if isinstance(args, str):
        stripped = args.strip()
        try:
            args = json.loads(stripped) if stripped[:1] in ("{", "[") else stripped
        except (ValueError, RecursionError):
            args = stripped
    if isinstance(args, str):
        body = sanitize_value(args)
    else:
        body = compact_json(args, sys.maxsize, short_first=True)
        # The decoded pass is needed where the rendering hides something (an escaped line break or
        # quote: a backslash) or where the cut below could split a secret. Otherwise the rendered
        # text shows every value as it is, and the pipeline's pass over it finds the same; most
        # calls (a file path, a short command) skip a second sanitizer pass this way.
        if "\\" in body or len(body) > limit or '","-' in body:  # `","-`: an argument list with a flag
            body = compact_json(sanitize_value(args), limit, short_first=True)
    return f"{name} {clip(body, limit)}".strip()


def as_str(value: object) -> str:
    return value if isinstance(value, str) else ""
