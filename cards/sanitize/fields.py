"""The sanitizer applied to structured values and to every field a writer stores.

`memoir.cards.sanitize.scan` works on text. Two places need more than that:

- Tool calls and JSON outputs: rendered as JSON, a newline is `\\n` and a quote `\\"`, and the
  rules that catch `password: …` in prose miss it inside `{"command": "…\\npassword: …"}`. So
  the decoded string leaves are sanitized (keys kept), then the value is rendered.
- Writers (card files, the ledger, queue items, run and status logs, the recall log): each
  sanitizes the final text of every field it writes, whatever sanitized it before, so a value
  that took a path around the pipeline's pass (a cwd, a file path, an error message) is caught.
  The final pass never cuts long lines (`FIELD_CAP`): cutting is the pipeline's call, made once
  with the user's `blob_cap`; sanitizing twice with the same cap is the identity.
- Identifiers and log paths: a session id keeps a hash of its raw form when sanitizing changed it
  (`sanitize_id`), and a Claude Code folder named after a private cwd is sanitized with it
  (`sanitize_path`).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache

from memoir.cards.values import Turn
from memoir.cards.sanitize.generic import argv_credentials
from memoir.cards.sanitize.patterns import MARKER_RE
from memoir.cards.sanitize.prefilter import hints
from memoir.cards.sanitize.scan import sanitize_with_report
from memoir.cards.sanitize.validators import names_secret

FIELD_CAP = sys.maxsize  # a writer's pass redacts secrets and blobs but never cuts a line
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")  # a key that reads as the name of an assignment


def sanitize_value(value: object, counts: Counter | None = None, blob_cap: int = FIELD_CAP) -> object:
    """A copy of a JSON-like value with every string leaf sanitized; keys and non-strings kept.

    Iterative, so a value nested as deep as the JSON parser allowed cannot exhaust the stack.
    """
    counts = Counter() if counts is None else counts

    def text(v: str, key: object = None) -> str:
        result = sanitize_with_report(v, blob_cap)
        counts.update(result.counts)
        v = result.text
        # Under a key that names a secret the value is also read as `key=value`, so
        # `{"password": "…"}` is the assignment it is, whatever later cuts the rendered JSON apart.
        if isinstance(key, str) and _KEY.fullmatch(key) and names_secret(key):
            result = sanitize_with_report(f"{key}={v}", blob_cap)
            if result.counts and result.text.startswith(f"{key}="):
                counts.update(result.counts)
                v = result.text[len(key) + 1:]
        return v

    def leaf(v: object, key: object = None) -> object:
        if isinstance(v, str):
            return text(v, key)
        if isinstance(v, dict):
            return {}
        if isinstance(v, (list, tuple)):
            return []
        return v

    top = leaf(value)
    stack = [(value, top)] if isinstance(value, (dict, list, tuple)) else []
    while stack:
        src, dst = stack.pop()
        if isinstance(src, (list, tuple)) and len(src) > 1 and all(isinstance(v, str) for v in src):
            src = _argv_redacted(list(src), counts)  # a command as an argument list: its words read together
        pairs = src.items() if isinstance(src, dict) else enumerate(src)
        for key, v in pairs:
            if isinstance(dst, dict):
                dst[key] = new = leaf(v, key)
            else:
                dst.append(new := leaf(v))
            if isinstance(v, (dict, list, tuple)):
                stack.append((v, new))
    return top


def _argv_redacted(argv: list[str], counts: Counter) -> list[str]:
    """`argv` with the credentials its words give a tool (`["mysql", "-pX"]`) replaced by markers."""
    for i, start, end in sorted(argv_credentials(argv), reverse=True):
        argv[i] = argv[i][:start] + f"[REDACTED:command_password:{end - start}]" + argv[i][end:]
        counts["command_password"] += 1
    return argv


def sanitize_json_text(text: str, counts: Counter | None = None) -> str:
    """`text` with the string leaves of its JSON sanitized when it is JSON and held a secret; else as is.

    Unchanged JSON keeps its own formatting (a tool output is shown as the tool printed it).
    """
    stripped = text.strip()
    if stripped[:1] not in ("{", "[") or "\\" not in stripped:
        return text  # not JSON, or JSON whose text shows every value as it is: the text pass sees it all
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        return text
    found: Counter = Counter()
    clean = sanitize_value(value, found)
    if not found:
        return text
    if counts is not None:
        counts.update(found)
    try:
        return json.dumps(clean, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return text


@lru_cache(maxsize=4096)
def sanitize_field(text: str) -> str:
    """One stored field (a path, a cwd, a title, a log message) as a writer must store it.

    Cached: the same cwd or file path is written for every turn and card of a session.
    """
    return sanitize_with_report(text, FIELD_CAP).text if text else text


_NOT_SLUG = re.compile(r"[^A-Za-z0-9]")


def sanitize_path(path: str, cwd: str = "") -> str:
    """A log file's path as stored: sanitized, and the host's slug of `cwd` in it too.

    Claude Code keeps a session under a folder named after its cwd with every other character
    a `-` (`/home/jane.doe@corp.com/app` -> `-home-jane-doe-corp-com-app`), where no rule can see
    an e-mail or an address any more; that folder name takes the sanitized cwd's form instead.
    """
    clean_cwd = sanitize_field(cwd)
    if clean_cwd != cwd:
        slug = _NOT_SLUG.sub("-", cwd)
        if len(slug) > 1 and slug in path:
            path = path.replace(slug, clean_cwd.replace("/", "-"))
    return sanitize_field(path)


def marker_counts(text: str) -> Counter:
    """Markers already in `text`, by kind: what a reader redacted before the pipeline's pass."""
    return Counter(m.group(0)[10:-1].split(":")[0] for m in MARKER_RE.finditer(text) if m.group(0).startswith("[REDACTED:"))


