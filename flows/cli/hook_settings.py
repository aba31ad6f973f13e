"""A host's hook settings file and memoir's hook entries in it: plan the change, then write it.

Claude Code (`~/.claude/settings.json`) and Gemini CLI (`~/.gemini/settings.json`) keep hooks in one
shape (`hooks.<Event>[].hooks[].command`) under their own event names and time units; Gemini CLI
matches a lifecycle event's `matcher` as an exact string (its hooks reference), so memoir's
SessionStart entry has none and runs on every start. Copilot CLI reads a file per hook set
(`~/.copilot/hooks/<name>.json` or `<repo>/.github/hooks/<name>.json`: `{"version": 1, "hooks":
{event: [{"type": "command", "bash", "timeoutSec"}]}}`), so memoir's is a file of its own. Planning is pure (settings dict in, settings dict out); `hook install|uninstall
<host>` read the file, print a diff or write the new text atomically.
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import sys
from pathlib import Path

from memoir.flows import hook_client
from memoir.flows.cli.app import CommandError, CommandUsage

# Commands memoir has installed over time: any of them in a settings file is memoir's entry.
HOOK_IMPORT = "from hook_client import main"
HOOK_MARKERS = (HOOK_IMPORT, "from memoir_hook import main", "memoir_hook.py claude-code", "memoir-hook claude-code",
                "flows.recall_service claude-code", "memoir hook claude-code")
HOOK_TIMEOUT_S = 5  # Claude Code's own limit for the prompt hook; ours ends it at the recall budget
SESSION_START_TIMEOUT_S = 10  # the brief may take seconds (hook_client.SESSION_START_BUDGET_MS)
SESSION_START_MATCHER = "startup|resume|clear|compact"
# host → (prompt event, start event, start matcher or None, timeout unit per second)
LAYOUTS = {"claude-code": ("UserPromptSubmit", "SessionStart", SESSION_START_MATCHER, 1),
           "gemini-cli": ("BeforeAgent", "SessionStart", None, 1000)}  # Gemini counts ms
COPILOT_HOOKS_FILE = Path(".github") / "hooks" / "memoir.json"
COPILOT_USER_HOOKS_FILE = Path(".copilot") / "hooks" / "memoir.json"  # under the home: read in every repository


def copilot_hooks_path(repo: str | None) -> Path:
    """memoir's Copilot CLI hook file: the user-level one, or the one in `repo`'s .github/hooks/."""
    return Path(repo).expanduser() / COPILOT_HOOKS_FILE if repo else Path.home() / COPILOT_USER_HOOKS_FILE


def hook_command(home: str | None, host: str = "claude-code") -> str:
    """The command line Claude Code runs: this interpreter on the stdlib-only hook client.

    `-I` keeps the project folder (and PYTHON* variables) off the import path, so a project with
    its own `flows/` package cannot shadow memoir's; `-S` skips site-packages start-up, which the
    client does not need. The client is imported from its folder, not run as a script: Python
    compiles a script on every start but keeps an imported module's bytecode, ~4 ms of CPU a prompt.
    """
    env = f"MEMOIR_HOME={shlex.quote(home)} " if home else ""
    folder = os.path.dirname(os.path.abspath(hook_client.__file__))
    # Appended, not inserted: the standard library stays ahead of the client's folder.
    code = f"import sys; sys.path.append({json.dumps(folder)}); {HOOK_IMPORT}; main()"  # a Python literal too
    return f"{env}{shlex.quote(sys.executable)} -I -S -c {shlex.quote(code)} {host}"


def _is_our_command(hook: object) -> bool:
    return isinstance(hook, dict) and any(m in str(hook.get("command", "")) for m in HOOK_MARKERS)


def _is_ours(entry: dict) -> bool:
    hooks = entry.get("hooks", [])
    return isinstance(hooks, list) and any(_is_our_command(h) for h in hooks)


def plan_hook_settings(current: dict, command: str, host: str = "claude-code") -> dict:
    """`current` with memoir's prompt and session-start hooks set to `command`; all else kept.

    The session-start command names its event (`… claude-code SessionStart`): the client arms the
    brief's budget (seconds) before it has read the event, not the prompt's 300 ms. The prompt's
    command names none, so an older command of either kind behaves as the prompt's does.
    """
    prompt_event, start_event, matcher, unit = LAYOUTS[host]
    new = json.loads(json.dumps(current))
    hooks = new.setdefault("hooks", {})
    wanted = {
        prompt_event: {"hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S * unit}]},
        start_event: {**({"matcher": matcher} if matcher else {}),
                      "hooks": [{"type": "command", "command": f"{command} {start_event}",
                                 "timeout": SESSION_START_TIMEOUT_S * unit}]},
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


def copilot_hooks(command: str) -> dict:
    """memoir's Copilot CLI hook file, each command naming its event (camelCase payloads carry none).

    userPromptTransformed, not userPromptSubmitted: Copilot CLI drops a command hook's answer to the
    latter, and lets the former replace the model-facing prompt (`modifiedTransformedPrompt`);
    sessionStart may add `additionalContext` (GitHub's Copilot hooks reference).
    """
    return {"version": 1, "hooks": {
        "userPromptTransformed": [{"type": "command", "bash": f"{command} userPromptTransformed",
                                   "timeoutSec": HOOK_TIMEOUT_S}],
        "sessionStart": [{"type": "command", "bash": f"{command} sessionStart", "timeoutSec": SESSION_START_TIMEOUT_S}],
    }}


def is_copilot_hooks_file(current: dict) -> bool:
    """A hook file memoir wrote (every command in it is memoir's), safe to delete whole."""
    entries = [e for v in (current.get("hooks") or {}).values() if isinstance(v, list) for e in v]
    return bool(entries) and all(isinstance(e, dict) and any(m in str(e.get("bash", "")) for m in HOOK_MARKERS)
                                 for e in entries)


def read_settings_file(path: Path) -> tuple[str, dict]:
    """The settings file's text and object ('' and {} when it does not exist).

    Raises:
        CommandUsage: the file cannot be read or holds no JSON object; nothing was changed.
    """
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        current = json.loads(text) if text.strip() else {}
    except (OSError, ValueError) as exc:
        raise CommandUsage(f"cannot read {path}: {exc}; fix the file first, nothing was changed") from exc
    if not isinstance(current, dict):
        raise CommandUsage(f"{path} does not hold a JSON object; nothing was changed")
    return text, current


def settings_diff(path: Path, before_text: str, current: dict, after_text: str, label: str) -> str:
    old = (json.dumps(current, indent=2) + "\n") if before_text.strip() else ""
    return "".join(difflib.unified_diff(old.splitlines(True), after_text.splitlines(True), str(path),
                                        f"{path} ({label})"))


def write_settings_file(path: Path, text: str) -> None:
    """Write the new settings atomically. Raises CommandError when the file cannot be written."""
    from memoir.cards.store import write_atomic  # deferred: start-up (yaml, jinja2)

    try:
        write_atomic(path, text)
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc}; nothing was changed") from exc
