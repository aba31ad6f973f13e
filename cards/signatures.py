"""Normalised error signatures: the same failure reads the same across sessions, hosts and machines.

`error_signature(text)` finds the failure in a tool output of any shape: a traceback's last line
wherever it sits (after `tail`, clipped, between progress bars, inside a Codex JSON result with
escaped newlines), compiler and linter diagnostics, panics, HTTP status lines, cluster and
container states, shell exits, CI lines a user pasted. Each kind of line has a rank and the most
specific one wins, so `OperationalError: database is locked` beats `Exit code 1`. Paths, numbers,
ids and quoted strings are masked, so two machines give one signature.
"""

from __future__ import annotations

import functools
import re

from memoir.cards.signals import (
    ERROR_CODE, ERROR_WORD_LOW, ERROR_WORDS, EXCEPTION_SUFFIXES, EXIT_LINE, NAMED_STATE, ZERO_SUMMARY,
    decode_output, exit_code, exit_in, failing_test,
)

MAX_SIGNATURE = 160
# Raw characters of a message kept, cut at a space: a tool that clips lines at 240 characters
# leaves at least this much after a prefix of up to 90, so clipped and whole lines agree.
MAX_MESSAGE = 150

# Line kinds, most specific last. The best kind present names the failure; within a kind the last
# line wins where the final line is the verdict (a traceback, `Caused by:`), the first where later
# lines cascade from it (a compiler's first error).
EXIT, WARNING, GENERIC, TEST, INFRA, DIAGNOSTIC, EXCEPTION = range(1, 8)

_ARITY = re.compile(r"[A-Za-z_][\w.]*[!?]?/\d{1,2}")
_MASKS = (
    # Paths vary by machine; an npm scoped package (`@rollup/rollup-linux-x64-gnu`) names the failure.
    # A function with its arity (`get/2`, `Phoenix.ConnTest.get/2` in Elixir and Erlang) is no path.
    (re.compile(r"(?:[A-Za-z]:)?(?:[\w.~-]*/)+[\w.-]+"), lambda m: m.group(0) if (
        m.string[m.start() - 1:m.start()] == "@" or _ARITY.fullmatch(m.group(0))) else "<path>"),
    (re.compile(r"\b[0-9a-f]{7,64}\b"), "<id>"),
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "<id>"),
    (re.compile(r"0x[0-9a-fA-F]+"), "<hex>"),
    (re.compile(r"\d+(?:\.\d+)*"), "<n>"),
    (re.compile(r"'[^'\n]{1,80}'|\"[^\"\n]{1,80}\""), "<str>"),
    (re.compile(r"\s+"), " "),
)

# --- exceptions, panics, Node error codes (EXCEPTION) ------------------------------------------------
# Found by its suffix (a literal scan), then read back to the start of its name: far cheaper than
# trying a name pattern at every capital letter.
_EXC_SUFFIX = re.compile(r"(?:" + "|".join(EXCEPTION_SUFFIXES) + r")(?![A-Za-z0-9_])")
_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_IDENT = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.$"
# What may stand before an exception name that still opens its line: pytest's `E`, Java's
# `Caused by:` / `Exception in thread "main"`, JS's `Uncaught`, a log's `[`, Elixir's `** (`.
_EXC_PREFIX = re.compile(
    r'(?:E|>|\[|\*\* \(|Caused by:|Exception in thread "[^"]*"|Uncaught(?: \(in promise\))?|'
    r"(?:error|ERROR|Error|FATAL|fatal|raised?):?)"
)
_BARE_EXCEPTION = re.compile(r"(?m)^[ \t]*(?:E[ \t]+)?Exception:[ \t]*(\S[^\n]*)")
# Node's `[ERR_X]: message`, and a line that opens with the code (`ERR_PNPM_OUTDATED_LOCKFILE  Cannot …`).
_NODE_CODE = re.compile(r"\[(ERR_[A-Z0-9_]+)\]:?[ \t]*([^\n]*)|^[ \t]*(ERR_[A-Z0-9_]{3,})\b:?[ \t]+([^\n]*)", re.M)
_PANIC = re.compile(r"(?m)^[ \t]*(panic|fatal error): ([^\n]+)")
_RUST_PANIC = re.compile(r"thread '[^'\n]*' panicked at ([^\n]*)(?:\n(?:[ \t]*\n)?[ \t]*([^\n]*))?")

