"""Typed failures of the index layer; the CLI alone turns them into messages and exit codes.

Every message says what to do next, because the person reading it is mid-incident.
"""

from __future__ import annotations

from memoir.cards.errors import MemoirError


class IndexFailure(MemoirError):
    """Base of every index failure (named apart from the builtin IndexError)."""


class EmbedderUnavailable(IndexFailure):
    """The embedding model cannot be loaded (package missing, files damaged)."""


class IndexUnavailable(IndexFailure):
    """SQLite with sqlite-vec cannot be opened at all (apsw or the extension is missing)."""


class IndexCorrupt(IndexFailure):
    """The index file is damaged; only a rebuild from card files repairs it."""


class IndexStale(IndexFailure):
    """The index was built for another model, dimension or schema; vectors must not be mixed."""


class ModelMismatch(IndexStale):
    """The index holds vectors of another model or dimension; `memoir index rebuild` replaces them."""


class IndexBusy(IndexFailure):
    """Another process holds the index's write lock longer than the busy timeout."""


class IndexWriteFailed(IndexFailure):
    """A write to the index failed (disk full, read-only, I/O); the card body is unaffected."""


class RebuildFailed(IndexFailure):
    """A rebuilt index did not check out; the previous file was put back."""
