"""Scrub secrets, private addresses, e-mail addresses and pasted blobs before anything is stored.

Named shapes only, never a "looks random" heuristic on its own: git SHAs, content hashes, UUIDs,
asset names and paths are legitimate things for a card to mention, and corrupting a true fact is
a worse failure than missing an exotic token shape.

Rules (each decision pinned by tests/test_sanitize.py):
- A secret becomes `[REDACTED:<kind>]`; only the secret part is replaced (`password=` keeps its
  key, `scheme://user:[REDACTED:url_password]@host` keeps user and host).
- Loopback (127/8, ::1) and 0.0.0.0 survive: they name no network. RFC 1918, CGNAT 100.64/10,
  link-local 169.254/16, ULA fc00::/7 and link-local fe80::/10 are redacted. Only a full dotted
  quad is an address: "version 10.0.0" and "v10.0.0.1" survive, a bare "10.0.0.1" does not.
- `local@domain.tld` is an e-mail; `@decorator`, `pkg@1.2.3`, `logo@2x.png`, `user@buildbox`
  (no TLD, as in ssh commands), `git@github.com` and `noreply@...` survive.
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
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

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
_GITHUB = re.compile(r"gh(?<![A-Za-z0-9_]gh)[pousr]_[A-Za-z0-9]{36,251}" + _TOKEN_END)
_GITHUB_PAT = re.compile(r"github_pat_(?<![A-Za-z0-9_]github_pat_)[A-Za-z0-9_]{22,255}" + _TOKEN_END)
_NPM = re.compile(r"npm_(?<![A-Za-z0-9_]npm_)[A-Za-z0-9]{36}" + _TOKEN_END)
_HF = re.compile(r"hf_(?<![A-Za-z0-9_]hf_)(?P<body>[A-Za-z0-9]{30,})" + _TOKEN_END)
_STRIPE = re.compile(r"k_(?<![A-Za-z0-9_][srp]k_)(?<=[srp]k_)(?:live|test)_[A-Za-z0-9]{16,}" + _TOKEN_END)
_SK = re.compile(
    r"sk-(?<![A-Za-z0-9_-]sk-)(?:ant-(?P<anthropic>[A-Za-z0-9_-]{32,})"
    r"|(?!ant-)(?:proj-|svcacct-|admin-|None-)?(?P<openai>[A-Za-z0-9_-]{32,}))"
)
_SLACK = re.compile(r"x(?<![A-Za-z0-9_-]x)(?:ox[abposre]-[A-Za-z0-9-]{10,}|app-\d-[A-Za-z0-9-]{10,})")
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
    r"://(?:(?<=https://)(?P<slack>hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]+)"
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
    "jwt",
    "bearer_token",
    "basic_auth",
    "auth_header",
    "cookie",
    "url_password",
    "secret_assignment",
    "email",
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
_KEY = re.compile(r"[A-Za-z_-][A-Za-z0-9_.-]{0,63}")
_ASSIGN = re.compile(
    r"(?<![A-Za-z0-9_.])(?P<key>[A-Za-z_-][A-Za-z0-9_.-]{0,63})(?P<kq>[\"']?\]?)[ \t]*"
    r"(?:(?P<eq>:?=(?![=>]))|(?P<colon>:))[ \t]*"
    + _NOT_MARKER
    + r"(?![\[{(<$%`])"
    r"(?:\"(?P<dq>(?:[^\"\\\n]|\\.){1,1024})\"|'(?P<sq>[^'\n]{1,1024})'|(?P<uq>[^\s'\"&;,)\]}>]{1,1024}))"
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
# Retina asset names (logo@2x.png) and versioned files look like addresses with a file-type TLD.
_FILE_TLDS = frozenset(
    "png jpg jpeg gif svg webp ico bmp css js mjs cjs ts tsx jsx json map md txt lock yaml yml "
    "toml py rs go rb java kt html htm xml csv log zip gz tar".split()
)

_RUN_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-"
_BLOB_RUN = re.compile(r"[A-Za-z0-9+/=_-]{%d,}" % BLOB_RUN_MIN)
_RUN_TABLE = bytes(0x61 if b in _RUN_CHARS else 0x20 for b in range(256))
_RUN_NEEDLE = b"a" * BLOB_RUN_MIN


@lru_cache(maxsize=4096)
def _secret_key(key: str) -> bool:
    """True when the key names a secret; cached because the same few keys recur in every session."""
    k = key.lower().strip("-_")
    return bool(_SECRET_KEY.search(k)) and not _NOT_SECRET_KEY.search(k)


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
    return not _CODE_VALUE.fullmatch(v)


def _keyword_hits(text: str, lower: str) -> Iterator[int]:
    """Start of every key that ends in a secret word and is followed by `=`, `:=` or `:`."""
    rev = (lower if len(lower) == len(text) else text.translate(_ASCII_LOWER))[::-1]
    n = len(text)
    for pattern, op in ((_REV_EQ, "="), (_REV_COLON, ":")):
        if op in text:
            for m in pattern.finditer(rev):
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
    for m in _FLAG.finditer(text):
        if _secret_key(m.group("key")) and _literal_value(m.group("key"), m.group("uq"), False):
            yield Finding("secret_assignment", m.start("uq"), m.end("uq"))


def _value_span(m: re.Match[str]) -> tuple[int, int, str, bool]:
    for name, quoted in (("dq", True), ("sq", True), ("uq", False)):
        if m.group(name) is not None:
            return m.start(name), m.end(name), m.group(name), quoted
    raise AssertionError("pattern always captures a value")


def _emails(text: str) -> Iterator[Finding]:
    for m in _EMAIL_DOMAIN.finditer(text):
        if m.group("tld").lower() in _FILE_TLDS:
            continue
        at = m.start()
        start = at
        while start > 0 and text[start - 1] in _EMAIL_LOCAL_CHARS:
            start -= 1
        local = text[start:at]
        if not local.strip(".") or local.lower() in _NOT_PERSONAL_LOCAL:
            continue
        if start > 0 and text[start - 1] in ":/@":
            continue  # userinfo of a URL: url_password covers what is secret there
        yield Finding("email", start, m.end())


def _tokens(text: str) -> Iterator[Finding]:
    """Provider key shapes; each family runs only if a cheap one-character test lets it."""
    if "_" in text:
        for pattern in (_GITHUB, _GITHUB_PAT):
            for m in pattern.finditer(text):
                yield Finding("github_token", m.start(), m.end())
        for m in _NPM.finditer(text):
            yield Finding("npm_token", m.start(), m.end())
        for m in _HF.finditer(text):
            if _mixed(m.group("body")):
                yield Finding("huggingface_token", m.start(), m.end())
        for m in _STRIPE.finditer(text):
            yield Finding("stripe_key", m.start() - 1, m.end())
    if "-" in text:
        for m in _SK.finditer(text):
            kind = "anthropic_key" if m.group("anthropic") else "openai_key"
            if _mixed(m.group(m.lastgroup or "openai")):
                yield Finding(kind, m.start(), m.end())
        if "x" in text:
            for m in _SLACK.finditer(text):
                yield Finding("slack_token", m.start(), m.end())
        if "-----BEGIN " in text:
            for m in _GCP.finditer(text):
                yield Finding("gcp_service_account_key", m.start(1), m.end(1))
            for m in _PEM.finditer(text):
                yield Finding("pem_private_key", m.start(), m.end())
        for m in _CURL_USER.finditer(text):
            yield Finding("basic_auth", m.start("password"), m.end("password"))
    if "I" in text:
        for m in _AWS_GOOGLE.finditer(text):
            if m.group("aws"):
                start, kind = m.start() - 2, "aws_access_key"
            else:
                start, kind = m.start() - 1, "google_api_key"
            if start > 0 and (text[start - 1].isalnum() or kind == "google_api_key" and text[start - 1] in "_-"):
                continue
            yield Finding(kind, start, m.end())
    if "J" in text:
        for m in _JWT.finditer(text):
            yield Finding("jwt", m.start() - 2, m.end())
    if ":" in text:
        for m in _URL.finditer(text):
            if m.group("slack"):
                yield Finding("slack_webhook", m.start("slack"), m.end("slack"))
            else:
                yield Finding("url_password", m.start("password"), m.end("password"))
    if "earer" in text:
        for m in _BEARER.finditer(text):
            if _mixed(m.group("body")):
                yield Finding("bearer_token", m.start("body"), m.end("body"))


def find_secrets(text: str) -> list[Finding]:
    """Every sensitive span in `text` (secrets, private addresses, e-mails), blobs excluded."""
    found = list(_tokens(text))
    if "=" in text or ":" in text:
        found.extend(_assignments(text, text.lower()))
    if "--" in text:
        found.extend(_flags(text))
    if "@" in text:
        found.extend(_emails(text))
    if "1" in text:
        found.extend(Finding("private_ipv4", m.start(), m.end()) for m in _PRIVATE_V4.finditer(text))
    if ":" in text:
        for seed in _V6_SEED.finditer(text):
            m = _PRIVATE_V6.match(text, seed.start() - 4)
            if m:
                found.append(Finding("private_ipv6", m.start(), m.end()))
    if found and ("[REDACTED:" in text or "[BLOB " in text):
        found = _outside_markers(text, found)
    return found


def _outside_markers(text: str, found: list[Finding]) -> list[Finding]:
    """Drop findings that lie inside an existing marker: markers are never secrets."""
    markers = [(m.start(), m.end()) for m in MARKER_RE.finditer(text)]
    return [f for f in found if not any(s <= f.start and f.end <= e for s, e in markers)]


def contains_sensitive(text: str) -> bool:
    """True if anything `sanitize` would redact as sensitive is still in `text`."""
    return bool(find_secrets(text))


def _blob_runs(text: str) -> Iterator[Finding]:
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
    secrets = find_secrets(text)
    found = list(secrets)
    if len(text) >= BLOB_RUN_MIN:
        found.extend(_blob_runs(text))
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
