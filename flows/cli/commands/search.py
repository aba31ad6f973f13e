"""`memoir search`: deep search over every card and the sanitized turns, with no gate but status."""

from __future__ import annotations

import contextlib
from pathlib import Path

import click

from memoir.flows.cli.app import cli, emit_json, pass_ctx
from memoir.flows.progress import spinner


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
    from memoir.index.search import (  # deferred: start-up (apsw, numpy)
        SEARCH_FLOOR,
        search_cards,
        search_embedder,
        search_turns,
    )
    from memoir.index.search_results import render_plain  # deferred: start-up (apsw, numpy)
    from memoir.flows.recall_service import ServiceEmbedder  # deferred: start-up (the service's client)

    ws = str(Path(workspace).absolute()) if workspace else ""
    if turns:
        result = search_turns(ctx.settings, query, k=k, workspace=ws)
    else:
        # The model loads on the first query (seconds): say so to a person watching, never in --json.
        waiting = (contextlib.nullcontext() if as_json
                   else spinner("searching (loading the embedding model on the first query)"))
        with waiting:
            embedder = ServiceEmbedder(ctx.settings.state_dir, search_embedder())  # the warm service's model if it runs
            result = search_cards(ctx.settings, query, embedder=embedder, k=k, workspace=ws,
                                  include_superseded=include_superseded, floor=0.0 if show_all else SEARCH_FLOOR)
    if as_json:
        emit_json(result.to_json())
    else:
        click.echo(render_plain(result), nl=False)
    for problem in result.problems:
        click.echo(f"note: {problem}", err=True)
