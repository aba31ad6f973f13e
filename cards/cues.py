"""What one turn says, read the same by segmenting, concluding and drafting.

A set-up slash command or a greeting (no request), an interruption marker, a commit's output and
its subject, an error of the agent's own tooling (not the problem), an error the user pasted.
"""

from __future__ import annotations

import functools
import re

from memoir.cards.hosts.registry import QUIET_TOOLS
from memoir.cards.phrasebook import MAX_REMEMBERED, REASONS, REMEMBERS, RULE_STATEMENTS, first_rule
from memoir.cards.signatures import error_signature
from memoir.cards.values import Turn

_COMMIT_OUTPUT = re.compile(r"\[[\w./@+-]+(?: \([^)\n]{1,40}\))? [0-9a-f]{7,}\] ")  # "[main 1a2b3c4] message"


_SLASH = re.compile(r"^/[a-z][\w:.-]*(?:\s|$)", re.I)


_INTERRUPTED = re.compile(r"^\[Request interrupted by user[^\]]*\]$")


def is_interruption(text: str) -> bool:
    """The host's marker that the user stopped the assistant: `[Request interrupted by user]`."""
    return bool(_INTERRUPTED.match(text.strip()))


_GREETING = re.compile(
    r"^\W*(?:hi+|hey+|hello|yo|hiya|howdy|good (?:morning|afternoon|evening)|gm|thanks?(?: you)?(?: so much)?|"
    r"thx|ty|cheers|ok(?:ay)?|k|cool|great|nice|perfect|awesome|test(?:ing)?|ping|are you there|warmup|"
    r"how are you(?: doing)?|what'?s up|sup|"
    # the same warm-ups and thanks outside English
    r"hola|buen(?:os|as) (?:días|dias|tardes|noches)|gracias|ol[áa]|oi|obrigad[oa]|bonjour|salut|merci|hallo|moin|danke|"
    r"dank je(?: wel)?|bedankt|ahoj|d[íi]ky|děkuji|안녕(?:하세요)?|감사합니다|고마워요?|你好|您好|谢谢|多谢|"
    r"こんにちは|ありがとう(?:ございます)?)"
    r"(?:[\s,!.?]+(?:there|claude|codex|aider|mate|buddy|again))*[\s!.?:)！。，？]*$",
    re.I,
)


def slash_command(text: str) -> str:
    """`/name` when the whole text is one slash command the user typed, else ''."""
    text = text.strip()
    if not _SLASH.match(text) or "\n" in text:
        return ""
    return text.split(None, 1)[0].lower()


# Host commands that set something up rather than ask for work, whatever their arguments.
_SETUP_COMMANDS = frozenset({
    "/model", "/config", "/permissions", "/cost", "/status", "/login", "/logout", "/add-dir", "/mcp",
    "/resume", "/memory", "/vim", "/theme", "/exit", "/quit", "/help", "/add", "/drop", "/read-only",
    "/tokens", "/clear", "/compact", "/new", "/reset", "/undo", "/diff", "/ls", "/map", "/settings",
    "/editor", "/chat-mode", "/approvals", "/init", "/doctor", "/bug", "/review", "/hooks", "/agents",
})


def is_chatter(text: str) -> bool:
    """A greeting, a thank-you, a warm-up, an interruption marker or a set-up slash command: no request.

    A custom slash command with arguments (`/orchestrator build the app`) is a request: its
    arguments are what the user asked for.
    """
    text = text.strip()
    if not text or _GREETING.match(text) or _INTERRUPTED.match(text):
        return True
    cmd = slash_command(text)
    return bool(cmd) and (cmd in _SETUP_COMMANDS or text.lower() == cmd)


_TEMPLATE_HEADING = re.compile(r"(?m)^#{1,4} \S")
_TEMPLATE_STEP = re.compile(r"(?m)^\s*(?:\d+\.|-) \*\*")


def is_prompt_template(text: str) -> bool:
    """A slash command's expanded prompt (spec-kit, a review command): long, sectioned by headings, with
    bold-labelled steps or an `$ARGUMENTS` slot. Its rules are the template's, not the user's words
    about this task: never a rejection, a goal or a pasted error."""
    if len(text) < 800:
        return False
    return "$ARGUMENTS" in text or (len(_TEMPLATE_HEADING.findall(text)) >= 2 and len(_TEMPLATE_STEP.findall(text)) >= 2)


@functools.lru_cache(maxsize=8192)  # segmenting, concluding and titling all ask of every result
def _commit_line(text: str) -> str | None:
    """The subject after git's "[main 1a2b3c4] " in the first 4,000 characters; None without one."""
    m = _COMMIT_OUTPUT.search(text, 0, 4000)
    if not m:
        return None
    return text[m.end():m.end() + 400].split("\n", 1)[0].strip().strip('"\\').strip()


def is_commit_output(text: str) -> bool:
    return _commit_line(text) is not None


