"""The `memoir` group: global options, the settings context, JSON output and the exit codes.

Command modules (memoir.flows.cli.commands.*) import `cli` from here and decorate their commands;
memoir.flows.cli.main names the module of each top-level command, and the group imports a module
only when one of its commands is asked for. This is the one place where a failure becomes a message and an exit code. Commands raise: a
library's `MemoirError`, or a `CommandError` worded for the terminal; `MemoirGroup.invoke` turns
it into "Error: …" on stderr and the code its class has in ERROR_EXITS. Commands that end with a
verdict rather than a failure (`index check`, `serve --status`) exit with a code from the table
below through `exit_with`.
"""

from __future__ import annotations

import difflib
import errno
import importlib
import json
import os
from pathlib import Path
from typing import NoReturn

import click

from memoir.cards.config import ConfigError, Settings, default_config_file, environment, load_settings
from memoir.cards.errors import HomeNotPrivate, LibraryTooNew, MemoirError
from memoir.cards.private import foreign_folders
from memoir.flows.errors import Busy, FlowError
from memoir.flows.prefect_env import PrefectUnavailable
from memoir.index.errors import IndexBusy

# --- exit codes: the one table ---------------------------------------------------------------------

EXIT_OK = 0  # done; `index check`: healthy
EXIT_FAILED = 1  # not done: the message says why and what to do next
EXIT_USAGE = 2  # a mistake in the command line or in a file it names (click's own code for usage errors)
EXIT_BUSY = 3  # another memoir process holds the run lock, the index or serve: try again once it is done
EXIT_CANNOT_OPEN = 4  # `index check`: memoir cannot get at the index (permissions, a file in its place)
EXIT_MISSING = 5  # `index check`: no memoir home, or no index there yet
EXIT_STALE = 6  # `index check`: rows behind the card files, or built for another model or schema
EXIT_CORRUPT = 7  # `index check`: the file is damaged
EXIT_INCIDENT = 8  # `run`: done and the cards are safe, but the model stage raised an incident (runbooks/alerts.md)
EXIT_TOO_NEW = 9  # the card library was written by a newer memoir (card schema): upgrade memoir first
EXIT_NOT_PRIVATE = 10  # the home, or a folder in it, belongs to another user or others may write it
EXIT_NO_PREFECT = 11  # `--flow`, `--runner`, `flow run`: Prefect's API did not answer in time; nothing was done

# `memoir index check`: each verdict has its own code, none shared with a failure of the check itself.
CHECK_EXIT = {"healthy": EXIT_OK, "busy": EXIT_BUSY, "cannot_open": EXIT_CANNOT_OPEN, "missing": EXIT_MISSING,
              "stale": EXIT_STALE, "corrupt": EXIT_CORRUPT}


class CommandError(FlowError):
    """A failure a command words itself for the person at the terminal: what went wrong, what to do."""


class CommandBusy(CommandError, Busy):
    """Someone else holds what the command needs (a `memoir serve` already running for this home)."""


class CommandUsage(CommandError):
    """A mistake in what the person gave: a path that is no Aider repository, a settings file that is no JSON."""


# Which code a failure exits with: the first row whose class matches.
ERROR_EXITS: tuple[tuple[type[Exception], int], ...] = (
    (Busy, EXIT_BUSY),  # the run lock, the serve lock, a command's own refusal
    (IndexBusy, EXIT_BUSY),
    (CommandUsage, EXIT_USAGE),
    (LibraryTooNew, EXIT_TOO_NEW),
    (HomeNotPrivate, EXIT_NOT_PRIVATE),
    (PrefectUnavailable, EXIT_NO_PREFECT),
    (MemoirError, EXIT_FAILED),
)
FAILURES = tuple(cls for cls, _ in ERROR_EXITS)


# The errors a write meets on a read-only home, a full disk or a quota, said as one message, never a traceback.
WRITE_REFUSED = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT})


def exit_code_for(exc: Exception) -> int:
    return next(code for cls, code in ERROR_EXITS if isinstance(exc, cls))


def exit_with(code: int) -> NoReturn:
    """End the command with `code` (an EXIT_* above) once its output is printed."""
    raise click.exceptions.Exit(code)


# --- the settings context ----------------------------------------------------------------------------


class Context:
    """Settings resolved once per invocation, shared by every subcommand.

    `env` is the process environment, read once here (memoir.cards.config.environment) and passed
    on. A broken config file is kept as `config_error` rather than raised here, so `memoir status`
    can still run and say what is wrong; every other command stops at `.settings`.
    """

    def __init__(self, home: str | None, env: dict[str, str]):
        self.home = home
        self.env = env
        self.warning = ""  # said once on stderr, and in every JSON object the command prints
        self.allow_shared_home = False  # --allow-shared-home: the person trusts every user who can write the home
        self.config_error: ConfigError | None = None
        self._settings: Settings | None = None
        try:
            self._settings = load_settings(home=home, env=env)
        except ConfigError as exc:
            self.config_error = exc

    @property
    def settings(self) -> Settings:
        if self.config_error is not None:
            raise CommandError(f"{self.config_error} ({self.config_source}); fix it, then "
                               "rerun (`memoir status` shows it too)") from self.config_error
        assert self._settings is not None
        return self._settings

    @property
    def config_source(self) -> str:
        """Where a bad setting came from: the config file, or the environment when there is none."""
        path = default_config_file(self.env)
        return f"config file {path}" if path.exists() else f"MEMOIR_* environment (no config file at {path})"

    def settings_without_config(self) -> Settings:
        """Defaults plus --home / MEMOIR_HOME only: enough for `status` to report a broken config."""
        if self._settings is not None:
            return self._settings
        env = {"MEMOIR_CONFIG": os.path.join(os.devnull, "none")}  # a path that never exists
        if self.env.get("MEMOIR_HOME"):
            env["MEMOIR_HOME"] = self.env["MEMOIR_HOME"]
        return load_settings(home=self.home, env=env)


