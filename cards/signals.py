"""The failure vocabulary: what in a tool output reads as a failure, a pass, an error line, a
failing test, an exit code; which command is a check. One home for every stage that asks.

Signatures (`cards.signatures`), verdicts (`cards.verdicts`), commands, outcomes, segmentation,
the rule stage, the host readers and the recall query rewrite all read these patterns; none keeps
a list of its own. Where the stages' old lists disagreed, the union was chosen on purpose:

- error codes: `ERROR` in `ERROR: build broke` names the failure (the rules said so, signatures
  did not); a failing-test line is still read as a test, not as a code.
- failing tests: pytest `FAILED`/`ERROR node`, go `--- FAIL:`, jest `FAIL file`, cargo
  `test x ... FAILED`, ExUnit `1) test … (Mod)` and the `✗`/`✕` marks of jest, mocha and bats.
- error words: those of signatures, the query rewrite and the Aider reader together (`unable`,
  `denied`, `refused`, `timed out`, `can't`, `failure`, `exception` joined `error`, `failed`, …).

Pure text in, values out; the patterns are compiled once at import.
"""

from __future__ import annotations

import functools
import json
import re

# --- decoding: JSON tool results, escaped newlines, carriage returns --------------------------------
HEAD_CHARS = 2048  # a long output keeps its head (a compiler's first error, a host's exit line)
TAIL_CHARS = 6144  # ... and its tail (a traceback's last line): 8 KB scanned at most
_JSON_TEXT_KEYS = ("output", "stdout", "stderr", "aggregated_output", "formatted_output", "content",
                   "text", "error", "message", "result")
_JSON_CODE_KEYS = ("exit_code", "exitCode", "returncode", "return_code")
_JSON_CODE = re.compile(r'"(?:exit_code|exitCode|returncode|return_code)"\s*:\s*(-?\d+)')
_UNESCAPES = (("\\r\\n", "\n"), ("\\n", "\n"), ("\\t", "\t"), ('\\"', '"'), ("\\\\", "\\"))


def _json_parts(obj: object, parts: list[str], depth: int = 0) -> int | None:
    """Collect the text fields of a JSON tool result into `parts`; return its exit code if it has one."""
    code = None
    if depth > 3:
        return None
    if isinstance(obj, str):
        parts.append(obj)
    elif isinstance(obj, list):
        for item in obj[:50]:
            c = _json_parts(item, parts, depth + 1)
            code = c if code is None else code
    elif isinstance(obj, dict):
        for key in _JSON_CODE_KEYS:
            value = obj.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                code = value
        for key in _JSON_TEXT_KEYS:
            if key in obj:
                c = _json_parts(obj[key], parts, depth + 1)
                code = c if code is None else code
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            c = _json_parts(meta, [], depth + 1)
            code = c if code is None else code
    return code


@functools.lru_cache(maxsize=8192)
def decode_output(text: str) -> tuple[str, int | None]:
    """(the output's text with real newlines, bounded to about 8 KB; its exit code if JSON gave one).

    Codex results are often `{"output":"…\\n…","metadata":{"exit_code":1}}`; a clipped one no
    longer parses, so escaped newlines are also undone by hand and the exit code found by regex.
    """
    code = None
    stripped = text.lstrip()
    if stripped[:1] in ("{", "[") and '"' in stripped[:40]:
        try:
            obj = json.loads(stripped)
        except (ValueError, RecursionError):  # a command may print `[[[[…` deeper than the parser goes
            obj = None
        if obj is not None:
            parts: list[str] = []
            code = _json_parts(obj, parts)
            if parts:
                text = "\n".join(p for p in parts if p)
    if code is None and stripped[:1] in ("{", "[") and (
            '"exit_code"' in text or '"exitCode"' in text or '"returncode"' in text):  # a clipped JSON result
        m = _JSON_CODE.search(text)
        code = int(m.group(1)) if m else code
    if "\\n" in text and text.count("\\n") > text.count("\n"):
        for escaped, real in _UNESCAPES:
            text = text.replace(escaped, real)
    if len(text) > HEAD_CHARS + TAIL_CHARS:
        text = f"{text[:HEAD_CHARS]}\n{text[-TAIL_CHARS:]}"
    if "\r" in text:  # progress bars redraw with \r: each redraw is a line of its own
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text, code


