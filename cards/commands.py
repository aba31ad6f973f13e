"""What a tool call ran: the shell command behind each host's call shape, and what kind of step it is.

A shell command is read from a tool call's text: `Bash {"command": …}` (Claude Code), `shell
{"command": ["bash", "-lc", …]}` / `exec_command {"cmd": …}` (Codex), or `Bash <command>`. Which
tool names run a shell, edit a file or only look is each host's record (`cards.hosts.registry`);
which command is a check (tests, a build, a linter) is `cards.signals.CHECK_COMMAND`.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable

from memoir.cards.hosts.registry import EDIT_TOOLS, QUIET_TOOLS, SHELL_TOOLS
from memoir.cards.signals import CHECK_COMMAND, LOCKFILE_CHECK
from memoir.cards.values import Turn

MAX_COMMAND = 200  # a command quoted on one line

_CLIPPED_COMMAND = re.compile(
    r'"(?:command|cmd)"\s*:\s*(?:\[\s*"(?:[\w/.-]*/)?(?:bash|sh|zsh|dash)"\s*,\s*"-l?c"\s*,\s*)?"((?:[^"\\]|\\.)*)'
)
_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
_UNESCAPES = (("\\n", "\n"), ("\\t", "\t"), ('\\"', '"'), ("\\\\", "\\"))
# A command that writes files or dependencies, or removes state (`rm x.db-journal` is an attempt too).
_CHANGE_CMD = re.compile(
    r"\bsed -i|\bperl -\w*i|\bpatch\b|\bapply_?patch\b|\bgit (?:apply|checkout|restore|reset|stash|revert|"
    r"cherry-pick|merge|rebase|pull|am)\b|\bterraform (?:force-unlock|import|taint|untaint|state (?:rm|mv|push))\b|(?<![<>0-9&])>>?[ \t]*(?!&|/dev/null)[\w./~-]+|\btee\b|"
    r"(?:^|[;&|(]\s*|\s)(?:rm|mv|cp|touch|mkdir|chmod|chown|ln|truncate|unlink)\s|"
    r"\b(?:pip3?|npm|pnpm|yarn|bun|uv|poetry|cargo|go|gem|bundle|brew|conda|apt(?:-get)?)"
    r"(?: --?[\w-]+(?:[= ](?!-)[\w@./-]+)?)* "  # options before the verb: `pnpm --filter web up next@15`
    r"(?:install|add|remove|uninstall|get|update|upgrade|up|i|ci|sync|lock)\b|\bgo mod tidy\b|\bnpm ci\b"
)
_PATCH_FILE = re.compile(r"\*\*\* (?:Update|Add|Delete) File: (\S+)")
# Wrapping that does not change what a command checks: `cd x &&`, `FOO=1`, `timeout 60`, `uv run`,
# `python -m`, and output plumbing (`2>&1`, `| tail -3`, `; echo $?`, `|| true`).
_PREFIX = re.compile(
    r"^\s*(?:cd\s+\S+\s*(?:&&|;)\s*|(?:export\s+)?[A-Za-z_]\w*=\S*\s+|timeout\s+\S+\s+|time\s+|nice\s+|env\s+|"
    r"(?:uv|poetry|pipenv|pdm|hatch|rye) run\s+|bundle exec\s+|npx\s+|bunx\s+|(?:pnpm|yarn) exec\s+|"
    r"(?:\S*/)?python[\d.]*\s+-m\s+)"
)
_SUFFIX = re.compile(
    r"\s*(?:2>&1|2>\s*/dev/null|>\s*/dev/null|\|&?\s*(?:tail|head|cat|less|grep|tee)\b(?:[^|;&'\"]|'[^']*'|\"[^\"]*\")*|"
    r";\s*echo\b[^|;&]*|\|\|\s*true)\s*$"
)
_NOISE_FLAG = re.compile(
    r"-[xqvsl]+|--tb=\w+|--maxfail=\d+|--color(?:=\w+)?|--no-header|-r[a-zA-Z]+|--disable-warnings|"
    r"-p\s*no:\S+|-?-count=\d+|--quiet|--verbose|--silent|--no-cov|--ff|--lf|--showlocals|--runInBand|"
    r"--watchAll=false|--no-watch|--reporter=\w+"
)
_FILE_NAME = re.compile(r"\.\w{1,5}$")
# An editor tool with sub-commands (`str_replace_editor`, `str_replace_based_edit_tool`) asked only to
# show a file or folder: `{"command":"view","path":…}` reads, like any look.
_EDITOR_READS = re.compile(r'\s*\{(?:"[^"]*":(?:"[^"]*"|[^,"{}\[\]]*),)*"command":"view"')
# Commands that only look (a search with no match exits 1): neither a failure nor a check.
_INSPECT = re.compile(
    r"(?:rg|grep|egrep|fgrep|ag|ack|find|fd|ls|cat|head|tail|less|more|wc|echo|printf|pwd|which|type|file|stat|"
    r"tree|du|df|ps|env|nl|sort|uniq|diff|jq|sed(?! -i)|awk|git (?:status|log|diff|show|branch|blame|grep|rev-parse|"
    r"remote|ls-files)|gh (?:run|pr|issue|repo) (?:list|view|status)|"
    # Where a dependency comes from: finding none (`cargo tree -i x`: "did not match") is an answer, no failure.
    r"cargo (?:tree|metadata)|(?:npm|pnpm|yarn) why|go mod (?:why|graph)|pip3? show)(?:\s|$)"
)
_TWO_WORD_RUNNERS = frozenset({"go", "cargo", "npm", "pnpm", "yarn", "bun", "mix", "make", "dotnet", "bazel",
                               "terraform", "docker", "deno", "python", "python3", "node"})


def may_hold_verdict(turn: Turn) -> bool:
    """Could this result say that a check passed or failed? Not a file read, an edit or a plan update."""
    return turn.kind in ("tool_result", "error") and turn.tool_name.lower() not in QUIET_TOOLS


def _argv_command(argv: list) -> str:
    words = [w for w in argv if isinstance(w, str)]
    if len(words) >= 3 and words[0].rsplit("/", 1)[-1] in _SHELLS and words[1] in ("-c", "-lc", "-l"):
        return words[-1]
    return " ".join(words)


@functools.lru_cache(maxsize=8192)
def _command(tool_name: str, text: str) -> str:
    name = tool_name.lower()
    if name in EDIT_TOOLS:
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
    return body.strip() if name in SHELL_TOOLS else ""


def command_of(turn: Turn) -> str:
    """The shell command a tool call ran; '' for other tools (edits, reads, searches)."""
    if turn.kind != "tool_call":
        return ""
    return _command(turn.tool_name, turn.text)


_ID_ARGS = ("task_id", "bash_id", "shell_id")  # what a call that reads a background command's result names it by


def retrieved_id(call: Turn) -> str:
    """The background command id a call asks the result of (Claude Code's `TaskOutput`), or ''."""
    if call.kind != "tool_call" or not any(a in call.text[:400] for a in _ID_ARGS):
        return ""
    body = call.text[len(call.tool_name):].lstrip() if call.text.startswith(call.tool_name) else call.text
    try:
        args = json.loads(body)
    except (ValueError, RecursionError):
        return ""
    return next((v for a in _ID_ARGS if isinstance(v := args.get(a), str) and v), "") if isinstance(args, dict) else ""


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
    # Every noise flag starts with `-`: most words are let through without a regex call.
    return " ".join(w for w in text.split() if not (w[:1] == "-" and _NOISE_FLAG.fullmatch(w)))


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
    if _bare_words(a) == _bare_words(b) and len(_bare_words(a)) >= 2:
        return True  # `./gradlew --refresh-dependencies bootRun` is still `./gradlew bootRun`
    runner_a, targets_a = _target(a)
    runner_b, targets_b = _target(b)
    if runner_a != runner_b:
        # `node assets/build.js`, then `cd assets && node build.js`: the same script from another folder.
        ra, rb = runner_a.split(), runner_b.split()
        return len(ra) == len(rb) == 2 and ra[0] == rb[0] and _same_file(ra[1], rb[1]) and targets_a == targets_b
    if not targets_a or not targets_b:
        return False
    # `node assets/build.js`, then `cd assets && node build.js`: the same file, named from another folder.
    return all(any(x == y or x.startswith(y + "/") or _same_file(x, y) for y in targets_b) for x in targets_a)


def _same_file(a: str, b: str) -> bool:
    """One path ends with the other at a folder boundary, and both name a file (`assets/build.js`, `build.js`)."""
    if "." not in a.rsplit("/", 1)[-1] or a.rsplit("/", 1)[-1] != b.rsplit("/", 1)[-1]:
        return False
    return a.endswith("/" + b) or b.endswith("/" + a)


_CACHE_FLAG = re.compile(r"^--(?:no-)?[a-z]+-[a-z-]+$")  # `--refresh-dependencies`, `--no-build-cache`, `--no-daemon`


def _bare_words(key: str) -> tuple[str, ...]:
    """A normalised command without its long hyphenated switches, which tune how a tool runs (caches,
    daemons), not what it checks; short selectors such as `--lib` or `--doc` stay."""
    return tuple(w for w in key.split() if not _CACHE_FLAG.match(w))


_STEP = re.compile(r"&&|\|\||;|\n")


_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1([^\n]*)\n.*?(?:\n[ \t]*\2[ \t]*(?=\n|$)|$)", re.S)


def chain_steps(command: str) -> list[str]:
    """The steps of a chained command (`pip install -e . && pytest -q` -> two steps), in order.
    What a heredoc writes into a file is content, not steps (`cat <<EOF > notes.md` naming `make test`)."""
    if "<<" in command:
        command = _HEREDOC.sub(lambda m: m.group(3), command)
    return [p.strip() for p in _STEP.split(command) if p.strip()]


_SEARCH_FILTER = re.compile(r"^(?:rg|grep|egrep|fgrep|ag|ack|findstr|select-string|sls)\b", re.I)


def ends_in_search_filter(command: str) -> bool:
    """Does the command's last step pipe into a search (`git ls-remote origin | rg x`)? Its exit 1 is
    the search finding nothing, not the command before it failing."""
    steps = chain_steps(command)
    stages = re.split(r"(?<!\|)\|(?!\|)", steps[-1]) if steps else []
    return len(stages) > 1 and bool(_SEARCH_FILTER.match(stages[-1].strip()))


_STEM_NOISE = re.compile(r"^(?:test_)|(?:_test|_spec|\.test|\.spec|_tests)$")


def target_stems(command: str) -> set[str]:
    """File stems a command points at, without test prefixes and suffixes (`test_db.py` -> `db`)."""
    out = set()
    for word in command_key(command).split():
        if "/" in word or re.search(r"\.\w{1,5}$", word):
            stem = word.split("::", 1)[0].rstrip("/").rsplit("/", 1)[-1].split(".", 1)[0]
            stem = _STEM_NOISE.sub("", stem)
            if len(stem) >= 3:
                out.add(stem.lower())
    return out


def changes_before_check(command: str) -> bool:
    """A chain that changes something and then runs a check in the same call
    (`terraform force-unlock ID && terraform plan`, `pip install -e . && pytest`)."""
    steps = chain_steps(command)
    first_check = next((k for k, step in enumerate(steps) if is_test_or_build(step)), 0)
    return any(_changes_files(step) for step in steps[:first_check])


@functools.lru_cache(maxsize=8192)  # asked of the same command by segment, draft and the rules
def only_looks(command: str) -> bool:
    """A command that only looks (`rg`, `ls`, `git log`): a search with no match exits 1, and is no failure.
    A chain looks only when every step does (`grep -rl x | xargs sed -i … && ./gradlew test` runs a check)."""
    parts = chain_steps(command_key(command))
    return bool(parts) and all(_INSPECT.match(command_key(p)) and not _changes_files(p) for p in parts)


def is_inspection(command: str) -> bool:
    """A command that only looks (`rg`, `ls`, `git log`, `gh run list`) and runs no check: its output proves nothing."""
    return only_looks(command) and not is_test_or_build(command)


@functools.lru_cache(maxsize=8192)  # asked of the same command by segment, draft and the rules
def is_test_or_build(command: str) -> bool:
    """A command that runs tests, a build, a type checker or linter, a plan, or a request (`curl`)."""
    first = command.strip().split("\n", 1)[0]
    return bool(CHECK_COMMAND.search(command_key(first)))


def is_change(turn: Turn) -> bool:
    """An edit tool (unless this call of it only reads), or a shell command that writes files,
    dependencies or state."""
    if turn.kind != "tool_call":
        return False
    if turn.tool_name.lower() in EDIT_TOOLS:
        return not _EDITOR_READS.match(turn.text[len(turn.tool_name):len(turn.tool_name) + 300])
    return _changes_files(command_of(turn))


@functools.lru_cache(maxsize=8192)
def _changes_files(command: str) -> bool:
    return bool(command) and bool(_CHANGE_CMD.search(LOCKFILE_CHECK.sub(" ", command)))


_UNDO = re.compile(r"\bgit (?:checkout (?:\S+ )?--(?:\s|$)|restore\b|reset --hard\b|revert\b)")


def undoes(turn: Turn) -> bool:
    """A shell call that puts files back as a commit had them (`git checkout -- x`, `git restore`,
    `git reset --hard`, `git revert`): the changes before it are undone."""
    return turn.kind == "tool_call" and bool(_UNDO.search(command_of(turn) or ""))


def _short_path(path: str, cwd: str = "") -> str:
    """The file as a reader names it: under the session's folder, relative to it (`mix.exs`, not the
    checkout's own folder name); elsewhere, its last two parts."""
    path = path.replace("\\", "/")
    root = cwd.replace("\\", "/").rstrip("/") + "/"
    if len(root) > 1 and path.startswith(root):
        path = path[len(root):]
    parts = [p for p in path.split("/") if p]
    return "/".join(parts[-2:]) if parts else path


def describe_change(turn: Turn) -> str:
    """`rm state/state.db-journal` or editing `app/db.py`: what a change did, in a few words."""
    if turn.kind == "tool_result" and turn.text.startswith("Applied edit to "):
        return f"editing `{_short_path(turn.text[len('Applied edit to '):].strip(), turn.cwd)}`"
    command = command_of(turn)
    patched = _PATCH_FILE.findall(command or turn.text)
    if patched:
        files = list(dict.fromkeys(patched))
        if len(files) == 1:
            body = command or turn.text
            removed = "\n".join(line[1:] for line in body.splitlines() if line.startswith("-") and not line.startswith("---"))
            return _what_changed({"old_string": removed, "new_string": added_text(turn)}) + f"`{_short_path(files[0], turn.cwd)}`"
        return "editing " + ", ".join(f"`{_short_path(p, turn.cwd)}`" for p in files)
    if command:
        return f"`{one_line(command, 80)}`"
    body = turn.text[len(turn.tool_name):].lstrip() if turn.text.startswith(turn.tool_name) else turn.text
    try:
        args = json.loads(body) if body.startswith("{") else {}
    except (ValueError, RecursionError):
        args = {}
    path = next((args[k] for k in ("file_path", "path", "notebook_path", "filename")
                 if isinstance(args, dict) and isinstance(args.get(k), str)), "")
    if not path:
        return f"`{turn.tool_name or 'an edit'}`"
    return _what_changed(args) + f"`{_short_path(path, turn.cwd)}`"


MAX_SHOWN_EDIT = 90  # an edit this short is shown as it is: "changing `a` to `b` in x.py" says what the fix was


_COMMENT = re.compile(r"^(?:#(?![!\[]|include|define|if|pragma|import|region)|//|--\s|/\*|\*\s|%\s|;)")


def _what_changed(args: dict) -> str:
    """'changing `old` to `new` in ', 'adding `new` to ' or 'editing ': the edit itself when it is short."""
    old, new = args.get("old_string") or args.get("old_str") or "", args.get("new_string") or args.get("new_str") or ""
    if not (isinstance(old, str) and isinstance(new, str)) or not (new or old):
        return "editing "
    def norm(text: str) -> list[str]:  # a comma added after a list item is no change of that item
        return [line.strip().rstrip(",;") for line in text.splitlines() if line.strip().rstrip(",;")]
    was, now = norm(old), norm(new)
    # A comment the edit left behind is no part of what it did.
    added = [line for line in now if line not in set(was) and not _COMMENT.match(line)]
    removed = [line for line in was if line not in set(now) and not _COMMENT.match(line)]
    if not added and removed:
        gone = "`, `".join(removed)
        return (f"removing `{gone}` from " if len(gone) <= MAX_SHOWN_EDIT and "`" not in gone
                else f"removing {len(removed)} lines from ")
    shown = "`, `".join(added)  # each line its own code span: each is a line the edit wrote, as it wrote it
    if not added or len(shown) > MAX_SHOWN_EDIT or "`" in "".join(added):
        return "editing "
    if removed and len("`, `".join(removed)) <= MAX_SHOWN_EDIT and "`" not in "".join(removed):
        return f"changing `{'`, `'.join(removed)}` to `{shown}` in "
    return f"adding `{shown}` to "


def changed_paths(turn: Turn) -> tuple[str, ...]:
    """The files a change names (an edit tool's path, a patch's files, Aider's "Applied edit to"), or ()
    when it names none a reader can tell (a shell command that writes)."""
    if turn.kind == "tool_result" and turn.text.startswith("Applied edit to "):
        return (turn.text[len("Applied edit to "):].strip(),)
    patched = _PATCH_FILE.findall(command_of(turn) or turn.text)
    if patched:
        return tuple(dict.fromkeys(patched))
    body = turn.text[len(turn.tool_name):].lstrip() if turn.text.startswith(turn.tool_name) else turn.text
    try:
        args = json.loads(body) if body.startswith("{") else {}
    except (ValueError, RecursionError):
        args = {}
    if not isinstance(args, dict):
        return ()
    return tuple(args[k] for k in ("file_path", "path", "notebook_path", "filename", "absolute_path")
                 if isinstance(args.get(k), str) and args[k])


_SEARCH_REPLACE = re.compile(r"-{3,} SEARCH\n([\s\S]*?)\n={3,}\n([\s\S]*?)\n\+{3,} REPLACE")


def same_line(line: str) -> str:
    """A line as an edit compares it: a comma a list's next item added, or indentation, changes nothing."""
    return line.strip().rstrip(",")


def changed_names(changes: Iterable[Turn]) -> set[str]:
    """The file names (no folders) a set of changes edited: how a card names a file it changed."""
    return {p.replace("\\", "/").rsplit("/", 1)[-1] for t in changes for p in changed_paths(t)}


def added_text(turn: Turn) -> str:
    """The lines a change adds: an edit's new text less the lines of its old text, a write's content, a
    patch's `+` lines; '' when the change is a shell command that says none."""
    body = turn.text[len(turn.tool_name):].lstrip() if turn.text.startswith(turn.tool_name) else turn.text
    try:
        args = json.loads(body) if body.startswith("{") else {}
    except (ValueError, RecursionError):
        args = {}
    if isinstance(args, dict):
        new = args.get("new_string") or args.get("content") or args.get("new_str") or ""
        if isinstance(new, str) and new:
            old = args.get("old_string") or args.get("old_str") or ""
            blocks = _SEARCH_REPLACE.findall(new)
            if blocks:  # a diff in the edit's content (Cline, Roo): the REPLACE lines less the SEARCH lines
                old, new = "\n".join(b[0] for b in blocks), "\n".join(b[1] for b in blocks)
            gone = {same_line(line) for line in old.splitlines()} if isinstance(old, str) else set()
            return "\n".join(line for line in new.splitlines() if same_line(line) not in gone)
    patch = command_of(turn) or turn.text
    if "*** Begin Patch" in patch or "\n+" in patch:
        return "\n".join(line[1:] for line in patch.splitlines() if line.startswith("+") and not line.startswith("+++"))
    return ""


_LIST_OPENS = re.compile(r"""^\s*["']?([\w.@/-]+)["']?\s*[:=]\s*[\[(]\s*$""")
_BARE_ITEM = re.compile(r"""^(?:"[^"]*"|'[^']*'|[\w.@/-]+),?$""")


def list_key(turn: Turn, line: str) -> str:
    """The key of the list an added bare item joined (`"DOM"` under `"lib": [` is `lib`), from the edit's new
    text; '' when the line has a key of its own or no list opens above it."""
    if not _BARE_ITEM.match(line.strip()):
        return ""
    body = turn.text[len(turn.tool_name):].lstrip() if turn.text.startswith(turn.tool_name) else turn.text
    try:
        args = json.loads(body) if body.startswith("{") else {}
    except (ValueError, RecursionError):
        return ""
    new = (args.get("new_string") or args.get("content") or args.get("new_str") or "") if isinstance(args, dict) else ""
    blocks = _SEARCH_REPLACE.findall(new) if isinstance(new, str) else []
    lines = ("\n".join(b[1] for b in blocks) if blocks else new if isinstance(new, str) else "").splitlines()
    at = next((i for i, text in enumerate(lines) if text.strip() == line.strip()), None)
    for text in reversed(lines[:at] if at is not None else []):
        opened = _LIST_OPENS.match(text)
        if opened or not _BARE_ITEM.match(text.strip()):
            return opened.group(1) if opened else ""
    return ""


def steps_before(failed: str, rerun: str) -> bool:
    """The re-run is the failed command with steps put before it (`bd sync --import-only && bd ready`
    after `bd ready` failed): those steps are the change, whatever tool they use, unless they only look."""
    was, now = chain_steps(command_key(failed)), chain_steps(command_key(rerun))
    if not was or len(now) <= len(was) or now[-len(was):] != was:
        return False
    return not all(only_looks(step) for step in now[:-len(was)])


_NOT_SETTINGS = frozenset({"command", "cmd", "description", "justification", "reason", "timeout", "timeout_ms",
                           "yield_time_ms", "max_output_tokens", "run_in_background"})
_PAIR = re.compile(r'"(\w+)"\s*:\s*("(?:[^"\\]|\\.)*"|true|false|-?\d+)')


def call_settings(call: Turn) -> dict:
    """The arguments of a shell call beside its command (sandbox, workdir, env): settings of the run."""
    body = call.text[len(call.tool_name):].lstrip() if call.tool_name and call.text.startswith(call.tool_name) else call.text
    if not body.startswith("{"):
        return {}
    try:
        args = json.loads(body)
    except (ValueError, RecursionError):  # a long call the reader clipped: read its simple pairs
        args = {m.group(1): m.group(2).strip('"') for m in _PAIR.finditer(body)}
    return {k: v for k, v in args.items() if k not in _NOT_SETTINGS} if isinstance(args, dict) else {}


def plan_items(turn: Turn) -> list:
    """The items of a plan tool's call (TodoWrite `todos`, Codex `update_plan` `plan`), or []."""
    body = turn.text.split(" ", 1)[1] if " " in turn.text else ""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return []
    items = data.get("todos") or data.get("plan") if isinstance(data, dict) else None
    return items if isinstance(items, list) else []


_SEPARATOR = re.compile(r"[ \t]*(&&|\|\||;|-and\b)[ \t]*")


def separator_change(before: str, after: str) -> str:
    """The same steps chained with another operator (`a && b`, then `a; b`): the shell's syntax was
    what failed (Windows PowerShell 5 has no `&&`)."""
    if before == after or _SEPARATOR.sub(" ; ", before).split() != _SEPARATOR.sub(" ; ", after).split():
        return ""
    old, new = set(_SEPARATOR.findall(before)), set(_SEPARATOR.findall(after))
    if not old - new or not new - old:
        return ""
    return f"{' '.join(sorted(new - old))} instead of {' '.join(sorted(old - new))}"
