"""Scrub secrets, private addresses, e-mail addresses and pasted blobs before anything is stored.

Named shapes only, never a "looks random" heuristic on its own: git SHAs, content hashes, UUIDs,
asset names and paths are legitimate things for a card to mention, and corrupting a true fact is
a worse failure than missing an exotic token shape.

Rules (each decision pinned by tests/test_sanitize.py and the corpus in tests/test_sanitize_corpus.py):
- A secret becomes `[REDACTED:<kind>]`; only the secret part is replaced (`password=` keeps its
  key, `scheme://user:[REDACTED:url_password]@host` keeps user and host).
- Loopback (127/8, ::1) and 0.0.0.0 survive: they name no network. RFC 1918, CGNAT 100.64/10,
  link-local 169.254/16, ULA fc00::/7 and link-local fe80::/10 are redacted. Only a full dotted
  quad is an address: "version 10.0.0" and "v10.0.0.1" survive, a bare "10.0.0.1" does not.
- `local@domain.tld` is an e-mail, inside a path too (`/home/[REDACTED:email]/settings.py`: the
  folders around it stay); `@decorator`, `pkg@1.2.3`, `logo@2x.png`, `user@buildbox` (no TLD, as
  in ssh commands), `git@github.com`, `noreply@...` and documentation domains (`user@example.com`,
  `ops@mail.example.org`) survive. `user@nas.local` is an ssh target: the host goes, the user stays.
- Provider tokens are named by their fixed prefix (`glpat-`, `pypi-AgEIcHlwaS5vcmc`, `SG.`, `SK`+32
  hex, `shpat_`, `dop_v1_`, `hvs.`, `AGE-SECRET-KEY-1`, ...); a prefix glued to a word is not one.
  A URL user name that is a token (a Sentry DSN key) goes like a password. A 32-hex value right
  after "auth token" goes (Twilio). `.netrc` `machine ... password X` loses X.
- An AWS secret key needs no name: 40 mixed-case characters on the line of an `AKIA` key or the
  next. The AWS docs' example pair (`AKIAIOSFODNN7EXAMPLE`, `wJalr...EXAMPLEKEY`) survives anywhere.
- Host names under `.internal`, `.local`, `.lan`, `.intranet`, `.home.arpa` and `*.corp.*` are
  redacted (`printer.local`, `db.corp.example.com`). `x.local` is also attribute access, so a
  name without a hyphen or digit, a URL, a port or a host key (`DB_HOST=`) stays where the text
  reads as code (`version.local is None`, `from dask.local import`, `x = value.local`, `d.local)`).
  `localhost`, `*.example.com`, `example.local`, `host.docker.internal`, `metadata.google.internal`
  and files (`./env.local`, `.env.local`) stay.
- Card numbers: 13-19 digits of a card network's length and first digits, Luhn-valid; plain runs
  only after a card word (one random id in ten passes Luhn), grouped 4-4-4-4 / 4-6-5 always.
  Published test cards (`4242 4242 4242 4242`) survive. IBANs: a known country's length and the
  mod-97 check (the ISO example IBANs survive).
- Phones: `+` and 9 to 15 digits (not `+0`, not a decimal, not a date), `(415) 555-2671` and
  `415-555-2671`; versions, dates, timestamps, ports, ranges and line numbers survive.
- `KEY=value`, `"key": "value"`, line-leading `key: value` and `--password value` are redacted
  when the key ends in a secret word (password, token, secret, api_key, auth, credential,
  cookie, ...; `SECRET_KEY_BASE`, with a word after it, is missed) and the value is a literal:
  numbers under a token/secret key (`max_tokens: 4096`), `$VAR`, `${{ secrets.X }}`,
  `<placeholder>`, booleans, type names and code (`self.token`, `get_token()`) survive, as do
  keys that name a property of a secret (`TOKEN_LIMIT`, `SECRET_NAME`, `PASSWORD_FILE`, `*_ID`).
- Blobs: an unbroken run of at least BLOB_RUN_MIN base64/hex characters (base64 images,
  thinking signatures, hex dumps) is replaced whole by `[BLOB len=N sha=xxxxxxxx]`; a line
  longer than `blob_cap` (minified JS, one-line JSON dumps) keeps a short head and tail around
  the marker. Length and hash describe the original text the marker replaced. A long text made
  of ordinary lines is not cut here: which part of a long log matters is the distiller's call.
- Markers are never re-detected, so `sanitize(sanitize(x)) == sanitize(x)`.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import AnyStr

BLOB_RUN_MIN = 200  # longer than any hash or key we keep (sha512 hex is 128), shorter than any image
BLOB_RUN_MIN_DISTINCT = 10  # "=====" rules and "-----" separators are not blobs
BLOB_HEAD = 120  # enough of a long line to see what it was (a URL, a JSON key, a JS banner)
BLOB_TAIL = 40
SHA_CHARS = 8
MAX_PASSES = 3  # a cut long line can expose a new boundary; one more pass always settles it

MARKER_RE = re.compile(r"\[REDACTED:[a-z0-9_]+\]|\[BLOB len=\d+ sha=[0-9a-f]{%d}\]" % SHA_CHARS)
_NOT_MARKER = r"(?!\[REDACTED:|\[BLOB )"


@dataclass(frozen=True, slots=True)
class Finding:
    """One span of `text` that must not be stored, and the shape it was recognised as."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Sanitized:
    """Sanitized text and how many markers of each kind were written."""

    text: str
    counts: Counter[str]


def _mixed(s: str) -> bool:
    """A random token has a digit and a letter; a hyphenated file or tool name rarely has both."""
    return any(c.isdigit() for c in s) and any(c.isalpha() for c in s)


# Every detector starts with a literal (lookbehinds come after it) because CPython's `re` only
# skips ahead fast over a literal prefix; a pattern opening with a class or a lookbehind tries
# every position and runs at a tenth of the speed. `back` is how far the secret starts before it.
_TOKEN_END = r"(?![A-Za-z0-9_])"
_AWS_GOOGLE = re.compile(
    r"I(?:(?P<aws>A)(?<=A[KS]IA)[A-Z0-9]{16}(?![A-Za-z0-9])|(?P<google>za)(?<=AIza)[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-]))"
)
_JWT = re.compile(r"J(?<=eyJ)(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{7,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*")
_PEM = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----"
    r"(?:.*?-----END \1-----|[A-Za-z0-9+/=\s\\:,-]*)",
    re.S,
)
_GCP = re.compile(r'"private_key"\s*:\s*"(-----BEGIN[^"]*)"')
_URL = re.compile(
    r"://(?:(?<=https://)hooks\.slack\.com/(?:services|workflows|triggers)/(?P<slack>[A-Za-z0-9_/-]+)"
    r"|(?P<user>[A-Za-z0-9_-]{20,})@(?=[^\s@/?#\"'<>])"
    r"|[^\s:/?#@\"'<>]+:" + _NOT_MARKER + r"(?!\$)(?P<password>[^\s/?#\"'<>]+)@(?=[^\s@/?#\"'<>]))"
)
_BEARER = re.compile(r"earer(?<=[Bb]earer)\s+" + _NOT_MARKER + r"(?P<body>[A-Za-z0-9._~+/-]{16,}=*)")
_CURL_USER = re.compile(r"-u(?<![^\s\"']-u)[ \t]+[\"']?[^\s:\"']+:" + _NOT_MARKER + r"(?P<password>[^\s\"']{3,})")

