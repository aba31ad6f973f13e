"""Recall gates: eleven independent reasons to keep a card out of an agent's context.
(Not the quality gates of memoir.cards.quality_gates, which decide whether a card is active at all.)

Recall prefers injecting nothing over injecting something wrong, stale or contradictory, so every
candidate meets every gate and each gate can reject it on its own. Gates are small pure functions
over plain dataclasses; each has one name, used unchanged in the debug log, the CLI and the docs.
Ten gates judge one candidate at a time; `ContradictsCandidate` judges the survivors as a set.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from memoir.cards.config import Settings
from memoir.cards.projects import same_place, workspaces_near
from memoir.cards.sanitize.scan import contains_sensitive
from memoir.index.advice import assignments, contradiction, retraction

ACTIVE = "active"
QUALITIES = ("rule", "model")
INJECTED = "injected"  # what the debug log says instead of a gate name for a card that went in
OVER_LIMIT = "MaxInjectedReached"  # passed every gate, but `max_injected` better cards went first

# Topics whose facts go stale fast: pins, flags and config keys change with every release, so an
# old card about them is more likely wrong than helpful. Days; topics not listed never expire. The
# tag alone is not enough (most cards that mention a package carry one, issue 16): the card must
# also state the fast-changing fact itself, a pinned version or a config key set to a value.
MAX_AGE_DAYS: dict[str, int] = dict.fromkeys(
    ("configuration", "config", "versions", "version", "dependencies", "dependency"), 90)

# Card task types a query of each task type may receive. A question can use anything; a debugging
# session can use fixes and setup notes but not refactoring advice; unknown types always pass.
# A feature query may receive fixes: its cue words ("build", "add") also name the step that fails
# ("toc build attempt to subtract with overflow"), and a known failure met while adding a feature
# is exactly what its card is for.
COMPATIBLE_TASK_TYPES: dict[str, frozenset[str]] = {
    "debug": frozenset({"debug", "config", "feature", "question"}),
    "config": frozenset({"config", "debug", "feature", "question"}),
    "feature": frozenset({"feature", "config", "refactor", "debug", "question"}),
    "refactor": frozenset({"refactor", "feature", "question"}),
    "decision": frozenset({"config", "feature", "refactor", "question"}),
}


@dataclass(frozen=True, slots=True)
class Candidate:
    """One card found by either search path, with what the gates need to judge it."""

    id: str
    status: str
    quality: str
    gate: str  # the quality gate that held the card back, from its front matter ('' if none)
    task_type: str
    workspace: str
    topics: tuple[str, ...]
    error_signature: str
    superseded_by: str
    conclusion: str
    counterexamples: str
    body: str  # every section, for the sensitive-content check
    age_days: float | None
    similarity: float  # cosine similarity to the query, or lexical coverage when no model is warm
    confirmed_by: str = ""  # "user" when a person confirmed the card (review or a hand edit)
    hand_edited: bool = False  # the file differs from what memoir last wrote: a person renewed it
    verified: bool = False  # a re-run after the change passed (`verified_by` is set)
    coverage: float = 0.0  # share of the query's search terms in the card's retrieval text
    rrf: float = 0.0  # reciprocal-rank fusion of both paths: the order survivors are injected in
    knn_rank: int | None = None
    fts_rank: int | None = None
    bm25: float | None = None
    first_of_all: bool = True  # first on one path over every card found, eligible or not (`rank_eligible`)
    first_here: bool = False  # first on both paths over the eligible cards of the query's own workspace (`judge`)
    names_error: bool = True  # its own words name the error the prompt pastes (or the prompt pastes none)
    shares_subject: bool = True  # it holds one of the query's distinctive terms (`candidates.distinctive_terms`)
    names_identifier: bool = True  # it holds one of the query's compound names whole (or the query has none)
    project: str = ""  # its workspace's project as the registry has it now (`cards.projects`); '' for none


@dataclass(frozen=True, slots=True)
class RecallQuery:
    """What the gates know about the asking side: never the raw prompt."""

    text: str  # sanitized and rewritten
    task_type: str = ""
    workspace: str = ""
    injected: frozenset[str] = frozenset()  # already injected into this session
    lexical: bool = False  # True when similarity is lexical coverage (no warm model)
    best_similarity: float = 0.0  # best similarity among otherwise-eligible candidates (set by `judge`)
    signature: str = ""  # the error signature the prompt quotes, normalised as cards store theirs
    signature_matched: bool = False  # an otherwise-eligible card names that very error (set by `judge`)
    project: str = ""  # the workspace's project (`cards.projects`); '' where it is no git project


@dataclass(frozen=True, slots=True)
class GatePolicy:
    """Thresholds the gates compare against: the user's own three come from `Settings` (`from_settings`),
    the calibrated rest have their one value here."""

    min_similarity: float  # settings.min_score
    min_conclusion_chars: int
    max_injected: int
    min_lexical: float = 0.6  # share of query terms a card must contain when no model is warm
    max_age_days: Mapping[str, int] = field(default_factory=lambda: dict(MAX_AGE_DAYS))
    # A card this far below the best match is about a neighbouring problem: with MiniLM, the right
    # card and a same-stack-but-different-bug card often both clear 0.45, ~0.1-0.3 apart.
    relative_margin: float = 0.10
    # A card only the vector path found (no shared error code, key or name) must be this much
    # closer: on the retrieval set every right card was found by both paths, and the wrong cards
    # that cleared the plain minimum were vector-only neighbours from the same stack.
    vector_only_margin: float = 0.25  # so 0.70 with the default min_score: a near-paraphrase
    # The card both paths rank first needs only this much: a pasted one-line error against a long
    # conclusion scores 0.28-0.43 while the right card tops both lists (issue 16). Calibrated with
    # `python -m bench.recall_quality --sweep` on both labelled sets: 0.30 is the highest value
    # that keeps every right card the agreement finds (a pasted E0502 at 0.303; from 0.33 up
    # recall@2 on the second set falls 0.942 -> 0.923 -> 0.904); at 0.28 and below an unrelated
    # top card gets into an example question that must get nothing (correct-empty 1.0 -> 0.94).
    agreed_min_similarity: float = 0.30
    # ... and only when the card holds this share of the query's search terms (two at least): in a
    # small index every card FTS finds at all ranks first on both paths, so rank alone agrees too
    # easily. The right cards the agreement finds on both sets hold 0.33-1.0 of the terms.
    agreed_min_coverage: float = 0.25

    @classmethod
    def from_settings(cls, settings: Settings) -> GatePolicy:
        """The policy a run or a served recall uses: the user's thresholds, the calibrated margins."""
        return cls(min_similarity=settings.min_score, min_conclusion_chars=settings.min_conclusion_chars,
                   max_injected=settings.max_injected)


