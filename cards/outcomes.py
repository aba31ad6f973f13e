"""What a problem loop's turns show about its outcome: was the fix confirmed, and what made it fail.

Pure functions over ordered `Turn`s (a session or one experience), for every host:

- `is_passing` / `is_failing`: a tool output's verdict, from the pass and fail summaries of many
  tools (pytest, go test, cargo, jest/vitest, mocha, tsc, mypy, gradle, terraform, HTTP, …).
- `verification`: the re-run that confirmed a fix: a command that failed is run again after a
  change and now passes; else a passing test/build run after a change that follows the last failure.
- `failure_conditions`: the user's sentences that say when it fails ("only with --workers 6"),
  attempts that did not help (a change, then the same error again), and the error the fix removed.

A shell command is read from a tool call's text: `Bash {"command": …}` (Claude Code), `shell
{"command": ["bash", "-lc", …]}` / `exec_command {"cmd": …}` (Codex), or `Bash <command>`.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from memoir.cards.values import Turn, per_turns
from memoir.cards.signatures import decode_output, error_signature, exit_code, is_error_output

PASS_TAIL = 1024  # a verdict sits at the end of an output: its last lines decide
MAX_COMMAND = 200  # a command quoted on one line
MAX_CONDITIONS = 8
MAX_SENTENCE = 160

# --- verdicts ---------------------------------------------------------------------------------------
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
_FAIL_WORDS = (" failed", " failing", " failure", " error")  # after a count: `2 failed`, `1 errors`

# --- commands ---------------------------------------------------------------------------------------
_SHELL_TOOLS = frozenset({
    "run", "lint",  # Aider's /run, /test, ! and proposed commands
    "bash", "shell", "exec_command", "local_shell", "run_terminal_cmd", "run_command", "execute_command",
    "terminal", "run_shell_command", "shell_command", "container.exec",
})
_EDIT_TOOLS = frozenset({
    "edit", "multiedit", "write", "notebookedit", "apply_patch", "str_replace_editor",
    "str_replace_based_edit_tool", "create_file", "edit_file", "write_file", "replace", "insert",
})
_CLIPPED_COMMAND = re.compile(
    r'"(?:command|cmd)"\s*:\s*(?:\[\s*"(?:[\w/.-]*/)?(?:bash|sh|zsh|dash)"\s*,\s*"-l?c"\s*,\s*)?"((?:[^"\\]|\\.)*)'
)
_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
_UNESCAPES = (("\\n", "\n"), ("\\t", "\t"), ('\\"', '"'), ("\\\\", "\\"))
# A command that writes files or dependencies, or removes state (`rm x.db-journal` is an attempt too).
_CHANGE_CMD = re.compile(
    r"\bsed -i|\bperl -\w*i|\bpatch\b|\bapply_?patch\b|\bgit (?:apply|checkout|restore|reset|stash|revert|"
    r"cherry-pick|merge|rebase|pull|am)\b|(?<![<>0-9&])>>?[ \t]*(?!&|/dev/null)[\w./~-]+|\btee\b|"
    r"(?:^|[;&|(]\s*|\s)(?:rm|mv|cp|touch|mkdir|chmod|chown|ln|truncate|unlink)\s|"
    r"\b(?:pip3?|npm|pnpm|yarn|bun|uv|poetry|cargo|go|gem|bundle|brew|conda|apt(?:-get)?) "
    r"(?:install|add|remove|uninstall|get|update|upgrade|i|ci|sync|lock)\b|\bgo mod tidy\b|\bnpm ci\b"
)
_PATCH_FILE = re.compile(r"\*\*\* (?:Update|Add|Delete) File: (\S+)")
# At a command position (the start, or after `&&`, `;`, `|`), so a heredoc's text naming `pytest` is no run.
_TEST_OR_BUILD = re.compile(
    r"(?:^|[;&|('\"]\s*)(?:\./)?(?:pytest|py\.test|tox|nox|unittest|go (?:test|build|vet)|"
    r"cargo (?:test|build|check|clippy|nextest)|"
    r"(?:npm|pnpm|yarn|bun) (?:run )?(?:test|build|lint|typecheck|check|tsc)\b|"
    r"npm t\b|jest|vitest|mocha|mix (?:test|compile)|make(?:\s|$)|tsc\b|mypy|pyright|ruff|flake8|pylint|eslint|golangci-lint|"
    r"kubectl rollout status|helm (?:lint|template)|"
    r"gradle|gradlew|mvn|dotnet (?:test|build)|bazel (?:test|build)|ctest|rspec|phpunit|deno test|"
    r"terraform (?:plan|apply|validate)|docker (?:build|compose)|curl\b)"
)
# Wrapping that does not change what a command checks: `cd x &&`, `FOO=1`, `timeout 60`, `uv run`,
# `python -m`, and output plumbing (`2>&1`, `| tail -3`, `; echo $?`, `|| true`).
_PREFIX = re.compile(
    r"^\s*(?:cd\s+\S+\s*(?:&&|;)\s*|(?:export\s+)?[A-Za-z_]\w*=\S*\s+|timeout\s+\S+\s+|time\s+|nice\s+|env\s+|"
    r"(?:uv|poetry|pipenv|pdm|hatch|rye) run\s+|bundle exec\s+|npx\s+|bunx\s+|(?:pnpm|yarn) exec\s+|"
    r"(?:\S*/)?python[\d.]*\s+-m\s+)"
)
_SUFFIX = re.compile(
    r"\s*(?:2>&1|2>\s*/dev/null|>\s*/dev/null|\|&?\s*(?:tail|head|cat|less|grep|tee)\b[^|;&]*|"
    r";\s*echo\b[^|;&]*|\|\|\s*true)\s*$"
)
_NOISE_FLAG = re.compile(
    r"-[xqvsl]+|--tb=\w+|--maxfail=\d+|--color(?:=\w+)?|--no-header|-r[a-zA-Z]+|--disable-warnings|"
    r"-p\s*no:\S+|-?-count=\d+|--quiet|--verbose|--silent|--no-cov|--ff|--lf|--showlocals|--runInBand|"
    r"--watchAll=false|--no-watch|--reporter=\w+"
)
_FILE_NAME = re.compile(r"\.\w{1,5}$")
# Commands that only look (a search with no match exits 1): neither a failure nor a check.
_INSPECT = re.compile(
    r"(?:rg|grep|egrep|fgrep|ag|ack|find|fd|ls|cat|head|tail|less|more|wc|echo|printf|pwd|which|type|file|stat|"
    r"tree|du|df|ps|env|nl|sort|uniq|diff|jq|sed(?! -i)|awk|git (?:status|log|diff|show|branch|blame|grep|rev-parse|"
    r"remote|ls-files)|gh (?:run|pr|issue|repo) (?:list|view|status))(?:\s|$)"
)
_TWO_WORD_RUNNERS = frozenset({"go", "cargo", "npm", "pnpm", "yarn", "bun", "mix", "make", "dotnet", "bazel",
                               "terraform", "docker", "deno", "python", "python3", "node"})
_REJECTED = ("The user doesn't want to proceed", "[Request interrupted", "Interrupted by user")

# --- conditions in what the user said ---------------------------------------------------------------
# A sentence that says when the problem shows, on its own ("only fails with --workers 6") ...
_CONDITION = re.compile(
    r"(?i)\bwork(?:s|ed)?\s+(?:fine|ok|okay|well|perfectly|great)\s+(?:with|when|on|in|if|locally|before|under)\b|"
    r"\bwork(?:s|ed)\s+(?:with|when|on|if|locally|before|under)\b|"
    r"\bonly\s+(?:when|with|on|in|if|after|under|for|happens|fails|breaks|occurs|sometimes|once)\b|"
    r"\b(?:happens|fails|failing|breaks|crashes|occurs|hangs)\s+(?:only\s+|just\s+)?"
    r"(?:when|with|under|after|if|once|whenever)\b|\berrors?\s+(?:only\s+)?(?:when|whenever|once)\b|"
    r"\b(?:does\s*n[o']t|doesn't|never)\s+(?:happen|fail|break|occur)\b|"
    r"\b(?:intermittent(?:ly)?|flaky|randomly|occasionally|every\s+other|under\s+load)\b"
)
# ... or a context ("since I bumped X", "after upgrading", "on CI") in a sentence about the problem:
# a pasted spec's "after switching tools" is no condition.
_CONTEXT = re.compile(
    r"(?i)\bsince\s+(?:i|we|you|they)\s+\w+ed\b|\bsince\s+(?:upgrading|updating|bumping|switching|moving|"
    r"migrating|the\s+(?:upgrade|update|migration|bump|switch|deploy|merge|release))\b|"
    r"\bafter\s+(?:i\s+|we\s+)?(?:upgrading|updating|bumping|switching|moving|migrating|installing|enabling|"
    r"changing|adding|merging|deploying|upgraded|updated|bumped|switched|moved|changed|the\s+(?:upgrade|update|"
    r"migration|bump|deploy|merge))\b|"
    r"\b(?:on|in)\s+(?:CI|the\s+CI|GitHub\s+Actions|production|prod|staging|Windows|macOS|Linux|docker|"
    r"the\s+container|the\s+server)\b|\blocally\b|\bon\s+my\s+machine\b"
)
_PROBLEM = re.compile(
    r"(?i)\b(?:fail\w*|errors?|crash\w*|break\w*|broke|broken|bug|issue|wrong|hang\w*|lock(?:ed|s)?|slow|"
    r"time(?:s|d)?\s*out|timeout|shows?\s+up|started|appears|happens|red|exception|panic\w*|"
    r"does\s*n[o']t\s+work|not\s+working|stopped)\b"
)
_CONDITION_HINTS = ("work", "only", "happen", "fail", "break", "crash", "occur", "hang", "error", "since",
                    "after", " on ", " in ", "local", "machine", "never", "intermittent", "flaky", "random",
                    "occasional", "every other", "load")
_FENCE = re.compile(r"```.*?(?:```|$)", re.S)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_LOG_LINE = ("at ", "File \"", "Traceback", "E  ", "$ ", "> ", "[")


@dataclass(frozen=True, slots=True)
class Verification:
    """The run that confirmed a fix: a command that failed before passes after a change."""

    seq: int  # the passing result turn
    command_seq: int  # the tool call that ran it
    command: str  # the command, one line
    signature: str  # the error it cleared ('' when the failure named none)
    same_command: bool  # False: no failing command was re-run; a test/build run after the last change passed
    failed_seq: int  # the failing result (or pasted error) it cleared


@dataclass(frozen=True, slots=True)
class FailureCondition:
    """One short line on what made the problem appear."""

    seq: int
    text: str
    kind: str  # condition (the user said when) | attempt (a change that did not help) | error (what the fix removed)


# --- verdicts ---------------------------------------------------------------------------------------


def _has_pass_summary(tail: str) -> bool:
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


def _has_fail_summary(tail: str) -> bool:
    if any(h in tail for h in _FAIL_LITERALS):
        return True
    if "FAIL" in tail and _FAIL_LINE.search(tail):
        return True
    return any(_counted(tail, w) for w in _FAIL_WORDS if w in tail)


# Tools whose results are file bodies, listings or acknowledgements: no pass/fail verdict in them.
_NO_VERDICT_TOOLS = frozenset({
    "read", "glob", "grep", "ls", "edit", "multiedit", "write", "notebookedit", "notebookread", "todowrite",
    "todoread", "webfetch", "websearch", "web_search", "apply_patch", "str_replace_editor",
    "str_replace_based_edit_tool", "create_file", "edit_file", "write_file", "read_file", "view_image",
    "update_plan", "exitplanmode", "enterplanmode", "skill", "edit",
})


def may_hold_verdict(turn: Turn) -> bool:
    """Could this result say that a check passed or failed? Not a file read, an edit or a plan update."""
    return turn.kind in ("tool_result", "error") and turn.tool_name.lower() not in _NO_VERDICT_TOOLS


@functools.lru_cache(maxsize=8192)
def shows_failure_summary(text: str) -> bool:
    """A cheap verdict for hot loops: a failure summary or a non-zero exit, without reading error lines."""
    return _has_fail_summary(decode_output(text)[0][-PASS_TAIL:]) or (exit_code(text) or 0) != 0


# Every failure `cards.signatures` can name holds one of these (lowercased): an output with none
# of them is no error output, and the full analysis is skipped (most tool output is file bodies).
# (A warning alone is no error output; an HTTP reason phrase follows its code: `_HTTP_STATUS`.)
_ERROR_WORDS = ("error", "exception", "fail", "fatal", "panic", "traceback", "cannot", "not found", "no such",
                "exit", "interrupt", "fault", "backoff", "errimagepull", "oomkilled", "illegal instruction",
                "core dumped", "http/", "***", '"code"', "bad gateway", "service unavailable", "gateway timeout",
                "too large", "too many requests", "forbidden", "unauthorized", "bad request")


GATE_TAIL = 400  # the word gates read the last lines only; the summaries themselves read PASS_TAIL
ERROR_HEAD = 200  # a failure shows at the start (the command refused to run) or at the end of an output


@functools.lru_cache(maxsize=8192)
def _window(text: str) -> tuple[str, str]:
    """(the last lines, the first and last lines) of an output, lowercased once for the word gates.

    The gates only decide whether the full analysis runs: a verdict, or the error line an output
    piped through `tail` ends in, sits in its last few lines.
    """
    t = decode_output(text)[0]
    tail = t[-GATE_TAIL:].lower()
    return tail, tail if len(t) <= ERROR_HEAD + GATE_TAIL else t[:ERROR_HEAD].lower() + "\n" + tail


def _may_be_error(text: str) -> bool:
    low = _window(text)[1]
    return any(w in low for w in _ERROR_WORDS)


@functools.lru_cache(maxsize=8192)
def is_failing(text: str) -> bool:
    """A failure summary (`2 failed`, `FAILED`, `BUILD FAILED`, `✗`), a non-zero exit, or an error line
    in an output that does not end in a pass summary (a green test run may log the errors it tests)."""
    if shows_failure_summary(text):
        return True
    return _may_be_error(text) and not _has_pass_summary(decode_output(text)[0][-PASS_TAIL:]) and is_error_output(text)


# Every pass summary holds one of these in its last lines (lowercased); most outputs hold none.
_PASS_ANCHORS = ("pass", " ok", "ok ", "ok\t", "\tok", "ok\n", "\nok", "ok.", "ok!", "(ok", "ok)", "succe", "complete", "✓", "✔", "0 error", "0 issue", "0 fail", "http/", "rolled out",
                 "valid", "no issues", "all checks", "exit", "green")


@functools.lru_cache(maxsize=8192)
def _may_pass(text: str) -> bool:
    if decode_output(text)[1] is not None:
        return True  # an exit status in JSON (Codex) is read by `exit_code`, wherever it sits
    low = _window(text)[0]
    return any(a in low for a in _PASS_ANCHORS)


@functools.lru_cache(maxsize=8192)
def is_passing(text: str) -> bool:
    """A pass summary (`5 passed`, `ok  pkg`, `test result: ok`, `Found 0 errors`, `200 OK`) or exit 0; no failure."""
    if not _may_pass(text):
        return False
    if not _has_pass_summary(decode_output(text)[0][-PASS_TAIL:]) and exit_code(text) != 0:
        return False
    return not is_failing(text)


# --- commands ---------------------------------------------------------------------------------------


def _argv_command(argv: list) -> str:
    words = [w for w in argv if isinstance(w, str)]
    if len(words) >= 3 and words[0].rsplit("/", 1)[-1] in _SHELLS and words[1] in ("-c", "-lc", "-l"):
        return words[-1]
    return " ".join(words)


@functools.lru_cache(maxsize=8192)
def _command(tool_name: str, text: str) -> str:
    name = tool_name.lower()
    if name in _EDIT_TOOLS:
        return ""
    body = text[len(tool_name):].lstrip() if tool_name and text.startswith(tool_name) else text
    if body.startswith("{"):
        try:
            args = json.loads(body)
        except (ValueError, RecursionError):
            m = _CLIPPED_COMMAND.search(body)  # a long call was clipped mid-JSON by the reader
            if not m:
                return ""
            command = m.group(1)
            for escaped, real in _UNESCAPES:
                command = command.replace(escaped, real)
            return command.strip()
        cmd = args.get("command", args.get("cmd")) if isinstance(args, dict) else None
        if isinstance(cmd, list):
            cmd = _argv_command(cmd)
        return cmd.strip() if isinstance(cmd, str) else ""
    return body.strip() if name in _SHELL_TOOLS else ""


def command_of(turn: Turn) -> str:
    """The shell command a tool call ran; '' for other tools (edits, reads, searches)."""
    if turn.kind != "tool_call":
        return ""
    return _command(turn.tool_name, turn.text)


def one_line(command: str, limit: int = MAX_COMMAND) -> str:
    """The first line of a command, whitespace collapsed, at most `limit` chars."""
    lines = command.strip().splitlines()
    first = " ".join(lines[0].split()) if lines else ""
    more = len(lines) > 1
    if len(first) > limit:
        first, more = first[: limit - 1].rstrip(), True
    return f"{first}…" if more else first


@functools.lru_cache(maxsize=8192)
def command_key(command: str) -> str:
    """The command without wrapping that does not change what it checks, for comparing two runs."""
    text = " ".join(command.split())
    while True:
        stripped = _SUFFIX.sub("", _PREFIX.sub("", text, count=1), count=1)
        if stripped == text:
            break
        text = stripped
    return " ".join(w for w in text.split() if not _NOISE_FLAG.fullmatch(w))


@functools.lru_cache(maxsize=4096)
def _target(key: str) -> tuple[str, frozenset[str]]:
    """(runner, the files/dirs/test ids it was pointed at, without `::test` parts)."""
    words = key.split()
    if not words:
        return "", frozenset()
    n = 2 if words[0] in _TWO_WORD_RUNNERS and len(words) > 1 else 1
    targets = frozenset(
        w.split("::", 1)[0].rstrip("/") for w in words[n:]
        if not w.startswith("-") and ("/" in w or "::" in w or _FILE_NAME.search(w))
    )
    return " ".join(words[:n]), targets


@functools.lru_cache(maxsize=8192)  # a session re-runs a handful of commands many times
def same_target(failed: str, passed: str) -> bool:
    """Both commands run the same checks: equal once normalised, or the passing one covers every failing target."""
    a, b = command_key(failed), command_key(passed)
    if a == b:
        return bool(a)
    runner_a, targets_a = _target(a)
    runner_b, targets_b = _target(b)
    if runner_a != runner_b or not targets_a or not targets_b:
        return False
    return all(any(x == y or x.startswith(y + "/") for y in targets_b) for x in targets_a)


def is_inspection(command: str) -> bool:
    """A command that only looks (`rg`, `ls`, `git log`, `gh run list`): its output proves nothing."""
    return bool(_INSPECT.match(command_key(command))) and not is_test_or_build(command)


def is_test_or_build(command: str) -> bool:
    """A command that runs tests, a build, a type checker or linter, a plan, or a request (`curl`)."""
    first = command.strip().split("\n", 1)[0]
    return bool(_TEST_OR_BUILD.search(command_key(first)))


def is_change(turn: Turn) -> bool:
    """An edit tool, or a shell command that writes files, dependencies or state."""
    if turn.kind != "tool_call":
        return False
    if turn.tool_name.lower() in _EDIT_TOOLS:
        return True
    return _changes_files(command_of(turn))


@functools.lru_cache(maxsize=8192)
def _changes_files(command: str) -> bool:
    return bool(command) and bool(_CHANGE_CMD.search(command))


def _short_path(path: str) -> str:
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    return "/".join(parts[-2:]) if parts else path


def describe_change(turn: Turn) -> str:
    """`rm state/state.db-journal` or editing `app/db.py`: what a change did, in a few words."""
    if turn.kind == "tool_result" and turn.text.startswith("Applied edit to "):
        return f"editing `{_short_path(turn.text[len('Applied edit to '):].strip())}`"
    command = command_of(turn)
    patched = _PATCH_FILE.findall(command or turn.text)
    if patched:
        return "editing " + ", ".join(f"`{_short_path(p)}`" for p in dict.fromkeys(patched))
    if command:
        return f"`{one_line(command, 80)}`"
    body = turn.text[len(turn.tool_name):].lstrip() if turn.text.startswith(turn.tool_name) else turn.text
    try:
        args = json.loads(body) if body.startswith("{") else {}
    except (ValueError, RecursionError):
        args = {}
    path = next((args[k] for k in ("file_path", "path", "notebook_path", "filename")
                 if isinstance(args, dict) and isinstance(args.get(k), str)), "")
    return f"editing `{_short_path(path)}`" if path else f"`{turn.tool_name or 'an edit'}`"


# --- the walk: runs, changes, pasted failures -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Run:
    """A shell command and its result, where both sit in the turn order."""

    call: Turn
    result: Turn
    command: str
    at_call: int  # index of the call in the walked turns
    at_result: int
    failed: bool
    passed: bool
    signature: str


@dataclass(frozen=True, slots=True)
class _Walk:
    runs: tuple[_Run, ...]
    changes: tuple[tuple[int, Turn], ...]  # (index, change turn)
    pasted: tuple[tuple[int, Turn, str], ...]  # (index, user turn, signature) for errors a user pasted


def _rejected(text: str) -> bool:
    return text.lstrip().startswith(_REJECTED)


@functools.lru_cache(maxsize=64)  # verification and failure_conditions walk the same turns
@per_turns
def _walk(turns: tuple[Turn, ...]) -> _Walk:
    runs: list[_Run] = []
    changes: list[tuple[int, Turn]] = []
    pasted: list[tuple[int, Turn, str]] = []
    pending: list[tuple[int, Turn]] = []  # calls awaiting results, in order
    for i, turn in enumerate(turns):
        if turn.kind == "tool_call":
            pending.append((i, turn))
            if is_change(turn):
                changes.append((i, turn))
        elif turn.role == "tool" and turn.kind in ("tool_result", "error"):
            if turn.kind == "tool_result" and turn.tool_name == "edit":
                changes.append((i, turn))  # Aider logs the edit its reply made as "Applied edit to x.py"
                continue
            # Results carry no call id here: take the oldest open call of the same tool.
            name = turn.tool_name
            k = next((k for k, (_, c) in enumerate(pending) if not name or c.tool_name == name), None)
            if k is None:
                continue
            at_call, call = pending.pop(k)
            command = command_of(call)
            if not command or _rejected(turn.text):
                continue
            if _INSPECT.match(command_key(command)):
                continue  # `rg x` finding nothing is no failure, and finding something no fix
            if is_change(call) and not is_test_or_build(command):
                continue  # a patch or an install that failed is a failed attempt at a change, not the problem
            failed = turn.kind == "error" or is_failing(turn.text)
            passed = not failed and (turn.kind == "tool_result" or is_passing(turn.text))
            runs.append(_Run(call, turn, command, at_call, i, failed, passed,
                             error_signature(turn.text) if failed else ""))
        elif turn.role == "user" and turn.kind == "text" and is_error_output(turn.text):
            sig = error_signature(turn.text)
            if sig:
                pasted.append((i, turn, sig))
    return _Walk(tuple(runs), tuple(changes), tuple(pasted))


def _changed_between(walk: _Walk, after: int, before: int) -> list[Turn]:
    return [t for i, t in walk.changes if after < i < before]


def _cleared_signature(fails: list[_Run]) -> str:
    """The signature of the latest failure that named one."""
    return next((f.signature for f in reversed(fails) if f.signature), "")


def _same_command(walk: _Walk) -> Verification | None:
    """The latest passing re-run of a failed command, after a change, that no later failure undid."""
    failed = [r for r in walk.runs if r.failed]
    found = None
    for run in walk.runs:
        if not run.passed:
            continue
        fails = [f for f in failed if f.at_result < run.at_call and same_target(f.command, run.command)]
        if not fails or not _changed_between(walk, fails[-1].at_result, run.at_call):
            continue  # never failed, or re-run with nothing changed (a flaky pass proves no fix)
        if any(r.at_call > run.at_result and same_target(run.command, r.command) for r in failed):
            continue  # the fix did not hold
        found = Verification(run.result.seq, run.call.seq, one_line(run.command), _cleared_signature(fails),
                             True, fails[-1].result.seq)
    return found


def _any_check_after_last_failure(walk: _Walk) -> Verification | None:
    """A passing test/build run after a change that follows the last failure (a run or a pasted error)."""
    last_run = next((r for r in reversed(walk.runs) if r.failed), None)
    last_paste = walk.pasted[-1] if walk.pasted else None
    if last_run is None and last_paste is None:
        return None
    if last_run is not None and (last_paste is None or last_run.at_result > last_paste[0]):
        at, failed_seq = last_run.at_result, last_run.result.seq
        sig = _cleared_signature([r for r in walk.runs if r.failed and r.at_result <= at])
    else:
        at, failed_seq, sig = last_paste[0], last_paste[1].seq, last_paste[2]
    first_change = next((i for i, _ in walk.changes if i > at), None)
    if first_change is None:
        return None
    for run in walk.runs:
        if run.at_call > first_change and run.passed and is_test_or_build(run.command):
            return Verification(run.result.seq, run.call.seq, one_line(run.command), sig, False, failed_seq)
    return None


def verification(turns: Sequence[Turn]) -> Verification | None:
    """The fix-confirming re-run in `turns`, or None.

    Args:
        turns: one session's or experience's turns, in order.

    A command that failed (an error result or a failing output) and is later run again, the same
    command or the same test target once wrapping is stripped (`cd x &&`, `FOO=1`, `2>&1 | tail -3`,
    `-x -q -v`), passing after at least one change. Without one, a passing test/build command after
    a change that follows the last failure counts, with `same_command=False`.
    """
    return _verification(tuple(turns))


@per_turns  # segmenting, drafting and the failure conditions all ask of the same turns
def _verification(turns: tuple[Turn, ...]) -> Verification | None:
    walk = _walk(turns)
    return _same_command(walk) or _any_check_after_last_failure(walk)


# --- failure conditions -----------------------------------------------------------------------------


def _shorten(text: str, limit: int = MAX_SENTENCE) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip(",;:") + "…"


def _condition_sentences(text: str) -> list[str]:
    """Sentences of a user message that state when the problem shows (pasted code and logs left out)."""
    low = text.lower()
    if not any(h in low for h in _CONDITION_HINTS):
        return []
    prose = _FENCE.sub(" ", text[:8000]) if "```" in text else text[:8000]
    out = []
    for sentence in _SENTENCE_END.split(prose):
        sentence = sentence.strip()
        if sentence.startswith(_LOG_LINE) or not 8 <= len(sentence) <= 400:
            continue  # a pasted stack frame or log line, not something the user said
        if _CONDITION.search(sentence) or (_CONTEXT.search(sentence) and _PROBLEM.search(sentence)):
            out.append(_shorten(sentence))
    return out


def _attempts(walk: _Walk) -> list[FailureCondition]:
    """Changes followed by the same error again: `tried X → still Y`."""
    out = []
    # A bare `exit code 1` says nothing about which error stayed: only named errors count.
    failures = [(r.at_result, r.result.seq, r.signature) for r in walk.runs
                if r.failed and r.signature and not r.signature.startswith("exit code")]
    failures += [(i, t.seq, sig) for i, t, sig in walk.pasted]
    failures.sort()
    for (at_a, _, sig_a), (at_b, seq_b, sig_b) in zip(failures, failures[1:]):
        if sig_a != sig_b:
            continue
        tried = list(dict.fromkeys(describe_change(t) for t in _changed_between(walk, at_a, at_b)))
        if tried:
            what = ", ".join(tried[:2]) + (f" and {len(tried) - 2} more" if len(tried) > 2 else "")
            out.append(FailureCondition(seq_b, f"tried {what} → still `{sig_b}`", "attempt"))
    return out


def failure_conditions(turns: Sequence[Turn]) -> list[FailureCondition]:
    """What made the problem appear, one short line each, deduplicated, at most MAX_CONDITIONS, in turn order.

    Args:
        turns: one session's or experience's turns, in order.

    The user's sentences that state a condition ("works fine with 1 worker", "only on CI", "since I
    bumped X to 2.0"), changes that did not help (the same error signature again after them), and
    the error a confirmed fix removed.
    """
    turns = tuple(turns)
    walk = _walk(turns)
    found = [FailureCondition(t.seq, s, "condition")
             for t in turns if t.role == "user" and t.kind == "text" for s in _condition_sentences(t.text)]
    found += _attempts(walk)
    fix = verification(turns)
    cleared = None
    if fix and fix.signature:
        cleared = FailureCondition(fix.failed_seq, f"fails with `{fix.signature}` before the fix", "error")
    seen: set[str] = set()
    unique = []
    for item in sorted(found, key=lambda c: c.seq):
        key = item.text.lower()
        if key not in seen:
            seen.add(key)
            unique.append(item)
    # The cleared error always stays: it is what the fix is about.
    kept = unique[: MAX_CONDITIONS - 1 if cleared else MAX_CONDITIONS]
    if cleared and cleared.text.lower() not in seen:
        kept.append(cleared)
    return sorted(kept, key=lambda c: c.seq)
