"""The rule stage across cards: the keys cards are matched on, and how two cards become one.

Dedup keys (the same experience read twice), merge signatures and families (the same failure),
identifiers and goal words (the same topic); merging, absorbing a duplicate, superseding and
marking a conflict. `cards.distill.rules.apply_rules` decides which of these to apply.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import re
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timezone

from memoir.cards.projects import place
from memoir.cards.signals import is_named_state, names_failure
from memoir.cards.values import Card, Experience, Source

# --- keys -----------------------------------------------------------------------------------------

LIVE = ("active", "candidate")
CONFLICT_GATE = "unresolved_conflict"
MAX_TOPIC_BUCKET = 64  # an identifier shared by more cards than this names no single topic
TOPIC_LOOKUPS = 4  # rarest identifiers of a card used to find same-topic candidates
MAX_EVIDENCE_BLOCKS = 24  # per merged card; every source stays in `sources` regardless
MAX_COUNTEREXAMPLES = 32  # lines per merged card, for the same reason
# Texts the rules keep normalised: the merged cards' own come back on every merge, a draft's once.
# Each entry holds its text, so more made a run's memory follow its corpus (16384: ~13 MB at 200 MB).
NORMS_KEPT = 4096
GOAL_OVERLAP = 0.6
IDENT_OVERLAP = 0.5

_SEQ_REF = re.compile(r"\[t\d+\]|\(t\d+\)|\bt\d+(?:[–-]\d+)?\b")
_PLACEHOLDER = re.compile(r"<(?:path|id|hex|n|str)>")
# Possessive runs (`*+`, `++`): each run is followed by a character it cannot hold, so giving one
# back never helps; without them every word of prose was retried a character at a time (~2x the time).
_IDENT = re.compile(
    r"(?:--?)?[A-Za-z_][\w-]*+(?:[./:][\w-]++)++|[A-Za-z][A-Za-z0-9]*+_\w++|[a-z]++[A-Z]\w*+|[A-Za-z]++\d++\w*+"
    r"|`([^`\s]{3,60})`"
)
_WORD = re.compile(r"[a-z][a-z0-9_]{3,}")
_STOP = frozenset(
    "that this with from have when what which there their then than them they into onto about after before "
    "again also just like make made does doing done will would could should can't cannot please want need "
    "help some more most only over under very your yours here where while being been were why how tell let "
    "lets let's file files code thing things work works working still using use used way get got".split()
)


@functools.lru_cache(maxsize=NORMS_KEPT)
def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def _hash(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:16]


def content_key(card: Card) -> str:
    """Same goal, conclusion, evidence and signature (turn numbers masked) → same experience."""
    evidence = _SEQ_REF.sub("", card.evidence)
    if not (card.conclusion.strip() or evidence.strip()):
        return ""  # an empty card says too little to be called a duplicate of anything
    # The evidence is normalized without the memo: it is the longest text of every drafted card,
    # and memoizing it held the evidence of a whole run's cards through the rules.
    plain = " ".join(evidence.casefold().split())
    return "k-" + _hash(_norm(card.goal), _norm(card.conclusion), plain, _norm(card.error_signature))


def turns_key(exp: Experience) -> str:
    """The host's own turn ids: a resumed session that replays turns replays their uuids too."""
    spilled = getattr(exp, "uuid_key", None)  # a spilled experience (cards.spool) carries it, its turns on disk
    if spilled is not None:
        return spilled
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
    if is_named_state(sig):
        return _norm(sig)  # a state that names the failure by itself: CrashLoopBackOff, OOMKilled
    kind, _, message = sig.partition(":")
    if not names_failure(kind.strip()):
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


@functools.lru_cache(maxsize=NORMS_KEPT)  # the rules compare each conclusion with several neighbours
def identifiers(text: str) -> frozenset[str]:
    """Code-shaped tokens (dotted names, snake_case, camelCase, paths, flags, `quoted`), lowercased."""
    found = set()
    for m in _IDENT.finditer(text):
        token = (m.group(1) or m.group(0)).strip(".:/-").lower()
        if len(token) >= 3 and not token.replace(".", "").isdigit():
            found.add(token)
    return frozenset(found)


@functools.lru_cache(maxsize=NORMS_KEPT)
def goal_words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.casefold()) if w not in _STOP)


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / min(len(a), len(b)) if a and b else 0.0


def source_key(s: Source) -> tuple[str, str, tuple[int, int]]:
    return (s.host, s.session_id, tuple(s.turns))  # type: ignore[return-value]