class RecallGate(Protocol):
    """A named reason to reject one candidate."""

    name: str

    def __call__(self, c: Candidate, q: RecallQuery, p: GatePolicy) -> bool:
        """True when the gate rejects `c`."""
        ...


@dataclass(frozen=True, slots=True)
class _Gate:
    name: str
    rejects: Callable[[Candidate, RecallQuery, GatePolicy], bool]
    why: str

    def __call__(self, c: Candidate, q: RecallQuery, p: GatePolicy) -> bool:
        return self.rejects(c, q, p)


def _gate(why: str) -> Callable[[Callable[[Candidate, RecallQuery, GatePolicy], bool]], _Gate]:
    def wrap(fn: Callable[[Candidate, RecallQuery, GatePolicy], bool]) -> _Gate:
        return _Gate(fn.__name__, fn, why)

    return wrap


# --- the ten per-candidate gates, in the order the debug log lists them -------------------------


@_gate("too far from the query in meaning, far below the best match, or about another error than the one "
       "the prompt pastes, or sharing none of its distinctive terms (lexical-only: too few query terms)")
def SimilarityBelowMinimum(c: Candidate, q: RecallQuery, p: GatePolicy) -> bool:
    if q.lexical:
        return c.similarity < p.min_lexical
    if not (c.names_error and c.shares_subject):
        # About another error, or holding only words most cards hold: a near-paraphrase at best.
        return c.similarity < p.min_similarity + p.vector_only_margin
    # First on both paths over what may be injected (`rank_eligible`), and not a far-closer held-back card's neighbour.
    # Another project's card gets no lowered floor, agreed or for the same error: its fix is about its own code.
    # A query naming `pkg.tasks.notify_x` is about that name: a card holding only its namespace
    # (`pkg.tasks.send_y`) is a neighbour in the same module, and gets no lowered floor.
    # Another project's card is no rival in that agreement (a question asked in a workspace is about
    # it first), unless it is far closer: then this one is its neighbour.
    here = c.first_here and c.similarity >= q.best_similarity - p.relative_margin
    agreed = ((c.knn_rank == 1 and c.fts_rank == 1 or here) and c.first_of_all and c.coverage >= p.agreed_min_coverage
              and c.names_identifier and near(c, q))
    same_error = same_signature(c, q) and near(c, q)
    if agreed or same_error:
        # Both paths agree it is the best card, or it names the very error the prompt pastes: the
        # margins (about neighbours) do not apply, and a lower floor still keeps unrelated cards out.
        return c.similarity < p.agreed_min_similarity
    if q.signature_matched and c.error_signature.strip() and q.signature not in c.conclusion:
        return True  # another card names the pasted error; this one another, and not as a way-side one
    if not c.coverage and c.similarity < p.min_similarity + p.vector_only_margin:
        return True  # a question or a pasted error that shares no subject term with the card: a neighbour in meaning

    floor = p.min_similarity + (p.vector_only_margin if c.fts_rank is None else 0.0)
    return c.similarity < max(floor, q.best_similarity - p.relative_margin)


