"""Imports each command module so its subcommands register on the `cli` group."""

from memoir.flows import cli_cards  # noqa: F401
from memoir.flows import cli_index  # noqa: F401
from memoir.flows import cli_status  # noqa: F401
from memoir.flows import cli_flows  # noqa: F401
from memoir.flows import cli_recall  # noqa: F401
from memoir.flows import cli_user  # noqa: F401
from memoir.flows import cli_report  # noqa: F401
from memoir.flows import cli_logs  # noqa: F401
