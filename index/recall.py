"""Recall, the synchronous path: a prompt in, at most `max_injected` cards out, within a deadline.

sanitize → rewrite → candidates from both paths (vector KNN and FTS5) → read the card files →
gates → at most two cards. Every recall appends one debug record to `state/recall.jsonl`.

Three rules shape this module:
- the raw query is never logged or searched: it is sanitized before anything else sees it;
- the caller never gets an exception and never waits past the deadline: the work runs in a
  daemon thread, and on timeout or failure the answer is empty and the reason is logged;
- without a warm model the answer is lexical-only (FTS5 through apsw), and that path imports
  neither numpy nor torch, so a hook process can afford it.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from memoir.cards.config import Settings
from memoir.cards.values import SECTIONS, Card, Source
from memoir.cards.sanitize import sanitize
from memoir.cards.sanitize.fields import sanitize_value
from memoir.cards.signatures import error_signature
from memoir.cards.store import CardFileError, CardStore
from memoir.index.recall_gates import (
    INJECTED, Candidate, GatePolicy, Judgement, RecallQuery, fast_changing_fact, judge,
    prefer_newer, take_place, workspaces_near,
)
from memoir.index.plan import choose_fts_terms, fts_match_expression, fts_terms, quote_terms, retrieval_text, term_tokens
from memoir.index.rewrite import query_task_type, rewrite_query

INDEX_FILE = "index.db"  # index.db's INDEX_FILE; repeated so the lexical path need not import numpy
KNN_K = 8  # nearest cards by vector; more only adds candidates the similarity gate rejects
FTS_K = 8  # best lexical matches
RRF_K = 60  # reciprocal-rank fusion constant (Cormack et al.): damps the weight of rank 1
MAX_QUERY_INPUT = 50_000  # chars of prompt sanitized at most; a pasted log beyond this adds nothing
# A lexical match (no warm model) needs GatePolicy.min_lexical of the query terms, and at least this
# many, so a single shared word never suffices.
LEXICAL_MIN_TERMS = 2
LOG_FILE = "recall.jsonl"
LOG_MAX_BYTES = 5_000_000  # then rotated once to recall.jsonl.1
PARSED_CARDS_MAX = 20_000  # parsed cards a recaller keeps (~2 KB each): every candidate of a day's prompts
SESSIONS_DIR = "recall-sessions"
SESSION_TTL_S = 3 * 24 * 3600  # per-session injected ids are pruned after this long untouched
BRIEF_CARDS = 30  # newest cards of a workspace a session brief looks at
READ_BUSY_MS = 50  # a reader never waits long on a lock: the deadline is 300 ms in all


# --- results ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecalledCard:
    """A card that passed every gate, with only what the immediate-context container may show."""

    id: str
    conclusion: str
    counterexamples: str
    sources: tuple[Source, ...]
    score: float
    age_days: float | None

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "conclusion": self.conclusion,
            "counterexamples": self.counterexamples,
            "sources": [{"session_id": s.session_id, "file": s.file, "lines": list(s.lines)} for s in self.sources],
            "score": round(self.score, 4),
            "age_days": None if self.age_days is None else round(self.age_days, 1),
        }


@dataclass(frozen=True)
class RecallResult:
    """What one recall answered; `record` is the debug record written to `state/recall.jsonl`."""

    query: str  # sanitized, never the raw prompt
    cards: tuple[RecalledCard, ...] = ()
    rejected: tuple[tuple[str, str], ...] = ()  # (card id, gate name)
    elapsed_ms: float = 0.0
    outcome: str = "empty"  # injected | empty | timeout | error
    reason: str = ""
    record: dict = field(default_factory=dict, compare=False)

    def to_json(self) -> dict:
        """Exactly the fields `memoir recall --json` prints."""
        return {
            "query": self.query,
            "cards": [c.to_json() for c in self.cards],
            "rejected": [{"id": i, "gate": g} for i, g in self.rejected],
            "elapsed_ms": round(self.elapsed_ms, 1),
        }

    @classmethod
    def from_json(cls, data: dict, record: dict | None = None) -> RecallResult:
        """The inverse of `to_json` (the recall service sends results this way)."""
        cards = tuple(
            RecalledCard(
                id=c["id"], conclusion=c["conclusion"], counterexamples=c["counterexamples"],
                sources=tuple(Source(s["session_id"], "", s["file"], tuple(s["lines"]), (0, 0)) for s in c["sources"]),
                score=float(c["score"]), age_days=c["age_days"],
            )
            for c in data.get("cards", ())
        )
        record = record or {}
        return cls(
            query=data.get("query", ""), cards=cards,
            rejected=tuple((r["id"], r["gate"]) for r in data.get("rejected", ())),
            elapsed_ms=float(data.get("elapsed_ms", 0.0)),
            outcome=record.get("outcome", "injected" if cards else "empty"),
            reason=record.get("reason", ""), record=record,
        )


# --- pure helpers -------------------------------------------------------------------------------


def parse_time(value: str) -> datetime | None:
    if not value:
        return None
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def age_days(card: Card, now: datetime) -> float | None:
    """Days since the card was last updated (created if never); None when undated."""
    t = parse_time(card.updated) or parse_time(card.created)
    return None if t is None else max(0.0, (now - t).total_seconds() / 86400)


def fuse(knn: list[tuple[str, float]], fts: list[tuple[str, float]]) -> dict[str, dict]:
    """Reciprocal-rank fusion: order by rank in each list, never by adding cosine to bm25."""
    out: dict[str, dict] = {}
    for rank, (card_id, score) in enumerate(knn, 1):
        out.setdefault(card_id, {"rrf": 0.0})
        out[card_id].update(knn_rank=rank, cosine=score)
        out[card_id]["rrf"] += 1.0 / (RRF_K + rank)
    for rank, (card_id, score) in enumerate(fts, 1):
        out.setdefault(card_id, {"rrf": 0.0})
        out[card_id].update(fts_rank=rank, bm25=score)
        out[card_id]["rrf"] += 1.0 / (RRF_K + rank)
    return out


_WORDS = re.compile(r"\w+")
_QUOTED = re.compile(r'"((?:[^"]|"")*)"')


def query_terms(text: str) -> list[str]:
    """The word tokens the FTS path searches for (its stopwords dropped), lowercased and unique."""
    terms: list[str] = []
    for quoted in _QUOTED.findall(fts_match_expression(text) or ""):
        for word in _WORDS.findall(quoted.replace('""', '"').lower()):
            if word not in terms:
                terms.append(word)
    return terms


def lexical_coverage(terms: list[str], card_text: str) -> float:
    """Share of query terms found in the card's retrieval text; 0 below `LEXICAL_MIN_TERMS` hits."""
    if not terms:
        return 0.0
    words = set(_WORDS.findall(card_text.lower()))
    hits = sum(1 for t in terms if t in words)
    return hits / len(terms) if hits >= LEXICAL_MIN_TERMS else 0.0