_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_PRIVATE_V4 = re.compile(
    r"1(?<![\w.]1)(?:"
    rf"0\.{_OCTET}\.{_OCTET}\.{_OCTET}"
    rf"|72\.(?:1[6-9]|2\d|3[01])\.{_OCTET}\.{_OCTET}"
    rf"|92\.168\.{_OCTET}\.{_OCTET}"
    rf"|69\.254\.{_OCTET}\.{_OCTET}"
    rf"|00\.(?:6[4-9]|[7-9]\d|1[01]\d|12[0-7])\.{_OCTET}\.{_OCTET}"
    r")(?!\.?\d)(?![A-Za-z_])"
)
_V6_SEED = re.compile(r":(?<=[fF][cCdD][0-9a-fA-F]{2}:|[fF][eE][89abAB][0-9a-fA-F]:)")
_PRIVATE_V6 = re.compile(
    r"(?<![0-9A-Fa-f:])(?:[fF][cCdD][0-9a-fA-F]{2}|[fF][eE][89abAB][0-9a-fA-F])"
    r"(?::[0-9a-fA-F]{0,4}){2,7}(?:%[\w.]+)?(?![0-9A-Fa-f:])"
)


# Provider tokens named by a fixed prefix (the shapes gitleaks and detect-secrets list). Almost
# every prefix ends in "-", "_" or ".", so one pattern per separator finds them all: it opens with
# the separator (a literal) and tries the prefixes as lookbehinds, grouped by the character before
# the separator so most separators fail on one test. Thirty literal scans would cost more than
# every other detector together. The code then names the prefix and checks the body.
_TOKEN_TAIL = r"(?![\w-])"
_SEPARATED = (
    ("sk-", "openai_key", r"(?:ant-(?P<anthropic>[A-Za-z0-9_-]{32,})|(?!ant-)(?:proj-|svcacct-|admin-|None-)?(?P<openai>[A-Za-z0-9_-]{32,}))"),
    ("xoxa- xoxb- xoxp- xoxo- xoxs- xoxr- xoxe-", "slack_token", r"[A-Za-z0-9-]{10,}"),
    ("xapp-", "slack_token", r"\d-[A-Za-z0-9-]{10,}"),
    ("ghp_ gho_ ghu_ ghs_ ghr_", "github_token", r"[A-Za-z0-9]{36,251}" + _TOKEN_END),
    ("github_pat_", "github_token", r"[A-Za-z0-9_]{22,255}" + _TOKEN_END),
    ("npm_", "npm_token", r"[A-Za-z0-9]{36}" + _TOKEN_END),
    ("hf_", "huggingface_token", r"[A-Za-z0-9]{30,}" + _TOKEN_END),  # and a digit: `hf_hub_download_to_cache_dir`
    ("sk_live_ sk_test_ rk_live_ rk_test_ pk_live_ pk_test_", "stripe_key", r"[A-Za-z0-9]{16,}" + _TOKEN_END),
    ("glpat- gldt- glrt- glptt- glcbt- glft- glimt- gloas- glsoat- glffct- glagent-", "gitlab_token", r"[\w-]{20,}" + _TOKEN_TAIL),
    ("glc_", "grafana_token", r"[A-Za-z0-9+/]{32,400}={0,2}" + _TOKEN_TAIL),
    ("glsa_", "grafana_token", r"[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}" + _TOKEN_TAIL),
    ("pypi-", "pypi_token", r"AgEIcHlwaS5vcmc[\w-]{50,}" + _TOKEN_TAIL),
    ("SG.", "sendgrid_key", r"[\w-]{22}\.[\w-]{43}" + _TOKEN_TAIL),
    ("shpat_ shpca_ shppa_ shpss_", "shopify_token", r"[a-fA-F0-9]{32}" + _TOKEN_TAIL),
    ("dop_v1_ doo_v1_ dor_v1_", "digitalocean_token", r"[a-f0-9]{64}" + _TOKEN_TAIL),
    ("dp.pt. dp.st. dp.ct. dp.sa. dp.scim. dp.audit.", "doppler_token", r"(?:[\w-]{1,40}\.)?[A-Za-z0-9]{40,44}" + _TOKEN_TAIL),
    ("key-", "mailgun_key", r"[0-9a-f]{32}" + _TOKEN_TAIL),
    ("sq0atp- sq0csp-", "square_token", r"[\w-]{22,43}" + _TOKEN_TAIL),
    ("HRKU-", "heroku_key", r"[\w-]{30,}" + _TOKEN_TAIL),
    ("AGE-SECRET-KEY-", "age_secret_key", r"1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}" + _TOKEN_TAIL),
    ("hvs. hvb. hvr.", "vault_token", r"[\w-]{24,}" + _TOKEN_TAIL),
    ("lin_api_ lin_oauth_", "linear_key", r"[A-Za-z0-9]{40}" + _TOKEN_TAIL),
    ("PMAK-", "postman_key", r"[a-f0-9]{24}-[a-f0-9]{34}" + _TOKEN_TAIL),
    ("NRAK- NRII- NRAA- NRRA- NRJS-", "newrelic_key", r"[A-Za-z0-9]{19,32}" + _TOKEN_TAIL),
    ("sntrys_ sntryu_", "sentry_token", r"[\w=+/-]{40,}" + _TOKEN_TAIL),
    ("v1.0-", "cloudflare_key", r"[a-f0-9]{24}-[a-f0-9]{146}" + _TOKEN_TAIL),
    ("dckr_pat_ dckr_oat_", "dockerhub_token", r"[\w-]{27,}" + _TOKEN_TAIL),
    ("whsec_", "stripe_key", r"[A-Za-z0-9+/]{32,}" + _TOKEN_TAIL),
    ("ya29.", "google_oauth_token", r"[\w-]{30,}" + _TOKEN_TAIL),
    ("GOCSPX-", "google_oauth_token", r"[\w-]{28}" + _TOKEN_TAIL),
)
_PREFIXES: dict[str, tuple[str, re.Pattern[str]]] = {
    prefix: (kind, re.compile(body))
    for prefixes, kind, body in _SEPARATED
    for prefix in prefixes.split()
}
_NO_DASH_BEFORE = frozenset({"sk-", "xapp-"} | {p for p in _PREFIXES if p.startswith("xox")})  # `task-sk-...`
# Shapes that share a separator scan without a prefix of their own: a Mailchimp key (32 hex, then
# "-us" and the data centre), a Discord bot token (base64 user id, 6, 27+ characters between dots)
# and the private host suffixes.
_SEPARATOR_EXTRAS = {
    "-": (r"(?=us\d)(?<=[0-9a-f]{32}-)",),
    ".": (r"(?=internal|local|lan|intranet|home\.arpa|corp\.|[\w-]{6}\.[\w-]{27})",),
}


