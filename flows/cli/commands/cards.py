"""`memoir cards list|show` and `memoir export`: the card files as they are on disk."""

from __future__ import annotations

from pathlib import Path

import click

from memoir.cards.chain import supersession_chain
from memoir.cards.title import display_title
from memoir.cards.values import STATUSES
from memoir.flows.cli.app import CommandError, cli, emit_json, pass_ctx

EXPORT_STATUSES = ("active", "candidate", "incomplete", "superseded")  # forgotten tombstones stay home


@cli.group("cards")
def cards_group():
    """List and show experience cards."""


@cards_group.command("list")
@click.option("--status", type=click.Choice(STATUSES), help="Only cards with this status.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@pass_ctx
def cards_list(ctx, status, as_json):
    """One line per card: id, status, quality, last update, title."""
    from memoir.cards.forget import load_tombstones  # deferred: start-up (yaml, jinja2)
    from memoir.cards.store import CardStore  # deferred: start-up (yaml, jinja2)

    store = CardStore(ctx.settings.cards_dir, ctx.settings.state_dir)
    cards, problems = store.load_all()
    if status in (None, "forgotten"):  # tombstones live in cards/forgotten/, outside the index's glob
        tombstones, bad = load_tombstones(store)
        cards, problems = cards + tombstones, problems + bad
    rows = [c for c in cards if status is None or c.status == status]
    rows.sort(key=lambda c: (c.updated, c.id), reverse=True)
    if as_json:
        emit_json([{"id": c.id, "status": c.status, "quality": c.quality, "updated": c.updated,
                    "topics": list(c.topics), "workspace": c.workspace,
                    "title": display_title(c)} for c in rows])
    else:
        for c in rows:
            click.echo(f"{c.id}  {c.status:<10} {c.quality:<5} {c.updated[:10]:<10}  {display_title(c)}")
        if not rows:
            click.echo("no cards" + (f" with status {status}" if status else ""))
    for problem in problems:
        click.echo(f"unreadable card file: {problem}", err=True)


@cards_group.command("show")
@click.argument("card_id")
@click.option("--chain", is_flag=True, help="Print the card's supersession chain, oldest to newest, instead of the card.")
@click.option("--raw", is_flag=True, help="Print the card file exactly as it is on disk.")
@pass_ctx
def cards_show(ctx, card_id, chain, raw):
    """Print one card for review: every field, all six sections and its supersession chain."""
    from memoir.cards.forget import tombstone_path  # deferred: start-up (yaml, jinja2)
    from memoir.cards.store import CardFileError, CardStore  # deferred: start-up (yaml, jinja2)
    from memoir.index.chain_links import CardsOnDisk  # deferred: start-up (yaml, jinja2)
    from memoir.index.containers import human_review  # deferred: start-up (jinja2)

    store = CardStore(ctx.settings.cards_dir, ctx.settings.state_dir)
    text = store.read_text(card_id)
    if text is None:
        tomb = tombstone_path(store, card_id)
        text = tomb.read_text(encoding="utf-8") if tomb.exists() else None
    if text is None:
        raise CommandError(f"no card {card_id} in {ctx.settings.cards_dir}; see `memoir cards list`")
    if chain:
        for c in supersession_chain(card_id, CardsOnDisk(store)).cards:
            mark = "→" if c.id == card_id else " "
            link = f"superseded by {c.superseded_by}" if c.superseded_by else "current"
            click.echo(f"{mark} {c.id}  {c.status:<10} {c.created[:10]:<10}  {link:<32}  {display_title(c)}")
        return
    if raw:
        click.echo(text, nl=False)
        return
    try:
        card = store.parse(card_id, text)
    except CardFileError as exc:
        raise CommandError(f"{exc}; `memoir cards show --raw {card_id}` prints the file as it is") from exc
    click.echo(human_review(card, store), nl=False)


def parse_statuses(values: tuple[str, ...]) -> tuple[str, ...]:
    """`--status` values (repeated or comma-separated, `all` for every one) as card statuses, in order.

    Raises:
        click.BadParameter: a value that is no exportable status.
    """
    wanted = [v.strip().lower() for value in values for v in value.split(",") if v.strip()]
    unknown = [v for v in wanted if v not in EXPORT_STATUSES + ("all",)]
    if unknown:
        why = "; forgotten cards are tombstones and never exported" if "forgotten" in unknown else ""
        raise click.BadParameter(f"{', '.join(unknown)} is not one of {', '.join(EXPORT_STATUSES)}, all{why}")
    if "all" in wanted:
        return EXPORT_STATUSES
    return tuple(dict.fromkeys(wanted)) or ("active",)


@cli.command("export")
@click.argument("dest", type=click.Path())
@click.option("--status", "statuses", multiple=True, default=("active",), show_default=True,
              callback=lambda _ctx, _param, values: parse_statuses(values),
              help="Cards of this status: active, candidate, incomplete, superseded, or all. Repeat it or give "
                   "a comma list (--status active,candidate).")
@pass_ctx
def export_cmd(ctx, dest, statuses):
    """Copy the card files, bundled by topic, into DEST (a folder, or a .tar.gz archive).

    Only active cards unless --status says otherwise: the ones recall would use, not the
    candidates a person has yet to review. The index is never exported: `memoir index rebuild`
    makes one from the cards anywhere.
    """
    from memoir.cards.store import CardStore  # deferred: start-up (yaml, jinja2)
    from memoir.index.containers import export_cards  # deferred: start-up (jinja2)

    store = CardStore(ctx.settings.cards_dir, ctx.settings.state_dir)
    try:
        path, n = export_cards(store, Path(dest), statuses)
    except OSError as exc:
        raise CommandError(f"cannot write {dest}: {exc}") from exc
    which = "all statuses" if statuses == EXPORT_STATUSES else ", ".join(statuses)
    click.echo(f"exported {n} card{'s' if n != 1 else ''} ({which}) to {path}")
    if n == 0 and statuses != EXPORT_STATUSES:
        click.echo(f"no {which} cards; `memoir export --status all {dest}` takes every card", err=True)
