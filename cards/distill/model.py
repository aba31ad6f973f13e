"""Model stage: an OpenAI-compatible chat endpoint fills fixed JSON slots for each experience.

It must be honest when it fails. Every output is validated against the slots (free prose, a
missing or extra slot, a wrong type or an empty conclusion is discarded and counted), every
request has a timeout, and a model that is alive but says nothing is an incident: the batch goes
back to the queue with an alert, never into a retry loop. Fallback endpoints are tried in order
only when one fails before producing any output; a response that broke midway is not resent.

Plan/apply: `build_prompt`, `parse_slots`, `apply_slots` are pure; `post_chat` is the only I/O.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from memoir.cards.draft import conclusion_problem
from memoir.cards.quality_gates import Verdict, decide_status, judge_card
from memoir.cards.quality_inputs import EvidenceView, Similarity
from memoir.cards.incidents import raise_alert
from memoir.cards.values import SECTION_TITLES, SECTIONS, Card, Experience, Turn
from memoir.cards.render import render

SLOTS = ("conclusion", "applies_when", "fails_when", "topics", "task_type", "confidence")
TASK_TYPES = ("debug", "feature", "refactor", "config", "question")  # what cards.draft assigns
MAX_LEN = {"conclusion": 600, "applies_when": 300, "fails_when": 300}
MAX_TOPICS = 5
MAX_TOPIC_LEN = 40
# Bounded input: ~3k tokens leaves room in a 4k-context local model for the answer.
MAX_SECTION_CHARS = 1500
MAX_TURN_CHARS = 600
MAX_INPUT_CHARS = 12_000
MAX_OUTPUT_TOKENS = 512
MAX_RESPONSE_BYTES = 1 << 20  # a chat completion for six short slots is a few KB
READ_CHUNK = 8192
CHARS_PER_TOKEN = 4  # estimate when the server reports no usage
# Which turns to keep first when the budget is short: the user's words, then what failed.
TURN_PRIORITY = {("user", "text"): 0, ("*", "error"): 1, ("assistant", "text"): 2, ("*", "tool_call"): 3}

# llama.cpp takes a schema under `json_object` but answers 500 to `json_schema`; the maxLength
# caps keep a looping model from running to max_tokens.
OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "conclusion": {"type": "string", "minLength": 1, "maxLength": MAX_LEN["conclusion"]},
        "applies_when": {"type": "string", "maxLength": MAX_LEN["applies_when"]},
        "fails_when": {"type": "string", "maxLength": MAX_LEN["fails_when"]},
        "topics": {
            "type": "array",
            "items": {"type": "string", "maxLength": MAX_TOPIC_LEN},
            "maxItems": MAX_TOPICS,
        },
        "task_type": {"type": "string", "enum": list(TASK_TYPES)},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": list(SLOTS),
    "additionalProperties": False,
}


# --- errors -------------------------------------------------------------------------------------


class DistillError(Exception):
    """The model stage could not distill one experience."""


class EndpointUnavailable(DistillError):
    """The endpoint failed before producing any output (down, 401/403, 429, 5xx): try the next."""


class ModelTimeout(DistillError):
    """The endpoint accepted the request but produced nothing in time: an incident, not a retry."""


class BrokenResponse(DistillError):
    """The response started and broke midway; it is never resent to another endpoint."""


class InvalidOutput(DistillError):
    """The model answered, but not with the fixed slots; `kind` is `empty` or `invalid_format`."""

    def __init__(self, kind: str, reason: str):
        super().__init__(f"{kind}: {reason}")
        self.kind = kind
        self.reason = reason


class BatchLocked(DistillError):
    """Another live worker holds this batch's lock; leave the batch to it."""


# --- values -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One OpenAI-compatible server. The key is resolved at the entrypoint and never printed."""

    base_url: str
    model: str
    api_key: str = field(default="", repr=False)

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"


