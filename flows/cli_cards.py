"""`memoir run`, `memoir cards …`, `memoir demo`."""

from __future__ import annotations

from flows.cli import cli, pass_ctx  # noqa: F401
