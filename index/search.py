"""Deep search, the on-demand path: every card that matches, each labelled with its state and sources.

Recall (index/recall.py) injects at most two cards that pass every gate. Search is what a person
or an agent asks for on purpose, so it applies no gate but status: forgotten cards never appear,
superseded ones only when asked for, and every hit says what it is (active, superseded — naming
what replaced it —, candidate and the gate that held it back, incomplete), so a low-confidence
hit is never passed off as a settled one.

`search_cards` fuses three ranked lists by reciprocal rank: the card index's vector and lexical
matches, and the turn index's nearest sanitized turns (index/turns.py). A matched turn lends its
rank to every card whose source covers it, and rides along as that card's evidence; a matched turn
no returned card covers is listed among the turns, in the same top k. Cards summarise a loop,
but the answer to a question often sits in one turn of it, or in a turn no card was made from.

`search_turns` (`--turns`) is the lexical fallback over the same ledgered logs, read again
read-only and sanitized before they are matched or shown.

Whatever either returns passes the poisoning screen first (index/search_results.py, where the hit
records live). Hits weaker than `SEARCH_FLOOR` are left out and counted, unless the caller asks
for every one.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from memoir.cards.collect import CollectReport, collect_file
from memoir.cards.config import Settings
from memoir.cards.project_registry import workspace_test
from memoir.cards.forget import Tombstones, load_tombstones, tombstone_dir
from memoir.cards.ledger import LEDGER_FILE, Ledger, LedgerError
from memoir.cards.values import Card, Turn
from memoir.cards.sanitize import sanitize
from memoir.cards.store import CardStore
from memoir.cards.title import display_title
from memoir.index.candidates import MAX_QUERY_INPUT, RRF_K, fuse, query_terms, subject_terms
from memoir.index.chain_links import CardsOnDisk, newest_in_chain
from memoir.index.errors import IndexCorrupt, IndexFailure
from memoir.index.files import INDEX_FILE, TURNS_FILE
from memoir.index.rewrite import rewrite_query
from memoir.index.search_results import SearchHit, SearchResult, TurnHit, above_floor, screen_result
from memoir.index.turns import EMBEDDED_KINDS, Span, TurnIndex, TurnRow, WindowRow, covering, search_words

POOL_PER_HIT = 4  # each path fetches k × this many: status filtering cuts some, fusion reorders
MAX_POOL = 200
TURN_MIN_COVERAGE = 0.5  # share of query terms a turn must contain
SNIPPET_CHARS = 280
TURN_WEIGHT = 2.0  # a turn ranks like a card both card lists put at that rank: the turn is the evidence
WINDOW_WEIGHT = 2.0  # a window of turns counts like a single turn: it is the same talk, seen wider
STRENGTH_WEIGHT = 0.1  # a cosine of 0.5 weighs like rank 1 of both card lists (2/61 ≈ 0.033 vs 0.05)
EVIDENCE_PER_HIT = 2  # matched turns shown under a card: the best, and one more for context
# Hits whose best cosine to the query is below this are left out (and counted). `python -m bench.search
# --floor` (conversational set, k=20): every one of the 53 answer hits scores >= 0.35 (p05 0.37, p50 0.58),
# the other hits p50 0.20, p75 0.25; at 0.30 all answers stay and 87% of the rest go (94% at 0.35, so a
# margin for phrasings the set lacks). Recall's agreed_min_similarity is 0.30 too.
SEARCH_FLOOR = 0.30


QUERY_THREADS = 1  # torch threads for `memoir search`: on 2 cores a second thread saves ~2 ms per query when
# the box is idle and costs hundreds when the other core is busy (every layer waits for the descheduled
# thread): p95 of one query embedding 230-260 ms with two, 11-16 ms with one, under load (bench.search)


def search_embedder():
    """The embedder `memoir search` loads: the same model as the index, on `QUERY_THREADS` threads."""
    from memoir.index.embed import Embedder  # deferred: start-up

    return Embedder(threads=QUERY_THREADS)


class SearchUnavailable(IndexFailure):
    """There is nothing to search yet (no index); the message says which command makes one."""


# --- pure: states and ranking ----------------------------------------------------------------------


def state_of(card: Card) -> str | None:
    """The state search shows, or None for a card it must never show (forgotten)."""
    if card.status == "forgotten":
        return None
    if card.status == "superseded" or card.superseded_by.strip():
        return "superseded"
    return card.status if card.status in ("active", "candidate", "incomplete") else "candidate"


def plan_hits(fused: Mapping[str, dict], cards: Mapping[str, Card], *, k: int, include_superseded: bool = False,
              near: Callable[[str, str], bool] | None = None) -> tuple[list[SearchHit], int]:
    """Rank fused candidates by fused score; drop forgotten, missing and (unless asked) superseded cards.

    `cards` may load lazily (`CardsOnDisk`): a superseded card's chain is walked through it.
    Returns the hits and how many superseded matches were left out, so the caller can say so.
    """
    hits: list[SearchHit] = []
    hidden = 0
    for card_id, hit in sorted(fused.items(), key=lambda kv: (-kv[1].get("rrf", 0.0), kv[0])):
        card = cards.get(card_id)
        state = state_of(card) if card is not None else None
        if state is None:
            continue  # forgotten, or the file is gone (a hand delete means forget)
        if near is not None and card.workspace and not near(card.workspace, card.project):
            continue
        if state == "superseded" and not include_superseded:
            hidden += 1
            continue
        hits.append(SearchHit(
            id=card.id, state=state, title=display_title(card), conclusion=card.conclusion.strip(),
            counterexamples=card.counterexamples.strip(), sources=card.sources, workspace=card.workspace,
            updated=card.updated, score=hit.get("rrf", 0.0), similarity=hit.get("cosine"),
            gate=card.gate, replaced_by=newest_in_chain(card, cards) if state == "superseded" else "",
            confirmed_by=card.confirmed_by,
        ))
    return hits[:k], hidden


_WORD = re.compile(r"\w+")


def turn_coverage(terms: list[str], text: str) -> float:
    """Share of query terms present in the turn as whole words; 0 below two hits (one for a one-word query)."""
    if not terms:
        return 0.0
    words = set(_WORD.findall(text.lower()))
    hits = sum(1 for t in terms if t in words)
    return hits / len(terms) if hits >= min(2, len(terms)) else 0.0


def word_coverage(terms: list[str], text: str) -> float:
    """Share of the query's subject terms (`subject_terms`: no session-work words) the text holds as
    whole words; 0 below two hits (one for a one-term question). A turn that says the error code and
    the key a question names is evidence even when a small embedding model sees little in common."""
    subject = subject_terms(terms)
    if not subject:
        return 0.0
    words = set(_WORD.findall(text.lower()))
    hits = sum(1 for t in subject if t in words)
    return hits / len(subject) if hits >= min(2, len(subject)) else 0.0


def snippet(text: str, terms: list[str], width: int = SNIPPET_CHARS) -> str:
    """The part of `text` around the first query term, on one line."""
    flat = " ".join(text.split())
    low = flat.lower()
    at = min((i for t in terms if (i := low.find(t)) >= 0), default=0)
    start = max(0, at - width // 3)
    out = flat[start:start + width]
    return ("…" if start else "") + out + ("…" if start + width < len(flat) else "")


def match_turns(turns: Iterable[Turn], terms: list[str], *, k: int, near: Callable[[str, str], bool] | None = None,
                blob_cap: int) -> list[TurnHit]:
    """Turns that contain enough query terms, best coverage then newest first; each sanitized first.

    A cheap raw pre-filter picks the turns worth sanitizing; coverage and snippet are then computed
    on the sanitized text only, so nothing unsanitized is matched on or shown.
    """
    found: list[TurnHit] = []
    for t in turns:
        if t.kind == "thinking" or not t.text:
            continue
        if near is not None and t.cwd and not near(t.cwd, ""):
            continue
        if turn_coverage(terms, t.text) < TURN_MIN_COVERAGE:
            continue
        clean = sanitize(t.text, blob_cap)
        cover = turn_coverage(terms, clean)
        if cover < TURN_MIN_COVERAGE:
            continue
        found.append(TurnHit(t.host, t.session_id, t.source_file, t.line, t.seq, t.role, t.kind,
                             t.timestamp.isoformat() if t.timestamp else "", snippet(clean, terms), cover))
    found.sort(key=lambda h: (-h.coverage, _neg(h.timestamp), h.file, h.line))
    return found[:k]


@dataclass(frozen=True, slots=True)
class TurnMatch:
    """A turn the turn index ranked for the query: its rank (1 = nearest) and cosine, and for a turn
    the word index matched, the share of the query's subject terms it holds (`word_coverage`)."""

    row: TurnRow
    rank: int
    similarity: float
    words: float = 0.0


