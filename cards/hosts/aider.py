"""Aider chat history: `<repo>/.aider.chat.history.md`, appended across runs.

How Aider writes the file (v0.8x): `# aider chat started at YYYY-MM-DD HH:MM:SS` opens a run;
`#### ` lines are user input (consecutive ones are one message); `> ` lines are Aider's own
output, one message a line ending in two spaces (a message of several lines carries `> ` on its
first line only and runs on until a line that ends in two spaces); everything else is the
model's reply, where a code fence (``` or ````, or the `<source>`, `<code>`, `<pre>`, `<codeblock>`,
`<sourcecode>` lines Aider fences a file with when it holds backticks) makes `>` and `####` lines code.

What each becomes (one session per run, line = the 1-based line where the turn starts):

- user input: a user `text` turn as typed, read as Aider reads it (`aider_lines`): Aider's own
  commands (`/add x`, `/drop`, `/undo`, a mode switch whose message follows as input) are no turn,
  counted as `chat_command`; `/clear` and `/reset` stay, as typed. Not the user: architect mode
  hands the architect's reply to the editor model as input, so it comes again as `####` lines.
  Input that repeats the reply before it (`repeats_reply`) is dropped as `architect_handoff` (the
  reply is a turn already): a plan is never the user's request or words.
- `/run CMD`, `!CMD`, `/test CMD`, `/git ARGS`: a `tool_call` turn, role user, tool_name "run".
  Aider prints a run's output to the terminal only; when it was added to the chat and the command
  failed, Aider fills the next prompt with "What's wrong? Fix": input that starts so makes the run's
  result an `error`.
- `> Running CMD` (a shell command the model proposed and the user allowed): a `tool_call`,
  role assistant, tool_name "run", text CMD. `> ## Running: CMD` (Aider's lint) likewise with
  tool_name "lint".
- the `> ` lines after a run: its `tool_result` (tool_name "run"/"lint"), or `error` when they show
  a failure (traceback, `N failed`, non-zero exit, `error:`). A command's own output goes to the
  terminal, not to this file, so often only "Added N lines of output to the chat." is left.
  `/test` output is added only when the command exits non-zero, so a `/test` result is always an
  `error`, and a `/test` with nothing after it gets the result "exit status 0".
- `> Applied edit to PATH`: a `tool_result`, tool_name "edit" (consecutive ones in one turn).
- `> Commit SHA MESSAGE`: two turns on that line, a `tool_call` `git commit -m "MESSAGE"` and its
  `tool_result` `[aider SHA] MESSAGE` (tool_name "git", role assistant), the shape of git's
  own output, so a successful commit reads the same on every host. The commit Aider makes of the
  user's own earlier changes ("Committing X before applying edits." then "Commit …") is not the
  task's commit: it stays one plain `tool_result` in Aider's words.
- `> Processing your request...` (watch mode: the request is an `AI!` comment in a file): the user
  text `[Request from an AI! comment in a watched file]`.
- `<thinking-content-…>…</thinking-content-…>` (Aider's reasoning tag) and `<think>…</think>`:
  an assistant `thinking` turn (empty ones dropped), never part of the reply's text.
- the start-up banner (the `> ` lines between a run's header and its first request, reply or
  command: launch line, version, models, repo, repo-map, warnings, start-up errors): the run's
  first turn, a `tool_result` (`error` when it shows a failure), so every run starts at its
  header. A run that holds only its banner has no user text, so no card comes of it.
- other `> ` lines (errors, `/ls` listings, `/undo` notes): a `tool_result`, or `error` when they
  show a failure.
- dropped as Aider's own UI: token/cost lines, `^C`, every `(Y)es/(N)o` prompt (and an answer
  echoed as `#### … (Y)es/(N)o …`) with the subject line it asks about, and after the banner
  "Added X to the chat", "Copied code context", "You can use /undo …", "Diff since …" and the like.

Workspace (`Turn.cwd`): Aider writes `.aider.chat.history.md` at the git root, so a file of that
name gives the folder it lies in: the repository where it is now, on this machine, which is what
a prompt's working directory is compared with (the banner's "Git working dir:" names where the
repo was when Aider ran, stale once it moves or the log is copied). A history with another name
(`--chat-history-file`) may live anywhere: the banner's "Git working dir:" (else "Cur working
dir:") when the run prints one, else the file's folder.

The file has no session ids, so a session's id is a hash of the file path and its header's
line number, and its timestamp is the header's (local time); there are no per-message times.

Incremental reads: a session can only be named from its header, so `resume_at` points at the
last header in the chunk. The next read starts there and returns that whole session again with
the same id and seqs (card ids are stable, so re-storing it is idempotent).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import PurePath

from memoir.cards.signals import mentions_failure
from memoir.cards.verdicts import is_passing
from memoir.cards.hosts.aider_lines import (
    COMMAND, FIX_PROMPT, MODE, NEVER_KEPT, OUTPUT_ADDED, PROMPT, RUN, SUBJECT_PROMPTS, UI_PREFIXES, read_input,
)
from memoir.cards.hosts.base import TEXT_CHARS, TOOL_CALL_CHARS, TOOL_RESULT_CHARS, Carry, Host, ReadReport, clip
from memoir.cards.hosts.strip import repeats_reply, strip_injected
from memoir.cards.values import Turn

HOST = "aider"
HEADER = "# aider chat started at"
HISTORY_NAME = ".aider.chat.history.md"  # Aider's default, written at the repository's root

HEADER_RE = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)")
_COMMIT_RE = re.compile(r"^Commit ([0-9a-f]{7,40}) +(.*)$")
_THINK_OPEN_RE = re.compile(r"^<(think|thinking|thinking-content-[0-9a-f]+)>")
_TAG_FENCE_RE = re.compile(r"^<(source|code|pre|codeblock|sourcecode)>")  # Aider's fences after ```/````
_WATCH_REQUEST = "Processing your request"
WATCH_REQUEST = "[Request from an AI! comment in a watched file]"
_LAUNCH_RE = re.compile(r"^\S*[\\/]aider(?:\.exe)?(?:\s|$)")  # the command line that started Aider
_BANNER_DIRS = (("Git working dir: ", 2), ("Cur working dir: ", 1))


def history_file(registered: str | PurePath) -> PurePath:
    """The history a registered path names: a Markdown file itself, or a repo folder's default history."""
    path = PurePath(registered)
    return path if path.suffix == ".md" else path / HISTORY_NAME


