"""What can go wrong in the model stage, each failure typed so the batch knows what to do next.

`EndpointUnavailable` moves on to the next endpoint; `ModelTimeout` is an incident (the batch goes
back to the queue); `BrokenResponse` and `InvalidOutput` are counted and never resent.
"""

from __future__ import annotations

from memoir.cards.errors import CardsError


class DistillError(CardsError):
    """The model stage could not distill one experience."""


class EndpointUnavailable(DistillError):
    """The endpoint failed before producing any output (down, 401/403, 429, 5xx): try the next."""


class ModelTimeout(DistillError):
    """The endpoint accepted the request but produced nothing in time: an incident, not a retry."""


class BrokenResponse(DistillError):
    """The response started and broke midway; it is never resent to another endpoint."""


class InvalidOutput(DistillError):
    """The model answered, but not with the fixed slots; `kind` is `empty` or `invalid_format`."""

    def __init__(self, kind: str, reason: str):
        super().__init__(f"{kind}: {reason}")
        self.kind = kind
        self.reason = reason


class BatchLocked(DistillError):
    """Another live worker holds this batch's lock; leave the batch to it."""
