"""What Aider's lines mean: a `####` input as Aider reads it, and the UI lines Aider writes around it.

Aider takes any input whose first character is `/` or `!` as an in-chat command (a whole message,
however many lines), never as words to the model: a mistyped one (`/cde`) gets "Invalid command".
A command name may be shortened to any prefix that names one command (`/ru` is `/run`). Of them:

- `/run CMD`, `!CMD`, `/test [CMD]`, `/git ARGS` run a shell command (`RUN`): a `tool_call`.
- `/clear` and `/reset` empty the chat history (`CLEAR`): kept as typed, where a task may end.
- `/ask`, `/code`, `/architect`, `/context` with a message switch the mode for that one message,
  and Aider logs the message again as its own input right after (`MODE`): the message is the
  request, said once, so the command line itself is no turn.
- every other command (`/add`, `/drop`, `/ls`, `/undo`, `/tokens`, `/model`, `/copy-context`, a
  mistyped one) sets Aider up (`COMMAND`): no request, so no experience starts at it.
"""

from __future__ import annotations

from dataclasses import dataclass

REQUEST, RUN, CLEAR, MODE, COMMAND = "request", "run", "clear", "mode", "command"
# Aider's in-chat commands (v0.86), for its own prefix matching.
COMMANDS = (
    "add", "architect", "ask", "chat-mode", "clear", "code", "commit", "context", "copy", "copy-context", "diff",
    "drop", "edit", "editor", "editor-model", "exit", "git", "help", "lint", "load", "ls", "map", "map-refresh",
    "model", "models", "multiline-mode", "ok", "paste", "quit", "read-only", "reasoning-effort", "report", "reset",
    "run", "save", "settings", "test", "think-tokens", "tokens", "undo", "voice", "weak-model", "web",
)
_MODES = frozenset({"ask", "code", "architect", "context"})
_CLEARS = frozenset({"clear", "reset"})

# --- Aider's own lines, around the input ---------------------------------------------------------
PROMPT = "(Y)es/(N)o"
# Prompts that name their subject on the `> ` line before them (a file, a command, a URL).
SUBJECT_PROMPTS = (
    "Run shell command", "Add file to the chat", "Create new file", "Allow edits to file",
    "Allow creation of new file", "Add URL to the chat", "Open documentation url", "Open URL", "Run pip install",
)
# Aider's own UI: banner, bookkeeping and hints; dropped after the start-up banner, never evidence.
UI_PREFIXES = (
    "Tokens: ", "^C", "Aider v", "Model: ", "Main model: ", "Weak model: ", "Editor model: ", "Git repo: ",
    "Repo-map: ", "Repo-map can't include", "Has it been deleted from the file system", "Multiline mode: ",
    "Note: in-chat filenames", "Cost estimates may be inaccurate", "Copied code context", "You can use /undo",
    "Added ", "Diff since ", "Initial repo scan", "You can skip this check", "https://aider.chat/", "Using ",
    "Skipping ", "Please answer with one of", "Committing ", "Scanning repo", "Update git name with",
    "Update git email with", "Newer aider version", "Use /help", "Restored previous", "Removed ",
    "Dropping all files", "Warning for ", "Run `aider --help`", "Detected dumb terminal", "Cur working dir: ",
    "Git working dir: ",
)
NEVER_KEPT = ("Tokens: ", "^C", "Copied code context")  # not even in the start-up banner
OUTPUT_ADDED = "of output to the chat"  # "Added 12 lines of output to the chat."
FIX_PROMPT = "What's wrong? Fix"  # what Aider fills the next prompt with after a failing run's output was added


@dataclass(frozen=True, slots=True)
class Input:
    """One input, read: its kind, and for a run the command it ran (`tool` "run" or "test")."""

    kind: str
    command: str = ""
    tool: str = ""


def command_name(word: str) -> str:
    """The Aider command `/word` names: itself, or the one command it is a prefix of ('' when none)."""
    word = word.lower()
    if word in COMMANDS:
        return word
    matches = [c for c in COMMANDS if c.startswith(word)] if word else []
    return matches[0] if len(matches) == 1 else ""


def read_input(text: str) -> Input:
    """What the user's input `text` is, as Aider reads it."""
    if text[:1] == "!":
        return Input(RUN, text[1:].strip(), "run")
    if text[:1] != "/":
        return Input(REQUEST)
    head = text[1:].split(None, 1)
    name = command_name(head[0]) if head else ""
    args = head[1].strip() if len(head) > 1 else ""
    if name == "run" and args:
        return Input(RUN, args, "run")
    if name == "git":  # its output is logged as Aider's own lines, like a run's
        return Input(RUN, f"git {args}".strip(), "run")
    if name == "test":
        return Input(RUN, args or "/test", "test")
    if name in _CLEARS:
        return Input(CLEAR)
    return Input(MODE if name in _MODES and args else COMMAND)
