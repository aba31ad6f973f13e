"""The nightly flow's parallel units: the log files to read (each read by `collect.read_file`), one batch's model calls.

Each unit is a plain function of picklable values (a path and its ledger entry; a batch and the
settings), so a Prefect task runner may run it in a thread or on a Dask worker. The flow takes
results in the order the units were planned in, never the order they finished, so a fanned-out
run writes the same card files as `memoir run`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memoir.cards.collect import CollectReport
from memoir.cards.config import Settings, environment
from memoir.cards.distill.llm import BatchReport
from memoir.cards.distill.llm_client import endpoints_from_settings
from memoir.cards.hosts import reader_for
from memoir.cards.log_files import iter_candidates
from memoir.cards.ledger import Ledger, LedgerEntry
from memoir.cards.values import Card, Experience
from memoir.flows.distill_step import ask_batch


def plan_files(paths: Sequence[Path], host: str, ledger: Ledger | None, follow_symlinks: bool,
               reread: bool = False) -> tuple[list[tuple[str, LedgerEntry | None, bool]], CollectReport]:
    """Every candidate log file with its ledger entry (None with `reread`) and whether it is opened without
    following a link (it was walked as a file), in the order a run reads them."""
    out = CollectReport()
    links: set[str] = set()
    files = list(iter_candidates(list(paths), host, out.skipped, follow_symlinks, links))
    if host != "auto":
        reader_for(host)
    out.files_seen = len(files)
    return [(str(f), None if reread or ledger is None else ledger.get(str(f)), str(f) not in links)
            for f in files], out


def ask_one(batch: Sequence[tuple[Experience, Card]], settings: Settings) -> BatchReport:
    """One batch's model calls; the endpoints and their key are resolved where the worker runs."""
    return ask_batch(batch, settings, endpoints_from_settings(settings, environment(settings.model_api_key_env)))