@_gate("status is not active (candidate, incomplete, superseded, forgotten)")
def StatusNotActive(c: Candidate, q: RecallQuery, p: GatePolicy) -> bool:
    return c.status != ACTIVE


@_gate("conclusion empty or shorter than min_conclusion_chars")
def ConclusionTooShort(c: Candidate, q: RecallQuery, p: GatePolicy) -> bool:
    return len(c.conclusion.strip()) < p.min_conclusion_chars


@_gate("the card's task type does not serve the query's task type")
def TaskTypeMismatch(c: Candidate, q: RecallQuery, p: GatePolicy) -> bool:
    allowed = COMPATIBLE_TASK_TYPES.get(q.task_type)
    return bool(allowed and c.task_type and c.task_type not in allowed)


@_gate("a newer card supersedes this one (also when only `superseded_by` was set)")
def Superseded(c: Candidate, q: RecallQuery, p: GatePolicy) -> bool:
    return bool(c.superseded_by.strip()) or c.status == "superseded"


@_gate("a secret, private address or e-mail is still in the card")
def UnsanitizedContent(c: Candidate, q: RecallQuery, p: GatePolicy) -> bool:
    return _sensitive(c.body)


# The secret scan of a card's body was a fifth of a warm recall's CPU, asked twice per candidate
# (once to rank, once to judge) and again for every prompt that finds the card: a pure function of
# the text, so each distinct body is scanned once (a changed card is a new text, scanned afresh).
_sensitive = functools.lru_cache(maxsize=4096)(contains_sensitive)


