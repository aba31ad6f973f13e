"""`memoir serve`: the three flows on their schedules under Prefect, and `serve --status`."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import replace
from datetime import datetime

import click

from memoir.cards.config import apply_process_environment
from memoir.cards.private import private_umask
from memoir.flows.cli.app import EXIT_FAILED, cli, emit_json, exit_with, pass_ctx
from memoir.flows.prefect_env import configure_prefect


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
    from memoir.flows import serve as sv  # deferred: start-up (subprocess, urllib)

    settings = ctx.settings
    if show_status:
        return serve_status(settings, as_json)
    cron = cron or settings.nightly_cron
    try:
        zone = sv.check_timezone(timezone or settings.nightly_timezone or sv.local_timezone(ctx.env))
        sv.next_run(cron, zone, datetime.now().astimezone())
        if replay_cron:
            sv.next_run(replay_cron, zone, datetime.now().astimezone())
    except (sv.BadTimezone, sv.BadSchedule) as exc:
        raise click.UsageError(str(exc)) from exc
    # serve, its Prefect server and the flows it runs write only under the home: all of it private
    with private_umask():
        configure_prefect(settings.home)
        with sv.serve_lock(settings.state_dir), sv.stop_on_signals() as stopping:
            # Written before Prefect starts, so --status never shows a former serve's pid meanwhile.
            status = sv.ServeStatus(pid=os.getpid(), started=datetime.now().astimezone().isoformat(timespec="seconds"),
                                    api_url="(starting)", cron=cron, timezone=zone, replay_cron=replay_cron,
                                    last_run=last_run(settings))
            sv.write_status(settings.state_dir, status)
            click.echo(f"memoir serve (pid {os.getpid()}) for {settings.home}: starting Prefect "
                       "(20-30 s the first time)...", err=True)
            try:
                if ctx.env.get("PREFECT_API_URL"):
                    serve_and_watch(settings, replace(status, api_url=ctx.env["PREFECT_API_URL"]), stopping)
                else:
                    with sv.prefect_server(settings.home, port, stopping=stopping) as api_url:
                        apply_process_environment({"PREFECT_API_URL": api_url})  # for Prefect's client here
                        serve_and_watch(settings, replace(status, api_url=api_url), stopping)
            except KeyboardInterrupt:
                pass  # a signal while the server started
            finally:
                sv.stop_children()
                final = sv.read_status(settings.state_dir) or status
                sv.write_status(settings.state_dir, replace(final, stopped=datetime.now().astimezone()
                                                            .isoformat(timespec="seconds")))
    click.echo("stopped", err=True)


def last_run(settings) -> dict | None:
    """The last finished run, as the status file shows it."""
    from memoir.flows.serve import take_snapshot  # deferred: start-up (subprocess, urllib)

    last = take_snapshot(settings.state_dir).last_run
    return {"result": "finished", **last} if last else None


def serve_and_watch(settings, status, stopping) -> None:
    """Serve with the status file kept and one line per run printed."""
    from memoir.flows import serve as sv  # deferred: start-up (subprocess, urllib)

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


def serve_status(settings, as_json: bool) -> None:
    """`serve --status`: exit 0 when a serve runs for this home, EXIT_FAILED when none does."""
    from memoir.flows import serve as sv  # deferred: start-up (subprocess, urllib)

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
        exit_with(EXIT_FAILED)
