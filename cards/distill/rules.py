"""Rule distillation (DESIGN stage 5) across cards: deterministic, no model, and nothing invented.

`apply_rules` dedups, merges by error signature and sets supersession or conflict, returning a
`RulesPlan` the pipeline applies with the card store. The keys and the merging are
`cards.distill.merge`; what one experience concluded is `cards.distill.extract`; a decision a later
card changes, whatever the signatures, is `cards.distill.decisions`.

Cost stays near-linear in the library size: every comparison goes through a hash map keyed by
dedup key, (workspace, signature) or (workspace, identifier), never through all pairs. A workspace is
its project where its folder is a git project (`cards.projects`): a worktree or a clone is the same one.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from memoir.cards.distill.decisions import retracted, retractions
from memoir.cards.distill.merge import (
    LIVE, MAX_TOPIC_BUCKET, TOPIC_LOOKUPS, absorb_duplicate, can_refresh, dedup_keys, identifiers, is_resolution,
    mark_conflict, merge_cards, merge_signature, newer_card, same_fix, same_topic, settled, signature_family,
    source_key, supersede, with_keys,
)
from memoir.cards.projects import ProjectMap, place, related_places, with_project
from memoir.cards.spool import loaded
from memoir.cards.values import Card, Experience


def _order(card: Card, first_seq: int | None = None) -> tuple[str, int, str]:
    # The order cards are read in: oldest first, then earlier in its session (a subagent's copy of the
    # parent's turns comes after them), the id last only to make a tie deterministic. A card waiting in
    # the spool carries no sources: its experience's first turn is given.
    first = first_seq if first_seq is not None else min((s.turns[0] for s in card.sources), default=0)
    return (card.created, first, card.id)


_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")


def _same_values(a: Card, b: Card) -> bool:
    """The same numbers in both conclusions: `pool_size = 5` and `pool_size = 20` are two fixes."""
    return set(_NUMBER.findall(a.conclusion)) == set(_NUMBER.findall(b.conclusion))


def _replaces(base: Card, card: Card) -> bool:
    """`card` is a later, verified resolution of `base`'s failure that names another cause or fix."""
    return (is_resolution(base) and is_resolution(card) and bool(card.verified_by)
            and not same_fix(base, card) and newer_card(base, card) is card)


@dataclass(slots=True)
class RulesPlan:
    """What the rule stage decided; the pipeline writes `write` and reports the rest.

    Not frozen, on purpose: the distill step's forget guard adds its own counts and dropped cards
    (tombstones, cards deleted by hand) to the plan before it is reported.
    """

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
        """The new and edited cards, each with plain values where merges held views (`settled`)."""
        out = [settled(self.cards[cid]) for cid in self.new]
        for cid, before in self.original.items():
            after = self.cards[cid]
            if after != before or after.extra != before.extra:
                out.append(settled(after))
        return sorted(out, key=lambda c: c.id)


