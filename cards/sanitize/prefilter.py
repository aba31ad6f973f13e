"""The prefilter: polars' Rust regex over a batch of texts says which detector families could find anything.

Each family of detectors (`detect.find_spans`, `generic_spans`, `shape_spans`) has a hint here: a
Rust `regex` pattern (no lookaround, no backreference) that matches every text in which the family
could find a span, and usually many more. A family whose hint a text lacks is skipped for that text;
a text with no hint at all skips the Python path. The hints are supersets of what the detectors find
(each one the literal or shape its detector's patterns open with, with the lookarounds dropped and
`\\w` widened), so skipping changes no output: tests/test_sanitize_prefilter.py runs every detector
with and without the hints over the secret corpora. Blobs and over-long lines are found by length
and the byte copy's runs, in Python, as before.

One batch costs polars about a millisecond however small, so a batch under `BATCH_MIN_CHARS` (a
single field, a short tool call) gets no hints and every family runs, as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memoir.cards.sanitize.patterns import KEY_ENDINGS, PREFIXES

# One bit per detector family: `hints` gives each text the bits of the families that must run.
TOKENS = 1 << 0  # detect._tokens: PEM and GCP keys, curl -u, AWS and Google keys, JWTs, URL credentials, bearer
PREFIXED = 1 << 1  # detect._prefixed: provider prefixes, private hosts, Discord, Mailchimp, .netrc, Telegram
NUMBERS = 1 << 2  # detect._numbers: phones, card numbers, IBANs
ASSIGN = 1 << 3  # detect._assignments: `secret_key = value`, headers
FLAGS = 1 << 4  # detect._flags: `--password value`
EMAIL = 1 << 5
IPV4 = 1 << 6
IPV6 = 1 << 7
COMMAND = 1 << 8  # generic.command_credentials
PASSWORD = 1 << 9  # generic.password_values
RANDOM = 1 << 10  # a long token run with a digit or a capital: token values, auth tokens, shape tokens, Betterleaks
URL = 1 << 11  # generic.url_tokens
PROVIDER = 1 << 12  # providers.provider_rules (detect-secrets)
FILE_LINES = 1 << 13  # shapes.credential_file_lines: .pgpass, wpa_supplicant.conf, PuTTY
ALL = (1 << 14) - 1

BATCH_MIN_CHARS = 16_384  # below this a batch costs polars more than the families it would skip
_TOKEN = "[A-Za-z0-9+/=_-]"  # patterns.RUN_TABLE's token characters
_WINDOW = 15  # patterns.TOKEN_RUN_MIN: the shortest run any token family looks at
_WORDS = "|".join(sorted(KEY_ENDINGS, key=len, reverse=True))

# (bit, conjunctions): a family runs when every pattern of one of its conjunctions matches the text.
# Python's `\w` and `\d` are Unicode; Rust's are too, but Python's `\w` holds a few characters
# (superscript digits, `²`) Rust's does not: a hint widens `\w` to "not a space" where it matters.
FAMILY_HINTS: tuple[tuple[int, tuple[tuple[str, ...], ...]], ...] = (
    (TOKENS, ((r"-----BEGIN |-u[ \t]|A[KS]IA|AIza|eyJ|://|[Bb]earer",),)),
    (PREFIXED, (
        ("|".join(re.escape(p) for p in sorted(PREFIXES, key=len, reverse=True)),),
        (r"\.(?:internal|local|lan|intranet|home\.arpa|corp\.)|-us\d|machine|SK[0-9a-fA-F]|dapi|EAAA|AT[AC]TT3|\d:AA",),
        (r"\.[^\s.]{6}\.[^\s.]{27}",),  # a Discord bot token's dots
    )),
    (NUMBERS, ((r"\+[0-9]|[0-9]{13}|[0-9]{4}[ -][0-9]{4}[ -][0-9]{4}|[0-9]{4}[ -][0-9]{6}[ -][0-9]{4}"
                r"|[A-Z]{2}[0-9]{2} ?[A-Z0-9]{4}|[0-9]{3}-[0-9]{3}-[0-9]{4}|\([0-9]{3}\)",),)),
    (ASSIGN, ((rf"(?i:(?:{_WORDS})s?[\"'\]]{{0,2}}[ \t]*[:=])",),)),
    (FLAGS, ((r"(?i:--[^\s]*(?:pass|pwd|secret|token|credential|auth|cookie|key))",),)),
    (EMAIL, ((r"@[A-Za-z0-9][A-Za-z0-9.-]*\.[A-Za-z]{2}",),)),
    (IPV4, ((r"1(?:0|72|92|69|00)\.\d{1,3}\.\d{1,3}\.\d",),)),
    (IPV6, ((r"[fF][cCdD][0-9a-fA-F]{2}:|[fF][eE][89abAB][0-9a-fA-F]:",),)),
    (COMMAND, ((r"/p:|sqlplus| -(?:-(?:creds|src-creds|dest-creds|user|proxy-user|pass)|[pPawAXUubknsdw])",),)),  # FLAG_ANCHOR
    (PASSWORD, ((r"(?i:(?:pass(?:word|wd|phrase|code)|pwd|pw|secret)s?"
                 r"(?:[\"'`\]]?[ \t]*(?:[:=]|->)|[ \t]+(?:is|was|set to|=)[ \t]))",),)),
    (RANDOM, (
        # a run of `_WINDOW` token characters with a digit or a capital in it, one branch per place
        ("|".join(f"{_TOKEN}{{{a}}}[0-9A-Z]{_TOKEN}{{{_WINDOW - 1 - a}}}" for a in range(_WINDOW)),),
        (r"[a-f][a-f_-]{19}",),  # 40+ hex letters after a prefix (`shapes.prefixed_tokens`), no digit in them
        (r"[A-Za-z0-9_-]{20}[A-Za-z0-9_.-]*[0-9A-Z]",),  # a prefixed token's digit in a `.signature` part
    )),
    (URL, ((r"://",),)),
    (PROVIDER, ((r"AKC|AccountKey=|loudant|ibm|IBM|oftlayer|SOFTLAYER|AP",),)),
    (FILE_LINES, ((r":(?:\d{2,5}|\*):[^\s:]+:[^\s:]*:[^\s\"'\\:]|psk=|wep_key|sae_password=|Private-Lines:",),)),
)


def hints(texts: Sequence[str]) -> list[int | None]:
    """For each text, the bits of the families that could find a span in it; None: run every family.

    A text polars cannot hold (a lone surrogate from a JSON escape) gets None, as does every text
    of a batch too small to be worth a polars call.
    """
    if sum(map(len, texts)) < BATCH_MIN_CHARS:
        return [None] * len(texts)
    import polars as pl  # deferred: start-up

    valid = [t.isascii() or _utf8(t) for t in texts]
    frame = pl.DataFrame({"text": [t if ok else "" for t, ok in zip(texts, valid)]}, schema={"text": pl.String})
    text = pl.col("text")
    families = [
        pl.any_horizontal([pl.all_horizontal([text.str.contains(p) for p in conj]) for conj in conjs]).cast(pl.Int64) * bit
        for bit, conjs in FAMILY_HINTS
    ]
    found = frame.select(pl.sum_horizontal(families).alias("bits"))["bits"].to_list()
    return [bits if ok else None for bits, ok in zip(found, valid)]


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