@dataclass(frozen=True, slots=True)
class WindowMatch:
    """A window of turns the turn index ranked for the query: its rank (1 = nearest) and cosine."""

    row: WindowRow
    rank: int
    similarity: float


def _nearest(rows: list, matrix: np.ndarray, vector: np.ndarray, k: int, keep: np.ndarray | None,
             place) -> list[tuple[int, float]]:
    """(row index, cosine) of the k nearest rows, best first, ties by `place(row)`; `keep` masks rows out."""
    if not rows or k <= 0:
        return []
    scores = matrix @ vector
    if keep is not None:
        scores = np.where(keep, scores, -np.inf)
    top = np.argpartition(-scores, min(k, len(rows) - 1))[:k] if len(rows) > k else np.arange(len(rows))
    order = sorted((int(i) for i in top if np.isfinite(scores[i])), key=lambda i: (-scores[i], place(rows[i])))
    return [(i, float(scores[i])) for i in order]


def nearest_turns(rows: list[TurnRow], matrix: np.ndarray, vector: np.ndarray, k: int, *,
                  keep: np.ndarray | None = None) -> list[TurnMatch]:
    """Brute-force cosine over the turn vectors, best first (ties by file and line); `keep` masks rows out."""
    found = _nearest(rows, matrix, vector, k, keep, lambda r: (r.file, r.line))
    return [TurnMatch(rows[i], n, score) for n, (i, score) in enumerate(found, 1)]


