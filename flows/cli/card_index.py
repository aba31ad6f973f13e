"""The index follows a card file a command changed: at once, or the ids wait for `memoir replay`.

Card files change first (`forget`, `unforget`, `review`); these say in a few words what became
of the index, for the line the command prints. Each write holds the index's write lock, so a
rebuild running beside the command cannot swap its write away.
"""

from __future__ import annotations

from pathlib import Path

from memoir.index.errors import IndexFailure
from memoir.index.files import INDEX_FILE


def _index_exists(settings) -> bool:
    return (Path(settings.index_dir) / INDEX_FILE).exists()


def drop_from_index(settings, ids: list[str]) -> str:
    """Remove the rows now; when the index cannot be written, queue the ids (the next sync drops them)."""
    from memoir.index.db import open_index  # deferred: start-up (apsw, sqlite-vec)
    from memoir.index.embed import default_embedder  # deferred: start-up (numpy)
    from memoir.index.pending import PendingIndex  # deferred: start-up (yaml, jinja2)
    from memoir.index.rebuild import index_write_lock  # deferred: start-up (apsw, numpy)

    if not _index_exists(settings):
        return "no index yet"
    try:
        # The embedder only names the model here; nothing is embedded, so it never loads.
        with index_write_lock(settings.index_dir), open_index(settings.index_dir, default_embedder()) as index:
            index.remove(ids)
    except (IndexFailure, OSError) as exc:
        PendingIndex(settings.state_dir).add(ids)
        return f"index not updated ({exc}); queued for `memoir replay`"
    return "dropped from the index"


def reindex(settings, store, ids: list[str]) -> str:
    """Index these card files now (loads the model), or queue them; without an index the next run does it."""
    from memoir.index.embed import default_embedder  # deferred: start-up (numpy)
    from memoir.index.pending import PendingIndex  # deferred: start-up (yaml, jinja2)
    from memoir.index.rebuild import index_write_lock  # deferred: start-up (apsw, numpy)
    from memoir.index.sync import index_or_queue  # deferred: start-up (apsw, sqlite-vec)

    if not _index_exists(settings):
        return "no index yet; `memoir run` builds it"
    pending = PendingIndex(settings.state_dir)
    try:
        with index_write_lock(settings.index_dir):  # no rebuild swaps the file under this write
            outcome = index_or_queue(store, settings.index_dir, default_embedder(), ids, pending)
    except OSError as exc:  # the lock file itself cannot be made
        pending.add(ids)
        return f"index not updated ({exc}); queued for `memoir replay`"
    if outcome.queued:
        return f"index not updated ({outcome.error}); queued for `memoir replay`"
    return "index updated"
