"""Model stage: an OpenAI-compatible chat endpoint fills fixed JSON slots for each experience.

It must be honest when it fails. Every output is validated against the slots (free prose, a
missing or extra slot, a wrong type or an empty conclusion is discarded and counted, the rule card
is decided as the rule stage alone decides it, and the batch goes back to the queue for replay), every
request has a timeout, and a model that is alive but says nothing is an incident: the batch goes
back to the queue with an alert, never into a retry loop. Fallback endpoints are tried in order
only when one fails before producing any output; a response that broke midway is not resent.

The model is held to the rule stage's evidence: its conclusion replaces a verified rule conclusion
only when it names what that names and offers nothing the log shows failing (`evidence_conflict`);
otherwise the rule card stands, with `model_overruled: <why>` in its front matter.

Plan/apply: `build_prompt` (llm_prompt), `parse_slots` and `apply_slots` (llm_slots) are pure;
`post_chat` (llm_client) is the only I/O; this module runs a batch through them and the gates.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memoir.cards.config import Settings
from memoir.cards.distill.errors import BrokenResponse, EndpointUnavailable, InvalidOutput, ModelTimeout
from memoir.cards.distill.llm_client import Endpoint, Reply, complete
from memoir.cards.distill.llm_prompt import MAX_INPUT_CHARS, build_prompt
from memoir.cards.distill.llm_slots import CONTRADICTS_EVIDENCE, apply_slots, evidence_conflict, parse_slots
from memoir.cards.draft import conclusion_problem
from memoir.cards.incidents import raise_alert
from memoir.cards.quality_gates import Verdict, decide_status, judge_card
from memoir.cards.quality_inputs import EvidenceView, Similarity
from memoir.cards.spool import loaded, loaded_turns
from memoir.cards.values import Card, Experience


@dataclass
class BatchReport:
    """What one batch produced, what went wrong (counted), and whether it goes back to the queue."""

    cards: list[Card]
    counts: Counter
    requeue: bool = False
    alerts: list[str] = field(default_factory=list)
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    usage: Counter = field(default_factory=Counter)
    asked: list[tuple[Card, bool | None]] = field(default_factory=list)  # ask_model -> settle_batch
    pending: list[str] = field(default_factory=list)  # card ids not distilled because of an incident
    junk: list[str] = field(default_factory=list)  # card ids the model answered with junk: the rule stage decides


def distill_batch(
    experiences_and_cards: Sequence[tuple[Experience, Card]],
    endpoints: Sequence[Endpoint],
    *,
    timeout: float,
    active_cards: Sequence[Card] = (),
    similarity: Similarity | None = None,
    min_conclusion_chars: int = Settings.min_conclusion_chars,
    max_input_chars: int = MAX_INPUT_CHARS,
    batch_id: str = "",
) -> BatchReport:
    """Distill each rule card, judge every card by the gates, and report what went wrong.

    Args:
        experiences_and_cards: each experience with the card the rule stage drafted from it.
        endpoints: primary first, then fallbacks; empty means the model stage is off and rule
            cards that pass the gates go active as `quality: rule`.
        timeout: seconds per request (settings.model_timeout_s).
        active_cards: cards already active, for the duplicate gate.
        similarity: embedding similarity for the duplicate gate.
        batch_id: names the batch in alert lines.
    """
    asked = ask_model(experiences_and_cards, endpoints, timeout=timeout, min_conclusion_chars=min_conclusion_chars,
                      max_input_chars=max_input_chars, batch_id=batch_id)
    return settle_batch(experiences_and_cards, asked, bool(endpoints), active_cards, similarity)


def settle_batch(experiences_and_cards: Sequence[tuple[Experience, Card]], asked: BatchReport, model_enabled: bool,
                 active_cards: Sequence[Card] | Callable[[Card], Sequence[Card]] = (),
                 similarity: Similarity | None = None) -> BatchReport:
    """The gates over what `ask_model` left, in the batch's order: a card gone active here is one
    the next card must not duplicate. Pure; the order, not the timing, decides. `active_cards` may be a
    function giving the active cards near a card (asked only for a card the other gates let through)."""
    out = asked
    near = active_cards if callable(active_cards) else None
    active = [] if near is not None else [c for c in active_cards if c.status == "active"]
    against = (lambda c: [*(x for x in near(c) if x.status == "active"), *active]) if near is not None else active
    evidence = {card.id: exp for exp, card in experiences_and_cards}
    for card, distilled in asked.asked:
        if distilled is None:
            out.cards.append(card)
            continue
        # Read back from the spool card by card: a batch of merged cards can name most of a corpus.
        verdict = judge_card(card, EvidenceView.of(loaded_turns(evidence[card.id])), against, similarity)
        # A card the model answered with junk is decided as the rule stage alone would decide it.
        decided = decide_status(card, verdict, model_enabled and card.id not in asked.junk, distilled)
        out.verdicts[card.id] = verdict
        out.cards.append(decided)
        out.counts[decided.status] += 1
        if decided.status == "active":
            active.append(decided)  # later cards in this batch must not duplicate it
        elif distilled and not verdict.passed:
            out.counts["gate_rejected"] += 1
    out.asked = []
    return out


def ask_model(
    experiences_and_cards: Sequence[tuple[Experience, Card]],
    endpoints: Sequence[Endpoint],
    *,
    timeout: float,
    min_conclusion_chars: int = Settings.min_conclusion_chars,
    max_input_chars: int = MAX_INPUT_CHARS,
    batch_id: str = "",
) -> BatchReport:
    """The model's part of a batch, and its only I/O: what each card became and whether the model
    distilled it (`asked`), with counts, usage and alerts. Batches may be asked in parallel; the
    gates (`settle_batch`) then run in order."""
    model_enabled = bool(endpoints)
    counts: Counter = Counter()
    usage: Counter = Counter()
    out = BatchReport(cards=[], counts=counts, usage=usage)
    name = batch_id or (experiences_and_cards[0][1].id if experiences_and_cards else "empty")
    stop_reason = ""

    def keep(card: Card, distilled: bool) -> None:
        out.asked.append((card, distilled))

    for exp, card in experiences_and_cards:
        if not model_enabled or card.status in ("superseded", "forgotten"):
            keep(card, distilled=False)
            continue
        if stop_reason:
            counts["not_sent"] += 1
            out.pending.append(card.id)
            keep(card, distilled=False)
            continue
        exp = loaded(exp)  # one experience's turns in memory at a time (cards.spool)
        prompt = build_prompt(exp, card, max_input_chars)
        if prompt.empty:
            # Refuse to send: an empty experience can only make the model invent.
            counts["empty_input"] += 1
            keep(card, distilled=False)
            continue
        usage["chars_in"] += prompt.chars
        usage["max_chars_in"] = max(usage["max_chars_in"], prompt.chars)
        counts["sent"] += 1
        try:
            reply, skipped = complete(endpoints, prompt, timeout)
            if skipped:
                counts["fallback"] += skipped
            usage["tokens_in"] += reply.tokens_in
            usage["tokens_out"] += reply.tokens_out
            usage["max_tokens_in"] = max(usage["max_tokens_in"], reply.tokens_in)
            usage["chars_out"] += len(reply.content)
            slots = parse_slots(reply.content)
        except ModelTimeout as exc:
            counts["timeout"] += 1
            stop_reason = "timeout"
            out.pending.append(card.id)
            out.alerts.append(raise_alert(
                "model_alive_no_output",
                f"batch {name}: {exc}; {len(experiences_and_cards)} experiences requeued, "
                "rule cards stay candidate",
            ))
            keep(card, distilled=False)
            continue
        except EndpointUnavailable as exc:
            counts["http_error"] += 1
            stop_reason = "unavailable"
            out.pending.append(card.id)
            out.alerts.append(raise_alert(
                "endpoints_unavailable", f"batch {name}: every endpoint failed before answering: {exc}; batch requeued",
            ))
            keep(card, distilled=False)
            continue
        except (BrokenResponse, InvalidOutput) as exc:
            # Junk: the rule card stays exactly as the rule stage decided, and the batch goes back to the queue.
            counts[exc.kind if isinstance(exc, InvalidOutput) else "broken"] += 1
            out.junk.append(card.id)
            out.pending.append(card.id)
            keep(card, distilled=False)
            continue
        counts["ok"] += 1
        distilled = apply_slots(card, slots, reply_model(endpoints, reply))
        conflict = evidence_conflict(card, distilled, exp.turns)
        if conflict:
            # The verified rule conclusion stands; the card says why the model's answer was not used.
            counts["model_overruled"] += 1
            if conflict.startswith(CONTRADICTS_EVIDENCE):
                counts[CONTRADICTS_EVIDENCE] += 1  # discarded: it reverses what the check proved
            keep(card.with_(extra={**card.extra, "model_overruled": conflict}), distilled=True)
            continue
        problem = conclusion_problem(distilled.conclusion, min_conclusion_chars)
        if problem:
            counts["incomplete_output"] += 1
            out.asked.append((distilled.with_(status="incomplete", gate=problem), None))
            counts["incomplete"] += 1
            continue
        keep(distilled.with_(status="candidate"), distilled=True)

    out.requeue = bool(stop_reason or out.junk)
    if counts["empty_input"]:
        out.alerts.append(raise_alert(
            "input_truncated_to_empty",
            f"batch {name}: {counts['empty_input']} experiences had nothing to send (truncated to empty upstream?)",
        ))
    discarded = counts["empty"] + counts["invalid_format"]
    if discarded and not counts["ok"]:
        out.alerts.append(raise_alert(
            "all_outputs_discarded",
            f"batch {name}: all {discarded} outputs discarded by format validation "
            f"({counts['empty']} empty, {counts['invalid_format']} invalid)",
        ))
    return out


def reply_model(endpoints: Sequence[Endpoint], reply: Reply) -> str:
    return next((e.model for e in endpoints if e.base_url == reply.endpoint), "") or reply.endpoint