def _prefix_lookbehind(prefix: str) -> str:
    """`prefix` just before the separator, and no word character (or dash, for some) before it."""
    glued = r"[\w-]" if prefix in _NO_DASH_BEFORE else r"\w"
    return "(?<=%s)(?<!%s%s)" % (re.escape(prefix), glued, re.escape(prefix))


def _separator_scan(sep: str) -> re.Pattern[str]:
    """The pattern that stops at `sep` only where a prefix ending in it (or an extra shape) may end."""
    by_before: dict[str, list[str]] = {}
    for prefix in _PREFIXES:
        if prefix.endswith(sep):
            by_before.setdefault(prefix[-2], []).append(prefix)
    prefixes = [p for group in by_before.values() for p in group]
    # One lookbehind of two character sets turns most separators away before any prefix is tried.
    sieve = "(?<=[%s][%s]%s)" % tuple(
        re.escape("".join(sorted(chars))) for chars in ({p[-3] for p in prefixes}, set(by_before), sep)
    )
    trie = "|".join(
        "(?<=%s)(?:%s)" % (re.escape(c + sep), "|".join(_prefix_lookbehind(p) for p in group))
        for c, group in sorted(by_before.items())
    )
    branches = [sieve + "(?:" + trie + ")", *_SEPARATOR_EXTRAS.get(sep, ())]
    return re.compile(re.escape(sep) + "(?:" + "|".join(branches) + ")")


_SEPARATOR_SCANS = tuple((sep, _separator_scan(sep)) for sep in "-_.")
_BY_SEPARATOR = {sep: sorted((p for p in _PREFIXES if p.endswith(sep)), key=len, reverse=True) for sep in "-_."}
# Prefixes with no separator get a scan each.
_UNSEPARATED = tuple(
    (re.compile(pattern + _TOKEN_TAIL), kind)
    for pattern, kind in (
        (r"SK(?<!\wSK)[0-9a-fA-F]{32}", "twilio_key"),
        (r"dapi(?<!\wdapi)[a-f0-9]{32}(?:-\d)?", "databricks_token"),
        (r"EAAA(?<!\wEAAA)[\w-]{60,}", "square_token"),
        (r"TT3(?<=AT[AC]TT3)[\w=-]{150,}", "atlassian_token"),
    )
)
_MAILCHIMP = re.compile(r"[0-9a-f]{32}-us\d{1,2}(?!\w)")
_DISCORD = re.compile(r"[MNO][\w-]{23,25}\.[\w-]{6}\.[\w-]{27,38}(?![\w.-])")
_TELEGRAM = re.compile(r":AA(?<=\d:AA)[\w-]{33}(?![\w-])")  # 8 to 10 digits (the bot id) before it
_AUTH_TOKEN = re.compile(r"auth[ _-]?token[^\n0-9a-f]{0,16}?(?<![0-9a-z])(?P<hex>[0-9a-f]{32})(?![0-9a-z])")
_NETRC = re.compile(
    r"machine(?<!\wmachine)\s+\S+(?:\s+(?:login|account|port|protocol)\s+\S+){0,3}?\s+password\s+"
    + _NOT_MARKER + r"(?![$<{%])(?P<password>\S{3,})"
)
_AWS_BARE_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
AWS_PAIR_WINDOW = 300  # how far after an access key its secret is looked for (same or next line)
# Documentation values: the AWS docs' example pair names no account; a card would lose its meaning.
_DOCUMENTED = frozenset({"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"})
_DOCUMENTED_IBANS = frozenset({"GB29NWBK60161331926819", "DE89370400440532013000", "GB82WEST12345698765432"})

# Host names that only resolve inside one organisation. Fixed names that every installation shares
# (Docker's and GCP's, Kubernetes' API service) and documentation names survive.
_PRIVATE_SUFFIX = re.compile(
    r"\.(?:internal|local|lan|intranet|home\.arpa|corp(?>(?:\.[a-z0-9-]{1,63}){1,6})(?<=[a-z]{2}))"
    r"(?![\w-]|\.\w|\()"
)  # atomic and bounded: a chain of `.corp.` labels must not be re-tried label by label
HOST_MAX = 253  # the longest DNS name: how far back a host name is looked for
_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-.")
_WELL_KNOWN_HOSTS = frozenset(
    "host.docker.internal gateway.docker.internal metadata.google.internal example.local "
    "example.internal example.lan kubernetes.default.svc.cluster.local".split()
)
_CODE_RECEIVERS = frozenset(
    "self this cls super threading _thread os sys ctx options opts args kwargs config cfg settings "
    "version value obj np pd torch".split()
)
_CODE_AFTER = re.compile(r"\s+(?:is\s+(?:not\s+)?(?:None|True|False)\b|import\b|[=!]=)|[\[;)}]|:(?!\d)")
_CODE_LINE = re.compile(r"\s*(?:from|import|package|using|assert|return|if|elif|while)\s")
_HOST_KEYS = ("host", "hostname", "server", "addr", "address", "url", "uri", "endpoint", "domain")
_KEY_BEFORE_EQ = re.compile(r"([A-Za-z_][\w.-]*)[\"']? ?= ?$")

