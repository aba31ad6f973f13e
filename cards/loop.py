"""The problem loop: a failing check, each change made about it, and the same check run again.

Pure functions over ordered `Turn`s, for every host:

- `walk`: each shell call paired with its result (a *run* with a verdict; a background check's result
  read back by id, `cards.background`), the changes, and the errors a user pasted;
- `loops`: each failing check followed through the changes after it to the same check run again
  (the same command or test target, or the same outcome by another route: a CI wait, a rollout,
  a probe, a migration). Each change group is an `Attempt`, with the assistant's words before it;
  the attempt after which the check passed is the loop's fix, and a later failure on the same goal
  (the same check, or the same error in another environment) cancels it;
- `names_in` / `mentions`: the files, identifiers and settings a change or an error names, so an
  explanation can be tied to what it explains.

Conclusions, verification, how an experience ended and drafting read this one walk.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from memoir.cards.background import started_id, task_verdict
from memoir.cards.commands import (
    call_settings, chain_steps, ends_in_search_filter, retrieved_id, changes_before_check, command_key, steps_before, command_of, describe_change, is_change, is_test_or_build, one_line,
    only_looks, same_target, separator_change, target_stems,
)
from memoir.cards.cues import is_tooling_error
from memoir.cards.phrasebook import PENDING, first_rule
from memoir.cards.signals import KUBECTL, error_moved, failing_tests, is_declined
from memoir.cards.signatures import error_signature, is_error_output
from memoir.cards.values import Turn, per_turns
from memoir.cards.verdicts import is_failing, is_passing, reads_as_still_failing

# --- the walk: runs, changes, pasted failures -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Run:
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
class Walk:
    runs: tuple[Run, ...]
    changes: tuple[tuple[int, Turn], ...]  # (index, change turn)
    pasted: tuple[tuple[int, Turn, str], ...]  # (index, user turn, signature) for errors a user pasted
    looked: tuple[str, ...] = ()  # signatures of errors that commands which only look printed (`cargo tree -i x`)


@functools.lru_cache(maxsize=64)  # verification, failure conditions and conclusions walk the same turns
@per_turns
def walk(turns: tuple[Turn, ...]) -> Walk:
    """Runs with a verdict, changes and pasted errors, in turn order (commands that only look skipped)."""
    runs: list[Run] = []
    changes: list[tuple[int, Turn]] = []
    pasted: list[tuple[int, Turn, str]] = []
    looked: list[str] = []
    pending: list[tuple[int, Turn]] = []  # calls awaiting results, in order
    background: dict[str, tuple[int, Turn, str]] = {}  # id -> the check sent to the background
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
            (at_call, call), verdict = pending.pop(k), None
            command = command_of(call)
            if not command and (task := background.get(retrieved_id(call))):  # a background check's result
                (at_call, call, command), verdict = task, task_verdict(turn.text)
            if not command or is_declined(turn.text):
                continue
            if only_looks(command) and not runs_check(command):
                if turn.kind == "error" and (sig := error_signature(turn.text)):
                    looked.append(sig)
                continue  # `rg x` finding nothing is no failure, and finding something no fix
            if is_change(call) and not runs_check(command):
                continue  # a patch or an install that failed is a failed attempt at a change, not the problem
            failed = (turn.kind == "error" and not is_tooling_error(turn)) or is_failing(turn.text)
            # A background start or a poll of an unfinished process has no verdict yet (`PENDING`).
            passed = not failed and (turn.kind == "tool_result" or is_passing(turn.text)) and not first_rule(PENDING, turn.text[:300])
            if failed and ends_in_search_filter(command) and error_signature(turn.text) == "exit code 1":
                verdict = verdict or (False, True)  # `… | rg x` found no line: the command before it ran
            failed, passed = verdict or (failed, passed)
            runs.append(Run(call, turn, command, at_call, i, failed, passed, error_signature(turn.text) if failed else ""))
            if not failed and not passed and (task_id := started_id(turn.text)):
                background[task_id] = (at_call, call, command)
        elif turn.role == "user" and turn.kind == "text" and is_error_output(turn.text):
            if sig := error_signature(turn.text):
                pasted.append((i, turn, sig))
    return Walk(tuple(_read_by_the_assistant(turns, runs)), tuple(changes), tuple(pasted), tuple(looked))


def _read_by_the_assistant(turns: tuple[Turn, ...], runs: list[Run]) -> list[Run]:
    """A run that looks green but that the assistant's next words read as still failing has failed."""
    following: list[Turn | None] = [None] * (len(turns) + 1)  # the assistant's next words after each turn
    for i in range(len(turns) - 1, -1, -1):  # one walk back, not a slice per run: linear in the session
        t = turns[i]
        following[i] = t if t.role == "assistant" and t.kind in ("text", "tool_call") else following[i + 1]

    def still_failing(run: Run) -> bool:
        nxt = following[run.at_result + 1]
        return run.passed and nxt is not None and nxt.kind == "text" and reads_as_still_failing(nxt.text)
    return [dataclasses.replace(r, failed=True, passed=False) if still_failing(r) else r for r in runs]