def fuse_turns(dense: Sequence[TurnMatch], lexical: Sequence[tuple[TurnRow, float]], terms: list[str],
               k: int) -> list[TurnMatch]:
    """One turn list from the nearest turns by meaning and the best by words (`lexical`: row and cosine,
    best bm25 first), by reciprocal rank: a turn both hold rises above one either holds alone. A word
    match counts only with a `word_coverage` (and carries it: the floor counts it beside the cosine)."""
    score, seen = {}, {}
    said = [m for m in (TurnMatch(r, 0, sim, word_coverage(terms, r.text)) for r, sim in lexical) if m.words]
    both = [*enumerate(dense, 1), *enumerate(said, 1)]  # one shared word ("webhook") is no word match
    for rank, m in both:
        key = (m.row.file, m.row.line, m.row.seq)
        score[key] = score.get(key, 0.0) + 1.0 / (RRF_K + rank)
        seen[key] = m if key not in seen or m.words else seen[key]
    order = sorted(score, key=lambda key: (-score[key], key))[:k]
    return [replace(seen[key], rank=n) for n, key in enumerate(order, 1)]


def nearest_windows(rows: list[WindowRow], matrix: np.ndarray, vector: np.ndarray, k: int, *,
                    keep: np.ndarray | None = None) -> list[WindowMatch]:
    """The same over the window vectors; of windows that overlap in one session only the nearer is kept."""
    taken: list[WindowRow] = []
    out: list[WindowMatch] = []
    for i, score in _nearest(rows, matrix, vector, k, keep, lambda r: (r.file, r.lo)):
        w = rows[i]
        if any(t.file == w.file and t.session_id == w.session_id and t.lo <= w.hi and w.lo <= t.hi for t in taken):
            continue
        taken.append(w)
        out.append(WindowMatch(w, len(out) + 1, score))
    return out


def window_covering(spans: Iterable[Span], w: WindowRow) -> list[str]:
    """Ids of the cards whose source overlaps the window's lines in its session."""
    return [s.card_id for s in spans if s.session_id == w.session_id and s.lo <= w.hi and w.lo <= s.hi]