def session_id_for(path: str, header_line: int) -> str:
    """Stable id for the session whose header is on `header_line` (1-based) of `path`."""
    return "aider-" + hashlib.sha256(f"{path}\0{header_line}".encode()).hexdigest()[:16]


def _header_time(line: str) -> datetime | None:
    m = HEADER_RE.match(line)
    if not m:
        return None
    try:
        return datetime.fromisoformat(m.group(1)).astimezone()
    except ValueError:
        return None


def _git_commit_call(message: str) -> str:
    return 'git commit -m "' + message.replace("\\", "\\\\").replace('"', '\\"') + '"'


class _Builder:
    """Walks the lines of one chunk, keeping the open block and emitting Turns as blocks close."""

    def __init__(self, path: str, carry: Carry) -> None:
        self.path = path
        self.folder = str(PurePath(path).parent)
        self.turns: list[Turn] = []
        self.session_ids: list[str] = []
        self.skipped: Counter = Counter()
        self.session_id = ""
        self.started: datetime | None = None
        # 3: the folder of a default-named history (the repo root), 2: the banner's git working dir,
        # 1: its current dir, 0: the folder of a history named otherwise.
        self.folder_rank = 3 if PurePath(path).name == HISTORY_NAME else 0
        self.cwd, self.cwd_rank = self.folder, self.folder_rank
        self.seq = 0
        # The open block: "user", "assistant", "thinking", or a tool group ("misc", "edit", "run", "test", "lint").
        self.key = ""
        self.block: list[str] = []
        self.block_line = 0
        self.after_run = ""  # the group `> ` lines join while they report on a command just run
        self.fence = ""  # the backticks that opened the assistant's code fence (or its closing tag), inside it
        self.think_close = ""  # the closing tag of the open thinking block
        self.reply = self.reasoning = ""  # the model's last reply, and its reasoning since the last input
        self.last_tool_line = -1  # line number of the last `> ` line, to spot multi-line messages
        self.kept_line = -1  # line number where the last kept `> ` message ended
        self.last_line = -1  # line number of the last non-blank line outside multi-line messages
        self.continuing = False  # inside a multi-line `> ` message
        self.continue_keep = False  # whether that message is kept (its first line was)
        self.in_banner = False  # between a run's header and its first request, reply or command
        self.dirty = False  # the last `> ` line announced a commit of the user's own earlier changes
        self.watch_line = 0  # where a watch-mode request began, until we know it is not spelt out as input
        if carry.session_id:
            self.start_session(carry.session_id, datetime.fromisoformat(carry.started) if carry.started else None)
            if carry.cwd and not self.folder_rank:
                self.cwd, self.cwd_rank = carry.cwd, 1

    # --- sessions and turns ------------------------------------------------------------------

    def start_session(self, session_id: str, started: datetime | None) -> None:
        self.finish()
        self.watch_line = 0
        self.session_id, self.started, self.seq = session_id, started, 0
        self.cwd, self.cwd_rank = self.folder, self.folder_rank
        self.fence = self.think_close = self.after_run = self.reply = self.reasoning = ""
        self.in_banner = True
        if session_id not in self.session_ids:
            self.session_ids.append(session_id)

    def emit(self, role: str, kind: str, text: str, line: int, tool_name: str = "", limit: int = TEXT_CHARS) -> None:
        text = clip(strip_injected(text), limit)
        if not text:
            self.skipped["empty_text"] += 1
            return
        if not self.session_id:
            self.start_session(session_id_for(self.path, line), None)
        self.turns.append(
            Turn(
                host=HOST,
                session_id=self.session_id,
                seq=self.seq,
                role=role,
                kind=kind,
                text=text,
                timestamp=self.started,
                tool_name=tool_name,
                cwd=self.cwd,
                source_file=self.path,
                line=line,
            )
        )
        self.seq += 1

    def open(self, key: str, line: int) -> None:
        """Make `key` the open block, closing the one before when it differs."""
        if key != "misc":
            self.in_banner = False
        if key != self.key:
            self.close()
            self.key, self.block_line = key, line
        elif not self.block:
            self.block_line = line  # a /test result opened empty starts where its first line is

    def close(self) -> None:
        """Emit the open block as its Turn(s)."""
        key, block, line = self.key, self.block, self.block_line
        self.key, self.block = "", []
        if key == "test" and not block:
            self.emit("tool", "tool_result", "exit status 0", line, "run")
        if not block:
            return
        text = "\n".join(block).strip()
        if key == "user":
            self.user(text, line)
        elif key == "assistant":
            self.reply = text
            self.emit("assistant", "text", text, line)
        elif key == "thinking":
            self.reasoning += "\n" + text
            self.emit("assistant", "thinking", text, line)
        elif key == "edit":
            self.emit("tool", "tool_result", text, line, "edit", TOOL_RESULT_CHARS)
        else:
            # Aider's own UI lines (the start-up banner's "Repo-map can't include …") are never evidence
            # of a failure; only what a program printed is.
            said = "\n".join(ln for ln in block if not ln.startswith(UI_PREFIXES)).strip()
            failed = key in ("test", "lint") or (
                mentions_failure(said) and not is_passing(said))  # "19 passed; 0 failed" then the program's own "ERROR 312"
            name = "" if key == "misc" else key if key == "lint" else "run"
            self.emit("tool", "error" if failed else "tool_result", text, line, name, TOOL_RESULT_CHARS)

    def finish(self) -> None:
        """Close the open block, the `/test` result its close may have opened, and a pending request."""
        self.close()
        self.close()
        self.watched(spelt_out=False)

    def watched(self, spelt_out: bool) -> None:
        """Emit the pending watch-mode request, unless the input that follows spells it out."""
        if self.watch_line:
            line, self.watch_line = self.watch_line, 0
            if not spelt_out:
                self.close()
                self.emit("user", "text", WATCH_REQUEST, line)

    def user(self, text: str, line: int) -> None:
        """User input; `/run`, `!` and `/test` are commands the user ran, Aider's own commands no turn."""
        if repeats_reply(text, self.reply, self.reasoning):
            self.skipped["architect_handoff"] += 1  # the architect's reply, handed to its editor model
            return
        self.reply = self.reasoning = ""
        said = read_input(text)
        if said.kind in (MODE, COMMAND):
            self.skipped["chat_command"] += 1  # sets Aider up (or its message follows as input): no request
            return
        if said.kind != RUN:
            if text.startswith(FIX_PROMPT):
                self.failed_run()
            self.emit("user", "text", text, line)
            return
        self.emit("user", "tool_call", said.command, line, "run", TOOL_CALL_CHARS)
        self.after_run = said.tool
        if self.after_run == "test":
            self.key, self.block_line = "test", line  # a /test that adds nothing passed

    def failed_run(self) -> None:
        """The result of the `/run` just before, when its output was added and it failed: an `error`."""
        for i in range(len(self.turns) - 1, -1, -1):
            t = self.turns[i]
            if t.session_id != self.session_id or (t.role == "user" and t.kind == "text"):
                return
            if t.role == "tool" and t.tool_name == "run":
                if OUTPUT_ADDED in t.text:
                    self.turns[i] = replace(t, kind="error")
                return

    # --- lines ------------------------------------------------------------------------------

    def line(self, line: str, no: int) -> None:
        # Dispatch on the first character: most lines are the model's reply or blank.
        c = line[:1]
        if self.continuing:
            if c in (">", "#") and (line.startswith(("> ", "####", HEADER)) or line == ">"):
                self.continuing = False
            else:
                self.more(line, no)
                return
        if c == "#" and line.startswith(HEADER):
            self.start_session(session_id_for(self.path, no), _header_time(line))
            return
        if self.think_close:
            if not (c in ("#", ">") and line.startswith(("####", "> Tokens: "))):
                self.thinking(line, no)
                return
            self.think_close = ""  # never closed: the reply was cut; what follows is not thinking
        if self.fence:
            if not (c == ">" and line.startswith("> Tokens: ")):
                self.assistant(line, no)
                return
            self.fence = ""  # never closed: the token line shows the reply is over
        if self.watch_line and line and not line.isspace():
            self.watched(spelt_out=c == "#" and line.startswith("####") and PROMPT not in line)
        if c == ">" and (line.startswith("> ") or line == ">"):
            self.tool(line, no)
        elif c == "#" and line.startswith("####"):
            if PROMPT in line:
                self.tool_text(line[5:].strip(), no)  # an answer to a confirm prompt, echoed as input
            else:
                self.open("user", no)
                self.block.append(line[5:].rstrip())
                self.after_run = ""
        elif not line or line.isspace():
            # A blank line ends user input; Aider's own output runs on until something else is written.
            if self.key == "assistant" or self.key == "thinking":
                self.block.append("")
            elif self.key == "user":
                self.close()
            return
        elif self.last_tool_line == no - 1:
            self.more(line, no)  # the model's reply always starts after a blank line: this is Aider's
        else:
            self.assistant(line, no)
        self.last_line = no

    def more(self, line: str, no: int) -> None:
        """A line that continues the `> ` message before it; the message's last line ends in two spaces."""
        if self.continue_keep:
            if self.block:
                self.block[-1] += "\n" + line.rstrip()
            else:
                self.block.append(line.rstrip())  # the output under a `## Running:` line
            self.kept_line = no
        self.last_tool_line = self.last_line = no
        self.continuing = not line.endswith("  ")

    def assistant(self, line: str, no: int) -> None:
        """A line of the model's reply: text, code fences, or the start of a thinking block."""
        c = line[:1]
        if c == "<" and not self.fence and (m := _THINK_OPEN_RE.match(line)):
            self.open("thinking", no)
            self.think_close = f"</{m.group(1)}>"
            rest = line[m.end():]
            if rest.strip():
                self.thinking(rest, no)
            return
        if self.key != "assistant":
            self.open("assistant", no)
            self.after_run = ""
        self.block.append(line.rstrip())
        if c == "`" and line.startswith("```"):
            if not self.fence:
                self.fence = line[: len(line) - len(line.lstrip("`"))]
            elif line.startswith(self.fence) and not line.strip().strip("`"):
                self.fence = ""
        elif c == "<":
            if not self.fence and (m := _TAG_FENCE_RE.match(line)):
                self.fence = f"</{m.group(1)}>"
            elif self.fence[:2] == "</" and line.strip() == self.fence:
                self.fence = ""

    def thinking(self, line: str, no: int) -> None:
        end = line.find(self.think_close)
        if end < 0:
            self.block.append(line.rstrip())
            return
        self.block.append(line[:end].rstrip())
        rest = line[end + len(self.think_close):]
        self.think_close = ""
        self.close()
        if rest.strip():
            self.assistant(rest, no)

    def tool(self, line: str, no: int) -> None:
        """One `> ` line: a command run, an edit, a commit, a result, or Aider's own UI (dropped)."""
        text = line[2:].strip()
        follows_tool = self.last_tool_line == no - 1
        self.last_tool_line = no
        if self.key in ("user", "assistant", "thinking"):
            self.close()
        kept = self.tool_text(text, no)
        if kept:
            self.kept_line = no
        self.continue_keep = kept
        # A message of several lines: only its first line has `> `, its last ends in two spaces.
        self.continuing = bool(text) and follows_tool and not line.endswith("  ")

    def tool_text(self, text: str, no: int) -> bool:
        """Route one `> ` message; True when it was kept as the last line of the open group."""
        if not text:
            return False
        if PROMPT in text:
            asked = self.key == "misc" and self.block and self.kept_line == self.last_line
            if asked and text.startswith(SUBJECT_PROMPTS):
                self.block.pop()  # the file / command / URL the prompt asked about
                self.kept_line = -1
            return False
        if self.after_run and text.startswith("Added ") and OUTPUT_ADDED in text:
            self.open(self.after_run, no)
            self.block.append(text)
            return True
        if text.startswith("Running "):
            self.call("run", text[8:], no)
            return False
        if text.startswith("## Running: "):
            self.call("lint", text[12:], no)
            self.open("lint", no)  # the lines under it (one multi-line message) are the linter's report
            return True
        if text.startswith("Applied edit to "):
            self.after_run = ""
            self.open("edit", no)
            self.block.append(text)
            return False
        if text.startswith("Commit ") and (m := _COMMIT_RE.match(text)) and not self.dirty:
            self.after_run, self.in_banner = "", False
            self.close()
            sha, message = m.group(1), m.group(2).strip()
            self.emit("assistant", "tool_call", _git_commit_call(message), no, "git", TOOL_CALL_CHARS)
            self.emit("tool", "tool_result", f"[aider {sha}] {message}", no, "git", TOOL_RESULT_CHARS)
            return False
        if text.startswith(_WATCH_REQUEST):
            self.close()
            self.watch_line = no  # watch mode: an AI! comment is the request; "AI?" ones are spelt out as input
            return False
        for prefix, rank in _BANNER_DIRS:
            if text.startswith(prefix) and rank >= self.cwd_rank:
                self.cwd, self.cwd_rank = text[len(prefix):].strip(), rank
        # The dirty commit of files the user changed before the request: the user's work, not this task's.
        self.dirty = text.startswith("Committing ") and text.endswith("before applying edits.")
        if not self.dirty and (text.startswith(UI_PREFIXES) or _LAUNCH_RE.match(text)):
            # The start-up banner stays as the run's first turn, so every run begins where its header is.
            if not self.in_banner or text.startswith(NEVER_KEPT):
                return False
        self.open(self.after_run or "misc", no)
        self.block.append(text)
        return True

    def call(self, name: str, command: str, no: int) -> None:
        """A command Aider ran on the model's behalf; the `> ` lines after it are its result."""
        self.in_banner = False
        self.close()
        self.emit("assistant", "tool_call", command.strip(), no, name, TOOL_CALL_CHARS)
        self.after_run = name