def runs_check(command: str) -> bool:
    """A command that runs a check, alone or chained after other steps (`pip install -e . && pytest -q`)."""
    return any(is_test_or_build(part) for part in chain_steps(command))


def changed_between(w: Walk, after: int, before: int) -> list[Turn]:
    """The changes made strictly between two turn indexes."""
    return [t for i, t in w.changes if after < i < before]


# --- the same check, by the same command or by another route -----------------------------------------

# Commands that confirm an outcome without re-running the failing command: a CI run watched to its
# end, a rollout waited for, a migration, an HTTP probe.
_ROUTE = re.compile(
    rf"^(?:gh (?:run (?:watch|rerun)|pr checks|workflow run)|{KUBECTL} (?:rollout status|wait)|"
    r"helm (?:status|test)|(?:flyctl|fly) (?:status|deploy)|curl|wget|http|https|xh|"
    r"(?:alembic|flyway|sqlx|diesel|goose|dbmate) \S*|prisma migrate|rails db:migrate|rake db:migrate|"
    r"(?:\S*manage\.py|django-admin) (?:migrate|showmigrations))\b"
)
# What runs tests, not a linter or a build (`mix test`, not `mix credo`).
TEST_RUNNER = re.compile(r"\b(?:test|tests|pytest|jest|vitest|mocha|rspec|phpunit|unittest|ctest|tox|nox)\b")


def route_of(command: str) -> str:
    """The kind of outcome a command confirms by another route ('' for an ordinary command), in any
    step of a chain (`kubectl apply -k x && kubectl rollout status deploy/y` waits for a rollout)."""
    for step in chain_steps(command_key(command.strip().split("\n", 1)[0])):
        m = _ROUTE.match(command_key(step))
        if m:
            return m.group(0).split()[0]
    return ""


