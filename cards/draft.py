"""Rule-filled cards: turn one `Experience` into a six-section `Card` without inventing anything.

Every sentence in a drafted card is copied (and bounded) from the experience's own turns; a
section with nothing to copy stays empty, which is safer than an invented one.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime, timezone

from memoir.cards.conclude import choose_conclusion
from memoir.cards.lesson import within_budget, without_filler, without_orders, without_wrapper
from memoir.cards.distill.extract import Disproval, find_disproved
from memoir.cards.fix_line import with_the_fix
from memoir.cards.loop import LOOKS_AHEAD, Failure, Loop, fixed_loop, loops, mentions, names_in, states_something, walk
from memoir.cards.limits import limit_lines, restates_error, split_limits
from memoir.cards.values import Card, Experience, Source, Turn
from memoir.cards.evidence import Ending, ending, ends_cut, evidence_list, open_statement, shown_in
from memoir.cards.outcomes import failure_conditions, verification
from memoir.cards.phrasebook import DECISIONS, HEDGES, first_rule
from memoir.cards.proof import ACTIVE_KINDS, Proof, contradiction, prove, stepped
from memoir.cards.quality_inputs import EvidenceView, typed_by_user
from memoir.cards.cues import commit_subject, is_chatter, is_prompt_template, remembered
from memoir.cards.self_evident import told_by_error
from memoir.cards.signatures import error_signature, shown_error
from memoir.cards.title import make_title, strip_boilerplate, strip_opener

MAX_GOAL = 800
MAX_EVIDENCE_ITEMS = 12
MAX_ITEM = 240
MAX_DECISION = 1500  # a decision is the user's own sentence; a longer text they pasted is someone else's document

_FOLLOW_UP = re.compile(
    r"(?im)^.*\b(?:TODO|FIXME|follow[- ]up|next steps?|still need(?:s)? to|not yet|left to do|later we|"
    r"remaining work|open question)\b.*$"
)
# A literal each `_FOLLOW_UP` cue holds: most turns hold none, and a substring test skips the regex's
# line-by-line backtracking. Only for ASCII text: under IGNORECASE `ſ` is an `s` and `ı` an `i`.
_FOLLOW_UP_STEMS = ("todo", "fixme", "follow", "next step", "still need", "not yet", "left to do", "later we",
                    "remaining work", "open question")

# Topic -> (single words matched as tokens, phrases matched as substrings). Token sets keep this
# linear in the text: one lowercase + one split, however many topics there are.
_TOPIC_WORDS: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {
    "configuration": (frozenset({"config", "configuration", "settings", "setting", ".toml", ".yaml", ".yml", ".ini", ".env"}), ("env var", "environment variable")),
    "dependencies": (frozenset({"dependency", "dependencies", "requirements.txt", "package.json", "lockfile", "poetry", "pyproject.toml"}), ("pip install", "npm install", "uv add")),
    "versions": (frozenset({"version", "upgrade", "downgrade", "upgraded", "downgraded"}), ()),
    "tests": (frozenset({"pytest", "unittest", "jest", "vitest"}), ("test suite", "failing test")),
    "build": (frozenset({"build", "compile", "webpack", "vite", "cmake", "makefile"}), ()),
    "git": (frozenset(), ("git commit", "git rebase", "git merge", "git push", "git pull", "git checkout", "git stash")),
    "database": (frozenset({"sql", "sqlite", "sqlite3", "postgres", "migration", "database"}), ()),
    "docker": (frozenset({"docker", "container", "compose", "dockerfile"}), ()),
    "typescript": (frozenset({"typescript", "tsc", "tsconfig.json"}), (".ts ", ".tsx")),
    "python": (frozenset({"python", "python3", "pip"}), (".py ", ".py:", ".py\n")),
    "performance": (frozenset({"slow", "latency", "performance", "profile", "profiling", "benchmark"}), ()),
    "network": (frozenset({"http", "https", "timeout", "dns", "socket"}), ("connection refused",)),
}
_TOKEN = re.compile(r"[a-z0-9_][a-z0-9_.\-]*")


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit]
    stop = max(cut.rfind(". "), cut.rfind("\n"))
    cut = (cut[: stop + 1] if stop > limit // 2 else cut).rstrip()
    if cut.count("```") % 2:  # never leave a code fence open: cut before the block instead
        cut = cut[: cut.rfind("```")].rstrip() or cut + "\n```"
    return cut + " […]"


def _one_line(text: str, limit: int = MAX_ITEM) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _iso(ts: datetime | None) -> str:
    if ts is None:
        return ""
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=timezone.utc)
    return ts.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def conclusion_problem(conclusion: str, min_chars: int) -> str:
    """Why a conclusion cannot be trusted as complete ('' when it can): too short or visibly cut off."""
    text = conclusion.strip()
    if len(text) < min_chars:
        return "conclusion_too_short"
    if text.count("```") % 2:
        return "conclusion_open_code_fence"
    if text.endswith("[…]"):
        return ""
    if ends_cut(text):
        return "conclusion_cut_off"
    return ""


_DISPROVED_BY = {
    "contradicted": "contradicted at t{by}",
    "still_failing": "same failure again at t{by}",
    "reverted": "reverted at t{by}",
    "failed_attempt": "tried; the same check still failed at t{by}",
}


def _disproved_line(turn: Turn, d: Disproval) -> str:
    return f"- [t{turn.seq}] disproved ({_DISPROVED_BY[d.reason].format(by=d.by)}): {_one_line(turn.text)}"


_BARE_EXIT = re.compile(r"`exit code -?\d+`")  # says that something failed, not what or when
_CONDITION_PREFIX = {"condition": "appears when: ", "attempt": "did not help: "}


def _counterexamples(exp: Experience, conclusion: str = "") -> str:
    """Failure conditions by rule: what the user said made it appear, attempts that did not help,
    disproved claims, and the conclusion's own scope sentences (`cards.limits`). The error the fix
    removed, or any error met on the way, is no limit: Evidence shows it."""
    dead = find_disproved(exp.turns)
    errors = {exp.error_signature} | {error_signature(t.text) for t in exp.turns if t.kind == "error"}
    lines = [f"- {_CONDITION_PREFIX.get(c.kind, '')}{_one_line(strip_opener(c.text) if c.kind == 'condition' else c.text)} (t{c.seq})"
             for c in failure_conditions(exp.turns) if c.kind != "error" and not _BARE_EXIT.search(c.text)
             and not (c.kind == "condition" and restates_error(c.text, errors))]
    lines += [_disproved_line(t, dead[t.seq]) for t in exp.turns if t.seq in dead]
    lines += limit_lines(conclusion, "\n".join(lines))
    return "\n".join(lines[:MAX_EVIDENCE_ITEMS])


def _follow_up(exp: Experience, end: Ending | None = None) -> str:
    found: list[str] = [f"- open: {end.question}"] if end is not None else []
    for t in exp.turns:
        if t.kind == "text" and t.role in ("user", "assistant") and not is_prompt_template(t.text):
            if t.text.isascii():
                low = t.text.lower()
                if not any(stem in low for stem in _FOLLOW_UP_STEMS):
                    continue
            found.extend(f"- {_one_line(m.group(0))}" for m in _FOLLOW_UP.finditer(t.text))
    if exp.turns and exp.turns[-1].kind == "error":
        last = exp.turns[-1].text
        found.append(f"- unresolved at end: `{_one_line(shown_error(last, error_signature(last)) or last, 160)}`")
    return "\n".join(dict.fromkeys(found[:8]))


def topics_of(text: str, signature: str = "") -> tuple[str, ...]:
    low = text.lower()
    tokens = set(_TOKEN.findall(low))
    for token in list(tokens):
        if "." in token:
            parts = token.strip(".").split(".")
            tokens.update(parts)
            tokens.add("." + parts[-1])
    tokens.discard("")
    found = [name for name, (words, phrases) in _TOPIC_WORDS.items()
             if not words.isdisjoint(tokens) or any(p in low for p in phrases)]
    if signature:
        kind = signature.split(":", 1)[0].strip()
        if kind and len(kind) < 40:
            found.append(kind)
    return tuple(sorted(dict.fromkeys(found)))


def task_type_of(exp: Experience) -> str:
    goal = " ".join(t.text for t in exp.turns if t.role == "user" and t.kind == "text")[:2000].lower()
    if any(t.kind == "error" for t in exp.turns) or re.search(r"\b(?:bug|error|fail|broken|crash|fix)", goal):
        return "debug"
    if re.search(r"\brefactor|rename|clean ?up\b", goal):
        return "refactor"
    if re.search(r"\b(?:config|configure|set ?up|install)\b", goal):
        return "config"
    if not any(t.kind == "tool_call" for t in exp.turns):
        return "question"
    return "feature"


def _background(exp: Experience) -> str:
    bits = []
    if exp.workspace:
        bits.append(f"Workspace `{exp.workspace}`")
    branch = next((t.git_branch for t in exp.turns if t.git_branch), "")
    if branch:
        bits.append(f"branch `{branch}`")
    head = ", ".join(bits) if bits else "Session"
    span = _iso(exp.started)
    when = f" on {span[:10]}" if span else ""
    reason = {
        "start": "",
        "task_switch": " The user switched to this task from an earlier one.",
        "wrap_up": " Started after the previous task was wrapped up.",
        "commit": " Started after the previous task was committed.",
        "tests_green": " Started after the previous task's checks passed.",
        "tracker_close": " Started after the previous task was closed in its tracker.",
        "pr": " Started after a pull request closed the previous task.",
        "plan_accepted": " Started when the plan for it was accepted.",
        "user_done": " Started after the user called the previous task done.",
        "said_done": " Started after the previous task was reported done.",
        "clear": " Started after the user cleared the conversation.",
        "pause": " Resumed after a long pause.",
        "compaction": " Follows a host compaction of earlier context.",
        "error_change": " A new error took over from the previous one.",
        "inner_loop": " A problem met and fixed on the way through a longer task.",
        "stated_choice": " A choice the user made in a longer discussion.",
    }.get(exp.boundary, "")
    return f"{head}; {exp.host} session `{exp.session_id}`{when}, turns {exp.first_seq}–{exp.last_seq}.{reason}"


def goal_of(exp: Experience) -> str:
    """The user's first real request (greetings, slash commands and interruption markers skipped)."""
    asked = [t for t in exp.turns if t.role == "user" and t.kind == "text" and not is_chatter(t.text)]
    # A slash command's expanded template is the command's text, not the user's request: the user's own words first.
    for t in sorted(asked, key=lambda t: is_prompt_template(t.text)):
        text = strip_boilerplate(t.text)
        if text:
            return text
    return ""


