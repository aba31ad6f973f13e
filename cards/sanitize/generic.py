"""Secrets no provider table names: command-line credentials, secret words, wrapped and random tokens.

A list of provider prefixes is always one provider behind, so these rules look at where a value
stands and what it looks like instead of what it starts with:

- a credential passed to a database, remote-shell, container, keystore or TLS tool as a flag
  (`mysql -pX`, `sshpass -p X`, `docker login -p X`, `keytool -storepass X`, `openssl -passin
  pass:X`, `redis-cli -a X`, `smbclient -U user%X`, `sqlplus user/X@db`, ...);
- a value after a secret word in any case, abbreviated or mid-sentence (`pw=X`, `PWD: X`, "Note
  that password: X", "the api key is X");
- a random-looking token after a key, token, secret or bearer word, or after `=`, whatever its
  prefix; a token that is base64 of a credential (a Kubernetes Secret value, a docker auth blob);
- the token part of a webhook URL and the user part of a URL when it is a token.

What keeps near-misses intact: a value must look random (digits among letters, short letter runs,
few vowels: `sha256_hexdigest_of_the_file` and `RelWithDebInfo` read as words), hex after a plain
"key" or "=" is a hash, a UUID is an id, base64 that decodes to ordinary text is ordinary text,
and a flag's value is a reference when it is `$VAR`, `env:X`, `file:X` or `<placeholder>`.
detect-secrets (a dependency) gives the entropy measure; its provider rules for the providers
memoir has no row for run from `providers`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import re
import string
from collections.abc import Iterator
from functools import lru_cache

from memoir.cards.sanitize.patterns import ESCAPED_BREAK, PLACEHOLDER_VALUES, TOKEN_RUN_NEEDLE, lines_with, matches
from memoir.cards.sanitize.prefilter import ALL, COMMAND, PASSWORD, PROVIDER, RANDOM, URL as URL_FAMILY
from memoir.cards.sanitize.providers import provider_rules

# --- credentials passed as command-line flags --------------------------------------------------------

# tool -> (flag, how the value is given); `next`: the next word, `glued`: the rest of the word
# (`-pX`), `either`: both, `pass`: the next word after `pass:`, `userpass`: the part after the
# user and its separator (`:`, `%` or `,` as the tool writes it).
_DB = {"-p": "glued"}
_LOGIN = {"-p": "next"}
_MONGO = {"-p": "next"}
_KEYSTORE = {f: "next" for f in ("-storepass", "-keypass", "-srcstorepass", "-deststorepass", "-srckeypass",
                                 "-destkeypass", "-new")}
_OPENSSL = {"-passin": "pass", "-passout": "pass", "-pass": "pass", "-k": "next"}
_LDAP = {"-w": "next"}
_SNMP = {"-A": "next", "-X": "next"}
TOOL_FLAGS: dict[str, dict[str, str]] = {
    **{t: _DB for t in ("mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlcheck", "mysqlshow", "mariadb",
                        "mariadb-dump", "mariadb-admin")},
    "sshpass": {"-p": "either"},
    **{t: _LOGIN for t in ("docker", "podman", "nerdctl", "buildah", "helm", "oras", "az")},
    "skopeo": {"--creds": "userpass:", "--src-creds": "userpass:", "--dest-creds": "userpass:"},
    "redis-cli": {"-a": "next", "--pass": "next"},
    **{t: _MONGO for t in ("mongo", "mongosh", "mongodump", "mongorestore", "mongoexport", "mongoimport")},
    "keytool": _KEYSTORE,
    "jarsigner": _KEYSTORE,
    "openssl": _OPENSSL,
    **{t: _LDAP for t in ("ldapsearch", "ldapadd", "ldapmodify", "ldapdelete", "ldapwhoami", "ldappasswd")},
    "zip": {"-P": "next"},
    "unzip": {"-P": "next"},
    "7z": {"-p": "glued"},
    "7za": {"-p": "glued"},
    **{t: {"-P": "next"} for t in ("sqlcmd", "bcp", "osql", "isql", "ipmitool")},
    **{t: {"-U": "userpass%"} for t in ("smbclient", "rpcclient", "smbmap")},
    **{t: _SNMP for t in ("snmpwalk", "snmpget", "snmpset", "snmpbulkwalk")},
    **{t: {"/p:": "glued"} for t in ("xfreerdp", "wlfreerdp", "sdl-freerdp")},
    "lftp": {"-u": "userpass,"},
    "curl": {"--user": "userpass:", "--proxy-user": "userpass:", "-U": "userpass:"},
    "htpasswd": {"-b": "htpasswd"},
    "sqlplus": {"": "sqlplus"},
}
LOGIN_TOOLS = frozenset({"docker", "podman", "nerdctl", "buildah", "helm", "oras", "az"})  # `-p` is a port elsewhere
TOOL_RE = re.compile(
    r"(?<![\w.-])(?P<tool>" + "|".join(sorted(map(re.escape, TOOL_FLAGS), key=len, reverse=True))
    + r")(?![\w.-])"
)
# The flags above, as they open: ` -p`, ` -storepass`, ` --creds`; `-q`, `-3` and `--oneline` are not.
FLAG_ANCHOR = re.compile(r" -(?:-(?:creds|src-creds|dest-creds|user|proxy-user|pass)|[pPawAXUubknsdw])")
COMMAND_END = re.compile(r"\n|\|\||&&|[|;]|\\n")
WORD = re.compile(r"\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'|[^\s\"']+(?:[\"'][^\"'\n]*[\"'][^\s\"']*)*")
REFERENCE = re.compile(r"[$<{%`-]|env:|file:|fd:|stdin$")


def _value(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The value in `text[start:end]` without its quotes, or None when it is a reference."""
    if end - start >= 2 and text[start] in "\"'" and text[end - 1] == text[start]:
        start, end = start + 1, end - 1
    value = text[start:end]
    if len(value) < 3 or REFERENCE.match(value) or value.lower() in PLACEHOLDER_VALUES or set(value) <= set("*x.X-_"):
        return None
    return start, end