def apply_rules(drafted: Sequence[tuple[Experience, Card]], library: Sequence[Card],
                frozen: Collection[str] = (), projects: ProjectMap | None = None) -> RulesPlan:
    """Dedup, merge by error signature, then supersede or flag conflicts; pure and idempotent.

    Args:
        drafted: this run's rule-drafted cards, each with the experience it came from.
        library: every card already on disk.
        frozen: ids of cards a person owns (edited by hand, confirmed or rejected in review):
            they still own their sources, but no rule merges into, refreshes, supersedes or
            conflicts them; a new card on their topic stands beside them instead.
        projects: the project registry; each card is compared as of the project its folder is of
            (`cards.projects.with_project`). None: the project each card records.

    Returns:
        A `RulesPlan`. Applying it and calling again with the same `drafted` yields no writes:
        every drafted card is then recognised as already in the library by its sources.
    """
    lib = _Library(with_project(c, projects) for c in library)
    counters: Counter = Counter()
    dropped: list[tuple[str, str]] = []
    conflicts: list[tuple[str, str]] = []

    owner: dict[tuple, str] = {}
    by_key: dict[str, str] = {}
    by_signature: dict[tuple[str, str], str] = {}
    by_family: dict[str, list[tuple[str, str]]] = {}  # newest first
    by_ident: dict[tuple[str, str], list[str]] = {}
    by_weak: dict[tuple[str, str], list[str]] = {}  # (workspace, a signature too weak to merge on alone)
    frozen = frozenset(frozen)
    gathered: dict = {}  # card id -> what merges into it gathered (merge.Gathered): linear, not n²
    for card in lib.original.values():
        for s in card.sources:
            owner.setdefault(source_key(s), card.id)
        for key in dedup_keys(card):
            by_key.setdefault(key, card.id)
        if card.id in frozen:
            continue  # the user's hand wins: only the lookups above (already read, duplicate) see it
        if card.status in LIVE or card.status == "incomplete":
            sig = merge_signature(card)
            if sig:
                by_signature.setdefault((place(card), sig), card.id)
            if card.status in LIVE and (family := signature_family(card)):
                by_family.setdefault(family, []).append((card.workspace, card.project, card.id))
            if not sig and card.error_signature and is_resolution(card):
                by_weak.setdefault((place(card), card.error_signature), []).append(card.id)
        if is_resolution(card):
            for ident in identifiers(card.conclusion):
                by_ident.setdefault((place(card), ident), []).append(card.id)

    fresh: list[Card] = []
    for exp, card in sorted(drafted, key=lambda ec: _order(ec[1], ec[0].first_seq)):
        card = with_project(loaded(card), projects)  # a draft waiting in the run's spool comes back one at a time
        # Rule 1 — re-read: every source of this card already belongs to a card on disk.
        if card.id in lib.original and card.id not in frozen and can_refresh(lib.get(card.id), card):
            # The same turns drafted again now pass the integrity check (say after a renderer or
            # blob-cap fix): the complete draft replaces the incomplete placeholder.
            lib.put(with_keys(card, dedup_keys(lib.get(card.id)) + dedup_keys(card, exp)))
            fresh.append(lib.get(card.id))
            counters["refreshed"] += 1
            continue
        owners = {owner.get(source_key(s)) for s in card.sources}
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
                lib.put(absorb_duplicate(lib.get(twin), card, keys, gathered))
            for s in card.sources:
                owner.setdefault(source_key(s), twin)
            dropped.append((card.id, f"duplicate_of {twin}"))
            counters["duplicates"] += 1
            continue
        card = with_keys(card, keys)
        for k in keys:
            by_key[k] = card.id
        for s in card.sources:
            owner.setdefault(source_key(s), card.id)
        # Rule 3 — the same failure (same or equivalent signature, same or nested workspace):
        # a newer verified resolution that names another cause supersedes the older card; the
        # same fix, or anything the rules cannot order, merges into one card.
        # A card that proves nothing (`cards.proof`: a work report, an unproven answer) never merges into
        # or supersedes another: its signature is an error met on the way, not what it settled.
        proven = card.extra.get("kind") in (None, "fix", "confirmed_answer", "decision") and not (
            card.extra.get("contradicted_by") or card.extra.get("self_inflicted"))
        sig = merge_signature(card) if proven else ""
        family = signature_family(card) if proven else ""
        base_id = by_signature.get((place(card), sig)) if sig else None
        if base_id is None and family:
            base_id = next((cid for ws, project, cid in by_family.get(family, ())
                            if related_places(ws, project, card.workspace, card.project) and cid in lib.cards), None)
        weak = (place(card), card.error_signature) if proven and not sig and card.error_signature else None
        if base_id is None and weak is not None:
            # A signature that says too little alone (`KeyError: <str>`) merges only with the same fix.
            base_id = next((cid for cid in by_weak.get(weak, ()) if cid in lib.cards and is_resolution(lib.get(cid))
                            and _same_values(lib.get(cid), card) and same_fix(lib.get(cid), card)), None)
        if base_id is not None and _replaces(lib.get(base_id), card):
            old, new = supersede(lib.get(base_id), card)
            if new.id == card.id:
                lib.put(old)
                card = new
                counters["superseded"] += 1
                by_signature[(place(card), sig)] = card.id
                by_family.setdefault(family, []).insert(0, (card.workspace, card.project, card.id))
                lib.put(card)
                fresh.append(card)
                counters["new"] += 1
                continue
        if base_id is not None:
            lib.put(merge_cards(lib.get(base_id), card, gathered))
            for k in keys:
                by_key[k] = base_id
            for s in card.sources:
                owner[source_key(s)] = base_id
            dropped.append((card.id, f"merged_into {base_id}"))
            counters["merged"] += 1
            continue
        if sig:
            by_signature[(place(card), sig)] = card.id
        if weak is not None and is_resolution(card):
            by_weak.setdefault(weak, []).append(card.id)
        if family:
            by_family.setdefault(family, []).insert(0, (card.workspace, card.project, card.id))
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
            if 0 < len(ids := by_ident.get((place(card), ident), ())) <= MAX_TOPIC_BUCKET
        )
        candidates = sorted({cid for _, ident in buckets[:TOPIC_LOOKUPS] for cid in by_ident[(place(card), ident)]})
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
                by_ident.setdefault((place(card), ident), []).append(new_id)

    # Rule 5 — a decision changed: a new card that retracts or moves an earlier decision ("this
    # replaces the env-var flags", "the earlier fix can't help here", "moved from A to B")
    # supersedes the older card of its workspace about that subject, whatever their signatures.
    _decisions_changed(lib, [c.id for c in fresh], frozen, counters)

    write = lib.changed()
    counters["written"] = len(write)
    return RulesPlan(write=write, dropped=dropped, conflicts=sorted(set(conflicts)), counters=counters)


