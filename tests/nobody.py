"""Run a function as uid 65534 in a forked child: a real permission denial for a test run as root.

The child inherits every module the parent imported, so it never reads the repository's sources,
which may sit under a folder (a 0700 clone) that uid 65534 cannot enter.
"""

from __future__ import annotations

import json
import os
import select
import signal

import pytest

NOBODY = 65534


def as_nobody(fn, timeout_s: float = 900):
    """fn()'s JSON-able answer, computed in a child that dropped root; the test fails on its error."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, and leave without running pytest's exit hooks
        os.close(read_end)
        try:
            os.setgroups([])
            os.setresgid(NOBODY, NOBODY, NOBODY)
            os.setresuid(NOBODY, NOBODY, NOBODY)
            payload = fn()
        except BaseException as exc:  # noqa: BLE001 - reported to the parent, which fails the test
            payload = {"child_error": repr(exc)}
        os.write(write_end, json.dumps(payload).encode())
        os._exit(0)
    os.close(write_end)
    # A child that blocked (a FIFO opened for reading) would hang the suite: fail instead.
    ready, _, _ = select.select([read_end], [], [], timeout_s)
    if not ready:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the unprivileged child never finished: something blocked (a FIFO opened for reading?)")
    with os.fdopen(read_end, "rb") as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    answer = json.loads(data)
    assert not (isinstance(answer, dict) and "child_error" in answer), answer
    return answer