def _userpass(text: str, start: int, end: int, sep: str) -> tuple[int, int] | None:
    if end - start >= 2 and text[start] in "\"'" and text[end - 1] == text[start]:
        start, end = start + 1, end - 1
    cut = text.find(sep, start, end)
    return None if cut == -1 else _value(text, cut + 1, end)


def _command_values(text: str, tool: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """Spans of the credentials in one command, `text[start:end]` after the tool's name."""
    flags = TOOL_FLAGS[tool]
    words = [(m.start(), m.end()) for m in WORD.finditer(text, start, end)]
    if tool in LOGIN_TOOLS and not any(text[s:e] == "login" for s, e in words):
        return
    plain = [(s, e) for s, e in words if text[s] != "-"]
    if tool == "sqlplus" and plain:  # `sqlplus user/password@db`
        s, e = plain[0]
        slash = text.find("/", s, e)
        if slash > s:
            at = text.find("@", slash, e)
            span = _value(text, slash + 1, at if at != -1 else e)
            if span:
                yield span
        return
    for i, (s, e) in enumerate(words):
        word = text[s:e]
        for flag, how in flags.items():
            if how == "htpasswd" and word == flag:
                rest = [(a, b) for a, b in words[i + 1:] if text[a] != "-"]
                if len(rest) >= 3:  # htpasswd -b [-c] file user password
                    span = _value(text, *rest[2])
                    if span:
                        yield span
            elif how in ("glued", "either") and word.startswith(flag) and len(word) > len(flag):
                span = _value(text, s + len(flag), e)
                if span:
                    yield span
            elif word == flag and i + 1 < len(words) and how != "glued":
                vs, ve = words[i + 1]
                if how == "pass":
                    if text.startswith("pass:", vs):
                        span = _value(text, vs + 5, ve)
                        if span:
                            yield span
                elif how.startswith("userpass"):
                    span = _userpass(text, vs, ve, how[-1])
                    if span:
                        yield span
                else:
                    span = _value(text, vs, ve)
                    if span:
                        yield span


def command_credentials(text: str) -> Iterator[tuple[str, int, int]]:
    """Credentials in commands: only lines holding a flag (` -`, `/p:`) or `sqlplus` are read."""
    for start, end in lines_with(text, ("/p:", "sqlplus"), FLAG_ANCHOR):
        for m in matches(TOOL_RE, text[start:end]):
            stop = COMMAND_END.search(text, start + m.end(), end)
            for s, e in _command_values(text, m.group("tool"), start + m.end(), stop.start() if stop else end):
                yield "command_password", s, e


def argv_credentials(argv: list[str]) -> list[tuple[int, int, int]]:
    """(item, start, end) of each credential in a command given as an argument list
    (`["mysql", "-uroot", "-pX"]`): the words read as one command line."""
    joined = " ".join(argv)
    starts, pos = [], 0
    for item in argv:
        starts.append(pos)
        pos += len(item) + 1
    found = []
    for _, s, e in command_credentials(joined):
        i = max(k for k, at in enumerate(starts) if at <= s)
        if e <= starts[i] + len(argv[i]):
            found.append((i, s - starts[i], e - starts[i]))
    return found


# --- what a value looks like -----------------------------------------------------------------------

UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
HEX = re.compile(r"[0-9a-fA-F]+")
DIGIT = re.compile(r"\d")
LETTER = re.compile(r"[A-Za-z]")
HASH_PREFIX = re.compile(r"(?i)(?:sha\d*|md5|blake2b?|xxh\d*|crc32|sha3-\d+)[-:_=]")
LETTER_RUNS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
VOWELS = frozenset("aeiouAEIOU")


def random_looking(value: str) -> bool:
    """Letters and digits mixed the way random text mixes them, not the way names do.

    Names have long letter runs with vowels in them (`sha256_hexdigest_of_the_file`,
    `RelWithDebInfo2`); random text has short runs and one letter in five a vowel.
    """
    if not DIGIT.search(value) or not LETTER.search(value):
        return False
    if UUID.fullmatch(value) or HASH_PREFIX.match(value):
        return False
    runs = LETTER_RUNS.findall(value)
    letters = sum(map(len, runs))
    if letters >= 8:
        vowels = sum(c in VOWELS for r in runs for c in r) / letters
        if vowels >= 0.3 and letters / len(runs) >= 3:
            return False
    return entropy(value) >= 3.0


def entropy(value: str) -> float:
    """Shannon entropy per character (detect-secrets' measure, over the value's own characters)."""
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in (value.count(ch) for ch in set(value)))