def same_check(failed_command: str, pasted_text: str, command: str) -> bool:
    """Does `command` check the same thing as a failure: the same command or target, or another
    route to the same outcome. A failure a user pasted has no command: a later check covers it when
    it is a route (CI, rollout, probe, migration), its runner is named in the paste (`cargo build`),
    or it points at a file the pasted output names."""
    if failed_command:
        if same_target(failed_command, command) or same_target(command, failed_command):
            return True
        if any(same_target(failed_command, part) for part in _parts(command)):
            return True  # `bash -ic 'command -v x && make lint'` runs `make lint` again
        checks = [p for p in _parts(command) if is_test_or_build(p)]
        if any(same_target(f, c) for f in _parts(failed_command) if is_test_or_build(f) for c in checks):
            return True  # `git status && pnpm install --frozen-lockfile`, then `git status; pnpm install …`
        if _whole_suite_of(failed_command, command):
            return True
        route = route_of(failed_command)
        return bool(route) and route == route_of(command)
    if not pasted_text:
        return False
    if route_of(command):
        return True
    if not is_test_or_build(command):
        return False
    low = pasted_text.lower()
    for step in chain_steps(command_key(command)):
        runner = runner_of(step) if is_test_or_build(step) else ""
        if len(runner) >= 4 and re.search(rf"(?<![a-z0-9]){re.escape(runner)}(?![a-z0-9])", low):
            return True  # the user pasted what `terraform plan` printed; `… && terraform plan` passes now
    stems = target_stems(command)
    if not stems:  # a whole test suite covers a failing test the user pasted
        return bool(TEST_RUNNER.search(command_key(command))) and bool(failing_tests(pasted_text))
    return any(re.search(rf"(?<![a-z0-9]){re.escape(s)}(?![a-z0-9])", low) for s in stems)


_SHELL_WRAP = re.compile(r"""^\s*(?:ba|z|da)?sh\s+-(\w*c)\s+(['"])(.*)\2\s*(?:2>&1\s*)?(?:\|.*)?$""", re.S)


def _parts(command: str) -> list[str]:
    """The steps of a chained or shell-wrapped command (`bash -ic 'a && b'` -> `a`, `b`)."""
    m = _SHELL_WRAP.match(command)
    inner = m.group(3) if m else command
    return chain_steps(inner)


def runner_of(command: str) -> str:
    """The tool and subcommand a check runs (`go test`, `./gradlew test`, `pytest`): its targets and flags left out."""
    words = command_key(command).split()
    return " ".join(words[:2]) if len(words) > 1 and not words[1].startswith("-") and not target_stems(words[1]) else (words[0] if words else "")


def _whole_suite_of(failed_command: str, command: str) -> bool:
    """`pytest` after `pytest tests/x.py::t` failed, `cargo test --lib` after `cargo test toc`: the same
    runner over everything (no target, no filter) covers the target."""
    if not is_test_or_build(command) or runner_of(command) != runner_of(failed_command):
        return False
    if target_stems(command) - target_stems(runner_of(command)):  # `./gradlew` names the runner, not a target
        return False
    def filters(c: str) -> list[str]:  # the words after the runner that narrow what it runs, flags aside,
        words = command_key(c).split()[len(runner_of(c).split()):]  # up to a pipe or redirect (`| grep FAILED`)
        cut = next((i for i, w in enumerate(words) if w in ("|", "||", "&&", ";") or w[:1] in (">", "<") or w[:2] == "2>"), len(words))
        return [w for w in words[:cut] if not w.startswith("-") and w not in (".", "./", "./...", "...")]  # `./...`: all
    narrowed = target_stems(failed_command) - target_stems(runner_of(failed_command))
    return bool(narrowed) or bool(filters(failed_command)) and not filters(command)


# --- loops and attempts -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Failure:
    """Where a loop starts: a failing run, or an error the user pasted (no command)."""

    at: int  # index in the walked turns
    seq: int
    command: str  # '' for a pasted error
    signature: str
    pasted_text: str = ""
    output: str = ""  # the failing run's output, for the error lines an explanation may name


