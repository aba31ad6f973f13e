"""`memoir status`: card counts from the files, conflicts, alarms and the last runs."""

from __future__ import annotations

import sys
from collections.abc import Callable

import click

from memoir.cards.config import ConfigError, Settings
from memoir.cards.status import StatusError, StatusReport, StatusSection, build_status
from memoir.flows.cli import EXIT_FAILED, cli, emit_json, pass_ctx
from memoir.flows.status_sections import index_section, model_section, recall_section

# Later stages add a function here (settings -> section) to show their own state, e.g. queue depth.
EXTRA_SECTIONS: list[Callable[[Settings], StatusSection | None]] = [model_section, index_section, recall_section]


def status_report(settings: Settings) -> StatusReport:
    report = build_status(settings.cards_dir, settings.state_dir, settings.append_only_runs)
    extra = [s for s in (fn(settings) for fn in EXTRA_SECTIONS) if s is not None]
    return report.with_sections(*extra)


@cli.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (counts, workspaces, conflicts, alarms, runs).")
@pass_ctx
def status_cmd(ctx, as_json):
    """Active/superseded/candidate/incomplete counts per workspace, unsettled conflicts, alarms, last runs, recall calls.

    Counts are read from the card files themselves, so they always match what is on disk.
    A config file that cannot be used is reported (with its path) after the rest, and the exit
    code is then 1: every other command, and the installed hook, refuses to run with it.
    """
    broken = ctx.config_error
    try:
        settings = ctx.settings_without_config() if broken else ctx.settings
        report = status_report(settings)
    except (StatusError, ConfigError) as exc:
        raise click.ClickException(str(exc)) from exc
    config = {"source": ctx.config_source, "error": str(broken)} if broken else None
    if as_json:
        emit_json({**report.to_dict(), "config": config} if broken else report.to_dict())
    else:
        for line in report.lines():
            click.echo(line)
        if broken:
            click.echo(f"config     BROKEN: {broken}")
            click.echo(f"  source   {ctx.config_source}; fix it: until then `memoir run` stops and "
                       "the hook recalls nothing")
    if broken:
        click.echo(f"memoir: the configuration cannot be used ({ctx.config_source}): {broken}", err=True)
        sys.exit(EXIT_FAILED)
