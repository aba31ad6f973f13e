"""`memoir review`: the cards the gates held back, one at a time; the user stays in control.

Card files change first, the index follows at once (or the id is queued for `memoir replay`).
"""

from __future__ import annotations

import textwrap

import click

from memoir.flows.cli.app import CommandError, cli, emit_json, pass_ctx
from memoir.flows.cli.card_index import reindex
from memoir.flows.errors import FlowError

ACTIONS = {"c": "confirm", "r": "reject", "e": "edit", "s": "skip", "q": "quit"}
WHY_PROMPT = ("Why reject it? The reason is kept in the card file (`why:`) so whoever opens it later sees why "
              "it never comes back; the card stays out of review and recall either way.")


class _Stopped(FlowError):
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
@click.option("--workspace", default="", metavar="DIR|PROJECT",
              help="Only cards of this folder's project (a linked worktree, a moved folder or a second clone "
                   "counts as its project), of a project id or name, or of folders of this name.")
@click.option("--gate", default="", help="Only cards held by this gate (e.g. verified_conclusion; see `memoir review --json`).")
@click.option("--topic", default="", help="Only cards with this topic.")
@click.option("--confirm-all", is_flag=True, help="Confirm every card the filters select, after one question.")
@click.option("--reject-all", is_flag=True, help="Reject every card the filters select, after one question.")
@click.option("--why", default="", help="With --reject-all: the reason kept in each card file.")
@click.option("--yes", "-y", is_flag=True, help="With --confirm-all/--reject-all: do not ask.")
@pass_ctx
def review_cmd(ctx, card, as_json, workspace, gate, topic, confirm_all, reject_all, why, yes):
    """Walk the cards the gates held back, one at a time: confirm, reject, edit in $EDITOR, skip or quit.

    With CARD (an id, a unique start of one, or the card's file) only that card is shown, whatever
    its status: a rejected card can be confirmed after all, an active one rejected. Under each
    card the gate that held it back says what it means and what would clear it.

    Confirm makes a card active with `confirmed_by: user`; reject keeps it as a candidate with
    `gate: rejected_by_user` and your reason as `why:`, out of recall and out of review; edit
    writes your text as a hand edit that no later run overwrites. The file changes first, then
    the index. Ctrl-D at a prompt ends the review; what was decided stays decided.

    --workspace, --gate and --topic narrow what is reviewed; with --confirm-all or --reject-all the
    selected cards are decided together after one question (a card whose text is shaped like an
    instruction to the agent, or too short to confirm, is left for one-by-one review).
    """
    from memoir.cards.review import (  # deferred: start-up (the sanitizer)
        Pending,
        ReviewFilter,
        awaiting_review,
        find_card,
        reviewable_alone,
    )

    if confirm_all and reject_all:
        raise click.UsageError("choose one of --confirm-all and --reject-all")
    if (confirm_all or reject_all) and card:
        raise click.UsageError("--confirm-all/--reject-all decide what the filters select; drop CARD")
    from memoir.cards.store import CardStore  # deferred: start-up (yaml, jinja2)

    store = CardStore(ctx.settings.cards_dir, ctx.settings.state_dir)
    if card:
        try:
            card_id = find_card(card, store.ids(), store.cards_dir)
            queue = [store.read(card_id)]
            reviewable_alone(queue[0])
        except OSError as exc:
            raise CommandError(f"cannot read {card}: {exc}") from exc
    else:
        cards, problems = store.load_all()
        if gate:
            _known_gate(gate, {c.gate for c in cards})
        chosen = ReviewFilter(workspace=workspace, gate=gate, topic=topic, place=_place(ctx.settings, workspace, cards))
        queue = [c for c in awaiting_review(cards) if chosen.matches(c)]
        for problem in problems:
            click.echo(f"unreadable card file: {problem}", err=True)
    if confirm_all or reject_all:
        _decide_all(ctx.settings, store, queue, "confirm" if confirm_all else "reject", why, yes, as_json)
        return
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


def _known_gate(gate: str, held: set[str]) -> None:
    """An unknown --gate is a mistake to say, not a filter that silently matches nothing: a gate is
    known when memoir names it (`GATE_HELP`) or a card of this library holds it (an older memoir's)."""
    import difflib  # deferred: start-up (only with --gate)

    from memoir.cards.gate_help import GATE_HELP  # deferred: start-up

    known = sorted(set(GATE_HELP) | {g for g in held if g})
    if gate not in known:
        near = difflib.get_close_matches(gate, known, n=3, cutoff=0.5)
        hint = f"; did you mean {' or '.join(near)}?" if near else f"; the gates are {', '.join(known)}"
        raise click.BadParameter(f"no gate is called {gate!r}{hint}", param_hint="--gate")


