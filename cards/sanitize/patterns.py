"""The shapes the sanitizer looks for: the provider-prefix table, the regexes and their tables.

Patterns only, no decisions: `detect` runs them and `validators` judges what they found. Every
pattern opens with a literal where it can (see the note above `AWS_GOOGLE`): the hot path depends on it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import AnyStr


BLOB_RUN_MIN = 200  # longer than any hash or key we keep (sha512 hex is 128), shorter than any image
BLOB_RUN_MIN_DISTINCT = 10  # "=====" rules and "-----" separators are not blobs
BLOB_HEAD = 120  # enough of a long line to see what it was (a URL, a JSON key, a JS banner)
BLOB_TAIL = 40
SHA_CHARS = 8
MAX_PASSES = 3  # a cut long line can expose a new boundary; one more pass always settles it

MARKER_RE = re.compile(r"\[REDACTED:[a-z0-9_]+(?::\d+)?\]|\[BLOB len=\d+ sha=[0-9a-f]{%d}\]" % SHA_CHARS)
_NOT_MARKER = r"(?!\[REDACTED:|\[BLOB )"

# Every detector starts with a literal (lookbehinds come after it) because CPython's `re` only
# skips ahead fast over a literal prefix; a pattern opening with a class or a lookbehind tries
# every position and runs at a tenth of the speed. `back` is how far the secret starts before it.
_TOKEN_END = r"(?![A-Za-z0-9_])"
AWS_GOOGLE = re.compile(
    r"I(?:(?P<aws>A)(?<=A[KS]IA)[A-Z0-9]{16}(?![A-Za-z0-9])|(?P<google>za)(?<=AIza)[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-]))"
)
JWT = re.compile(r"J(?<=eyJ)(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{7,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*")
PEM = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----"
    r"(?:.*?-----END \1-----|[A-Za-z0-9+/=\s\\:,-]*)",
    re.S,
)
GCP = re.compile(r'"private_key"\s*:\s*"(-----BEGIN[^"]*)"')
URL_CREDENTIAL = re.compile(
    r"://(?:(?<=https://)hooks\.slack\.com/(?:services|workflows|triggers)/(?P<slack>[A-Za-z0-9_/-]+)"
    r"|(?P<user>[A-Za-z0-9_-]{20,})@(?=[^\s@/?#\"'<>])"
    r"|[^\s:/?#@\"'<>\[\]]+:" + _NOT_MARKER + r"(?!\$)(?P<password>[^\s/?#\"'<>]+)@(?=[^\s@/?#\"'<>]))"
)
BEARER = re.compile(r"earer(?<=[Bb]earer)\s+" + _NOT_MARKER + r"(?P<body>[A-Za-z0-9._~+/-]{16,}=*)")
CURL_USER = re.compile(r"-u(?<![^\s\"']-u)[ \t]+[\"']?[^\s:\"']+:" + _NOT_MARKER + r"(?![$%{<])(?P<password>[^\s\"']{3,})")

_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
PRIVATE_V4 = re.compile(
    r"1(?<![\w.]1)(?:"
    rf"0\.{_OCTET}\.{_OCTET}\.{_OCTET}"
    rf"|72\.(?:1[6-9]|2\d|3[01])\.{_OCTET}\.{_OCTET}"
    rf"|92\.168\.{_OCTET}\.{_OCTET}"
    rf"|69\.254\.{_OCTET}\.{_OCTET}"
    rf"|00\.(?:6[4-9]|[7-9]\d|1[01]\d|12[0-7])\.{_OCTET}\.{_OCTET}"
    r")(?!\.?\d)(?![A-Za-z_])"
)
V6_SEED = re.compile(r":(?<=[fF][cCdD][0-9a-fA-F]{2}:|[fF][eE][89abAB][0-9a-fA-F]:)")
PRIVATE_V6 = re.compile(
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
PREFIXES: dict[str, tuple[str, re.Pattern[str]]] = {
    prefix: (kind, re.compile(body))
    for prefixes, kind, body in _SEPARATED
    for prefix in prefixes.split()
}
NO_DASH_BEFORE = frozenset({"sk-", "xapp-"} | {p for p in PREFIXES if p.startswith("xox")})  # `task-sk-...`
# Shapes that share a separator scan without a prefix of their own: a Mailchimp key (32 hex, then
# "-us" and the data centre), a Discord bot token (base64 user id, 6, 27+ characters between dots)
# and the private host suffixes.
_SEPARATOR_EXTRAS = {
    "-": (r"(?=us\d)(?<=[0-9a-f]{32}-)",),
    ".": (r"(?=internal|local|lan|intranet|home\.arpa|corp\.|[\w-]{6}\.[\w-]{27})",),
}


def _prefix_lookbehind(prefix: str) -> str:
    """`prefix` just before the separator, and no word character (or dash, for some) before it."""
    glued = r"[\w-]" if prefix in NO_DASH_BEFORE else r"\w"
    return "(?<=%s)(?<!%s%s)" % (re.escape(prefix), glued, re.escape(prefix))


def _separator_scan(sep: str) -> re.Pattern[str]:
    """The pattern that stops at `sep` only where a prefix ending in it (or an extra shape) may end."""
    by_before: dict[str, list[str]] = {}
    for prefix in PREFIXES:
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


SEPARATOR_SCANS = tuple((sep, _separator_scan(sep)) for sep in "-_.")
BY_SEPARATOR = {sep: sorted((p for p in PREFIXES if p.endswith(sep)), key=len, reverse=True) for sep in "-_."}
# Prefixes with no separator get a scan each.
UNSEPARATED = tuple(
    (re.compile(pattern + _TOKEN_TAIL), kind)
    for pattern, kind in (
        (r"SK(?<!\wSK)[0-9a-fA-F]{32}", "twilio_key"),
        (r"dapi(?<!\wdapi)[a-f0-9]{32}(?:-\d)?", "databricks_token"),
        (r"EAAA(?<!\wEAAA)[\w-]{60,}", "square_token"),
        (r"TT3(?<=AT[AC]TT3)[\w=-]{150,}", "atlassian_token"),
    )
)
MAILCHIMP = re.compile(r"[0-9a-f]{32}-us\d{1,2}(?!\w)")
DISCORD = re.compile(r"[MNO][\w-]{23,25}\.[\w-]{6}\.[\w-]{27,38}(?![\w.-])")
TELEGRAM = re.compile(r":AA(?<=\d:AA)[\w-]{33}(?![\w-])")  # 8 to 10 digits (the bot id) before it
AUTH_TOKEN = re.compile(r"auth[ _-]?token[^\n0-9a-f]{0,16}?(?<![0-9a-z])(?P<hex>[0-9a-f]{32})(?![0-9a-z])")
NETRC = re.compile(
    r"machine(?<!\wmachine)\s+\S+(?:\s+(?:login|account|port|protocol)\s+\S+){0,3}?\s+password\s+"
    + _NOT_MARKER + r"(?![$<{%])(?P<password>\S{3,})"
)
AWS_BARE_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
AWS_PAIR_WINDOW = 300  # how far after an access key its secret is looked for (same or next line)
# Documentation values: the AWS docs' example pair names no account; a card would lose its meaning.
DOCUMENTED = frozenset({"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"})
DOCUMENTED_IBANS = frozenset({"GB29NWBK60161331926819", "DE89370400440532013000", "GB82WEST12345698765432"})

# Host names that only resolve inside one organisation. Fixed names that every installation shares
# (Docker's and GCP's, Kubernetes' API service) and documentation names survive.
PRIVATE_SUFFIX = re.compile(
    r"\.(?:internal|local|lan|intranet|home\.arpa|corp(?>(?:\.[a-z0-9-]{1,63}){1,6})(?<=[a-z]{2}))"
    r"(?![\w-]|\.\w|\()"
)  # atomic and bounded: a chain of `.corp.` labels must not be re-tried label by label
HOST_MAX = 253  # the longest DNS name: how far back a host name is looked for
HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-.")
WELL_KNOWN_HOSTS = frozenset(
    "host.docker.internal gateway.docker.internal metadata.google.internal example.local "
    "example.internal example.lan kubernetes.default.svc.cluster.local".split()
)
CODE_RECEIVERS = frozenset(
    "self this cls super threading _thread os sys ctx options opts args kwargs config cfg settings "
    "version value obj np pd torch".split()
)
CODE_AFTER = re.compile(r"\s+(?:is\s+(?:not\s+)?(?:None|True|False)\b|import\b|[=!]=)|[\[;)}]|:(?!\d)")
CODE_LINE = re.compile(r"\s*(?:from|import|package|using|assert|return|if|elif|while)\s")
HOST_KEYS = ("host", "hostname", "server", "addr", "address", "url", "uri", "endpoint", "domain")
KEY_BEFORE_EQ = re.compile(r"([A-Za-z_][\w.-]*)[\"']? ?= ?$")

# Numbers (cards, IBANs, phones) are looked for on a byte copy where every digit is "0", every
# capital "A" and every other letter "a": the shapes then open with literals ("0000", "AA00",
# "000-000-0000", "+0", "(000)") and the search runs at literal speed; the original text decides.
# Offsets match: one byte per character.
NUMBER_TABLE = bytes(
    0x30 if 0x30 <= b <= 0x39 else 0x41 if 0x41 <= b <= 0x5A else 0x61 if 0x61 <= b <= 0x7A
    else b if b in b" -+()" else 0x2E
    for b in range(256)
)
CARD_SHAPE = re.compile(rb"0000(?:0{9,15}|(?P<s>[ -])0000(?P=s)0000(?P=s)0000|(?P<t>[ -])000000(?P=t)00000?)")
IBAN_START = re.compile(rb"AA00 ?[A0]{4}")
US_PHONE_SHAPE = re.compile(rb"000-000-0000")
PLUS_SHAPE = re.compile(rb"\+(?<![Aa0]\+)0[0 .()-]{8}")  # not `i+1`: 9 digits at least
PAREN_SHAPE = re.compile(rb"\(000\)")
# Atomic group: a digit run that fails the end test must not be re-split thousands of ways.
PHONE_PLUS = re.compile(r"\+(?<![\w+]\+)[1-9]\d{0,2}(?>(?:[ .-]?(?:\(\d{1,4}\)|\d{1,4})){2,6})(?!\w|[.-]\d)")
PHONE_PAREN = re.compile(r"\((?<![\w(]\()[2-9]\d{2}\) ?[2-9]\d{2}[-. ]\d{4}(?!\w|[.-]\d)")
DATE_IN_PHONE = re.compile(r"\d{4}-\d\d-\d\d")
PHONE_DIGITS = (9, 15)  # E.164 allows 15; fewer than 9 is a version, a range or a small sum
# Lengths by country (ISO 13616 registry, the countries most seen); an unknown country is not an IBAN.
IBAN_LENGTHS = {
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
CARD_WORD = re.compile(r"(?i)card|\bcc|\bpan\b|visa|master|amex|discover|payment|credit|debit")
CARD_WORD_WINDOW = 40
# Test numbers published by card networks and payment providers: they pay nothing.
TEST_CARDS = frozenset(
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
    "provider_token",
    "command_password",
    "keyword_secret",
    "encoded_secret",
    "webhook_token",
    "entropy_token",
    "card_number",
    "iban",
    "phone_number",
    "email",
    "internal_host",
    "private_ipv4",
    "private_ipv6",
    "blob",
)
RANK = {kind: i for i, kind in enumerate(KINDS)}

# Secret key names are found from the operator backwards, on the reversed lower-cased text, so
# the pattern can open with the literal "=" or ":" (see above): `API_KEY = ` reads "= yek_ipa".
KEY_ENDINGS = (
    "key", "token", "secret", "pass", "passwd", "password", "pwd", "auth", "credential", "cookie",
    "passphrase", "authorization",
)
_REV_WORDS = "|".join(w[::-1] for w in sorted(KEY_ENDINGS, key=len, reverse=True))
_REV_KEY = r"(?:" + _REV_WORDS + r")[a-z0-9_.-]{0,48}"
REV_EQ = re.compile(r"=(?<![=!<>]=)(?![=!<>]):?[ \t]*[\"'\]]{0,2}s?" + _REV_KEY)
REV_COLON = re.compile(r":[ \t]*[\"'\]]{0,2}s?" + _REV_KEY)
SECRET_KEY = re.compile(
    r"passw|passphrase|(?:^|[_.-])pass$|[_.-]pwd$|secret|token(?!i[sz])|credential"
    r"|auth(?!or(?!i[sz]))|cookie"
    r"|(?:api|access|secret|private|signing|encryption|master|account|storage|sharedaccess"
    r"|admin|app|client|license|service|webhook)[_.-]?key"
)
# A key that names a property of a secret (its size, file, name, id), not the secret itself.
NOT_SECRET_KEY = re.compile(
    r"^(?:max|min|num|total)|^n[_.-]"
    r"|(?:limit|count|size|length|timeout|expiry|expiration|type|kind|url|uri|endpoint|host|file"
    r"|path|dir|name|header|prefix|format|mode|method|provider|policy|budget|version|scope|usage"
    r"|used|remaining|enabled|required|ref)s?$"
    r"|[_.-](?:id|len|env|var|ms|sec|secs|seconds|at|in)$"
    r"|^(?:no|skip|disable|enable|use|with|without)[_.-]|warning$|(?:database|db|mechanism|source)$"
)
PLACEHOLDER_VALUES = frozenset(
    "true false null none nil yes no on off str int bool bytes float string number boolean any "
    "optional required inherit redacted undefined masked hidden".split()
)
CODE_VALUE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[A-Za-z_][\w.]*[(\[].*", re.S)
BOOTSTRAP_TOKEN = re.compile(r"[a-z0-9]{6}\.[a-z0-9]{16}")  # kubeadm's `token: abcdef.0123456789abcdef`
KEY_NAME = re.compile(r"[A-Za-z_-][A-Za-z0-9_.-]{0,63}")
ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.])(?P<key>[A-Za-z_-][A-Za-z0-9_.-]{0,63})(?P<kq>[\"']?\]?)[ \t]*"
    r"(?:(?P<eq>:?=(?![=>]))|(?P<colon>:))[ \t]*"
    + _NOT_MARKER
    + r"(?![\[{(<$%`])"
    r"(?:\"(?P<dq>(?:[^\"\\\n]|\\.){1,1024})\"|'(?P<sq>[^'\n]{1,1024})'|(?P<uq>[^\s'\"&;,)\]}>`]{1,1024}))"
)
HEADER_VALUE = re.compile(
    r"[ \t]*[\"']?(?:(?P<scheme>bearer|basic|token|digest|apikey)[ \t]+)?(?![$%{<\[])(?P<cred>[^\s\"',;]{6,})",
    re.I,
)
COOKIE_VALUE = re.compile(r"[ \t]*[\"']?(?![$%{<\[])(?P<cred>[^\r\n\"']{3,})")
HEADER_KINDS = {"bearer": "bearer_token", "basic": "basic_auth"}
AWS_SECRET_VALUE = re.compile(r"[A-Za-z0-9/+]{40}")
FLAG_VALUE = re.compile(
    r"--(?<![\w-]--)(?P<key>[A-Za-z][\w-]{0,63})[ \t]+" + _NOT_MARKER + r"(?P<uq>[^\s'\"\-<$%`[{(][^\s'\"]{0,1023})"
)
ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")  # keeps offsets
LINE_LEAD = re.compile(r"[\s#>*+-]*(?:export\s+)?")  # `+` and `-`: a diff's added and removed lines

EMAIL_DOMAIN = re.compile(
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+(?P<tld>[A-Za-z]{2,24})(?![A-Za-z0-9-])"
)
EMAIL_LOCAL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+-")
NOT_PERSONAL_LOCAL = frozenset({"git", "noreply", "no-reply"})
PRIVATE_TLDS = frozenset({"internal", "local", "lan", "intranet"})
DOCS_DOMAINS = ("example.com", "example.org", "example.net")
DOCS_SUBDOMAINS = tuple("." + d for d in DOCS_DOMAINS)
# Retina asset names (logo@2x.png) and versioned files look like addresses with a file-type TLD.
FILE_TLDS = frozenset(
    "png jpg jpeg gif svg webp ico bmp css js mjs cjs ts tsx jsx json map md txt lock yaml yml "
    "toml py rs go rb java kt html htm xml csv log zip gz tar".split()
)

_RUN_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-"
BLOB_RUN = re.compile(r"[A-Za-z0-9+/=_-]{%d,}" % BLOB_RUN_MIN)
RUN_TABLE = bytes(0x61 if b in _RUN_CHARS else 0x20 for b in range(256))
RUN_NEEDLE = b"a" * BLOB_RUN_MIN
TOKEN_RUN_MIN = 15  # the shortest prefixed token (`xoxb-` and ten characters)
TOKEN_RUN_NEEDLE = b"a" * TOKEN_RUN_MIN


def matches(pattern: re.Pattern[AnyStr], text: AnyStr) -> Iterable[re.Match[AnyStr]]:
    """`pattern.finditer(text)`, except that a miss, the usual case, costs one `search` (half as much)."""
    first = pattern.search(text)
    return () if first is None else pattern.finditer(text, first.start())


def lines_with(text: str, anchors: tuple[str, ...], pattern: re.Pattern[str] | None = None) -> list[tuple[int, int]]:
    """(start, end) of each line holding one of `anchors` (or a match of `pattern`), in order, each line once."""
    lines: set[tuple[int, int]] = set()
    for m in matches(pattern, text) if pattern else ():
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        lines.add((start, len(text) if end == -1 else end))
    for anchor in anchors:
        pos = text.find(anchor)
        while pos != -1:
            start = text.rfind("\n", 0, pos) + 1
            end = text.find("\n", pos)
            end = len(text) if end == -1 else end
            lines.add((start, end))
            pos = text.find(anchor, end)
    return sorted(lines)


# In JSON-rendered text (a tool call's arguments) a line break is the two characters `\n`: an
# unquoted value ends there, or its redaction would eat the next line's first word.
ESCAPED_BREAK = re.compile(r"\\[nrt]")