# --- exits ------------------------------------------------------------------------------------------
# On the lowercased text: `Exit code 1`, `exit status 1`, `Process exited with code 2`, CI's `Process
# completed with exit code 1`, `non-zero exit status 1`; and make's `*** [target] Error 2`.
EXIT_LINE = re.compile(r"exit(?:ed)?(?: with)? (?:code|status)[: ]\s*(-?\d+)")
MAKE_EXIT = re.compile(r"\*\*\* \[[^\]\n]*\] Error (\d+)")
EXIT_EDGE = 1500  # an exit line leads (Claude Code) or closes (a shell, make) an output


def exit_in(low: str, text: str) -> int | None:
    """The first non-zero exit code `low` (the lowercased `text`) reports, else 0 if one says 0, else None."""
    found = None
    if "exit" in low:
        for m in EXIT_LINE.finditer(low):
            value = int(m.group(1))
            if value:
                return value  # any failing exit decides; a later `exit 0` is a cleanup step
            found = value
    if "***" in text:
        m = MAKE_EXIT.search(text)
        if m and int(m.group(1)):
            return int(m.group(1))
    return found


@functools.lru_cache(maxsize=8192)
def exit_code(text: str) -> int | None:
    """The exit code an output reports (`Exit code 1`, `exit status 2`, JSON `exit_code`), if any."""
    t, code = decode_output(text)
    if code is not None:
        return code
    tail = max(0, len(t) - EXIT_EDGE)
    if not any(t.find(w, 0, EXIT_EDGE) >= 0 or t.find(w, tail) >= 0 for w in ("xit", "XIT", "***")):
        return None
    if len(t) > 2 * EXIT_EDGE:
        t = t[:EXIT_EDGE] + "\n" + t[-EXIT_EDGE:]
    return exit_in(t.lower(), t)


# --- names and codes of failures --------------------------------------------------------------------
EXCEPTION_SUFFIXES = ("Error", "Exception", "Exit", "Interrupt", "Warning", "Fault")
# `ValueError`, `SystemExit`, `KeyboardInterrupt`: a class name that names a failure.
NAMED_EXCEPTION = re.compile(r"[A-Za-z_]\w*(?:" + "|".join(EXCEPTION_SUFFIXES) + ")")
# An error code: `EACCES`, `E0308`, `TS2345`, `SC-1234`, and `ERROR` itself (`ERROR: build broke`).
ERROR_CODE = re.compile(r"\b(E[A-Z]{3,}|E\d{3,5}|TS\d{4}|[A-Z]{2,5}-?\d{3,5})\b")
# Cluster and container states that name a failure by themselves.
NAMED_STATES = ("CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "OOMKilled", "CreateContainerConfigError",
                "CreateContainerError", "InvalidImageName", "RunContainerError")
NAMED_STATE = re.compile(r"\b(" + "|".join(NAMED_STATES) + r")\b")
# The kinds of line a signature is named after when no class or code names it.
NAMED_KINDS = ("panic", "panicked", "fatal", "fatal error", "command not found", "Segmentation fault")
HTTP_STATUS = re.compile(r"HTTP [45]\d\d(?: [A-Z][\w ]+)?")


def is_error_code(word: str) -> bool:
    return bool(ERROR_CODE.fullmatch(word))


def names_failure(kind: str) -> bool:
    """Does a signature's kind (the part before `:`) name a failure: a class, a code, a known kind?"""
    return bool(NAMED_EXCEPTION.fullmatch(kind) or ERROR_CODE.fullmatch(kind) or kind in NAMED_KINDS
                or HTTP_STATUS.fullmatch(kind))


def is_named_state(signature: str) -> bool:
    """A state that names the failure on its own: `CrashLoopBackOff`, `HTTP 503 Service Unavailable`."""
    return bool(NAMED_STATE.fullmatch(signature) or HTTP_STATUS.fullmatch(signature))


# --- failing tests by name --------------------------------------------------------------------------
FAILING_TEST = re.compile(
    r"(?m)^[ \t]*--- FAIL: (?P<go>\S+)|^(?P<py_kind>FAILED|ERROR) (?P<py>[^\s]+?)(?: - |[ \t]*$)|"
    r"^[ \t]*FAIL[ \t]+(?P<js>\S+\.\w+)\b|^test (?P<rs>\S+) \.\.\. FAILED|"
    r"^[ \t]*\d+\) test (?P<ex>.+?) \((?P<ex_mod>[\w.]+)\)[ \t]*$|"
    r"(?:^|[ \t])[✗✕][ \t]+(?P<mark>[^\n]*?\S)(?:[ \t]+\(\d+(?:\.\d+)?[ \t]?m?s\))?[ \t]*$"
)
FAILING_TEST_HINTS = ("FAIL", "ERROR ", ") test ", "✗", "✕")


