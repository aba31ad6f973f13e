"""What memoir hands to Prefect: its settings for a memoir home, and flow parameters without paths.

Prefect reads its settings once, at import: state goes under `<home>/prefect` (never
`~/.prefect`), analytics are off (these machines have no internet), and flow logs stay on the
terminal instead of being shipped to the API. Each value is a default: an operator's own
`PREFECT_*` environment wins, and `PREFECT_API_URL` switches from the ephemeral API to a server.

Nothing here imports Prefect, so a command may use it before `configure_prefect` has run.
"""

from __future__ import annotations

import secrets
import sys
from pathlib import Path

from memoir.cards.config import apply_process_environment, environment
from memoir.cards.private import make_private_dir
from memoir.flows.errors import FlowError

DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_LOGGING_TO_API_ENABLED": "false",
    "PREFECT_LOGGING_LEVEL": "WARNING",
    # The ephemeral API is memoir's own, in-process: on a busy machine its background services log a
    # dropped event as a traceback on the user's terminal though the run went through; a failure that
    # matters reaches the client, which memoir turns into a message (prefect_unavailable).
    "PREFECT_LOGGING_SERVER_LEVEL": "CRITICAL",
    "PREFECT_RESULTS_PERSIST_BY_DEFAULT": "false",
    # The ephemeral API migrates a fresh database on first use: ~10 s here, more on a slow disk.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
}


# Prefect 3's words when its API never answered, so no flow run began: the ephemeral server's start
# ran past PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS, or PREFECT_API_URL's server is not there.
API_NEVER_ANSWERED = ("Timed out while attempting to connect to ephemeral Prefect API server",
                      "Failed to reach API at")
STARTUP_TIMEOUT = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
PREFECT_RUNBOOK = "runbooks/nightly-run-failed.md#prefect-did-not-start"


class PrefectUnavailable(FlowError):
    """Prefect's API did not answer in time, before the flow began: no log was read, no card written."""


class PrefectAlreadyImported(FlowError):
    """`prefect` was imported before memoir could point it at the memoir home."""


class LogsHandedElsewhere(FlowError):
    """A flow got `--logs` tokens that another process handed over."""


def prefect_environment(home: Path) -> dict[str, str]:
    """The `PREFECT_*` variables memoir sets for `home` (existing values are kept)."""
    wanted = {"PREFECT_HOME": str(Path(home) / "prefect"), **DEFAULTS}
    return {**wanted, **environment(*wanted)}


def configure_prefect(home: Path) -> dict[str, str]:
    """Export the variables for `home` into this process; call before importing flows.nightly."""
    env = prefect_environment(home)
    if "prefect" in sys.modules and "PREFECT_HOME" not in environment("PREFECT_HOME"):
        raise PrefectAlreadyImported(
            "prefect was imported before its settings were chosen; import flows.nightly only "
            "after flows.prefect_env.configure_prefect(home)")
    apply_process_environment(env)
    make_private_dir(env["PREFECT_HOME"])
    return env


def prefect_unavailable(exc: BaseException, env: dict[str, str]) -> PrefectUnavailable | None:
    """Prefect's error as memoir's when it says the API never answered (None for any other error).

    `env`: the `PREFECT_*` values the flow ran with (`configure_prefect`'s answer), for the message.
    """
    said = str(exc)
    if not isinstance(exc, (RuntimeError, TimeoutError)) or not said.startswith(API_NEVER_ANSWERED):
        return None
    said = said.split(". ", 1)[0].rstrip(".")  # the server's own stdout and stderr may follow: not for a terminal
    if env.get("PREFECT_API_URL"):
        where = f"the Prefect server at PREFECT_API_URL={env['PREFECT_API_URL']} did not answer"
        retry = "start that server, or unset PREFECT_API_URL for a local API"
    else:
        where = f"Prefect's local API did not start within {STARTUP_TIMEOUT}={env.get(STARTUP_TIMEOUT, '?')} s"
        retry = f"raise {STARTUP_TIMEOUT} (a first start on a slow disk takes longest)"
    return PrefectUnavailable(
        f"{where} ({said}). Nothing was lost: the flow had not begun, so no log was read and no card "
        f"written. `memoir run` without --flow or --runner does the same work without Prefect; to retry "
        f"under Prefect, {retry} ({PREFECT_RUNBOOK})")


# --- `--logs` as a flow parameter -------------------------------------------------------------------

LOCAL_LOGS = "memoir-local-logs:"
_handed: dict[str, list[str]] = {}


def hand_over(logs: list[str]) -> list[str]:
    """`--logs` paths as a token a flow parameter may carry. Prefect keeps every flow run's parameters
    in its database under the memoir home, and a path can hold an e-mail address or a private
    address (`/mnt/10.42.7.19/...`); the token only means something inside this process."""
    if not logs:
        return []
    token = LOCAL_LOGS + secrets.token_hex(8)
    _handed[token] = [str(p) for p in logs]
    return [token]


def taken_over(logs: list[str]) -> list[str]:
    """The paths behind `hand_over`'s tokens; other entries (a deployment's own parameter) as they are."""
    out = []
    for entry in logs:
        if entry.startswith(LOCAL_LOGS):
            if entry not in _handed:
                raise LogsHandedElsewhere("these --logs were given to another process; pass them again")
            out.extend(_handed[entry])
        else:
            out.append(entry)
    return out
