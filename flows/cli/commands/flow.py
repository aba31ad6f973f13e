"""`memoir replay` and `memoir flow run`: the overflow queue, and memoir's Prefect flows by name."""

from __future__ import annotations

import click

from memoir.flows.cli.app import EXIT_FAILED, cli, emit_json, exit_with, pass_ctx
from memoir.flows.cli.runs import RUNNER_HELP, print_replay, run_flow
from memoir.flows.progress import Display


@cli.command("replay")
@click.option("--batch-size", type=click.IntRange(min=1), default=None,
              help="Items per batch (default: batch_size setting).")
@click.option("--wait", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help="Wait up to SECONDS for a running `memoir run`, then exit with code 3.")
@click.option("--reclaim-after", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help="Take back items claimed by a worker that died this long ago (default: step_timeout_s).")
@click.option("--runner", default=None, metavar="RUNNER",
              help="Run as the Prefect `replay-backlog` flow with this task runner. " + RUNNER_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the replay summary as JSON.")
@pass_ctx
def replay_cmd(ctx, batch_size, wait, reclaim_after, runner, as_json):
    """Apply the overflow queue once its cause is fixed: card writes, distillation, index updates.

    Each item is applied exactly once; one that fails again goes back to the queue with its
    error and is not retried in this replay. Runbook: runbooks/overflow-replay.md
    """
    settings = ctx.settings
    wait = settings.run_lock_timeout_s if wait is None else wait
    if runner:
        report = run_flow("replay-backlog", settings, runner, batch_size=batch_size, reclaim_after_s=reclaim_after,
                          lock_wait_s=wait)
    else:
        from memoir.flows.replay import model_endpoints, replay_queue  # deferred: start-up (the whole run)

        with Display(as_json, env=ctx.env) as progress:
            report = replay_queue(settings, batch_size, model_endpoints(settings), reclaim_after, progress,
                                  lock_wait_s=wait)
    emit_json(report.to_dict()) if as_json else print_replay(report)
    if report.failed:
        exit_with(EXIT_FAILED)


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
    `--runner dask[:ADDRESS]` the chunks go to Dask workers. Runbook: runbooks/nightly-run-failed.md
    """
    settings = ctx.settings
    wait = settings.run_lock_timeout_s if wait is None else wait
    result = run_flow(name, settings, runner, lock_wait_s=wait)
    data = result.to_dict() if hasattr(result, "to_dict") else result
    emit_json(data) if as_json else click.echo("\n".join(f"{k:<10}{v}" for k, v in data.items()))