def _test_name(m: re.Match) -> str:
    if m.group("ex"):
        return f"{m.group('ex_mod')}: {m.group('ex')}"
    return m.group("go") or m.group("py") or m.group("js") or m.group("rs") or m.group("mark")


def failing_test(text: str) -> re.Match | None:
    """The first failing-test line of a decoded output, as a match of `FAILING_TEST`."""
    if not any(h in text for h in FAILING_TEST_HINTS):
        return None
    return FAILING_TEST.search(text)


@functools.lru_cache(maxsize=8192)
def failing_tests(text: str) -> frozenset[str]:
    """Every test an output names as failing (the node id, test name, file or marked line)."""
    t = decode_output(text)[0]
    if not any(h in t for h in FAILING_TEST_HINTS):
        return frozenset()
    return frozenset(_test_name(m) for m in FAILING_TEST.finditer(t))


# --- error lines ------------------------------------------------------------------------------------
# Words that make a line an error line (lowercased, checked at word boundaries).
ERROR_WORDS = ("error", "exception", "traceback", "failed", "failure", "fatal", "panic", "cannot", "can't",
               "unable", "not found", "no such", "denied", "refused", "timed out")
# A plain alternation on lowercased text, boundaries checked on the few hits: several times faster
# than an (?i) pattern with `\b`.
ERROR_WORD_LOW = re.compile("|".join(re.escape(w) for w in ERROR_WORDS))
ERROR_WORD = re.compile(r"(?i)\b(?:" + "|".join(re.escape(w) for w in ERROR_WORDS) + r")\b")
# "0 failed" / "0 errors" / "no errors" are a passing summary, not an error line.
ZERO_SUMMARY = re.compile(r"(?i)\b(?:0|no|zero|without) (?:failed|errors?|failures?)\b")
NON_ZERO_EXIT = re.compile(r"(?i)\bnon-zero exit|\bexit(?:ed with)? (?:code|status):? *[1-9]")
_EXCEPTION_WORD = re.compile(r"(?:" + "|".join(EXCEPTION_SUFFIXES[:2]) + r")\b")


def is_error_line(text: str) -> bool:
    """A line or clause that names an error: an error word or an error code."""
    return bool(ERROR_WORD.search(text) or ERROR_CODE.search(text))


def mentions_failure(text: str) -> bool:
    """An output that names a failure anywhere: an error word (not in `0 failed`), an exception
    class, a non-zero exit. Cheap and loose; `is_passing` decides when it also ends green."""
    if ZERO_SUMMARY.search(text):
        text = ZERO_SUMMARY.sub(" ", text)
    return bool(ERROR_WORD.search(text) or _EXCEPTION_WORD.search(text) or NON_ZERO_EXIT.search(text))


# Every failure `cards.signatures` can name holds one of these (lowercased): an output with none
# of them is no error output, and the full analysis is skipped (most tool output is file bodies).
# (A warning alone is no error output; an HTTP reason phrase follows its code.)
ERROR_GATE_WORDS = tuple(dict.fromkeys(
    ("fail", "err_", "interrupt", "fault", "exit", "backoff", "errimagepull", "oomkilled", "illegal instruction",
     "core dumped", "http/", "***", '"code"', "bad gateway", "service unavailable", "gateway timeout",
     "too large", "too many requests", "forbidden", "unauthorized", "bad request") + ERROR_WORDS))

