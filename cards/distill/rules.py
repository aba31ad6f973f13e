"""Rule distillation (DESIGN stage 5): deterministic, no model, and nothing invented.

Two halves. Per experience: `extract_conclusions` finds explicit conclusion statements and
`find_disproved` finds claims a later turn contradicted (`cards.conclude` ranks them with the
closing report and the commit message). Across cards:
`apply_rules` dedups, merges by error signature and sets supersession or conflict, returning a
`RulesPlan` the pipeline applies with the card store.

Cost stays near-linear in the library size: every comparison goes through a hash map keyed by
dedup key, (workspace, signature) or (workspace, identifier), never through all pairs.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

from memoir.cards.values import Card, Experience, Source, Turn, per_turns
from memoir.cards.outcomes import is_change, is_passing, may_hold_verdict, shows_failure_summary  # one verdict for every stage
from memoir.cards.signatures import error_signature

# --- explicit conclusions and disproved judgments (within one experience) ------------------------

CONCLUSION_CUE = re.compile(
    r"(?i)\b(?:the fix (?:was|is)|root cause|turns out|so the answer is|works now because|"
    r"the (?:problem|issue|bug) (?:was|is)|the solution (?:was|is)|this (?:fixes|fixed)|"
    r"fixed (?:by|it by)|the reason (?:was|is)|in short|to summari[sz]e|conclusion)\b"
)
# A guess is a claim too: it can be disproved even though it never states a conclusion.
HYPOTHESIS_CUE = re.compile(
    r"(?i)\b(?:should (?:fix|solve|resolve|help)|probably|likely|i think|my guess|i suspect|"
    r"the culprit|must be)\b"
)
DISPROVAL = re.compile(
    r"(?i)\b(?:that wasn'?t it|that (?:didn'?t|did not) (?:work|help|fix)|still (?:fail(?:s|ing)?|broken|"
    r"the same error)|same error|wrong (?:guess|assumption)|my (?:earlier|previous) (?:guess|assumption|"
    r"claim) was wrong|not the (?:cause|problem|issue)|revert(?:ed|ing)?)\b"
)
_REVERT_CALL = re.compile(r"\bgit (?:revert|reset --hard|restore|checkout --)|\bundo\b", re.I)
_FAILED_TEST = re.compile(r"(?m)(?:^FAILED |^ERROR |--- FAIL: |✗ |✕ )(\S+)")
_FAILED_TEST_MARKERS = ("FAILED ", "ERROR ", "--- FAIL: ", "✗ ", "✕ ")

CONFIRMED_CUE = "confirmed_test_run"


@dataclass(frozen=True, slots=True)
class Statement:
    """An explicit conclusion a session made, with the turn it came from."""

    seq: int
    text: str
    cue: str
    verified_by: int | None = None  # seq of a passing test run after a change, if one followed


@dataclass(frozen=True, slots=True)
class Disproval:
    """A claim (turn `seq`) that turn `by` contradicted; `reason` says how."""

    seq: int
    by: int
    reason: str  # contradicted | still_failing | reverted


def _is_text(turn: Turn, role: str | None = None) -> bool:
    return turn.kind == "text" and bool(turn.text.strip()) and (role is None or turn.role == role)


def is_claim(turn: Turn) -> bool:
    return _is_text(turn, "assistant") and bool(CONCLUSION_CUE.search(turn.text) or HYPOTHESIS_CUE.search(turn.text))


@functools.lru_cache(maxsize=8192)
def failed_tests(text: str) -> frozenset[str]:
    if not any(marker in text for marker in _FAILED_TEST_MARKERS):
        return frozenset()
    return frozenset(m.group(1) for m in _FAILED_TEST.finditer(text))


def find_disproved(turns: Sequence[Turn]) -> dict[int, Disproval]:
    """Claims a later turn contradicted: "that wasn't it", the same error or test failing again, a revert.

    Only the latest open claim can be disproved by a turn; a passing test run closes it (confirmed).
    """
    return dict(_find_disproved(tuple(turns)))


@per_turns  # drafting one card asks this of the same turns three times
def _find_disproved(turns: tuple[Turn, ...]) -> dict[int, Disproval]:
    out: dict[int, Disproval] = {}
    claim: Turn | None = None
    target_sig, target_tests = "", frozenset()
    last_sig, failing = "", frozenset()

    def disprove(by: Turn, reason: str) -> None:
        nonlocal claim
        assert claim is not None
        out[claim.seq] = Disproval(claim.seq, by.seq, reason)
        claim = None

    for turn in turns:
        if claim is not None and _is_text(turn) and turn.role in ("user", "assistant") and DISPROVAL.search(turn.text):
            disprove(turn, "contradicted")
        if is_claim(turn):
            claim, target_sig, target_tests = turn, last_sig, failing
            continue
        if turn.kind == "tool_call":
            if claim is not None and _REVERT_CALL.search(turn.text):
                disprove(turn, "reverted")
            continue
        if turn.kind not in ("error", "tool_result"):
            continue
        if turn.kind == "tool_result" and not may_hold_verdict(turn):
            continue  # a file body or an edit's acknowledgement neither confirms nor disproves
        bad = turn.kind == "error" or shows_failure_summary(turn.text)
        sig = error_signature(turn.text) if bad else ""
        tests = failed_tests(turn.text) if bad else frozenset()  # a run that lists FAILED tests is bad
        if claim is not None and ((sig and sig == target_sig) or (tests & target_tests)):
            disprove(turn, "still_failing")
        elif claim is not None and not bad and is_passing(turn.text):
            claim = None  # confirmed: a later error is a new problem, not a verdict on this claim
        if bad:
            last_sig = sig or last_sig
            failing = tests or failing
        elif is_passing(turn.text):
            last_sig, failing = "", frozenset()
    return out


def _confirmation(turns: Sequence[Turn], i: int) -> int | None:
    """Seq of a passing test run after a change that follows statement `i`, with no error between."""
    changed = False
    for turn in turns[i + 1:]:
        if _is_text(turn, "user"):
            return None
        if turn.kind == "error" or (turn.kind == "tool_result" and may_hold_verdict(turn) and shows_failure_summary(turn.text)):
            return None
        if not changed and _is_text(turn, "assistant") and len(turn.text.strip()) >= 40:
            return None  # a later statement is closer to the change than this one
        if is_change(turn):
            changed = True
        elif changed and turn.kind == "tool_result" and may_hold_verdict(turn) and is_passing(turn.text):
            return turn.seq
    return None


def _from_sentence(text: str, pos: int) -> str:
    """The text from the start of the sentence holding `pos` to the end: drops a disproval preamble."""
    ends = [i + len(sep) for sep in (". ", "! ", "? ", "\n") if (i := text.rfind(sep, 0, pos)) >= 0]
    return text[max(ends, default=0):].strip()


def extract_conclusions(turns: Sequence[Turn]) -> tuple[Statement, ...]:
    """Explicit conclusion statements that were not disproved, oldest first.

    A statement is a cue phrase ("the fix was", "root cause", "turns out", "so the answer is",
    "works now because", …) or, without one, the assistant's account of a change that a passing
    test run then confirmed.
    """
    dead = find_disproved(turns)
    found: list[Statement] = []
    for i, turn in enumerate(turns):
        if not _is_text(turn, "assistant") or turn.seq in dead:
            continue
        confirmed = _confirmation(turns, i)
        m = CONCLUSION_CUE.search(turn.text)
        if m:
            found.append(Statement(turn.seq, _from_sentence(turn.text, m.start()), m.group(0).lower(), confirmed))
        elif confirmed is not None:
            found.append(Statement(turn.seq, turn.text.strip(), CONFIRMED_CUE, confirmed))
    return tuple(found)


# --- across cards: keys --------------------------------------------------------------------------

LIVE = ("active", "candidate")
CONFLICT_GATE = "unresolved_conflict"
MAX_TOPIC_BUCKET = 64  # an identifier shared by more cards than this names no single topic
TOPIC_LOOKUPS = 4  # rarest identifiers of a card used to find same-topic candidates
MAX_EVIDENCE_BLOCKS = 24  # per merged card; every source stays in `sources` regardless
MAX_COUNTEREXAMPLES = 32  # lines per merged card, for the same reason
GOAL_OVERLAP = 0.6
IDENT_OVERLAP = 0.5

_SEQ_REF = re.compile(r"\[t\d+\]|\(t\d+\)|\bt\d+(?:[–-]\d+)?\b")
_PLACEHOLDER = re.compile(r"<(?:path|id|hex|n|str)>")
_NAMED_FAILURE = re.compile(r"[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Warning|Fault)")
_NAMED_STATE = re.compile(r"CrashLoopBackOff|OOMKilled|ImagePullBackOff|ErrImagePull|CreateContainerConfigError|"
                          r"HTTP [45]\d\d(?: [A-Z][\w ]+)?")
_NAMED_KIND = re.compile(r"panic|fatal|fatal error|command not found|HTTP [45]\d\d|Segmentation fault")
_ERROR_CODE = re.compile(r"E[A-Z]{3,}|E\d{3,5}|TS\d{4}|[A-Z]{2,5}-?\d{3,5}")
_IDENT = re.compile(
    r"(?:--?)?[A-Za-z_][\w-]*(?:[./:][\w-]+)+|[A-Za-z][A-Za-z0-9]*_\w+|[a-z]+[A-Z]\w*|[A-Za-z]+\d+\w*|`([^`\s]{3,60})`"
)
_WORD = re.compile(r"[a-z][a-z0-9_]{3,}")
_STOP = frozenset(
    "that this with from have when what which there their then than them they into onto about after before "
    "again also just like make made does doing done will would could should can't cannot please want need "
    "help some more most only over under very your yours here where while being been were why how tell let "
    "lets let's file files code thing things work works working still using use used way get got".split()
)


@functools.lru_cache(maxsize=16384)
def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def _hash(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:16]


def content_key(card: Card) -> str:
    """Same goal, conclusion, evidence and signature (turn numbers masked) → same experience."""
    evidence = _SEQ_REF.sub("", card.evidence)
    if not (card.conclusion.strip() or evidence.strip()):
        return ""  # an empty card says too little to be called a duplicate of anything
    return "k-" + _hash(_norm(card.goal), _norm(card.conclusion), _norm(evidence), _norm(card.error_signature))


def turns_key(exp: Experience) -> str:
    """The host's own turn ids: a resumed session that replays turns replays their uuids too."""
    uuids = [t.uuid for t in exp.turns]
    return "u-" + _hash(*sorted(uuids)) if uuids and all(uuids) else ""


