"""`memoir status`: card counts from the files, conflicts, alarms and the last runs."""

from __future__ import annotations

from collections.abc import Callable

import click

from cards.config import Settings
from cards.status import StatusError, StatusReport, StatusSection, build_status
from flows.cli import cli, emit_json, pass_ctx
from flows.status_sections import index_section, model_section, recall_section

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
    """
    try:
        report = status_report(ctx.settings)
    except StatusError as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        emit_json(report.to_dict())
        return
    for line in report.lines():
        click.echo(line)