# --- compiler, type-checker and linter diagnostics (DIAGNOSTIC) -------------------------------------
_RUST_ERR = re.compile(r"error\[(E\d{4})\]: ?([^\n]*)")
_TS_ERR = re.compile(r"(?m)(?:\berror |^[ \t]*)(TS\d{4,5}): ?([^\n]*)")
_MYPY = re.compile(r"(?m)^[^\s:][^\n:]*:\d+(?::\d+)?: error: ([^\n]*?)[ \t]+\[([a-z][\w-]*)\][ \t]*$")
_ESLINT = re.compile(r"(?m)^[ \t]*\d+:\d+[ \t]+error[ \t]+(\S[^\n]*?)[ \t]{2,}(@?[\w/-]+)[ \t]*$")
# --- HTTP, clusters, containers, the shell (INFRA) --------------------------------------------------
HTTP_REASONS = {
    400: "Bad Request", 401: "Unauthorized", 402: "Payment Required", 403: "Forbidden", 404: "Not Found",
    405: "Method Not Allowed", 406: "Not Acceptable", 408: "Request Timeout", 409: "Conflict", 410: "Gone",
    411: "Length Required", 412: "Precondition Failed", 413: "Payload Too Large", 414: "URI Too Long",
    415: "Unsupported Media Type", 422: "Unprocessable Entity", 429: "Too Many Requests",
    500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable",
    504: "Gateway Timeout",
}
# A bare "404" is a test's "got 404", not a status line: a code counts after `HTTP/x` or with its reason.
_HTTP_LINE = re.compile(r"HTTP/[\d.]+ ([45]\d\d)\b")
_HTTP_REASON = re.compile(
    r"\b([45]\d\d) (?:" + "|".join(sorted(set(HTTP_REASONS.values()) | {
        "Request Entity Too Large", "Content Too Large", "Unprocessable Content", "Server Error"})) + r")\b"
)
_HTTP_CURL = re.compile(r"returned error: ([45]\d\d)\b")
_HTTP_HINT = re.compile(r"[45]\d\d [A-Z]")  # one cheap pass before the reasons' long alternation
_K8S_HINTS = ("BackOff", "ErrImagePull", "OOMKilled", "Container", "InvalidImageName")
_DOCKER = re.compile(r"Error response from daemon: ([^\n]*)")
_NOT_FOUND = re.compile(
    r"(?m)(?:^|[\s:])([\w.+-]+): command not found\b(?!:)|command not found: ([\w.+-]+)|^sh: \d+: ([\w.+-]+): not found|"
    # make runs a recipe's program directly: a missing program is "No such file or directory", exit 127
    r"^make(?:\[\d+\])?: ([\w.+-]+): No such file or directory"
)
# An API's JSON error body: `{"statusCode":413,"code":"FST_ERR_CTP_BODY_TOO_LARGE",…,"message":"…"}`.
_JSON_ERROR_CODE = re.compile(r'"(?:code|errorCode|error_code)"\s*:\s*"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+){2,})"')
_JSON_MESSAGE = re.compile(r'"message"\s*:\s*"([^"\n]{1,200})"')
# A line that opens with `Error: …` (Node's generic Error, terraform's boxed diagnostics, CLIs).
_ERROR_HEADLINE = re.compile(r"(?m)^[ \t│╷|>]*Error: ([^\n]+)")
_SIGNAL = re.compile(r"\b(Segmentation fault|Bus error|Illegal instruction|Aborted \(core dumped\))")

