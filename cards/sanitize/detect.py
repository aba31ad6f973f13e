"""The detectors: every sensitive span in a text (secrets, private addresses, e-mails), blobs excluded.

Each family runs only when a cheap test on the text lets it (a character, a long token run); the
patterns come from `patterns`, the judgement from `validators`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from memoir.cards.sanitize.generic import generic_spans
from memoir.cards.sanitize.maintained import maintained_spans
from memoir.cards.sanitize.prefilter import (
    ALL, ASSIGN, EMAIL, FLAGS, IPV4, IPV6, NUMBERS, PREFIXED, RANDOM, TOKENS,
)
from memoir.cards.sanitize.shapes import shape_spans
from memoir.cards.sanitize.patterns import (
    ASCII_LOWER, ASSIGNMENT, AUTH_TOKEN, AWS_BARE_SECRET, AWS_GOOGLE, AWS_PAIR_WINDOW, AWS_SECRET_VALUE, BEARER,
    BY_SEPARATOR, CARD_SHAPE, CARD_WORD, CARD_WORD_WINDOW, COOKIE_VALUE, CURL_USER, DATE_IN_PHONE, DISCORD,
    DOCUMENTED_IBANS, EMAIL_DOMAIN, EMAIL_LOCAL_CHARS, ESCAPED_BREAK, FILE_TLDS, FLAG_VALUE, GCP, HEADER_KINDS,
    HEADER_VALUE, HOST_CHARS, HOST_MAX, IBAN_LENGTHS, IBAN_START, JWT, KEY_NAME, LINE_LEAD, MAILCHIMP, MARKER_RE,
    NETRC, NOT_PERSONAL_LOCAL, NO_DASH_BEFORE, NUMBER_TABLE, PAREN_SHAPE, PEM, PHONE_DIGITS, PHONE_PAREN,
    PHONE_PLUS, PLUS_SHAPE, PREFIXES, PRIVATE_SUFFIX, PRIVATE_TLDS, PRIVATE_V4, PRIVATE_V6, REV_COLON, REV_EQ,
    SEPARATOR_SCANS, TELEGRAM, TEST_CARDS, TOKEN_RUN_NEEDLE, UNSEPARATED, URL_CREDENTIAL, US_PHONE_SHAPE, V6_SEED,
    RUN_TABLE, WELL_KNOWN_HOSTS, matches,
)
from memoir.cards.sanitize.validators import (
    card_issuer, documentation_domain, documented_value, iban_valid, literal_value, luhn, mixed, names_secret,
    number_boundary, reads_as_code, url_userinfo,
)


@dataclass(frozen=True, slots=True)
class Finding:
    """One span of `text` that must not be stored, and the shape it was recognised as."""

    kind: str
    start: int
    end: int


def _keyword_hits(text: str, lower: str) -> Iterator[int]:
    """Start of every key that ends in a secret word and is followed by `=`, `:=` or `:`."""
    rev = (lower if len(lower) == len(text) else text.translate(ASCII_LOWER))[::-1]
    n = len(text)
    for pattern, op in ((REV_EQ, "="), (REV_COLON, ":")):
        if op in text:
            for m in matches(pattern, rev):
                yield n - m.end()


def _header(kind_key: str, text: str, pos: int) -> Finding | None:
    if kind_key.endswith("cookie"):
        m = COOKIE_VALUE.match(text, pos)
        return Finding("cookie", m.start("cred"), m.end("cred")) if m else None
    m = HEADER_VALUE.match(text, pos)
    if m is None or not mixed(m.group("cred")) and not m.group("scheme"):
        return None
    kind = HEADER_KINDS.get((m.group("scheme") or "").lower(), "auth_header")
    return Finding(kind, m.start("cred"), m.end("cred"))


def _assignments(text: str, lower: str) -> Iterator[Finding]:
    for start in _keyword_hits(text, lower):
        key_match = KEY_NAME.match(text, start)
        if key_match is None or not names_secret(key_match.group()) or text.endswith("[REDACTED:", 0, start):
            continue  # a marker's kind (`[REDACTED:url_token]:@host`) is no key
        m = ASSIGNMENT.match(text, start)
        if m is None:
            continue
        key = m.group("key")
        k = key.lower()
        if m.group("colon") and not m.group("kq"):
            if k == "pass":
                continue  # `PASS: test_x`, a test runner's verdict
            if text[m.end("colon") : m.end("colon") + 1] not in (" ", "\t"):
                continue
            line_start = text.rfind("\n", 0, m.start()) + 1
            if not LINE_LEAD.fullmatch(text, line_start, m.start()) and not k.endswith(("authorization", "cookie")):
                continue
        if k.endswith(("authorization", "cookie")):
            found = _header(k, text, m.end("eq") if m.group("eq") else m.end("colon"))
            if found:
                yield found
            continue
        vstart, vend, value, quoted = _value_span(m)
        if literal_value(key, value, quoted):
            aws = "secret" in k and ("aws" in k or "access" in k) and AWS_SECRET_VALUE.fullmatch(value)
            yield Finding("aws_secret_key" if aws else "secret_assignment", vstart, vend)


def _flags(text: str) -> Iterator[Finding]:
    for m in matches(FLAG_VALUE, text):
        if names_secret(m.group("key")) and literal_value(m.group("key"), m.group("uq"), False):
            yield Finding("secret_assignment", m.start("uq"), m.end("uq"))


def _value_span(m: re.Match[str]) -> tuple[int, int, str, bool]:
    for name, quoted in (("dq", True), ("sq", True), ("uq", False)):
        value = m.group(name)
        if value is not None:
            if not quoted and "\\" in value:
                cut = ESCAPED_BREAK.search(value)
                value = value[: cut.start()] if cut else value
            return m.start(name), m.start(name) + len(value), value, quoted
    raise AssertionError("pattern always captures a value")


def _emails(text: str) -> Iterator[Finding]:
    for m in matches(EMAIL_DOMAIN, text):
        if m.group("tld").lower() in FILE_TLDS or m.group("tld").lower() in PRIVATE_TLDS:
            continue  # `logo@2x.png`; `deploy@nas.local` is an ssh target: internal_host takes the host
        at = m.start()
        start = at
        while start > 0 and text[start - 1] in EMAIL_LOCAL_CHARS:
            start -= 1
        local = text[start:at].lstrip("+")  # `+@decorator` is a diff's added line
        start = at - len(local)
        if not local.strip(".") or local.lower() in NOT_PERSONAL_LOCAL or documentation_domain(m.group()[1:]):
            continue
        if start > 0 and (text[start - 1] == "@" or text[start - 1] in ":/" and url_userinfo(text, start)):
            continue  # userinfo of a URL (url_password covers what is secret there), `L@D@L.T` code
        yield Finding("email", start, m.end())


def _tokens(text: str) -> Iterator[Finding]:
    """Provider key shapes; each family runs only if a cheap one-character test lets it."""
    if "-" in text:
        if "-----BEGIN " in text:
            for m in matches(GCP, text):
                yield Finding("gcp_service_account_key", m.start(1), m.end(1))
            for m in matches(PEM, text):
                yield Finding("pem_private_key", m.start(), m.end())
        for m in matches(CURL_USER, text):
            yield Finding("basic_auth", m.start("password"), m.end("password"))
    if "I" in text:
        for m in matches(AWS_GOOGLE, text):
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
        for m in matches(JWT, text):
            yield Finding("jwt", m.start() - 2, m.end())
    if ":" in text:
        for m in matches(URL_CREDENTIAL, text):
            if m.group("slack"):
                yield Finding("slack_webhook", m.start("slack"), m.end("slack"))
            elif m.group("user"):
                if mixed(m.group("user")):  # a token as user name (Sentry DSN, `https://<pat>@host`)
                    yield Finding("url_token", m.start("user"), m.end("user"))
            else:
                yield Finding("url_password", m.start("password"), m.end("password"))
    if "earer" in text:
        for m in matches(BEARER, text):
            if mixed(m.group("body")):
                yield Finding("bearer_token", m.start("body"), m.end("body"))


def _aws_pair_secret(text: str, key_end: int) -> Iterator[Finding]:
    """A secret key with no name before it: 40 mixed-case characters after the access key."""
    nl = text.find("\n", key_end, key_end + AWS_PAIR_WINDOW)
    limit = key_end + AWS_PAIR_WINDOW if nl == -1 else text.find("\n", nl + 1, key_end + AWS_PAIR_WINDOW)
    m = AWS_BARE_SECRET.search(text, key_end, limit if limit != -1 else key_end + AWS_PAIR_WINDOW)
    # A git SHA is lower-case hex; a secret key mixes cases.
    if m and not m.group().islower() and not m.group().isupper():
        yield Finding("aws_secret_key", m.start(), m.end())


def _prefixed(text: str, long_run: bool) -> Iterator[Finding]:
    """Provider tokens with a fixed prefix, the few shapes anchored on a literal inside them, hosts."""
    for sep, scan in SEPARATOR_SCANS:
        if not long_run and sep != ".":
            continue  # the "." scan also finds private host names, which are short
        end = 0
        for m in matches(scan, text):
            if m.start() < end:
                continue  # inside the token just found: its body is not looked at again
            found = _at_separator(text, sep, m.start())
            if found:
                end = found.end
                yield found
    if "machine" in text:
        for m in matches(NETRC, text):
            yield Finding("netrc_password", m.start("password"), m.end("password"))
    if not long_run:
        return
    for pattern, kind in UNSEPARATED:
        for m in matches(pattern, text):
            start = m.start() - 3 if kind == "atlassian_token" else m.start()
            if kind != "atlassian_token" or start == 0 or not text[start - 1].isalnum():
                yield Finding(kind, start, m.end())
    if ":AA" in text:
        for m in matches(TELEGRAM, text):
            start = m.start()
            while start > 0 and text[start - 1].isdigit():
                start -= 1
            if 8 <= m.start() - start <= 10 and (start == 0 or not (text[start - 1].isalnum() or text[start - 1] == "_")):
                yield Finding("telegram_bot_token", start, m.end())


def _at_separator(text: str, sep: str, pos: int) -> Finding | None:
    """The token whose prefix ends at the separator `text[pos]`, if its body has the right shape."""
    for prefix in BY_SEPARATOR[sep]:
        start = pos + 1 - len(prefix)
        if start >= 0 and text.startswith(prefix, start):
            before = text[start - 1] if start else " "
            if before.isalnum() or before == "_" or before == sep == "." or before == "-" and prefix in NO_DASH_BEFORE:
                return None
            kind, body = PREFIXES[prefix]
            m = body.match(text, pos + 1)
            if m is None:
                return None
            if kind == "openai_key":
                kind = "anthropic_key" if m.group("anthropic") else "openai_key"
                if not mixed(m.group(m.lastgroup or "openai")):
                    return None
            elif kind == "huggingface_token" and not mixed(m.group()):
                return None
            return Finding(kind, start, m.end())
    if sep == "-":
        m = MAILCHIMP.match(text, pos - 32) if pos >= 32 else None
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
    m = DISCORD.match(text, start)
    if m and mixed(m.group()) and not (start and (text[start - 1].isalnum() or text[start - 1] in "_-.")):
        return Finding("discord_bot_token", start, m.end())
    return None


def _auth_tokens(lower: str) -> Iterator[Finding]:
    """A 32-hex value right after the words "auth token" (Twilio's shape, which has no prefix)."""
    for m in matches(AUTH_TOKEN, lower):
        if mixed(m.group("hex")):
            yield Finding("auth_token", m.start("hex"), m.end("hex"))


def _internal_host(text: str, dot: int) -> Finding | None:
    """The host name ending in the private suffix that starts at `text[dot]`."""
    m = PRIVATE_SUFFIX.match(text, dot)
    if m is None:
        return None
    start, limit = dot, max(0, dot - HOST_MAX)
    while start > limit and text[start - 1] in HOST_CHARS:
        start -= 1
    host = text[start : m.end()]
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        return None  # part of an identifier (`my_obj.local`) or a capitalised namespace
    if host[:1] in ".-" or dot == start or host in WELL_KNOWN_HOSTS:
        return None  # `.env.local`, `~/.local`, Docker's own names
    if start > 0 and text[start - 1] == "/" and not text[max(0, start - 2) : start] == "//":
        return None  # a file in a path (`./env.local`); a host follows `//`, `@` or a space
    if not host.endswith(".arpa") and ".corp." not in host + "." and reads_as_code(text, start, m.end(), host):
        return None  # `version.local is None`, `from dask.local import`, `x = value.local`
    return Finding("internal_host", start, m.end())


def _numbers(text: str, raw: bytes) -> Iterator[Finding]:
    """Card numbers (Luhn), IBANs (mod 97) and phone numbers; `raw` is `text` with one byte a character."""
    shape = raw.translate(NUMBER_TABLE)
    yield from _phones(text, shape, PLUS_SHAPE, PHONE_PLUS)
    if b"0000" not in shape:
        return  # every shape below holds four digits in a row; `+33 1 23 45 67 89` may not
    yield from _phones(text, shape, PAREN_SHAPE, PHONE_PAREN)
    for m in matches(CARD_SHAPE, shape):
        start, end = m.span()
        digits = text[start:end].replace(" ", "").replace("-", "")
        if (
            number_boundary(text, start, end) and card_issuer(digits) and luhn(digits)
            and digits not in TEST_CARDS and len(set(digits)) > 2
            and (len(digits) < end - start or CARD_WORD.search(text, max(0, start - CARD_WORD_WINDOW), start))
        ):
            yield Finding("card_number", start, end)
    for m in matches(IBAN_START, shape):
        found = _iban_at(text, m.start())
        if found:
            yield found
    for m in matches(US_PHONE_SHAPE, shape):
        start, end = m.span()
        if text[start] in "23456789" and text[start + 4] in "23456789" and number_boundary(text, start, end):
            yield Finding("phone_number", start, end)


def _phones(text: str, shape: bytes, seeds: re.Pattern[bytes], pattern: re.Pattern[str]) -> Iterator[Finding]:
    for seed in matches(seeds, shape):
        m = pattern.match(text, seed.start())
        if m and PHONE_DIGITS[0] <= sum(c.isdigit() for c in m.group()) <= PHONE_DIGITS[1]:
            if m.group().count(".") != 1 and not DATE_IN_PHONE.search(m.group()):  # `+1.4142`, `+1980-02-29`
                yield Finding("phone_number", m.start(), m.end())


def _iban_at(text: str, start: int) -> Finding | None:
    """The IBAN starting at `start`, walked to its country's length (spaces only between groups of 4)."""
    length = IBAN_LENGTHS.get(text[start : start + 2])
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
    return Finding("iban", start, pos) if iban_valid(compact) and compact not in DOCUMENTED_IBANS else None


def find_spans(text: str, raw: bytes, runs: bytes, generic: bool = True, maintained: bool = True,
               hints: int | None = None) -> list[Finding]:
    """Every sensitive span in `text`, blobs excluded: each detector family, then markers and
    documentation values dropped. `raw` is `text` with one byte a character (so offsets carry
    over), `runs` marks token characters. `generic=False` leaves out the provider-independent
    rules (`generic`): the detector as it was before them, which bench/sanitize.py measures;
    `maintained=False` leaves out the maintained provider rules (`maintained`). `hints`: the
    families `prefilter.hints` found a hint of (None: every family runs)."""
    h = ALL if hints is None else hints
    found = list(_tokens(text)) if h & TOKENS else []
    # Provider tokens are long unbroken runs; prose has none, and then their scans are skipped.
    long_run = TOKEN_RUN_NEEDLE in runs
    if h & PREFIXED:
        found.extend(_prefixed(text, long_run))
    if h & NUMBERS:
        found.extend(_numbers(text, raw))
    lower = text.lower()
    if long_run and h & RANDOM and "auth" in lower:
        found.extend(_auth_tokens(lower if len(lower) == len(text) else text.translate(ASCII_LOWER)))
    if h & ASSIGN and ("=" in text or ":" in text):
        found.extend(_assignments(text, lower))
    if h & FLAGS and "--" in text:
        found.extend(_flags(text))
    if h & EMAIL and "@" in text:
        found.extend(_emails(text))
    if h & IPV4 and "1" in text:
        found.extend(Finding("private_ipv4", m.start(), m.end()) for m in matches(PRIVATE_V4, text))
    if h & IPV6 and ":" in text:
        for seed in matches(V6_SEED, text):
            m = PRIVATE_V6.match(text, seed.start() - 4)
            if m:
                found.append(Finding("private_ipv6", m.start(), m.end()))
    if generic:
        lower_ascii = lower if len(lower) == len(text) else text.translate(ASCII_LOWER)
        found.extend(Finding(kind, s, e) for kind, s, e in generic_spans(text, lower_ascii, runs, _holds_secret, h))
        found.extend(Finding(kind, s, e) for kind, s, e in shape_spans(text, runs, h))
    if long_run and maintained and h & RANDOM:
        # memoir's own rules know what to keep around a secret (a URL's host, a key's name): the maintained
        # rules add only what they found where memoir's found nothing.
        own = [(f.start, f.end) for f in found]
        found.extend(Finding(kind, s, e) for kind, s, e in maintained_spans(text, own, runs)
                     if not any(s < b and a < e for a, b in own))
    if found and ("[REDACTED:" in text or "[BLOB " in text):
        found = _outside_markers(text, found)
    if found and ("EXAMPLE" in text or "wJalrXUt" in text or "AKIAIOSF" in text or "…" in text):
        found = [f for f in found if not documented_value(text[f.start : f.end])]
    return found


def _holds_secret(decoded: str) -> bool:
    """Whether a text decoded from base64 holds a secret: every rule, on the decoded text."""
    raw = decoded.encode("ascii", "replace")
    return bool(find_spans(decoded, raw, raw.translate(RUN_TABLE)))


def _outside_markers(text: str, found: list[Finding]) -> list[Finding]:
    """Drop findings that lie inside an existing marker: markers are never secrets."""
    markers = [(m.start(), m.end()) for m in MARKER_RE.finditer(text)]
    return [f for f in found if not any(s <= f.start and f.end <= e for s, e in markers)]
