"""`memoir replay`, `memoir serve`, `memoir flow run`, and the `--wait/--flow` options of `memoir run`."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import replace
from datetime import datetime

import click

from memoir.flows.cli import EXIT_BUSY, EXIT_FAILED, Context, cli, emit_json, pass_ctx
from memoir.flows.cli_cards import _Bar, print_summary
from memoir.flows.lock import RunBusy, StepTimeout, run_lock
from memoir.flows.prefect_env import configure_prefect

RUNNER_HELP = "Task runner: thread (default), dask (a local Dask cluster) or dask:ADDRESS (a running scheduler)."


def run_flow(name: str, settings, runner: str = "thread", **params):
    """Run one of the Prefect flows in this process (ephemeral API unless PREFECT_API_URL is set)."""
    configure_prefect(settings.home)
    from memoir.flows import nightly as nf

    flow = nf.FLOWS[name].with_options(task_runner=nf.task_runner(runner, settings))
    return flow(home=str(settings.home), **params)


def _fail(exc: Exception) -> None:
    code = EXIT_BUSY if isinstance(exc, RunBusy) else EXIT_FAILED
    click.echo(f"Error: {exc}", err=True)
    sys.exit(code)


# --- `memoir run --wait --flow` -----------------------------------------------------------------

_run_cmd = cli.commands["run"]
_direct_run = _run_cmd.callback
_run_cmd.params.extend([
    click.Option(["--wait"], type=click.FloatRange(min=0), default=None, metavar="SECONDS",
                 help="If another run holds this home, wait up to SECONDS for it (default: "
                      "run_lock_timeout_s, 0), then exit with code 3."),
    click.Option(["--flow"], is_flag=True,
                 help="Run the same work as the Prefect `nightly` flow (ephemeral API under "
                      "<home>/prefect, or the server at PREFECT_API_URL); slower to start."),
])


def _run_callback(wait: float | None, flow: bool, **kwargs) -> None:
    settings = click.get_current_context().find_object(Context).settings
    wait = settings.run_lock_timeout_s if wait is None else wait
    try:
        with run_lock(settings.state_dir, wait, what="run"):
            if not flow:
                return _direct_run(**kwargs)
            from memoir.flows.nightly import hand_over

            summary = run_flow("nightly", settings, logs=hand_over(list(kwargs["logs"])), host=kwargs["host"],
                               with_index=not kwargs.get("no_index", False))
    except (RunBusy, StepTimeout) as exc:
        _fail(exc)
    emit_json(summary.to_dict()) if kwargs["as_json"] else print_summary(summary)


_run_cmd.callback = _run_callback


# --- `memoir replay` ----------------------------------------------------------------------------


def print_replay(report) -> None:
    d = report.to_dict()
    click.echo(f"applied   {d['applied']}" + (f" ({', '.join(f'{v} {k}' for k, v in d['actions'].items())})" if d["actions"] else ""))
    click.echo(f"failed    {d['failed']} (back in the queue with their error; fix the cause, then replay again)")
    click.echo(f"left      {d['left']} pending")
    if d["reclaimed"]:
        click.echo(f"reclaimed {d['reclaimed']} items from a dead worker")
    for err in d["errors"]:
        click.echo(f"error     {err}")
    if d["index"]:
        click.echo("index     " + ", ".join(f"{k} {v}" for k, v in d["index"].items() if v != ""))
    click.echo(f"took      {d['elapsed_s']:.2f} s")


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
    try:
        with run_lock(settings.state_dir, wait, what="replay"):
            if runner:
                report = run_flow("replay-backlog", settings, runner, batch_size=batch_size,
                                  reclaim_after_s=reclaim_after)
            else:
                from memoir.flows.replay import model_endpoints, replay_queue

                bar = _Bar(enabled=not as_json)
                try:
                    report = replay_queue(settings, batch_size, model_endpoints(settings), reclaim_after, bar)
                finally:
                    bar.close()
    except (RunBusy, StepTimeout) as exc:
        _fail(exc)
    emit_json(report.to_dict()) if as_json else print_replay(report)
    if report.failed:
        sys.exit(EXIT_FAILED)


# --- `memoir flow run`, `memoir serve` ------------------------------------------------------------


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
    try:
        with run_lock(settings.state_dir, wait, what=f"flow {name}"):
            result = run_flow(name, settings, runner)
    except (RunBusy, StepTimeout) as exc:
        _fail(exc)
    data = result.to_dict() if hasattr(result, "to_dict") else result
    emit_json(data) if as_json else click.echo("\n".join(f"{k:<10}{v}" for k, v in data.items()))


@cli.command("serve")
@click.option("--cron", default=None, help="Nightly schedule, cron syntax (default: nightly_cron setting).")
@click.option("--timezone", default=None, metavar="ZONE",
              help="IANA time zone the crons are read in (default: nightly_timezone setting, else this "
                   "machine's local zone).")
@click.option("--replay-cron", default=None, help="Also replay the overflow queue on this cron schedule.")
@click.option("--port", type=int, default=None,
              help="Port of the Prefect server started for serving (default: a free one). "
                   "Ignored when PREFECT_API_URL is set.")
@click.option("--status", "show_status", is_flag=True,
              help="Say whether a serve is running for this home (pid, since, API, next run, last run's "
                   "result) and exit: 0 when one is, 1 when none is. Needs no Prefect server.")
@click.option("--json", "as_json", is_flag=True, help="With --status: print it as JSON.")
@pass_ctx
def serve_cmd(ctx, cron, timezone, replay_cron, port, show_status, as_json):
    """Register nightly, replay-backlog and rebuild-index with Prefect and run them on schedule.

    Without PREFECT_API_URL a local `prefect server` is started on 127.0.0.1 and stopped on exit.
    Each scheduled run prints a line when it starts and when it ends (cards, skipped); Ctrl-C or
    SIGTERM stops serve, its flow runs and its server. Cron and systemd-timer recipes instead
    of serve: runbooks/scheduling.md. Failed runs: runbooks/nightly-run-failed.md
    """
    from memoir.flows import serve as sv

    settings = ctx.settings
    if show_status:
        return _serve_status(settings, as_json)
    cron = cron or settings.nightly_cron
    try:
        zone = sv.check_timezone(timezone or settings.nightly_timezone or sv.local_timezone(dict(os.environ)))
        sv.next_run(cron, zone, datetime.now().astimezone())
        if replay_cron:
            sv.next_run(replay_cron, zone, datetime.now().astimezone())
    except (sv.BadTimezone, sv.BadSchedule) as exc:
        raise click.UsageError(str(exc)) from exc
    configure_prefect(settings.home)
    try:
        with sv.serve_lock(settings.state_dir), sv.stop_on_signals() as stopping:
            # Written before Prefect starts, so --status never shows a former serve's pid meanwhile.
            status = sv.ServeStatus(pid=os.getpid(), started=datetime.now().astimezone().isoformat(timespec="seconds"),
                                    api_url="(starting)", cron=cron, timezone=zone, replay_cron=replay_cron,
                                    last_run=_last_run(settings))
            sv.write_status(settings.state_dir, status)
            click.echo(f"memoir serve (pid {os.getpid()}) for {settings.home}: starting Prefect "
                       "(20-30 s the first time)...", err=True)
            try:
                if os.environ.get("PREFECT_API_URL"):
                    _serve(settings, replace(status, api_url=os.environ["PREFECT_API_URL"]), stopping)
                else:
                    with sv.prefect_server(settings.home, port, stopping=stopping) as api_url:
                        os.environ["PREFECT_API_URL"] = api_url
                        _serve(settings, replace(status, api_url=api_url), stopping)
            except KeyboardInterrupt:
                pass  # a signal while the server started
            finally:
                sv.stop_children()
                final = sv.read_status(settings.state_dir) or status
                sv.write_status(settings.state_dir, replace(final, stopped=datetime.now().astimezone()
                                                            .isoformat(timespec="seconds")))
    except sv.ServeBusy as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(EXIT_BUSY)
    except sv.ServerFailed as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo("stopped", err=True)


def _last_run(settings) -> dict | None:
    from memoir.flows.serve import take_snapshot

    last = take_snapshot(settings.state_dir).last_run
    return {"result": "finished", **last} if last else None


def _serve(settings, status, stopping) -> None:
    """Serve with the status file kept and one line per run printed."""
    from memoir.flows import serve as sv

    api_url, cron, replay_cron, zone = status.api_url, status.cron, status.replay_cron, status.timezone
    watch = sv.Watch(settings.state_dir, status, lambda line: click.echo(line))

    def ready() -> None:
        watch.start()
        when = sv.next_run(cron, zone, datetime.now().astimezone())
        prefect = shutil.which("prefect") or f"{sys.executable} -m prefect"
        for line in (
            f"serving on {api_url.removesuffix('/api')}: {', '.join(sv.DEPLOYMENTS)}",
            f"nightly    {cron} ({zone}); next run {when.isoformat(sep=' ', timespec='minutes')}"
            + (f"; replay {replay_cron}" if replay_cron else ""),
            "run now    memoir flow run nightly   (or in this server: "
            f"PREFECT_API_URL={api_url} {prefect} deployment run nightly/memoir-nightly)",
            "watch      memoir serve --status; each run prints a line here. Stop: Ctrl-C",
        ):
            click.echo(line, err=True)

    try:
        sv.serve_deployments(str(settings.home), cron, replay_cron, zone, stopping, on_ready=ready)
    finally:
        watch.stop()


def _serve_status(settings, as_json: bool) -> None:
    from memoir.flows import serve as sv

    status = sv.read_status(settings.state_dir)
    running = status is not None and sv.serving(settings.state_dir)
    now = datetime.now().astimezone()
    if as_json:
        data = {"running": running, **(status.to_dict() if status else {})}
        if running and status:
            data["next_run"] = sv.next_run(status.cron, status.timezone, now).isoformat()
        emit_json(data)
    else:
        for line in sv.status_lines(status, running, now):
            click.echo(line)
    if not running:
        sys.exit(EXIT_FAILED)


# --- the queue's block in `memoir status` ---------------------------------------------------------


def queue_section(settings):
    """Queue depth by kind, the oldest pending item and items that keep failing."""
    from memoir.cards.status import StatusSection
    from memoir.flows.queue import queue_report
    from memoir.index.pending import PendingIndex

    data = queue_report(settings.queue_dir, pending_index_ids=len(PendingIndex(settings.state_dir)))
    depth = ", ".join(f"{n} {kind}" for kind, n in data["pending"].items())
    lines = [f"queue      {data['pending_total']} pending ({depth})"
             + (" — run `memoir replay`" if data["pending_total"] else "")]
    if oldest := data["oldest_pending"]:
        lines.append(f"  oldest   {oldest['kind']}:{oldest['key']}, {oldest['age_s']} s old, "
                     f"{oldest['attempts']} failed attempts")
    lines += [f"  failing  {f}" for f in data["failing"][:5]]
    if data["claimed"]:
        lines.append(f"  claimed  {data['claimed']} (a replay is running, or its worker died: "
                     "`memoir replay --reclaim-after 0`)")
    return StatusSection("queue", data, tuple(lines))


def serve_section(settings):
    """Whether `memoir serve` runs for this home, its next run and last result (once one has run)."""
    from memoir.cards.status import StatusSection
    from memoir.flows import serve as sv

    status = sv.read_status(settings.state_dir)
    if status is None:
        return None
    running = sv.serving(settings.state_dir)
    return StatusSection("serve", {"running": running, **status.to_dict()},
                         tuple(sv.status_lines(status, running, datetime.now().astimezone())))


from memoir.flows.cli_status import EXTRA_SECTIONS  # noqa: E402

EXTRA_SECTIONS.extend([queue_section, serve_section])
