"""The `memoir` command line: the product's face. Library errors become messages and exit codes here."""

from __future__ import annotations

import json
import os
import sys

import click

from memoir.cards.config import ConfigError, Settings, default_config_file, load_settings

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_BUSY = 0, 1, 2, 3


class Context:
    """Settings resolved once per invocation, shared by every subcommand.

    A broken config file is kept as `config_error` rather than raised here, so `memoir status`
    can still run and say what is wrong; every other command stops at `.settings`.
    """

    def __init__(self, home: str | None):
        self.home = home
        self.config_error: ConfigError | None = None
        self._settings: Settings | None = None
        try:
            self._settings = load_settings(home=home)
        except ConfigError as exc:
            self.config_error = exc

    @property
    def settings(self) -> Settings:
        if self.config_error is not None:
            raise click.ClickException(f"{self.config_error} ({self.config_source}); fix it, then "
                                       "rerun (`memoir status` shows it too)")
        assert self._settings is not None
        return self._settings

    @property
    def config_source(self) -> str:
        """Where a bad setting came from: the config file, or the environment when there is none."""
        path = default_config_file(dict(os.environ))
        return f"config file {path}" if path.exists() else f"MEMOIR_* environment (no config file at {path})"

    def settings_without_config(self) -> Settings:
        """Defaults plus --home / MEMOIR_HOME only: enough for `status` to report a broken config."""
        if self._settings is not None:
            return self._settings
        env = {"MEMOIR_CONFIG": os.path.join(os.devnull, "none")}  # a path that never exists
        if os.environ.get("MEMOIR_HOME"):
            env["MEMOIR_HOME"] = os.environ["MEMOIR_HOME"]
        return load_settings(home=self.home, env=env)


pass_ctx = click.make_pass_decorator(Context)


def emit_json(data: object) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))


def hoist_options(args: list[str], names: set[str]) -> list[str]:
    """Move each `--name VALUE` / `--name=VALUE` in `names` to the front, keeping their order.

    Group options then parse wherever the user typed them (`memoir index check --home X`);
    nothing after a bare `--` is touched.
    """
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest.extend(args[i:])
            break
        name = arg.split("=", 1)[0]
        if name in names:
            take = 1 if "=" in arg else 2
            front.extend(args[i:i + take])
            i += take
            continue
        rest.append(arg)
        i += 1
    return front + rest


class MemoirGroup(click.Group):
    """The root group: its value-taking options work before or after any (nested) subcommand."""

    def global_option_names(self) -> set[str]:
        return {name for p in self.params if isinstance(p, click.Option) and not p.is_flag
                for name in p.opts if name.startswith("--")}

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if ctx.parent is None:
            args = hoist_options(list(args), self.global_option_names())
        return super().parse_args(ctx, args)


@click.group(cls=MemoirGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", type=click.Path(file_okay=False), envvar="MEMOIR_HOME",
              help="Where cards/, state/ and index/ live (default ~/.local/share/memoir). "
                   "Works before or after the subcommand.")
@click.version_option(package_name="memoir")
@click.pass_context
def cli(ctx: click.Context, home: str | None) -> None:
    """memoir: experience cards from AI coding agents' session logs.

    Global options such as --home may be given before or after the subcommand
    (`memoir --home X status` or `memoir status --home X`).
    """
    ctx.obj = Context(home)


def main() -> None:
    # A host hook runs on every prompt inside a ~300 ms budget: load only the hook's commands.
    if "hook" in sys.argv[1:] and "--help" not in sys.argv and "-h" not in sys.argv:
        from memoir.flows import cli_recall  # noqa: F401
    else:
        from memoir.flows import commands  # noqa: F401  (registers every subcommand on `cli`)

    cli(prog_name="memoir")


if __name__ == "__main__":
    main()
