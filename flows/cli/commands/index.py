"""`memoir index rebuild|check|turns`: the derived indexes' maintenance commands."""

from __future__ import annotations

import click

from memoir.flows.cli.app import (
    CHECK_EXIT,
    EXIT_BUSY,
    EXIT_CANNOT_OPEN,
    EXIT_CORRUPT,
    EXIT_FAILED,
    EXIT_MISSING,
    EXIT_OK,
    EXIT_STALE,
    CommandError,
    cli,
    emit_json,
    exit_with,
    pass_ctx,
)
from memoir.flows.progress import Display, announced
from memoir.index.errors import IndexBusy, IndexFailure

# A script can tell "run a rebuild" from "the file is damaged", and both from "memoir cannot get at
# the file" (a rebuild would fail the same way) or "nothing here"; no verdict shares a code with a
# check that could not run.
CHECK_HELP = f"""Check the index: SQLite integrity, schema, model, row hashes, rows vs card files.

\b
Exit codes:
  {EXIT_OK}  healthy
  {EXIT_FAILED}  the check could not run (a broken config file, say); the message says why
  {EXIT_BUSY}  busy: another process is writing it; check again when it has finished
  {EXIT_CANNOT_OPEN}  cannot open: permission denied, or a file where the index folder should be;
     fix that first (a rebuild would fail the same way)
  {EXIT_MISSING}  missing: no memoir home or no index there yet; run `memoir run`
  {EXIT_STALE}  stale: run `memoir run` or `memoir index rebuild`
  {EXIT_CORRUPT}  corrupt: run `memoir index rebuild`
Runbook: runbooks/index-corruption.md
"""


def human_size(n: int) -> str:
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
@click.option("--wait", type=click.FloatRange(0), default=None, metavar="SECONDS",
              help="Wait this long for a run in progress to finish (default: the setting "
                   "run_lock_timeout_s, 0), then exit with code 3.")
@pass_ctx
def rebuild_cmd(ctx, concurrency: int | None, as_json: bool, wait: float | None) -> None:
    """Rebuild the index from card files into a new file, then swap it in atomically.

    The old file is kept as index.db.bak until the new one checks out, and put back if it does
    not. It takes the home's run lock: a run and a rebuild never write the index at once.
    Runbook: runbooks/index-corruption.md
    """
    from memoir.cards.store import CardStore  # deferred: start-up (yaml, jinja2)
    from memoir.flows.index_step import rebuild_alone  # deferred: start-up (apsw, sqlite-vec)
    from memoir.index.embed import default_embedder  # deferred: start-up (numpy)

    s = ctx.settings
    store = CardStore(s.cards_dir, s.state_dir)
    total = len(store.ids())
    workers = concurrency or s.rebuild_concurrency
    try:
        with Display(as_json, env=ctx.env) as progress:
            done = 0

            def embedded(n: int) -> None:
                nonlocal done
                done += n
                progress("embed", done, total)

            if total:
                progress("embed", 0, total)
            report = rebuild_alone(s, announced(default_embedder(), progress), workers, progress=embedded,
                                   wait_s=s.run_lock_timeout_s if wait is None else wait)
    except IndexBusy:
        raise
    except IndexFailure as exc:
        raise CommandError(f"index rebuild failed: {exc}\nsee runbooks/index-corruption.md") from exc
    if as_json:
        emit_json(report.to_dict())
    else:
        click.echo(f"rebuilt {report.path}: {report.cards} cards in {report.seconds:.1f} s "
                   f"({report.cards_per_s:.0f} cards/s, embedding {report.encode_seconds:.1f} s), "
                   f"{human_size(report.size_bytes)}")
    for problem in report.problems:
        click.echo(f"skipped unreadable card file: {problem}", err=True)


@index_group.command("turns")
@click.option("--json", "as_json", is_flag=True, help="Print what was read and embedded as JSON.")
@click.option("--wait", type=click.FloatRange(0), default=None, metavar="SECONDS",
              help="Wait this long for a run in progress to finish (default: the setting "
                   "run_lock_timeout_s, 0), then exit with code 3.")