def commit_subject(text: str) -> str:
    """The subject line of a successful commit's output ('[main 1a2b3c4] subject'), else ''."""
    return _commit_line(text) or ""


_TOOLING_ERROR = re.compile(
    r"(?i)failed to find expected lines|invalid hunk|string to replace not found|file has not been read yet|"
    r"<tool_use_error>|tool call (?:error|failed)|no such tool|doesn'?t want to (?:proceed|take this action)|"
    r"request interrupted by user|was rejected by the user|permission to use \w+ has been denied|"
    r"old_string|found \d+ matches of the string to replace|file does not exist\. current working directory"
)


def is_tooling_error(turn: Turn) -> bool:
    """An error of the agent's own tooling (a patch that did not apply, a denied tool), not the problem."""
    if turn.kind != "error":
        return False
    if turn.tool_name.lower() in QUIET_TOOLS:
        return True  # an edit that did not apply, a read of a missing file, a plan tool refused
    return _tooling_text(turn.text[:2000])


@functools.lru_cache(maxsize=4096)
def _tooling_text(head: str) -> bool:
    return bool(_TOOLING_ERROR.search(head))


def problem_signature(turn: Turn) -> str:
    """The error signature of a turn that shows the problem itself ('' for tooling errors)."""
    if turn.kind != "error" or is_tooling_error(turn):
        return ""
    return error_signature(turn.text)


# Output pasted into a prompt, not prose that names an error ("ImportError on startup").
_PASTED_HINT = re.compile(
    r"(?:Error|Exception)(?: \[\w+\])?: \S|error(?:\[\w+\])?: \S|panic: |Traceback \(most recent|"
    r"^FAILED |CrashLoopBackOff|command not found|^HTTP/[\d.]+ [45]\d\d|"
    r"[45]\d\d (?:Bad Gateway|Service Unavailable|Gateway Timeout|Request Entity Too Large|Payload Too Large|"
    r"Internal Server Error|Too Many Requests)\b|\"statusCode\"\s*:\s*[45]\d\d",
    re.M,
)


# Every _PASTED_HINT match holds one of these; most prompts hold none.
_PASTED_WORDS = ("rror", "xception", "panic", "Traceback", "FAIL", "CrashLoop", "not found", "HTTP/", "Gateway",
                 "Unavailable", "Too Large", "Too Many", "statusCode")


_QUOTED = re.compile(r"`([^`\n]{8,300})`")


@functools.lru_cache(maxsize=4096)  # segmenting and drafting both ask of every prompt
def pasted_signature(text: str) -> str:
    """A signature from an error the user pasted into the prompt (not from a plain request).

    A quoted error in a sentence ("crashed with `fatal error: concurrent map writes`") counts
    alone, without the sentence around it; otherwise only pasted output lines do.
    """
    if len(text) < 20 or not any(h in text for h in _PASTED_WORDS) or not _PASTED_HINT.search(text):
        return ""
    for m in _QUOTED.finditer(text):
        if _PASTED_HINT.search(m.group(1)) or "error" in m.group(1).lower():
            if sig := error_signature(m.group(1)):
                return sig
    output = "\n".join(ln for ln in text.splitlines() if _PASTED_HINT.search(ln) or ln.startswith((" ", "\t")))
    return error_signature(output) if output else ""


def remembered(text: str) -> str:
    """The rule a user asked the agent to remember, in their words ("always pnpm, never npm"), or ''.
    A question ("do you remember …?") or a long task that happens to open with the word is none."""
    text = text.strip()
    cue = next((r.pattern.match(text) for r in REMEMBERS if r.pattern.match(text)), None)
    words = text[cue.end():].strip() if cue else ""
    if not words or len(text) > MAX_REMEMBERED or text.rstrip().endswith(("?", "？")):
        return ""
    return words


MAX_STATED = 600  # longer, a message is a task or a pasted document, not one rule the user states
_STATED_PARTS = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])|\n+")  # not inside `config.yaml`


def stated_choice(text: str) -> str:
    """The user's message when it states a rule with its reason, in their words ("we should avoid DRA in
    identifiers (it is an abbreviation, keep names clear)"), or ''. The reason may be the next sentence;
    a question, a greeting, a slash command or a long message is none."""
    text = text.strip()
    if not text or len(text) > MAX_STATED or is_chatter(text) or slash_command(text) or is_prompt_template(text) \
            or text.endswith(("?", "？")):
        return ""  # a message that ends asking ("… because the port is taken. can you look?") reports, it does not rule
    parts = [p.strip() for p in _STATED_PARTS.split(text) if p.strip()]
    for i, part in enumerate(parts):
        if part.endswith(("?", "？")) or not first_rule(RULE_STATEMENTS, part):
            continue
        reason = [p for p in parts[i:i + 2] if not p.endswith(("?", "？"))]
        if any(first_rule(REASONS, p) for p in reason):
            return text
    return ""