def add_turn_ranks(fused: Mapping[str, dict], matches: list[TurnMatch], spans: Mapping[str, list[Span]],
                   windows: Sequence[WindowMatch] = ()) -> dict[str, dict]:
    """The card fusion plus the turn and window lists: each card gains the reciprocal rank of its best
    covering turn, and of its best overlapping window.

    Only the best turn counts, once: a card whose long source covers many middling turns must not
    outrank the card that holds the one turn that answers.
    """
    out = {card_id: dict(hit) for card_id, hit in fused.items()}
    for m in matches:
        for card_id in covering(spans.get(m.row.session_id, ()), m.row.session_id, m.row.line):
            hit = out.setdefault(card_id, {"rrf": 0.0})
            if "turn_rank" not in hit:
                hit.update(turn_rank=m.rank, rrf=hit["rrf"] + TURN_WEIGHT / (RRF_K + m.rank))
    for w in windows:
        for card_id in window_covering(spans.get(w.row.session_id, ()), w.row):
            hit = out.setdefault(card_id, {"rrf": 0.0})
            if "window_rank" not in hit:
                hit.update(window_rank=w.rank, rrf=hit["rrf"] + WINDOW_WEIGHT / (RRF_K + w.rank))
    return out


def turn_hit(m: TurnMatch, terms: list[str], score: float) -> TurnHit:
    r = m.row
    return TurnHit(r.host, r.session_id, r.file, r.line, r.seq, r.role, r.kind, r.timestamp,
                   snippet(r.text, terms), turn_coverage(terms, r.text), m.similarity, score, words=m.words)


def window_hit(m: WindowMatch, terms: list[str], score: float) -> TurnHit:
    w = m.row
    return TurnHit(w.host, w.session_id, w.file, w.lo, w.first_seq, "session", "window", "",
                   snippet(w.text, terms), turn_coverage(terms, w.text), m.similarity, score, end_line=w.hi)


def merge_turns(hits: list[SearchHit], matches: list[TurnMatch], spans: Mapping[str, list[Span]],
                terms: list[str], *, k: int, windows: Sequence[WindowMatch] = ()) -> tuple[list[SearchHit], list[TurnHit]]:
    """One top k of cards, turns and windows by fused score: a matched turn becomes evidence of the hits
    that cover it, and a turn of its own only when no hit does; a window no hit overlaps is listed by
    its file and lines (a forgotten card's turns are masked before)."""
    shown = {h.id for h in hits}
    evidence: dict[str, list[TurnHit]] = {}
    loose: list[TurnHit] = []
    for m in matches:
        ids = [i for i in covering(spans.get(m.row.session_id, ()), m.row.session_id, m.row.line) if i in shown]
        score = TURN_WEIGHT / (RRF_K + m.rank)
        for card_id in ids:
            evidence.setdefault(card_id, []).append(turn_hit(m, terms, score))
        if not ids:
            loose.append(turn_hit(m, terms, score))
    for w in windows:
        if not any(i in shown for i in window_covering(spans.get(w.row.session_id, ()), w.row)):
            loose.append(window_hit(w, terms, WINDOW_WEIGHT / (RRF_K + w.rank)))
    def strength(h) -> float:
        sims = [h.similarity] + [t.similarity for t in evidence.get(getattr(h, "id", ""), ())]
        return max((x for x in sims if x is not None), default=0.0)

    # Rank places alone would let a card both card lists put first outrank a window much nearer the
    # question in meaning; each hit's own nearness to the query counts beside its fused rank.
    both = [(h.score + STRENGTH_WEIGHT * strength(h), 0, n, h) for n, h in enumerate(hits)] + [
        (t.score + STRENGTH_WEIGHT * strength(t), 1, n, t) for n, t in enumerate(loose)]
    ranked = sorted(both, key=lambda x: (-x[0], x[1], x[2]))[:k]  # a card before a turn on a tie
    cards = [h if h.id not in evidence else replace(h, evidence=tuple(evidence[h.id][:EVIDENCE_PER_HIT]))
             for _, kind, _, h in ranked if kind == 0]
    return cards, [t for _, kind, _, t in ranked if kind == 1]


def _neg(ts: str) -> tuple:
    return tuple(-ord(ch) for ch in ts)


# --- I/O ---------------------------------------------------------------------------------------------


def clean_query(settings: Settings, query: str) -> tuple[str, str]:
    """(sanitized query, what is searched): the raw text is never logged, searched or echoed."""
    clean = sanitize(query[:MAX_QUERY_INPUT], settings.blob_cap)
    return clean, rewrite_query(clean) or clean.strip()