def dedup_keys(card: Card, exp: Experience | None = None) -> tuple[str, ...]:
    stored = card.extra.get("dedup_keys") or ()
    keys = {str(k) for k in stored} | {content_key(card), turns_key(exp) if exp else ""}
    return tuple(sorted(k for k in keys if k))


def merge_signature(card: Card) -> str:
    """The signature cards merge on, or '' when it cannot tell one failure from another.

    Only a named failure counts (an exception type or an error code): a generic line such as
    "tool call error: tool call failed for <path>" is the agent's tooling, not the problem. And
    the message must keep words once paths, ids and quoted names are masked ("KeyError: <str>"
    says nothing on its own).
    """
    sig = card.error_signature.strip()
    if _NAMED_STATE.fullmatch(sig):
        return _norm(sig)  # a state that names the failure by itself: CrashLoopBackOff, OOMKilled
    kind, _, message = sig.partition(":")
    if not (_NAMED_FAILURE.fullmatch(kind.strip()) or _ERROR_CODE.fullmatch(kind.strip())
            or _NAMED_KIND.fullmatch(kind.strip())):
        return ""
    norm = _norm(card.error_signature)
    return norm if len(re.findall(r"[a-z]{2,}", _PLACEHOLDER.sub(" ", message.casefold()))) >= 2 else ""


