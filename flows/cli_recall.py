"""`memoir recall|brief|export|serve-recall` and `memoir hook claude-code|install claude-code`."""

from __future__ import annotations

import difflib
import json
import os
import shlex
import sys
from pathlib import Path

import click

from memoir.flows.cli import EXIT_FAILED, EXIT_USAGE, cli, emit_json, pass_ctx

# Commands memoir has installed over time: any of them in a settings file is memoir's entry.
HOOK_IMPORT = "from hook_client import main"
HOOK_MARKERS = (HOOK_IMPORT, "from memoir_hook import main", "memoir_hook.py claude-code", "memoir-hook claude-code", "flows.recall_service claude-code",
                "memoir hook claude-code")
HOOK_TIMEOUT_S = 5  # Claude Code's own limit for the prompt hook; ours ends it at the recall budget
SESSION_START_TIMEOUT_S = 10  # the brief may take seconds (hook_client.SESSION_START_BUDGET_MS)
CLI_BUDGET_MS = 600_000  # a person at the CLI waits for the answer; the 300 ms budget is the hook's
SESSION_START_MATCHER = "startup|resume|clear|compact"


def _leave(code: int = 0) -> None:
    """Exit; if a recall worker outlived its deadline (a cold model load), leave without joining it."""
    from memoir.index.recall import wait_for_workers

    if not wait_for_workers(0.0):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    if code:
        sys.exit(code)


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


def _recall(settings, query: str, workspace: str, session: str, timeout_ms: int | None):
    """Through the warm service when it answers, else in this process; a person waits for the answer.

    The hook's budget is the hook's: at the CLI the deadline is `--timeout-ms` when given, else
    CLI_BUDGET_MS, and a spinner shows while the model loads.
    """
    from memoir.flows.hook_client import request_settings
    from memoir.flows.recall_service import ask
    from memoir.index.recall import Recaller, RecallResult

    budget = float(CLI_BUDGET_MS if timeout_ms is None else timeout_ms)
    answer = ask(settings.state_dir, {"op": "recall", "query": query, "workspace": workspace,
                                      "session_id": session, "budget_ms": budget,
                                      "settings": request_settings(settings)}, budget / 1000 + 1.0)
    if answer is not None and "result" in answer:
        return RecallResult.from_json(answer["result"], answer.get("record") or {})
    from memoir.index.embed import default_embedder

    with Recaller(settings, default_embedder()) as recaller, _spinner("recalling (loading the embedding model; "
                                                                     "`memoir serve-recall` keeps it warm)"):
        return recaller.recall(query, workspace=workspace, session_id=session, budget_ms=budget)


def _spinner(text: str):
    """A spinner on stderr when a person watches it; nothing when stderr is a pipe or a file."""
    import contextlib

    if not sys.stderr.isatty():
        return contextlib.nullcontext()
    from rich.console import Console

    return Console(stderr=True).status(text)


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
    from memoir.index.containers import immediate_context

    workspace = str(Path(workspace).absolute()) if workspace else ""
    result = _recall(ctx.settings, query, workspace, session, timeout_ms)
    if as_json:
        emit_json(result.to_json())
    elif result.cards:
        click.echo(immediate_context(result.cards), nl=False)
    else:
        click.echo(f"nothing to inject ({result.outcome}: {result.reason or 'no card passed the gates'})", err=True)
    if explain_:
        click.echo(explain(result.record), err=as_json)
    _leave(0)


@cli.command("brief")
@click.option("--workspace", type=click.Path(file_okay=False), default=".", show_default=True,
              help="The workspace to brief on.")
@pass_ctx
def brief_cmd(ctx, workspace):
    """Recent topics and open follow-ups for a workspace (what SessionStart injects)."""
    from memoir.index.containers import session_brief
    from memoir.index.recall import Recaller, brief_cards

    ws = str(Path(workspace).absolute())
    with Recaller(ctx.settings, embedder=None) as recaller:
        text = session_brief(ws, brief_cards(recaller, ws))
    if text:
        click.echo(text, nl=False)
    else:
        click.echo(f"no cards for {ws}", err=True)