def candidate_from(card: Card, hit: dict, similarity: float, now: datetime, hand_edited: bool = False) -> Candidate:
    return Candidate(
        id=card.id, status=card.status, quality=card.quality, gate=card.gate, task_type=card.task_type,
        workspace=card.workspace, topics=card.topics, error_signature=card.error_signature,
        superseded_by=card.superseded_by, conclusion=card.conclusion, counterexamples=card.counterexamples,
        body="\n".join(card.section(s) for s in SECTIONS),
        age_days=age_days(card, now), similarity=similarity, confirmed_by=card.confirmed_by,
        hand_edited=hand_edited, verified=bool(card.verified_by.strip()), coverage=hit.get("coverage", 0.0),
        rrf=hit.get("rrf", 0.0),
        knn_rank=hit.get("knn_rank"), fts_rank=hit.get("fts_rank"), bm25=hit.get("bm25"),
    )


def missing_card(card_id: str) -> Card:
    # A card file deleted by hand means "forget it" (DESIGN.md §8): the stale row must not recall it.
    return Card(id=card_id, status="forgotten")


# --- the lexical-only index (no numpy, no torch, no sqlite-vec) ------------------------------------


class LexicalIndex:
    """FTS5 over the index file through plain apsw: the answer when no model is warm."""

    def __init__(self, path: Path):
        import apsw

        self.path = Path(path)
        self.conn = apsw.Connection(str(self.path), flags=apsw.SQLITE_OPEN_READONLY)
        self.conn.set_busy_timeout(READ_BUSY_MS)

    def fts(self, text: str, k: int = FTS_K) -> list[tuple[str, float]]:
        """`Index.fts` without sqlite-vec: the same rarer-terms selection, the same bm25 ranking."""
        import apsw

        terms = fts_terms(text)
        if not terms or k <= 0:
            return []
        try:
            expr = quote_terms(choose_fts_terms([(t, self._doc_count(t)) for t in terms]))
            if expr is None:
                return []
            sql = ("SELECT c.id, -f.rank FROM (SELECT rowid, rank FROM fts_cards WHERE fts_cards MATCH ? "
                   "ORDER BY rank LIMIT ?) AS f JOIN cards AS c ON c.n = f.rowid ORDER BY f.rank, c.id")
            return [(i, float(s)) for i, s in self.conn.execute(sql, (expr, k))]
        except apsw.SQLError:
            return []  # user text FTS5 still rejects: a lexical miss, never a failed recall

    def _doc_count(self, term: str) -> int:
        counts = []
        for token in term_tokens(term):
            row = self.conn.execute("SELECT doc FROM fts_vocab WHERE term = ?", (token,)).fetchall()
            counts.append(row[0][0] if row else 0)
        return min(counts, default=0)

    def close(self) -> None:
        self.conn.close()