def signature_family(card: Card) -> str:
    """A coarser key than `merge_signature`: the failure's kind and the first words of its message.

    "OperationalError: database is locked" and "OperationalError: database is locked (<path>)"
    are one failure; so are two wordings that differ only after their first four words.
    """
    sig = merge_signature(card)
    if not sig:
        return ""
    kind, _, message = sig.partition(":")
    words = re.findall(r"[a-z]{2,}", _PLACEHOLDER.sub(" ", message))
    return f"{kind.strip()}: {' '.join(words[:4])}"


def related_workspaces(a: str, b: str) -> bool:
    """The same project folder, one inside the other (a monorepo and its package), or folders of
    the same name (one project seen from two machines, or through an Aider history's folder)."""
    if not a or not b:
        return False
    a, b = a.replace("\\", "/").rstrip("/") + "/", b.replace("\\", "/").rstrip("/") + "/"
    return a.startswith(b) or b.startswith(a) or a.rsplit("/", 2)[-2] == b.rsplit("/", 2)[-2]


SAME_FIX_OVERLAP = 0.5


def same_fix(a: Card, b: Card) -> bool:
    """Do two resolutions of one failure say the same thing (merge) or name another cause (supersede)?"""
    if _norm(a.conclusion) == _norm(b.conclusion):
        return True
    ia, ib = identifiers(a.conclusion), identifiers(b.conclusion)
    if ia and ib and _overlap(ia, ib) >= SAME_FIX_OVERLAP and len(ia ^ ib) <= max(2, len(ia | ib) // 3):
        return True
    wa, wb = goal_words(a.conclusion), goal_words(b.conclusion)
    return bool(wa and wb) and len(wa & wb) / len(wa | wb) >= SAME_FIX_OVERLAP


def identifiers(text: str) -> frozenset[str]:
    """Code-shaped tokens (dotted names, snake_case, camelCase, paths, flags, `quoted`), lowercased."""
    found = set()
    for m in _IDENT.finditer(text):
        token = (m.group(1) or m.group(0)).strip(".:/-").lower()
        if len(token) >= 3 and not token.replace(".", "").isdigit():
            found.add(token)
    return frozenset(found)


def goal_words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.casefold()) if w not in _STOP)


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / min(len(a), len(b)) if a and b else 0.0


