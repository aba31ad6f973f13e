"""`memoir replay` and `memoir flow run`: the overflow queue and the backlog, and memoir's Prefect flows by name."""

from __future__ import annotations

import click

from dataclasses import replace
from datetime import date
from pathlib import Path

from memoir.flows.cli.app import EXIT_FAILED, EXIT_INCIDENT, CommandUsage, cli, emit_json, exit_with, pass_ctx
from memoir.flows.cli.runs import (RUNNER_HELP, execute_run, missing_paths, print_backlog, print_replay,
                                   print_summary, run_flow)
from memoir.flows.progress import Display


def iso_date(value: str) -> str:
    """A --since DATE as cards hold it (YYYY-MM-DD), or a usage error naming the shape."""
    if not value:
        return ""
    try:
        return date.fromisoformat(value).isoformat()
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date; use YYYY-MM-DD") from None


@cli.command("replay")
@click.argument("paths", nargs=-1, type=click.Path(), metavar="[PATH]...")
@click.option("--redistill", is_flag=True,
              help="Run today's rules, and the model stage when one is configured, over cards already in the "
                   "library (hand-edited and reviewed cards are left alone).")
@click.option("--since", default="", metavar="DATE", callback=lambda ctx, param, value: iso_date(value),
              help="--redistill: only cards created on or after DATE (2026-11-01).")
@click.option("--workspace", default="", metavar="DIR", help="--redistill: only cards of this workspace (and below it).")
@click.option("--relog", is_flag=True,
              help="Read the log files or folders PATH... again from their first line, though the ledger holds them.")
@click.option("--dry-run", is_flag=True, help="--redistill / --relog: say how many cards and model calls it would make.")
@click.option("--batch-size", type=click.IntRange(min=1), default=None,
              help="Items (or cards) per batch (default: batch_size setting).")
@click.option("--wait", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help="Wait up to SECONDS for a running `memoir run`, then exit with code 3.")
@click.option("--reclaim-after", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help="Take back items claimed by a worker that died this long ago (default: step_timeout_s).")
@click.option("--runner", default=None, metavar="RUNNER",
              help="Run as the Prefect `replay-backlog` flow with this task runner. " + RUNNER_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the replay summary as JSON.")
@pass_ctx
def replay_cmd(ctx, paths, redistill, since, workspace, relog, dry_run, batch_size, wait, reclaim_after, runner,
               as_json):
    """Apply the overflow queue once its cause is fixed: card writes, distillation, index updates.

    Each item is applied exactly once; one that fails again goes back to the queue with its
    error and is not retried in this replay.

    --redistill takes the cards already in the library through today's rules and, when one is
    configured, the model; --relog PATH... reads logs the ledger already holds from their first
    line. Both are idempotent (a second replay does nothing) and resumable: a replay stopped or
    killed halfway carries on where it stopped. Exit 1 when an item failed again; exit 8 when the
    model stage raised an incident (endpoint down, hanging, answering junk): it shows in `memoir
    status`, and `alert_command` runs once for each new one, as for a run.
    Runbook: runbooks/overflow-replay.md
    """
    settings = ctx.settings
    wait = settings.run_lock_timeout_s if wait is None else wait
    if batch_size and (redistill or relog):
        settings = replace(settings, batch_size=batch_size)
    if redistill or relog:
        backlog(ctx, settings, paths, redistill, relog, since, workspace, dry_run, wait, as_json)
        return
    if paths or dry_run or since or workspace:
        raise CommandUsage("PATH, --dry-run, --since and --workspace go with --redistill or --relog")
    if runner:
        report = run_flow("replay-backlog", settings, runner, batch_size=batch_size, reclaim_after_s=reclaim_after,
                          lock_wait_s=wait)
    else:
        from memoir.flows.replay import model_endpoints, replay_queue  # deferred: start-up (the whole run)

        with Display(as_json, env=ctx.env) as progress:
            report = replay_queue(settings, batch_size, model_endpoints(settings), reclaim_after, progress,
                                  lock_wait_s=wait)
    emit_json(report.to_dict()) if as_json else print_replay(report)
    if report.alerts:  # the incident says why items went back, and names its runbook
        exit_with(EXIT_INCIDENT)
    if report.failed:
        exit_with(EXIT_FAILED)


def backlog(ctx, settings, paths, redistill, relog, since, workspace, dry_run, wait, as_json) -> None:
    """`--redistill` / `--relog`: the cards in the library, or logs the ledger holds, taken again."""
    if redistill == relog:
        raise CommandUsage("choose one: --redistill (cards in the library) or --relog PATH... (logs again)")
    if relog and not paths:
        raise CommandUsage("--relog needs the log files or folders to read again: memoir replay --relog PATH...")
    if redistill and paths:
        raise CommandUsage("--redistill takes no PATH; use --since DATE or --workspace DIR to choose cards")
    if missing := missing_paths(paths):
        raise CommandUsage(f"no such file or folder: {', '.join(missing)}")
    from memoir.flows import redistill as backlog_replay  # deferred: start-up (the whole run)

    if dry_run:
        report = (backlog_replay.plan_relog(settings, [Path(p) for p in paths]) if relog else
                  backlog_replay.redistill(settings, since, workspace, dry_run=True, lock_wait_s=wait))
        emit_json(report.to_dict()) if as_json else print_backlog(report)
        return
    if relog:
        summary = execute_run(settings, paths, "auto", as_json, ctx.env, lock_wait_s=wait, reread=True)
        emit_json(summary.to_dict()) if as_json else print_summary(summary, settings)
        alerts = summary.alerts
    else:
        with Display(as_json, env=ctx.env) as progress:
            report = backlog_replay.redistill(settings, since, workspace, progress=progress, lock_wait_s=wait)
        emit_json(report.to_dict()) if as_json else print_backlog(report)
        alerts = report.alerts
    if alerts:
        exit_with(EXIT_INCIDENT)


@cli.group("flow")
def flow_group():
    """Run memoir's Prefect flows by name (nightly, replay-backlog, rebuild-index)."""


@flow_group.command("run")
@click.argument("name", type=click.Choice(["nightly", "replay-backlog", "rebuild-index"]))
@click.option("--runner", default="thread", show_default=True, metavar="RUNNER", help=RUNNER_HELP)
@click.option("--wait", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help="Wait up to SECONDS for a running memoir run, then exit with code 3.")
@click.option("--json", "as_json", is_flag=True, help="Print the flow's result as JSON.")
@pass_ctx
def flow_run_cmd(ctx, name, runner, wait, as_json):
    """Run one flow now, on the ephemeral API (or PREFECT_API_URL's server).

    `rebuild-index` embeds card chunks in parallel (rebuild_concurrency workers); with
    `--runner dask[:ADDRESS]` the chunks go to Dask workers. Exit 11 when Prefect's API did not
    answer in time (nothing was done). Runbook: runbooks/nightly-run-failed.md
    """
    settings = ctx.settings
    wait = settings.run_lock_timeout_s if wait is None else wait
    result = run_flow(name, settings, runner, lock_wait_s=wait)
    data = result.to_dict() if hasattr(result, "to_dict") else result
    emit_json(data) if as_json else click.echo("\n".join(f"{k:<10}{v}" for k, v in data.items()))