def search_cards(settings: Settings, query: str, *, embedder, k: int = 10, workspace: str = "",
                 include_superseded: bool = False, index=None, floor: float = SEARCH_FLOOR) -> SearchResult:
    """Hybrid search (vector KNN + FTS5, fused by rank) over the index, labelled hits from the card files.

    Args:
        settings: where the index and cards live.
        query: raw text; sanitized before anything else sees it.
        embedder: `index.embed.Embedder` (loaded on first use).
        k: hits at most.
        workspace: keep only cards of this workspace, one inside it or one it lies inside.
        include_superseded: also return superseded cards (always labelled, naming their replacement).
        index: an open `index.db.Index` to reuse (the MCP server keeps one); opened here otherwise.
        floor: of the top k, hits whose best cosine is below this are left out and counted (0: none).

    Raises:
        SearchUnavailable: no index file yet.
    """
    from memoir.index.db import open_index  # deferred: start-up

    clean, text = clean_query(settings, query)
    if not text:
        return SearchResult(clean)
    path = Path(settings.index_dir) / INDEX_FILE
    own = index is None
    if own:
        if not path.exists():
            raise SearchUnavailable(f"no index at {path}; run `memoir run` (or `memoir index rebuild`)")
        index = open_index(settings.index_dir, embedder, busy_timeout_ms=2000)
    store = CardStore(settings.cards_dir, settings.state_dir)
    near = workspace_test(settings.state_dir, workspace)  # of its project: a worktree's or clone's cards too
    problems: list[str] = []
    try:
        pool = min(MAX_POOL, max(1, k) * POOL_PER_HIT)
        vector = embedder.encode_one(text)
        rows = index.scope(near) if near is not None else None  # the workspace's rows alone (index/places.py)
        fused = fuse(index.knn(vector, pool, within=rows), index.fts(text, pool, within=rows))
        need = [i for i, h in fused.items() if "cosine" not in h]
        for card_id, vec in index.vectors(need).items():
            fused[card_id]["cosine"] = float(vec @ vector)
        turns = load_turns(settings, embedder, index, store, problems)
    except UnicodeDecodeError as exc:  # a stored text with bad bytes: the file is damaged, not the query
        raise IndexCorrupt(f"index {path} holds damaged text ({exc}); `memoir run` or "
                           "`memoir index rebuild` rebuilds it from the card files") from exc
    finally:
        if own:
            index.close()
    matches: list[TurnMatch] = []
    near_windows: list[WindowMatch] = []
    spans: Mapping[str, list[Span]] = {}
    if turns is not None:
        rows, matrix, spans, hidden_rows, windows, wmatrix, hidden_windows, at, embedded = turns
        keep, wkeep = ~hidden_rows, ~hidden_windows
        if near is not None:
            keep = keep & np.array([not r.cwd or near(r.cwd, "") for r in rows], dtype=bool)
            wkeep = wkeep & np.array([not w.cwd or near(w.cwd, "") for w in windows], dtype=bool)
        matches = nearest_turns(rows, matrix, vector, pool, keep=keep & embedded)  # only turns with vectors of their own
        found = [at[(f, line, seq)] for f, line, seq, _ in search_words(settings.state_dir, text, pool)
                 if (f, line, seq) in at]
        lexical = [(rows[i], float(matrix[i] @ vector)) for i in found if keep[i]]
        matches = fuse_turns(matches, lexical, query_terms(text), pool)
        near_windows = nearest_windows(windows, wmatrix, vector, pool, keep=wkeep)
        fused = add_turn_ranks(fused, matches, spans, near_windows)
    cards = CardsOnDisk(store, problems=problems)
    for card_id in fused:
        cards.get(card_id)
    hits, hidden = plan_hits(fused, cards, k=len(fused), include_superseded=include_superseded, near=near)
    hits, loose = merge_turns(hits, matches, spans, query_terms(text), k=k, windows=near_windows)
    hits, loose, weak = above_floor(hits, loose, floor)
    hits = [replace(h, path=str(store.path_for(h.id))) for h in hits]
    return screen_result(SearchResult(clean, tuple(hits), tuple(loose), hidden_superseded=hidden,
                                      problems=tuple(problems), hidden_weak=weak, floor=floor))


