"""Checks on a span a pattern found: is it a secret or only shaped like one.

Luhn and the card networks, the IBAN mod-97 check, secret key names and literal values, the
documentation values that survive, and whether a `x.local` reads as code or as a host.
"""

from __future__ import annotations

from functools import lru_cache

from memoir.cards.sanitize.patterns import (
    BOOTSTRAP_TOKEN, CODE_AFTER, CODE_LINE, CODE_RECEIVERS, CODE_VALUE, DOCS_DOMAINS, DOCS_SUBDOMAINS, DOCUMENTED,
    HOST_KEYS, KEY_BEFORE_EQ, NOT_SECRET_KEY, PLACEHOLDER_VALUES, SECRET_KEY,
)


def mixed(s: str) -> bool:
    """A random token has a digit and a letter; a hyphenated file or tool name rarely has both."""
    return any(c.isdigit() for c in s) and any(c.isalpha() for c in s)


@lru_cache(maxsize=4096)
def names_secret(key: str) -> bool:
    """True when the key names a secret; cached because the same few keys recur in every session."""
    k = key.lower().strip("-_")
    return bool(SECRET_KEY.search(k)) and not NOT_SECRET_KEY.search(k)


def literal_value(key: str, value: str, quoted: bool) -> bool:
    """True when `value` is a literal worth hiding, not a reference, placeholder or piece of code."""
    v = value.strip()
    if len(v) < 3 or v.lower() in PLACEHOLDER_VALUES or set(v) <= set("*x.X-_"):
        return False
    k = key.lower()
    if v.isdigit() and "pass" not in k and "pwd" not in k:
        return False
    if quoted:
        return not v.startswith(("${", "{{", "<", "%(", "{"))
    if v.startswith(("/", "~/", "./", "../")) or v.lower() in k:
        return False
    return not CODE_VALUE.fullmatch(v) or bool(BOOTSTRAP_TOKEN.fullmatch(v) and mixed(v))


def documentation_domain(domain: str) -> bool:
    """example.com, .org, .net (RFC 2606) are what documentation writes; they reach no one.

    The reserved TLDs (`.example`, `.test`, `.invalid`) are not let through: fixtures use them to
    stand for a real person's address, and such a line must read as redacted.
    """
    d = domain.lower()
    return d in DOCS_DOMAINS or d.endswith(DOCS_SUBDOMAINS)


def url_userinfo(text: str, start: int) -> bool:
    """True when `start` sits right after `scheme://` or `scheme://user:`, not in a path."""
    if text[max(0, start - 2) : start] == "//":
        return True
    scheme = text.rfind("://", max(0, start - 256), start)
    return scheme != -1 and not any(c in "/?# \t\n\"'<>" for c in text[scheme + 3 : start])


def reads_as_code(text: str, start: int, end: int, host: str) -> bool:
    """`x.local` is also attribute access: a host unless the text around it reads as code."""
    if any(c == "-" or c.isdigit() for c in host) or text[max(0, start - 2) : start] == "//":
        return False  # no identifier has a hyphen; `//` opens a URL's host
    before = text[start - 1 : start]
    if before == "@" or text[end : end + 1] == ":" and text[end + 1 : end + 2].isdigit():
        return False
    if before == "=" or text[max(0, start - 2) : start] == "= ":
        key = KEY_BEFORE_EQ.search(text, max(0, start - 64), start)  # `DB_HOST=` vs `local_only=`
        return not (key and key.group(1).lower().endswith(HOST_KEYS))
    if host.split(".", 1)[0] in CODE_RECEIVERS or CODE_AFTER.match(text, end):
        return True
    line_start = text.rfind("\n", 0, start) + 1
    return CODE_LINE.match(text, line_start) is not None


def luhn(digits: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = ord(c) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def card_issuer(digits: str) -> bool:
    """The length and first digits of a card network (Visa, Mastercard, Amex, Discover, JCB, Diners)."""
    n, head = len(digits), digits[:2]
    if n == 16:
        return digits[0] in "456" or head == "35" or 2221 <= int(digits[:4]) <= 2720
    if n == 15:
        return head in ("34", "37")
    if n == 14:
        return head in ("30", "36", "38")
    return n in (13, 19) and digits[0] == "4"


def iban_valid(compact: str) -> bool:
    """ISO 13616 check: move the first four characters to the end, read letters as 10..35, mod 97."""
    rearranged = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def number_boundary(text: str, start: int, end: int) -> bool:
    """No letter, digit or number punctuation glued to either end (not a piece of a longer id)."""
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_.-+"):
        return False
    if end < len(text) and (text[end].isalnum() or text[end] == "_"):
        return False
    return not (end + 1 < len(text) and text[end] in ".-:" and text[end + 1].isdigit())


def documented_value(value: str) -> bool:
    """AWS's documented example key or secret, also at a sentence's end ("…EXAMPLEKEY. The"), cut
    short where memoir shortened a long line ("wJalrXUtnFEMI/K7MDENG/bPx…", "wJ…"), or its first
    16+ characters where a line ends inside it."""
    value = value.rstrip(".,;:!?)'\"`")
    if value in DOCUMENTED:
        return True
    cut = value.rstrip("…")
    return (cut != value and cut or len(cut) >= 16) and any(d.startswith(cut) for d in DOCUMENTED)
