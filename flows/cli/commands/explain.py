"""`memoir explain`: each turn's observation, the rules that fired, why each experience was cut, and
why each card has its status; read-only, nothing stored."""

from __future__ import annotations

from pathlib import Path

import click

from memoir.flows.cli.app import CommandUsage, cli, emit_json, pass_ctx


def _turn_range(text: str) -> tuple[int, int] | None:
    if not text:
        return None
    lo, _, hi = text.partition("-")
    try:
        return int(lo or 0), int(hi) if hi else int(lo)
    except ValueError:
        raise CommandUsage(f"--turns takes a range like 120-180, not {text!r}") from None


@cli.command("explain")
@click.argument("log")
@click.option("--turns", "turn_range", default="", help="Only turns (and cards that overlap) in this range, e.g. 120-180.")
@click.option("--cards-only", is_flag=True, help="Only the experiences and cards, not every turn.")
@click.option("--host", default="auto", show_default=True, help="Log format; auto detects it per file.")
@click.option("--json", "as_json", is_flag=True, help="Print {sessions: [{turns, cards, skipped, rule_hits}], skipped} as JSON.")
@pass_ctx
def explain_cmd(ctx, log, turn_range, cards_only, host, as_json):
    """Why LOG (a log file or folder, or a session id found under the hosts' log folders) became the
    cards it did: each turn as the rules read it (look, change, check with its verdict, the user's
    problem report, confirmation or rejection), where each experience was cut and why, each card's
    kind (fix, confirmed answer, decision, work report, unproven) and proof, and the gate that
    decided its status. Reads the log as `memoir run` would and stores nothing.
    """
    from memoir.flows.explain import explain, find_session_file, render  # deferred: start-up (the readers, the sanitizer)

    path = Path(log).expanduser()
    if not path.exists():
        found = find_session_file(log, Path.home())
        if found is None:
            raise CommandUsage(f"{log!r} is neither a log file or folder nor a session id found under the hosts' log folders")
        path = found
    sessions, skipped = explain(path, ctx.settings, host=host, turns=_turn_range(turn_range))
    if as_json:
        emit_json({"log": str(path), "sessions": [s.to_json() for s in sessions], "skipped": dict(skipped)})
    else:
        click.echo(render(sessions, skipped, show_turns=not cards_only), nl=False)