# Numbers (cards, IBANs, phones) are looked for on a byte copy where every digit is "0", every
# capital "A" and every other letter "a": the shapes then open with literals ("0000", "AA00",
# "000-000-0000", "+0", "(000)") and the search runs at literal speed; the original text decides.
# Offsets match: one byte per character.
_NUMBER_TABLE = bytes(
    0x30 if 0x30 <= b <= 0x39 else 0x41 if 0x41 <= b <= 0x5A else 0x61 if 0x61 <= b <= 0x7A
    else b if b in b" -+()" else 0x2E
    for b in range(256)
)
_CARD_SHAPE = re.compile(rb"0000(?:0{9,15}|(?P<s>[ -])0000(?P=s)0000(?P=s)0000|(?P<t>[ -])000000(?P=t)00000?)")
_IBAN_START = re.compile(rb"AA00 ?[A0]{4}")
_US_PHONE_SHAPE = re.compile(rb"000-000-0000")
_PLUS_SHAPE = re.compile(rb"\+(?<![Aa0]\+)0[0 .()-]{8}")  # not `i+1`: 9 digits at least
_PAREN_SHAPE = re.compile(rb"\(000\)")
# Atomic group: a digit run that fails the end test must not be re-split thousands of ways.
_PHONE_PLUS = re.compile(r"\+(?<![\w+]\+)[1-9]\d{0,2}(?>(?:[ .-]?(?:\(\d{1,4}\)|\d{1,4})){2,6})(?!\w|[.-]\d)")
_PHONE_PAREN = re.compile(r"\((?<![\w(]\()[2-9]\d{2}\) ?[2-9]\d{2}[-. ]\d{4}(?!\w|[.-]\d)")
_DATE_IN_PHONE = re.compile(r"\d{4}-\d\d-\d\d")
PHONE_DIGITS = (9, 15)  # E.164 allows 15; fewer than 9 is a version, a range or a small sum
# Lengths by country (ISO 13616 registry, the countries most seen); an unknown country is not an IBAN.
_IBAN_LENGTHS = {
    cc: int(n)
    for cc, n in (
        item.split(":")
        for item in (
            "AD:24 AE:23 AL:28 AT:20 AZ:28 BA:20 BE:16 BG:22 BH:22 BR:29 CH:21 CR:22 CY:28 CZ:24 DE:22 "
            "DK:18 DO:28 EE:20 EG:29 ES:24 FI:18 FO:18 FR:27 GB:22 GE:22 GI:23 GL:18 GR:27 GT:28 HR:21 "
            "HU:28 IE:22 IL:23 IS:26 IT:27 JO:30 KW:30 KZ:20 LB:28 LI:21 LT:20 LU:20 LV:21 MC:27 MD:24 "
            "ME:22 MK:19 MR:27 MT:31 MU:30 NL:18 NO:15 PK:24 PL:28 PS:29 PT:25 QA:29 RO:24 RS:22 SA:24 "
            "SE:24 SI:19 SK:24 SM:27 TN:24 TR:26 UA:29 VG:24 XK:20"
        ).split()
    )
}
# One Luhn-valid run of digits in ten is an id, a seed or a product: ungrouped digits are a card
# only with a card word before them; grouped ones (4-4-4-4, 4-6-5) always are.
_CARD_WORD = re.compile(r"(?i)card|\bcc|\bpan\b|visa|master|amex|discover|payment|credit|debit")
CARD_WORD_WINDOW = 40
# Test numbers published by card networks and payment providers: they pay nothing.
_TEST_CARDS = frozenset(
    "4242424242424242 4111111111111111 4000056655665556 4012888888881881 5555555555554444 "
    "5200828282828210 5105105105105100 2223003122003222 378282246310005 371449635398431 "
    "6011111111111117 6011000990139424 3530111333300000 3566002020360505 30569309025904".split()
)

# Kinds in priority order: where findings overlap, the merged marker names the earliest kind.
KINDS = (
    "gcp_service_account_key",
    "pem_private_key",
    "aws_access_key",
    "aws_secret_key",
    "github_token",
    "anthropic_key",
    "openai_key",
    "stripe_key",
    "slack_webhook",
    "slack_token",
    "google_api_key",
    "npm_token",
    "huggingface_token",
    "gitlab_token",
    "pypi_token",
    "sendgrid_key",
    "twilio_key",
    "shopify_token",
    "digitalocean_token",
    "databricks_token",
    "doppler_token",
    "mailgun_key",
    "mailchimp_key",
    "square_token",
    "telegram_bot_token",
    "discord_bot_token",
    "heroku_key",
    "age_secret_key",
    "vault_token",
    "atlassian_token",
    "grafana_token",
    "linear_key",
    "postman_key",
    "newrelic_key",
    "sentry_token",
    "cloudflare_key",
    "dockerhub_token",
    "jwt",
    "bearer_token",
    "google_oauth_token",
    "basic_auth",
    "auth_header",
    "cookie",
    "url_password",
    "url_token",
    "netrc_password",
    "auth_token",
    "secret_assignment",
    "card_number",
    "iban",
    "phone_number",
    "email",
    "internal_host",
    "private_ipv4",
    "private_ipv6",
    "blob",
)
_RANK = {kind: i for i, kind in enumerate(KINDS)}

