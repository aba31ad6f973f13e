"""`memoir logs add|list|remove`: which logs a plain `memoir run` reads.

Claude Code and Codex keep every session under one folder in the user's home, so a run finds
them alone. Aider writes one history per repository, wherever the repository is; those are read
by default only once registered here, and the list lives in the config file (`aider_repos`).
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from memoir.cards.config import AIDER_REPOS, config_path, read_config_list, write_config_list
from memoir.flows.cli.app import CommandError, CommandUsage, cli, emit_json, pass_ctx

HEAD_BYTES = 65536


class NotAnAiderRepo(CommandUsage):
    """The path given to `logs add` neither holds an Aider history nor can get one."""


def _absolute(path: str) -> Path:
    return Path(os.path.abspath(Path(path).expanduser()))


def check_aider_source(path: Path) -> Path:
    """The history file `path` names, after checking it holds (or will hold) an Aider history.

    A repo folder with no history yet is accepted when it is a git repository: Aider writes its
    history at the git root on its first run there.
    """
    from memoir.cards.hosts import aider, detect_host  # deferred: start-up (every host reader)

    if not path.exists():
        raise NotAnAiderRepo(f"{path} does not exist; pass an Aider repository folder or its .aider.chat.history.md")
    history = Path(aider.history_file(path)) if path.is_dir() else path
    if not history.exists():
        if (path / ".git").exists():
            return history
        raise NotAnAiderRepo(f"{path} has no {aider.HISTORY_NAME} and is not a git repository root; "
                             "pass the folder where you run aider (its git root), or the history file")
    if not history.is_file():
        raise NotAnAiderRepo(f"{history} is not a regular file")
    try:
        with open(history, "rb") as fh:  # read-only, like every read of a host log
            head = fh.read(HEAD_BYTES)
    except OSError as exc:
        raise NotAnAiderRepo(f"cannot read {history}: {exc}") from exc
    if head.strip() and detect_host(str(history), head) != aider.HOST:
        raise NotAnAiderRepo(f"{history} does not look like an Aider chat history "
                             f"(no '{aider.HEADER}' line); pass the folder where you run aider, or its history file")
    return history


def _registered(ctx) -> tuple[Path, list[str]]:
    path = config_path(ctx.settings, ctx.env)
    return path, read_config_list(path, AIDER_REPOS)


def _env_note(ctx) -> None:
    if ctx.env.get("MEMOIR_AIDER_REPOS") is not None:
        click.echo("note: MEMOIR_AIDER_REPOS is set and overrides the config file's list", err=True)


@cli.group("logs")
def logs_group():
    """Which logs `memoir run` reads without --logs; register Aider repositories here."""


@logs_group.command("add")
@click.argument("path", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print what was registered as JSON.")
@pass_ctx
def logs_add_cmd(ctx, path, as_json):
    """Register an Aider repository (its folder, or its .aider.chat.history.md) for plain `memoir run`.

    The path is kept, absolute, in the config file's `aider_repos`; the file is rewritten
    atomically and its other settings and comments are left as they were. Cards from it take
    the repository folder as their workspace.
    """
    ctx.settings  # a broken config stops here with its message, before anything is written
    source = _absolute(path)
    history = check_aider_source(source)
    config, repos = _registered(ctx)
    added = str(source) not in repos
    if added:
        write_config_list(config, AIDER_REPOS, [*repos, str(source)])
    state = f"{history.stat().st_size} bytes" if history.exists() else "not written yet"
    data = {"path": str(source), "history": str(history), "history_exists": history.exists(),
            "added": added, "config_file": str(config)}
    if as_json:
        emit_json(data)
    else:
        click.echo(f"{'registered' if added else 'already registered'} {source}")
        click.echo(f"  history  {history} ({state})")
        click.echo(f"  config   {config}")
        click.echo("  `memoir run` reads it from now on; `memoir logs list` shows every source")
    _env_note(ctx)


@logs_group.command("remove")
@click.argument("path", type=click.Path())
@pass_ctx
def logs_remove_cmd(ctx, path):
    """Stop reading a registered Aider repository (its cards and the files themselves stay)."""
    ctx.settings
    source = str(_absolute(path))
    config, repos = _registered(ctx)
    if source not in repos:
        known = ", ".join(repos) or "none"
        raise CommandError(f"{source} is not registered (registered: {known}); see `memoir logs list`")
    write_config_list(config, AIDER_REPOS, [r for r in repos if r != source])
    click.echo(f"removed {source} from {config}; its cards stay (`memoir forget` removes cards)")
    _env_note(ctx)


@logs_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the sources as JSON.")
@pass_ctx
def logs_list_cmd(ctx, as_json):
    """Every log source a plain `memoir run` reads, by host: whether it exists and how many log files it holds."""
    from collections import Counter  # deferred: start-up (kept beside the walk that needs it)

    from memoir.cards.log_files import iter_candidates  # deferred: start-up (every host reader)
    from memoir.flows.ingest import default_log_sources  # deferred: start-up (the whole run)

    rows = []
    for host, p in default_log_sources(ctx.settings.aider_repos):
        files = sum(1 for _ in iter_candidates([p], host, Counter())) if p.exists() else 0
        rows.append({"host": host, "path": str(p), "exists": p.exists(), "files": files})
    if as_json:
        emit_json(rows)
        return
    for row in rows:
        found = f"{row['files']} file{'s' if row['files'] != 1 else ''}" if row["exists"] else "missing"
        click.echo(f"{row['host']:<12} {found:<10}  {row['path']}")
    if not ctx.settings.aider_repos:
        click.echo("aider        (none registered: `memoir logs add PATH` for each repo you run aider in)")