_TURNS_CACHE: dict[Path, tuple[tuple, tuple]] = {}  # state dir -> (stamp, loaded): one load per change


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def load_turns(settings: Settings, embedder, index, store: CardStore, problems: list[str]):
    """(turn rows, their vectors, card spans by session, rows a tombstone hides), loaded again only
    when the ledger's entries, the card index's meta or the tombstones changed since the last load in
    this process; None when no log was ever read or the turn index cannot be used (cards alone answer).

    The stamp is read from the content (ledger rows, the index's `updated_at` and card count), never
    from SQLite's file times: opening and closing a WAL database changes those on every search.
    """
    state = Path(settings.state_dir)
    ledger_path = state / LEDGER_FILE
    if not ledger_path.exists():
        return None
    try:
        with Ledger(ledger_path) as ledger:
            ledgered = ledger.as_read()

        def stamp() -> tuple:
            return (embedder.model_id, settings.blob_cap, tuple(sorted(ledgered.items())),
                    tuple(sorted(index.meta().items())), _mtime(tombstone_dir(store)), (state / TURNS_FILE).exists())

        cached = _TURNS_CACHE.get(state)
        if cached and cached[0] == stamp():
            return cached[1]
        turn_index = TurnIndex(state, embedder.model_id)
        try:
            refresh = turn_index.refresh_files(ledgered, embedder, settings.blob_cap)
            problems.extend(refresh.problems)
            problems.extend(turn_index.refresh_spans(index.hashes(), store))
            rows, matrix, spans = turn_index.load()
            windows, wmatrix = turn_index.load_windows()
        finally:
            turn_index.close()
    except (sqlite3.Error, LedgerError) as exc:
        problems.append(f"turn index at {state / TURNS_FILE} unusable ({exc}); delete it to rebuild from the logs")
        return None
    # A forgotten card's turns stay forgotten here too: memoir never shows them again.
    tombstones, _ = load_tombstones(store)
    gone = Tombstones.of(tombstones)
    hidden = np.array([any(lo <= r.seq <= hi for _, (lo, hi) in gone.ranges.get((r.host, r.session_id), ()))
                       for r in rows], dtype=bool)
    hidden_windows = np.array([any(lo <= w.last_seq and w.first_seq <= hi
                                   for _, (lo, hi) in gone.ranges.get((w.host, w.session_id), ())) for w in windows],
                              dtype=bool)
    at = {(r.file, r.line, r.seq): i for i, r in enumerate(rows)}  # a word match's row, by its place
    embedded = np.array([r.kind in EMBEDDED_KINDS for r in rows], dtype=bool)  # the others carry their window's vector
    loaded = (rows, matrix, spans, hidden, windows, wmatrix, hidden_windows, at, embedded)
    if refresh.left:
        # Not cached: the next search in this process embeds the next batch.
        problems.append(f"{refresh.pending + refresh.windows_pending} session turns and windows are not searchable "
                        "yet; the next searches embed them")
    else:
        _TURNS_CACHE[state] = (stamp(), loaded)  # after the refresh: it may have made turns.sqlite
    return loaded


def search_turns(settings: Settings, query: str, *, k: int = 10, workspace: str = "") -> SearchResult:
    """Raw turns of every log file in the read ledger that match the query, sanitized.

    The logs are opened read-only from the start (no ledger is written); a file gone since its
    read is skipped and named in `problems`; turns a tombstone covers are never shown.
    """
    clean, text = clean_query(settings, query)
    terms = query_terms(text)
    ledger_path = Path(settings.state_dir) / LEDGER_FILE
    if not terms or not ledger_path.exists():
        return SearchResult(clean)
    with Ledger(ledger_path) as ledger:
        entries = ledger.entries()
    out = CollectReport()
    problems = []
    for entry in entries:
        before = out.skipped["unreadable"]
        collect_file(Path(entry.path), entry.host, None, out)
        if out.skipped["unreadable"] > before:
            problems.append(f"{entry.path}: unreadable or gone since it was read")
    # A forgotten card's turns stay forgotten here too: memoir never shows them again.
    gone = Tombstones.of(load_tombstones(CardStore(settings.cards_dir, settings.state_dir))[0])
    turns = (t for session in out.sessions.values() for t in session if not gone.covers_turn(t))
    near = workspace_test(settings.state_dir, workspace)
    hits = match_turns(turns, terms, k=k, near=near, blob_cap=settings.blob_cap)
    return screen_result(SearchResult(clean, turns=tuple(hits), problems=tuple(problems)))