@dataclass(frozen=True, slots=True)
class Attempt:
    """One try inside a loop: the assistant's words before it, the changes, and the same check after."""

    said: tuple[int, ...]  # seqs of the assistant's texts after the previous check, up to the last change
    changes: tuple[Turn, ...]
    check: Run  # the same check, run again after the changes
    setting: str = ""  # a setting of the call itself that changed (`sandbox_permissions: require_escalated`)
    edit_blocks: str = ""  # edits written inside the assistant's reply (Aider's SEARCH/REPLACE blocks)

    @property
    def worked(self) -> bool:
        return self.check.passed

    def tried(self) -> str:
        """What the attempt changed, in a few words (`editing app/db.py`, `pip install x`)."""
        if self.setting:
            new, instead, old = self.setting.partition(" instead of ")
            return f"re-running it with `{new}` instead of `{old}`" if instead else f"re-running it with `{self.setting}`"
        done = list(dict.fromkeys(self._described(t) for t in self.changes))
        return ", ".join(done[:2]) + (f" and {len(done) - 2} more" if len(done) > 2 else "")

    def _described(self, change: Turn) -> str:
        """A change, or for a call that changed and checked at once only its change steps
        (`terraform force-unlock -force ID`, not the `terraform plan` after it)."""
        if change is not self.check.call:
            return describe_change(change)
        steps = chain_steps(command_key(command_of(change)))
        first_check = next((k for k, step in enumerate(steps) if is_test_or_build(step)), len(steps))
        return f"`{one_line(' && '.join(steps[:first_check]), 80)}`" if first_check else describe_change(change)


@dataclass(frozen=True, slots=True)
class Loop:
    """A failing check and what was done about it, up to the same check passing (or the end)."""

    failure: Failure
    attempts: tuple[Attempt, ...] = ()
    cancelled_by: int | None = None  # seq of a later failure on the same goal after the check passed

    @property
    def fix(self) -> Attempt | None:
        """The attempt after which the check passed, unless a later failure cancelled it."""
        last = self.attempts[-1] if self.attempts else None
        return last if last is not None and last.worked and self.cancelled_by is None else None

    @property
    def failed_attempts(self) -> tuple[Attempt, ...]:
        return tuple(a for a in self.attempts if not a.worked)


def _assistant_texts(turns: Sequence[Turn], after: int, before: int) -> tuple[int, ...]:
    return tuple(t.seq for t in turns[after + 1:before] if t.role == "assistant" and t.kind == "text" and t.text.strip())


_EDIT_BLOCK = re.compile(r"<<<<<<< SEARCH\n[\s\S]*?>>>>>>> REPLACE")


def _edit_blocks(turns: Sequence[Turn], after: int, before: int) -> str:
    """The SEARCH/REPLACE blocks the assistant's replies wrote (the change itself, for Aider)."""
    return "\n".join(m.group(0) for t in turns[after + 1:before]
                     if t.role == "assistant" and t.kind == "text" and "<<<<<<< SEARCH" in t.text
                     for m in _EDIT_BLOCK.finditer(t.text))


def _cancels(loop_sig: str, failure: Failure, run: Run) -> bool:
    """A failure after the check passed undoes the fix: the same check again, or the same error elsewhere."""
    if same_check(failure.command, failure.pasted_text, run.command):
        return True
    return bool(loop_sig) and run.signature == loop_sig and not loop_sig.startswith("exit code")


_ENV_PREFIX = re.compile(r"^\s*(?:export\s+)?([A-Za-z_]\w*=\S*)\s+|^\s*(cd\s+\S+)\s*(?:&&|;)\s*")


def _prefixes(command: str) -> list[str]:
    """The environment assignments and `cd` a command starts with (`PYTHONPATH=.`, `cd api`)."""
    out = []
    while m := _ENV_PREFIX.match(command):
        out.append(m.group(1) or m.group(2))
        command = command[m.end():]
    return out


def setting_change(before: Turn, after: Turn) -> str:
    """A setting the re-run has that the failing run did not ('' if none): an argument of the call
    beside its command (`sandbox_permissions: require_escalated`), or an environment assignment or
    `cd` before the command (`PYTHONPATH=.`)."""
    old, new = call_settings(before), call_settings(after)
    changed = [f"{k}: {v}" for k, v in new.items() if old.get(k) != v and isinstance(v, (str, int, bool))]
    was = _prefixes(command_of(before))
    changed += [p for p in _prefixes(command_of(after)) if p not in was]
    changed += [sep] if (sep := separator_change(command_of(before), command_of(after))) else []
    wrap = _SHELL_WRAP.match(command_of(after))
    if wrap and "i" in wrap.group(1) and not _SHELL_WRAP.match(command_of(before)):
        changed.append(f"an interactive shell ({command_of(after).split()[0]} -{wrap.group(1)})")
    return one_line(changed[0], 80) if changed else ""