# Secret key names are found from the operator backwards, on the reversed lower-cased text, so
# the pattern can open with the literal "=" or ":" (see above): `API_KEY = ` reads "= yek_ipa".
_KEY_ENDINGS = (
    "key", "token", "secret", "pass", "passwd", "password", "pwd", "auth", "credential", "cookie",
    "passphrase", "authorization",
)
_REV_WORDS = "|".join(w[::-1] for w in sorted(_KEY_ENDINGS, key=len, reverse=True))
_REV_KEY = r"(?:" + _REV_WORDS + r")[a-z0-9_.-]{0,48}"
_REV_EQ = re.compile(r"=(?<![=!<>]=)(?![=!<>]):?[ \t]*[\"'\]]{0,2}s?" + _REV_KEY)
_REV_COLON = re.compile(r":[ \t]*[\"'\]]{0,2}s?" + _REV_KEY)
_SECRET_KEY = re.compile(
    r"passw|passphrase|(?:^|[_.-])pass$|[_.-]pwd$|secret|token(?!i[sz])|credential"
    r"|auth(?!or(?!i[sz]))|cookie"
    r"|(?:api|access|secret|private|signing|encryption|master|account|storage|sharedaccess"
    r"|admin|app|client|license|service|webhook)[_.-]?key"
)
# A key that names a property of a secret (its size, file, name, id), not the secret itself.
_NOT_SECRET_KEY = re.compile(
    r"^(?:max|min|num|total)|^n[_.-]"
    r"|(?:limit|count|size|length|timeout|expiry|expiration|type|kind|url|uri|endpoint|host|file"
    r"|path|dir|name|header|prefix|format|mode|method|provider|policy|budget|version|scope|usage"
    r"|used|remaining|enabled|required|ref)s?$"
    r"|[_.-](?:id|len|env|var|ms|sec|secs|seconds|at|in)$"
)
_PLACEHOLDER_VALUES = frozenset(
    "true false null none nil yes no on off str int bool bytes float string number boolean any "
    "optional required inherit redacted undefined masked hidden".split()
)
_CODE_VALUE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[A-Za-z_][\w.]*[(\[].*", re.S)
_BOOTSTRAP_TOKEN = re.compile(r"[a-z0-9]{6}\.[a-z0-9]{16}")  # kubeadm's `token: abcdef.0123456789abcdef`
_KEY = re.compile(r"[A-Za-z_-][A-Za-z0-9_.-]{0,63}")
_ASSIGN = re.compile(
    r"(?<![A-Za-z0-9_.])(?P<key>[A-Za-z_-][A-Za-z0-9_.-]{0,63})(?P<kq>[\"']?\]?)[ \t]*"
    r"(?:(?P<eq>:?=(?![=>]))|(?P<colon>:))[ \t]*"
    + _NOT_MARKER
    + r"(?![\[{(<$%`])"
    r"(?:\"(?P<dq>(?:[^\"\\\n]|\\.){1,1024})\"|'(?P<sq>[^'\n]{1,1024})'|(?P<uq>[^\s'\"&;,)\]}>`]{1,1024}))"
)
_HEADER_VALUE = re.compile(
    r"[ \t]*[\"']?(?:(?P<scheme>bearer|basic|token|digest|apikey)[ \t]+)?(?![$%{<\[])(?P<cred>[^\s\"',;]{6,})",
    re.I,
)
_COOKIE_VALUE = re.compile(r"[ \t]*[\"']?(?![$%{<\[])(?P<cred>[^\r\n\"']{3,})")
_HEADER_KINDS = {"bearer": "bearer_token", "basic": "basic_auth"}
_AWS_SECRET_VALUE = re.compile(r"[A-Za-z0-9/+]{40}")
_FLAG = re.compile(
    r"--(?<![\w-]--)(?P<key>[A-Za-z][\w-]{0,63})[ \t]+" + _NOT_MARKER + r"(?P<uq>[^\s'\"\-<$%`[{(][^\s'\"]{0,1023})"
)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")  # keeps offsets
_LINE_LEAD = re.compile(r"[\s#>*-]*(?:export\s+)?")

_EMAIL_DOMAIN = re.compile(
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+(?P<tld>[A-Za-z]{2,24})(?![A-Za-z0-9-])"
)
_EMAIL_LOCAL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+-")
_NOT_PERSONAL_LOCAL = frozenset({"git", "noreply", "no-reply"})
_PRIVATE_TLDS = frozenset({"internal", "local", "lan", "intranet"})
_DOCS_DOMAINS = ("example.com", "example.org", "example.net")
_DOCS_SUBDOMAINS = tuple("." + d for d in _DOCS_DOMAINS)
# Retina asset names (logo@2x.png) and versioned files look like addresses with a file-type TLD.
_FILE_TLDS = frozenset(
    "png jpg jpeg gif svg webp ico bmp css js mjs cjs ts tsx jsx json map md txt lock yaml yml "
    "toml py rs go rb java kt html htm xml csv log zip gz tar".split()
)

_RUN_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-"
_BLOB_RUN = re.compile(r"[A-Za-z0-9+/=_-]{%d,}" % BLOB_RUN_MIN)
_RUN_TABLE = bytes(0x61 if b in _RUN_CHARS else 0x20 for b in range(256))
_RUN_NEEDLE = b"a" * BLOB_RUN_MIN
TOKEN_RUN_MIN = 15  # the shortest prefixed token (`xoxb-` and ten characters)
_TOKEN_RUN_NEEDLE = b"a" * TOKEN_RUN_MIN


def _matches(pattern: re.Pattern[AnyStr], text: AnyStr) -> Iterable[re.Match[AnyStr]]:
    """`pattern.finditer(text)`, except that a miss, the usual case, costs one `search` (half as much)."""
    first = pattern.search(text)
    return () if first is None else pattern.finditer(text, first.start())


@lru_cache(maxsize=4096)
def _secret_key(key: str) -> bool:
    """True when the key names a secret; cached because the same few keys recur in every session."""
    k = key.lower().strip("-_")
    return bool(_SECRET_KEY.search(k)) and not _NOT_SECRET_KEY.search(k)


def names_secret(key: str) -> bool:
    """Whether an assignment under `key` (`password`, `API_TOKEN`, not `token_limit`) may hold a secret."""
    return _secret_key(key)


def _literal_value(key: str, value: str, quoted: bool) -> bool:
    """True when `value` is a literal worth hiding, not a reference, placeholder or piece of code."""
    v = value.strip()
    if len(v) < 3 or v.lower() in _PLACEHOLDER_VALUES or set(v) <= set("*x.X-_"):
        return False
    k = key.lower()
    if v.isdigit() and "pass" not in k and "pwd" not in k:
        return False
    if quoted:
        return not v.startswith(("${", "{{", "<", "%(", "{"))
    if v.startswith(("/", "~/", "./", "../")) or v.lower() in k:
        return False
    return not _CODE_VALUE.fullmatch(v) or bool(_BOOTSTRAP_TOKEN.fullmatch(v) and _mixed(v))


def _keyword_hits(text: str, lower: str) -> Iterator[int]:
    """Start of every key that ends in a secret word and is followed by `=`, `:=` or `:`."""
    rev = (lower if len(lower) == len(text) else text.translate(_ASCII_LOWER))[::-1]
    n = len(text)
    for pattern, op in ((_REV_EQ, "="), (_REV_COLON, ":")):
        if op in text:
            for m in _matches(pattern, rev):
                yield n - m.end()


def _header(kind_key: str, text: str, pos: int) -> Finding | None:
    if kind_key.endswith("cookie"):
        m = _COOKIE_VALUE.match(text, pos)
        return Finding("cookie", m.start("cred"), m.end("cred")) if m else None
    m = _HEADER_VALUE.match(text, pos)
    if m is None or not _mixed(m.group("cred")) and not m.group("scheme"):
        return None
    kind = _HEADER_KINDS.get((m.group("scheme") or "").lower(), "auth_header")
    return Finding(kind, m.start("cred"), m.end("cred"))


def _assignments(text: str, lower: str) -> Iterator[Finding]:
    for start in _keyword_hits(text, lower):
        key_match = _KEY.match(text, start)
        if key_match is None or not _secret_key(key_match.group()):
            continue
        m = _ASSIGN.match(text, start)
        if m is None:
            continue
        key = m.group("key")
        k = key.lower()
        if m.group("colon") and not m.group("kq"):
            if text[m.end("colon") : m.end("colon") + 1] not in (" ", "\t"):
                continue
            line_start = text.rfind("\n", 0, m.start()) + 1
            if not _LINE_LEAD.fullmatch(text, line_start, m.start()) and not k.endswith(("authorization", "cookie")):
                continue
        if k.endswith(("authorization", "cookie")):
            found = _header(k, text, m.end("eq") if m.group("eq") else m.end("colon"))
            if found:
                yield found
            continue
        vstart, vend, value, quoted = _value_span(m)
        if _literal_value(key, value, quoted):
            aws = "secret" in k and ("aws" in k or "access" in k) and _AWS_SECRET_VALUE.fullmatch(value)
            yield Finding("aws_secret_key" if aws else "secret_assignment", vstart, vend)


def _flags(text: str) -> Iterator[Finding]:
    for m in _matches(_FLAG, text):
        if _secret_key(m.group("key")) and _literal_value(m.group("key"), m.group("uq"), False):
            yield Finding("secret_assignment", m.start("uq"), m.end("uq"))


# In JSON-rendered text (a tool call's arguments) a line break is the two characters `\n`: an
# unquoted value ends there, or its redaction would eat the next line's first word.
_ESCAPED_BREAK = re.compile(r"\\[nrt]")


def _value_span(m: re.Match[str]) -> tuple[int, int, str, bool]:
    for name, quoted in (("dq", True), ("sq", True), ("uq", False)):
        value = m.group(name)
        if value is not None:
            if not quoted and "\\" in value:
                cut = _ESCAPED_BREAK.search(value)
                value = value[: cut.start()] if cut else value
            return m.start(name), m.start(name) + len(value), value, quoted
    raise AssertionError("pattern always captures a value")


def _emails(text: str) -> Iterator[Finding]:
    for m in _matches(_EMAIL_DOMAIN, text):
        if m.group("tld").lower() in _FILE_TLDS or m.group("tld").lower() in _PRIVATE_TLDS:
            continue  # `logo@2x.png`; `deploy@nas.local` is an ssh target: internal_host takes the host
        at = m.start()
        start = at
        while start > 0 and text[start - 1] in _EMAIL_LOCAL_CHARS:
            start -= 1
        local = text[start:at]
        if not local.strip(".") or local.lower() in _NOT_PERSONAL_LOCAL or _documentation_domain(m.group()[1:]):
            continue
        if start > 0 and (text[start - 1] == "@" or text[start - 1] in ":/" and _url_userinfo(text, start)):
            continue  # userinfo of a URL (url_password covers what is secret there), `L@D@L.T` code
        yield Finding("email", start, m.end())


def _documentation_domain(domain: str) -> bool:
    """example.com, .org, .net (RFC 2606) are what documentation writes; they reach no one.

    The reserved TLDs (`.example`, `.test`, `.invalid`) are not let through: fixtures use them to
    stand for a real person's address, and such a line must read as redacted.
    """
    d = domain.lower()
    return d in _DOCS_DOMAINS or d.endswith(_DOCS_SUBDOMAINS)


def _url_userinfo(text: str, start: int) -> bool:
    """True when `start` sits right after `scheme://` or `scheme://user:`, not in a path."""
    if text[max(0, start - 2) : start] == "//":
        return True
    scheme = text.rfind("://", max(0, start - 256), start)
    return scheme != -1 and not any(c in "/?# \t\n\"'<>" for c in text[scheme + 3 : start])


def _tokens(text: str) -> Iterator[Finding]:
    """Provider key shapes; each family runs only if a cheap one-character test lets it."""
    if "-" in text:
        if "-----BEGIN " in text:
            for m in _matches(_GCP, text):
                yield Finding("gcp_service_account_key", m.start(1), m.end(1))
            for m in _matches(_PEM, text):
                yield Finding("pem_private_key", m.start(), m.end())
        for m in _matches(_CURL_USER, text):
            yield Finding("basic_auth", m.start("password"), m.end("password"))
    if "I" in text:
        for m in _matches(_AWS_GOOGLE, text):
            if m.group("aws"):
                start, kind = m.start() - 2, "aws_access_key"
            else:
                start, kind = m.start() - 1, "google_api_key"
            if start > 0 and (text[start - 1].isalnum() or kind == "google_api_key" and text[start - 1] in "_-"):
                continue
            yield Finding(kind, start, m.end())
            if kind == "aws_access_key":
                yield from _aws_pair_secret(text, m.end())
    if "J" in text:
        for m in _matches(_JWT, text):
            yield Finding("jwt", m.start() - 2, m.end())
    if ":" in text:
        for m in _matches(_URL, text):
            if m.group("slack"):
                yield Finding("slack_webhook", m.start("slack"), m.end("slack"))
            elif m.group("user"):
                if _mixed(m.group("user")):  # a token as user name (Sentry DSN, `https://<pat>@host`)
                    yield Finding("url_token", m.start("user"), m.end("user"))
            else:
                yield Finding("url_password", m.start("password"), m.end("password"))
    if "earer" in text:
        for m in _matches(_BEARER, text):
            if _mixed(m.group("body")):
                yield Finding("bearer_token", m.start("body"), m.end("body"))


def _aws_pair_secret(text: str, key_end: int) -> Iterator[Finding]:
    """A secret key with no name before it: 40 mixed-case characters after the access key."""
    nl = text.find("\n", key_end, key_end + AWS_PAIR_WINDOW)
    limit = key_end + AWS_PAIR_WINDOW if nl == -1 else text.find("\n", nl + 1, key_end + AWS_PAIR_WINDOW)
    m = _AWS_BARE_SECRET.search(text, key_end, limit if limit != -1 else key_end + AWS_PAIR_WINDOW)
    # A git SHA is lower-case hex; a secret key mixes cases.
    if m and not m.group().islower() and not m.group().isupper():
        yield Finding("aws_secret_key", m.start(), m.end())


def _prefixed(text: str, long_run: bool) -> Iterator[Finding]:
    """Provider tokens with a fixed prefix, the few shapes anchored on a literal inside them, hosts."""
    for sep, scan in _SEPARATOR_SCANS:
        if not long_run and sep != ".":
            continue  # the "." scan also finds private host names, which are short
        end = 0
        for m in _matches(scan, text):
            if m.start() < end:
                continue  # inside the token just found: its body is not looked at again
            found = _at_separator(text, sep, m.start())
            if found:
                end = found.end
                yield found
    if "machine" in text:
        for m in _matches(_NETRC, text):
            yield Finding("netrc_password", m.start("password"), m.end("password"))
    if not long_run:
        return
    for pattern, kind in _UNSEPARATED:
        for m in _matches(pattern, text):
            start = m.start() - 3 if kind == "atlassian_token" else m.start()
            if kind != "atlassian_token" or start == 0 or not text[start - 1].isalnum():
                yield Finding(kind, start, m.end())
    if ":AA" in text:
        for m in _matches(_TELEGRAM, text):
            start = m.start()
            while start > 0 and text[start - 1].isdigit():
                start -= 1
            if 8 <= m.start() - start <= 10 and (start == 0 or not (text[start - 1].isalnum() or text[start - 1] == "_")):
                yield Finding("telegram_bot_token", start, m.end())


def _at_separator(text: str, sep: str, pos: int) -> Finding | None:
    """The token whose prefix ends at the separator `text[pos]`, if its body has the right shape."""
    for prefix in _BY_SEPARATOR[sep]:
        start = pos + 1 - len(prefix)
        if start >= 0 and text.startswith(prefix, start):
            before = text[start - 1] if start else " "
            if before.isalnum() or before == "_" or before == sep == "." or before == "-" and prefix in _NO_DASH_BEFORE:
                return None
            kind, body = _PREFIXES[prefix]
            m = body.match(text, pos + 1)
            if m is None:
                return None
            if kind == "openai_key":
                kind = "anthropic_key" if m.group("anthropic") else "openai_key"
                if not _mixed(m.group(m.lastgroup or "openai")):
                    return None
            elif kind == "huggingface_token" and not _mixed(m.group()):
                return None
            return Finding(kind, start, m.end())
    if sep == "-":
        m = _MAILCHIMP.match(text, pos - 32) if pos >= 32 else None
        if m and (pos == 32 or not text[pos - 33].isalnum()):
            return Finding("mailchimp_key", m.start(), m.end())
        return None
    if sep == "." and text[pos + 1 : pos + 2] in ("i", "l", "h", "c"):
        host = _internal_host(text, pos)
        if host:
            return host
    start, limit = pos, max(0, pos - 27)  # the user id part is 24 to 26 characters
    while start > limit and (text[start - 1].isalnum() or text[start - 1] in "_-"):
        start -= 1
    m = _DISCORD.match(text, start)
    if m and _mixed(m.group()) and not (start and (text[start - 1].isalnum() or text[start - 1] in "_-.")):
        return Finding("discord_bot_token", start, m.end())
    return None


def _auth_tokens(lower: str) -> Iterator[Finding]:
    """A 32-hex value right after the words "auth token" (Twilio's shape, which has no prefix)."""
    for m in _matches(_AUTH_TOKEN, lower):
        if _mixed(m.group("hex")):
            yield Finding("auth_token", m.start("hex"), m.end("hex"))


def _internal_host(text: str, dot: int) -> Finding | None:
    """The host name ending in the private suffix that starts at `text[dot]`."""
    m = _PRIVATE_SUFFIX.match(text, dot)
    if m is None:
        return None
    start, limit = dot, max(0, dot - HOST_MAX)
    while start > limit and text[start - 1] in _HOST_CHARS:
        start -= 1
    host = text[start : m.end()]
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        return None  # part of an identifier (`my_obj.local`) or a capitalised namespace
    if host[:1] in ".-" or dot == start or host in _WELL_KNOWN_HOSTS:
        return None  # `.env.local`, `~/.local`, Docker's own names
    if start > 0 and text[start - 1] == "/" and not text[max(0, start - 2) : start] == "//":
        return None  # a file in a path (`./env.local`); a host follows `//`, `@` or a space
    if not host.endswith(".arpa") and ".corp." not in host + "." and _reads_as_code(text, start, m.end(), host):
        return None  # `version.local is None`, `from dask.local import`, `x = value.local`
    return Finding("internal_host", start, m.end())


def _reads_as_code(text: str, start: int, end: int, host: str) -> bool:
    """`x.local` is also attribute access: a host unless the text around it reads as code."""
    if any(c == "-" or c.isdigit() for c in host) or text[max(0, start - 2) : start] == "//":
        return False  # no identifier has a hyphen; `//` opens a URL's host
    before = text[start - 1 : start]
    if before == "@" or text[end : end + 1] == ":" and text[end + 1 : end + 2].isdigit():
        return False
    if before == "=" or text[max(0, start - 2) : start] == "= ":
        key = _KEY_BEFORE_EQ.search(text, max(0, start - 64), start)  # `DB_HOST=` vs `local_only=`
        return not (key and key.group(1).lower().endswith(_HOST_KEYS))
    if host.split(".", 1)[0] in _CODE_RECEIVERS or _CODE_AFTER.match(text, end):
        return True
    line_start = text.rfind("\n", 0, start) + 1
    return _CODE_LINE.match(text, line_start) is not None


def _luhn(digits: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = ord(c) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _card_issuer(digits: str) -> bool:
    """The length and first digits of a card network (Visa, Mastercard, Amex, Discover, JCB, Diners)."""
    n, head = len(digits), digits[:2]
    if n == 16:
        return digits[0] in "456" or head == "35" or 2221 <= int(digits[:4]) <= 2720
    if n == 15:
        return head in ("34", "37")
    if n == 14:
        return head in ("30", "36", "38")
    return n in (13, 19) and digits[0] == "4"


def _iban_valid(compact: str) -> bool:
    """ISO 13616 check: move the first four characters to the end, read letters as 10..35, mod 97."""
    rearranged = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def _number_boundary(text: str, start: int, end: int) -> bool:
    """No letter, digit or number punctuation glued to either end (not a piece of a longer id)."""
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_.-+"):
        return False
    if end < len(text) and (text[end].isalnum() or text[end] == "_"):
        return False
    return not (end + 1 < len(text) and text[end] in ".-:" and text[end + 1].isdigit())


def _numbers(text: str, raw: bytes) -> Iterator[Finding]:
    """Card numbers (Luhn), IBANs (mod 97) and phone numbers; `raw` is `text` with one byte a character."""
    shape = raw.translate(_NUMBER_TABLE)
    yield from _phones(text, shape, _PLUS_SHAPE, _PHONE_PLUS)
    if b"0000" not in shape:
        return  # every shape below holds four digits in a row; `+33 1 23 45 67 89` may not
    yield from _phones(text, shape, _PAREN_SHAPE, _PHONE_PAREN)
    for m in _matches(_CARD_SHAPE, shape):
        start, end = m.span()
        digits = text[start:end].replace(" ", "").replace("-", "")
        if (
            _number_boundary(text, start, end) and _card_issuer(digits) and _luhn(digits)
            and digits not in _TEST_CARDS and len(set(digits)) > 2
            and (len(digits) < end - start or _CARD_WORD.search(text, max(0, start - CARD_WORD_WINDOW), start))
        ):
            yield Finding("card_number", start, end)
    for m in _matches(_IBAN_START, shape):
        found = _iban_at(text, m.start())
        if found:
            yield found
    for m in _matches(_US_PHONE_SHAPE, shape):
        start, end = m.span()
        if text[start] in "23456789" and text[start + 4] in "23456789" and _number_boundary(text, start, end):
            yield Finding("phone_number", start, end)


def _phones(text: str, shape: bytes, seeds: re.Pattern[bytes], pattern: re.Pattern[str]) -> Iterator[Finding]:
    for seed in _matches(seeds, shape):
        m = pattern.match(text, seed.start())
        if m and PHONE_DIGITS[0] <= sum(c.isdigit() for c in m.group()) <= PHONE_DIGITS[1]:
            if m.group().count(".") != 1 and not _DATE_IN_PHONE.search(m.group()):  # `+1.4142`, `+1980-02-29`
                yield Finding("phone_number", m.start(), m.end())


def _iban_at(text: str, start: int) -> Finding | None:
    """The IBAN starting at `start`, walked to its country's length (spaces only between groups of 4)."""
    length = _IBAN_LENGTHS.get(text[start : start + 2])
    if length is None or start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        return None
    chars, pos, n = [], start, len(text)
    while len(chars) < length and pos < n:
        c = text[pos]
        if c.isascii() and (c.isdigit() or c.isupper()):
            chars.append(c)
        elif not (c == " " and len(chars) % 4 == 0 and pos + 1 < n and text[pos + 1] != " "):
            break
        pos += 1
    if len(chars) != length or pos < n and (text[pos].isalnum() or text[pos] == "_"):
        return None
    compact = "".join(chars)
    return Finding("iban", start, pos) if _iban_valid(compact) and compact not in _DOCUMENTED_IBANS else None


def find_secrets(text: str) -> list[Finding]:
    """Every sensitive span in `text` (secrets, private addresses, e-mails), blobs excluded."""
    raw = text.encode("ascii", "replace")
    return _find_secrets(text, raw, raw.translate(_RUN_TABLE))


def _find_secrets(text: str, raw: bytes, runs: bytes) -> list[Finding]:
    """`raw` is `text` with one byte a character (so offsets carry over), `runs` marks token characters."""
    found = list(_tokens(text))
    # Provider tokens are long unbroken runs; prose has none, and then their scans are skipped.
    long_run = _TOKEN_RUN_NEEDLE in runs
    found.extend(_prefixed(text, long_run))
    found.extend(_numbers(text, raw))
    lower = text.lower()
    if long_run and "auth" in lower:
        found.extend(_auth_tokens(lower if len(lower) == len(text) else text.translate(_ASCII_LOWER)))
    if "=" in text or ":" in text:
        found.extend(_assignments(text, lower))
    if "--" in text:
        found.extend(_flags(text))
    if "@" in text:
        found.extend(_emails(text))
    if "1" in text:
        found.extend(Finding("private_ipv4", m.start(), m.end()) for m in _matches(_PRIVATE_V4, text))
    if ":" in text:
        for seed in _matches(_V6_SEED, text):
            m = _PRIVATE_V6.match(text, seed.start() - 4)
            if m:
                found.append(Finding("private_ipv6", m.start(), m.end()))
    if found and ("[REDACTED:" in text or "[BLOB " in text):
        found = _outside_markers(text, found)
    if found and ("EXAMPLE" in text or "wJalrXUt" in text or "AKIAIOSF" in text):
        found = [f for f in found if not _documented(text[f.start : f.end])]
    return found


def _documented(value: str) -> bool:
    """AWS's documented example key or secret, also at a sentence's end ("…EXAMPLEKEY. The") or cut
    short where memoir shortened a long line ("wJalrXUtnFEMI/K7MDENG/bPx…")."""
    value = value.rstrip(".,;:!?)'\"`")
    if value in _DOCUMENTED:
        return True
    cut = value.rstrip("…")
    return cut != value and len(cut) >= 8 and any(d.startswith(cut) for d in _DOCUMENTED)


def _outside_markers(text: str, found: list[Finding]) -> list[Finding]:
    """Drop findings that lie inside an existing marker: markers are never secrets."""
    markers = [(m.start(), m.end()) for m in MARKER_RE.finditer(text)]
    return [f for f in found if not any(s <= f.start and f.end <= e for s, e in markers)]


def contains_sensitive(text: str) -> bool:
    """True if anything `sanitize` would redact as sensitive is still in `text`."""
    return bool(find_secrets(text))


def _blob_runs(text: str, runs: bytes) -> Iterator[Finding]:
    if _RUN_NEEDLE not in runs:
        return  # no run long enough anywhere in the text (`runs` is `text` through _RUN_TABLE)
    for line_start, line_end in _long_lines(text, BLOB_RUN_MIN - 1):
        line = text[line_start:line_end]
        if line.isascii() and _RUN_NEEDLE not in line.encode("ascii").translate(_RUN_TABLE):
            continue  # bytes.translate + find is ~20x faster than the regex on a line without a run
        for m in _BLOB_RUN.finditer(text, line_start, line_end):
            run = m.group()
            if run.count("/") * 16 > len(run) or len(set(run)) < BLOB_RUN_MIN_DISTINCT:
                continue  # a deep path, or a separator line
            yield Finding("blob", m.start(), m.end())


def _long_lines(text: str, cap: int) -> Iterator[tuple[int, int]]:
    """(start, end) of every line longer than `cap`, jumping a window at a time."""
    n, pos = len(text), 0
    while n - pos > cap:
        nl = text.rfind("\n", pos, pos + cap + 1)
        if nl != -1:
            pos = nl + 1
            continue
        end = text.find("\n", pos)
        end = n if end == -1 else end
        yield pos, end
        pos = end + 1


def _line_blobs(text: str, cap: int, secrets: list[Finding]) -> Iterator[Finding]:
    """The middle of each over-long line, widened so no secret or run is cut in two."""
    head, tail = min(BLOB_HEAD, cap // 4), min(BLOB_TAIL, cap // 8)
    for line_start, line_end in _long_lines(text, cap):
        start, end = line_start + head, line_end - tail
        for f in secrets:
            if f.start < start < f.end:
                start = f.start
            if f.start < end < f.end:
                end = f.end
        yield Finding("blob", start, end)


def _merge(found: list[Finding]) -> list[Finding]:
    """Union overlapping findings; the merged span keeps the highest-priority kind."""
    merged: list[Finding] = []
    for f in sorted(found, key=lambda f: (f.start, -f.end)):
        if merged and f.start < merged[-1].end:
            last = merged[-1]
            kind = min(last.kind, f.kind, key=_RANK.__getitem__)
            merged[-1] = Finding(kind, last.start, max(last.end, f.end))
        else:
            merged.append(f)
    return merged


def _marker(kind: str, original: str) -> str:
    if kind == "blob":
        sha = hashlib.sha256(original.encode("utf-8", "surrogatepass")).hexdigest()[:SHA_CHARS]
        return f"[BLOB len={len(original)} sha={sha}]"
    return f"[REDACTED:{kind}]"


def _once(text: str, blob_cap: int, counts: Counter[str]) -> tuple[str, bool]:
    raw = text.encode("ascii", "replace")  # non-ASCII becomes "?": one byte a character
    runs = raw.translate(_RUN_TABLE)
    found = _find_secrets(text, raw, runs)
    if len(text) >= BLOB_RUN_MIN:
        found.extend(_blob_runs(text, runs))
    cut = False
    if len(text) > blob_cap:
        lines = list(_line_blobs(text, blob_cap, found))
        cut = bool(lines)
        found.extend(lines)
    if not found:
        return text, False
    out: list[str] = []
    pos = 0
    for f in _merge(found):
        out.append(text[pos : f.start])
        out.append(_marker(f.kind, text[f.start : f.end]))
        counts[f.kind] += 1
        pos = f.end
    out.append(text[pos:])
    return "".join(out), cut


def sanitize_with_report(text: str, blob_cap: int = 4000) -> Sanitized:
    """Sanitize `text` and count the markers written, by kind.

    Args:
        text: anything about to be stored, logged, queued or searched.
        blob_cap: a line longer than this many characters keeps only a head and tail.
    """
    counts: Counter[str] = Counter()
    for _ in range(MAX_PASSES):
        text, cut = _once(text, blob_cap, counts)
        if not cut:
            break
    return Sanitized(text, counts)


def sanitize(text: str, blob_cap: int = 4000) -> str:
    """`text` with every secret, private address, e-mail and pasted blob replaced by a marker."""
    return sanitize_with_report(text, blob_cap).text
