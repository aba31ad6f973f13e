"""What a credential is, wherever it stands: the shapes that need no key word and no provider table.

- a token with a provider-like prefix (`xxx_`, `xxx-`, `xxx.`, up to three parts) and a body of 30+
  characters that looks random (letters and digits mixed as random text mixes them, or random upper
  and lower case letters, or 40+ hex characters after a prefix that names no hash or id);
- a bare token of 32+ characters mixing upper case, lower case and digits, or 40+ of lower case and
  digits, with a random text's entropy;
- the credential lines of well-known files by their own layout (`.pgpass`, `wpa_supplicant.conf`, a
  PuTTY key's private lines).

What must survive is stated as rules too: an object's id (`msg_…`, `toolu_…`, `req_…`: a prefix and a
body of about two dozen characters), hex after a hash's or an id's name, a made-up sequence, a public
key (a `pub`/`pk` prefix, an SSH or PEM public key, an age recipient), a Fernet token, a line of a
wrapped base64 dump, base64 of ordinary text, paths and names. Each rule is a row of `SHAPE_RULES` with
the texts it must and must not find a secret in (tests/test_sanitize_shapes.py runs them), and is pinned
by the corpora in tests/fixtures/secrets/ (providers.jsonl: 172 provider formats and file shapes, bare).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from memoir.cards.sanitize.generic import (
    DIGIT, HASH_PREFIX, UUID, VOWELS, decoded_text, entropy, random_looking, token_runs,
)
from memoir.cards.sanitize.patterns import BLOB_RUN_MIN
from memoir.cards.sanitize.prefilter import ALL, FILE_LINES, RANDOM

HEX = re.compile(r"[0-9a-fA-F]+")  # a hash or an id, whatever stands around it


# A provider's token: a short prefix of one to three parts (`glpat-`, `sk_live_`, `dp.st.`, `pscale_tkn_`)
# before a body of 20+ characters, with no key word needed before it.
PREFIXED_TOKEN = re.compile(r"(?<![\w.~-])(?:[A-Za-z][A-Za-z0-9]{0,11}[_.~-]){1,3}"
                            r"([A-Za-z0-9][A-Za-z0-9_-]{19,}(?:\.[A-Za-z0-9_-]{8,})*)")  # `.signature` parts too
_BODY_RUN = re.compile(r"[A-Za-z0-9]{20,}")


def random_letters(value: str) -> bool:
    """Upper and lower case letters scattered as random text scatters them (`hf_` tokens have no digit),
    not as CamelCase words string them (`SomeVeryLongFunctionName`): short runs, high entropy."""
    if len(value) < 24 or not value.isalpha():
        return False
    upper = sum(c.isupper() for c in value) / len(value)
    vowels = sum(c in VOWELS for c in value) / len(value)
    return 0.15 <= upper <= 0.85 and vowels < 0.27 and entropy(value) >= 4.3  # words: ~0.38 vowels, lower entropy


# What says it is public, or is no credential: a public key's prefix, a Fernet token (encrypted, not a key),
# an SSH public key's blob, and the body of a PEM public key or certificate.
PUBLIC_PREFIX = re.compile(r"(?i)(?:pub(?:lic)?(?:key)?|pk)[_.-]")
PUBLIC_AROUND = re.compile(r"(?i)(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp\d+|sk-ssh-ed25519@openssh\.com) $|"
                           r"public[ _-]?key\W{0,4}$|pubkey\W{0,4}$")
SSH_BLOB = ("AAAAB3NzaC1", "AAAAC3NzaC1", "AAAAE2VjZHNh", "AAAAGnNrLXNzaC", "AAAAInNrLXNzaC")


def orderly(value: str) -> bool:
    """Made, not drawn: its letters or its digits step through the alphabet (`a1B2c3D4…`), or it repeats a
    short pattern. A random token does neither."""
    letters = [c.lower() for c in value if c.isalpha()]
    digits = [c for c in value if c.isdigit()]
    for seq in (letters, digits):
        steps = [ord(b) - ord(a) for a, b in zip(seq, seq[1:])]
        if len(steps) >= 6 and sum(d in (1, -9) for d in steps) / len(steps) > 0.6:
            return True
    return len(value) >= 64 and len(zlib.compress(value.encode())) < len(value) * 0.6
PUBLIC_BLOCK = re.compile(r"-----BEGIN (?:[A-Z ]*PUBLIC KEY|CERTIFICATE[A-Z ]*)-----.*?-----END[^-]*-----", re.S)


def _public_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in PUBLIC_BLOCK.finditer(text)] if "-----BEGIN" in text else []


def _windows(text: str, runs: bytes, min_len: int, lead: int) -> Iterator[tuple[int, int]]:
    """(start, end) around each run of `min_len`+ token characters, `lead` characters before it too (a
    dotted prefix, `dp.st.`, is no run): the only places the token rules look, so prose costs nothing."""
    last = 0
    for start, end in token_runs(runs, min_len):
        start = max(last, start - lead)
        while end < len(runs) - 1 and text[end] == "." and runs[end + 1] == 0x61:  # `.signature` parts
            end += 1
            while end < len(runs) and runs[end] == 0x61:
                end += 1
        yield start, end
        last = end


def prefixed_tokens(text: str, runs: bytes | None = None) -> Iterator[tuple[str, int, int]]:
    """A token of a provider nobody listed: a prefix, then a body that looks random (letters and digits
    mixed as random text mixes them, or random letters, or 32+ hex characters after a prefix that names
    no hash). Names (`test_refresh_token_is_rotated`), hashes (`sha256_...`) and CSS classes stay."""
    spans = _windows(text, runs, 20, 30) if runs is not None else [(0, len(text))]
    for m in (m for a, b in spans for m in PREFIXED_TOKEN.finditer(text, a, b)):
        token = m.group(0)
        if HASH_PREFIX.match(token) or UUID.search(token) or PUBLIC_PREFIX.match(token):
            continue
        whole = m.group(1).replace("-", "").replace("_", "").replace(".", "")  # base64url keeps - and _
        # An object's id has a prefix too (`msg_`, `toolu_`, `req_`, `user_`) and a body of about two dozen
        # characters; a credential's body is longer. Hex after a prefix is a hash or an id (`exec-14f5…`).
        if len(whole) < PREFIXED_BODY_MIN or orderly(whole):
            continue
        if HEX.fullmatch(whole):
            # 40+ hex characters after a credential's prefix (`squ_`, `lin_oauth_`) are one; after a name for
            # a hash, a build or a queue, or shorter, a hash or an id.
            if len(whole) >= 40 and not HEX_ID_PREFIX.search(token[:m.start(1) - m.start()]):
                yield "entropy_token", m.start(), m.end()
            continue
        if random_looking(whole) or random_letters(whole):
            yield "entropy_token", m.start(), m.end()


PREFIXED_BODY_MIN = 30
HEX_ID_PREFIX = re.compile(r"(?i)commit|rev|sha|hash|digest|blob|tree|object|etag|build|run|job|exec|task|queue|trace|"
                           r"span|req|request|session|node|cache|image|layer|chunk|file|fingerprint|checksum|id|fc|call|item|msg|resp|tool")

BARE_TOKEN_MIN = 32
PREFIXED_NEEDLE = b"a" * 20
BARE_NEEDLE = b"a" * BARE_TOKEN_MIN
BARE_RUN = re.compile(r"(?<![A-Za-z0-9+/=_.-])[A-Za-z0-9_-]{%d,}(?![A-Za-z0-9+/=_.-])" % BARE_TOKEN_MIN)


ID_LEAD = re.compile(r"[A-Za-z]{1,12}[_-]")
_B64_LINE = re.compile(r"[A-Za-z0-9+/=]{60,}")


def _in_base64_block(text: str, start: int, end: int) -> bool:
    """The run is a whole line of a base64 dump wrapped at 60-76 characters: a line beside it is one too."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    if text[line_start:line_end].strip() != text[start:end]:
        return False
    before = text[text.rfind("\n", 0, max(0, line_start - 1)) + 1:max(0, line_start - 1)].strip()
    after_end = text.find("\n", line_end + 1)
    after = text[line_end + 1:len(text) if after_end < 0 else after_end].strip()
    return any(_B64_LINE.fullmatch(x) for x in (before, after))