def _source_key(s: Source) -> tuple[str, str, tuple[int, int]]:
    return (s.host, s.session_id, tuple(s.turns))  # type: ignore[return-value]


def _ts(value: str) -> datetime | None:
    if not value:
        return None
    try:
        ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return ts if ts.tzinfo else ts.replace(tzinfo=timezone.utc)


def _order(card: Card) -> tuple[str, str]:
    return (card.created, card.id)


def is_resolution(card: Card) -> bool:
    """A live card whose conclusion passed the integrity check: it can win, replace or be replaced."""
    return card.status in LIVE and bool(card.conclusion.strip()) and not card.gate.startswith("conclusion_")


# --- across cards: the rules ----------------------------------------------------------------------


def _one_line(text: str, limit: int = 240) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def source_label(s: Source) -> str:
    return f"{s.host} session {s.session_id}, turns {s.turns[0]}–{s.turns[1]}"


def _union_sources(a: Iterable[Source], b: Iterable[Source]) -> tuple[Source, ...]:
    out: dict[tuple, Source] = {}
    for s in (*a, *b):
        out.setdefault(_source_key(s), s)
    return tuple(out.values())


def _with_keys(card: Card, keys: Iterable[str]) -> Card:
    """Remember every experience a card stands for; a merged card's own text is no experience."""
    stored = {str(k) for k in card.extra.get("dedup_keys") or ()}
    own = {content_key(card)} - {""} if not stored else set()
    merged = sorted(stored | own | set(keys))
    if not merged:
        return card
    return card.with_(extra={**card.extra, "dedup_keys": merged})


def absorb_duplicate(target: Card, dup: Card, keys: Iterable[str] = ()) -> Card:
    """`dup` read the same experience again: `target` keeps its content and gains the provenance."""
    return _with_keys(target.with_(sources=_union_sources(target.sources, dup.sources)), keys)


_ELIDED = "### … evidence of"
_ELIDED_LINE = "- … omitted:"


def _evidence_blocks(card: Card) -> list[str]:
    if card.evidence.startswith("### ") or "conclusion_from" in card.extra:
        return [b.strip() for b in re.split(r"\n(?=### )", card.evidence) if b.strip()]
    head = f"### {source_label(card.sources[0])}" if card.sources else f"### {card.id}"
    return [f"{head}\n{card.evidence.strip() or '- (no steps recorded)'}"]


