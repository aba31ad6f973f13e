"""The `memoir` command line: the product's face. Library errors become messages and exit codes here."""

from __future__ import annotations

import json
import sys

import click

from cards.config import ConfigError, Settings, load_settings

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_BUSY = 0, 1, 2, 3


class Context:
    """Settings resolved once per invocation, shared by every subcommand."""

    def __init__(self, home: str | None):
        try:
            self.settings: Settings = load_settings(home=home)
        except ConfigError as exc:
            raise click.ClickException(str(exc)) from exc


pass_ctx = click.make_pass_decorator(Context)


def emit_json(data: object) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", type=click.Path(file_okay=False), envvar="MEMOIR_HOME",
              help="Where cards/, state/ and index/ live (default ~/.local/share/memoir).")
@click.version_option(package_name="memoir")
@click.pass_context
def cli(ctx: click.Context, home: str | None) -> None:
    """memoir: experience cards from AI coding agents' session logs."""
    ctx.obj = Context(home)


def main() -> None:
    # A host hook runs on every prompt inside a ~300 ms budget: load only the hook's commands.
    if "hook" in sys.argv[1:] and "--help" not in sys.argv and "-h" not in sys.argv:
        from flows import cli_recall  # noqa: F401
    else:
        from flows import commands  # noqa: F401  (registers every subcommand on `cli`)

    cli(prog_name="memoir")


if __name__ == "__main__":
    main()
