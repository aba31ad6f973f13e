"""The folders a memoir home keeps: a file or a dangling link standing in one's place stops a run before it begins.

Without this check, such a file surfaces deep in a run as a bare `NotADirectoryError` (`index/`
a file) or `FileExistsError` (`state/` a file), a traceback and no word on what to do. Nothing
is moved: a file where `cards/` belongs may be a person's only copy of their cards.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from memoir.flows.errors import FlowError

# folder -> what lives there, said in the refusal. Order: the one a person worries about first.
HOME_FOLDERS = {
    "cards": "the card files; look at what this one holds before moving it",
    "state": "its own logs, the ledger and the run lock",
    "index": "the derived index, rebuilt from the card files once the folder is free",
    "queue": "the overflow queue",
}
PREFECT_FOLDER = {"prefect": "Prefect's database for --flow and serve, run history only"}
LAYOUT_RUNBOOK = "runbooks/nightly-run-failed.md#a-file-where-a-folder-belongs"


class HomeLayoutBroken(FlowError):
    """Something other than a folder stands where the memoir home keeps one of its folders."""


def misplaced(home: Path, folders: dict[str, str]) -> list[tuple[Path, str]]:
    """(path, what stands there) for each of `folders` that exists under `home` as anything but a folder."""
    out = []
    for name in folders:
        path = Path(home) / name
        if path.is_dir() or not os.path.lexists(path):
            continue  # a folder (a link to one too), or nothing yet: the run makes it
        what = "a link to nothing" if path.is_symlink() and not path.exists() else \
            "a link to a file" if path.is_symlink() else "a file, not a folder"
        out.append((path, what))
    return out


def check_home_layout(home: Path | str, with_prefect: bool = False) -> None:
    """Raise HomeLayoutBroken, naming each misplaced folder and what to do, before any work begins."""
    folders = {**HOME_FOLDERS, **(PREFECT_FOLDER if with_prefect else {})}
    found = misplaced(Path(home), folders)
    if not found:
        return
    said = ". ".join(f"{path} is {what}, where memoir keeps {folders[path.name]}" for path, what in found)
    first = shlex.quote(str(found[0][0]))
    raise HomeLayoutBroken(
        f"{said}. Nothing was read or written. Move it aside (`mv {first} {first}.moved`), then run again "
        f"({LAYOUT_RUNBOOK})")