def recent_card_ids(conn, workspace: str, limit: int) -> list[str]:
    """Newest active or incomplete cards of this workspace, one inside it, or one it lies inside."""
    ws = workspace.rstrip("/") or "/"
    like = ws.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%"
    sql = ("SELECT id FROM cards WHERE status IN ('active', 'incomplete') AND (workspace = ? "
           "OR workspace LIKE ? ESCAPE '\\' "
           "OR (workspace != '' AND substr(?, 1, length(workspace) + 1) = workspace || '/')) "
           "ORDER BY updated DESC, id LIMIT ?")
    return [i for (i,) in conn.execute(sql, (ws, like, ws, limit))]


def brief_cards(recaller: Recaller, workspace: str, limit: int = BRIEF_CARDS) -> list[Card]:
    """The cards a session brief for `workspace` draws on: through the index, or the files if none."""
    try:
        ids = recent_card_ids(recaller.index().conn, workspace, limit)
    except FileNotFoundError:
        cards, _ = recaller.store.load_all()
        return [c for c in cards if c.workspace and workspaces_near(workspace, c.workspace)]
    out = []
    for card_id in ids:
        try:
            out.append(recaller.store.read(card_id))
        except (OSError, UnicodeDecodeError, CardFileError):
            continue
    return out


# --- session memory and the debug log (the only writes recall makes) ----------------------------------


def _session_path(state_dir: Path, session_id: str) -> Path:
    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return Path(state_dir) / SESSIONS_DIR / f"{digest}.json"


def injected_in_session(state_dir: Path, session_id: str) -> frozenset[str]:
    """Card ids already injected into this host session (empty without a session id)."""
    if not session_id:
        return frozenset()
    try:
        data = json.loads(_session_path(state_dir, session_id).read_text(encoding="utf-8"))
        return frozenset(data.get("injected", {}))
    except (OSError, ValueError, AttributeError):
        return frozenset()


def remember_injected(state_dir: Path, session_id: str, ids: Iterable[str], now: float | None = None) -> None:
    """Add ids to the session's file (small JSON, atomic replace) and prune sessions gone quiet."""
    ids = list(ids)
    if not session_id or not ids:
        return
    now = time.time() if now is None else now
    path = _session_path(state_dir, session_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    injected = dict(data.get("injected", {}))
    injected.update({i: round(now, 3) for i in ids})
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"injected": injected}, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)
    prune_sessions(state_dir, now)