# --- pass and fail summaries ------------------------------------------------------------------------
PASS_TAIL = 1024  # a verdict sits at the end of an output: its last lines decide
# Pass summaries as (substrings one of which every match holds, pattern or None when the substring
# is enough): a few `in` checks rule most outputs out before any regex runs.
_PASS_CHECKS = (
    (("test result: ok", "no issues found", "All checks passed", "Build succeeded", "BUILD SUCCESS",
      "Apply complete!", "ompiled successfully", "successfully rolled out", "✓", "✔", "200 OK"), None),
    ((" passed", " passing"), re.compile(r"\b[1-9]\d* pass(?:ed|ing)\b")),  # pytest, jest, vitest, mocha
    (("ok ", "ok\t"), re.compile(r"^ok[ \t]+\S+[ \t]+(?:\(cached\)|[\d.]+s)", re.M)),  # go test
    (("PASS",), re.compile(r"^PASS\b", re.M)),  # go test -v, jest
    ((" ok", " succeeded", " green"), re.compile(r"\b(\d+)/\1 [\w ]{0,30}?\b(?:ok|succeeded|green)\b")),
    (("0 error", "0 Error", "0 fail", "0 issue"), re.compile(r"\b0 (?:[Ee]rrors?|failures?|failed|issues)\b")),  # tsc, ExUnit, golangci-lint
    (("HTTP/",), re.compile(r"HTTP/[\d.]+ 2\d\d\b")),
    (("OK",), re.compile(r"\bOK \(\d+ tests?\)|\bRan \d+ tests? in [\d.]+s\s+OK\b|^[ \t]*2\d\d OK\b", re.M)),
    (("ll tests pass", "LL TESTS PASS"), None),
)
_FAIL_LITERALS = ("FAILED", "BUILD FAIL", "✗", "✕", "✘", "Traceback (most recent call last)", "error[")
_FAIL_LINE = re.compile(r"^[ \t]*FAIL\b", re.M)  # jest's `FAIL src/x.test.ts`, go's `FAIL\tpkg`
# After a count: `2 failed`, `1 errors`, and a tally of repeated runs (`uniq -c`: `2 FAIL`, `3 fail`).
_FAIL_WORDS = (" failed", " failing", " failure", " error", " FAIL", " fail")
# Every pass summary holds one of these in its last lines (lowercased); most outputs hold none.
PASS_ANCHORS = ("pass", " ok", "ok ", "ok\t", "\tok", "ok\n", "\nok", "ok.", "ok!", "(ok", "ok)", "succe", "complete",
                "✓", "✔", "0 error", "0 issue", "0 fail", "http/", "rolled out", "valid", "no issues", "all checks",
                "exit", "green")


def has_pass_summary(tail: str) -> bool:
    """A pass summary in an output's last lines: `5 passed`, `ok  pkg`, `test result: ok`, `Found 0 errors`."""
    for hints, pattern in _PASS_CHECKS:
        if any(h in tail for h in hints) and (pattern is None or pattern.search(tail)):
            return True
    return False


def _counted(tail: str, word: str) -> bool:
    """`word` (or its plural) right after a non-zero count: `2 failed`, `1 errors`; not `0 failed`, `2 error_x`."""
    at = tail.find(word)
    while at > 0:
        start, end = at, at + len(word)
        while start and tail[start - 1].isdigit():
            start -= 1
        end += tail[end:end + 1] == "s"
        after = tail[end:end + 1]
        whole = (not start or not tail[start - 1].isalnum()) and not (after.isalnum() or after == "_")
        if start < at and tail[start:at].lstrip("0") and whole:
            return True
        at = tail.find(word, at + len(word))
    return False


def has_fail_summary(tail: str) -> bool:
    """A failure summary in an output's last lines: `2 failed`, `FAILED`, `BUILD FAILED`, `✗`, a failing test."""
    if any(h in tail for h in _FAIL_LITERALS):
        return True
    if "FAIL" in tail and _FAIL_LINE.search(tail):
        return True
    if any(_counted(tail, w) for w in _FAIL_WORDS if w in tail):
        return True
    return failing_test(tail) is not None


_NOTABLE = re.compile(r"(?i)\b(?:passed|failed|ok\b|success|error|warning)")
_NOTABLE_WORDS = ("passed", "failed", "ok", "success", "error", "warning")  # each match holds one (lower case)


def is_notable_result(text: str) -> bool:
    """A result whose last lines report an outcome (worth a line of evidence)."""
    tail = text[-400:]
    if tail.isascii():  # a substring test first; under IGNORECASE `ſ` is an `s`, the Kelvin sign a `k`
        low = tail.lower()
        if not any(word in low for word in _NOTABLE_WORDS):
            return False
    return bool(_NOTABLE.search(tail))


