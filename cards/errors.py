"""The one error base, and the cards floor's own failures under it.

Every failure memoir raises on purpose derives from `MemoirError`; the CLI (memoir.flows.cli.app)
is the one place that turns one into a message and an exit code. Each floor has a small errors
module: this one, memoir.index.errors and memoir.flows.errors. Messages say what to do next.
"""

from __future__ import annotations


class MemoirError(Exception):
    """Base of every failure memoir raises on purpose."""


class CardsError(MemoirError):
    """Base of the cards floor's failures: reading logs, writing card files, settings."""


class LibraryTooNew(CardsError):
    """A card file says a newer memoir wrote it (`schema:` above `CARD_SCHEMA`): read nothing, write nothing."""


class HomeNotPrivate(MemoirError):
    """The memoir home, or a folder in it, can be changed by another user: memoir reads and writes nothing there."""
