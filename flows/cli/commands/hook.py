"""`memoir hook <host>` and `memoir hook install|uninstall <host>` for Claude Code, Gemini CLI and Copilot CLI.

`memoir hook backlog` (hidden) is what a session's start leaves running in the background.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from memoir.cards.private import private_umask
from memoir.flows.cli.app import cli, pass_ctx
from memoir.flows.cli.hook_settings import (
    copilot_hooks,
    copilot_hooks_path,
    hook_command,
    is_copilot_hooks_file,
    plan_hook_removal,
    plan_hook_settings,
    read_settings_file,
    settings_diff,
    write_settings_file,
)
from memoir.flows.hook_client import HOST_EVENTS, hook_main


@cli.group("hook")
def hook_group():
    """Host hooks: inject recalled cards into an agent's context."""


@hook_group.command("claude-code")
@click.argument("event", required=False, default="")
@pass_ctx
def hook_claude_code(ctx, event):
    """Claude Code hook: reads the event JSON on stdin, prints additionalContext or nothing.

    UserPromptSubmit recalls cards for the prompt; SessionStart prints the workspace brief. EVENT
    (SessionStart) gives the hook the brief's budget from its start. Always exits 0: an error means
    no context, never a blocked prompt.
    """
    with private_umask():  # it writes only under the home, as the installed hook command does
        hook_main("claude-code", settings=ctx.settings, event=event)


@hook_group.command("gemini-cli")
@click.argument("event", required=False, default="")
@pass_ctx
def hook_gemini_cli(ctx, event):
    """Gemini CLI hook: BeforeAgent recalls cards for the prompt, SessionStart prints the brief (EVENT names
    it: its budget from the start). Always exits 0."""
    with private_umask():
        hook_main("gemini-cli", settings=ctx.settings, event=event)


@hook_group.command("copilot-cli")
@click.argument("event", required=False, default="")
@pass_ctx
def hook_copilot_cli(ctx, event):
    """Copilot CLI hook: userPromptTransformed recalls cards into the model-facing prompt, sessionStart
    adds the brief. EVENT names the event (Copilot's camelCase payloads carry none). Always exits 0."""
    with private_umask():
        hook_main("copilot-cli", settings=ctx.settings, event=event)


@hook_group.command("backlog", hidden=True)
@click.argument("host", type=click.Choice(sorted(HOST_EVENTS)))
@click.argument("transcript", type=click.Path(dir_okay=False))
@pass_ctx
def hook_backlog(ctx, host, transcript):
    """What a session's start leaves running (flows/hook_backlog.py starts it, detached): the log of the
    session before TRANSCRIPT's, read as `memoir run --logs` reads it, within session_start_backlog_timeout_s.

    Prints one JSON line (its record in state/backlog.jsonl). Exits 0 when another run holds the home:
    that run or the next reads the log.
    """
    from memoir.flows.session_backlog import process_backlog  # deferred: start-up (the whole run)

    with private_umask():  # it writes only under the home, as a run does
        report = process_backlog(ctx.settings, host, transcript)
    click.echo(json.dumps(report.to_dict(), sort_keys=True))


@hook_group.group("install")
def hook_install_group():
    """Add memoir's hook to a host's settings file."""


SETTINGS_OPTION = click.option(
    "--settings", "settings_path", type=click.Path(dir_okay=False),
    default=lambda: str(Path.home() / ".claude" / "settings.json"), show_default="~/.claude/settings.json",
    help="The Claude Code settings file (a project's .claude/settings.json works too).")


GEMINI_SETTINGS_OPTION = click.option(
    "--settings", "settings_path", type=click.Path(dir_okay=False),
    default=lambda: str(Path.home() / ".gemini" / "settings.json"), show_default="~/.gemini/settings.json",
    help="The Gemini CLI settings file (a project's .gemini/settings.json works too).")
REPO_OPTION = click.option("--repo", type=click.Path(file_okay=False), default=None,
                           help="A repository whose .github/hooks/ Copilot CLI reads (default: your user-level "
                                "~/.copilot/hooks/, read in every repository).")
DRY_RUN_OPTION = click.option("--dry-run", is_flag=True, help="Print the change as a diff and write nothing.")


