"""The one I/O of the model stage: POST a chat completion to an OpenAI-compatible endpoint.

Every request has a timeout and a size cap; the error type says whether the next endpoint may be
tried (`EndpointUnavailable`) or not (a timeout is an incident, a broken answer is never resent).
"""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from memoir.cards.distill.errors import BrokenResponse, EndpointUnavailable, InvalidOutput, ModelTimeout
from memoir.cards.distill.llm_prompt import Prompt
from memoir.cards.distill.llm_slots import OUTPUT_SCHEMA

MAX_OUTPUT_TOKENS = 512
MAX_RESPONSE_BYTES = 1 << 20  # a chat completion for six short slots is a few KB
READ_CHUNK = 8192
CHARS_PER_TOKEN = 4  # estimate when the server reports no usage


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
class Reply:
    """A finished chat completion: the message content, token usage, who answered."""

    content: str
    tokens_in: int
    tokens_out: int
    endpoint: str


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