def _last_commit_subject(exp: Experience) -> str:
    for t in reversed(exp.turns):
        if t.kind == "tool_result" and (subject := commit_subject(t.text)):
            return subject
    return ""


def draft_card(exp: Experience, min_conclusion_chars: int = 40, ends_session: bool = True) -> Card:
    """A rule-filled card: `incomplete` when the experience ends unresolved (`cards.loop.ending`:
    its conclusion is then the open state, never an earlier sentence) or the conclusion fails the
    integrity check, `candidate` (gate `no_settled_conclusion`) when the session settled nothing a
    card could state. Only a check that failed before the change and passes after it, or a fresh
    check after the change, verifies (`cards.outcomes.verification`)."""
    goal = goal_of(exp) or strip_boilerplate(exp.request)
    if not goal and exp.error_signature:
        goal = f"Get past `{shown_in(exp.turns, exp.error_signature)}` (continued from the previous task)."
    end = ending(exp.turns, ends_session)
    found = choose_conclusion(exp.turns)
    memory_at, memory = _remembered(exp)
    if memory:  # the user's rule in their words, not the agent's paraphrase of it; their saying so is the check
        found, end = replace(found, text=memory, seq=memory_at, source="users_words", verified_by=f"t{memory_at}"), None
    fix = verification(exp.turns)
    if end is not None:  # unresolved: the open state, never an earlier sentence
        found = replace(found, text=open_statement(exp.turns, end), verified_by="", source="open")
        said = found.text
    else:
        said = without_filler(found.text) if found.settled else ""  # the lesson, its scope sentences included
    view = EvidenceView.of_experience(exp)  # who said what: the orders below, the user's confirmation
    # Paragraphs labelled as limits go to Counterexamples; an order only the agent gave is no part of the lesson.
    conclusion = within_budget(without_orders(without_wrapper(split_limits(said)[0]), view.user_words))
    said_yes = view.confirming_turn(found.text) if found.settled and end is None else None
    proof = prove(exp.turns, confirmed_at=said_yes.seq if said_yes is not None else None,
                  users_words=bool(memory) or found.settled and _users_choice(found.text, view.user_words))
    if proof.kind == "fix" and found.settled and end is None:
        conclusion = with_the_fix(conclusion, fixed_loop(exp.turns), exp.turns)
    verified = proof.verified_by if found.settled and end is None else ""
    verified = found.verified_by if memory else verified
    if proof.kind != "confirmed_answer":
        said_yes = None
    if proof.kind in ("fix", "confirmed_answer") and end is None:
        exp = replace(exp, error_signature=proof.signature)  # the error the card is about, not one met on the way
    if end is not None:
        problem, status = end.reason, "incomplete"
    elif found.settled:
        problem = conclusion_problem(conclusion, min_conclusion_chars)
        status = "incomplete" if problem else "active"
    else:
        problem, status = "no_settled_conclusion", "candidate"
    # Topics come from what was asked, said, run and failed; tool output (file bodies, logs) is
    # incidental and would tag every card with whatever the files happened to mention.
    all_text = "\n".join(t.text[:2000] for t in exp.turns if t.kind in ("text", "tool_call", "error"))
    lo, hi = exp.lines
    title = make_title(commit_subject=_last_commit_subject(exp), signature=exp.error_signature,
                       shown=shown_in(exp.turns, exp.error_signature),
                       conclusion=conclusion, request=goal, settled=found.settled and not problem)
    return Card(
        id=exp.id,
        title=title,
        status=status,
        quality="rule",
        topics=topics_of(all_text, exp.error_signature),
        task_type=task_type_of(exp),
        workspace=exp.workspace,
        created=_iso(exp.started),
        updated=_iso(exp.ended),
        sources=(
            Source(
                session_id=exp.session_id,
                host=exp.host,
                file=exp.source_file,
                lines=(lo, hi),
                turns=(exp.first_seq, exp.last_seq),
            ),
        ),
        error_signature=exp.error_signature,
        gate=problem,
        verified_by=verified,
        background=_background(exp),
        goal=_clip(goal, MAX_GOAL),
        evidence=evidence_list(exp, fix) + (f"\n- [t{said_yes.seq}] confirmed by the user: {_one_line(said_yes.text, 160)}"
                                          if said_yes is not None else ""),
        conclusion=conclusion,
        counterexamples=_counterexamples(exp, said),
        follow_up=_follow_up(exp, end),
        extra=_extra(found.source, proof, end is None and found.settled),
    )


