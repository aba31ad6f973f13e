"""How recall applies its gates (index/recall_gates.py): a gate candidate from a card and its hit,
and the debug log's view of the policy and of each judgement."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timezone

from memoir.cards.projects import ProjectMap
from memoir.cards.values import SECTIONS, Card
from memoir.index.recall_gates import Candidate, GatePolicy, Judgement


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


def candidate_from(card: Card, hit: dict, similarity: float, now: datetime, hand_edited: bool = False,
                   names_error: bool = True) -> Candidate:
    return Candidate(
        id=card.id, status=card.status, quality=card.quality, gate=card.gate, task_type=card.task_type,
        workspace=card.workspace, topics=card.topics, error_signature=card.error_signature,
        superseded_by=card.superseded_by, conclusion=card.conclusion, counterexamples=card.counterexamples,
        body="\n".join(card.section(s) for s in SECTIONS),
        age_days=age_days(card, now), similarity=similarity, confirmed_by=card.confirmed_by,
        hand_edited=hand_edited, verified=bool(card.verified_by.strip()), coverage=hit.get("coverage", 0.0),
        rrf=hit.get("rrf", 0.0), shares_subject=hit.get("subject", True),
        names_identifier=hit.get("names_identifier", True),
        knn_rank=hit.get("knn_rank"), fts_rank=hit.get("fts_rank"), bm25=hit.get("bm25"), names_error=names_error,
        project=card.project,
    )


def placed(candidates: Iterable[Candidate], projects: ProjectMap) -> list[Candidate]:
    """Each candidate with the project its folder is of now: the registry's alias map (a moved folder,
    a split, a merge), else the id its card records. A registry lookup, never git."""
    return [c if (p := projects.project_of(c.workspace, c.project)) == c.project else replace(c, project=p)
            for c in candidates]


def card_about(card: Card) -> str:
    """What a card says it is about, in its own words: never its evidence, nor its signature alone,
    unless a check verified the fix: the signature is then the error that check cleared (an error
    met on the way is no verified card's signature), whether or not the lesson repeats it."""
    cleared = card.error_signature if card.verified_by.strip() else ""
    return "\n".join((card.title, card.goal, card.conclusion, card.counterexamples, cleared))


def missing_card(card_id: str) -> Card:
    # A card file deleted by hand means "forget it" (DESIGN.md §8): the stale row must not recall it.
    return Card(id=card_id, status="forgotten")


def policy_record(policy: GatePolicy) -> dict:
    """The policy as the debug record shows it."""
    return {"min_similarity": policy.min_similarity, "min_lexical": policy.min_lexical,
            "relative_margin": policy.relative_margin,
            "vector_only_margin": policy.vector_only_margin,
            "agreed_min_similarity": policy.agreed_min_similarity,
            "agreed_min_coverage": policy.agreed_min_coverage,
            "max_injected": policy.max_injected}


def candidate_record(j: Judgement) -> dict:
    """One judged candidate as the debug record shows it (NaN and None as null, rounded)."""
    c = j.candidate

    def r(x: float | None, n: int = 4) -> float | None:
        return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(x, n)

    return {
        "id": c.id, "gate": j.gate, "failed": list(j.failed), "detail": j.detail,
        "similarity": r(c.similarity), "rrf": r(c.rrf, 5), "knn_rank": c.knn_rank, "fts_rank": c.fts_rank,
        "bm25": r(c.bm25), "coverage": r(c.coverage, 3), "age_days": r(c.age_days, 1), "status": c.status,
        "task_type": c.task_type, "names_error": c.names_error,
        "shares_subject": c.shares_subject,
    }
