"""Prefect's settings for a memoir home, set before `prefect` is first imported in the process.

Prefect reads its settings once, at import: state goes under `<home>/prefect` (never
`~/.prefect`), analytics are off (these machines have no internet), and flow logs stay on the
terminal instead of being shipped to the API. Each value is a default: an operator's own
`PREFECT_*` environment wins, and `PREFECT_API_URL` switches from the ephemeral API to a server.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_LOGGING_TO_API_ENABLED": "false",
    "PREFECT_LOGGING_LEVEL": "WARNING",
    "PREFECT_RESULTS_PERSIST_BY_DEFAULT": "false",
    # The ephemeral API migrates a fresh database on first use: ~10 s here, more on a slow disk.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
}


class PrefectAlreadyImported(Exception):
    """`prefect` was imported before memoir could point it at the memoir home."""


def prefect_environment(home: Path) -> dict[str, str]:
    """The `PREFECT_*` variables memoir sets for `home` (existing values are kept)."""
    wanted = {"PREFECT_HOME": str(Path(home) / "prefect"), **DEFAULTS}
    return {k: os.environ.get(k, v) for k, v in wanted.items()}


def configure_prefect(home: Path) -> dict[str, str]:
    """Export the variables for `home` into this process; call before importing flows.nightly."""
    env = prefect_environment(home)
    if "prefect" in sys.modules and os.environ.get("PREFECT_HOME") != env["PREFECT_HOME"]:
        raise PrefectAlreadyImported(
            "prefect was imported before its settings were chosen; import flows.nightly only "
            "after flows.prefect_env.configure_prefect(home)")
    os.environ.update(env)
    Path(env["PREFECT_HOME"]).mkdir(parents=True, exist_ok=True)
    return env