def _remembered(exp: Experience) -> tuple[int | None, str]:
    """The turn and the conclusion of a rule the user asked the agent to remember, in their own words,
    when nothing in the experience failed and was fixed (a fix is the lesson then): `Remember: always
    pnpm, never npm`."""
    at, said = next(((t.seq, w) for t in exp.turns if t.role == "user" and t.kind == "text" and (w := remembered(t.text))),
                    (None, ""))
    if not said or fixed_loop(exp.turns) is not None:
        return None, ""
    return at, f"In the user's words, to remember: {said}"


def _users_choice(conclusion: str, user_words: tuple[str, ...]) -> bool:
    """The conclusion is a choice the user stated in their own words (`cards.phrasebook.DECISIONS`),
    not a request of theirs the report restates."""
    said = [w for w in user_words if len(w) <= MAX_DECISION and first_rule(DECISIONS, w)]
    return bool(said) and typed_by_user(conclusion, said)


def _extra(source: str, proof: Proof, settled: bool) -> dict:
    """Front matter beyond the schema's fields: where the conclusion came from, and the card's kind
    with what decided it (`cards.proof`), which the quality gates read back from the file."""
    extra = {"conclusion_source": source} if source else {}
    if settled:
        extra["kind"] = proof.kind
        extra["proof"] = proof.why
        if proof.self_inflicted:
            extra["self_inflicted"] = True
        if proof.told:
            extra["told_by_error"] = True
    return extra