def bare_tokens(text: str, runs: bytes | None = None) -> Iterator[tuple[str, int, int]]:
    """A credential pasted bare, with no prefix or key word: 32+ characters mixing upper case, lower
    case and digits with a random text's entropy. Hex (hashes), upper case and digits (ULIDs), and
    base64 of ordinary text stay; so does a value after a hash's name (`sha512-…`)."""
    public = _public_spans(text)
    spans = _windows(text, runs, BARE_TOKEN_MIN, 1) if runs is not None else [(0, len(text))]
    for m in (m for a, b in spans for m in BARE_RUN.finditer(text, a, b)):
        value = m.group(0).replace("-", "").replace("_", "")  # base64url keeps - and _ in the body
        if ID_LEAD.match(m.group(0)) or _in_base64_block(text, m.start(), m.end()):
            continue  # a prefixed id is the prefixed rule's to judge; a line of a wrapped base64 dump is a blob's
        if len(m.group(0)) >= BLOB_RUN_MIN or value.startswith(("gAAAAA", "age1", *SSH_BLOB)) or orderly(value) \
                or PUBLIC_AROUND.search(text[max(0, m.start() - 40):m.start()]) or any(a <= m.start() < b for a, b in public):
            continue  # a blob's, a Fernet token, an age recipient, an SSH or PEM public key, a made-up sequence
        mixed_case = re.search(r"[a-z]", value) and re.search(r"[A-Z]", value)
        if not DIGIT.search(value) or not (mixed_case or (len(value) >= 40 and value.islower())) \
                or len(value) < BARE_TOKEN_MIN:
            continue  # without both cases only a long lower case key counts (upper case and digits: a request id)
        if HEX.fullmatch(value):
            continue  # hex: a hash or an id
        if entropy(value) < 4.2 or not random_looking(value) or HASH_PREFIX.search(text[max(0, m.start() - 10):m.start()]):
            continue
        if decoded_text(value) is not None:
            continue  # base64 of text: the words it decodes to are what a card may hold
        yield "entropy_token", m.start(), m.end()