# --- generic error lines (GENERIC) ------------------------------------------------------------------
# Scanned on the lowercased text without `\b` (a plain alternation is several times faster than an
# (?i) one with word boundaries); the boundaries are checked on the few hits.
MAX_ERROR_LINES = 64  # lines naming an error examined per output; the first that opens with one ends it
# Decoration before a line's message: a CI timestamp, `##[error]`, terraform's box, a marker.
_LEAD = re.compile(r"^(?:\d{4}-\d\d-\d\dT[\d:.]+Z?\s+)?(?:##\[error\])?[\s│╷╵|>✘✖×•*!-]*")
_LOCATION = re.compile(r"^(?:[A-Za-z]:)?[^\s:()]+(?:\(\d+,\d+\)|:\d+(?::\d+)?)[ \t]*[:-]?[ \t]*")
# A line that opens with the error (after `tool: file: ` prefixes) is an error; one with the word
# mid-prose ("logger.error(...)", "the error handler") only mentions it.
_STRONG_HEAD = re.compile(r"(?:[^\s:]+:[ \t]*)*[\W_]*(?:npm ERR!|E)?[\W_]*")



def mask(text: str) -> str:
    for pattern, repl in _MASKS:
        text = pattern.sub(repl, text)
    return text.strip()


_DOT_LEADER = re.compile(r"\.{4,}")  # pre-commit's "ruff......Failed": the dots are layout