def read_past_range(session: tuple[Turn, ...], drafted: list[tuple[Experience, Card]]) -> list[tuple[Experience, Card]]:
    """Each settled card checked against the rest of its session (`cards.proof.contradiction`): a card
    a later turn takes back gets `contradicted_by` (the turn and the rule), which the quality gate
    `contradicted_later` reads, so it never goes active."""
    at = {t.seq: i for i, t in enumerate(session)}
    out = []
    for exp, card in drafted:
        if card.extra.get("kind") == "fix" and exp.first_seq in at and card.verified_by:
            # Read before the range too: a check that was green before the failure the user pasted proves nothing.
            again = prove(exp.turns, confirmed_at=None, users_words=False, before=session[:at[exp.first_seq]])
            if again.kind != "fix" and prove(exp.turns, confirmed_at=None, users_words=False).kind == "fix":
                card = card.with_(verified_by="", extra={**card.extra, "kind": again.kind, "proof": again.why})
        if card.extra.get("kind") in ACTIVE_KINDS and exp.last_seq in at:
            found = contradiction(prove(exp.turns, confirmed_at=None, users_words=False), session, at[exp.last_seq],
                                  card.conclusion)
            if found is not None:
                card = card.with_(extra={**card.extra, "contradicted_by": found.cite()})
        out.append((exp, card))
    return out