# Credential lines of well-known files, by their own layout.
# A line starts at the text's start, after a newline, or after an escaped one (`\n` in a JSON string or a
# quoted shell argument), or after a diff's or a quote's mark; it ends likewise, or at a closing quote.
_LINE_START = r"(?:(?<=\n)|(?<=\\n)|^|(?<=[\s\"'+>-]))"  # `+`/`-`: a diff's added or removed line
_LINE_END = r"(?=$|\n|\\n|[\"'\s])"
# host:port:database:user:password; the host and the user hold a letter (a time or an IPv6 address does not).
PGPASS = re.compile(_LINE_START + r"[\w.*-]*[A-Za-z*][\w.*-]*:(?:\d{2,5}|\*):[\w.*-]+:[\w.*@-]*[A-Za-z*][\w.*@-]*:"
                    r"([^\s\"'\\:][^\s\"'\\]*)" + _LINE_END)
PSK = re.compile(_LINE_START + r"[ \t]*(?:psk|wep_key\d|sae_password)=\\?\"?([^\s\"\\$][^\s\"\\]{7,})")  # wpa_supplicant.conf
PUTTY_PRIVATE = re.compile(r"Private-Lines: (\d{1,3})(?:\r?\n|(?:\\r)?\\n)")


_PORT_FIELD = re.compile(r":(?:\d{2,5}|\*):")  # what every .pgpass line holds: cheap to find, rare in prose


def pgpass_lines(text: str) -> Iterator[tuple[str, int, int]]:
    """`.pgpass` lines: host:port:database:user:password. The full pattern runs only on the lines that
    hold a port field (its line-start lookbehinds cost at every position of a long text)."""
    if text.count(":") < 4:
        return
    done = -1
    for hit in _PORT_FIELD.finditer(text):
        if hit.start() < done:
            continue
        start = max(text.rfind("\n", 0, hit.start()), text.rfind("\\n", 0, hit.start())) + 1
        end = min((i for i in (text.find("\n", hit.end()), text.find("\\n", hit.end())) if i >= 0), default=len(text))
        done = end
        yield from (("secret_assignment", m.start(1), m.end(1)) for m in PGPASS.finditer(text, max(0, start - 1), end))


def psk_lines(text: str) -> Iterator[tuple[str, int, int]]:
    """`wpa_supplicant.conf` keys; a reference (`psk=$WIFI_PSK`) is no key."""
    if "psk=" in text or "wep_key" in text or "sae_password=" in text:
        yield from (("secret_assignment", m.start(1), m.end(1)) for m in PSK.finditer(text))


def putty_private_lines(text: str) -> Iterator[tuple[str, int, int]]:
    """A PuTTY key file's private lines, as many as its `Private-Lines:` says, pasted raw or JSON-escaped."""
    if "Private-Lines:" in text:
        for m in PUTTY_PRIVATE.finditer(text):
            end = m.end()
            newline = "\\n" if m.group(0).endswith("\\n") else "\n"  # the key file pasted raw, or escaped in JSON
            for _ in range(int(m.group(1))):
                nl = text.find(newline, end)
                end = len(text) if nl < 0 else nl + len(newline)
            yield "pem_private_key", m.end(), end