def sanitize_id(text: str) -> str:
    """An identifier (a session id) as stored: sanitized, plus a hash of the raw value when that changed it.

    The hash keeps two ids apart that differ only in what was redacted (two sessions under
    `/mnt/10.0.0.1/` and `/mnt/10.0.0.2/`), so their cards do not collide.
    """
    clean = sanitize_field(text)
    if clean == text:
        return text
    return f"{clean}~{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"


# Terminal control sequences (colour codes, cursor moves, OSC titles and hyperlinks) and the other
# C0/C1 control characters except tab and newline: tool output carries them, and a card printed by
# `memoir cards show` must not be able to drive the reader's terminal.
_CONTROLS = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"          # CSI: colours, cursor
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: titles, hyperlinks
    r"|\x1b[@-_]?"                         # other escapes
    r"|[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f-\x9f]"
)


_CONTROL_CHAR = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # \x1b among them


def strip_controls(text: str) -> str:
    """`text` without terminal control sequences and control characters (tab, newline and CR kept)."""
    if not _CONTROL_CHAR.search(text):
        return text  # the usual case: one character class scans ~5x faster than the full pattern
    return _CONTROLS.sub("", text)


def sanitize_turn(turn: Turn, blob_cap: int, counts: Counter | None = None, hints: int | None = None) -> Turn:
    """Every stored field of a turn (text, cwd, file path, session id, branch, tool) sanitized.

    A tool call's arguments were sanitized decoded by its reader (cards.hosts.base.tool_call_text);
    the markers that pass left are counted here with this pass's own (a call that wrote a card
    file's markers counts them too). What a reader redacted in an over-long text before cutting
    it is not counted: such a text holds literal markers too, when an agent read a card file.
    `hints`: the prefilter's families for the turn's text without control characters (`turn_hints`).
    """
    counts = Counter() if counts is None else counts
    if turn.kind == "tool_call":
        counts.update(marker_counts(turn.text))
    result = sanitize_with_report(strip_controls(turn.text), blob_cap, hints=hints)
    counts.update(result.counts)
    fields = {
        "text": result.text,
        "cwd": sanitize_field(turn.cwd),
        "source_file": sanitize_path(turn.source_file, turn.cwd),
        "session_id": sanitize_id(turn.session_id),
        "git_branch": sanitize_field(turn.git_branch),
        "tool_name": sanitize_field(turn.tool_name),
    }
    changed = {k: v for k, v in fields.items() if v != getattr(turn, k)}
    return replace(turn, **changed) if changed else turn


def turn_hints(turns: Sequence[Turn]) -> list[int | None]:
    """The prefilter's families for each turn's text, in one polars pass over the batch (`sanitize_turn`'s `hints`)."""
    return hints([strip_controls(t.text) for t in turns])