@_gate("older than the age limit of a fast-changing fact it states (a pinned version, a config value)")
def TooOldForFastChangingTopic(c: Candidate, q: RecallQuery, p: GatePolicy) -> bool:
    limits = [p.max_age_days[t.lower()] for t in c.topics if t.lower() in p.max_age_days]
    if not limits or not fast_changing_fact(c.conclusion):
        return False
    if c.confirmed_by == "user" or c.hand_edited:
        return False  # a person looked at it since: their confirmation or edit renews the card
    # An undated card on a fast-changing topic cannot be shown to be fresh.
    return c.age_days is None or c.age_days > min(limits)


@_gate("already injected earlier in this session")
def AlreadyInjected(c: Candidate, q: RecallQuery, p: GatePolicy) -> bool:
    return c.id in q.injected


@_gate("its quality verdict still says candidate (a quality gate held it back)")
def QualityCandidate(c: Candidate, q: RecallQuery, p: GatePolicy) -> bool:
    # Status and quality verdict are written separately; a half-applied update (status flipped
    # to active by hand, `gate` still set) must not slip through on the status alone. A person's
    # confirmation (`confirmed_by: user`) overrides the machine's verdict: the user's hand wins.
    if c.confirmed_by == "user":
        return False
    return bool(c.gate.strip()) or c.quality not in QUALITIES


@_gate("of another project than the query's, or names files of another workspace than the one it comes from")
def TooFarFromWorkspace(c: Candidate, q: RecallQuery, p: GatePolicy) -> bool:
    if q.project and c.project:
        return q.project != c.project  # one project's memory is never injected into another's
    if not q.workspace or not c.workspace or workspaces_near(q.workspace, c.workspace):
        return False
    # General lessons travel between projects; advice about another project's files does not.
    return project_bound(c.conclusion + "\n" + c.counterexamples, c.workspace)


CANDIDATE_GATES: tuple[_Gate, ...] = (
    SimilarityBelowMinimum,
    StatusNotActive,
    ConclusionTooShort,
    TaskTypeMismatch,
    Superseded,
    UnsanitizedContent,
    TooOldForFastChangingTopic,
    AlreadyInjected,
    QualityCandidate,
    TooFarFromWorkspace,
)


# --- fast-changing facts -------------------------------------------------------------------------

# A version pinned or moved to: `==1.2`, `~> 2.17`, `^4.5.0`, `@1.4.0`, `pin ... 3.12`, `bumped to 2.9`.
_VERSION_PIN = re.compile(
    r"(?:==|~>|>=|<=|\^|~|@)\s*v?\d+(?:\.\d+)+"
    r"|(?i:\b(?:pin(?:s|ned|ning)?|bump(?:s|ed)?|upgrad(?:e|es|ed|ing)|downgrad(?:e|es|ed|ing)|version)\b)"
    r"[^.\n]{0,40}?\bv?\d+\.\d+(?:\.\d+)*\b"
)


def fast_changing_fact(conclusion: str) -> str:
    """The pinned version or config assignment a conclusion states ('' if none): what goes stale."""
    m = _VERSION_PIN.search(conclusion)
    if m:
        return m.group(0)
    return next((f"{k}={v}" for k, v in assignments(conclusion).items()), "")