def _last_header(data: bytes) -> int:
    """Byte offset of the last line that opens a run, or -1 when the chunk has none."""
    at = data.rfind(b"\n" + HEADER.encode())
    if at >= 0:
        return at + 1
    return 0 if data.startswith(HEADER.encode()) else -1


def read(data: bytes, path: str, start_line: int = 0, carry: Carry = Carry()) -> ReadReport:
    """Read the whole lines of an aider history chunk into Turns, one session per header."""
    consumed = data.rfind(b"\n") + 1
    n_lines = data.count(b"\n", 0, consumed)
    skipped: Counter = Counter()
    if consumed < len(data):
        skipped["partial_line"] += 1
    b = _Builder(path, carry)
    text = data[:consumed].decode("utf-8", errors="replace")
    for i, line in enumerate(text.split("\n")[:-1] if consumed else ()):
        # Aider on Windows writes CRLF: the `\r` would hide the two spaces that end a `> ` message.
        b.line(line[:-1] if line.endswith("\r") else line, start_line + i + 1)
    b.finish()
    header_at = _last_header(data[:consumed])
    started = b.started.isoformat() if b.started else ""
    after = Carry(session_id=b.session_id, cwd=b.cwd if b.session_id else "", started=started,
                  seqs=((b.session_id, b.seq),) if b.session_id else ())
    return ReadReport(
        turns=b.turns, skipped=skipped + b.skipped, session_id=b.session_id, session_ids=tuple(b.session_ids),
        consumed=consumed, lines=n_lines, carry=after,
        resume_at=max(header_at, 0) if b.session_id else consumed,
        resume_line=data.count(b"\n", 0, max(header_at, 0)) if b.session_id else n_lines,
    )


# --- the host record -------------------------------------------------------------------------------


def wants(name: str) -> bool:
    return name.endswith(HISTORY_NAME)


def sniff_lines(lines: Sequence[str], path: PurePath) -> bool:
    """The header line, or a history file's name with Aider's `#### ` / `> ` lines."""
    return lines[0].startswith(HEADER) or (
        path.name.endswith(HISTORY_NAME) and any(ln.startswith(("#### ", "> ")) for ln in lines))


RECORD = Host(
    name=HOST, read=read, wants=wants, sniff_lines=sniff_lines,
    shell_tools=frozenset({"run", "lint"}),  # /run, /test, ! and the commands it proposes
    edit_tools=frozenset({"edit"}),  # "Applied edit to x.py"
    header_sessions=True, commits_each_reply=True, banner=True,
)
