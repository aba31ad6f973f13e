"""The evaluation material written apart from the team (`../shared/eval/`), when this checkout has it.

The benches print its figures beside memoir's own sets; a fresh clone has no `../shared`, and then
the benches print their own sets alone. Nothing here is pinned by a test: the material is for
measuring, never tuning.
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def shared_dir(given: Path | None = None) -> Path | None:
    """`../shared` beside the checkout (or beside the folder of worktrees), or the folder given; None if absent."""
    for folder in ([given] if given else [ROOT.parent / "shared", ROOT.parent.parent / "shared"]):
        if folder and (folder / "eval").is_dir():
            return folder
    return None


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def rel_file(path: str, root: Path) -> str:
    """A card source's file relative to the log folder it was read from ('' when outside it)."""
    p, base = Path(path).resolve(), root.resolve()
    try:
        return p.relative_to(base).as_posix()
    except ValueError:
        return ""


def overlap(lines: tuple[int, int], start: int, end: int) -> int:
    return max(0, min(lines[1], end) - max(lines[0], start) + 1)


def best_label(card, labels: list[dict], logs: Path) -> dict | None:
    """The labelled experience a card's sources overlap most (same file), or None."""
    best, most = None, 0
    for s in card.sources:
        rel = rel_file(s.file, logs)
        for lb in labels:
            n = overlap(tuple(s.lines), lb["start_line"], lb["end_line"]) if lb["file"] == rel else 0
            if n > most:
                best, most = lb, n
    return best


def superseded_keys(labels: list[dict]) -> set[tuple[str, int]]:
    """(file, start_line) of every labelled experience a later one supersedes (by id or by place)."""
    by_id = {lb["id"]: lb for lb in labels if lb.get("id")}
    out = set()
    for lb in labels:
        sup = lb.get("supersedes")
        if isinstance(sup, str) and sup in by_id:  # the second set names the experience by id
            out.add((by_id[sup]["file"], by_id[sup]["start_line"]))
        elif isinstance(sup, dict) and sup.get("file"):
            out.add((sup["file"], int(sup["start_line"])))
    return out
