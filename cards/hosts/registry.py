"""The host registry: one `Host` record per session-log format, in the order sniffs break ties.

Adding a host is its reader module (with its `RECORD`), one row here, a fixture and a test:
collect, detect, segment, the command reading and the verdicts ask this table, never a name.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from memoir.cards.hosts import aider, claude_code, cline, codex, copilot_cli, gemini_cli, jsonl, opencode
from memoir.cards.hosts.base import Host, ReaderError, ReadReport

ROWS: tuple[Host, ...] = (
    claude_code.RECORD,
    codex.RECORD,
    aider.RECORD,
    gemini_cli.RECORD,
    copilot_cli.RECORD,
    cline.RECORD,
    opencode.RECORD,
    jsonl.RECORD,
)

Reader = Callable[..., ReadReport]
BY_NAME: dict[str, Host] = {h.name: h for h in ROWS}
HOSTS = tuple(BY_NAME)
READERS: dict[str, Reader] = {h.name: h.read for h in ROWS}
# Formats whose sessions are named by a header: an appended read restarts at the last header.
HEADER_SESSIONS = frozenset(h.name for h in ROWS if h.header_sessions)
# Tool vocabularies of every host together (a session's turns carry their tool names lowercased).
SHELL_TOOLS = frozenset().union(*(h.shell_tools for h in ROWS))
EDIT_TOOLS = frozenset().union(*(h.edit_tools for h in ROWS))
PLAN_TOOLS = frozenset().union(*(h.plan_tools for h in ROWS))
PLAN_ACCEPT_TOOLS = frozenset().union(*(h.plan_accept_tools for h in ROWS))
# Tools that only look (reads, listings, searches): a question answered with them alone changed nothing.
LOOK_TOOLS = frozenset().union(*(h.quiet_tools for h in ROWS)) - frozenset().union(*(h.edit_tools for h in ROWS))
# Results that hold no pass/fail verdict: reads, listings, searches, plans and edits' acknowledgements.
QUIET_TOOLS = frozenset().union(*(h.quiet_tools | h.edit_tools | h.plan_tools | h.plan_accept_tools for h in ROWS))


def host(name: str) -> Host:
    try:
        return BY_NAME[name]
    except KeyError:
        raise ReaderError(f"unknown host {name!r}; use one of: {', '.join(HOSTS)} or auto") from None


def reader_for(name: str) -> Reader:
    return host(name).read


def default_roots(home: Path) -> dict[str, Path]:
    """Where hosts keep their logs under `home`; a host without a root is read from paths given."""
    return {h.name: home.joinpath(*h.root.split("/")) for h in ROWS if h.root}


def wants(file_name: str, name: str = "auto") -> bool:
    """Is `file_name` a log of host `name` (of any host for "auto")?"""
    if name == "auto":
        return any(h.wants(file_name) for h in ROWS)
    return host(name).wants(file_name)


def companion(file_name: str) -> bool:
    """Is `file_name` a piece of some host's session (a message or part file), read through that session?"""
    return any(h.companion(file_name) for h in ROWS)


def shadowing_sibling(file_name: str) -> str | None:
    """The sibling file name that, when present, holds the same session better than `file_name`."""
    return next((better for h in ROWS for this, better in h.shadowed_by if this == file_name), None)


def commits_each_reply(name: str) -> bool:
    """The host commits every reply by itself: its task ends at the user's next message, not a commit."""
    row = BY_NAME.get(name)
    return row is not None and row.commits_each_reply


def opens_with_banner(name: str) -> bool:
    row = BY_NAME.get(name)
    return row is not None and row.banner
