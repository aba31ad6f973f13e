"""`memoir report`: the library, its runs and recall as one static HTML page that opens offline."""

from __future__ import annotations

from datetime import datetime, timezone

import click

from memoir.flows.cli.app import cli, emit_json, pass_ctx


@cli.command("report")
@click.option("--out", type=click.Path(dir_okay=True), default=None,
              help="Where to write the page (a file, or a folder for report.html; default HOME/report.html).")
@click.option("--open", "open_it", is_flag=True, help="Open the page in the default browser once written.")
@click.option("--json", "as_json", is_flag=True, help='Print {"path": ..., "cards": ...} instead of the path.')
@pass_ctx
def report_cmd(ctx, out, open_it, as_json):
    """Write one HTML file with cards by status and topic, supersession chains, run history and recall charts.

    The page needs no server and loads nothing from the network: CSS and charts are inline, and
    links go to the card files and the session log lines each card cites.
    """
    from memoir.flows.report import write_report  # deferred: start-up (jinja2, the card files)

    path, report = write_report(ctx.settings, out, datetime.now(timezone.utc))
    if as_json:
        emit_json({"path": str(path), "cards": report.card_count})
    else:
        click.echo(str(path))
    if open_it:
        click.launch(path.as_uri())