PRINTABLE = frozenset(range(32, 127)) | {9, 10, 13}


@lru_cache(maxsize=1024)
def decoded_text(value: str) -> str | None:
    """The text a base64 value decodes to, when it decodes to printable text; else None."""
    core = value.rstrip("=")
    if len(core) < 12 or len(value) % 4 and "=" in value:
        return None
    padded = core + "=" * (-len(core) % 4)
    try:
        raw = base64.b64decode(padded, altchars=b"-_" if ("-" in core or "_" in core) else None, validate=True)
    except (binascii.Error, ValueError):
        return None
    if not raw or sum(b in PRINTABLE for b in raw) < len(raw) * 0.95:
        return None
    return raw.decode("ascii", "replace")


# --- values after secret words, random tokens after a key word or `=` ------------------------------

# A password-like value after a password word, mid-sentence too, in any case (matched on the
# lower-cased text, whose offsets are the text's own). `pass` alone is a test verdict; `pin` a version.
PASSWORD_VALUE = re.compile(
    r"(?:pass(?:word|wd|phrase|code)|pwd|pw|secret)s?"
    r"(?P<sep>[\"'`\]]?[ \t]*(?:[:=]|:=|=>|->)[ \t]*|[ \t]+(?:is|was|set to|=)[ \t]+)"
    r"[\"'`]?(?P<value>[^\s\"'`,;&<>(){}\[\]]{4,128})"
)
PASSWORD_SYMBOLS = frozenset("0123456789!@#$%^&*+=?~")
CODE_LIKE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
# The word a token follows: a key, token, secret, bearer or password word, then `is`, `:` or `=`.
TOKEN_WORD = re.compile(
    r"(?<![a-z0-9])(?<!public[ _-])(?<!pub)(?P<word>(?:api|access|secret|private|client|signing|master|app|license|service)?[ _-]?key"
    r"|token|secret|bearer|password|passwd|pwd|pw|passphrase|credentials?|apikey|auth)s?[\"'`\]]?"
    r"(?:[ \t]+(?:is|was|to|of|as|for \w+ is))?[ \t]*(?:[:=]|:=|=>|->)?[ \t]*[\"'`]?$"
)
TOKEN_WORD_WINDOW = 48
TOKEN_WORD_HINT = re.compile("key|token|secret|bearer|pass|pw|cred|auth")
RUN_END = re.compile(rb"[^a]")
DOTTED = frozenset(string.ascii_letters + string.digits + "_-.")
TOKEN_MIN = 16  # shorter values after `token` are counts, flags and ids
EQ_TOKEN_MIN = 24  # after a bare `=` a value needs more length to read as a key
CREDENTIAL_PAIR = re.compile(r"[\w.@+-]{1,64}:(?P<password>[^\s:]{4,128})")
PAIR_PASSWORD = re.compile(r"(?=.*[A-Za-z])(?=.*[\d!@#$%^&*+=?~]).{6,}")