EXPORT_STATUSES = ("active", "candidate", "incomplete", "superseded")  # forgotten tombstones stay home


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
    from memoir.cards.store import CardStore
    from memoir.index.containers import export_cards

    store = CardStore(ctx.settings.cards_dir, ctx.settings.state_dir)
    try:
        path, n = export_cards(store, Path(dest), statuses)
    except OSError as exc:
        raise click.ClickException(f"cannot write {dest}: {exc}") from exc
    which = "all statuses" if statuses == EXPORT_STATUSES else ", ".join(statuses)
    click.echo(f"exported {n} card{'s' if n != 1 else ''} ({which}) to {path}")
    if n == 0 and statuses != EXPORT_STATUSES:
        click.echo(f"no {which} cards; `memoir export --status all {dest}` takes every card", err=True)


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
    from memoir.flows.recall_service import SERVICE_THREADS, ServiceError, serve, socket_path
    from memoir.index.embed import Embedder
    from memoir.index.errors import IndexFailure

    def ready(path):
        click.echo(f"memoir recall service ready on {path} (pid {os.getpid()})", err=True)

    try:
        served = serve(ctx.settings, Embedder(threads=SERVICE_THREADS), idle_exit_s=idle_exit_s, on_ready=ready,
                       lock_fd=lock_fd)
    except (ServiceError, IndexFailure) as exc:
        click.echo(f"memoir: {exc}", err=True)
        sys.exit(EXIT_FAILED)
    click.echo(f"memoir recall service stopped after {served} requests ({socket_path(ctx.settings.state_dir)})",
               err=True)


@cli.group("hook")
def hook_group():
    """Host hooks: inject recalled cards into an agent's context."""


@hook_group.command("claude-code")
@pass_ctx
def hook_claude_code(ctx):
    """Claude Code hook: reads the event JSON on stdin, prints additionalContext or nothing.

    UserPromptSubmit recalls cards for the prompt; SessionStart prints the workspace brief. Always
    exits 0: an error means no context, never a blocked prompt.
    """
    from memoir.flows.hook_client import hook_main

    hook_main("claude-code", settings=ctx.settings)


@hook_group.group("install")
def hook_install_group():
    """Add memoir's hook to a host's settings file."""


def hook_command(home: str | None) -> str:
    """The command line Claude Code runs: this interpreter on the stdlib-only hook client.

    `-I` keeps the project folder (and PYTHON* variables) off the import path, so a project with
    its own `flows/` package cannot shadow memoir's; `-S` skips site-packages start-up, which the
    client does not need. The client is imported from its folder, not run as a script: Python
    compiles a script on every start but keeps an imported module's bytecode, ~4 ms of CPU a prompt.
    """
    from memoir.flows import hook_client

    env = f"MEMOIR_HOME={shlex.quote(home)} " if home else ""
    folder = os.path.dirname(os.path.abspath(hook_client.__file__))
    # Appended, not inserted: the standard library stays ahead of the client's folder.
    code = f"import sys; sys.path.append({json.dumps(folder)}); {HOOK_IMPORT}; main()"  # a Python literal too
    return f"{env}{shlex.quote(sys.executable)} -I -S -c {shlex.quote(code)} claude-code"


def _is_our_command(hook: object) -> bool:
    return isinstance(hook, dict) and any(m in str(hook.get("command", "")) for m in HOOK_MARKERS)


def _is_ours(entry: dict) -> bool:
    hooks = entry.get("hooks", [])
    return isinstance(hooks, list) and any(_is_our_command(h) for h in hooks)


