"""cards/sanitize/ against tests/fixtures/secrets/corpus.jsonl and unlisted.jsonl: every secret goes, nothing else does.

unlisted.jsonl holds shapes no provider-prefix table names (command-line flags, secret words
mid-sentence, base64-wrapped credentials, webhook tokens, made-up prefixes): the provider-table
detector alone (`generic=False`) misses most of them, the full sanitizer none.

A secret line must come out as the line with each secret span replaced by exactly one marker, so a
detector that eats a neighbour (`postgres://appuser…` becoming `postgre<path>`) fails here as
surely as one that misses the secret. A near-miss line must come out unchanged.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memoir.cards.config import Settings
from memoir.cards.sanitize import sanitize
from memoir.cards.sanitize.patterns import MARKER_RE
from memoir.cards.sanitize.scan import sanitize_with_report

CAP = Settings.blob_cap  # the sanitizer takes the user's cap from its caller; the default one here

CORPUS = Path(__file__).parent / "fixtures" / "secrets" / "corpus.jsonl"
UNLISTED = CORPUS.with_name("unlisted.jsonl")
PROVIDERS = CORPUS.with_name("providers.jsonl")  # issue 41: provider formats and file shapes, bare (make_providers.py)


def _load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


LISTED = _load(CORPUS)
UNLISTED_ENTRIES = _load(UNLISTED)
# Checked for what is not stored (the secret gone, near-misses intact), not for the exact span: a webhook
# loses its path's token, a PEM block goes whole, where the entry names the URL or one line.
PROVIDER_ENTRIES = _load(PROVIDERS)
ENTRIES = LISTED + UNLISTED_ENTRIES
SECRETS = [e for e in ENTRIES if "secret" in e]
NEAR_MISSES = [e for e in ENTRIES if "near_miss" in e]


def _spans(line: str, secrets: list[str]) -> list[tuple[int, int]]:
    spans = []
    for secret in secrets:
        start = line.index(secret)
        spans.append((start, start + len(secret)))
    return sorted(spans)


def _expected_shape(line: str, spans: list[tuple[int, int]]) -> re.Pattern[str]:
    """The line with one marker in place of each secret span and every other character as it was."""
    parts, pos = [], 0
    for start, end in spans:
        parts.append(re.escape(line[pos:start]))
        parts.append("(?:" + MARKER_RE.pattern + ")")
        pos = end
    parts.append(re.escape(line[pos:]))
    return re.compile("".join(parts), re.S)


def test_corpus_meets_the_issue_counts() -> None:
    assert len(SECRETS) >= 60
    assert len({e["shape"] for e in SECRETS}) >= 35
    assert len(NEAR_MISSES) >= 25
    assert len({e["id"] for e in ENTRIES}) == len(ENTRIES)
    unlisted = [e for e in UNLISTED_ENTRIES if "secret" in e]
    assert len({e["shape"] for e in unlisted}) >= 40
    assert sum("near_miss" in e for e in UNLISTED_ENTRIES) >= 25
    assert not {e["shape"] for e in unlisted} & {e["shape"] for e in LISTED}


def test_the_provider_table_alone_misses_most_unlisted_shapes() -> None:
    """What the corpus is for: without the provider-independent rules, most of these leak."""
    unlisted = [e for e in UNLISTED_ENTRIES if "secret" in e]
    leaked = [e for e in unlisted if e["secret"] in sanitize_with_report(e["line"], CAP, generic=False).text]
    assert len(leaked) >= len(unlisted) // 2


@pytest.mark.parametrize("entry", SECRETS, ids=[e["id"] + "-" + e["shape"] for e in SECRETS])
def test_secret_is_replaced_and_nothing_around_it_is_eaten(entry: dict) -> None:
    line = entry["line"]
    secrets = [entry["secret"], *entry.get("also", [])]
    out = sanitize(line, CAP)
    for secret in secrets:
        assert secret not in out
    assert _expected_shape(line, _spans(line, secrets)).fullmatch(out), out
    assert sanitize(out, CAP) == out


@pytest.mark.parametrize("entry", NEAR_MISSES, ids=[e["id"] + "-" + e["shape"] for e in NEAR_MISSES])
def test_near_miss_line_survives_unchanged(entry: dict) -> None:
    assert entry["near_miss"] in entry["line"]
    assert sanitize(entry["line"], CAP) == entry["line"]


def test_the_provider_corpus_holds_150_shapes_and_every_one_is_redacted_and_near_misses_survive():
    """Issue 41: credentials in the formats providers issue them (a maintained rule set's providers and
    memoir's own format rules), pasted bare, in exports and config lines, in several languages."""
    secrets = [e for e in PROVIDER_ENTRIES if "secret" in e]
    assert len({e["shape"] for e in secrets}) >= 150
    leaked = [e["shape"] for e in secrets if e["secret"] in sanitize(e["line"], CAP)]
    assert leaked == []
    eaten = [e["shape"] for e in PROVIDER_ENTRIES if "near_miss" in e and sanitize(e["line"], CAP) != e["line"]]
    assert eaten == []