MAX_INNER_LESSONS = 6  # per experience: a long autonomous turn rarely holds more real lessons than this


def inner_lessons(exp: Experience, card: Card, min_conclusion_chars: int = 40) -> list[tuple[Experience, Card]]:
    """A card for each red → change → green loop inside a longer experience that its own card is not about.

    A long task (a feature, a "yes to all" run) often meets real problems on its way: a framework
    import a test needed, a sandbox that blocks a write, a migration SQLite cannot run. The task's
    card is a work report, but each such loop is a lesson the log proves. Its experience runs from
    the failing call to the check that passed, plus the assistant's words right after it; its
    request is the task's goal. The same gates judge it as any card (a slip of the agent's own is
    still held as `self_inflicted`).
    """
    own = prove(exp.turns, confirmed_at=None, users_words=False).problem_seq if card.extra.get("kind") == "fix" else None
    turns = exp.turns
    index = {t.seq: i for i, t in enumerate(turns)}
    out: list[tuple[Experience, Card]] = []
    for lp in loops(turns):
        if lp.fix is None or not lp.failure.command or len(out) >= MAX_INNER_LESSONS:
            continue
        out.extend(_steps(exp, lp, index, min_conclusion_chars)[:MAX_INNER_LESSONS - len(out)])
        if lp.failure.seq == own:
            continue  # the task's own card is about this loop
        start = next((r.at_call for r in walk(turns).runs if r.result.seq == lp.failure.seq), None)
        end = index.get(lp.fix.check.result.seq)
        if start is None or end is None or (start == 0 and end >= len(turns) - 1):
            continue  # the loop is the whole experience: its own card says it
        after = end + 1
        while after < len(turns) and turns[after].role == "assistant" and turns[after].kind in ("text", "thinking"):
            after += 1
        sub = Experience(exp.host, exp.session_id, turns[start:after], boundary="inner_loop",
                         error_signature=lp.failure.signature, request=goal_of(exp) or exp.request)
        inner = draft_card(sub, min_conclusion_chars, ends_session=False)
        if inner.extra.get("kind") == "fix":
            out.append((sub, inner))
    return out[:MAX_INNER_LESSONS]