def endpoints_from_settings(settings, env: Mapping[str, str]) -> tuple[Endpoint, ...]:
    """Primary then fallbacks, all with the key from the variable the settings name; () when off."""
    if not settings.model_base_url:
        return ()
    key = env.get(settings.model_api_key_env, "") if settings.model_api_key_env else ""
    urls = (settings.model_base_url, *settings.model_fallback_urls)
    return tuple(Endpoint(u, settings.model_name, key) for u in dict.fromkeys(urls) if u)


@dataclass(frozen=True, slots=True)
class Prompt:
    """What is sent for one experience, and how big it is."""

    messages: tuple[tuple[str, str], ...]
    turns_sent: int
    turns_total: int
    empty: bool

    @property
    def chars(self) -> int:
        return sum(len(text) for _, text in self.messages)


@dataclass(frozen=True, slots=True)
class Slots:
    """The fixed output slots, validated."""

    conclusion: str
    applies_when: str
    fails_when: str
    topics: tuple[str, ...]
    task_type: str
    confidence: float


@dataclass(frozen=True, slots=True)
class Reply:
    """A finished chat completion: the message content, token usage, who answered."""

    content: str
    tokens_in: int
    tokens_out: int
    endpoint: str


@dataclass
class BatchOutcome:
    """What one batch produced, what went wrong (counted), and whether it goes back to the queue."""

    cards: list[Card]
    counts: Counter
    requeue: bool = False
    alerts: list[str] = field(default_factory=list)
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    usage: Counter = field(default_factory=Counter)
    pending: list[str] = field(default_factory=list)  # card ids not distilled because of an incident


# --- plan: prompt, validation, card -------------------------------------------------------------