@pass_ctx
def turns_cmd(ctx, as_json: bool, wait: float | None) -> None:
    """Finish the deep-search turn index now: read the logs a run read and embed every turn left.

    A run embeds turns only within its share of time (the setting turn_index_share), so that a first
    night over a large backlog ends in minutes; what it left waits for the next run or search. This
    does it all at once, with progress, under the home's run lock. Search finds every turn by its
    words meanwhile.
    """
    from memoir.flows.index_step import refresh_turns_alone  # deferred: start-up (apsw, sqlite-vec)
    from memoir.index.embed import default_embedder  # deferred: start-up (numpy)

    s = ctx.settings
    if not s.home.is_dir():
        raise CommandError(f"no memoir home at {s.home}: nothing has run here yet; run `memoir run`")
    with Display(as_json, env=ctx.env) as progress:
        refresh, notes = refresh_turns_alone(s, announced(default_embedder(), progress), progress,
                                             wait_s=s.run_lock_timeout_s if wait is None else wait)
    if refresh is None:
        raise CommandError("; ".join(notes) or "the turn index could not be refreshed")
    figures = {"logs_read": refresh.read, "logs_dropped": refresh.dropped, "turns_embedded": refresh.embedded,
               "windows_embedded": refresh.windows_embedded, "left": refresh.left, "problems": list(notes)}
    if as_json:
        emit_json(figures)
    else:
        click.echo(f"turn index: {refresh.read} logs read, {refresh.embedded} turns and "
                   f"{refresh.windows_embedded} windows embedded, {refresh.left} left")
        for note in notes:
            click.echo(f"  - {note}", err=True)


@index_group.command("check", help=CHECK_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the full health report as JSON.")
@pass_ctx
def check_cmd(ctx, as_json: bool) -> None:
    from memoir.cards.store import CardStore  # deferred: start-up (yaml, jinja2)
    from memoir.index.check import check_index  # deferred: start-up (apsw, sqlite-vec)
    from memoir.index.embed import default_embedder  # deferred: start-up (numpy)
    from memoir.index.pending import PendingIndex  # deferred: start-up (yaml, jinja2)

    s = ctx.settings
    if not s.home.is_dir():
        missing(as_json, str(s.index_dir), f"no memoir home at {s.home}: nothing has run here yet; "
                "run `memoir run` (or pass the right --home / MEMOIR_HOME)")
    embedder = default_embedder()  # identity only: the model is not loaded for a check
    health = check_index(s.index_dir, CardStore(s.cards_dir, s.state_dir), embedder.model_id,
                         embedder.dim, pending=PendingIndex(s.state_dir))
    if health.status == "healthy" and not health.card_files and not health.size_bytes \
            and not (s.index_dir / "index.db").exists():
        missing(as_json, health.path, f"no index at {s.index_dir} and no card files yet; run `memoir run`")
    if as_json:
        emit_json(health.to_dict())
    else:
        label = "cannot open" if health.status == "cannot_open" else health.status
        click.echo(f"index {label}: {health.path}")
        if health.status != "cannot_open":
            click.echo(f"  rows {health.rows}, card files {health.card_files}, pending {health.pending}, "
                       f"size {human_size(health.size_bytes)}, model {health.model or '-'}, "
                       f"built {health.built_at or '-'}")
        for problem in health.problems:
            click.echo(f"  - {problem}")
        if health.status != "healthy":
            click.echo("  runbook: runbooks/index-corruption.md")
    exit_with(CHECK_EXIT[health.status])


def missing(as_json: bool, path: str, why: str) -> None:
    """Nothing to check is not "healthy": say so and what to run, with its own exit code."""
    if as_json:
        emit_json({"status": "missing", "path": path, "problems": [why]})
    else:
        click.echo(f"index missing: {path}\n  - {why}")
    exit_with(CHECK_EXIT["missing"])
