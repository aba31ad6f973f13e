"""`memoir hook claude-code` and `memoir hook install|uninstall claude-code`."""

from __future__ import annotations

import json
from pathlib import Path

import click

from memoir.cards.private import private_umask
from memoir.flows.cli.app import cli, pass_ctx
from memoir.flows.cli.hook_settings import (
    hook_command,
    plan_hook_removal,
    plan_hook_settings,
    read_settings_file,
    settings_diff,
    write_settings_file,
)
from memoir.flows.hook_client import hook_main


@cli.group("hook")
def hook_group():
    """Host hooks: inject recalled cards into an agent's context."""


@hook_group.command("claude-code")
@pass_ctx
def hook_claude_code(ctx):
    """Claude Code hook: reads the event JSON on stdin, prints additionalContext or nothing.

    UserPromptSubmit recalls cards for the prompt; SessionStart prints the workspace brief. Always
    exits 0: an error means no context, never a blocked prompt.
    """
    with private_umask():  # it writes only under the home, as the installed hook command does
        hook_main("claude-code", settings=ctx.settings)


@hook_group.group("install")
def hook_install_group():
    """Add memoir's hook to a host's settings file."""


SETTINGS_OPTION = click.option(
    "--settings", "settings_path", type=click.Path(dir_okay=False),
    default=lambda: str(Path.home() / ".claude" / "settings.json"), show_default="~/.claude/settings.json",
    help="The Claude Code settings file (a project's .claude/settings.json works too).")


@hook_install_group.command("claude-code")
@SETTINGS_OPTION
@click.option("--dry-run", is_flag=True, help="Print the change as a diff and write nothing.")
@pass_ctx
def hook_install_claude_code(ctx, settings_path, dry_run):
    """Add the UserPromptSubmit (recall) and SessionStart (brief) hooks; other settings are kept.

    Running it again changes nothing, and replaces older memoir hook commands. The command names
    the memoir home (MEMOIR_HOME=…): run it again after moving the home. The first prompt starts
    `memoir serve-recall` in the background if it is not running. `memoir hook uninstall
    claude-code` takes the hooks out again.
    """
    # The home goes into the command: the hook's client then sends its environment and lets the
    # service resolve the settings, instead of importing the config module on every prompt.
    home = str(ctx.settings.home)
    path = Path(settings_path).expanduser()
    before_text, current = read_settings_file(path)
    after = plan_hook_settings(current, hook_command(home))
    after_text = json.dumps(after, indent=2) + "\n"
    if after == current:
        click.echo(f"{path}: memoir hooks already installed, nothing to change")
        return
    if dry_run:
        click.echo(settings_diff(path, before_text, current, after_text, "with memoir hooks"), nl=False)
        return
    write_settings_file(path, after_text)
    click.echo(f"{path}: memoir hooks installed (UserPromptSubmit → recall, SessionStart → brief)")


@hook_group.group("uninstall")
def hook_uninstall_group():
    """Remove memoir's hook from a host's settings file."""


@hook_uninstall_group.command("claude-code")
@SETTINGS_OPTION
@click.option("--dry-run", is_flag=True, help="Print the change as a diff and write nothing.")
def hook_uninstall_claude_code(settings_path, dry_run):
    """Remove memoir's hook commands from the settings file; every other setting and hook is kept.

    Any command memoir has ever installed there goes (older forms too); running it again changes
    nothing. Cards, index and state stay; a recall service the hook started stops by itself after
    hours without prompts (or stop it now: it is `memoir serve-recall`).
    """
    path = Path(settings_path).expanduser()
    if not path.exists():
        click.echo(f"{path}: no such file, so no memoir hooks to remove")
        return
    before_text, current = read_settings_file(path)
    after, removed = plan_hook_removal(current)
    if not removed:
        click.echo(f"{path}: no memoir hooks found, nothing to change")
        return
    after_text = json.dumps(after, indent=2) + "\n"
    if dry_run:
        click.echo(settings_diff(path, before_text, current, after_text, "without memoir hooks"), nl=False)
        return
    write_settings_file(path, after_text)
    events = ", ".join(dict.fromkeys(removed))
    click.echo(f"{path}: removed {len(removed)} memoir hook command{'s' if len(removed) != 1 else ''} ({events}); "
               "other settings and hooks kept")