def _ts(value: str) -> datetime | None:
    if not value:
        return None
    try:
        ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return ts if ts.tzinfo else ts.replace(tzinfo=timezone.utc)


def is_resolution(card: Card) -> bool:
    """A live card with a sound conclusion that its own facts (`cards.proof`) do not hold back: it can
    win, replace or be replaced."""
    held = card.extra.get("kind") in ("work_report", "unproven") or card.extra.get("contradicted_by")
    return not (held or card.extra.get("self_inflicted")) and card.status in LIVE and bool(card.conclusion.strip()) and not card.gate.startswith("conclusion_")


# --- merging, superseding, conflicts -------------------------------------------------------------


def _one_line(text: str, limit: int = 240) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def source_label(s: Source) -> str:
    return f"{s.host} session {s.session_id}, turns {s.turns[0]}–{s.turns[1]}"


def _union_sources(a: Iterable[Source], b: Iterable[Source]) -> tuple[Source, ...]:
    out: dict[tuple, Source] = {}
    for s in (*a, *b):
        out.setdefault(source_key(s), s)
    return tuple(out.values())


def with_keys(card: Card, keys: Iterable[str]) -> Card:
    """Remember every experience a card stands for; a merged card's own text is no experience."""
    stored = {str(k) for k in card.extra.get("dedup_keys") or ()}
    own = {content_key(card)} - {""} if not stored else set()
    merged = sorted(stored | own | set(keys))
    if not merged:
        return card
    return card.with_(extra={**card.extra, "dedup_keys": merged})


class SoFar(Sequence):
    """The first `n` items of a list that only grows at its end: what one merge hands its card.

    Each merge into a card gathers one newcomer's sources and keys; a fresh tuple of all of them
    per merge made a signature seen in n experiences cost n² (and freeing each replaced copy as
    much again). The card holds this view instead; `settled` turns it into a plain value before
    the card leaves the rules. `ordered` views read sorted (dedup keys are kept sorted).
    """

    __slots__ = ("items", "n", "ordered")

    def __init__(self, items: list, n: int, ordered: bool = False) -> None:
        self.items, self.n, self.ordered = items, n, ordered

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator:
        return iter(sorted(self.items[: self.n])) if self.ordered else itertools.islice(self.items, self.n)

    def __getitem__(self, i):
        if self.ordered or isinstance(i, slice):
            return tuple(self)[i]
        if not -self.n <= i < self.n:
            raise IndexError("SoFar index out of range")
        return self.items[i % self.n]

    def __eq__(self, other: object) -> bool:
        return tuple(self) == tuple(other) if isinstance(other, (tuple, list, SoFar)) else NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __add__(self, other):
        return tuple(self) + tuple(other)

    def __radd__(self, other):
        return tuple(other) + tuple(self)

    def __reduce__(self):
        return (list, (list(self),)) if self.ordered else (tuple, (tuple(self),))

    def __repr__(self) -> str:
        return repr(list(self) if self.ordered else tuple(self))


def settled(card: Card) -> Card:
    """`card` with what merges gathered as plain values: a tuple of sources, a sorted list of keys."""
    keys = card.extra.get("dedup_keys")
    if not isinstance(card.sources, SoFar) and not isinstance(keys, SoFar):
        return card
    extra = {**card.extra, "dedup_keys": list(keys)} if isinstance(keys, SoFar) else card.extra
    return card.with_(sources=tuple(card.sources), extra=extra)


class Gathered:
    """The sources, sessions and dedup keys that merges into one card have gathered so far.

    A signature seen in thousands of experiences is merged into one card thousands of times; if
    every merge re-read every source and key the card holds, a long session would cost the square
    of its length. With this, a merge adds only the newcomer's, and hands the card a `SoFar` view.
    It holds for the one card object it was last made for (`card`): any other change to that card
    starts a fresh one.
    """

    __slots__ = ("card", "seen", "sources", "sessions", "keys", "key_list")

    def __init__(self, card: Card) -> None:
        self.card = card
        self.seen: set[tuple] = set()
        self.sources: list[Source] = []
        self.sessions: set[tuple[str, str]] = set()
        self.add_sources(card.sources)
        self.keys: set[str] = set()
        self.key_list: list[str] = []
        self.add_keys(str(k) for k in card.extra.get("dedup_keys") or ())

    def add_sources(self, sources: Iterable[Source]) -> SoFar:
        for s in sources:
            key = source_key(s)
            if key not in self.seen:
                self.seen.add(key)
                self.sources.append(s)
                self.sessions.add((s.host, s.session_id))
        return SoFar(self.sources, len(self.sources))

    def add_keys(self, keys: Iterable[str]) -> SoFar:
        for k in keys:
            if k not in self.keys:
                self.keys.add(k)
                self.key_list.append(k)
        return SoFar(self.key_list, len(self.key_list), ordered=True)