def credential_file_lines(text: str) -> Iterator[tuple[str, int, int]]:
    """`.pgpass` passwords, `wpa_supplicant.conf` keys, and a PuTTY key file's private lines."""
    yield from pgpass_lines(text)
    yield from psk_lines(text)
    yield from putty_private_lines(text)


@dataclass(frozen=True, slots=True)
class ShapeRule:
    """One named shape: the finder that detects it, texts it must find a secret in (`hits`) and texts it
    must leave alone (`misses`), and why. tests/test_sanitize_shapes.py runs every row. The values are
    made up for the table (random draws), never anyone's credential."""

    name: str
    find: Callable[[str], Iterator[tuple[str, int, int]]]
    hits: tuple[str, ...]
    misses: tuple[str, ...]
    why: str


SHAPE_RULES: tuple[ShapeRule, ...] = (
    ShapeRule("prefixed_token", prefixed_tokens,
              ("export TOKEN_X=zq_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL", "clone with acme-8dKLzdocJ2isAjIhKtJ0RlgLKOmxgJTeKdNn now",
               "key hx.ab.FRIBXuDL7DxtpYlSXpfKtHF4vUCsMehGAkWvj7FA", "sk_12aabfe228f219e9cb0eb53f16947ccf25ec84d8dbc7"),
              ("msg_01jfljoQoaF1LlqsajAIxNKu", "test_refresh_token_is_rotated_when_the_session_expires",
               "sha256_41ecccc3fc1626e53a13043b026c48bbf33feff9243a8f506b40928b5b7a767c",
               "pk_live_VZomHFwUbbYrEqmSM9wCZ7Uw9xfogoEmvn", "exec-f0fb23c6f5da2cec255404e4fb440034d6608697"),
              "Providers give their tokens a short prefix and a long random body; nobody can list every prefix, "
              "so the shape is the rule. An object's id (a body of two dozen), a hash after its name, a public "
              "key's prefix and a name made of words are not credentials."),
    ShapeRule("bare_token", bare_tokens,
              ("the token is WLuqIA1id6Vw5DQL05HA064GiIjHGb3CXlMaXZjl ok", "jENUhJduRHHJEYXg4JdpmrcXgGCJbW56eCuN"),
              ("commit 68ef786e4d3cea27d26934b484e73cf575dcad6b", "01HZX3K8M2Q9T7V4W6Y0B5C1D8",
               "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "SomeVeryLongFunctionNameThatGoesOnAndOn2"),
              "A secret pasted with no key word before it is still random: 32+ characters mixing cases and digits "
              "with a random text's entropy. Hashes (hex), ULIDs, made-up sequences and long names are not."),
    ShapeRule("pgpass_line", pgpass_lines,
              ("db.example.com:5432:shop:app:ufUxbvJDCTbyvH", "+localhost:5432:*:postgres:NsG9eh6Yo4gf"),
              ("12:30:45:00:ab:cd", "fe80::1:2:3:4", "at 10:15:30:45 the job ran"),
              "A `.pgpass` line holds its password last, with no key word; a time or an IPv6 address has no letter "
              "where the host and the user stand."),
    ShapeRule("wpa_psk_line", psk_lines,
              ('\\n  psk="qrc5XlrWi0B26R08"', "network={\n  psk=Zr8sQ2wvLm0Yk3Tq\n}"),
              ("  psk=$WIFI_PSK", "the psk= line is missing"),
              "`wpa_supplicant.conf` keeps the network key as `psk=`; a reference to a variable is no key."),
    ShapeRule("putty_private_lines", putty_private_lines,
              ("Private-Lines: 1\nqzjI6GKFSufrdZSlB5er8bOfZqfM2oeq3hDavJA76rN\nPrivate-MAC: 00",),
              ("PuTTY-User-Key-File-3: ssh-ed25519\nPublic-Lines: 2\nGRlrwZbqcAAAAC3NzaC1", "Private-Lines: none"),
              "A PuTTY key file is no PEM block: its private part is the lines its `Private-Lines:` header counts."),
)


def shape_spans(text: str, runs: bytes, hints: int = ALL) -> Iterator[tuple[str, int, int]]:
    """Every span these rules find in `text` (`runs`: the RUN_TABLE'd text, so prose costs nothing; `hints`:
    the families `prefilter.hints` let run)."""
    if hints & RANDOM and PREFIXED_NEEDLE in runs:  # a run of token characters long enough for a prefix and a body
        yield from prefixed_tokens(text, runs)
        if BARE_NEEDLE in runs:
            yield from bare_tokens(text, runs)
    if hints & FILE_LINES:
        yield from credential_file_lines(text)
