"""What a reader keeps in memory between requests, read again after a commit off the request.

The int8 copy of the vectors (`codes.ScaledCopy`), the binary codes (`codes.CodeCache`) and the
place grouping (`places.PlaceCache`) share one life: a long-lived reader (`Index.warm`) reads them
at warm-up and, after another connection commits, again in a background thread on a connection of
its own while the old copy keeps answering; a one-shot reader reads them in its request. What
differs (what a request gets while none is held, whether a failed read is tried again before the
next commit) each subclass says.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from memoir.index.apsw_errors import apsw
from memoir.index.errors import IndexFailure


class HeldCopy:
    """One copy a reader holds: `current` at its version, `loading` the version a background read is
    loading, `reads` how many copies were read (tests pin that a warm reader's requests read none)."""

    thread_name = "memoir-index-copy"
    retry_after_failure = False  # False: a failed background read is not tried again before the next commit

    def __init__(self, connect: Callable | None = None):
        self._connect = connect  # `connect()`: a fresh read-only connection, for the background reads
        self.keep = False
        self.current = None
        self.loading: tuple | None = None
        self.reads = 0
        self._lock = threading.Lock()  # the recall service asks from one thread per connection

    def load(self, conn, version: tuple, held: bool):
        """The copy at `version` read on `conn`; `held`: a long-lived reader will keep it."""
        raise NotImplementedError

    def load_aside(self, conn, version: tuple):
        """The background read, on a connection of its own."""
        return self.load(conn, version, held=True)

    def read_now(self, conn, version: tuple):
        """Read now (warm-up), and from now on again in the background after a commit."""
        with self._lock:
            self.keep, self.current = True, None  # never two copies at once
            self.current = self.load(conn, version, held=True)
            self.reads += 1
            return self.current

    def _fresh(self, version: tuple):
        """The copy held at `version`, or None; call under the lock."""
        current = self.current
        return current if current is not None and current.version == version else None

    def _refresh_aside(self, version: tuple) -> None:
        """Start the background read of `version`, once per version; call under the lock."""
        if self.loading != version:
            self.loading = version
            threading.Thread(target=self._read, args=(version,), name=self.thread_name, daemon=True).start()

    def _read_in_request(self, conn, version: tuple):
        """Read on the request's connection, as nothing else can answer; call under the lock."""
        self.current = None  # never two copies at once
        self.current = self.load(conn, version, held=False)
        self.reads += 1
        return self.current

    def _read(self, version: tuple) -> None:
        """Its snapshot is at least as new as `version`; were it newer, the next request sees another
        version and reads again."""
        try:
            conn = self._connect()
            try:
                copy = self.load_aside(conn, version)
            finally:
                conn.close()
        except (apsw.Error, IndexFailure):
            copy = None  # the requests' own reads meet the failure and say why
        with self._lock:
            if self.loading == version:
                self.current = copy
                if copy is not None:
                    self.reads += 1
                if copy is not None or self.retry_after_failure:
                    self.loading = None