def _message(raw: str) -> str:
    """The first MAX_MESSAGE chars of a message, cut at a space so a clipped line agrees, masked.

    A quote the cut left open is dropped with what follows: half a quoted string is not stable.
    """
    raw = raw.strip()
    if "...." in raw:
        raw = _DOT_LEADER.sub(" … ", raw)
    if len(raw) > MAX_MESSAGE:
        cut = raw.rfind(" ", 0, MAX_MESSAGE + 1)
        raw = raw[: cut if cut > MAX_MESSAGE // 2 else MAX_MESSAGE]
        text = mask(raw)
        opened = max(text.rfind('"') if text.count('"') % 2 else -1, text.rfind("'") if text.count("'") % 2 else -1)
        if opened > 0:
            text = text[:opened].rstrip(" ,:;([{")
        return text[:MAX_SIGNATURE].rstrip()
    return mask(raw)[:MAX_SIGNATURE].rstrip()


# Where a person's words resume after an error they quoted in a sentence ("… KeyError: 'user_id' from
# current_user after I logged in again", "… when I open /profile, any idea?"): the error is what it
# said, the rest is theirs, and two people never say it alike.
_CONNECTOR = (r"when|whenever|after|while|from|since|every time|each time|but|and then|if|once|"
              r"cuando|después|mientras|quand|après|lorsque|wenn|nachdem|sobald|když|wanneer|nadat|quando|depois")
_QUOTED_THEN_PROSE = re.compile(r"""^(?P<q>'[^'\n]{1,80}'|"[^"\n]{1,80}")(?=\s+(?:""" + _CONNECTOR + r")\s)", re.I)
_PROSE_RESUMES = re.compile(r"(?i)\s+(?:" + _CONNECTOR + r"|[-–—])\s|[?!;]|,\s|\.\s+[A-Z]|\s+(?:in|on) (?:the|my|our) ")
_PROSE_HEAD = re.compile(r"[^\W\d_]+(?:[ \t]+[^\W\d_]+)+")  # "I get", "al abrir el perfil sale": words only


def _own_message(message: str, head: str) -> str:
    """An exception's own message, not the words a person wrote around it: a quoted value followed by a
    connector is the value alone (`KeyError: 'user_id' from current_user …`); after a head of plain
    words (an error quoted in a sentence), the message ends where the sentence resumes."""
    quoted = _QUOTED_THEN_PROSE.match(message)
    if quoted:
        return quoted.group("q")
    if _PROSE_HEAD.fullmatch(head):
        resumes = _PROSE_RESUMES.search(message)
        if resumes and resumes.start() > 0:
            return message[:resumes.start()].rstrip(" .,:")
    return message


def _line_at(text: str, start: int, end: int) -> tuple[int, int]:
    return text.rfind("\n", 0, start) + 1, (text.find("\n", end) + 1 or len(text) + 1) - 1


def _exceptions(t: str) -> tuple[str, str]:
    """(last exception/panic signature, last warning signature): the final such line names the failure."""
    best, best_at, warning = "", -1, ""
    if any(name in t for name in EXCEPTION_SUFFIXES):
        taken = -1
        for m in _EXC_SUFFIX.finditer(t):
            begin = m.start()
            while begin and t[begin - 1] in _WORD:
                begin -= 1
            if begin == m.start() or not "A" <= t[begin] <= "Z":
                continue  # a bare `Error`, or `myError`: not an exception class name
            start, end = _line_at(t, begin, m.end())
            if start == taken:
                continue
            head = t[start:begin].rstrip(_IDENT).strip()
            at_start = not head or bool(_EXC_PREFIX.fullmatch(head))
            rest = t[m.end():end]
            kind = t[begin:m.end()]
            if rest.startswith(" [ERR_"):
                continue  # Node's `TypeError [ERR_X]: …`: the code is the specific part, taken below
            if head.endswith("** (") and rest.startswith(")"):
                message = rest[1:]  # Elixir: ** (RuntimeError) message
            elif rest.startswith(":") and (at_start or rest[1:].strip()):
                message = rest[1:]
            elif not rest.strip() and at_start:
                message = ""
            else:
                continue  # `raise ValueError(...)`, `except ValueError:`, prose naming an exception
            message = _own_message(message.strip(), head)
            if head.endswith("[") and message.endswith("]"):
                message = message[:-1]
            taken = start
            sig = f"{kind}: {_message(message)}".rstrip(": ")
            if kind.endswith("Warning"):
                warning = sig
            elif begin > best_at:
                best, best_at = sig, begin
    if "Exception:" in t:
        for m in _BARE_EXCEPTION.finditer(t):
            if m.start() > best_at:
                best, best_at = f"Exception: {_message(m.group(1))}", m.start()
    if "ERR_" in t:
        for m in _NODE_CODE.finditer(t):
            if m.start() > best_at:
                code, message = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
                best, best_at = f"{code}: {_message(message)}".rstrip(": "), m.start()
    if "panic" in t or "fatal error" in t:
        for m in _PANIC.finditer(t):
            if m.start() > best_at:
                kind = "panic" if m.group(1) == "panic" else "fatal"
                best, best_at = f"{kind}: {_message(m.group(2))}", m.start()
        for m in _RUST_PANIC.finditer(t):
            if m.start() > best_at:
                where, after = m.group(1), m.group(2) or ""
                # Rust >= 1.73 prints `panicked at src/x.rs:1:2:` and the message on the next line
                # (a build script's, indented after a blank line).
                message = after if where.endswith(":") else where.rsplit("', ", 1)[0].strip("'")
                best, best_at = f"panicked: {_message(message)}", m.start()
    return best, warning


def _first(found: list[tuple[int, str]]) -> str:
    return min(found)[1] if found else ""


def _last(found: list[tuple[int, str]]) -> str:
    return max(found)[1] if found else ""


def _diagnostics(t: str, lines: list[tuple[int, str, bool]]) -> str:
    """The first compiler/type-checker/linter diagnostic with a code: later ones often cascade from it."""
    found: list[tuple[int, str]] = []
    if "error[" in t:
        found += [(m.start(), f"{m.group(1)}: {_message(m.group(2))}") for m in _RUST_ERR.finditer(t)]
    if "TS" in t:
        found += [(m.start(), f"{m.group(1)}: {_message(m.group(2))}") for m in _TS_ERR.finditer(t)]
    if ": error: " in t and "]" in t:
        found += [(m.start(), f"{m.group(2)}: {_message(m.group(1))}") for m in _MYPY.finditer(t)]
    if "error  " in t:
        found += [(m.start(), f"{m.group(2)}: {_message(m.group(1))}") for m in _ESLINT.finditer(t)]
    if not found:
        for at, line, strong in lines:
            # "error computing SHA256" names no code; pytest's `ERROR tests/x.py` is a failing test
            code = ERROR_CODE.search(line) if strong and not failing_test(line) else None
            if code:
                after = line[code.end():]
                message = after[1:] if after.startswith(":") else line
                found.append((at, f"{code.group(1)}: {_message(message)}"))
                break
    return _first(found)


def _infra(t: str) -> str:
    """The last HTTP error status, cluster state, daemon error, missing command or fatal signal."""
    found: list[tuple[int, str]] = []
    for pattern, hint in ((_HTTP_LINE, "HTTP/" in t), (_HTTP_CURL, "returned error" in t),
                          (_HTTP_REASON, bool(_HTTP_HINT.search(t)))):
        for m in pattern.finditer(t) if hint else ():
            code = int(m.group(1))
            found.append((m.start(), f"HTTP {code} {HTTP_REASONS.get(code, '')}".rstrip()))
    if any(h in t for h in _K8S_HINTS):
        found += [(m.start(), m.group(1)) for m in NAMED_STATE.finditer(t)]
    if "Error response from daemon" in t:
        found += [(m.start(), f"docker: {_message(m.group(1))}") for m in _DOCKER.finditer(t)]
    if "command not found" in t or ": not found" in t or ("make" in t and "No such file or directory" in t):
        found += [(m.start(), f"command not found: {m.group(1) or m.group(2) or m.group(3) or m.group(4)}")
                  for m in _NOT_FOUND.finditer(t)]
    if "Segmentation fault" in t or "Bus error" in t or "Illegal instruction" in t or "core dumped" in t:
        found += [(m.start(), m.group(1)) for m in _SIGNAL.finditer(t)]
    if found:
        return _last(found)
    if "Error: " in t:
        # The first `Error:` headline names the failure; later ones are usually its consequences.
        for m in _ERROR_HEADLINE.finditer(t):
            if not EXIT_LINE.search(m.group(1).lower()):  # CI's "Error: Process completed with exit code 1"
                return f"Error: {_message(m.group(1))}"
    return ""


def _json_error(raw: str) -> str:
    """The code and message of an API's JSON error body, read from the raw text (keys kept)."""
    if '"code"' not in raw and "rror_code" not in raw and '"errorCode"' not in raw:
        return ""
    m = _JSON_ERROR_CODE.search(raw)
    if not m:
        return ""
    message = _JSON_MESSAGE.search(raw, max(0, m.start() - 300), min(len(raw), m.end() + 300))
    return f"{m.group(1)}: {_message(message.group(1))}" if message else m.group(1)


def _test_failure(t: str) -> str:
    """The first failing test named by go test, pytest, jest, cargo, ExUnit or a `✗`/`✕` mark."""
    m = failing_test(t)
    if not m:
        return ""
    if m.group("py"):
        # pytest node ids differ by checkout root; the file's name and the test's do not.
        node = m.group("py")
        path, sep, name = node.partition("::")
        label = "FAIL" if m.group("py_kind") == "FAILED" else "ERROR"
        return f"{label}: {path.rsplit('/', 1)[-1]}{sep}{name}"
    if m.group("ex"):
        return f"FAIL: {m.group('ex_mod')}: {_message(m.group('ex'))}"
    if m.group("mark"):
        return f"FAIL: {_message(m.group('mark'))}"
    name = m.group("go") or m.group("rs") or m.group("js").rsplit("/", 1)[-1]
    return f"FAIL: {name}"


def _error_lines(t: str, low: str) -> list[tuple[int, str, bool]]:
    """Lines that name an error, up to the first that opens with one: (offset, text, opens with it)."""
    if not any(h in low for h in ERROR_WORDS):
        return []
    out: list[tuple[int, str, bool]] = []
    taken, size = -1, len(low)
    for m in ERROR_WORD_LOW.finditer(low):
        s, e = m.start(), m.end()
        if (s and low[s - 1] in _WORD) or (e < size and low[e] in _WORD):
            continue  # `error_handler.py`, `ErrorBoundary`: part of a name
        start, end = _line_at(t, s, e)
        if start == taken:
            continue
        taken = start
        line = t[start:end]
        if ZERO_SUMMARY.search(line) or exit_in(low[start:end], line) is not None:
            continue  # a passing summary, or an exit line (ranked below every other kind)
        lead = _LEAD.match(line)
        body = line[lead.end() if lead else 0:]
        loc = _LOCATION.match(body)
        body = body[loc.end():] if loc else body
        strong = bool(_STRONG_HEAD.fullmatch(line[: s - start]))
        out.append((start, body.strip(), strong))
        if strong or len(out) >= MAX_ERROR_LINES:
            break
    return out


# An exception whose message only points at errors printed before it.
_WRAPPER_MESSAGE = re.compile(r"(?i)errors have been logged|see (?:the )?(?:errors? )?above|compilation failed")


# PowerShell's error record: its message is in the user's language, its category and error id are
# not ("+ CategoryInfo : ParserError: (:) [], …" then "+ FullyQualifiedErrorId : InvalidEndOfLine").
_PS_RECORD = re.compile(r"(?m)^[ \t]*\+ CategoryInfo[ \t]*:[ \t]*(?P<category>\w+)[ \t]*:[^\n]*\n"
                        r"[ \t]*\+ FullyQualifiedErrorId[ \t]*:[ \t]*(?P<id>[\w.-]+)")


@functools.lru_cache(maxsize=8192)
def _analyse(text: str) -> tuple[int, str, bool]:
    """(kind of the best failure line, its signature, whether it is an error rather than a mention)."""
    if not text:
        return 0, "", False
    t, code = decode_output(text)
    if "FullyQualifiedErrorId" in t and (record := _PS_RECORD.search(t)):
        return EXCEPTION, f"{record['category']}: {record['id']}", True
    exception, warning = _exceptions(t)
    low = t.lower()
    if len(low) != len(t):  # a few characters lowercase to two; keep offsets shared
        low = "".join(c if len(c.lower()) != 1 else c.lower() for c in t)
    if exception:
        if _WRAPPER_MESSAGE.search(exception):
            # "cannot compile module X (errors have been logged)": the logged error is what failed.
            detail = next((b for _, b, strong in _error_lines(t, low) if strong and not _WRAPPER_MESSAGE.search(b)), "")
            if detail:
                detail = re.sub(r"(?i)^(?:error|fatal)\s*:\s*", "", detail)
                return EXCEPTION, f"{exception.split(':', 1)[0]}: {_message(detail)}", True
        return EXCEPTION, exception, True
    lines = _error_lines(t, low)
    sig = _diagnostics(t, lines)
    if sig:
        return DIAGNOSTIC, sig, True
    sig = _json_error(text) or _infra(t)
    if sig:
        return INFRA, sig, True
    sig = _test_failure(t)
    if sig:
        return TEST, sig, True
    if lines:
        # The first line that opens with the error; a line that only mentions one is a last resort.
        at, body, strong = next((x for x in lines if x[2]), lines[0])
        return GENERIC, _message(body), strong
    if warning:
        return WARNING, warning, False
    exit_code = code if code is not None else exit_in(low, t)
    if exit_code:
        return EXIT, f"exit code {exit_code}", True
    return 0, "", False


@functools.lru_cache(maxsize=8192)  # segmenting, drafting and the rules all ask about the same turns
def error_signature(text: str) -> str:
    """Exception type + message with paths, numbers and ids masked; '' when nothing looks like an error.

    The most specific kind of line wins (exception > coded diagnostic > HTTP/cluster/shell >
    failing test > error line > warning > exit status); among exceptions the last line wins, as
    in a traceback.
    """
    return _analyse(text)[1]


def is_error_output(text: str) -> bool:
    """True when the output reports a failure: an error line, failing test or non-zero exit, not a mention."""
    kind, _sig, strong = _analyse(text)
    if kind >= TEST or (kind == GENERIC and strong):
        return True
    return bool(exit_code(text))


# A signature's placeholders read back as what they stood for, so its line can be found in the log.
_PLACEHOLDER = re.compile(r"<(?:str|path|id|hex|n)>")
_READS_AS = {
    "<path>": r"(?:[A-Za-z]:)?(?:[\w.~-]*/)+[\w.-]+",
    "<id>": r"[0-9a-fA-F-]{7,64}",
    "<hex>": r"0x[0-9a-fA-F]+",
    "<n>": r"\d+(?:\.\d+)*",
    "<str>": r"'[^'\n]{1,200}'|\"[^\"\n]{1,200}\"",
}
MAX_SHOWN = 160


@functools.lru_cache(maxsize=1024)
def _shown_pattern(signature: str) -> re.Pattern[str] | None:
    parts = _PLACEHOLDER.split(signature)
    if len(parts) == 1:
        return None  # nothing masked: the signature is the line as shown
    holes = _PLACEHOLDER.findall(signature)
    pattern = ""
    for i, part in enumerate(parts):
        pattern += r"\s+".join(re.escape(w) for w in part.split(" ")) if part else ""
        if i < len(holes):
            pattern += f"(?:{_READS_AS[holes[i]]})"
    return re.compile(pattern)


def shown_error(text: str, signature: str) -> str:
    """The signature's line as the log shows it, with the quoted names, paths and numbers its mask
    hid (`Cannot find name 'Blob'`, not `Cannot find name <str>`): a reader recognises the error by
    them. The signature stays the key cards are matched on; `text` is already sanitized."""
    if "FullyQualifiedErrorId" in text and (record := _PS_RECORD.search(text)) \
            and signature == f"{record['category']}: {record['id']}":
        # The message, in the user's language: the nearest line above that is no `+` echo of the
        # command and no location (`At line:1 char:41`, `所在位置 行:1 字符: 41`, which end in a number).
        above = [line.strip() for line in text[:record.start()].splitlines()[-8:]]
        said = next((line for line in reversed(above) if line and not line.startswith("+") and not line[-1].isdigit()), "")
        return f"{record['category']}: {said}" if said else signature
    pattern = _shown_pattern(signature)
    if pattern is None or not text:
        return signature
    found, kind = pattern.search(text), ""
    if found is None and ": " in signature:  # a kind named apart from its line (`CompileError: ` + `error: …`)
        kind, _, message = signature.partition(": ")
        pattern = _shown_pattern(message)
        found = pattern.search(text) if pattern is not None else None
    if found is None:
        return signature
    shown = f"{kind}: " * bool(kind) + " ".join(found.group(0).split())
    return shown if len(shown) <= MAX_SHOWN else shown[:MAX_SHOWN - 1].rsplit(" ", 1)[0] + "…"


# A line a tool writes to explain itself: a sentence of words, not a frame, a code line or a table.
_PROSE_LINE = re.compile(r"^[A-Z][^\n|│{}<>=]{30,}$")
_NOT_PROSE = re.compile(r"^(?:at |File \"|Traceback|Caused by|Error|Hint: run|Usage:|Run |To fix)|\bline \d+\b|\(\S+:\d+")
MAX_EXPLAINED = 220
_FIRST_SENTENCE = re.compile(r".+?\.(?=\s+[A-Z]|$)")


def explained(text: str, signature: str) -> str:
    """The sentence a tool printed right after its error line to say why ("The JSONL file has been
    updated (e.g., after 'git pull') but the database hasn't been imported yet."): the cause in the
    tool's own words, which a fix line alone leaves out. '' when the next line is no such sentence."""
    pattern = _shown_pattern(signature) or re.compile(re.escape(signature))
    found = pattern.search(text)
    if found is None:
        return ""
    rest = text[text.find("\n", found.end()) + 1:] if "\n" in text[found.end():] else ""
    lines = [line.strip() for line in rest[:1000].splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    said: list[str] = []
    for line in lines[:3]:
        if not line or not _PROSE_LINE.match(line) and not said or _NOT_PROSE.search(line):
            break
        said.append(line)
        if line.endswith("."):
            break
    sentence = " ".join(said)
    first = _FIRST_SENTENCE.match(sentence)
    sentence = first.group(0) if first else sentence
    if not sentence.endswith(".") or len(sentence.split()) < 6 or len(sentence) > MAX_EXPLAINED:
        return ""
    return sentence