def prune_sessions(state_dir: Path, now: float) -> int:
    gone = 0
    for p in (Path(state_dir) / SESSIONS_DIR).glob("*.json"):
        try:
            if now - p.stat().st_mtime > SESSION_TTL_S:
                p.unlink()
                gone += 1
        except OSError:
            pass
    return gone


def log_path(state_dir: Path) -> Path:
    return Path(state_dir) / LOG_FILE


def append_record(state_dir: Path, record: dict) -> None:
    """One JSON line per recall, appended in one write; rotated once past `LOG_MAX_BYTES`.

    Every string of the record is sanitized here again, as every writer under the home does: the
    query was sanitized first thing, but candidates' titles, paths and errors took other ways in.
    """
    record = sanitize_value(record)
    path = log_path(state_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if path.stat().st_size > LOG_MAX_BYTES:
            os.replace(path, path.with_name(LOG_FILE + ".1"))
    except OSError:
        pass
    line = (json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read_records(state_dir: Path, last: int = 1) -> list[dict]:
    """The newest `last` debug records, oldest first (reads only the file's tail)."""
    path = log_path(state_dir)
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 256_000 * last))
            lines = fh.read().splitlines()
    except OSError:
        return []
    out = []
    for raw in lines[-last:]:
        try:
            out.append(json.loads(raw))
        except ValueError:
            continue
    return out


# --- the engine -------------------------------------------------------------------------------------


class _Progress:
    """What the worker has done so far, readable by the caller when the deadline passes."""

    def __init__(self):
        self.stage = "start"
        self.query = ""
        self.rewritten = ""
        self.timings: dict[str, float] = {}
        self._t = time.perf_counter()

    def mark(self, stage: str) -> None:
        now = time.perf_counter()
        self.timings[self.stage] = round((now - self._t) * 1000, 2)
        self.stage, self._t = stage, now


@dataclass
class _Plan:
    mode: str
    task_type: str
    judgements: list[Judgement]
    reason: str = ""
    cards: dict[str, Card] = field(default_factory=dict)


_workers: set[threading.Thread] = set()
_workers_lock = threading.Lock()


def wait_for_workers(timeout: float) -> bool:
    """Wait up to `timeout` s for recall workers that outlived their deadline; True when none is left.

    A worker abandoned at the deadline may still be inside torch; a process that exits under it
    aborts in C++, so a short-lived caller waits here or leaves with `os._exit` after flushing.
    """
    end = time.monotonic() + timeout
    while True:
        with _workers_lock:
            alive = [t for t in _workers if t.is_alive()]
        if not alive:
            return True
        left = end - time.monotonic()
        if left <= 0:
            return False
        alive[0].join(left)


class Deadline(Exception):
    """The worker noticed the deadline between stages and stopped."""


