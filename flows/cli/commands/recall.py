"""`memoir recall|brief|serve-recall|mcp`: cards for a question, a workspace's brief, the warm services."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from memoir.cards.private import private_umask
from memoir.flows import recall_service
from memoir.flows.cli.app import CommandError, cli, emit_json, pass_ctx
from memoir.flows.hook_slow_path import request_settings
from memoir.flows.progress import spinner

CLI_BUDGET_MS = 600_000  # a person at the CLI waits for the answer; the 300 ms budget is the hook's


def leave_promptly() -> None:
    """If a recall worker outlived its deadline (a cold model load), exit now without joining it."""
    from memoir.index.recall import wait_for_workers  # deferred: start-up (the recall engine)

    if not wait_for_workers(0.0):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _num(x, fmt: str = ".3f") -> str:
    return "-" if x is None else format(x, fmt)


def explain(record: dict) -> str:
    """The debug record of one recall, for a person tuning the gates."""
    lines = [
        f"query      {json.dumps(record.get('query', ''), ensure_ascii=False)}",
        f"rewritten  {json.dumps(record.get('rewritten', ''), ensure_ascii=False)}",
        f"mode       {record.get('mode', '?')}, task type {record.get('task_type') or '-'}, "
        f"workspace {record.get('workspace') or '-'}",
        f"outcome    {record.get('outcome', '?')}"
        + (f": {', '.join(record['injected'])}" if record.get("injected") else "")
        + (f" ({record['reason']})" if record.get("reason") else ""),
    ]
    timings = record.get("timings_ms", {})
    lines.append("timings    " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items())
                 + f"; total {record.get('elapsed_ms', 0):.1f} ms of {record.get('budget_ms', 0):.0f} ms")
    policy = record.get("policy", {})
    if policy:
        lines.append("policy     " + ", ".join(f"{k} {v}" for k, v in policy.items()))
    cands = record.get("candidates", [])
    lines.append(f"candidates {len(cands)} (best fused rank first):" if cands else "candidates none")
    for c in cands:
        more = [g for g in c.get("failed", []) if g != c.get("gate")]
        verdict = c.get("gate", "?") + (f" (also {', '.join(more)})" if more else "")
        if c.get("detail"):
            verdict += f" [{c['detail']}]"
        lines.append(f"  {c['id']}  sim {_num(c.get('similarity'))}  knn {c.get('knn_rank') or '-':>2}  "
                     f"fts {c.get('fts_rank') or '-':>2}  age {_num(c.get('age_days'), '.0f'):>4} d  "
                     f"{c.get('status', '?'):<10} {verdict}")
    return "\n".join(lines)


def recall_for_a_person(settings, query: str, workspace: str, session: str, timeout_ms: int | None):
    """Through the warm service when it answers, else in this process; a person waits for the answer.

    The hook's budget is the hook's: at the CLI the deadline is `--timeout-ms` when given, else
    CLI_BUDGET_MS, and a spinner shows while the model loads.
    """
    from memoir.index.embed import default_embedder  # deferred: start-up (numpy)
    from memoir.index.recall import Recaller, RecallResult  # deferred: start-up (the recall engine)

    budget = float(CLI_BUDGET_MS if timeout_ms is None else timeout_ms)
    answer = recall_service.ask(settings.state_dir, {"op": "recall", "query": query, "workspace": workspace,
                                      "session_id": session, "budget_ms": budget,
                                      "settings": request_settings(settings)}, budget / 1000 + 1.0)
    if answer is not None and "result" in answer:
        return RecallResult.from_json(answer["result"], answer.get("record") or {})
    with Recaller(settings, default_embedder()) as recaller, spinner("recalling (loading the embedding model; "
                                                                    "`memoir serve-recall` keeps it warm)"):
        return recaller.recall(query, workspace=workspace, session_id=session, budget_ms=budget)


@cli.command("recall")
@click.argument("query")
@click.option("--workspace", type=click.Path(), help="Directory the question comes from (default: none, "
              "so the workspace gate is off).")
@click.option("--session", "session", default="", help="Host session id: cards already injected there are skipped.")
@click.option("--json", "as_json", is_flag=True,
              help="Print {query, cards, rejected, elapsed_ms} as JSON.")
@click.option("--explain", "explain_", is_flag=True, help="Also print the debug record: every candidate and the gate "
              "that rejected it.")
@click.option("--timeout-ms", type=click.IntRange(1, 600_000), default=None,
              help="Deadline for this recall (default: none to speak of; the sync_timeout_ms budget is the "
                   "hook's). Without a running `memoir serve-recall` the model loads first and counts against it.")
@pass_ctx
def recall_cmd(ctx, query, workspace, session, as_json, explain_, timeout_ms):
    """At most two experience cards for QUERY, as the agent would get them.

    Nothing that fails a gate is shown; nothing at all is a normal answer. Every recall is logged
    to state/recall.jsonl with the sanitized query and each candidate's gate.
    """
    from memoir.index.containers import immediate_context  # deferred: start-up (jinja2)

    workspace = str(Path(workspace).absolute()) if workspace else ""
    with private_umask():  # the recall log and the session's file, whoever writes them
        result = recall_for_a_person(ctx.settings, query, workspace, session, timeout_ms)
    if as_json:
        emit_json(result.to_json())
    elif result.cards:
        click.echo(immediate_context(result.cards), nl=False)
    else:
        click.echo(f"nothing to inject ({result.outcome}: {result.reason or 'no card passed the gates'})", err=True)
    if explain_:
        click.echo(explain(result.record), err=as_json)
    leave_promptly()


@cli.command("brief")
@click.option("--workspace", type=click.Path(file_okay=False), default=".", show_default=True,
              help="The workspace to brief on.")
@pass_ctx
def brief_cmd(ctx, workspace):
    """Recent topics and open follow-ups for a workspace (what SessionStart injects)."""
    from memoir.index.containers import session_brief  # deferred: start-up (jinja2)
    from memoir.index.recall import Recaller, brief_cards  # deferred: start-up (the recall engine)

    ws = str(Path(workspace).absolute())
    with Recaller(ctx.settings, embedder=None) as recaller:
        text = session_brief(ws, brief_cards(recaller, ws))
    if text:
        click.echo(text, nl=False)
    else:
        click.echo(f"no cards for {ws}", err=True)


@cli.command("serve-recall")
@click.option("--idle-exit-s", type=float, default=None, help="Stop after this many seconds without a request.")
@click.option("--lock-fd", type=int, default=None, hidden=True,
              help="The service lock, already taken by the hook that starts this service.")
@pass_ctx
def serve_recall_cmd(ctx, idle_exit_s, lock_fd):
    """Keep the embedding model warm and answer recall hooks on a unix socket in the state dir.

    Requests are answered concurrently, each with its caller's settings. Without it, a prompt hook
    answers nothing and starts one in the background (`--idle-exit-s` then stops it after hours
    without prompts). Runs in the foreground; stop it with Ctrl-C or SIGTERM.
    """
    from memoir.index.embed import Embedder  # deferred: start-up (numpy)

    def ready(path):
        click.echo(f"memoir recall service ready on {path} (pid {os.getpid()})", err=True)

    served = recall_service.serve(ctx.settings, Embedder(threads=recall_service.SERVICE_THREADS, query_backend="onnx"),
                                  idle_exit_s=idle_exit_s, on_ready=ready, lock_fd=lock_fd,
                                  allow_shared_home=ctx.allow_shared_home)
    click.echo(f"memoir recall service stopped after {served} requests ({recall_service.socket_path(ctx.settings.state_dir)})",
               err=True)


@cli.command("mcp")
@pass_ctx
def mcp_cmd(ctx):
    """Serve memoir_recall, memoir_search and memoir_brief over MCP (stdio); read-only.

    For Claude Code: `claude mcp add memoir -- memoir mcp`. For Codex: `[mcp_servers.memoir]`
    with `command = "memoir"` and `args = ["mcp"]` in ~/.codex/config.toml.
    """
    try:
        from memoir.flows.mcp_server import serve  # deferred: start-up (mcp)
    except ImportError as exc:
        raise CommandError(f"the MCP SDK is missing ({exc}); `pip install mcp`") from exc
    with private_umask():  # it writes only under the home (the recall log, session files)
        serve(ctx.settings)
