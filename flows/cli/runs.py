"""How `run`, `demo`, `replay` and `flow run` start their work and print what it did.

The work itself takes the home's run lock (run_pipeline, replay_queue and the Prefect flows each
hold it for their whole body); the CLI only passes how long to wait for it.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from memoir.cards.config import Settings, environment
from memoir.cards.private import private_umask
from memoir.flows.lock import LOCK_FILE, held_by_a_live_process, run_lock
from memoir.flows.home_layout import check_home_layout
from memoir.flows.prefect_env import configure_prefect, hand_over, prefect_unavailable
from memoir.flows.progress import Display

RUNNER_HELP = "Task runner: thread (default), dask (a local Dask cluster) or dask:ADDRESS (a running scheduler)."


def missing_paths(paths: tuple[str, ...]) -> list[str]:
    """Paths that name nothing at all (a typo), as opposed to files that exist but cannot be read."""
    return [p for p in paths if not os.path.lexists(p)]


def execute_run(settings: Settings, logs: tuple[str, ...], host: str, as_json: bool, env: dict[str, str],
                with_index: bool = True, lock_wait_s: float | None = None, reread: bool = False):
    """One direct run (no Prefect) with its progress drawn on stderr; returns the pipeline's RunReport."""
    from memoir.flows.pipeline import run_pipeline  # deferred: start-up (the whole run)

    if missing := missing_paths(logs):
        raise click.UsageError(f"no such file or folder: {', '.join(missing)} (check --logs)")
    with Display(as_json, env=env) as progress:
        return run_pipeline(settings, [Path(p) for p in logs] or None, host=host, progress=progress,
                            lock_wait_s=lock_wait_s, with_index=with_index, reread=reread)


def run_flow(name: str, settings: Settings, runner: str = "thread", logs: tuple[str, ...] | None = None,
             lock_wait_s: float = 0.0, **params):
    """Run one of the Prefect flows in this process (ephemeral API unless PREFECT_API_URL is set).

    The flow takes the run lock itself. Without a wait, a home another run holds is refused here,
    before Prefect starts (seconds) and logs the refusal as a failed flow run. `logs` are handed
    over as a token (memoir.flows.prefect_env.hand_over): Prefect stores flow parameters, and a
    path may name a person or a private address.
    """
    if lock_wait_s == 0 and held_by_a_live_process(Path(settings.state_dir) / LOCK_FILE):
        with run_lock(settings.state_dir, 0, what=f"{name} flow"):  # raises RunBusy, naming the holder
            pass
    # Before Prefect starts: it would log the refusal as a failed flow run, traceback and all.
    check_home_layout(settings.home, with_prefect=True)
    with private_umask():  # Prefect's own files under the home (its database, logs) are private too
        prefect_env = configure_prefect(settings.home)
        from memoir.flows import nightly  # deferred: start-up (prefect, once its settings are chosen)

        if logs is not None:
            params["logs"] = hand_over(list(logs))
        flow = nightly.FLOWS[name].with_options(task_runner=nightly.task_runner(runner, settings))
        try:
            return flow(home=str(settings.home), lock_wait_s=lock_wait_s, **params)
        except (RuntimeError, TimeoutError) as exc:
            failure = prefect_unavailable(exc, {**prefect_env, **environment("PREFECT_API_URL")})
            if failure is None:
                raise
            raise failure from exc


def print_summary(summary, settings: Settings | None = None) -> None:
    """The run in a few lines (a pipeline RunReport), ending with where the cards are and what to do next."""
    d = summary.to_dict()
    click.echo(f"files     {d['files_seen']} seen, {d['files_read']} read ({d['bytes_read'] / 1e6:.1f} MB)")
    if d["hosts"]:
        click.echo("hosts     " + ", ".join(f"{v} {k}" for k, v in d["hosts"].items()))
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
    for line in d["alerts"]:
        click.echo(f"incident  {line}")
    for note in d["notes"]:
        click.echo(f"note      {note}")
    click.echo(f"took      {d['elapsed_s']:.2f} s")
    if settings is not None:
        for line in next_steps(summary, settings):
            click.echo(line)


def next_steps(summary, settings: Settings) -> list[str]:
    """Where the cards went and what a person does next (review what waits, then recall)."""
    from memoir.cards.review import awaiting_review  # deferred: start-up (the sanitizer)
    from memoir.cards.store import CardStore  # deferred: start-up (yaml, jinja2)

    store = CardStore(settings.cards_dir, settings.state_dir)
    library, _ = store.load_all()
    held = len(awaiting_review(library))
    written = sum(summary.cards.get(k, 0) for k in ("new", "updated"))
    lines = [f"cards in  {settings.cards_dir}: {len(library)} files, {summary.cards.get('new', 0)} new, "
             f"{summary.cards.get('updated', 0)} updated this run, {held} held for review"
             + (f", {summary.cards['retired']} retired (their logs changed)" if summary.cards.get("retired") else "")]
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


def print_replay(report) -> None:
    """A replay in a few lines (a ReplayReport)."""
    d = report.to_dict()
    click.echo(f"applied   {d['applied']}" + (f" ({', '.join(f'{v} {k}' for k, v in d['actions'].items())})" if d["actions"] else ""))
    click.echo(f"failed    {d['failed']} (back in the queue with their error; fix the cause, then replay again)")
    click.echo(f"left      {d['left']} pending")
    if d["reclaimed"]:
        click.echo(f"reclaimed {d['reclaimed']} items from a dead worker")
    for err in d["errors"]:
        click.echo(f"error     {err}")
    if d["index"]:
        click.echo("index     " + ", ".join(f"{k} {v}" for k, v in d["index"].items() if v != ""))
    for line in d["alerts"]:
        click.echo(f"incident  {line}")
    for note in d["notes"]:
        click.echo(f"note      {note}")
    click.echo(f"took      {d['elapsed_s']:.2f} s")


def print_backlog(report) -> None:
    """`replay --redistill` / `--relog --dry-run` in a few lines (a RedistillReport)."""
    d = report.to_dict()
    verb = "would take" if d["dry_run"] else "took"
    click.echo(f"cards     {verb} {d['cards']}" + (f"; model {d['model']}" if d["model"] else ""))
    click.echo(f"model     {d['model_calls']} calls" + (" would be made" if d["dry_run"] else " made"))
    if d["written"]:
        click.echo("written   " + ", ".join(f"{v} {k}" for k, v in d["written"].items()))
    if d["skipped"]:
        click.echo("left      " + ", ".join(f"{v} {k}" for k, v in d["skipped"].items()))
    if d["index"]:
        click.echo("index     " + ", ".join(f"{k} {v}" for k, v in d["index"].items() if v != ""))
    for line in d["alerts"]:
        click.echo(f"incident  {line}")
    for note in d["notes"]:
        click.echo(f"note      {note}")
    click.echo(f"took      {d['elapsed_s']:.2f} s")
