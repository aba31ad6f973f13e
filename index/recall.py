"""Recall, the synchronous path: a prompt in, at most `max_injected` cards out, within a deadline.

sanitize → rewrite → candidates from both paths (vector KNN and FTS5, index/candidates.py) → read
the card files → gates (index/recall_policy.py, index/recall_gates.py) → at most two cards. Every recall
appends one debug record to `state/recall.jsonl` (index/recall_log.py) and remembers what it
injected into the session (index/recall_session.py).

Three rules shape this module:
- the raw query is never logged or searched: it is sanitized before anything else sees it;
- the caller never gets an exception and never waits past the deadline: the work runs in a
  daemon thread, and on timeout or failure the answer is empty and the reason is logged;
- without a warm model the answer is lexical-only (FTS5 through apsw), and that path imports
  neither numpy nor torch, so a hook process can afford it.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from memoir.cards.chain import newest_successor
from memoir.cards.config import Settings
from memoir.cards.project_registry import ProjectRegistry
from memoir.cards.projects import of_workspace
from memoir.cards.values import Card, Source
from memoir.cards.sanitize import sanitize
from memoir.cards.signatures import error_signature
from memoir.cards.store import CardFileError, CardStore
from memoir.index.apsw_errors import apsw
from memoir.index.card_fields import stored_cards
from memoir.index.candidates import (
    FTS_K, KNN_K, MAX_QUERY_INPUT, POOL, READ_BUSY_MS, RRF_K, LexicalIndex, fuse, lexical_coverage, query_terms,
    coverage_text, distinctive_terms, holds_a_name, holds_any, names_pasted_error, pasted_error, query_names, recent_card_ids, subject_terms,
)
from memoir.index.errors import IndexFailure
from memoir.index.files import INDEX_FILE
from memoir.index.recall_gates import INJECTED, Candidate, GatePolicy, Judgement, RecallQuery, fast_changing_fact, judge, prefer_newer, take_place
from memoir.index.plan import retrieval_text
from memoir.index.places import project_rows
from memoir.index.recall_log import append_record
from memoir.index.recall_reads import Aside, CardReader, taken, words_side
from memoir.index.recall_policy import candidate_from, candidate_record, card_about, missing_card, placed, policy_record
from memoir.index.recall_session import injected_in_session, remember_injected
from memoir.index.rewrite import query_task_type, rewrite_query

BRIEF_CARDS = 30  # newest cards of a workspace a session brief looks at

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


def brief_cards(recaller: Recaller, workspace: str, limit: int = BRIEF_CARDS) -> list[Card]:
    """The cards a session brief for `workspace` draws on (every folder of its project): through the
    index, or the files if it cannot serve."""
    projects = recaller.projects.learn([workspace])
    ours = of_workspace(projects, workspace)  # a nested folder of another project is not this one
    folders = [workspace, *projects.aliases(projects.known(workspace))]
    try:  # twice the limit: cards of a nested other project are found by their folder, then left out
        ids = recent_card_ids(recaller.index().conn, folders, 2 * limit)
    except (FileNotFoundError, IndexFailure, apsw.Error):
        return [c for c in recaller.store.load_all()[0] if ours(c.workspace, c.project)]
    out = []
    for card_id in ids:
        try:
            out.append(recaller.store.read(card_id))
        except (OSError, UnicodeDecodeError, CardFileError):
            continue
    return [c for c in out if ours(c.workspace, c.project)][:limit]


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


class Deadline(IndexFailure):
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
        self._words = None  # a second, read-only connection: the lexical search beside the embedding
        self._index_id: tuple[int, int] | None = None
        self._lock = threading.Lock()
        self._reader = CardReader(settings.cards_dir)
        self.projects = ProjectRegistry(settings.state_dir)  # which project a folder is: git once per new folder

    @property
    def mode(self) -> str:
        return "semantic" if self.embedder is not None else "lexical"

    @property
    def index_path(self) -> Path:
        return Path(self.settings.index_dir) / INDEX_FILE

    def close(self) -> None:
        with self._lock:
            self._close_index()

    def _close_index(self) -> None:
        for opened in filter(None, (self._index, self._words)):
            opened.close()
        self._index = self._words = None

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
            # A long-lived reader's index keeps its in-memory vectors across a rebuild's swap.
            keep = bool(getattr(self._index, "keeps_scaled", False))
            self._close_index()
            if self.embedder is None:
                self._index = LexicalIndex(self.index_path)
            else:
                from memoir.index.db import open_index  # deferred: start-up

                self._index = open_index(self.settings.index_dir, self.embedder, busy_timeout_ms=READ_BUSY_MS)
                if keep:
                    self._index.keep_scaled()
                self._words = LexicalIndex(self.index_path)
            self._index_id = ident
            return self._index

    def _lexical_for(self, index):
        """The read-only connection beside `index` (on one connection, SQLite queues the statements)."""
        with self._lock:
            return self._words if self._index is index and self._words is not None else index

    def read_card(self, card_id: str, stored: dict[str, tuple[str, bytes]] | None = None) -> tuple[Card, str]:
        """The card and its retrieval text (`CardReader.read`): parsed once per version of its file."""
        return self._reader.read(card_id, stored)

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
        terms = subject_terms(query_terms(text))  # overlap on the subject, not on words every session uses
        project = self.projects.resolve(workspace)  # before `load`: a new folder is registered first
        if self.embedder is not None:
            rows = project_rows(index, self.projects.load(), project)  # the project's rows answer (index/places.py)
            check("embed")
            # The lexical search and the term counts need no vector: they run in SQLite (no GIL) on a
            # connection of their own while the model embeds (no GIL either): ~6 ms less at 100k cards.
            lexical = Aside(words_side, self._lexical_for(index), text, terms, self._reader, rows)
            vector = self.embedder.encode_one(text)
            check("knn")
            knn = index.knn(vector, KNN_K * POOL, within=rows)
            check("fts")
            fts, rare, early = lexical.result()
            hits = fuse(knn, fts)
            check("similarity")
            # FTS-only hits get their true cosine too: the similarity gate judges every candidate
            # by meaning, so a lexical hit with low semantic similarity still faces the minimum.
            need = [i for i, h in hits.items() if "cosine" not in h]
            if need:
                import numpy as np  # deferred: start-up

                q = np.asarray(vector, dtype=np.float32)
                for card_id, vec in index.vectors(need).items():
                    hits[card_id]["cosine"] = float(vec @ q)
        else:
            check("fts")
            hits = fuse([], index.fts(text, FTS_K))
            rare = distinctive_terms(index.conn, terms)  # ... nor on words most cards of the library hold
            early = {}
        check("read_cards")
        names = query_names(clean)
        signature = error_signature(clean).strip()
        pasted = pasted_error(signature)
        candidates: list[Candidate] = []
        cards: dict[str, Card] = {}
        stored = stored_cards(index.conn, [i for i in hits if i not in early and not self._reader.fresh(i)])
        for card_id, hit in hits.items():
            try:
                card, card_text = taken(early.get(card_id)) or self.read_card(card_id, stored)
            except FileNotFoundError:
                card = missing_card(card_id)
                card_text = retrieval_text(card)
            except (OSError, UnicodeDecodeError, CardFileError):
                continue  # a broken hand edit: `memoir index check` reports it, recall skips it
            # Overlap on the subject counts the goal too (a question in the asker's words); without a
            # model, similarity is the share of terms in what the card is found by, as FTS5 saw it.
            about = coverage_text(card, card_text)
            coverage = lexical_coverage(terms, about)
            similarity = hit.get("cosine", 0.0) if self.embedder is not None else lexical_coverage(terms, card_text)
            cards[card_id] = card
            candidates.append(candidate_from(card, dict(hit, coverage=coverage, subject=holds_any(rare, about),
                                                       names_identifier=holds_a_name(names, about)),
                                             similarity, now,
                                             self._renewed_by_hand(card), names_pasted_error(pasted, card_about(card))))
        self._follow_supersession(candidates, cards, hits, now, pasted)
        candidates = prefer_newer(placed(candidates, self.projects.load()))
        candidates.sort(key=lambda c: (-c.rrf, -c.similarity, c.id))
        check("gates")
        rq = RecallQuery(text=text, task_type=task_type, workspace=workspace, project=project,
                         injected=injected_in_session(self.settings.state_dir, session_id),
                         lexical=self.embedder is None, signature=signature)
        judgements = judge(candidates, rq, self.policy, RRF_K, (KNN_K, FTS_K))  # ranks over eligible cards
        progress.mark("done")
        reason = "" if candidates else "no candidates from either path"
        if candidates and not any(j.gate == INJECTED for j in judgements):
            reason = "every candidate was rejected by a gate"
        return _Plan(self.mode, task_type, judgements, reason, cards)

    def _readable(self, card_id: str) -> Card | None:
        try:
            return self.read_card(card_id)[0]
        except (OSError, UnicodeDecodeError, CardFileError):
            return None

    def _renewed_by_hand(self, card: Card) -> bool:
        """Whether a person edited this card's file since memoir wrote it; asked only where the age
        gate could apply, with the manifest read afresh (a long-lived recaller's copy goes stale)."""
        tagged = any(t.lower() in self.policy.max_age_days for t in card.topics)
        if not tagged or not fast_changing_fact(card.conclusion):
            return False
        return CardStore(self.settings.cards_dir, self.settings.state_dir).is_hand_edited(card.id)

    def _follow_supersession(self, candidates: list[Candidate], cards: dict[str, Card], hits: dict[str, dict],
                             now: datetime, pasted: tuple[str, tuple[str, ...]] | None) -> None:
        """A superseded hit brings the card that replaced it, with the older one's similarity and
        ranks when those are better: the newer card answers what the older one answered (the rules
        found the same failure with another cause) even when its own words match the question less
        closely. The older one is then rejected by `Superseded`, so the two are never injected together.
        A card another hit names in its `supersedes` is stale too, even where its own file was never
        marked (a write that stopped halfway, a hand edit)."""
        replaced = {old: card.id for card in cards.values() if card.status != "superseded" for old in card.supersedes}
        for i, c in enumerate(candidates):
            if c.id in replaced and not c.superseded_by.strip():
                candidates[i] = replace(c, superseded_by=replaced[c.id])
        for old in list(candidates):
            card = newest_successor(old, self._readable)
            if card is None:
                continue
            at = next((i for i, c in enumerate(candidates) if c.id == card.id), None)
            if at is None:
                cards[card.id] = card
                candidates.append(candidate_from(card, dict(hits.get(old.id, {}), coverage=old.coverage,
                                                            subject=old.shares_subject,
                                                            names_identifier=old.names_identifier),
                                                 old.similarity, now, self._renewed_by_hand(card),
                                                 names_pasted_error(pasted, card_about(card)) or old.names_error))
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
            "policy": policy_record(self.policy),
            "candidates": [candidate_record(j) for j in judgements],
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


def recall(settings: Settings, query: str, *, embedder=None, workspace: str = "", session_id: str = "",
           now: datetime | None = None, budget_ms: float | None = None) -> RecallResult:
    """One-shot recall (opens and closes the index); a long-lived caller keeps a `Recaller`."""
    with Recaller(settings, embedder) as r:
        return r.recall(query, workspace=workspace, session_id=session_id, now=now, budget_ms=budget_ms)