def _tag_lines(text: str, label: str) -> list[str]:
    """Counterexample lines of another session, with turn numbers tied to that session."""
    return [re.sub(r"^- ", f"- ({label}) ", ln) for ln in text.splitlines() if ln.strip()]


@functools.lru_cache(maxsize=16384)  # a merged card's lines are compared again on every merge
def _line_key(line: str) -> str:
    return _norm(_SEQ_REF.sub("", re.sub(r"^- \([^)]*\) ", "- ", line)))


def _conclusion_label(card: Card) -> str:
    label = card.extra.get("conclusion_from")
    return str(label) if label else (source_label(card.sources[0]) if card.sources else card.id)


def _newer(a: Card, b: Card) -> bool:
    """Is `a` the newer of the two by when its session ended (then started, then id)?"""
    return (a.updated, a.created, a.id) > (b.updated, b.created, b.id)


def merge_cards(base: Card, other: Card) -> Card:
    """Fold `other` (same workspace and error signature) into `base`, which keeps its id.

    The newest resolution wins the Conclusion; an older, different resolution moves to
    Counterexamples with its source. Evidence keeps one block per source session.
    """
    base_res, other_res = is_resolution(base), is_resolution(other)
    other_wins = other_res and (not base_res or _newer(other, base))
    winner, loser = (other, base) if other_wins else (base, other)
    lines = [ln for ln in base.counterexamples.splitlines() if ln.strip()]
    other_label = source_label(other.sources[0]) if other.sources else other.id
    said = {_line_key(ln) for ln in lines}
    for line in other.counterexamples.splitlines():
        if line.strip() and _line_key(line) not in said:  # the same failure seen again adds nothing
            said.add(_line_key(line))
            lines += _tag_lines(line, other_label)
    if is_resolution(loser) and _norm(loser.conclusion) != _norm(winner.conclusion):
        lines.append(
            f"- earlier resolution ({_conclusion_label(loser)}), replaced by a newer one: {_one_line(loser.conclusion)}"
        )
    lines = [ln for ln in lines if not ln.startswith(_ELIDED_LINE)]
    if len(lines) > MAX_COUNTEREXAMPLES:
        # Keep the card's own failure conditions and the newest replaced resolutions.
        omitted = len(lines) - MAX_COUNTEREXAMPLES + 1
        lines = lines[:8] + [f"{_ELIDED_LINE} {omitted} older counterexamples; their sessions are in `sources`"] + lines[8 + omitted:]
    sources = _union_sources(base.sources, other.sources)
    blocks = [b for b in _evidence_blocks(base) + _evidence_blocks(other) if not b.startswith(_ELIDED)]
    if len(blocks) >= MAX_EVIDENCE_BLOCKS:
        # Bounded so a signature seen in hundreds of sessions stays readable; `sources` lists them all.
        blocks = blocks[-(MAX_EVIDENCE_BLOCKS - 1):]
        blocks.insert(0, f"{_ELIDED} earlier sources than these: {len(sources)} in all\n- every one is listed in `sources`")
    sessions = len({(s.host, s.session_id) for s in sources})
    background = "\n".join(ln for ln in base.background.splitlines() if not ln.startswith("Seen in "))
    if sessions > 1:
        background = f"{background}\nSeen in {sessions} sessions with the same error signature."
    newest = other if _newer(other, base) else base
    decided = winner if is_resolution(winner) else base
    keep_conflict = base.gate == CONFLICT_GATE
    merged = base.with_(
        title=winner.title if is_resolution(winner) and winner.title else base.title,
        status="candidate" if keep_conflict else decided.status,
        gate=base.gate if keep_conflict else decided.gate,
        quality=decided.quality,
        topics=tuple(sorted(set(base.topics) | set(other.topics))),
        created=min(x for x in (base.created, other.created) if x) if base.created or other.created else "",
        updated=max(base.updated, other.updated),
        sources=sources,
        background=background.strip(),
        evidence="\n\n".join(blocks),
        conclusion=winner.conclusion if is_resolution(winner) else base.conclusion,
        counterexamples="\n".join(dict.fromkeys(lines)),
        follow_up=newest.follow_up,
        verified_by=winner.verified_by if is_resolution(winner) else base.verified_by,
        extra={**base.extra, "conclusion_from": _conclusion_label(winner)},
    )
    return _with_keys(merged, dedup_keys(other))


