"""`memoir run`, `memoir cards list|show`, `memoir demo`."""

from __future__ import annotations

import os
import tempfile
from dataclasses import replace
from importlib.resources import files
from pathlib import Path

import click

from memoir.cards.config import Settings, load_settings
from memoir.cards.hosts import HOSTS, ReaderError
from memoir.cards.ledger import LedgerError
from memoir.cards.values import STATUSES
from memoir.cards.store import CardStore
from memoir.cards.title import display_title
from memoir.flows.cli import cli, emit_json, pass_ctx
from memoir.flows.progress import Display
from memoir.flows.pipeline import RunSummary, run_pipeline


def examples_dir() -> Path:
    """The example sessions shipped inside the package (read in place, never written)."""
    return Path(str(files("memoir.cards") / "examples"))


def _Bar(enabled: bool) -> Display:
    """The progress display of `run`, `demo` and `replay`: rich on a terminal's stderr, else silent."""
    return Display(as_json=not enabled)


def print_summary(summary: RunSummary, settings: Settings | None = None) -> None:
    """The run in a few lines, ending with where the cards are and what to do next."""
    d = summary.to_dict()
    click.echo(f"files     {d['files_seen']} seen, {d['files_read']} read ({d['bytes_read'] / 1e6:.1f} MB)")
    click.echo(f"turns     {d['turns']} in {d['sessions']} sessions → {d['experiences']} experiences")
    cards = d["cards"]
    click.echo("cards     " + (", ".join(f"{v} {k}" for k, v in cards.items()) or "none written"))
    if d["rules"]:
        click.echo("rules     " + ", ".join(f"{v} {k}" for k, v in d["rules"].items()))
    if d["skipped"]:
        click.echo("skipped   " + ", ".join(f"{v} {k}" for k, v in d["skipped"].items()))
    if d["skipped"].get("symlink_outside"):
        click.echo("          (links out of the folders named are not read; `memoir run --follow-symlinks` reads them)")
    if d["redacted"]:
        click.echo("redacted  " + ", ".join(f"{v} {k}" for k, v in d["redacted"].items()))
    for card_id in d["hand_edited"]:
        click.echo(f"kept      {card_id}: edited by hand, not overwritten")
    if d["queued"]:
        click.echo("queued    " + ", ".join(f"{v} {k}" for k, v in d["queued"].items()) + " (run `memoir replay`)")
    if d["index"]:
        click.echo("index     " + ", ".join(f"{k} {v}" for k, v in d["index"].items()))
    click.echo(f"model     {d['model']}")
    for note in d["notes"]:
        click.echo(f"note      {note}")
    click.echo(f"took      {d['elapsed_s']:.2f} s")
    if settings is not None:
        for line in next_steps(summary, settings):
            click.echo(line)


def next_steps(summary: RunSummary, settings: Settings) -> list[str]:
    """Where the cards went and what a person does next (review what waits, then recall)."""
    from memoir.cards.review import awaiting_review

    store = CardStore(settings.cards_dir, settings.state_dir)
    library, _ = store.load_all()
    held = len(awaiting_review(library))
    written = sum(summary.cards.get(k, 0) for k in ("new", "updated"))
    lines = [f"cards in  {settings.cards_dir}: {len(library)} files, {summary.cards.get('new', 0)} new, "
             f"{summary.cards.get('updated', 0)} updated this run, {held} held for review"]
    if summary.queued.get("card_write"):
        lines.append("next      fix the cause in the note above, then `memoir replay` writes the queued cards")
    elif held:
        lines.append("next      `memoir review` to confirm or reject the held cards; "
                     "`memoir recall \"<a question or an error>\"` to try recall")
    elif written or library:
        lines.append("next      `memoir recall \"<a question or an error>\"` to see which cards come back; "
                     "`memoir status` for the library")
    else:
        lines.append("next      no cards yet: point `memoir run --logs PATH` at a folder of session logs")
    return lines


def missing_paths(paths: tuple[str, ...]) -> list[str]:
    """Paths that name nothing at all (a typo), as opposed to files that exist but cannot be read."""
    return [p for p in paths if not os.path.lexists(p)]


def execute_run(settings: Settings, logs: tuple[str, ...], host: str, as_json: bool,
                with_index: bool = True, **options) -> RunSummary:
    if missing := missing_paths(logs):
        raise click.UsageError(f"no such file or folder: {', '.join(missing)} (check --logs)")
    with Display(as_json) as progress:
        try:
            return run_pipeline(settings, [Path(p) for p in logs] or None, host=host, progress=progress,
                                with_index=with_index, **options)
        except (ReaderError, LedgerError) as exc:
            raise click.ClickException(str(exc)) from exc


@cli.command("run")
@click.option("--logs", "logs", multiple=True, type=click.Path(), metavar="PATH",
              help="Log file or folder to read (repeatable). Default: the host log folders on this machine.")
@click.option("--host", type=click.Choice(("auto",) + HOSTS), default="auto", show_default=True,
              help="Log format; auto detects it per file.")