def _install(path: Path, host: str, home: str, dry_run: bool) -> None:
    """Add memoir's prompt and start hooks for `host` to the settings file at `path`, other settings kept."""
    before_text, current = read_settings_file(path)
    after = plan_hook_settings(current, hook_command(home, host), host)
    after_text = json.dumps(after, indent=2) + "\n"
    if after == current:
        click.echo(f"{path}: memoir hooks already installed, nothing to change")
        return
    if dry_run:
        click.echo(settings_diff(path, before_text, current, after_text, "with memoir hooks"), nl=False)
        return
    write_settings_file(path, after_text)
    click.echo(f"{path}: memoir hooks installed (prompt → recall, session start → brief)")


@hook_install_group.command("gemini-cli")
@GEMINI_SETTINGS_OPTION
@DRY_RUN_OPTION
@pass_ctx
def hook_install_gemini_cli(ctx, settings_path, dry_run):
    """Add the BeforeAgent (recall) and SessionStart (brief) hooks to Gemini CLI's settings; others kept."""
    _install(Path(settings_path).expanduser(), "gemini-cli", str(ctx.settings.home), dry_run)


@hook_install_group.command("copilot-cli")
@REPO_OPTION
@DRY_RUN_OPTION
@pass_ctx
def hook_install_copilot_cli(ctx, repo, dry_run):
    """Write memoir.json in ~/.copilot/hooks/ (or a repository's .github/hooks/ with --repo): Copilot
    CLI loads every hook file in both."""
    path = copilot_hooks_path(repo)
    before_text, current = read_settings_file(path)
    if current and not is_copilot_hooks_file(current):
        raise click.UsageError(f"{path} exists and is not memoir's; nothing was changed")
    after = copilot_hooks(hook_command(str(ctx.settings.home), "copilot-cli"))
    after_text = json.dumps(after, indent=2) + "\n"
    if after == current:
        click.echo(f"{path}: memoir hooks already installed, nothing to change")
    elif dry_run:
        click.echo(settings_diff(path, before_text, current, after_text, "with memoir hooks"), nl=False)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_settings_file(path, after_text)
        click.echo(f"{path}: memoir hooks installed (userPromptTransformed → recall, sessionStart → brief)")


@hook_install_group.command("claude-code")
@SETTINGS_OPTION
@DRY_RUN_OPTION
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
    _install(Path(settings_path).expanduser(), "claude-code", str(ctx.settings.home), dry_run)


@hook_group.group("uninstall")
def hook_uninstall_group():
    """Remove memoir's hook from a host's settings file."""


@hook_uninstall_group.command("gemini-cli")
@GEMINI_SETTINGS_OPTION
@DRY_RUN_OPTION
def hook_uninstall_gemini_cli(settings_path, dry_run):
    """Remove memoir's hook commands from Gemini CLI's settings; every other setting and hook is kept."""
    _uninstall(Path(settings_path).expanduser(), dry_run)


@hook_uninstall_group.command("copilot-cli")
@REPO_OPTION
@DRY_RUN_OPTION
def hook_uninstall_copilot_cli(repo, dry_run):
    """Delete memoir.json from ~/.copilot/hooks/ (or --repo's .github/hooks/), only when it holds memoir's hooks alone."""
    path = copilot_hooks_path(repo)
    if not path.exists():
        click.echo(f"{path}: no such file, so no memoir hooks to remove")
        return
    _, current = read_settings_file(path)
    if not is_copilot_hooks_file(current):
        raise click.UsageError(f"{path} is not memoir's hook file; nothing was changed")
    if dry_run:
        click.echo(f"would delete {path}")
        return
    path.unlink()
    click.echo(f"{path}: removed memoir's Copilot CLI hooks")


@hook_uninstall_group.command("claude-code")
@SETTINGS_OPTION
@DRY_RUN_OPTION
def hook_uninstall_claude_code(settings_path, dry_run):
    """Remove memoir's hook commands from the settings file; every other setting and hook is kept.

    Any command memoir has ever installed there goes (older forms too); running it again changes
    nothing. Cards, index and state stay; a recall service the hook started stops by itself after
    hours without prompts (or stop it now: it is `memoir serve-recall`).
    """
    _uninstall(Path(settings_path).expanduser(), dry_run)


def _uninstall(path: Path, dry_run: bool) -> None:
    """Take memoir's hook commands out of a Claude Code or Gemini CLI settings file, all else kept."""
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