pass_ctx = click.make_pass_decorator(Context)

# `status` reports a shared home instead of refusing it; a hook never fails a prompt (it injects nothing
# from such a home: `hook_main` asks `foreign_folders` itself).
OWNER_CHECK_EXEMPT = frozenset({"status", "hook"})


def refuse_foreign_home(home: str | os.PathLike) -> None:
    """Raise HomeNotPrivate when another user owns or may write the home or a folder in it."""
    foreign = foreign_folders(home)
    if foreign:
        shown = "; ".join(foreign[:3]) + (f"; and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise HomeNotPrivate(
            f"the memoir home {home} is not yours alone ({shown}): another user could replace a card your agent "
            f"is then handed. Use a home you own (`chmod 700` each folder, or `--home` elsewhere), or pass "
            f"--allow-shared-home if you trust every user who can write there (runbooks/home-not-private.md)")

# Commands that only read a library: run on a home that holds none (a mistyped --home), they would
# show an empty library and exit 0, so they warn first.
LIBRARY_READERS = frozenset({"status", "cards", "recall", "search", "review", "report", "forget"})  # index check: `missing`
LIBRARY_PARTS = ("cards", "state", "index")


def no_library_warning(home: str | os.PathLike) -> str:
    """A warning when `home` holds none of a memoir library's folders; '' when it holds one."""
    path = Path(home)
    if any((path / part).is_dir() for part in LIBRARY_PARTS):
        return ""
    what = "does not exist" if not path.exists() else "holds no memoir library (no cards/, state/ or index/)"
    return f"{path} {what}: check --home / MEMOIR_HOME, or run `memoir run` to make a library there"


def emit_json(data: object) -> None:
    """JSON on stdout; an object also carries the run's `warning` (a home with no library), if any."""
    ctx = click.get_current_context(silent=True)
    warning = getattr(ctx.find_object(Context), "warning", "") if ctx is not None else ""
    if warning and isinstance(data, dict):
        data = {**data, "warning": warning}
    click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))


# --- the group ------------------------------------------------------------------------------------------


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
    """The root group: its value-taking options work before or after any (nested) subcommand, a
    command's module is imported when the command is first asked for, and a failure any
    subcommand raises ends here as one message and one exit code."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Top-level command name -> the module whose decorators register it (set by cli/main.py).
        # The hook's `memoir hook claude-code` (a ~300 ms budget) then loads the hook's module alone.
        self.command_modules: dict[str, str] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.command_modules})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.command_modules:
            importlib.import_module(self.command_modules[cmd_name])
        return super().get_command(ctx, cmd_name)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        """A mistyped command names the nearest ones ("No such command 'serch'. Did you mean search?")."""
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            name = args[0] if args else ""
            near = difflib.get_close_matches(name, self.list_commands(ctx), n=3, cutoff=0.6)
            if near and "No such command" in exc.message:
                exc.message += " Did you mean " + " or ".join(near) + "?"
            raise

    def global_option_names(self) -> set[str]:
        return {name for p in self.params if isinstance(p, click.Option) and not p.is_flag
                for name in p.opts if name.startswith("--")}

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if ctx.parent is None:
            args = hoist_options(list(args), self.global_option_names())
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except FAILURES as exc:
            failure = click.ClickException(str(exc))  # printed as "Error: …" on stderr
            failure.exit_code = exit_code_for(exc)
            raise failure from exc
        except OSError as exc:
            if exc.errno not in WRITE_REFUSED:
                raise
            # A read-only home, a full disk, a quota: what could not be written, and that nothing was lost.
            failure = click.ClickException(
                f"cannot write {exc.filename or 'under the memoir home'}: {exc.strerror} — nothing was lost: "
                f"host logs are only read, and card files are replaced atomically; free space or fix the "
                f"permissions, then run the command again")
            failure.exit_code = EXIT_FAILED
            raise failure from exc


@click.group(cls=MemoirGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", type=click.Path(file_okay=False), envvar="MEMOIR_HOME",
              help="Where cards/, state/ and index/ live (default ~/.local/share/memoir). "
                   "Works before or after the subcommand.")
@click.option("--allow-shared-home", is_flag=True,
              help="Use a home that another user owns or may write to (refused otherwise: they could "
                   "replace a card your agent is then handed). Setting: allow_shared_home.")
@click.version_option(package_name="memoir")
@click.pass_context
def cli(ctx: click.Context, home: str | None, allow_shared_home: bool) -> None:
    """memoir: experience cards from AI coding agents' session logs.

    Global options such as --home may be given before or after the subcommand
    (`memoir --home X status` or `memoir status --home X`).
    """
    ctx.obj = Context(home, environment())
    if ctx.obj.config_error is None:
        ctx.obj.allow_shared_home = allow_shared_home or ctx.obj.settings.allow_shared_home
        if ctx.invoked_subcommand not in OWNER_CHECK_EXEMPT and not ctx.obj.allow_shared_home:
            refuse_foreign_home(ctx.obj.settings.home)
    if ctx.invoked_subcommand in LIBRARY_READERS and ctx.obj.config_error is None:
        ctx.obj.warning = no_library_warning(ctx.obj.settings.home)
        if ctx.obj.warning:
            click.echo(f"warning: {ctx.obj.warning}", err=True)
