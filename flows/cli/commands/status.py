"""`memoir status`: card counts from the files, conflicts, alarms, the last runs and each stage's block."""

from __future__ import annotations

import click

from memoir.flows.cli.app import CommandError, cli, emit_json, pass_ctx


@cli.command("status")
@click.option("--json", "as_json", is_flag=True,
              help="Print the report as JSON (counts, projects, workspaces, conflicts, alarms, runs, backlog).")
@click.option("--workspace", default="", metavar="DIR|PROJECT",
              help="Only the cards of this folder's project (a linked worktree, a moved folder or a second clone "
                   "counts as its project), or of a project id or name `memoir projects` lists.")
@pass_ctx
def status_cmd(ctx, as_json, workspace):
    """Active/superseded/candidate/incomplete counts per project, unsettled conflicts, alarms, last runs, recall calls.

    Counts are read from the card files themselves, so they always match what is on disk. They are
    grouped by project (its git identity: each folder it was seen at is listed under it); a folder of
    no project is counted on its own. The last background run a session's start left (`backlog`)
    shows its outcome (runbooks/session-backlog.md).
    A config file that cannot be used is reported (with its path) after the rest, and the exit
    code is then 1: every other command, and the installed hook, refuses to run with it.
    """
    from memoir.flows.status_sections import status_report  # deferred: start-up (card files, the index check)

    broken = ctx.config_error
    report = status_report(ctx.settings_without_config() if broken else ctx.settings, workspace)
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
        raise CommandError(f"the configuration cannot be used ({ctx.config_source}): {broken}") from broken