def same_topic(a: Card, b: Card) -> bool:
    """Conservative: same workspace and task type, no differing error signature, strongly overlapping
    goal words, and conclusions about the same identifiers that nonetheless say different things."""
    if not a.workspace or a.workspace != b.workspace or a.task_type != b.task_type:
        return False
    if a.error_signature and b.error_signature and _norm(a.error_signature) != _norm(b.error_signature):
        return False
    if _norm(a.conclusion) == _norm(b.conclusion):
        return False  # they agree: nothing is replaced
    ga, gb = goal_words(a.goal), goal_words(b.goal)
    if min(len(ga), len(gb)) < 3 or _overlap(ga, gb) < GOAL_OVERLAP:
        return False
    return _overlap(identifiers(a.conclusion), identifiers(b.conclusion)) >= IDENT_OVERLAP


def newer_card(a: Card, b: Card) -> Card | None:
    """The card whose session came strictly after the other's; None when the rules cannot tell.

    Overlapping sessions (two agents at once) and missing timestamps cannot be ordered.
    """
    sa, sb = a.sources[0] if len(a.sources) == 1 else None, b.sources[0] if len(b.sources) == 1 else None
    if sa and sb and (sa.host, sa.session_id) == (sb.host, sb.session_id):
        if sa.turns[1] < sb.turns[0]:
            return b
        if sb.turns[1] < sa.turns[0]:
            return a
        return None
    a0, a1, b0, b1 = _ts(a.created), _ts(a.updated or a.created), _ts(b.created), _ts(b.updated or b.created)
    if None in (a0, a1, b0, b1):
        return None
    if a1 < b0:  # type: ignore[operator]
        return b
    if b1 < a0:  # type: ignore[operator]
        return a
    return None


def _replaces(base: Card, card: Card) -> bool:
    """`card` is a later, verified resolution of `base`'s failure that names another cause or fix."""
    return (is_resolution(base) and is_resolution(card) and bool(card.verified_by)
            and not same_fix(base, card) and newer_card(base, card) is card)


def supersede(old: Card, new: Card) -> tuple[Card, Card]:
    """Both files say so: the old one points forward, the new one back, each naming the other's
    conclusion in its Background. Nothing is deleted."""
    old_note = f"Superseded by {new.id}, a later session that found: {_one_line(new.conclusion, 200)}"
    new_note = f"Supersedes {old.id}, which had concluded: {_one_line(old.conclusion, 200)}"
    return (
        old.with_(status="superseded", superseded_by=new.id, background=_with_note(old.background, old_note)),
        new.with_(supersedes=tuple(sorted(set(new.supersedes) | {old.id})),
                  background=_with_note(new.background, new_note)),
    )


def _with_note(background: str, note: str) -> str:
    kept = [ln for ln in background.splitlines() if ln.strip() and ln != note]
    return "\n".join([*kept, note])


def mark_conflict(a: Card, b: Card) -> tuple[Card, Card]:
    """Same topic, different conclusions, no way to tell which is newer: both wait as candidates."""

    def down(card: Card, other: Card) -> Card:
        others = sorted({str(x) for x in card.extra.get("conflicts_with") or ()} | {other.id})
        return card.with_(status="candidate", gate=CONFLICT_GATE, extra={**card.extra, "conflicts_with": others})

    return down(a, b), down(b, a)


def can_refresh(on_disk: Card, redraft: Card) -> bool:
    """An incomplete rule placeholder of exactly these turns, unmerged, and a redraft that is complete."""
    return (
        on_disk.status == "incomplete"
        and on_disk.quality == "rule"
        and len(on_disk.sources) == 1
        and "conclusion_from" not in on_disk.extra
        and is_resolution(redraft)
        and _norm(on_disk.conclusion) != _norm(redraft.conclusion)
    )


