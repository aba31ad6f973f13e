"""`memoir index rebuild|check`: the derived index's maintenance commands."""

from __future__ import annotations

import sys

import click

from memoir.flows.cli import EXIT_BUSY, EXIT_FAILED, cli, emit_json, pass_ctx
from memoir.flows.progress import Display, announced

# `memoir index check` exit codes: a script can tell "run a rebuild" from "the file is damaged",
# and both from "memoir cannot get at the file" (a rebuild would fail the same way) or "nothing here".
CHECK_EXIT = {"healthy": 0, "stale": 1, "corrupt": 2, "busy": 3, "cannot_open": 4, "missing": 5}


def _human_size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


@cli.group("index")
def index_group() -> None:
    """The derived vector + full-text index (rebuildable from card files at any time)."""


@index_group.command("rebuild")
@click.option("--concurrency", "-j", type=click.IntRange(1, 64), default=None,
              help="Threads reading card files ahead of the embedder (default: rebuild_concurrency "
                   "setting). The rows written are the same for any value.")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@pass_ctx
def rebuild_cmd(ctx, concurrency: int | None, as_json: bool) -> None:
    """Rebuild the index from card files into a new file, then swap it in atomically.

    The old file is kept as index.db.bak until the new one checks out, and put back if it does
    not. Runbook: runbooks/index-corruption.md
    """
    from memoir.cards.store import CardStore
    from memoir.index.embed import default_embedder
    from memoir.index.errors import IndexBusy, IndexFailure
    from memoir.index.pending import PendingIndex
    from memoir.index.rebuild import rebuild_index

    s = ctx.settings
    store = CardStore(s.cards_dir, s.state_dir)
    total = len(store.ids())
    workers = concurrency or s.rebuild_concurrency
    try:
        with Display(as_json) as progress:
            done = 0

            def embedded(n: int) -> None:
                nonlocal done
                done += n
                progress("embed", done, total)

            if total:
                progress("embed", 0, total)
            report = rebuild_index(store, s.index_dir, announced(default_embedder(), progress), workers,
                                   progress=embedded, pending=PendingIndex(s.state_dir))
    except IndexBusy as exc:
        click.echo(f"memoir: {exc}", err=True)
        sys.exit(EXIT_BUSY)
    except IndexFailure as exc:
        click.echo(f"memoir: index rebuild failed: {exc}\nsee runbooks/index-corruption.md", err=True)
        sys.exit(EXIT_FAILED)
    if as_json:
        emit_json(report.to_dict())
    else:
        click.echo(f"rebuilt {report.path}: {report.cards} cards in {report.seconds:.1f} s "
                   f"({report.cards_per_s:.0f} cards/s, embedding {report.encode_seconds:.1f} s), "
                   f"{_human_size(report.size_bytes)}")
    for problem in report.problems:
        click.echo(f"skipped unreadable card file: {problem}", err=True)


@index_group.command("check")
@click.option("--json", "as_json", is_flag=True, help="Print the full health report as JSON.")
@pass_ctx
def check_cmd(ctx, as_json: bool) -> None:
    """Check the index: SQLite integrity, schema, model, row hashes, rows vs card files.

    \b
    Exit codes:
      0  healthy
      1  stale: run `memoir run` or `memoir index rebuild`
      2  corrupt: run `memoir index rebuild`
      3  busy: another process is writing it; check again when it has finished
      4  cannot open: permission denied, or a file where the index folder should be;
         fix that first (a rebuild would fail the same way)
      5  missing: no memoir home or no index there yet; run `memoir run`
    Runbook: runbooks/index-corruption.md
    """
    from memoir.cards.store import CardStore
    from memoir.index.check import check_index
    from memoir.index.embed import default_embedder
    from memoir.index.errors import IndexBusy
    from memoir.index.pending import PendingIndex

    s = ctx.settings
    if not s.home.is_dir():
        _missing(as_json, str(s.index_dir), f"no memoir home at {s.home}: nothing has run here yet; "
                 "run `memoir run` (or pass the right --home / MEMOIR_HOME)")
    embedder = default_embedder()  # identity only: the model is not loaded for a check
    try:
        health = check_index(s.index_dir, CardStore(s.cards_dir, s.state_dir), embedder.model_id,
                             embedder.dim, pending=PendingIndex(s.state_dir))
    except IndexBusy as exc:
        click.echo(f"memoir: {exc}", err=True)
        sys.exit(EXIT_BUSY)
    if health.status == "healthy" and not health.card_files and not health.size_bytes \
            and not (s.index_dir / "index.db").exists():
        _missing(as_json, health.path, f"no index at {s.index_dir} and no card files yet; run `memoir run`")
    if as_json:
        emit_json(health.to_dict())
    else:
        label = "cannot open" if health.status == "cannot_open" else health.status
        click.echo(f"index {label}: {health.path}")
        if health.status != "cannot_open":
            click.echo(f"  rows {health.rows}, card files {health.card_files}, pending {health.pending}, "
                       f"size {_human_size(health.size_bytes)}, model {health.model or '-'}, "
                       f"built {health.built_at or '-'}")
        for problem in health.problems:
            click.echo(f"  - {problem}")
        if health.status != "healthy":
            click.echo("  runbook: runbooks/index-corruption.md")
    sys.exit(CHECK_EXIT[health.status])


def _missing(as_json: bool, path: str, why: str) -> None:
    """Nothing to check is not "healthy": say so and what to run, with its own exit code."""
    if as_json:
        emit_json({"status": "missing", "path": path, "problems": [why]})
    else:
        click.echo(f"index missing: {path}\n  - {why}")
    sys.exit(CHECK_EXIT["missing"])
