"""`memoir projects [merge|split]`: which folders are one project, and so share one memory.

A folder's project is its git identity (`cards/projects.py`): a linked worktree, a moved folder and a
second clone are one project, two repositories never. By hand, a person can make two projects one
(`merge`, say a fork that should share its upstream's cards) or give a folder its own again (`split`).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import click

from memoir.cards.projects import ProjectChangeRefused
from memoir.flows.cli.app import CommandUsage, cli, emit_json, pass_ctx


def _registry(ctx):
    from memoir.cards.project_registry import ProjectRegistry  # deferred: start-up (yaml, jinja2)

    return ProjectRegistry(ctx.settings.state_dir)


def _cards(ctx) -> list:
    from memoir.cards.store import CardStore  # deferred: start-up (yaml, jinja2)

    cards, problems = CardStore(ctx.settings.cards_dir, ctx.settings.state_dir).load_all()
    for problem in problems:
        click.echo(f"unreadable card file: {problem}", err=True)
    return cards


def _absolute(path: str) -> str:
    return os.path.abspath(Path(path).expanduser())


def _project_named(registry, what: str, recorded: set[str]) -> str:
    """The project `what` names: a project id, or a folder (registered, or one git names a project for)."""
    known = registry.load()
    ids = {p.id for p in known.projects(recorded)} | set(known.merged) | recorded
    if what in ids:
        return known.canonical(what)
    pid = registry.resolve(_absolute(what)) if what else ""
    if not pid:
        raise CommandUsage(f"{what!r} names no project: neither a project id nor a git folder memoir knows; "
                           "`memoir projects` lists them")
    return pid


@cli.group("projects", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print the projects as JSON.")
@pass_ctx
def projects_group(ctx, as_json):
    """Projects: each with its id, name, the folders it was seen at, and its card counts.

    A folder's project is its git `origin` (normalized) or, with no remote, its first commit: a
    worktree, a moved folder or a second clone shares its project's cards; two projects never do.
    """
    if click.get_current_context().invoked_subcommand is not None:
        return
    cards = _cards(ctx)
    known = _registry(ctx).learn({c.workspace for c in cards})  # folders still there are asked once
    of = Counter(known.project_of(c.workspace, c.project) for c in cards)
    active = Counter(known.project_of(c.workspace, c.project) for c in cards if c.status == "active")
    rows = [{"id": p.id, "name": p.name, "aliases": list(p.aliases), "cards": of[p.id], "active": active[p.id]}
            for p in known.projects({c.project for c in cards})]
    if as_json:
        emit_json({"projects": rows, "no_project": of[""]})
        return
    for row in rows:
        click.echo(f"{row['id']}  ({row['name']})  {row['cards']} cards, {row['active']} active")
        for alias in row["aliases"]:
            click.echo(f"  {alias}")
    if of[""]:
        click.echo(f"{of['']} cards of folders that are no git project (compared by folder)")
    if not rows and not of[""]:
        click.echo("no projects yet: `memoir run` records each card's project")


@projects_group.command("merge")
@click.argument("keep")
@click.argument("fold")
@click.option("--json", "as_json", is_flag=True, help="Print the merged project as JSON.")
@pass_ctx
def projects_merge(ctx, keep, fold, as_json):
    """Make project FOLD part of project KEEP: FOLD's folders and cards count as KEEP's from now on.

    KEEP and FOLD are project ids (`memoir projects` lists them) or folders of the projects.
    """
    registry = _registry(ctx)
    recorded = {c.project for c in _cards(ctx) if c.project}
    a, b = (_project_named(registry, what, recorded) for what in (keep, fold))
    try:
        merged = registry.merge(a, b)
    except ProjectChangeRefused as exc:
        raise CommandUsage(str(exc)) from exc
    aliases = list(merged.aliases(a))
    if as_json:
        emit_json({"project": a, "merged": b, "aliases": aliases})
        return
    click.echo(f"{b} is now part of {a}; its cards are recalled in every folder of {a}")
    for alias in aliases:
        click.echo(f"  {alias}")


@projects_group.command("split")
@click.argument("path", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print the new project as JSON.")
@pass_ctx
def projects_split(ctx, path, as_json):
    """Give folder PATH a project of its own again: it no longer shares the memory of its clones,
    worktrees or a project it was merged into (its own cards go with it)."""
    registry = _registry(ctx)
    folder = _absolute(path)
    before = registry.resolve(folder)
    if not before:
        raise CommandUsage(f"{folder} is no project memoir knows (not a git folder, and not registered): "
                           "nothing to split")
    try:
        _, own = registry.split(folder)
    except ProjectChangeRefused as exc:
        raise CommandUsage(str(exc)) from exc
    if as_json:
        emit_json({"path": folder, "project": own, "was": before})
        return
    click.echo(f"{folder} is project {own} now (was {before})")
