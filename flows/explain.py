"""`memoir explain`: why a log became the cards it did, turn by turn, without writing anything.

It reads the log as a run would (read-only, sanitized), cuts and drafts it with the same code, runs
the quality gates with no active cards beside them and the model off, and reports for each session:
each turn's observation and the rules that fired (`cards.observe`), why each experience was cut
where it was, each card's kind and proof (`cards.proof`), the status it would get and which gate
decided. Nothing is stored: no card, no ledger, no index.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from memoir.cards.collect import collect
from memoir.cards.config import Settings
from memoir.cards.gate_help import GATE_HELP
from memoir.cards.hosts import default_roots
from memoir.cards.log_files import iter_candidates
from memoir.cards.observe import Observation, observe
from memoir.cards.quality_gates import decide_status, judge_card
from memoir.cards.quality_inputs import EvidenceView
from memoir.cards.segment import SegmentRules, Skipped
from memoir.cards.values import Card, Experience
from memoir.flows.ingest import draft_session, is_subagent, sanitize_turns


@dataclass(frozen=True, slots=True)
class CardExplanation:
    """One experience and the card it made: where it was cut, its kind, status and the deciding gate."""

    experience: Experience
    card: Card
    reasons: tuple[str, ...]

    def to_json(self) -> dict:
        c, e = self.card, self.experience
        return {"id": c.id, "title": c.title, "turns": [e.first_seq, e.last_seq], "lines": list(e.lines),
                "cut_because": e.boundary, "kind": c.extra.get("kind", ""), "proof": c.extra.get("proof", ""),
                "contradicted_by": c.extra.get("contradicted_by", ""), "status": c.status, "gate": c.gate,
                "gate_help": GATE_HELP.get(c.gate, ""), "reasons": list(self.reasons), "verified_by": c.verified_by}


@dataclass(slots=True)
class SessionExplanation:
    """One session of the log."""

    host: str
    session_id: str
    observations: tuple[Observation, ...] = ()
    cards: list[CardExplanation] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    rule_hits: Counter = field(default_factory=Counter)

    def to_json(self) -> dict:
        return {"host": self.host, "session_id": self.session_id,
                "turns": [o.to_json() for o in self.observations],
                "cards": [c.to_json() for c in self.cards],
                "skipped": [{"reason": s.reason, "lines": list(s.lines)} for s in self.skipped],
                "rule_hits": dict(self.rule_hits)}


def explain(path: Path, settings: Settings, host: str = "auto", turns: tuple[int, int] | None = None
            ) -> tuple[list[SessionExplanation], Counter]:
    """Explain every session in `path` (a log file or folder); (sessions, what the reader skipped).

    Args:
        turns: only observations and cards within this turn range (inclusive), when given.
    """
    report = collect([path], host, ledger=None, follow_symlinks=settings.follow_symlinks)
    out: list[SessionExplanation] = []
    rules = SegmentRules(pause=timedelta(minutes=settings.pause_minutes))
    for (h, sid), raw in sorted(report.sessions.items()):
        if is_subagent(raw):
            report.skipped["subagent_in_parent_task"] += 1
            continue
        clean = sanitize_turns([t for t in raw if not t.is_sidechain], settings.blob_cap, Counter())
        drafted, skipped, _ = draft_session(clean, rules, settings.min_conclusion_chars, Counter())
        found = SessionExplanation(h, sid, observe(clean), skipped=skipped)
        for exp, card in drafted:
            verdict = judge_card(card, EvidenceView.of_experience(exp))
            decided = decide_status(card, verdict, model_enabled=False, distilled=False)
            found.cards.append(CardExplanation(exp, decided, verdict.reasons))
            found.rule_hits[f"kind:{decided.extra.get('kind', '-')}"] += 1
        for o in found.observations:
            found.rule_hits.update(o.rules)
        if turns is not None:
            lo, hi = turns
            found.observations = tuple(o for o in found.observations if lo <= o.seq <= hi)
            found.cards = [c for c in found.cards if c.experience.last_seq >= lo and c.experience.first_seq <= hi]
        out.append(found)
    return out, report.skipped


def render(sessions: list[SessionExplanation], skipped: Counter, show_turns: bool = True) -> str:
    """Plain text for a person: the turns, then each card with why it stands as it does."""
    lines: list[str] = []
    for s in sessions:
        lines.append(f"session {s.host} {s.session_id}: {len(s.observations)} turns, {len(s.cards)} experiences")
        if show_turns:
            for o in s.observations:
                if o.act in ("think", "other"):
                    continue
                bits = [f"  t{o.seq:<5} L{o.line:<6} {o.role:<9} {o.act:<7}"]
                if o.verdict:
                    bits.append(o.verdict.upper())
                if o.signature:
                    bits.append(f"[{o.signature[:70]}]")
                if o.detail:
                    bits.append(o.detail)
                if o.rules:
                    bits.append("{" + ", ".join(o.rules) + "}")
                lines.append(" ".join(bits))
        for c in s.cards:
            j = c.to_json()
            lines.append(f"  experience t{j['turns'][0]}-t{j['turns'][1]} (lines {j['lines'][0]}-{j['lines'][1]}), "
                         f"cut because: {j['cut_because']}")
            lines.append(f"    card {j['id']} → {j['status']}" + (f" (gate {j['gate']})" if j["gate"] else ""))
            lines.append(f"    title: {j['title']}")
            if j["kind"]:
                lines.append(f"    kind: {j['kind']}: {j['proof']}")
            if j["contradicted_by"]:
                lines.append(f"    contradicted by {j['contradicted_by']}")
            for reason in j["reasons"]:
                lines.append(f"    gate {reason}")
        for sk in s.skipped:
            lines.append(f"  no card for lines {sk.lines[0]}-{sk.lines[1]}: {sk.reason}")
        if s.rule_hits:
            lines.append("  rule hits: " + ", ".join(f"{k} {v}" for k, v in sorted(s.rule_hits.items())))
    if skipped:
        lines.append("skipped while reading: " + ", ".join(f"{v} {k}" for k, v in sorted(skipped.items())))
    if not sessions:
        lines.append("no session found in that log (see the skipped counts, or try --host)")
    return "\n".join(lines) + "\n"


def find_session_file(session_id: str, home: Path) -> Path | None:
    """The log file under the hosts' usual folders whose name holds `session_id` (Claude Code and Codex
    name their files after the session), or None."""
    roots = [p for p in default_roots(home).values() if p.exists()]
    return next((p for p in iter_candidates(roots, "auto") if session_id in p.name), None)
