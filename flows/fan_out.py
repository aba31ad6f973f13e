"""The nightly flow's parallel units, and their merge: one log file's collection, one batch's model calls.

Each unit is a plain function of picklable values (a path and its ledger entry; a batch and the
settings), so a Prefect task runner may run it in a thread or on a Dask worker. Merging follows
the order the units were planned in, never the order they finished, so a fanned-out run writes
the same card files as `memoir run`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from memoir.cards.collect import CollectReport, collect_file, iter_candidates
from memoir.cards.config import Settings, environment
from memoir.cards.distill.llm import BatchReport
from memoir.cards.distill.llm_client import endpoints_from_settings
from memoir.cards.hosts import reader_for
from memoir.cards.ledger import Ledger, LedgerEntry, path_key
from memoir.cards.values import Card, Experience
from memoir.flows.distill_step import ask_batch


class LedgerView:
    """What `collect_file` asks of the ledger (`get`), for the files handed to one worker."""

    def __init__(self, entries: dict[str, LedgerEntry | None]):
        self.entries = {path_key(p): e for p, e in entries.items() if e is not None}

    def get(self, path: str) -> LedgerEntry | None:
        return self.entries.get(path_key(path))


def plan_files(paths: Sequence[Path], host: str, ledger: Ledger | None, follow_symlinks: bool,
               reread: bool = False) -> tuple[list[tuple[str, LedgerEntry | None]], CollectReport]:
    """Every candidate log file with its ledger entry (None with `reread`), in the order a run reads them."""
    out = CollectReport()
    files = list(iter_candidates(list(paths), host, out.skipped, follow_symlinks))
    if host != "auto":
        reader_for(host)
    out.files_seen = len(files)
    return [(str(f), None if reread or ledger is None else ledger.get(str(f))) for f in files], out


def collect_one(path: str, host: str, entry: LedgerEntry | None) -> CollectReport:
    """Read one log file (read-only) from where its ledger entry ends."""
    out = CollectReport()
    collect_file(Path(path), host, LedgerView({path: entry}), out)  # type: ignore[arg-type]
    return out


def merge_collected(into: CollectReport, parts: Iterable[CollectReport]) -> CollectReport:
    """The files' reports in their planned order, as one sequential collect would have left them."""
    for part in parts:
        into.absorb(part)
    into.finish()
    return into


def ask_one(batch: Sequence[tuple[Experience, Card]], settings: Settings) -> BatchReport:
    """One batch's model calls; the endpoints and their key are resolved where the worker runs."""
    return ask_batch(batch, settings, endpoints_from_settings(settings, environment(settings.model_api_key_env)))
