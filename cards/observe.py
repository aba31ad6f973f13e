"""One observation per turn: what it did (look, change, check, commit, ask, say), its verdict, and the
named rules that fired on it, so a person can see why a session was cut and carded as it was.

`memoir explain` prints these; they are read from the same walk (`cards.loop.walk`) and rule tables
(`cards.phrasebook`) that segmenting, proving and gating use, so what it shows is what decided.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memoir.cards.commands import changed_paths, command_of, is_change, one_line, retrieved_id
from memoir.cards.cues import commit_subject, is_chatter
from memoir.cards.loop import runs_check, walk
from memoir.cards.phrasebook import CONFIRMS, PENDING, PROBLEM_REPORTS, REJECTS, RETRACTS, first_rule
from memoir.cards.signatures import error_signature
from memoir.cards.values import Turn


@dataclass(frozen=True, slots=True)
class Observation:
    """What one turn is, as the rules read it."""

    seq: int
    line: int
    role: str
    kind: str
    act: str  # say | ask | look | change | check | commit | result | think | other
    verdict: str = ""  # pass | fail | pending, for the result of a check
    signature: str = ""
    detail: str = ""  # the command, the paths changed, or the first words said
    rules: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {"seq": self.seq, "line": self.line, "role": self.role, "kind": self.kind, "act": self.act,
                "verdict": self.verdict, "signature": self.signature, "detail": self.detail, "rules": list(self.rules)}


def _said(turn: Turn) -> tuple[str, tuple[str, ...]]:
    text = turn.text[:4000]
    if turn.role == "user":
        tables = (PROBLEM_REPORTS, CONFIRMS, REJECTS)
        act = "ask" if not is_chatter(turn.text) else "say"
    else:
        tables = (RETRACTS,)
        act = "say"
    return act, tuple(name for table in tables if (name := first_rule(table, text)))


def observe(turns: Sequence[Turn]) -> tuple[Observation, ...]:
    """One `Observation` per turn of one session (or experience), in order."""
    turns = tuple(turns)
    w = walk(turns)
    results = {r.at_result: r for r in w.runs}
    calls = {r.at_call: r for r in w.runs}
    out = []
    for i, t in enumerate(turns):
        act, verdict, sig, detail, rules = "other", "", "", "", ()
        if t.kind == "thinking":
            act = "think"
        elif t.kind == "text":
            act, rules = _said(t)
            detail = one_line(t.text, 100)
        elif t.kind == "tool_call":
            command = command_of(t)
            if is_change(t) and not (command and runs_check(command)):
                act, detail = "change", ", ".join(changed_paths(t)) or one_line(command or t.text, 100)
            elif i in calls or (command and runs_check(command)):
                act, detail = "check", one_line(command, 100)
            elif task := retrieved_id(t):  # its result is the verdict of a check sent to the background
                act, detail = "check", f"the result of background command {task}"
            else:
                act, detail = "look", one_line(command or t.text, 100)
        elif t.kind in ("tool_result", "error"):
            act = "result"
            run = results.get(i)
            if run is not None:
                verdict = "fail" if run.failed else "pass" if run.passed else "pending"
                sig = run.signature
                rules = tuple(n for n in (first_rule(PENDING, t.text[:300]),) if n)
            elif t.kind == "error":
                sig = error_signature(t.text)
            subject = commit_subject(t.text) if t.kind == "tool_result" else ""
            if subject:
                act, detail = "commit", one_line(subject, 100)
        out.append(Observation(t.seq, t.line, t.role, t.kind, act, verdict, sig, detail, rules))
    return tuple(out)