def plan_hook_settings(current: dict, command: str) -> dict:
    """`current` with memoir's UserPromptSubmit and SessionStart hooks set to `command`; all else kept."""
    new = json.loads(json.dumps(current))
    hooks = new.setdefault("hooks", {})
    wanted = {
        "UserPromptSubmit": {"hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}]},
        "SessionStart": {"matcher": SESSION_START_MATCHER,
                         "hooks": [{"type": "command", "command": command, "timeout": SESSION_START_TIMEOUT_S}]},
    }
    for event, entry in wanted.items():
        entries = [e for e in hooks.get(event, []) if isinstance(e, dict)]
        others = [e for e in entries if not _is_ours(e)]
        hooks[event] = others + [entry]
    return new


def plan_hook_removal(current: dict) -> tuple[dict, list[str]]:
    """`current` without memoir's hook commands, and the events they were under; all else kept.

    Only memoir's commands go: an entry that also runs someone else's command keeps that one. An
    entry, event list or `hooks` table is dropped only when memoir's removal left it empty.
    """
    new = json.loads(json.dumps(current))
    hooks = new.get("hooks")
    if not isinstance(hooks, dict):
        return new, []
    removed: list[str] = []
    for event in list(hooks):
        entries = hooks[event]
        if not isinstance(entries, list) or not any(isinstance(e, dict) and _is_ours(e) for e in entries):
            continue
        kept = []
        for entry in entries:
            if not (isinstance(entry, dict) and _is_ours(entry)):
                kept.append(entry)
                continue
            others = [h for h in entry["hooks"] if not _is_our_command(h)]
            removed += [event] * (len(entry["hooks"]) - len(others))
            if others:
                kept.append({**entry, "hooks": others})
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if removed and not hooks:
        del new["hooks"]
    return new, removed


def _settings_path(settings_path: str) -> Path:
    return Path(settings_path).expanduser()


def _read_settings(path: Path) -> tuple[str, dict]:
    """The settings file's text and object ('' and {} when it does not exist); exits on a broken one."""
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        current = json.loads(text) if text.strip() else {}
    except (OSError, ValueError) as exc:
        click.echo(f"memoir: cannot read {path}: {exc}; fix the file first, nothing was changed", err=True)
        sys.exit(EXIT_USAGE)
    if not isinstance(current, dict):
        click.echo(f"memoir: {path} does not hold a JSON object; nothing was changed", err=True)
        sys.exit(EXIT_USAGE)
    return text, current


def _diff(path: Path, before_text: str, current: dict, after_text: str, label: str) -> str:
    old = (json.dumps(current, indent=2) + "\n") if before_text.strip() else ""
    return "".join(difflib.unified_diff(old.splitlines(True), after_text.splitlines(True), str(path),
                                        f"{path} ({label})"))


def _write_settings(path: Path, text: str) -> None:
    from memoir.cards.store import write_atomic

    try:
        write_atomic(path, text)
    except OSError as exc:
        click.echo(f"memoir: cannot write {path}: {exc}; nothing was changed", err=True)
        sys.exit(EXIT_FAILED)


_SETTINGS_OPTION = click.option(
    "--settings", "settings_path", type=click.Path(dir_okay=False),
    default=lambda: str(Path.home() / ".claude" / "settings.json"), show_default="~/.claude/settings.json",
    help="The Claude Code settings file (a project's .claude/settings.json works too).")


@hook_install_group.command("claude-code")
@_SETTINGS_OPTION
@click.option("--dry-run", is_flag=True, help="Print the change as a diff and write nothing.")
@click.pass_context
def hook_install_claude_code(click_ctx, settings_path, dry_run):
    """Add the UserPromptSubmit (recall) and SessionStart (brief) hooks; other settings are kept.

    Running it again changes nothing, and replaces older memoir hook commands. The command names
    the memoir home (MEMOIR_HOME=…): run it again after moving the home. The first prompt starts
    `memoir serve-recall` in the background if it is not running. `memoir hook uninstall
    claude-code` takes the hooks out again.
    """
    # The home goes into the command: the hook's client then sends its environment and lets the
    # service resolve the settings, instead of importing the config module on every prompt.
    home = str(click_ctx.find_root().obj.settings.home)
    path = _settings_path(settings_path)
    before_text, current = _read_settings(path)
    after = plan_hook_settings(current, hook_command(home))
    after_text = json.dumps(after, indent=2) + "\n"
    if after == current:
        click.echo(f"{path}: memoir hooks already installed, nothing to change")
        return
    if dry_run:
        click.echo(_diff(path, before_text, current, after_text, "with memoir hooks"), nl=False)
        return
    _write_settings(path, after_text)
    click.echo(f"{path}: memoir hooks installed (UserPromptSubmit → recall, SessionStart → brief)")


@hook_group.group("uninstall")
def hook_uninstall_group():
    """Remove memoir's hook from a host's settings file."""


@hook_uninstall_group.command("claude-code")
@_SETTINGS_OPTION
@click.option("--dry-run", is_flag=True, help="Print the change as a diff and write nothing.")
def hook_uninstall_claude_code(settings_path, dry_run):
    """Remove memoir's hook commands from the settings file; every other setting and hook is kept.

    Any command memoir has ever installed there goes (older forms too); running it again changes
    nothing. Cards, index and state stay; a recall service the hook started stops by itself after
    hours without prompts (or stop it now: it is `memoir serve-recall`).
    """
    path = _settings_path(settings_path)
    if not path.exists():
        click.echo(f"{path}: no such file, so no memoir hooks to remove")
        return
    before_text, current = _read_settings(path)
    after, removed = plan_hook_removal(current)
    if not removed:
        click.echo(f"{path}: no memoir hooks found, nothing to change")
        return
    after_text = json.dumps(after, indent=2) + "\n"
    if dry_run:
        click.echo(_diff(path, before_text, current, after_text, "without memoir hooks"), nl=False)
        return
    _write_settings(path, after_text)
    events = ", ".join(dict.fromkeys(removed))
    click.echo(f"{path}: removed {len(removed)} memoir hook command{'s' if len(removed) != 1 else ''} ({events}); "
               "other settings and hooks kept")
