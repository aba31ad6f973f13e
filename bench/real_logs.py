"""The shared real samples (`../shared/samples`) grown into a bench corpus, when they are present.

Benches only: tests never read `../shared`. `copy_corpus` copies every sample again and again
with fresh session ids (every UUID, message and tool id rewritten per copy, Aider histories in a
folder of their own) until the corpus holds `mb` megabytes, so no copy deduplicates against
another. `long_session` strings the Claude Code samples into one session of about `turns` turns.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

# `../shared/samples` beside the checkout (a worktree may sit one folder deeper).
_ROOT = Path(__file__).resolve().parents[1]
SAMPLES = next((p / "shared" / "samples" for p in (_ROOT.parent, _ROOT.parent.parent)
                if (p / "shared" / "samples").is_dir()), _ROOT.parent / "shared" / "samples")
_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_IDS = re.compile(rb"\b((?:msg|req|toolu|call|fc|rs)_[A-Za-z0-9]+)")


def available() -> bool:
    return SAMPLES.is_dir() and any(SAMPLES.rglob("*.jsonl"))


_COMMON = re.compile(rb"\b(the|to|and|is) ")  # in nearly every sentence a card is drafted from


def _fresh(data: bytes, copy: int, distinct: bool = False) -> bytes:
    """`data` with every UUID and host id made unique to `copy` (same lengths for UUIDs); `distinct`:
    its most common words too (`the` -> `the3`), so no card of one copy duplicates another's."""
    ns = uuid.UUID(int=copy + 1)
    data = _UUID.sub(lambda m: str(uuid.uuid5(ns, m.group().decode())).encode(), data)
    data = _IDS.sub(lambda m: m.group(1) + b"x%d" % copy, data)
    return _COMMON.sub(lambda m: m.group(1) + b"%d " % copy, data) if distinct and copy else data


def _fresh_name(name: str, copy: int) -> str:
    return _fresh(name.encode(), copy).decode()


def sample_files() -> list[Path]:
    return sorted(p for p in SAMPLES.rglob("*") if p.is_file() and p.name != "SOURCES.md")


def copy_corpus(dst: Path, mb: float, distinct: bool = False) -> int:
    """Copies of every sample under `dst`, each in its host's layout, until `mb` MB; returns the bytes.

    The copies repeat every text, so their cards merge into one copy's (a few hundred however large
    the corpus); `distinct` makes each copy's words its own, so cards grow with the corpus as on a
    first night over months of sessions."""
    files = [(p, p.read_bytes()) for p in sample_files()]
    total, copy = 0, 0
    while total < mb * 1e6:
        for path, data in files:
            host = path.parent.name
            stem = path.name.split("__", 1)[1] if "__" in path.name else path.name
            if host == "aider":
                out = dst / "aider" / f"repo-{copy:04d}-{path.name.split('__')[0]}" / ".aider.chat.history.md"
            elif host == "codex":
                out = dst / "codex" / f"{copy:04d}" / _fresh_name(stem, copy)
            elif "__subagents__" in path.name:
                parent, agent = path.name.split("__")[1], path.name.split("__")[-1]
                out = dst / "claude" / f"p{copy:04d}" / _fresh_name(parent, copy) / "subagents" / agent
            else:
                name = stem if stem.count("-") >= 4 else f"{uuid.uuid5(uuid.UUID(int=copy + 1), stem)}.jsonl"
                out = dst / "claude" / f"p{copy:04d}" / _fresh_name(name.replace("__HEAD-TRUNCATED", ""), copy)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(_fresh(data, copy, distinct))
            total += len(data)
        copy += 1
    return total


def long_session(path: Path, turns_wanted: int) -> None:
    """One Claude Code session file of the samples' main transcripts, repeated with fresh ids.

    About 0.35 turns per line; the file is named by one UUID, so every line is that session.
    """
    mains = [p.read_bytes() for p in sample_files()
             if p.parent.name == "claude-code" and "subagents" not in p.name]
    lines_per_pass = sum(d.count(b"\n") for d in mains)
    passes = max(1, round(turns_wanted / (0.35 * lines_per_pass)))
    with path.open("wb") as fh:
        for copy in range(passes):
            for data in mains:
                fh.write(_fresh(data, copy).rstrip(b"\n") + b"\n")