def prefer_newer(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Two cards for the same error signature in the same workspace: the older one counts as
    superseded by the newer verified one (recall then never injects both, and the newer one takes
    the older one's similarity and ranks when higher, so the margin rule cannot cut it)."""
    out = list(candidates)
    for i, old in enumerate(out):
        if not old.error_signature.strip() or old.superseded_by.strip() or old.age_days is None:
            continue
        for j, new in enumerate(out):
            if (j == i or not new.verified or new.status != ACTIVE or new.superseded_by.strip()
                    or new.error_signature.strip() != old.error_signature.strip()
                    or new.age_days is None or new.age_days >= old.age_days
                    or not same_place(new.workspace, new.project, old.workspace, old.project)):
                continue
            out[i] = replace(old, superseded_by=new.id)
            out[j] = take_place(new, old)
            break
    return out


def take_place(new: Candidate, old: Candidate) -> Candidate:
    """`new` with `old`'s similarity, fused score and ranks where those are better."""
    def best(a: int | None, b: int | None) -> int | None:
        return min((r for r in (a, b) if r is not None), default=None)

    return replace(new, similarity=max(new.similarity, old.similarity), rrf=max(new.rrf, old.rrf),
                   coverage=max(new.coverage, old.coverage), names_error=new.names_error or old.names_error,
                   shares_subject=new.shares_subject or old.shares_subject,
                   names_identifier=new.names_identifier or old.names_identifier,
                   knn_rank=best(new.knn_rank, old.knn_rank), fts_rank=best(new.fts_rank, old.fts_rank))


# --- workspace distance -------------------------------------------------------------------------

_REL_PATH = re.compile(r"(?<![\w/~.:@-])(?:[\w.-]+/)+[\w-]+\.[A-Za-z][A-Za-z0-9]{0,4}\b")


def _norm(path: str) -> str:
    return posixpath.normpath(path.replace("\\", "/")).rstrip("/") or "/"


def project_bound(text: str, workspace: str) -> bool:
    """True when the text names a file of a particular project (relative path or under `workspace`)."""
    ws = _norm(workspace) + "/" if workspace else ""
    if ws and ws != "//" and ws in text:
        return True
    return any(not m.group(0).startswith(("http", "www.")) for m in _REL_PATH.finditer(text))


# --- contradiction --------------------------------------------------------------------------------


def ContradictsCandidate(survivors: Sequence[Candidate]) -> dict[str, str]:
    """The set gate: card id -> what it contradicts, for every survivor of a disagreeing pair.

    Both cards of a pair go: recall cannot tell which one is right, and one wrong card in the
    context costs more than a missing one. Only when the newer card takes the older one's advice
    back in so many words (`advice.retraction`) does the newer one stay.
    """
    out: dict[str, str] = {}
    for i, a in enumerate(survivors):
        for b in survivors[i + 1:]:
            if a.age_days is not None and b.age_days is not None and a.age_days != b.age_days:
                old, new = (a, b) if a.age_days > b.age_days else (b, a)
                if why := retraction(old, new):
                    out.setdefault(old.id, f"{new.id}: {why}")
                    continue
            why = contradiction(a, b)
            if why:
                out.setdefault(a.id, f"{b.id}: {why}")
                out.setdefault(b.id, f"{a.id}: {why}")
    return out


# --- applying the gates ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Judgement:
    """What the gates decided for one candidate: `gate` is the first that rejected it, or "injected"."""

    candidate: Candidate
    gate: str
    failed: tuple[str, ...] = ()  # every gate that rejected it, in order (tuning wants them all)
    detail: str = ""


def same_signature(c: Candidate, q: RecallQuery) -> bool:
    return bool(q.signature) and c.error_signature.strip() == q.signature


def near(c: Candidate, q: RecallQuery) -> bool:  # of the query's workspace (its project), or a side does not say
    return not (q.workspace and c.workspace) or same_place(q.workspace, q.project, c.workspace, c.project)


def rank_eligible(eligible: Sequence[Candidate], rrf_k: int, limits: tuple[int, int] | None = None,
                  closer: float = 1.0) -> list[Candidate]:
    """Each path's ranks and the fused score counted over `eligible` alone, best first: an inactive,
    superseded or far card cannot hold rank 1 and keep an injectable card from the agreement of both
    paths. With `limits` (knn k, fts k) a rank past its path's k is dropped, and a card left with none
    is no candidate: what an index of eligible cards alone would have returned. `first_of_all` stays
    set where a card was first on a path over all cards, or no held-back card is `closer` than it."""
    def ranks(attr: str, k: int | None) -> dict[str, int]:
        found = sorted((c for c in eligible if getattr(c, attr) is not None), key=lambda c: (getattr(c, attr), c.id))
        return {c.id: i for i, c in enumerate(found, 1) if k is None or i <= k}

    knn, fts = ranks("knn_rank", limits and limits[0]), ranks("fts_rank", limits and limits[1])
    ranked = [replace(c, knn_rank=knn.get(c.id), fts_rank=fts.get(c.id),
                      first_of_all=1 in (c.knn_rank, c.fts_rank) or c.similarity >= closer,
                      rrf=sum(1.0 / (rrf_k + r) for r in (knn.get(c.id), fts.get(c.id)) if r))
              for c in eligible if c.id in knn or c.id in fts or limits is None]
    return sorted(ranked, key=lambda c: (-c.rrf, -c.similarity, c.id))


def _failed(c: Candidate, query: RecallQuery, policy: GatePolicy) -> tuple[str, ...]:
    """The names of the gates that reject `c`, in their order. The secret scan, the one gate that
    costs (most of the gates' CPU), runs only where no other gate rejects: a candidate another
    gate keeps out is not injected either way, and its record then does not list the scan."""
    names = tuple(g.name for g in CANDIDATE_GATES if g is not UnsanitizedContent and g(c, query, policy))
    return names or ((UnsanitizedContent.name,) if UnsanitizedContent(c, query, policy) else ())


def judge(candidates: Sequence[Candidate], query: RecallQuery, policy: GatePolicy, rrf_k: int = 60,
          limits: tuple[int, int] | None = None) -> list[Judgement]:
    """Run every gate over every candidate; at most `policy.max_injected` come out "injected".

    Ranks are counted over the candidates no gate but similarity rejects, nor the error they are
    about (`rank_eligible`), and
    they come first, best first. The relative similarity floor is measured from the best of them,
    so a superseded or inactive near-duplicate cannot push the card that replaced it out.
    """
    others = tuple(g for g in CANDIDATE_GATES[1:] if g is not UnsanitizedContent)
    # A card about another error than the one pasted, or off the subject, is no rival either, unless a near-paraphrase;
    # nor is one below the lowest floor there is (it shares words, not meaning): no rule could inject it.
    passed = {c.id for c in candidates if not any(g(c, query, policy) for g in others)
              and (c.names_error and c.shares_subject or c.similarity >= policy.min_similarity + policy.vector_only_margin)
              and (query.lexical or c.similarity >= policy.agreed_min_similarity)
              and not UnsanitizedContent(c, query, policy)}  # last: the one gate that costs
    held = max((c.similarity for c in candidates if c.id not in passed), default=0.0) - policy.relative_margin
    eligible = rank_eligible([c for c in candidates if c.id in passed], rrf_k, limits, held)
    if query.workspace:
        here = {c.id for c in rank_eligible([c for c in eligible if near(c, query)], rrf_k)
                if c.knn_rank == 1 and c.fts_rank == 1}
        eligible = [replace(c, first_here=c.id in here) for c in eligible]
    candidates = eligible + [c for c in candidates if c.id not in passed]
    matched = any(same_signature(c, query) and near(c, query) for c in eligible)
    query = replace(query, best_similarity=max((c.similarity for c in eligible), default=0.0),
                    signature_matched=matched)
    failed = {c.id: _failed(c, query, policy) for c in candidates}
    survivors = [c for c in candidates if not failed[c.id]]
    clash = ContradictsCandidate(survivors)
    out: list[Judgement] = []
    taken = 0
    for c in candidates:
        names = failed[c.id] + ((CONTRADICTS,) if c.id in clash else ())
        if names:
            out.append(Judgement(c, names[0], names, clash.get(c.id, "")))
        elif taken < policy.max_injected:
            taken += 1
            out.append(Judgement(c, INJECTED))
        else:
            out.append(Judgement(c, OVER_LIMIT, (OVER_LIMIT,)))
    return out


CONTRADICTS = ContradictsCandidate.__name__
RECALL_GATE_NAMES: tuple[str, ...] = tuple(g.name for g in CANDIDATE_GATES) + (CONTRADICTS,)
