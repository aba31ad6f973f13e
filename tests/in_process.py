"""`memoir ARGS` run in the test's own process through click's CliRunner, answered as a finished
subprocess would be (returncode, stdout, stderr).

A subprocess pays for importing torch and loading the model again (seconds each, far more on a busy
machine); tests whose subject is what a command does, not the console script or the process around
it, run it here instead. An exception that escaped the command lands in stderr as the traceback a
subprocess would have printed, so "no traceback" checks keep their teeth.
"""

from __future__ import annotations

import subprocess
import traceback
from pathlib import Path

from click.testing import CliRunner

from memoir.flows.cli.main import cli


def memoir_in_process(home: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    result = CliRunner().invoke(cli, list(args), env={"MEMOIR_HOME": str(home), **(env or {})})
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(*result.exc_info))
    return subprocess.CompletedProcess(["memoir", *args], result.exit_code, result.stdout, stderr)