def _gathered(card: Card, memo: dict[str, Gathered] | None) -> Gathered | None:
    """What earlier merges gathered for exactly this card object, if they kept it (and it has keys)."""
    found = memo.get(card.id) if memo is not None else None
    return found if found is not None and found.card is card else None


def _remember(card: Card, memo: dict[str, Gathered] | None, found: Gathered | None) -> Card:
    if memo is not None and card.extra.get("dedup_keys"):
        if found is None:
            found = Gathered(card)
        found.card = card
        memo[card.id] = found
    return card


def absorb_duplicate(target: Card, dup: Card, keys: Iterable[str] = (),
                     memo: dict[str, Gathered] | None = None) -> Card:
    """`dup` read the same experience again: `target` keeps its content and gains the provenance.

    `memo` (one per rules pass) keeps what earlier merges into `target` gathered: see `Gathered`.
    """
    found = _gathered(target, memo)
    if found is None:
        return _remember(with_keys(target.with_(sources=_union_sources(target.sources, dup.sources)), keys), memo, None)
    absorbed = target.with_(sources=found.add_sources(dup.sources))
    return _remember(absorbed.with_(extra={**absorbed.extra, "dedup_keys": found.add_keys(keys)}), memo, found)


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


@functools.lru_cache(maxsize=NORMS_KEPT)  # a merged card's lines are compared again on every merge
def _line_key(line: str) -> str:
    return _norm(_SEQ_REF.sub("", re.sub(r"^- \([^)]*\) ", "- ", line)))


def _conclusion_label(card: Card) -> str:
    label = card.extra.get("conclusion_from")
    return str(label) if label else (source_label(card.sources[0]) if card.sources else card.id)


def _newer(a: Card, b: Card) -> bool:
    """Is `a` the newer of the two by when its session ended (then started, then id)?"""
    return (a.updated, a.created, a.id) > (b.updated, b.created, b.id)


def merge_cards(base: Card, other: Card, memo: dict[str, Gathered] | None = None) -> Card:
    """Fold `other` (same workspace and error signature) into `base`, which keeps its id.

    The newest resolution wins the Conclusion; an older, different resolution moves to
    Counterexamples with its source. Evidence keeps one block per source session. `memo` (one
    per rules pass) keeps what earlier merges into `base` gathered: see `Gathered`.
    """
    found = _gathered(base, memo)
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
    sources = found.add_sources(other.sources) if found else _union_sources(base.sources, other.sources)
    blocks = [b for b in _evidence_blocks(base) + _evidence_blocks(other) if not b.startswith(_ELIDED)]
    if len(blocks) >= MAX_EVIDENCE_BLOCKS:
        # Bounded so a signature seen in hundreds of sessions stays readable; `sources` lists them all.
        blocks = blocks[-(MAX_EVIDENCE_BLOCKS - 1):]
        blocks.insert(0, f"{_ELIDED} earlier sources than these: {len(sources)} in all\n- every one is listed in `sources`")
    sessions = len(found.sessions) if found else len({(s.host, s.session_id) for s in sources})
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
    if found is None:
        return _remember(with_keys(merged, dedup_keys(other)), memo, None)
    return _remember(merged.with_(extra={**merged.extra, "dedup_keys": found.add_keys(dedup_keys(other))}), memo, found)


STATED = frozenset({"users_words", "settled", "proposed"})  # decisions made in conversation (`cards.stated_choices`)


def same_topic(a: Card, b: Card) -> bool:
    """Conservative: same workspace and task type, no differing error signature, strongly overlapping
    goal words, and conclusions about the same identifiers that nonetheless say different things."""
    if not a.workspace or place(a) != place(b) or a.task_type != b.task_type:
        return False
    if a.error_signature and b.error_signature and _norm(a.error_signature) != _norm(b.error_signature):
        return False
    if _norm(a.conclusion) == _norm(b.conclusion):
        return False  # they agree: nothing is replaced
    if {a.extra.get("conclusion_source"), b.extra.get("conclusion_source")} <= STATED and {
            s.session_id for s in a.sources} & {s.session_id for s in b.sources}:
        return False  # one discussion settles several questions; one that takes another back is rule 5's
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
        and redraft.status in LIVE and bool(redraft.conclusion.strip()) and not redraft.gate.startswith("conclusion_")
        and _norm(on_disk.conclusion) != _norm(redraft.conclusion)
    )
