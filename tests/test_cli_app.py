"""The CLI's frame (memoir.flows.cli.app and main): which module defines each command, and the one
place a failure becomes a message and an exit code."""

from __future__ import annotations

import importlib
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from memoir.cards.errors import MemoirError
from memoir.flows.cli.app import (
    CHECK_EXIT,
    EXIT_BUSY,
    EXIT_FAILED,
    EXIT_USAGE,
    CommandBusy,
    CommandError,
    CommandUsage,
    MemoirGroup,
    exit_code_for,
)
from memoir.flows.cli.main import COMMAND_MODULES, COMMANDS, cli
from memoir.flows.lock import RunBusy
from memoir.index.errors import IndexBusy, IndexCorrupt


def test_each_top_level_command_is_registered_by_the_module_the_table_names():
    for module in sorted(set(COMMAND_MODULES.values())):
        importlib.import_module(f"{COMMANDS}.{module}")
    assert sorted(cli.commands) == sorted(COMMAND_MODULES)
    for name, module in COMMAND_MODULES.items():
        assert cli.commands[name].callback.__module__.startswith(f"{COMMANDS}.{module}"), name


def test_the_hook_command_loads_no_other_command_module():
    code = ("import sys; from memoir.flows.cli.main import cli; cli.get_command(None, 'hook'); "
            f"print(sorted(m for m in sys.modules if m.startswith('{COMMANDS}.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"['{COMMANDS}.hook']"


@pytest.mark.parametrize("exc, code", [
    (RunBusy("another run"), EXIT_BUSY), (IndexBusy("locked"), EXIT_BUSY), (CommandBusy("serving"), EXIT_BUSY),
    (CommandUsage("not a repo"), EXIT_USAGE), (CommandError("cannot write"), EXIT_FAILED),
    (IndexCorrupt("damaged"), EXIT_FAILED), (MemoirError("any"), EXIT_FAILED),
])
def test_each_failure_class_has_its_exit_code(exc, code):
    assert exit_code_for(exc) == code


def test_a_failure_in_any_command_is_one_error_line_and_its_code():
    @click.group(cls=MemoirGroup)
    def group():
        pass

    @group.command("busy")
    def busy():
        raise IndexBusy("the index is locked by pid 7; try again when it is done")

    result = CliRunner().invoke(group, ["busy"])
    assert result.exit_code == EXIT_BUSY
    assert result.output == "Error: the index is locked by pid 7; try again when it is done\n"


def test_index_check_verdicts_have_codes_of_their_own():
    verdicts = {k: v for k, v in CHECK_EXIT.items() if k not in ("healthy", "busy")}
    assert len(set(verdicts.values())) == len(verdicts)
    assert not set(verdicts.values()) & {0, EXIT_FAILED, EXIT_USAGE, EXIT_BUSY}
    text = CliRunner().invoke(cli, ["index", "check", "--help"]).output
    for verdict, code in CHECK_EXIT.items():
        assert f"  {code}  {verdict.replace('_', ' ')}" in text, verdict