def _clip_middle(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    half = (limit - 30) // 2
    return f"{text[:half]} …[{len(text) - 2 * half} chars elided]… {text[-half:]}"


def _priority(turn: Turn) -> int:
    return TURN_PRIORITY.get((turn.role, turn.kind), TURN_PRIORITY.get(("*", turn.kind), 4))


def build_prompt(exp: Experience, card: Card, max_chars: int = MAX_INPUT_CHARS) -> Prompt:
    """The whole structured experience: six sections plus as many source turns as the budget holds."""
    sections = [(SECTION_TITLES[n], _clip_middle(card.section(n), MAX_SECTION_CHARS)) for n in SECTIONS]
    usable = [t for t in exp.turns if t.kind != "thinking" and t.text.strip()]
    empty = not usable and not any(text for _, text in sections)
    system = render("distill_system.j2", max_len=MAX_LEN, max_topics=MAX_TOPICS, task_types=TASK_TYPES)

    def user_message(turns: list[Turn]) -> str:
        shown = [replace(t, text=_clip_middle(t.text, MAX_TURN_CHARS)) for t in turns]
        return render(
            "distill_user.j2", exp=exp, card=card, sections=sections, turns=shown,
            shown=len(shown), total=len(usable), omitted=len(usable) - len(shown),
        )

    budget = max_chars - len(system) - len(user_message([])) - 64
    chosen: list[Turn] = []
    for turn in sorted(usable, key=lambda t: (_priority(t), t.seq)):
        cost = min(len(turn.text), MAX_TURN_CHARS) + 40
        if cost <= budget:
            chosen.append(turn)
            budget -= cost
    chosen.sort(key=lambda t: t.seq)
    return Prompt(
        messages=(("system", system), ("user", user_message(chosen))),
        turns_sent=len(chosen),
        turns_total=len(usable),
        empty=empty,
    )


def request_body(endpoint: Endpoint, prompt: Prompt) -> bytes:
    return json.dumps(
        {
            "model": endpoint.model,
            "messages": [{"role": role, "content": text} for role, text in prompt.messages],
            "temperature": 0,
            "max_tokens": MAX_OUTPUT_TOKENS,
            "stream": False,
            "response_format": {"type": "json_object", "schema": OUTPUT_SCHEMA},
        }
    ).encode("utf-8")


def _strip_fence(text: str) -> str:
    # A hosted model in JSON mode sometimes wraps the object in one fence; that is not prose.
    if text.startswith("```") and text.endswith("```"):
        inner = text[3:-3]
        return inner[4:] if inner.startswith("json") else inner
    return text


def parse_slots(content: str) -> Slots:
    """Validate the model's answer against the fixed slots; anything else raises `InvalidOutput`."""
    text = _strip_fence(content.strip()).strip()
    if not text:
        raise InvalidOutput("empty", "the model returned no content")
    try:
        data = json.loads(text)
    except ValueError as exc:
        what = "truncated JSON" if text.startswith("{") else "free prose, not a JSON object"
        raise InvalidOutput("invalid_format", f"{what}: {exc}") from None
    except RecursionError:  # a session can talk a model into echoing `[[[[…`
        raise InvalidOutput("invalid_format", "JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise InvalidOutput("invalid_format", f"expected a JSON object, got {type(data).__name__}")
    missing, extra = set(SLOTS) - set(data), set(data) - set(SLOTS)
    if missing or extra:
        raise InvalidOutput("invalid_format", f"slots missing {sorted(missing)} extra {sorted(extra)}")
    for name, cap in MAX_LEN.items():
        if not isinstance(data[name], str):
            raise InvalidOutput("invalid_format", f"{name} must be a string")
        if len(data[name]) > cap:
            raise InvalidOutput("invalid_format", f"{name} longer than {cap} characters")
    if not data["conclusion"].strip():
        raise InvalidOutput("invalid_format", "conclusion is empty")
    topics = data["topics"]
    if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics) or len(topics) > MAX_TOPICS:
        raise InvalidOutput("invalid_format", f"topics must be a list of at most {MAX_TOPICS} strings")
    if data["task_type"] not in TASK_TYPES:
        raise InvalidOutput("invalid_format", f"task_type {data['task_type']!r} not one of {TASK_TYPES}")
    conf = data["confidence"]
    if isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0 <= conf <= 1:
        raise InvalidOutput("invalid_format", "confidence must be a number from 0 to 1")
    return Slots(
        conclusion=data["conclusion"].strip(),
        applies_when=data["applies_when"].strip(),
        fails_when=data["fails_when"].strip(),
        topics=tuple(dict.fromkeys(t.strip().lower()[:MAX_TOPIC_LEN] for t in topics if t.strip())),
        task_type=data["task_type"],
        confidence=float(conf),
    )


def apply_slots(card: Card, slots: Slots, model_name: str) -> Card:
    """The distilled card: the model's conclusion and boundaries over the rule card's evidence."""
    conclusion = slots.conclusion
    if slots.applies_when:
        conclusion += f"\n\nApplies when: {slots.applies_when}"
    failures = [f"Fails when: {slots.fails_when}"] if slots.fails_when else []
    if card.counterexamples.strip():
        failures.append(card.counterexamples.strip())  # the rule stage's disproved claims stay
    return card.with_(
        conclusion=conclusion,
        counterexamples="\n\n".join(failures),
        topics=tuple(sorted(set(card.topics) | set(slots.topics))),
        task_type=slots.task_type,
        quality="model",
        extra={**card.extra, "confidence": round(slots.confidence, 2), "distilled_by": model_name},
    )


# --- I/O: one request ---------------------------------------------------------------------------

_OPENER = urllib.request.build_opener()


def _read_body(resp, deadline: float) -> bytes:
    chunks, size = [], 0
    while True:
        if time.monotonic() > deadline:
            raise ModelTimeout("the response did not finish before the timeout")
        try:
            chunk = resp.read1(READ_CHUNK)
        except (TimeoutError, socket.timeout):
            raise ModelTimeout("the response stalled before the timeout") from None
        except (http.client.IncompleteRead, ConnectionError, http.client.HTTPException, OSError) as exc:
            raise BrokenResponse(f"response broke after {size} bytes: {type(exc).__name__}") from None
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            raise BrokenResponse(f"response larger than {MAX_RESPONSE_BYTES} bytes")
    length = resp.getheader("Content-Length")
    if length and length.isdigit() and size < int(length):
        raise BrokenResponse(f"response broke after {size} of {length} bytes")
    return b"".join(chunks)


def post_chat(endpoint: Endpoint, prompt: Prompt, timeout: float) -> Reply:
    """POST one chat completion; the error type says whether another endpoint may be tried."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    req = urllib.request.Request(endpoint.url, data=request_body(endpoint, prompt), headers=headers, method="POST")
    deadline = time.monotonic() + timeout
    try:
        resp = _OPENER.open(req, timeout=timeout)
    except urllib.error.HTTPError as exc:
        exc.close()
        raise EndpointUnavailable(f"{endpoint.base_url} answered HTTP {exc.code}") from None
    except urllib.error.URLError as exc:
        raise EndpointUnavailable(f"{endpoint.base_url} unreachable: {exc.reason}") from None
    except (TimeoutError, socket.timeout):
        # Connected and sent; the server never started an answer: alive but silent.
        raise ModelTimeout(f"{endpoint.base_url} accepted the request and sent nothing in {timeout:g}s") from None
    except (http.client.HTTPException, ConnectionError) as exc:
        raise EndpointUnavailable(f"{endpoint.base_url} closed before answering: {type(exc).__name__}") from None
    with resp:
        body = _read_body(resp, deadline)
    try:
        data = json.loads(body)
        message = data["choices"][0].get("message") or {}
        content = message.get("content") if "message" in data["choices"][0] else data["choices"][0].get("text")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, RecursionError):
        raise InvalidOutput("invalid_format", "the response is not a chat completion") from None
    content = content or ""
    usage = data.get("usage") or {}
    return Reply(
        content=content,
        tokens_in=int(usage.get("prompt_tokens") or prompt.chars // CHARS_PER_TOKEN),
        tokens_out=int(usage.get("completion_tokens") or len(content) // CHARS_PER_TOKEN),
        endpoint=endpoint.base_url,
    )


def complete(endpoints: Sequence[Endpoint], prompt: Prompt, timeout: float) -> tuple[Reply, int]:
    """First endpoint that produces output wins; returns the reply and how many were skipped.

    Only `EndpointUnavailable` moves on: a timeout means the model is alive (an incident), and a
    broken or invalid answer means it produced output (resending could duplicate the work).
    """
    failures: list[str] = []
    for i, endpoint in enumerate(endpoints):
        try:
            return post_chat(endpoint, prompt, timeout), i
        except EndpointUnavailable as exc:
            failures.append(str(exc))
    raise EndpointUnavailable("; ".join(failures) or "no endpoint configured")


# --- the batch ----------------------------------------------------------------------------------


def distill_batch(
    experiences_and_cards: Sequence[tuple[Experience, Card]],
    endpoints: Sequence[Endpoint],
    *,
    timeout: float,
    active_cards: Sequence[Card] = (),
    similarity: Similarity | None = None,
    min_conclusion_chars: int = 40,
    max_input_chars: int = MAX_INPUT_CHARS,
    batch_id: str = "",
) -> BatchOutcome:
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
    model_enabled = bool(endpoints)
    counts: Counter = Counter()
    usage: Counter = Counter()
    out = BatchOutcome(cards=[], counts=counts, usage=usage)
    active = [c for c in active_cards if c.status == "active"]
    name = batch_id or (experiences_and_cards[0][1].id if experiences_and_cards else "empty")
    stop_reason = ""

    def settle(card: Card, evidence: EvidenceView, distilled: bool) -> None:
        verdict = judge_card(card, evidence, active, similarity)
        decided = decide_status(card, verdict, model_enabled, distilled)
        out.verdicts[card.id] = verdict
        out.cards.append(decided)
        counts[decided.status] += 1
        if decided.status == "active":
            active.append(decided)  # later cards in this batch must not duplicate it
        elif distilled and not verdict.passed:
            counts["gate_rejected"] += 1

    for exp, card in experiences_and_cards:
        evidence = EvidenceView.of_experience(exp)
        if not model_enabled or card.status in ("superseded", "forgotten"):
            settle(card, evidence, distilled=False)
            continue
        if stop_reason:
            counts["not_sent"] += 1
            out.pending.append(card.id)
            settle(card, evidence, distilled=False)
            continue
        prompt = build_prompt(exp, card, max_input_chars)
        if prompt.empty:
            # Refuse to send: an empty experience can only make the model invent.
            counts["empty_input"] += 1
            settle(card, evidence, distilled=False)
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
            settle(card, evidence, distilled=False)
            continue
        except EndpointUnavailable as exc:
            counts["http_error"] += 1
            stop_reason = "unavailable"
            out.pending.append(card.id)
            out.alerts.append(raise_alert(
                "endpoints_unavailable", f"batch {name}: every endpoint failed before answering: {exc}; batch requeued",
            ))
            settle(card, evidence, distilled=False)
            continue
        except BrokenResponse:
            counts["broken"] += 1
            settle(card, evidence, distilled=False)
            continue
        except InvalidOutput as exc:
            counts[exc.kind] += 1
            settle(card, evidence, distilled=False)
            continue
        counts["ok"] += 1
        distilled = apply_slots(card, slots, reply_model(endpoints, reply))
        problem = conclusion_problem(distilled.conclusion, min_conclusion_chars)
        if problem:
            counts["incomplete_output"] += 1
            out.cards.append(distilled.with_(status="incomplete", gate=problem))
            counts["incomplete"] += 1
            continue
        settle(distilled.with_(status="candidate"), evidence, distilled=True)

    out.requeue = bool(stop_reason)
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


# --- the batch lock -----------------------------------------------------------------------------


class BatchLock:
    """A lock file (pid, host, time) so one batch is distilled by one worker at a time.

    A worker that crashed leaves its lock behind; a lock older than `stale_after_s`, or whose pid
    is gone on this host, is reclaimed with an alert instead of blocking the batch forever.
    """

    def __init__(self, directory: Path, batch_id: str, stale_after_s: float):
        self.path = Path(directory) / f"{batch_id}.lock"
        self.batch_id = batch_id
        self.stale_after_s = stale_after_s
        self.alert = ""
        self._token = f"{os.getpid()}-{time.time_ns()}"

    def _holder(self) -> dict:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def _stale(self, holder: dict, now: float) -> str:
        created = holder.get("created")
        if not isinstance(created, (int, float)):
            return "unreadable lock file"
        if now - created > self.stale_after_s:
            return f"held {now - created:.0f}s by pid {holder.get('pid')} (stale after {self.stale_after_s:g}s)"
        if holder.get("host") == socket.gethostname() and not _pid_alive(holder.get("pid")):
            return f"pid {holder.get('pid')} on this host is gone"
        return ""

    def acquire(self, now: float | None = None) -> BatchLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        payload = json.dumps({
            "pid": os.getpid(), "host": socket.gethostname(), "created": time.time() if now is None else now,
            "token": self._token,
        })
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self._holder()
                why = self._stale(holder, time.time() if now is None else now)
                if not why:
                    raise BatchLocked(f"batch {self.batch_id} is locked by pid {holder.get('pid')} ({self.path})") from None
                # Rename before reclaiming, so two workers reclaiming at once cannot both win.
                grave = self.path.with_suffix(f".stale-{self._token}")
                try:
                    os.replace(self.path, grave)
                    os.unlink(grave)
                except FileNotFoundError:
                    continue
                self.alert = raise_alert("stale_batch_lock", f"batch {self.batch_id}: reclaimed a lock {why}")
                continue
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(payload)
            return self
        raise BatchLocked(f"batch {self.batch_id}: lost the race to reclaim {self.path}")

    def release(self) -> None:
        if self._holder().get("token") == self._token:
            self.path.unlink(missing_ok=True)

    def __enter__(self) -> BatchLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _pid_alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
