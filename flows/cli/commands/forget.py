"""`memoir forget|unforget`: a card becomes a tombstone, or comes back exactly as it was.

Card files change first, the index follows at once (or the id is queued for `memoir replay`).
"""

from __future__ import annotations

import click

from memoir.flows.cli.app import CommandError, cli, pass_ctx
from memoir.flows.cli.card_index import drop_from_index, reindex


@cli.command("forget")
@click.argument("card_id")
@click.option("--why", default="", help="Why it goes (kept in the tombstone).")
@click.option("--purge", is_flag=True,
              help="Also delete the locally kept text, so `memoir unforget` cannot restore it. On a card "
                   "already forgotten, delete just that text.")
@pass_ctx
def forget_cmd(ctx, card_id, why, purge):
    """Forget a card: it becomes a tombstone and its source turns are never mined again.

    The tombstone (cards/forgotten/ID.md) keeps the sources and the why, nothing the card said;
    the index drops the card at once. The card's text is kept in state/forgotten/ until
    `--purge`, so `memoir unforget ID` can put it back exactly. Deleting a card file by hand
    forgets it too (at the next run).
    """
    from memoir.cards.forget import forget  # deferred: start-up (yaml, jinja2)
    from memoir.cards.store import CardFileError, CardStore  # deferred: start-up (yaml, jinja2)

    store = CardStore(ctx.settings.cards_dir, ctx.settings.state_dir)
    try:
        outcome = forget(store, card_id, why=why, purge=purge)
    except CardFileError as exc:
        raise CommandError(f"{exc}; fix the file, or delete it (a deleted card is forgotten at the "
                           "next run)") from exc
    except OSError as exc:
        raise CommandError(f"cannot forget {card_id}: {exc}") from exc
    click.echo(f"forgot {card_id}: tombstone {outcome.tombstone}; {drop_from_index(ctx.settings, [card_id])}")
    if outcome.kept:
        click.echo(f"its text is kept in {outcome.kept} until `memoir forget --purge {card_id}`")
    elif outcome.purged:
        click.echo("its text was purged: `memoir unforget` can no longer restore it")


@cli.command("unforget")
@click.argument("card_id")
@pass_ctx
def unforget_cmd(ctx, card_id):
    """Undo `memoir forget ID`: the card file comes back exactly as it was and is indexed again."""
    from memoir.cards.forget import unforget  # deferred: start-up (yaml, jinja2)
    from memoir.cards.store import CardStore  # deferred: start-up (yaml, jinja2)

    store = CardStore(ctx.settings.cards_dir, ctx.settings.state_dir)
    try:
        outcome = unforget(store, card_id)
    except OSError as exc:
        raise CommandError(f"cannot unforget {card_id}: {exc}") from exc
    if not outcome.restored:
        click.echo(f"removed the tombstone of {card_id}; no text was kept (purged, or the file was deleted by "
                   "hand), so there is no card to restore: its turns may be mined again after a ledger reset")
        return
    click.echo(f"restored {outcome.path}; {reindex(ctx.settings, store, [card_id])}")