def password_values(text: str, lower: str) -> Iterator[tuple[str, int, int]]:
    for m in _words_at(PASSWORD_VALUE, lower, ("pass", "pw", "secret")):
        if m.start() and lower[m.start() - 1].isalnum():
            continue  # `pwd` in `oldpwd`, `secret` in `nosecret`
        start, value = m.start("value"), text[m.start("value"):m.end("value")]
        if "\\" in value:
            cut = ESCAPED_BREAK.search(value)
            value = value[: cut.start()] if cut else value
        value = value.rstrip(".:!?")
        if len(value) < 4 or REFERENCE.match(value) or value.lower() in PLACEHOLDER_VALUES:
            continue
        if value.startswith(("/", "~", "./", "[")) or set(value) <= set("*x.X-_") or CODE_LIKE.fullmatch(value):
            continue
        if value.isdigit() and len(value) < 6:
            continue
        if not any(c in PASSWORD_SYMBOLS for c in value) or not any(c.isalpha() for c in value) and not value.isdigit():
            continue
        yield "keyword_secret", start, start + len(value)


def _words_at(pattern: re.Pattern[str], lower: str, words: tuple[str, ...]) -> Iterator[re.Match[str]]:
    """`pattern` matched where one of its opening `words` stands: literal finds instead of a scan."""
    for word in words:
        pos = lower.find(word)
        while pos != -1:
            m = pattern.match(lower, pos)
            if m:
                yield m
            pos = lower.find(word, pos + 1)


def token_runs(runs: bytes, min_len: int) -> Iterator[tuple[int, int]]:
    """(start, end) of every run of token characters at least `min_len` long (`runs`: RUN_TABLE'd text)."""
    needle = b"a" * min_len
    pos = runs.find(needle)
    while pos != -1:
        m = RUN_END.search(runs, pos + min_len)
        end = m.start() if m else len(runs)
        yield pos, end
        pos = runs.find(needle, end)