class Recaller:
    """Holds the warm pieces between recalls: the embedder, the open index, the card store.

    Args:
        settings: resolved settings (budget, limits, directories).
        embedder: an `index.embed.Embedder` for the semantic path; None means lexical-only, and
            then neither numpy nor torch is imported.
    """

    def __init__(self, settings: Settings, embedder=None):
        self.settings = settings
        self.embedder = embedder
        self.store = CardStore(settings.cards_dir, settings.state_dir)
        self.policy = GatePolicy.from_settings(settings)
        self._index = None
        self._index_id: tuple[int, int] | None = None
        self._lock = threading.Lock()
        self._parsed: dict[str, tuple[tuple[int, int, int], Card, str]] = {}

    @property
    def mode(self) -> str:
        return "semantic" if self.embedder is not None else "lexical"

    @property
    def index_path(self) -> Path:
        return Path(self.settings.index_dir) / INDEX_FILE

    def close(self) -> None:
        with self._lock:
            if self._index is not None:
                self._index.close()
                self._index = None

    def __enter__(self) -> Recaller:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def index(self):
        """The open index, reopened when the file was replaced (a rebuild swaps in a new one)."""
        st = os.stat(self.index_path)  # FileNotFoundError: no index yet
        ident = (st.st_dev, st.st_ino)
        with self._lock:
            if self._index is not None and self._index_id == ident:
                return self._index
            if self._index is not None:
                self._index.close()
            if self.embedder is None:
                self._index = LexicalIndex(self.index_path)
            else:
                from memoir.index.db import open_index

                self._index = open_index(self.settings.index_dir, self.embedder, busy_timeout_ms=READ_BUSY_MS)
            self._index_id = ident
            return self._index

    def read_card(self, card_id: str) -> tuple[Card, str]:
        """The card and its retrieval text, parsed once per version of its file: parsing the front
        matter was a quarter of a warm recall's CPU, and a long-lived service reads the same cards
        again and again. A hand edit changes the file's mtime or size, so it is read afresh."""
        path = self.store.path_for(card_id)
        st = os.stat(path)  # FileNotFoundError: a card deleted by hand
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
        found = self._parsed.get(card_id)
        if found is not None and found[0] == key:
            return found[1], found[2]
        card = self.store.read(card_id)
        text = retrieval_text(card)
        with self._lock:
            if len(self._parsed) >= PARSED_CARDS_MAX:
                self._parsed.pop(next(iter(self._parsed)))  # the oldest entry: a bounded cache, not an LRU
            self._parsed[card_id] = (key, card, text)
        return card, text

    # -- the public call -------------------------------------------------------------------------

    def recall(self, query: str, *, workspace: str = "", session_id: str = "", now: datetime | None = None,
               budget_ms: float | None = None) -> RecallResult:
        """At most `max_injected` cards for `query`; never raises, never waits past the budget.

        Args:
            query: the raw prompt; it is sanitized before it is logged or searched.
            workspace: the directory the prompt comes from (for `TooFarFromWorkspace`).
            session_id: the host session (for `AlreadyInjected`); '' disables that memory.
            now: the clock for card ages (tests and the retrieval set pin it).
            budget_ms: the deadline; `settings.sync_timeout_ms` by default. A cold model's
                load counts against it.
        """
        started = time.perf_counter()
        budget = float(self.settings.sync_timeout_ms if budget_ms is None else budget_ms)
        deadline = started + budget / 1000
        now = now or datetime.now(timezone.utc)
        cold = self.embedder is not None and not getattr(self.embedder, "loaded", True)
        progress = _Progress()
        box: dict = {}
        done = threading.Event()

        def work() -> None:
            try:
                box["plan"] = self._plan(query, workspace, session_id, now, deadline, progress)
            except BaseException as exc:  # noqa: BLE001 - reported as the reason, never raised
                box["error"] = exc
            finally:
                done.set()
                with _workers_lock:
                    _workers.discard(threading.current_thread())

        # A daemon thread, not an executor: a worker stuck in a model load must not keep the
        # process alive at exit, and the caller stops waiting at the deadline either way.
        worker = threading.Thread(target=work, name="memoir-recall", daemon=True)
        with _workers_lock:
            _workers.add(worker)
        worker.start()
        finished = done.wait(max(0.0, deadline - time.perf_counter()))
        elapsed = (time.perf_counter() - started) * 1000
        if not finished:
            reason = f"deadline of {budget:.0f} ms passed during {progress.stage}"
            if progress.stage == "embed" and cold:
                reason += " (the model was still loading: cold start; `memoir serve-recall` keeps it warm)"
            return self._finish(progress, None, "timeout", reason, elapsed, budget, workspace, session_id)
        if "error" in box:
            exc = box["error"]
            outcome = "timeout" if isinstance(exc, Deadline) else "error"
            reason = str(exc) if isinstance(exc, Deadline) else f"{type(exc).__name__}: {exc}"
            return self._finish(progress, None, outcome, reason, elapsed, budget, workspace, session_id)
        plan: _Plan = box["plan"]
        outcome = "injected" if any(j.gate == INJECTED for j in plan.judgements) else "empty"
        return self._finish(progress, plan, outcome, plan.reason, elapsed, budget, workspace, session_id)

    # -- the worker: reads only ------------------------------------------------------------------

    def _plan(self, query: str, workspace: str, session_id: str, now: datetime, deadline: float,
              progress: _Progress) -> _Plan:
        def check(stage: str) -> None:
            progress.mark(stage)
            if time.perf_counter() > deadline:
                raise Deadline(f"deadline passed before {stage}")

        progress.mark("sanitize")
        clean = sanitize(query[:MAX_QUERY_INPUT], self.settings.blob_cap)
        progress.query = clean
        check("rewrite")
        text = rewrite_query(clean)
        progress.rewritten = text
        task_type = query_task_type(text)
        if not text:
            progress.mark("done")
            return _Plan(self.mode, task_type, [], "nothing to search for after dropping greetings and filler")
        check("open_index")
        try:
            index = self.index()
        except FileNotFoundError:
            progress.mark("done")
            return _Plan(self.mode, task_type, [], f"no index at {self.index_path}; run `memoir run`")
        hits: dict[str, dict]
        if self.embedder is not None:
            check("embed")
            vector = self.embedder.encode_one(text)
            check("knn")
            knn = index.knn(vector, KNN_K)
            check("fts")
            hits = fuse(knn, index.fts(text, FTS_K))
            check("similarity")
            # FTS-only hits get their true cosine too: the similarity gate judges every candidate
            # by meaning, so a lexical hit with low semantic similarity still faces the minimum.
            need = [i for i, h in hits.items() if "cosine" not in h]
            if need:
                import numpy as np

                q = np.asarray(vector, dtype=np.float32)
                for card_id, vec in index.vectors(need).items():
                    hits[card_id]["cosine"] = float(vec @ q)
        else:
            check("fts")
            hits = fuse([], index.fts(text, FTS_K))
        check("read_cards")
        terms = query_terms(text)
        candidates: list[Candidate] = []
        cards: dict[str, Card] = {}
        for card_id, hit in hits.items():
            try:
                card, card_text = self.read_card(card_id)
            except FileNotFoundError:
                card = missing_card(card_id)
                card_text = retrieval_text(card)
            except (OSError, UnicodeDecodeError, CardFileError):
                continue  # a broken hand edit: `memoir index check` reports it, recall skips it
            coverage = lexical_coverage(terms, card_text)
            similarity = hit.get("cosine", 0.0) if self.embedder is not None else coverage
            cards[card_id] = card
            candidates.append(candidate_from(card, dict(hit, coverage=coverage), similarity, now,
                                             self._renewed_by_hand(card)))
        self._follow_supersession(candidates, cards, hits, now)
        candidates = prefer_newer(candidates)
        candidates.sort(key=lambda c: (-c.rrf, -c.similarity, c.id))
        check("gates")
        rq = RecallQuery(text=text, task_type=task_type, workspace=workspace,
                         injected=injected_in_session(self.settings.state_dir, session_id),
                         lexical=self.embedder is None, signature=error_signature(clean).strip())
        judgements = judge(candidates, rq, self.policy)
        progress.mark("done")
        reason = "" if candidates else "no candidates from either path"
        if candidates and not any(j.gate == INJECTED for j in judgements):
            reason = "every candidate was rejected by a gate"
        return _Plan(self.mode, task_type, judgements, reason, cards)

    def _renewed_by_hand(self, card: Card) -> bool:
        """Whether a person edited this card's file since memoir wrote it; asked only where the age
        gate could apply, with the manifest read afresh (a long-lived recaller's copy goes stale)."""
        tagged = any(t.lower() in self.policy.max_age_days for t in card.topics)
        if not tagged or not fast_changing_fact(card.conclusion):
            return False
        return CardStore(self.settings.cards_dir, self.settings.state_dir).is_hand_edited(card.id)

    def _follow_supersession(self, candidates: list[Candidate], cards: dict[str, Card], hits: dict[str, dict],
                             now: datetime) -> None:
        """A superseded hit brings the card that replaced it, with the older one's similarity and
        ranks when those are better: the newer card answers what the older one answered (the rules
        found the same failure with another cause) even when its own words match the question less
        closely. The older one is then rejected by `Superseded`, so the two are never injected together."""
        for old in list(candidates):
            new_id, seen, card = old.superseded_by.strip(), {old.id}, None
            while new_id and new_id not in seen:  # to the newest card of the chain
                seen.add(new_id)
                try:
                    card, _ = self.read_card(new_id)
                except (OSError, UnicodeDecodeError, CardFileError):
                    card = None
                    break
                new_id = card.superseded_by.strip()
            if card is None or card.superseded_by.strip():
                continue
            at = next((i for i, c in enumerate(candidates) if c.id == card.id), None)
            if at is None:
                cards[card.id] = card
                candidates.append(candidate_from(card, dict(hits.get(old.id, {}), coverage=old.coverage),
                                                 old.similarity, now,
                                                 self._renewed_by_hand(card)))
            else:
                candidates[at] = take_place(candidates[at], old)

    # -- the caller: the only writes --------------------------------------------------------------

    def _finish(self, progress: _Progress, plan: _Plan | None, outcome: str, reason: str, elapsed: float,
                budget: float, workspace: str, session_id: str) -> RecallResult:
        judgements = plan.judgements if plan else []
        injected = [j for j in judgements if j.gate == INJECTED]
        cards = tuple(
            RecalledCard(j.candidate.id, j.candidate.conclusion, j.candidate.counterexamples,
                         plan.cards[j.candidate.id].sources, j.candidate.similarity, j.candidate.age_days)
            for j in injected
        )
        record = {
            "ts": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
            "outcome": outcome,
            "reason": reason,
            "mode": plan.mode if plan else self.mode,
            "query": progress.query,
            "rewritten": progress.rewritten,
            "task_type": plan.task_type if plan else "",
            "workspace": sanitize(workspace, Settings.blob_cap),
            "session": sanitize(session_id, Settings.blob_cap),
            "policy": {"min_similarity": self.policy.min_similarity, "min_lexical": self.policy.min_lexical,
                       "relative_margin": self.policy.relative_margin,
                       "vector_only_margin": self.policy.vector_only_margin,
                       "agreed_min_similarity": self.policy.agreed_min_similarity,
                       "agreed_min_coverage": self.policy.agreed_min_coverage,
                       "max_injected": self.policy.max_injected},
            "candidates": [_candidate_record(j) for j in judgements],
            "injected": [c.id for c in cards],
            "timings_ms": dict(progress.timings),
            "elapsed_ms": round(elapsed, 2),
            "budget_ms": budget,
        }
        try:
            if cards:
                remember_injected(self.settings.state_dir, session_id, [c.id for c in cards])
            append_record(self.settings.state_dir, record)
        except OSError as exc:
            record["reason"] = (reason + "; " if reason else "") + f"debug log not written: {exc}"
        rejected = tuple((j.candidate.id, j.gate) for j in judgements if j.gate != INJECTED)
        return RecallResult(progress.query, cards, rejected, elapsed, outcome, record["reason"], record)


def _candidate_record(j: Judgement) -> dict:
    c = j.candidate

    def r(x: float | None, n: int = 4) -> float | None:
        return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(x, n)

    return {
        "id": c.id, "gate": j.gate, "failed": list(j.failed), "detail": j.detail,
        "similarity": r(c.similarity), "rrf": r(c.rrf, 5), "knn_rank": c.knn_rank, "fts_rank": c.fts_rank,
        "bm25": r(c.bm25), "coverage": r(c.coverage, 3), "age_days": r(c.age_days, 1), "status": c.status,
        "task_type": c.task_type,
    }


def recall(settings: Settings, query: str, *, embedder=None, workspace: str = "", session_id: str = "",
           now: datetime | None = None, budget_ms: float | None = None) -> RecallResult:
    """One-shot recall (opens and closes the index); a long-lived caller keeps a `Recaller`."""
    with Recaller(settings, embedder) as r:
        return r.recall(query, workspace=workspace, session_id=session_id, now=now, budget_ms=budget_ms)
