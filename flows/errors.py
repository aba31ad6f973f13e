"""The flows floor's failures: runs, locks, the queue, the services. Under memoir.cards.errors.MemoirError."""

from __future__ import annotations

from memoir.cards.errors import MemoirError


class FlowError(MemoirError):
    """Base of the flows floor's failures."""


class Busy(FlowError):
    """Another process holds what this one needs (the run lock, the serve lock): it exits busy, not failed."""