def _may_retract(card: Card) -> bool:
    """A card that may take an earlier decision back, or be taken back, even when nothing checked its answer
    (a reversal the user agreed to; a decision nothing tested), unless the rest of its session contradicts it."""
    return card.status in LIVE and bool(card.conclusion.strip()) and not card.extra.get("contradicted_by") \
        and not card.gate.startswith("conclusion_")


def _decisions_changed(lib: _Library, fresh: Sequence[str], frozen: frozenset[str], counters: Counter) -> None:
    """Rule 5: retractions (`cards.distill.decisions`) supersede the older cards they name.

    Asked of every new card, and of the cards on disk that came after a new card of their workspace
    (an older session read late is superseded by the newer one already on disk), oldest first.
    """
    oldest: dict[str, str] = {}  # by `place`: the folders of one project are one workspace
    for cid in fresh:
        card = lib.get(cid)
        if card.workspace:
            oldest[place(card)] = min(oldest.get(place(card), card.created), card.created)
    if not oldest:
        return
    by_workspace: dict[str, list[str]] = {}
    for card in lib.cards.values():
        if place(card) in oldest and card.id not in frozen:
            by_workspace.setdefault(place(card), []).append(card.id)
    fresh_ids = set(fresh)
    saying = sorted((lib.get(cid) for ids in by_workspace.values() for cid in ids
                     if (cid in fresh_ids or lib.get(cid).created >= oldest[place(lib.get(cid))])
                     and _may_retract(lib.get(cid)) and retractions(lib.get(cid).conclusion)), key=_order)
    for card in saying:
        card = lib.get(card.id)
        if not _may_retract(card):
            continue  # superseded itself earlier in this loop
        # Scored against every older card it could name, the ones it already replaced included, so the
        # choice does not depend on which run read which session; only pairs with a new card change.
        older = [other for cid in by_workspace[place(card)] if cid != card.id
                 and (_may_retract(other := lib.get(cid)) or other.superseded_by == card.id)
                 and newer_card(other, card) is card and not same_fix(other, card)]
        for old in retracted(card, older):
            if old.superseded_by or not (card.id in fresh_ids or old.id in fresh_ids):
                continue
            old, new = supersede(lib.get(old.id), lib.get(card.id))
            lib.put(old), lib.put(new)
            counters["superseded"] += 1


def keep_what_stands(cards: Sequence[Card], before: Mapping[str, Card]) -> list[Card]:
    """Undo a supersession whose new card the gates then held back: a card that is not active proves
    nothing it could replace another with (a later night's step card the evidence did not back must
    not take down the active card it superseded). The old card goes back to what it was before this
    run (`before`: the library as read), and the new one no longer claims to supersede it. A card
    first drafted in this same run is left superseded: the gates never judged it, so nothing says it
    would stand. Pure: the cards to write, in their order."""
    out = {c.id: c for c in cards}
    for card in cards:
        if card.status == "active" or not card.supersedes:
            continue
        undone = [cid for cid in card.supersedes if (old := out.get(cid)) is not None and old.status == "superseded"
                  and old.superseded_by == card.id and before.get(cid) is not None
                  and before[cid].status in ("active", "incomplete")]
        for cid in undone:
            out[cid] = before[cid]
        if undone:
            out[card.id] = card.with_(supersedes=tuple(s for s in card.supersedes if s not in undone), background="\n".join(
                ln for ln in card.background.splitlines() if not any(ln.startswith(f"Supersedes {cid},") for cid in undone)))
    return [out[c.id] for c in cards]
