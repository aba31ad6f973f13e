"""The sanitizer's polars prefilter (cards/sanitize/prefilter.py): a text with a secret of any family reaches
that family's detectors, a text with no hint comes back unchanged, and with or without the hints every
detector finds the same spans over the secret corpora."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memoir.cards.sanitize import prefilter
from memoir.cards.sanitize.patterns import RUN_TABLE
from memoir.cards.sanitize.scan import find_spans, sanitize_with_report
from memoir.cards.sanitize.shapes import SHAPE_RULES

CAP = 4000
SECRETS = Path(__file__).parent / "fixtures" / "secrets"
# A batch under BATCH_MIN_CHARS gets no hints; this ordinary prose (no hint of any family) fills it up.
FILLER = "we looked at the failing step and the retry loop together, then wrote it down.\n" * 250

# (family, text, the secret in it): one secret of each family, in the shape its detectors look for.
FAMILY_SECRETS = [
    (prefilter.TOKENS, "aws key AKIAZ7Q3LMN4PRS5TUVW in the env", "AKIAZ7Q3LMN4PRS5TUVW"),
    (prefilter.PREFIXED, "export GH=ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 now", "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    (prefilter.PREFIXED, "ssh deploy to build-7.internal tonight", "build-7.internal"),
    (prefilter.NUMBERS, "call me on +44 20 7946 0958 tomorrow", "+44 20 7946 0958"),
    (prefilter.ASSIGN, "DB_PASSWORD=hunter2xyz", "hunter2xyz"),
    (prefilter.FLAGS, "deploy --api-key s3cr3tvalue99 --verbose", "s3cr3tvalue99"),
    (prefilter.EMAIL, "mail jane.doe@acme-corp.io about it", "jane.doe@acme-corp.io"),
    (prefilter.IPV4, "the host is 10.1.2.3 behind the VPN", "10.1.2.3"),
    (prefilter.IPV6, "it listens on fd12:3456:789a::1 only", "fd12:3456:789a::1"),
    (prefilter.COMMAND, "run mysql -uroot -pS3cretPass shop", "S3cretPass"),
    (prefilter.PASSWORD, "the password is Tr0ub4dor&3 for now", "Tr0ub4dor&3"),
    (prefilter.RANDOM, "the token is WLuqIA1id6Vw5DQL05HA064GiIjHGb3CXlMaXZjl ok", "WLuqIA1id6Vw5DQL05HA064GiIjHGb3CXlMaXZjl"),
    (prefilter.URL, "GET https://api.example.net/v1/data?access_token=a8Fk3Lq9Zx2Wm7Rt", "a8Fk3Lq9Zx2Wm7Rt"),
    (prefilter.FILE_LINES, "db.example.com:5432:shop:app:ufUxbvJDCTbyvH", "ufUxbvJDCTbyvH"),
]


def _spans(text: str, hints: int | None) -> list:
    raw = text.encode("ascii", "replace")
    return find_spans(text, raw, raw.translate(RUN_TABLE), hints=hints)


@pytest.mark.parametrize(("family", "text", "secret"), FAMILY_SECRETS, ids=[t[:24] for _, t, _ in FAMILY_SECRETS])
def test_a_secret_of_each_family_reaches_its_detectors(family, text, secret):
    hints = prefilter.hints([text, FILLER])[0]
    assert hints is not None and hints & family, (text, hints)
    out = sanitize_with_report(text, CAP, hints=hints)
    assert secret not in out.text
    assert out == sanitize_with_report(text, CAP)


def test_a_text_with_no_hint_comes_back_unchanged():
    text = "The retry loop waits twice as long each time; the second run passed.\n"
    hints = prefilter.hints([text, FILLER])
    assert hints == [0, 0]
    assert sanitize_with_report(text, CAP, hints=0).text == text == sanitize_with_report(text, CAP).text


def _corpus_texts() -> list[str]:
    texts = []
    for path in sorted(SECRETS.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                entry = json.loads(line)
                texts.append(entry.get("line") or entry.get("text") or "")
    texts += [t for rule in SHAPE_RULES for t in (*rule.hits, *rule.misses)]
    texts += [t for _, t, _ in FAMILY_SECRETS]
    return texts


def test_every_detector_finds_the_same_spans_with_the_hints_over_the_secret_corpora():
    texts = _corpus_texts()
    assert len(texts) > 400
    hints = prefilter.hints([*texts, FILLER])[:-1]
    assert None not in hints
    differ = [t for t, h in zip(texts, hints) if _spans(t, h) != _spans(t, None)]
    assert differ == []
    # And as whole texts: each corpus line pasted into a longer tool output.
    block = "\n".join(texts)
    hint = prefilter.hints([block])[0]
    assert _spans(block, hint) == _spans(block, None)


def test_a_small_batch_or_a_lone_surrogate_gets_no_hints_and_every_family_runs():
    assert prefilter.hints(["DB_PASSWORD=hunter2xyz"]) == [None]
    assert prefilter.hints(["broken \ud800 escape", FILLER]) == [None, 0]
