"""`memoir forget|unforget|review|search|mcp`: the user stays in control (DESIGN.md stage 8).

Card files change first, the index follows at once (or the id is queued for `memoir replay`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from memoir.cards.store import CardFileError, CardStore
from memoir.flows.cli import EXIT_FAILED, cli, emit_json, pass_ctx


def _store(settings) -> CardStore:
    return CardStore(settings.cards_dir, settings.state_dir)


def _index_exists(settings) -> bool:
    from memoir.index.recall import INDEX_FILE

    return (Path(settings.index_dir) / INDEX_FILE).exists()


def drop_from_index(settings, ids: list[str]) -> str:
    """Remove the rows now; when the index cannot be written, queue the ids (the next sync drops them)."""
    import apsw

    from memoir.index.db import open_index
    from memoir.index.embed import default_embedder
    from memoir.index.errors import IndexFailure
    from memoir.index.pending import PendingIndex

    if not _index_exists(settings):
        return "no index yet"
    try:
        # The embedder only names the model here; nothing is embedded, so it never loads.
        with open_index(settings.index_dir, default_embedder()) as index:
            index.remove(ids)
    except (IndexFailure, OSError, apsw.Error) as exc:
        PendingIndex(settings.state_dir).add(ids)
        return f"index not updated ({exc}); queued for `memoir replay`"
    return "dropped from the index"


def reindex(settings, store: CardStore, ids: list[str]) -> str:
    """Index these card files now (loads the model), or queue them; without an index the next run does it."""
    from memoir.index.embed import default_embedder
    from memoir.index.pending import PendingIndex
    from memoir.index.sync import index_or_queue

    if not _index_exists(settings):
        return "no index yet; `memoir run` builds it"
    outcome = index_or_queue(store, settings.index_dir, default_embedder(), ids, PendingIndex(settings.state_dir))
    if outcome.queued:
        return f"index not updated ({outcome.error}); queued for `memoir replay`"
    return "index updated"


# --- forget / unforget ------------------------------------------------------------------------------


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
    from memoir.cards.forget import ForgetError, forget

    store = _store(ctx.settings)
    try:
        outcome = forget(store, card_id, why=why, purge=purge)
    except ForgetError as exc:
        raise click.ClickException(str(exc)) from exc
    except CardFileError as exc:
        raise click.ClickException(f"{exc}; fix the file, or delete it (a deleted card is forgotten at the "
                                   "next run)") from exc
    except OSError as exc:
        raise click.ClickException(f"cannot forget {card_id}: {exc}") from exc
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
    from memoir.cards.forget import ForgetError, unforget

    store = _store(ctx.settings)
    try:
        outcome = unforget(store, card_id)
    except ForgetError as exc:
        raise click.ClickException(str(exc)) from exc
    except OSError as exc:
        raise click.ClickException(f"cannot unforget {card_id}: {exc}") from exc
    if not outcome.restored:
        click.echo(f"removed the tombstone of {card_id}; no text was kept (purged, or the file was deleted by "
                   "hand), so there is no card to restore: its turns may be mined again after a ledger reset")
        return
    click.echo(f"restored {outcome.path}; {reindex(ctx.settings, store, [card_id])}")


# --- review ------------------------------------------------------------------------------------------

_ACTIONS = {"c": "confirm", "r": "reject", "e": "edit", "s": "skip", "q": "quit"}
_WHY_PROMPT = ("Why reject it? The reason is kept in the card file (`why:`) so whoever opens it later sees why "
               "it never comes back; the card stays out of review and recall either way.")


class _Stopped(Exception):
    """The person ended input (Ctrl-D or Ctrl-C) at a prompt: the review ends, nothing half-done."""


def _ask(text: str, **kwargs) -> str:
    try:
        return click.prompt(text, **kwargs)
    except click.Abort as exc:
        click.echo()  # the prompt left the cursor on its line
        raise _Stopped() from exc


@cli.command("review")
@click.argument("card", required=False)
@click.option("--json", "as_json", is_flag=True, help="List what awaits review (or CARD) as JSON and exit (for scripts).")
@pass_ctx
def review_cmd(ctx, card, as_json):
    """Walk the cards the gates held back, one at a time: confirm, reject, edit in $EDITOR, skip or quit.

    With CARD (an id, a unique start of one, or the card's file) only that card is shown, whatever
    its status: a rejected card can be confirmed after all, an active one rejected. Under each
    card the gate that held it back says what it means and what would clear it.

    Confirm makes a card active with `confirmed_by: user`; reject keeps it as a candidate with
    `gate: rejected_by_user` and your reason as `why:`, out of recall and out of review; edit
    writes your text as a hand edit that no later run overwrites. The file changes first, then
    the index. Ctrl-D at a prompt ends the review; what was decided stays decided.
    """
    from memoir.cards.review import Pending, ReviewError, awaiting_review, find_card, reviewable_alone

    store = _store(ctx.settings)
    if card:
        try:
            card_id = find_card(card, store.ids(), store.cards_dir)
            queue = [store.read(card_id)]
            reviewable_alone(queue[0])
        except (ReviewError, CardFileError) as exc:
            raise click.ClickException(str(exc)) from exc
        except OSError as exc:
            raise click.ClickException(f"cannot read {card}: {exc}") from exc
    else:
        cards, problems = store.load_all()
        queue = awaiting_review(cards)
        for problem in problems:
            click.echo(f"unreadable card file: {problem}", err=True)
    if as_json:
        emit_json([Pending.of(c).to_json() for c in queue])
        return
    if not queue:
        click.echo("nothing awaits review")
        return
    done = {"confirm": 0, "reject": 0, "edit": 0, "skip": 0}
    stopped = False
    for i, first in enumerate(queue, 1):
        try:
            action = _review_one(ctx.settings, store, first.id, i, len(queue), done)
        except _Stopped:
            stopped = True
            break
        if action == "quit":
            break
    decided = done["confirm"] + done["reject"]
    counts = f"{done['confirm']} confirmed, {done['reject']} rejected, {done['edit']} edited, {done['skip']} skipped"
    if stopped:
        click.echo(f"review stopped, {decided} decided, {len(queue) - decided} left ({counts})")
    else:
        click.echo(f"{counts}; {len(queue) - decided} left")


def _gate_text(card, settings) -> str:
    """The held gate, what it finds now and what clears it, wrapped for a terminal."""
    import textwrap

    from memoir.cards.review import gate_note

    note = gate_note(card, settings.min_conclusion_chars)
    if note is None:
        return ""
    lines = [f"held back by {note.gate}" + (f": {note.reason}" if note.reason and not note.met_now else "")]
    lines += textwrap.wrap(note.help, 96, initial_indent="  ", subsequent_indent="  ")
    if note.met_now:
        lines.append("  The card as it reads now meets this gate: confirm it to clear the hold.")
    return "\n".join(lines)


def _review_one(settings, store: CardStore, card_id: str, i: int, n: int, done: dict) -> str:
    """Show one card until the person decides; returns the action that ended it.

    Raises:
        _Stopped: input ended at a prompt; the card is left as it was.
    """
    from memoir.cards.review import DEFAULT_WHY, ReviewError, apply_decision, confirm, reject, save_edit
    from memoir.index.containers import human_review

    while True:
        try:
            card = store.read(card_id)  # again each time: the file may have changed meanwhile
        except (OSError, CardFileError) as exc:
            click.echo(f"cannot read {card_id}: {exc}; skipped", err=True)
            return "skip"
        click.echo(human_review(card, store))
        gate = _gate_text(card, settings)
        if gate:
            click.echo(gate + "\n")
        key = _ask(f"[{i}/{n}] (c)onfirm (r)eject (e)dit (s)kip (q)uit", type=click.Choice(list(_ACTIONS)),
                   show_choices=False)
        action = _ACTIONS[key]
        if action in ("skip", "quit"):
            done["skip"] += action == "skip"
            return action
        try:
            if action == "confirm":
                apply_decision(store, confirm(card, min_conclusion_chars=settings.min_conclusion_chars))
            elif action == "reject":
                click.echo(_WHY_PROMPT)
                why = _ask("reason", default=DEFAULT_WHY)
                apply_decision(store, reject(card, why=why))
            else:
                text = click.edit(store.read_text(card_id) or "", extension=".md", require_save=True)
                if text is None:
                    click.echo("no change")
                    continue
                save_edit(store, card_id, text)
        except (ReviewError, CardFileError) as exc:
            click.echo(f"not applied: {exc}", err=True)
            continue
        except OSError as exc:
            raise click.ClickException(f"cannot write {card_id}: {exc}") from exc
        done[action] += 1
        click.echo(f"{action}: {card_id}; {reindex(settings, store, [card_id])}")
        if action != "edit":
            return action
        # After an edit the card is shown again, so it can be confirmed as it now reads.


# --- search ----------------------------------------------------------------------------------------------


@cli.command("search")
@click.argument("query")
@click.option("--k", "k", type=click.IntRange(1, 200), default=10, show_default=True, help="Hits at most.")
@click.option("--workspace", type=click.Path(), help="Only cards of this directory (or one inside it, or around it).")
@click.option("--include-superseded", is_flag=True, help="Also list cards a newer one replaced (always labelled).")
@click.option("--turns", is_flag=True, help="Search the raw session turns (sanitized) instead of the cards.")
@click.option("--all", "show_all", is_flag=True, help="Also show hits below the similarity floor (0.30), "
              "which are hidden and counted by default.")
@click.option("--json", "as_json", is_flag=True, help="Print {query, note, cards, turns, hidden_superseded, "
              "hidden_weak, floor} as JSON.")
@pass_ctx
def search_cmd(ctx, query, k, workspace, include_superseded, turns, show_all, as_json):
    """Deep search: every card that matches QUERY, with its state and sources; no gate but status.

    Cards and the sanitized turns of the ledgered logs are ranked together: a card whose source
    holds a matching turn shows that turn as its evidence, and a matching turn no card covers is
    listed on its own, within the same --k. Forgotten cards (and their turns) never appear;
    superseded ones only with --include-superseded, labelled with the card that replaced them.
    Of the --k best, hits less similar than 0.30 are hidden unless --all. Text that reads as an
    instruction (a download piped into a shell, an order nobody is known to have typed) is
    withheld with the reason. `--turns` matches the ledgered logs by their words alone (read-only).
    """
    import contextlib

    from memoir.flows.cli_recall import _spinner
    from memoir.index.errors import IndexFailure
    from memoir.index.search import (
        SEARCH_FLOOR,
        SearchUnavailable,
        render_plain,
        search_cards,
        search_embedder,
        search_turns,
    )

    ws = str(Path(workspace).absolute()) if workspace else ""
    try:
        if turns:
            result = search_turns(ctx.settings, query, k=k, workspace=ws)
        else:
            # The model loads on the first query (seconds): say so to a person watching, never in --json.
            waiting = (contextlib.nullcontext() if as_json
                       else _spinner("searching (loading the embedding model on the first query)"))
            with waiting:
                result = search_cards(ctx.settings, query, embedder=search_embedder(), k=k, workspace=ws,
                                      include_superseded=include_superseded,
                                      floor=0.0 if show_all else SEARCH_FLOOR)
    except (SearchUnavailable, IndexFailure) as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        emit_json(result.to_json())
    else:
        click.echo(render_plain(result), nl=False)
    for problem in result.problems:
        click.echo(f"note: {problem}", err=True)


# --- mcp ------------------------------------------------------------------------------------------------


@cli.command("mcp")
@pass_ctx
def mcp_cmd(ctx):
    """Serve memoir_recall, memoir_search and memoir_brief over MCP (stdio); read-only.

    For Claude Code: `claude mcp add memoir -- memoir mcp`. For Codex: `[mcp_servers.memoir]`
    with `command = "memoir"` and `args = ["mcp"]` in ~/.codex/config.toml.
    """
    try:
        from memoir.flows.mcp_server import serve
    except ImportError as exc:
        click.echo(f"memoir: the MCP SDK is missing ({exc}); `pip install mcp`", err=True)
        sys.exit(EXIT_FAILED)
    serve(ctx.settings)