@click.option("--no-index", is_flag=True,
              help="Write cards only; leave the derived index for the next run or `memoir index rebuild`.")
@click.option("--follow-symlinks", is_flag=True,
              help="Also read log links that point outside the folders given (setting follow_symlinks).")
@click.option("--json", "as_json", is_flag=True, help="Print the run summary as JSON.")
@pass_ctx
def run_cmd(ctx, logs, host, no_index, follow_symlinks, as_json):
    """Read new log lines, cut them into experiences and write experience cards.

    Host logs are only ever read. A second run over the same logs writes nothing new.
    """
    settings = replace(ctx.settings, follow_symlinks=True) if follow_symlinks else ctx.settings
    summary = execute_run(settings, logs, host, as_json, with_index=not no_index)
    emit_json(summary.to_dict()) if as_json else print_summary(summary, settings)


@cli.group("cards")
def cards_group():
    """List and show experience cards."""


@cards_group.command("list")
@click.option("--status", type=click.Choice(STATUSES), help="Only cards with this status.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@pass_ctx
def cards_list(ctx, status, as_json):
    """One line per card: id, status, quality, last update, title."""
    from memoir.cards.forget import load_tombstones

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
                    "title": _title(c)} for c in rows])
    else:
        for c in rows:
            click.echo(f"{c.id}  {c.status:<10} {c.quality:<5} {c.updated[:10]:<10}  {_title(c)}")
        if not rows:
            click.echo("no cards" + (f" with status {status}" if status else ""))
    for problem in problems:
        click.echo(f"unreadable card file: {problem}", err=True)


def _title(card) -> str:
    return display_title(card)


@cards_group.command("show")
@click.argument("card_id")
@click.option("--chain", is_flag=True, help="Print the card's supersession chain, oldest to newest, instead of the card.")
@click.option("--raw", is_flag=True, help="Print the card file exactly as it is on disk.")
@pass_ctx
def cards_show(ctx, card_id, chain, raw):
    """Print one card for review: every field, all six sections and its supersession chain."""
    store = CardStore(ctx.settings.cards_dir, ctx.settings.state_dir)
    text = store.read_text(card_id)
    if text is None:
        from memoir.cards.forget import tombstone_path

        tomb = tombstone_path(store, card_id)
        text = tomb.read_text(encoding="utf-8") if tomb.exists() else None
    if text is None:
        raise click.ClickException(f"no card {card_id} in {ctx.settings.cards_dir}; see `memoir cards list`")
    if chain:
        from memoir.cards.distill.rules import supersession_chain
        from memoir.cards.store import CardFileError

        class _OnDisk(dict):
            """Only the linked card files are read."""

            def get(self, cid, default=None):
                if cid not in self:
                    try:
                        self[cid] = store.read(cid)
                    except (OSError, CardFileError):
                        return default
                return self[cid]

        for c in supersession_chain(card_id, _OnDisk()):
            mark = "→" if c.id == card_id else " "
            link = f"superseded by {c.superseded_by}" if c.superseded_by else "current"
            click.echo(f"{mark} {c.id}  {c.status:<10} {c.created[:10]:<10}  {link:<32}  {_title(c)}")
        return
    if raw:
        click.echo(text, nl=False)
        return
    from memoir.cards.store import CardFileError, parse_card
    from memoir.index.containers import human_review

    try:
        card = parse_card(text, origin=str(store.path_for(card_id)))
    except CardFileError as exc:
        raise click.ClickException(f"{exc}; `memoir cards show --raw {card_id}` prints the file as it is") from exc
    click.echo(human_review(card, store), nl=False)


@cli.command("demo")
@click.option("--keep", type=click.Path(file_okay=False), help="Write the demo home here instead of a temp dir.")
@click.option("--json", "as_json", is_flag=True, help="Print the run summary as JSON.")
def demo_cmd(keep, as_json):
    """Run the whole pipeline on the example sessions shipped with memoir, in a throwaway home."""
    home = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="memoir-demo-"))
    settings = load_settings(home=home)
    summary = execute_run(settings, (str(examples_dir()),), "auto", as_json)
    if as_json:
        emit_json(summary.to_dict())
        return
    click.echo(f"memoir demo: example sessions from {examples_dir()}")
    click.echo(f"home: {home}\n")
    print_summary(summary, settings)
    store = CardStore(settings.cards_dir, settings.state_dir)
    cards, _ = store.load_all()
    click.echo(f"\n{len(cards)} cards:")
    for c in sorted(cards, key=lambda c: (c.created, c.id)):
        click.echo(f"  {c.id}  {c.status:<10} {_title(c)}")
    shown = next((c for c in cards if c.status == "active" and c.error_signature), cards[0] if cards else None)
    if shown is not None:
        click.echo(f"\n--- {store.path_for(shown.id)} ---")
        click.echo(store.read_text(shown.id), nl=False)
    if not keep:
        click.echo(f"\n(try: memoir --home {home} cards list)")