def supersession_chain(card_id: str, cards_by_id: dict[str, Card]) -> list[Card]:
    """Every card linked to `card_id` by supersession, oldest first (by created, then id)."""
    seen: dict[str, Card] = {}
    todo = [card_id]
    while todo:
        cid = todo.pop()
        card = cards_by_id.get(cid)
        if card is None or cid in seen:
            continue
        seen[cid] = card
        todo.extend(card.supersedes)
        if card.superseded_by:
            todo.append(card.superseded_by)
    return sorted(seen.values(), key=_order)


# --- the plan --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RulesPlan:
    """What the rule stage decided; the pipeline writes `write` and reports the rest."""

    write: list[Card] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)
    conflicts: list[tuple[str, str]] = field(default_factory=list)
    counters: Counter = field(default_factory=Counter)

    @property
    def superseded(self) -> list[str]:
        return sorted(c.id for c in self.write if c.status == "superseded")


class _Library:
    """The working set during one `apply_rules` call: library cards, their edits, and new cards."""

    def __init__(self, library: Iterable[Card]):
        self.original = {c.id: c for c in sorted(library, key=_order)}
        self.cards: dict[str, Card] = dict(self.original)
        self.new: list[str] = []

    def get(self, cid: str) -> Card:
        return self.cards[cid]

    def put(self, card: Card) -> None:
        if card.id not in self.cards:
            self.new.append(card.id)
        self.cards[card.id] = card

    def changed(self) -> list[Card]:
        out = [self.cards[cid] for cid in self.new]
        for cid, before in self.original.items():
            after = self.cards[cid]
            if after != before or after.extra != before.extra:
                out.append(after)
        return sorted(out, key=lambda c: c.id)