def _pieces(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """A run cut at each inner `=` (`--password=X` is a key and a value), leading dashes and slashes off."""
    pos = start
    while pos < end:
        eq = text.find("=", pos, end)
        after = eq
        while after != -1 and after < end and text[after] == "=":
            after += 1
        stop, nxt = (end, end) if eq == -1 or after == end else (eq, after)  # trailing `=` is padding
        s = pos
        while s < stop and text[s] in "-/+_":
            s += 1
        if stop - s >= TOKEN_MIN:
            yield s, stop
        pos = nxt


def token_values(text: str, lower: str, runs: bytes, inner) -> Iterator[tuple[str, int, int]]:
    """Random-looking tokens after a key word or `=`, and base64 that decodes to a credential.

    `inner(decoded)` says whether a decoded text holds a secret (the caller's own detectors).
    """
    if TOKEN_RUN_NEEDLE not in runs:
        return
    for run_start, run_end in token_runs(runs, TOKEN_MIN):
        if run_end - run_start >= 200:
            continue  # a blob: the blob rule replaces it whole
        run = text[run_start:run_end]
        if not DIGIT.search(run) and (run.islower() or run.isupper()):
            continue  # a path or a name: neither random (no digit) nor base64 (one case)
        for s, e in _pieces(text, run_start, run_end):
            while s > 1 and text[s - 1] == "." and text[s - 2] in DOTTED:
                s -= 1  # a dotted token (`abc.atlasv1.xyz`) is one value
                while s > 0 and text[s - 1] in DOTTED and text[s - 1] != ".":
                    s -= 1
            value = text[s:e]
            before = text[max(0, s - 2):s]
            eq = before.endswith("=") or before[:1] == "=" and before[1:] in "\"'"
            window = lower[max(0, s - TOKEN_WORD_WINDOW):s]
            word = None
            if not eq and TOKEN_WORD_HINT.search(window):
                word = TOKEN_WORD.search(lower, max(0, s - TOKEN_WORD_WINDOW), s)
            if not (eq or word) and (value.islower() or value.isupper() or len(value) % 4 and value[-1] != "="):
                continue  # no key before it, and not base64 of anything
            decoded = decoded_text(value)
            if decoded is not None:
                if _credential(decoded, inner):
                    yield "encoded_secret", s, e
                continue  # base64 of ordinary text
            if not (eq or word) or not random_looking(value):
                continue
            if word:
                plain_key = word.group("word").strip(" _-") == "key"
                if not (plain_key and HEX.fullmatch(value)):
                    yield "entropy_token", s, e
            elif _eq_token(value):
                yield "entropy_token", s, e


def _eq_token(value: str) -> bool:
    if HEX.fullmatch(value):
        return False  # a checksum, a digest, a commit
    cased = any(c.isupper() for c in value) and any(c.islower() for c in value)
    return len(value) >= EQ_TOKEN_MIN and cased or len(value) >= 32 and entropy(value) >= 4.2


def _credential(decoded: str, inner) -> bool:
    pair = CREDENTIAL_PAIR.fullmatch(decoded.strip())
    if pair and PAIR_PASSWORD.fullmatch(pair.group("password")):
        return True  # `user:password`, the docker and basic-auth blob
    return inner(decoded)


# --- URLs: webhook tokens, tokens as user names ------------------------------------------------------

URL = re.compile(r"://(?P<host>[^\s/?#\"'<>`@]+@)?[^\s/?#\"'<>`]*(?P<path>/[^\s\"'<>`]*)?")
WEBHOOK_PATH = re.compile(r"(?i)/(?:api/)?(?:web)?hooks?(?:b2)?/|/IncomingWebhook/|/triggers?/")
QUERY_SECRET = re.compile(
    r"[?&](?:sig|signature|x-amz-signature|x-goog-signature|x-amz-security-token|access_token|api_key|apikey"
    r"|key|token|secret|client_secret|password|auth|code)=(?P<value>[^\s&#\"'<>`]{8,})",
    re.I,
)
URL_USER = re.compile(r"(?P<user>[^\s:/?#@\"'<>`]{12,}):?@")


def url_tokens(text: str) -> Iterator[tuple[str, int, int]]:
    for m in matches(URL, text):
        if m.group("host"):
            u = URL_USER.match(text, m.start("host"))
            if u and random_looking(u.group("user")):
                yield "url_token", u.start("user"), u.end("user")
        path = m.group("path")
        if not path:
            continue
        hook = WEBHOOK_PATH.search(path)
        if hook:
            rest_start = m.start("path") + hook.end()
            rest = text[rest_start:m.end("path")].split("?")[0].split("#")[0].rstrip("/.,)")
            pos = 0
            for seg in re.split(r"([/@])", rest):
                if len(seg) > 1 and (random_looking(seg) or UUID.fullmatch(seg)):  # Teams: tenant@group ids
                    yield "webhook_token", rest_start + pos, rest_start + len(rest)  # from the first token on
                    break
                pos += len(seg)
        for q in QUERY_SECRET.finditer(text, m.start("path"), m.end("path")):
            value = q.group("value").rstrip(".,)")
            if random_looking(value) or len(value) >= 24 and entropy(value) >= 3.5:
                yield "url_token", q.start("value"), q.start("value") + len(value)


def generic_spans(text: str, lower: str, runs: bytes, inner, hints: int = ALL) -> Iterator[tuple[str, int, int]]:
    """Every span the provider-independent rules find in `text` (`lower`: its ASCII lower case); `hints`:
    the families `prefilter.hints` let run."""
    if hints & COMMAND:
        yield from command_credentials(text)
    if hints & PASSWORD:
        yield from password_values(text, lower)
    if hints & RANDOM:
        yield from token_values(text, lower, runs, inner)
    if hints & URL_FAMILY and "://" in text:
        yield from url_tokens(text)
    if hints & PROVIDER:
        yield from provider_rules(text, runs)