def _follow(turns: tuple[Turn, ...], w: Walk, failure: Failure) -> Loop:
    attempts: list[Attempt] = []
    last_at = failure.at
    last_call = next((r.call for r in w.runs if r.at_result == failure.at), None)
    green = False
    cancelled = None
    for run in w.runs:
        if run.at_call <= failure.at:
            continue
        if green:
            if run.failed and _cancels(failure.signature, failure, run):
                cancelled = run.result.seq
                break
            continue
        if not same_check(failure.command, failure.pasted_text, run.command):
            continue
        changes = [(i, t) for i, t in w.changes if last_at < i < run.at_call]
        if changes_before_check(run.command) or steps_before(failure.command, run.command):
            changes.append((run.at_call, run.call))  # the change and the check again in one call
        setting = setting_change(last_call, run.call) if last_call is not None and not changes else ""
        if changes:
            attempts.append(Attempt(_assistant_texts(turns, last_at, changes[-1][0]),
                                    tuple(t for _, t in changes), run,
                                    edit_blocks=_edit_blocks(turns, last_at, changes[-1][0])))
        elif setting:  # the same command, run again with another setting: the setting was the change
            attempts.append(Attempt(_assistant_texts(turns, last_at, run.at_call), (run.call,), run, setting))
        last_at, last_call = run.at_result, run.call
        if run.passed:
            green = True  # re-run with nothing changed and green: flaky, no attempt worked
    if green and cancelled is None and failure.signature and not failure.signature.startswith("exit code"):
        last = attempts[-1].check.at_result if attempts else last_at
        cancelled = next((t.seq for i, t, sig in w.pasted if i > last and sig == failure.signature), None)
    return Loop(failure, tuple(attempts), cancelled)


def loops(turns: Sequence[Turn]) -> tuple[Loop, ...]:
    """Every failing check (or pasted error) followed to the same check again, oldest first.

    A failure of a check an earlier loop already follows belongs to that loop.
    """
    return _loops(tuple(turns))


@per_turns
def _loops(turns: tuple[Turn, ...]) -> tuple[Loop, ...]:
    w = walk(turns)
    starts = [Failure(r.at_result, r.result.seq, r.command, r.signature, output=r.result.text) for r in w.runs if r.failed]
    # An error the user pasted and the agent then reproduced starts its loop at the reproduction: that
    # command is the check that can show it gone.
    starts += [Failure(i, t.seq, "", sig, t.text) for i, t, sig in w.pasted
               if not any(r.failed and r.at_result > i and r.signature == sig for r in w.runs)]
    starts.sort(key=lambda f: f.at)
    out: list[Loop] = []
    for failure in starts:
        followed = any(
            failure.command and lp.failure.at < failure.at and (
                lp.cancelled_by is None or lp.cancelled_by >= failure.seq)
            and same_check(lp.failure.command, lp.failure.pasted_text, failure.command)
            for lp in out)
        if not followed:
            out.append(_follow(turns, w, failure))
    return tuple(out)


def fixed_loop(turns: Sequence[Turn]) -> Loop | None:
    """The latest loop whose check turned green after a change and stayed green."""
    return next((lp for lp in reversed(loops(turns)) if lp.fix is not None), None)


# --- what an explanation is about ---------------------------------------------------------------------

_IDENT = re.compile(r"[A-Za-z_][\w.\-/]*[\w]")
_PLAIN = re.compile(r"[a-z]+")
MAX_NAMED_CHARS = 3000  # an edit that writes a whole file names everything in it: its head is enough