def apply_rules(drafted: Sequence[tuple[Experience, Card]], library: Sequence[Card],
                frozen: Collection[str] = ()) -> RulesPlan:
    """Dedup, merge by error signature, then supersede or flag conflicts; pure and idempotent.

    Args:
        drafted: this run's rule-drafted cards, each with the experience it came from.
        library: every card already on disk.
        frozen: ids of cards a person owns (edited by hand, confirmed or rejected in review):
            they still own their sources, but no rule merges into, refreshes, supersedes or
            conflicts them; a new card on their topic stands beside them instead.

    Returns:
        A `RulesPlan`. Applying it and calling again with the same `drafted` yields no writes:
        every drafted card is then recognised as already in the library by its sources.
    """
    lib = _Library(library)
    counters: Counter = Counter()
    dropped: list[tuple[str, str]] = []
    conflicts: list[tuple[str, str]] = []

    owner: dict[tuple, str] = {}
    by_key: dict[str, str] = {}
    by_signature: dict[tuple[str, str], str] = {}
    by_family: dict[str, list[tuple[str, str]]] = {}  # newest first
    by_ident: dict[tuple[str, str], list[str]] = {}
    frozen = frozenset(frozen)
    for card in lib.original.values():
        for s in card.sources:
            owner.setdefault(_source_key(s), card.id)
        for key in dedup_keys(card):
            by_key.setdefault(key, card.id)
        if card.id in frozen:
            continue  # the user's hand wins: only the lookups above (already read, duplicate) see it
        if card.status in LIVE or card.status == "incomplete":
            sig = merge_signature(card)
            if sig:
                by_signature.setdefault((card.workspace, sig), card.id)
            if card.status in LIVE and (family := signature_family(card)):
                by_family.setdefault(family, []).append((card.workspace, card.id))
        if is_resolution(card):
            for ident in identifiers(card.conclusion):
                by_ident.setdefault((card.workspace, ident), []).append(card.id)

    fresh: list[Card] = []
    for exp, card in sorted(drafted, key=lambda ec: _order(ec[1])):
        # Rule 1 — re-read: every source of this card already belongs to a card on disk.
        if card.id in lib.original and card.id not in frozen and can_refresh(lib.get(card.id), card):
            # The same turns drafted again now pass the integrity check (say after a renderer or
            # blob-cap fix): the complete draft replaces the incomplete placeholder.
            lib.put(_with_keys(card, dedup_keys(lib.get(card.id)) + dedup_keys(card, exp)))
            fresh.append(lib.get(card.id))
            counters["refreshed"] += 1
            continue
        owners = {owner.get(_source_key(s)) for s in card.sources}
        if card.id in lib.cards or (owners and None not in owners):
            holder = card.id if card.id in lib.cards else sorted(o for o in owners if o)[0]
            dropped.append((card.id, f"already_in {holder}"))
            counters["already_in_library"] += 1
            continue
        # Rule 2 — dedup: the same experience read twice (resumed session, sidechain, copied file).
        keys = dedup_keys(card, exp)
        twin = next((by_key[k] for k in keys if k in by_key), None)
        if twin is not None:
            if lib.get(twin).status != "forgotten" and twin not in frozen:  # tombstones, a person's cards: never rewritten
                lib.put(absorb_duplicate(lib.get(twin), card, keys))
            for s in card.sources:
                owner.setdefault(_source_key(s), twin)
            dropped.append((card.id, f"duplicate_of {twin}"))
            counters["duplicates"] += 1
            continue
        card = _with_keys(card, keys)
        for k in keys:
            by_key[k] = card.id
        for s in card.sources:
            owner.setdefault(_source_key(s), card.id)
        # Rule 3 — the same failure (same or equivalent signature, same or nested workspace):
        # a newer verified resolution that names another cause supersedes the older card; the
        # same fix, or anything the rules cannot order, merges into one card.
        sig = merge_signature(card)
        family = signature_family(card)
        base_id = by_signature.get((card.workspace, sig)) if sig else None
        if base_id is None and family:
            base_id = next((cid for ws, cid in by_family.get(family, ())
                            if related_workspaces(ws, card.workspace) and cid in lib.cards), None)
        if base_id is not None and _replaces(lib.get(base_id), card):
            old, new = supersede(lib.get(base_id), card)
            if new.id == card.id:
                lib.put(old)
                card = new
                counters["superseded"] += 1
                by_signature[(card.workspace, sig)] = card.id
                by_family.setdefault(family, []).insert(0, (card.workspace, card.id))
                lib.put(card)
                fresh.append(card)
                counters["new"] += 1
                continue
        if base_id is not None:
            lib.put(merge_cards(lib.get(base_id), card))
            for k in keys:
                by_key[k] = base_id
            for s in card.sources:
                owner[_source_key(s)] = base_id
            dropped.append((card.id, f"merged_into {base_id}"))
            counters["merged"] += 1
            continue
        if sig:
            by_signature[(card.workspace, sig)] = card.id
        if family:
            by_family.setdefault(family, []).insert(0, (card.workspace, card.id))
        lib.put(card)
        fresh.append(card)
        counters["new"] += 1

    # Rule 4 — supersession or conflict, only between a new card and same-topic cards.
    for new_id in [c.id for c in fresh]:
        card = lib.get(new_id)
        if not is_resolution(card):
            continue
        idents = identifiers(card.conclusion)
        buckets = sorted(
            (len(ids), ident) for ident in idents
            if 0 < len(ids := by_ident.get((card.workspace, ident), ())) <= MAX_TOPIC_BUCKET
        )
        candidates = sorted({cid for _, ident in buckets[:TOPIC_LOOKUPS] for cid in by_ident[(card.workspace, ident)]})
        for cid in candidates:
            card, other = lib.get(new_id), lib.get(cid)
            if cid == new_id or not is_resolution(other) or not is_resolution(card) or not same_topic(card, other):
                continue
            newer = newer_card(card, other)
            if newer is None:
                a, b = mark_conflict(card, other)
                lib.put(a), lib.put(b)
                conflicts.append(tuple(sorted((card.id, other.id))))  # type: ignore[arg-type]
                counters["conflicts"] += 1
                continue
            old, new = (other, card) if newer.id == card.id else (card, other)
            old, new = supersede(old, new)
            lib.put(old), lib.put(new)
            counters["superseded"] += 1
            if old.id == new_id:
                break  # this card is already history: it replaces nothing
        if is_resolution(lib.get(new_id)):
            for ident in idents:
                by_ident.setdefault((card.workspace, ident), []).append(new_id)

    write = lib.changed()
    counters["written"] = len(write)
    return RulesPlan(write=write, dropped=dropped, conflicts=sorted(set(conflicts)), counters=counters)