# --- check commands ---------------------------------------------------------------------------------
# kubectl with the global flags that may stand before its verb (`kubectl -n ledger rollout status`).
KUBECTL = r"kubectl(?:\s+(?:-n|--namespace|--context|--kubeconfig)(?:=|\s+)\S+)*"
# At a command position (the start, or after `&&`, `;`, `|`), so a heredoc's text naming `pytest` is no run.
# An install told to change nothing (`pnpm install --frozen-lockfile`, `uv sync --locked`) checks that
# the lockfile matches the manifests, as CI does: it is a check, not a change.
_LOCKFILE_CHECK = (r"(?:npm|pnpm|yarn|bun|uv|poetry|bundle|composer) (?:install|i|sync|lock|check)\b[^;&|\n]*?"
                   r"--(?:frozen-lockfile|frozen|immutable|locked|check|lock)\b")
CHECK_COMMAND = re.compile(
    r"(?:^|[;&|('\"]\s*)(?:\./)?(?:pytest|py\.test|tox|nox|unittest|go (?:test|build|vet)|"
    r"cargo (?:test|build|check|clippy|nextest)|"
    r"(?:npm|pnpm|yarn|bun) (?:run )?(?:test|build|lint|typecheck|check|tsc)\b|"
    r"npm t\b|jest|vitest|mocha|mix (?:test|compile)|make(?:\s|$)|tsc\b|mypy|pyright|ruff|flake8|pylint|eslint|golangci-lint|"
    rf"{KUBECTL} (?:rollout status|wait)\b|helm (?:lint|template)|"
    r"gradle|gradlew|mvn|dotnet (?:test|build)|bazel (?:test|build)|ctest|rspec|phpunit|deno test|"
    r"terraform (?:plan|apply|validate)|docker (?:build|compose)|curl\b|"
    # A migration run (`manage.py migrate`, `go run ./cmd/x migrate up`, `npm run migrate`) reports
    # what it applied: the procedure worked, or it did not.
    r"(?!(?:echo|printf|git|grep|rg|cat|ls|man|which) )(?:[\w./:-]+ ){1,3}(?:migrate|db:migrate)(?:\s|$)|"
    + _LOCKFILE_CHECK + ")"
)
LOCKFILE_CHECK = re.compile(r"\b" + _LOCKFILE_CHECK)

# --- declined calls ---------------------------------------------------------------------------------
# The hosts' words for a tool call the user declined or interrupted: its result is no verdict.
DECLINED = ("The user doesn't want to proceed", "[Request interrupted", "Interrupted by user")


def is_declined(text: str) -> bool:
    return text.lstrip().startswith(DECLINED)


# Where an error points: `path/file.ext:12` (most compilers and linters) or `File "x.py", line 12`.
_PLACE = re.compile(r"(?<!//)(?<![\w.\-])([\w.\-]+\.[A-Za-z]{1,6}):(\d+)|File \"[^\"\n]*?([\w.\-]+)\", line (\d+)")  # not a URL's host
_ERROR_WORD = re.compile(r"(?i)error|exception|panic")
PLACE_LINES = 8  # an error's own place is on its line or in the few after it (a compiler's arrow, a first frame)


def error_places(output: str) -> set[tuple[str, int]]:
    """The (file name, line) each error of an output points at first: on its line or in the few after it.
    A change after which the check fails at a place the earlier error pointed at moved that error, it
    did not clear it: an undefined variable that becomes an undefined function on the same line is
    one problem, not two. Frames further from the error line (the test that called it) are no error's place."""
    lines = output[:20000].splitlines()
    out = set()
    for i, line in enumerate(lines):
        if not _ERROR_WORD.search(line):
            continue
        m = next((m for ln in lines[i:i + PLACE_LINES] if (m := _PLACE.search(ln))), None)  # a compiler's arrow
        if m is None:  # a trace's innermost frame comes just before its exception line (Python)
            m = next((m for ln in reversed(lines[max(0, i - PLACE_LINES):i]) if (m := _PLACE.search(ln))), None)
        if m is not None:
            out.add((m.group(1) or m.group(3), int(m.group(2) or m.group(4))))
    return out


def error_moved(earlier: str, later: str) -> bool:
    """Does an error in `later` point where one in `earlier` did (`error_places`)? Then the change between
    the two outputs moved that error; it did not clear it."""
    return bool(error_places(earlier) & error_places(later))