def _identifiers(text: str) -> set[str]:
    """Identifier-shaped tokens: with `_`, `.`, `/`, `-`, a digit or an inner capital; and file stems."""
    out = set()
    for token in _IDENT.findall(text[:MAX_NAMED_CHARS]):
        token = token.strip(".-/")
        if len(token) < 3:
            continue
        if _PLAIN.fullmatch(token.lower()) and not re.search(r"[a-z][A-Z]", token):
            continue  # a plain word names nothing in particular
        out.add(token.lower())
        for part in re.split(r"[/.]", token):
            if len(part) >= 4 and not part.isdigit():
                out.add(part.lower())
    return out


_ERROR_LINE = re.compile(r"(?im)^.*(?:error|exception|fail|panic|traceback|^\s*File \").*$")


def names_in(attempt: Attempt, failure: Failure) -> frozenset[str]:
    """The files, identifiers and settings an attempt's changes and its loop's error name."""
    names: set[str] = set()
    for change in attempt.changes:
        names |= _identifiers(change.text)
    names |= _identifiers(attempt.edit_blocks)
    names |= _identifiers(failure.signature)
    names |= _identifiers("\n".join(_ERROR_LINE.findall(failure.output or failure.pasted_text)))
    names -= {"file_path", "old_string", "new_string", "command", "description", "replace_all", "content"}
    return frozenset(names)


def mentions(text: str, names: frozenset[str]) -> bool:
    """Does `text` name one of `names` (as a whole token)?"""
    low = text.lower()
    return any(re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", low) for n in names if n in low)


# Words that announce a step still to come ("Let me run it", "Next, I'll …"); an offer to the user
# ("Let me know if you want …") is not one: the work it closes is done.
LOOKS_AHEAD = re.compile(
    r"(?i)^(?:(?:now|next|first|then|ok(?:ay)?|so|great|perfect|good|alright)[,!.]?\s+)*"
    r"(?:let me(?! know)|let's|i'?ll|i will|i'?m going to|i am going to|i need to|we need to|i should|"
    r"i'?m gonna|going to|time to|i can now|i want to|now i)\b"
)
_LAST_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def last_sentence(text: str) -> str:
    """The last sentence of a text's last line, without list or quote marks."""
    lines = text.strip().splitlines()
    parts = [p for p in _LAST_SENTENCE.split(lines[-1]) if p.strip()] if lines else []
    return parts[-1].strip().lstrip("#>*-• \t").strip() if parts else ""


def states_something(text: str) -> bool:
    """Text that says something (not only what comes next, not a question), long enough to be a claim."""
    text = text.strip()
    first = _LAST_SENTENCE.split(text, 1)[0].strip().lstrip("#>*-• \t") if text else ""
    return len(text) >= 40 and not text.endswith("?") and not LOOKS_AHEAD.match(first)


def failed_explanations(turns: Sequence[Turn]) -> dict[int, int]:
    """The assistant's explanations of a change after which the same check failed again with the
    same error: {explanation seq: seq of that failing re-run}. A different error after the change
    is progress, and leaves the explanation standing."""
    return dict(_failed_explanations(tuple(turns)))


@per_turns
def _failed_explanations(turns: tuple[Turn, ...]) -> dict[int, int]:
    by_seq = {t.seq: t for t in turns}
    out: dict[int, int] = {}
    for lp in loops(turns):
        before, output = lp.failure.signature, lp.failure.output
        for attempt in lp.attempts:
            sig = attempt.check.signature
            if not attempt.worked and sig and not sig.startswith("exit code") and (  # the same error, or at its place
                    sig == before or error_moved(output, attempt.check.result.text)):
                names = names_in(attempt, lp.failure)
                for seq in attempt.said:
                    text = by_seq[seq].text
                    if states_something(text) and mentions(text, names):
                        out.setdefault(seq, attempt.check.result.seq)
            before, output = sig, attempt.check.result.text
    return out
