"""`memoir schedule install|remove cron|systemd`: the nightly run under cron or a systemd user timer.

The crontab is read with `crontab -l` and written with `crontab -` (or a file, `--crontab-file`);
the units go to `~/.config/systemd/user` (or `--unit-dir`) and are enabled with `systemctl --user`.
Runbook: runbooks/scheduling.md
"""

from __future__ import annotations

from pathlib import Path

import click

from memoir.cards.private import make_private_dir
from memoir.cards.store import write_atomic
from memoir.flows.cli.app import CommandError, cli, pass_ctx
from memoir.flows.schedule import cron_line, find_mkdir, memoir_command, unit_files, with_memoir, without_memoir

KINDS = click.Choice(["cron", "systemd"])


def _run(argv: list[str], stdin: str | None = None):
    import subprocess  # deferred: start-up

    try:
        return subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CommandError(f"cannot run {' '.join(argv)}: {exc}") from exc


def read_crontab(path: str | None) -> str:
    if path:
        p = Path(path)
        return p.read_text(encoding="utf-8") if p.exists() else ""
    proc = _run(["crontab", "-l"])
    if proc.returncode != 0:
        if "no crontab" in proc.stderr.lower():
            return ""
        raise CommandError(f"crontab -l failed: {proc.stderr.strip()}; pass --crontab-file to write a file instead")
    return proc.stdout


def write_crontab(path: str | None, text: str) -> None:
    if path:
        write_atomic(Path(path), text)
        return
    proc = _run(["crontab", "-"], stdin=text)
    if proc.returncode != 0:
        raise CommandError(f"crontab - failed: {proc.stderr.strip()}; nothing was changed")


def make_state_dir(state_dir: Path) -> None:
    """The home's state folder (0700), made now: the nightly log goes there before memoir first runs."""
    try:
        make_private_dir(state_dir)
    except OSError as exc:
        raise CommandError(f"cannot make {state_dir} ({exc.strerror or exc}): the nightly run logs there; "
                           "move what stands in its place, or choose another --home; nothing was installed") from exc


def default_unit_dir(env: dict[str, str]) -> Path:
    base = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else Path(env.get("HOME", "~")).expanduser() / ".config"
    return base / "systemd" / "user"


def systemctl(*args: str) -> str:
    """`systemctl --user ARGS`; returns "" or what went wrong."""
    proc = _run(["systemctl", "--user", *args])
    return "" if proc.returncode == 0 else (proc.stderr.strip() or f"exit {proc.returncode}")


def target_options(f):
    f = click.option("--crontab-file", type=click.Path(dir_okay=False), default=None, metavar="PATH",
                     help="cron: edit this file instead of the user's crontab (`crontab -l` / `crontab -`).")(f)
    f = click.option("--unit-dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
                     help="systemd: write the units here instead of ~/.config/systemd/user (nothing is enabled).")(f)
    f = click.option("--name", default="memoir", show_default=True, help="systemd: the unit name (NAME.service, NAME.timer).")(f)
    return f


@cli.group("schedule")
def schedule_group():
    """Run `memoir run` every night under cron or a systemd user timer (at nightly_cron).

    Runbook: runbooks/scheduling.md
    """


@schedule_group.command("install")
@click.argument("kind", type=KINDS)
@target_options
@click.option("--dry-run", is_flag=True, help="Print what would be written; change nothing.")
@pass_ctx
def install_cmd(ctx, kind, crontab_file, unit_dir, name, dry_run):
    """Write the crontab line, or the service and timer units (and enable the timer).

    A second install replaces memoir's line or units for this home; other crontab lines stay.
    The home's state folder is made (0700) when missing: the nightly log is written there.
    """
    settings = ctx.settings
    argv = memoir_command(settings)
    if not dry_run:
        make_state_dir(settings.state_dir)
    if kind == "cron":
        line = cron_line(settings, argv, find_mkdir(ctx.env.get("PATH")))
        if dry_run:
            click.echo(line)
            return
        write_crontab(crontab_file, with_memoir(read_crontab(crontab_file), line, settings.home))
        click.echo(f"installed {crontab_file or 'crontab'}: {line}")
        click.echo(f"log       {settings.state_dir / 'nightly.log'}")
        return
    units = unit_files(settings, argv, name)
    folder = Path(unit_dir) if unit_dir else default_unit_dir(ctx.env)
    if dry_run:
        for file, text in units.items():
            click.echo(f"# {folder / file}\n{text}")
        return
    for file, text in units.items():
        write_atomic(folder / file, text)
        click.echo(f"wrote     {folder / file}")
    if unit_dir:
        click.echo(f"next      link or copy them into ~/.config/systemd/user, then "
                   f"`systemctl --user enable --now {name}.timer`")
        return
    problem = systemctl("daemon-reload") or systemctl("enable", "--now", f"{name}.timer")
    if problem:
        raise CommandError(f"units written, but systemd did not take them: {problem}; run "
                           f"`systemctl --user daemon-reload && systemctl --user enable --now {name}.timer` "
                           "in your login session")
    click.echo(f"enabled   {name}.timer (`systemctl --user list-timers {name}.timer` shows the next run)")


@schedule_group.command("remove")
@click.argument("kind", type=KINDS)
@target_options
@pass_ctx
def remove_cmd(ctx, kind, crontab_file, unit_dir, name):
    """Take memoir's crontab line, or its units, out again."""
    settings = ctx.settings
    if kind == "cron":
        before = read_crontab(crontab_file)
        after = without_memoir(before, settings.home)
        if after != before:
            write_crontab(crontab_file, after)
        click.echo("removed   memoir's crontab line" if after != before else "nothing   no memoir line for this home")
        return
    folder = Path(unit_dir) if unit_dir else default_unit_dir(ctx.env)
    if not unit_dir and (folder / f"{name}.timer").exists():
        systemctl("disable", "--now", f"{name}.timer")  # best effort: the files go either way
    removed = [f for f in (f"{name}.service", f"{name}.timer") if (folder / f).exists()]
    for file in removed:
        (folder / file).unlink()
        click.echo(f"removed   {folder / file}")
    if not removed:
        click.echo(f"nothing   no {name}.service or {name}.timer in {folder}")
    elif not unit_dir:
        systemctl("daemon-reload")
