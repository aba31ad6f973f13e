"""What recall reads besides the vectors: card files (as the index stored them, or parsed), and the
lexical side of a query, on a thread of its own while the model embeds it."""

from __future__ import annotations

import os
import queue
import threading
import zlib

from memoir.cards.store import CardFileError, content_hash, parse_card
from memoir.cards.values import Card
from memoir.index.candidates import FTS_K, distinctive_terms
from memoir.index.card_fields import card_of_blob, stored_cards
from memoir.index.plan import retrieval_text

PARSED_CARDS_MAX = 20_000  # parsed cards a recaller keeps (~2 KB each): every candidate of a day's prompts


class CardReader:
    """Card files by id, each parsed once per version of its file: parsing the front matter was a
    quarter of a warm recall's CPU, and a long-lived service reads the same cards again and again.
    A hand edit changes the file's mtime or size, so it is read afresh."""

    def __init__(self, cards_dir):
        self._dir = str(cards_dir)
        self._parsed: dict[str, tuple[tuple[int, int, int], Card, str]] = {}
        self._lock = threading.Lock()

    def _path(self, card_id: str) -> str:
        return f"{self._dir}{os.sep}{card_id}.md"  # `CardStore.path_for`, without pathlib's ~10 us

    def read(self, card_id: str, stored: dict[str, tuple[str, bytes]] | None = None) -> tuple[Card, str]:
        """The card and its retrieval text. `stored` (from `card_fields.stored_cards`) holds cards as
        the index parsed them: one is taken only when the file's bytes, read now, still hash to the
        hash it was parsed from. Raises OSError, UnicodeDecodeError or CardFileError."""
        path = self._path(card_id)
        with open(path, "rb") as fh:  # FileNotFoundError: a card deleted by hand
            st = os.fstat(fh.fileno())
            key = (st.st_mtime_ns, st.st_size, st.st_ino)
            found = self._parsed.get(card_id)
            if found is not None and found[0] == key:
                return found[1], found[2]
            data = fh.read()
        card = None
        kept = (stored or {}).get(card_id)
        # A file with a carriage return reads as `CardStore.read` reads it (newlines translated),
        # which the index's parse of its raw bytes may not match: that one is parsed here.
        if kept is not None and b"\r" not in data and kept[0] == content_hash(data):
            try:
                card = card_of_blob(kept[1])
            except (ValueError, KeyError, TypeError, zlib.error):
                card = None  # a damaged blob: the file says what the card is
        if card is None:
            text = data.decode("utf-8")
            card = parse_card(text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text, origin=path)
        text = retrieval_text(card)
        with self._lock:
            if len(self._parsed) >= PARSED_CARDS_MAX:
                self._parsed.pop(next(iter(self._parsed)))  # the oldest entry: a bounded cache, not an LRU
            self._parsed[card_id] = (key, card, text)
        return card, text

    def fresh(self, card_id: str) -> bool:
        """Whether the parsed copy kept in memory is of the file as it stands (no index read needed)."""
        found = self._parsed.get(card_id)
        if found is None:
            return False
        try:
            st = os.stat(self._path(card_id))
        except OSError:
            return False
        return found[0] == (st.st_mtime_ns, st.st_size, st.st_ino)


Read = tuple[Card, str] | Exception  # a card and its retrieval text, or why it could not be read


def words_side(words, text: str, terms: list[str], reader: CardReader | None = None, within=None
               ) -> tuple[list[tuple[str, float]], list[str], dict[str, Read]]:
    """What recall asks of the lexical index: the best matches by bm25 (among `within`'s rows, if
    given), the query's distinctive terms, and (with `reader`) those matches' cards, read while the
    model still embeds the query: every lexical hit is a candidate, so its card is read either way."""
    fts = words.fts(text, FTS_K, within)
    rare = distinctive_terms(words.conn, terms)
    return fts, rare, (read_ahead(reader, words.conn, [i for i, _ in fts]) if reader is not None else {})


def taken(read: Read | None) -> tuple[Card, str] | None:
    """A card `read_ahead` read: it, or its failure raised now; None when it was not read there."""
    if isinstance(read, Exception):
        raise read
    return read


def read_ahead(reader: CardReader, conn, ids: list[str]) -> dict[str, Read]:
    """`reader.read` of each id, its failure kept in place of the card (the caller decides)."""
    stored = stored_cards(conn, [i for i in ids if not reader.fresh(i)])
    out: dict[str, Read] = {}
    for card_id in ids:
        try:
            out[card_id] = reader.read(card_id, stored)
        except (OSError, UnicodeDecodeError, CardFileError) as exc:
            out[card_id] = exc
    return out


class Aside:
    """`fn(*args)` on a kept daemon thread; `result()` waits for it and raises what it raised.

    Kept threads, not one started per call: `Thread.start` returns only once the new thread has run,
    which on two busy cores held the recall ~2 ms (p50) before the model could start embedding.
    A call that finds every kept thread busy (concurrent recalls) starts one more, so no lexical
    search ever queues behind another's; daemon threads, so none keeps the process alive at exit."""

    def __init__(self, fn, *args):
        self._box: dict = {}
        self._done = threading.Event()
        _hand_over(lambda: self._run(fn, args))

    def _run(self, fn, args) -> None:
        try:
            self._box["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller of result()
            self._box["error"] = exc
        finally:
            self._done.set()

    def result(self):
        self._done.wait()
        if "error" in self._box:
            raise self._box["error"]
        return self._box["value"]


_jobs: queue.SimpleQueue = queue.SimpleQueue()
_idle = 0  # kept threads waiting on `_jobs` and not yet promised a job
_idle_lock = threading.Lock()


def _hand_over(job) -> None:
    """`job` to an idle kept thread, or to a new one when none is idle."""
    global _idle
    with _idle_lock:
        spare = _idle > 0
        if spare:
            _idle -= 1
    if spare:
        _jobs.put(job)
    else:
        threading.Thread(target=_keep_running, args=(job,), name="memoir-recall-words", daemon=True).start()


def _keep_running(job) -> None:
    global _idle
    while True:
        job()
        job = None  # drop the finished job's references before waiting
        with _idle_lock:
            _idle += 1
        job = _jobs.get()
