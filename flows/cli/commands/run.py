"""`memoir run` and `memoir demo`: read session logs, write experience cards."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import replace
from importlib.resources import files
from pathlib import Path

import click

from memoir.cards.config import load_settings
from memoir.cards.title import display_title
from memoir.flows.cli.app import EXIT_INCIDENT, cli, emit_json, exit_with, pass_ctx
from memoir.flows.cli.runs import RUNNER_HELP, execute_run, print_summary, run_flow


class HostChoice(click.Choice):
    """`auto` or a host reader's name; the readers are imported only when the option is parsed or shown."""

    def __init__(self) -> None:
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        from memoir.cards.hosts import HOSTS  # deferred: start-up (every host reader)

        return ("auto",) + HOSTS

    @choices.setter
    def choices(self, value) -> None:
        """click.Choice.__init__ assigns the choices; the property above answers instead."""


def examples_dir() -> Path:
    """The example sessions shipped inside the package (read in place, never written)."""
    return Path(str(files("memoir.cards") / "examples"))


@cli.command("run")
@click.option("--logs", "logs", multiple=True, type=click.Path(), metavar="PATH",
              help="Log file or folder to read (repeatable). Default: the host log folders on this machine.")
@click.option("--host", type=HostChoice(), default="auto", show_default=True,
              help="Log format; auto detects it per file.")
@click.option("--no-index", is_flag=True,
              help="Write cards only; leave the derived index for the next run or `memoir index rebuild`.")
@click.option("--follow-symlinks", is_flag=True,
              help="Also read log links that point outside the folders given (setting follow_symlinks).")
@click.option("--json", "as_json", is_flag=True, help="Print the run summary as JSON.")
@click.option("--wait", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help="If another run holds this home, wait up to SECONDS for it (default: "
                   "run_lock_timeout_s, 0), then exit with code 3.")
@click.option("--flow", is_flag=True,
              help="Run the same work as the Prefect `nightly` flow (ephemeral API under "
                   "<home>/prefect, or the server at PREFECT_API_URL); slower to start.")
@click.option("--runner", default=None, metavar="RUNNER",
              help="With --flow (implied): where collection per file and the model per batch run. " + RUNNER_HELP)
@pass_ctx
def run_cmd(ctx, logs, host, no_index, follow_symlinks, as_json, wait, flow, runner):
    """Read new log lines, cut them into experiences and write experience cards.

    Host logs are only ever read. A second run over the same logs writes nothing new. A corrupt
    index is moved aside and rebuilt from the card files; card files of an older schema are
    upgraded in place.

    \b
    Exit codes:
      0  done (notes in the summary say what was healed or queued)
      1  failed; the message says why
      3  busy: another run holds this home (see --wait)
      8  done, but the model stage raised an incident (model_alive_no_output, endpoints_unavailable,
         ...): the cards are safe, the summary names the incident and its runbook, and
         `alert_command` ran once for each new one
      9  the card library was written by a newer memoir (card schema); upgrade memoir first
     11  --flow / --runner: Prefect's API did not answer in time; nothing was read or written,
         and `memoir run` without them does the same work without Prefect
    Runbook: runbooks/nightly-run-failed.md
    """
    settings = ctx.settings
    wait = settings.run_lock_timeout_s if wait is None else wait
    if flow or runner:
        summary = run_flow("nightly", settings, runner or "thread", logs=logs, host=host, with_index=not no_index,
                           lock_wait_s=wait)
        emit_json(summary.to_dict()) if as_json else print_summary(summary)
    else:
        settings = replace(settings, follow_symlinks=True) if follow_symlinks else settings
        summary = execute_run(settings, logs, host, as_json, ctx.env, with_index=not no_index, lock_wait_s=wait)
        emit_json(summary.to_dict()) if as_json else print_summary(summary, settings)
    if summary.alerts:
        exit_with(EXIT_INCIDENT)


def memoir_command() -> str:
    """How to call this memoir again from here: its path when `memoir` is not on the PATH (a venv not activated)."""
    mine = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    on_path = shutil.which("memoir")
    if mine is None or (on_path and Path(on_path).resolve() == mine) or mine.name != "memoir":
        return "memoir"
    try:
        return os.path.relpath(mine)
    except ValueError:
        return str(mine)


@cli.command("demo")
@click.option("--keep", type=click.Path(file_okay=False), help="Write the demo home here instead of a temp dir.")
@click.option("--json", "as_json", is_flag=True, help="Print the run summary as JSON.")
@pass_ctx
def demo_cmd(ctx, keep, as_json):
    """Run the whole pipeline on the example sessions shipped with memoir, in a throwaway home."""
    from memoir.cards.store import CardStore  # deferred: start-up (yaml, jinja2)

    home = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="memoir-demo-"))
    settings = load_settings(home=home, env=ctx.env)
    summary = execute_run(settings, (str(examples_dir()),), "auto", as_json, ctx.env)
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
        click.echo(f"  {c.id}  {c.status:<10} {display_title(c)}")
    shown = next((c for c in cards if c.status == "active" and c.error_signature), cards[0] if cards else None)
    if shown is not None:
        click.echo(f"\n--- {store.path_for(shown.id)} ---")
        click.echo(store.read_text(shown.id), nl=False)
    if not keep:
        click.echo(f"\n(try: {memoir_command()} --home {home} cards list)")