def _place(settings, workspace: str, cards: list):
    """--workspace as its project's cards (cards/project_registry.py `workspace_selector`); None without it."""
    from memoir.cards.project_registry import ProjectRegistry, workspace_selector  # deferred: start-up (yaml, jinja2)

    return workspace_selector(ProjectRegistry(settings.state_dir), workspace, cards) if workspace else None


PREVIEW = 10  # cards a bulk decision lists before its one question


def _decide_all(settings, store, queue, action: str, why: str, yes: bool, as_json: bool) -> None:
    """One question, then every selected card decided; the index follows for all of them at once."""
    from memoir.cards.review import decide_all  # deferred: start-up (the sanitizer)

    if not queue:
        emit_json({"action": action, "selected": 0, "changed": [], "left": {}}) if as_json else click.echo(
            "no held card matches; nothing to do")
        return
    if not yes:
        # What is about to be decided, before the one question: id, gate and title of each (the first PREVIEW).
        for card in queue[:PREVIEW]:
            click.echo(f"  {card.id}  {card.gate or card.status:<24}  {card.title[:70]}", err=True)
        if len(queue) > PREVIEW:
            click.echo(f"  … and {len(queue) - PREVIEW} more (`memoir review --json` lists them all)", err=True)
        click.confirm(f"{action} {len(queue)} held card{'s' if len(queue) != 1 else ''}?", abort=True, err=True)
    report = decide_all(store, queue, action, why=why, min_conclusion_chars=settings.min_conclusion_chars)
    index_note = reindex(settings, store, report.changed) if report.changed else "index unchanged"
    if as_json:
        emit_json({"action": action, "selected": len(queue), "changed": report.changed, "left": report.left,
                   "index": index_note})
        return
    past = "confirmed" if action == "confirm" else "rejected"
    click.echo(f"{past} {len(report.changed)} of {len(queue)}; {index_note}")
    for card_id, reason in report.left.items():
        click.echo(f"left for review: {card_id}: {reason}")


def _gate_text(card, settings) -> str:
    """The held gate, what it finds now and what clears it, wrapped for a terminal."""
    from memoir.cards.review import gate_note  # deferred: start-up (the sanitizer)

    note = gate_note(card, settings.min_conclusion_chars)
    if note is None:
        return ""
    lines = [f"held back by {note.gate}" + (f": {note.reason}" if note.reason and not note.met_now else "")]
    lines += textwrap.wrap(note.help, 96, initial_indent="  ", subsequent_indent="  ")
    if note.met_now:
        lines.append("  The card as it reads now meets this gate: confirm it to clear the hold.")
    return "\n".join(lines)


def _review_one(settings, store, card_id: str, i: int, n: int, done: dict) -> str:
    """Show one card until the person decides; returns the action that ended it.

    Raises:
        _Stopped: input ended at a prompt; the card is left as it was.
    """
    from memoir.cards.review import (  # deferred: start-up (the sanitizer)
        DEFAULT_WHY,
        ReviewError,
        apply_decision,
        confirm,
        instruction_warning,
        reject,
        save_edit,
    )
    from memoir.cards.store import CardFileError  # deferred: start-up (yaml, jinja2)
    from memoir.index.containers import human_review  # deferred: start-up (jinja2)

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
        warning = instruction_warning(card)
        if warning:  # before the prompt: the person sees it before anything can be confirmed
            click.echo(click.style("\n".join(textwrap.wrap(warning, 96)), fg="red", bold=True) + "\n")
        key = _ask(f"[{i}/{n}] (c)onfirm (r)eject (e)dit (s)kip (q)uit", type=click.Choice(list(ACTIONS)),
                   show_choices=False)
        action = ACTIONS[key]
        if action in ("skip", "quit"):
            done["skip"] += action == "skip"
            return action
        try:
            if action == "confirm":
                apply_decision(store, confirm(card, min_conclusion_chars=settings.min_conclusion_chars))
            elif action == "reject":
                click.echo(WHY_PROMPT)
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
            raise CommandError(f"cannot write {card_id}: {exc}") from exc
        done[action] += 1
        click.echo(f"{action}: {card_id}; {reindex(settings, store, [card_id])}")
        if action != "edit":
            return action
        # After an edit the card is shown again, so it can be confirmed as it now reads.