def _steps(exp: Experience, lp: Loop, index: dict[int, int], min_conclusion_chars: int) -> list[tuple[Experience, Card]]:
    """The errors a chain cleared on its way to green: a change after which the same check no longer
    shows the error, but stops at another one, fixed that error; the chain's final green run is the
    proof that the check can get past all of them. One card per error, named by it, concluded by the
    assistant's words before that change (or the evidence itself)."""
    out: list[tuple[Experience, Card]] = []
    fix = lp.fix
    if fix is None:
        return out
    before_sig, before_at = lp.failure.signature, lp.failure.seq
    by_seq = {t.seq: t for t in exp.turns}
    own = stepped(lp)
    for attempt in lp.attempts[:-1]:
        sig = attempt.check.signature
        if before_sig not in own or attempt.worked or not sig or sig == before_sig:
            before_sig, before_at = sig, attempt.check.result.seq
            continue
        start = index.get(before_at, 0)
        start = next((i for i in range(start, -1, -1) if exp.turns[i].kind == "tool_call"), start)
        end = index[attempt.check.result.seq]
        sub = Experience(exp.host, exp.session_id, exp.turns[start:end + 1], boundary="inner_loop",
                         error_signature=before_sig, request=goal_of(exp) or exp.request)
        failure = Failure(0, before_at, lp.failure.command, before_sig)
        stepped_loop = Loop(failure, (attempt,))
        shown = shown_error(by_seq[before_at].text, before_sig) if before_at in by_seq else before_sig
        said = [_without_next_steps(by_seq[q].text) for q in attempt.said]
        said = [t for t in said if states_something(t) and not first_rule(HEDGES, t)]
        named = [t for t in said if mentions(t, names_in(attempt, failure))]
        evidence = (f"`{_one_line(lp.failure.command, 120)}` fails with `{_one_line(shown, 120)}` (t{before_at}); "
                    f"{attempt.tried()} cleared that error: the same check got past it at t{attempt.check.result.seq} "
                    f"(it stopped at another error, fixed after) and passed at t{fix.check.result.seq}.")
        text = (named or said or [evidence])[0]
        card = draft_card(sub, min_conclusion_chars, ends_session=False)
        conclusion = with_the_fix(within_budget(without_wrapper(without_filler(text))), stepped_loop, sub.turns)
        proof = (f"`{_one_line(shown, 60)}` at t{before_at} is gone from the same check after the change (t"
                 f"{attempt.check.result.seq} stops at another error), and the check passed at t{fix.check.result.seq}")
        problem = conclusion_problem(conclusion, min_conclusion_chars)
        card = card.with_(
            status="incomplete" if problem else "active", gate=problem, verified_by=f"t{fix.check.result.seq}",
            conclusion=conclusion, counterexamples=_counterexamples(sub, text),
            title=make_title(signature=before_sig, shown=shown, request=card.goal,
                             conclusion=conclusion if said else f"{attempt.tried()} cleared it"),
            follow_up="", extra={**card.extra, "kind": "fix", "proof": proof,
                                 "conclusion_source": "pre_fix_explanation" if said else "evidence"})
        card.extra.pop("self_inflicted", None)
        card.extra.pop("told_by_error", None)
        if shown and told_by_error(by_seq[before_at].text if before_at in by_seq else "", attempt.changes,
                                   lp.failure.command):
            card.extra["told_by_error"] = True
        out.append((sub, card))
        before_sig, before_at = sig, attempt.check.result.seq
    return out


def with_inner_lessons(exp: Experience, card: Card, min_conclusion_chars: int = 40) -> list[tuple[Experience, Card]]:
    """The experience's card and its `inner_lessons`; the error an inner card is about leaves the
    task's own card, so the rule stage does not merge the lesson into the work report."""
    inner = inner_lessons(exp, card, min_conclusion_chars)
    if inner and card.extra.get("kind") != "fix" and card.error_signature in {c.error_signature for _, c in inner}:
        card = card.with_(error_signature="")
    return _one_card_per_setting([(exp, card), *inner])


# "re-running it with `sandbox_permissions: require_escalated` fixed it" (`evidence.evidence_statement`).
_SETTING_FIX = re.compile(r"re-running it with (`[^`]+`(?: instead of `[^`]+`)?) fixed it")
_FAILED_WITH = re.compile(r"fails with `([^`]+)` \(t(\d+)\)")


def _one_card_per_setting(drafted: list[tuple[Experience, Card]]) -> list[tuple[Experience, Card]]:
    """One experience, one lesson per setting: when the same setting fixed several commands (a sandbox
    that needed escalation for `git fetch`, then for a branch), the first card says it, and names the
    other errors it also cleared; a second card would teach the same thing twice."""
    out: list[tuple[Experience, Card]] = []
    first: dict[str, int] = {}
    for exp, card in drafted:
        fixed = _SETTING_FIX.search(card.conclusion) if card.extra.get("kind") == "fix" else None
        if fixed is None:
            out.append((exp, card))
            continue
        if fixed[1] not in first:
            first[fixed[1]] = len(out)
            out.append((exp, card))
            continue
        at = first[fixed[1]]
        failed = _FAILED_WITH.search(card.conclusion)
        also = f"`{failed[1]}` (t{failed[2]})" if failed else f"`{card.error_signature}`"
        held_exp, held = out[at]
        out[at] = (held_exp, held.with_(conclusion=within_budget(f"{held.conclusion.rstrip()}\n\n"
                                                                  f"The same {fixed[1]} also cleared {also}.")))
    return out


_SENTENCE_END = re.compile(r"(?<=[.!?:])\s+")


def _without_next_steps(text: str) -> str:
    """The text without its closing sentences that only announce the next step ("Let me add it.")."""
    parts = _SENTENCE_END.split(text.strip().replace("\u2019", "'"))
    while parts and LOOKS_AHEAD.match(parts[-1].strip()):
        parts.pop()
    return " ".join(parts).rstrip(":").strip()
