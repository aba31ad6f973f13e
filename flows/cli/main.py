"""The `memoir` console script: which module defines each top-level command, then run.

Each module under memoir.flows.cli.commands imports the app and decorates its commands. The group
imports a module when one of its commands is asked for (`memoir --help` asks for them all), so the
hook's `memoir hook claude-code` starts without loading the other commands and what they import.
tests/test_cli_app.py checks this table against what the modules register.
"""

from __future__ import annotations

from memoir.flows.cli.app import cli

COMMANDS = "memoir.flows.cli.commands"

# Top-level command -> its module under memoir.flows.cli.commands.
COMMAND_MODULES = {
    "brief": "recall",
    "cards": "cards",
    "demo": "run",
    "explain": "explain",
    "export": "cards",
    "flow": "flow",
    "forget": "forget",
    "hook": "hook",
    "index": "index",
    "logs": "logs",
    "projects": "projects",
    "mcp": "recall",
    "recall": "recall",
    "replay": "flow",
    "report": "report",
    "review": "review",
    "run": "run",
    "schedule": "schedule",
    "search": "search",
    "serve": "serve",
    "serve-recall": "recall",
    "status": "status",
    "unforget": "forget",
}
cli.command_modules.update({name: f"{COMMANDS}.{module}" for name, module in COMMAND_MODULES.items()})


def main() -> None:
    cli(prog_name="memoir")


if __name__ == "__main__":
    main()
