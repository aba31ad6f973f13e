"""What a card proves: its kind (a fix, a decision, a confirmed answer, or a work report), what
verified it, and whether the rest of the session contradicts it.

A card is a lesson the log proves, decided from facts (runs with a verdict, edits, pasted errors,
the user's own words), not from how the assistant's report reads:

- *fix*: a failure was observed (a failing run, an error the user pasted), a change followed, and
  the same check passed after it (`cards.loop.fixed_loop`). The check must be able to exercise the
  change: a green `go test` says nothing about an edit to `app.js`.
- *confirmed_answer*: a problem was observed or reported, and the user said in their own words (any
  language, `cards.phrasebook.CONFIRMS`) that the answer worked.
- *decision*: the conclusion is the user's own words (a choice they stated).
- *work_report*: the request was done and nothing failed before it: a change list, however green
  the suite was afterwards. It never goes active: a change list teaches the next session nothing.
- *unproven*: a problem, but nothing checked the answer.

Read past the range (`contradiction`): the same error again, the same check failing again before
anything changed, the user's next words rejecting the result, or a later "that was not the cause"
take the card back, with the contradicting turn cited.

Self-inflicted (`self_inflicted`): a failure in files the agent itself changed earlier in the same
experience, fixed by changing only those files, teaches nothing beyond that experience (a typo, a
test it just wrote), unless the error is the environment's (a missing module, a denied permission).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memoir.cards.commands import (added_text, chain_steps, changed_paths, command_key, command_of, is_test_or_build,
                                   only_looks, same_target, target_stems)
from memoir.cards.hosts.registry import EDIT_TOOLS
from memoir.cards.cues import is_chatter, is_prompt_template
from memoir.cards.loop import TEST_RUNNER, Loop, fixed_loop, runner_of, same_check, setting_change, walk
from memoir.cards.outcomes import REPORT_LEAD, verification
from memoir.cards.phrasebook import COMPILE_ERRORS, DEPENDENCY_FIX, GO_AHEAD, QUESTIONS, ENVIRONMENT, LOCAL_ROUTE, OTHER_ROUTE, UNRELATED, PROBLEM_REPORTS, REJECTS, RETRACTS, first_rule
from memoir.cards.self_evident import told_by_error
from memoir.cards.signals import error_moved
from memoir.cards.signatures import error_signature, is_error_output
from memoir.cards.values import Turn

KINDS = ("fix", "confirmed_answer", "decision", "checked_answer", "work_report", "unproven", "open")
ACTIVE_KINDS = ("fix", "confirmed_answer", "decision", "checked_answer")
_TEST_FILE = re.compile(r"(?i)(?:^|/)(?:tests?|spec|__tests__)/|(?:^|/)test_[^/]+$|_(?:test|spec)\.\w+$|\.(?:test|spec)\.\w+$")
RETRACTION_WINDOW = 60  # turns after a card's range in which the agent's "that was not the cause" counts

# Which files a check's runner can exercise, by the runner's first word(s). A runner not listed
# (make, bazel, a script) may exercise anything.
_RUNNER_LANGUAGES: tuple[tuple[tuple[str, ...], frozenset[str]], ...] = (
    (("pytest", "python", "python3", "py.test", "tox", "nox", "mypy", "ruff", "flake8", "pylint", "pyright", "uv",
      "poetry", "hatch", "unittest"), frozenset({"py", "pyi", "pyx", "ipynb"})),
    (("go",), frozenset({"go"})),
    (("cargo", "rustc"), frozenset({"rs"})),
    (("npm", "pnpm", "yarn", "bun", "npx", "node", "jest", "vitest", "tsc", "eslint", "deno", "mocha", "playwright"),
     frozenset({"js", "jsx", "ts", "tsx", "mjs", "cjs", "vue", "svelte", "html", "css", "scss", "less"})),
    (("mvn", "gradle", "./gradlew", "gradlew", "sbt"), frozenset({"java", "kt", "kts", "scala", "groovy"})),
    (("mix", "elixir"), frozenset({"ex", "exs", "heex", "eex", "leex"})),
    (("dotnet", "msbuild"), frozenset({"cs", "fs", "vb", "razor", "cshtml"})),
    (("rspec", "rake", "bundle", "ruby"), frozenset({"rb", "erb", "rake"})),
    (("swift", "xcodebuild"), frozenset({"swift", "m", "mm"})),
    (("phpunit", "composer", "php"), frozenset({"php"})),
)
_CODE_EXTENSIONS = frozenset().union(*(langs for _, langs in _RUNNER_LANGUAGES)) | {"c", "h", "cpp", "hpp", "cc"}


@dataclass(frozen=True, slots=True)
class Proof:
    """A card's kind and what decided it."""

    kind: str
    verified_by: str = ""  # "tN": the passing check, or the user's confirmation, at turn N
    why: str = ""  # one line a person reads in `memoir explain` and the card's front matter
    problem_seq: int | None = None  # the failure (or report) the card is about
    check: str = ""  # the command that went red → green, for reading past the range
    signature: str = ""  # the error the fix cleared
    self_inflicted: bool = False
    paths: tuple[str, ...] = ()  # the files the fix changed
    told: bool = False  # the failure's own output held the fix (`cards.self_evident`)


@dataclass(frozen=True, slots=True)
class Contradiction:
    """A later turn of the session that takes a card back."""

    seq: int
    line: int
    rule: str

    def cite(self) -> str:
        return f"t{self.seq} (line {self.line}): {self.rule}"


def _languages(command: str) -> frozenset[str]:
    """The file extensions the program a check starts can run (`go` → go files); empty when memoir cannot
    tell (make, a script). The program only: `loop.runner_of` is the program and its subcommand."""
    words = command_key(command).split()
    tool = words[0] if words else ""
    return next((langs for names, langs in _RUNNER_LANGUAGES if tool in names), frozenset())


def stepped(lp: Loop) -> set[str]:
    """The errors of a chain that a change cleared on the way to green, each then met by another error on the
    same check: each gets a card of its own (`draft.inner_lessons`). A re-run with another setting, or with
    the check itself changed, proves no step."""
    out: set[str] = set()
    before, output = lp.failure.signature, lp.failure.output
    for attempt in lp.attempts[:-1]:
        sig = attempt.check.signature
        if (not attempt.worked and sig and before and sig != before and not before.startswith("exit code")
                and not attempt.setting and command_key(attempt.check.command) == command_key(lp.failure.command)
                and not error_moved(output, attempt.check.result.text)):
            out.add(before)
        before, output = sig, attempt.check.result.text
    return out


def exercises(check: str, paths: Sequence[str]) -> bool:
    """Can `check` exercise edits to `paths`? False only when every path is code of a language the
    check's runner does not run (`go test` after editing only `app.js`); config, docs and unknown
    runners never count against it."""
    langs = _languages(check)
    if not langs:
        return True
    exts = {p.rsplit(".", 1)[-1].lower() for p in paths if "." in p.rsplit("/", 1)[-1]}
    code = exts & _CODE_EXTENSIONS
    return not code or bool(code & langs) or bool(exts - _CODE_EXTENSIONS)


def problem_in(turns: Sequence[Turn]) -> tuple[int, str] | None:
    """The first failure the experience shows: a failing run, an error the user pasted, or the user
    telling of one (`PROBLEM_REPORTS`); (seq, what), or None when nothing went wrong."""
    w = walk(tuple(turns))
    found = [(r.result.seq, "failing_run") for r in w.runs if r.failed]
    found += [(t.seq, "pasted_error") for _, t, _ in w.pasted]
    for t in turns:
        if t.role == "user" and t.kind == "text" and not is_chatter(t.text) and not is_prompt_template(t.text):
            # The user's framing words: a pasted spec or document that mentions "error" somewhere is no report.
            rule = first_rule(PROBLEM_REPORTS, t.text[:REPORT_LEAD])
            if rule:
                found.append((t.seq, rule))
                break
    # A failure reproduced here outranks the user's word for it: the check that reproduced it can prove it gone.
    runs = [f for f in found if f[1] == "failing_run"]
    return min(runs or found) if found else None


def _short(path: str) -> str:
    return "/".join(p for p in path.replace("\\", "/").split("/") if p and p != ".")[-60:]


_REASONED = re.compile(r"(?i)\b(?:because|since|so that|instead of|rather than|replaces?|reverses?|no longer|"
                       r"the reason|why:|otherwise)\b")


def _agreed_decision(turns: tuple[Turn, ...], problem: tuple[int, str] | None) -> Proof | None:
    """A choice the user agreed to: the experience opens on the user's go-ahead ("agreed, do it") to what the
    assistant proposed about a problem, the change follows, a check passes after it, and the closing words
    give the reason. A go-ahead with no problem behind it ("yes to all") decides nothing worth recalling."""
    first = next((t for t in turns if t.role == "user" and t.kind == "text" and not is_chatter(t.text)), None)
    if first is None or problem is None or not first_rule(GO_AHEAD, first.text[:200]):
        return None
    fresh = verification(turns)
    closing = next((t for t in reversed(turns) if t.role == "assistant" and t.kind == "text"), None)
    if fresh is None or closing is None or not _REASONED.search(closing.text):
        return None
    return Proof("decision", f"t{fresh.seq}", f"the user agreed to it at t{first.seq}; `{fresh.command[:60]}` passed "
                 f"after the change at t{fresh.seq}", problem[0], fresh.command)


_HOW = re.compile(r"(?i)\bhow (?:do|does|can|should|would|to)\b|\bcómo\b|\bcomment\b|\bjak\b|\bhoe\b|\bwie\b|"
                  r"\bcomo\b|怎么|如何|どうやって|どうすれば|어떻게")
# A shell command that writes a file: then the answer is work done, not a how-to ("sed -i", "> out.py", a patch).
_WRITES = re.compile(r"\bsed\s+(?:-\w*\s+)*-i|\btee\b|(?<![>&\d])>{1,2}\s*(?!/dev/null|&)[\w./~$-]|\bapply_patch\b|"
                     r"\bgit apply\b|\bpatch\s|\b(?:mv|cp|rm|touch|mkdir)\s")


def _checked_answer(turns: tuple[Turn, ...]) -> Proof | None:
    """A question the user asked, answered, and the answer run and passing before anything was edited
    ("how do I add a migration?" … "try it with a no-op one": `migrate up` passes), or done with commands
    alone and checked before the answer came."""
    asked = next((t for t in turns if t.role == "user" and t.kind == "text" and not is_chatter(t.text)
                  and not is_prompt_template(t.text) and first_rule(QUESTIONS, t.text[:REPORT_LEAD])), None)
    if asked is None:
        return None
    answer = next((t for t in turns if t.seq > asked.seq and t.role == "assistant" and t.kind == "text"
                   and len(t.text.strip()) >= 60), None)
    if answer is None:
        return None
    w = walk(turns)
    done = [t.seq for _, t in w.changes if t.seq > asked.seq and command_of(t)]  # what was asked, done by a command
    checks = [r for r in w.runs if done and r.call.seq >= done[0] and r.passed and is_test_or_build(r.command)]
    if checks and answer.seq > checks[-1].result.seq and _HOW.search(asked.text[:REPORT_LEAD]) \
            and not any(r.failed for r in w.runs) and not any(t.tool_name.lower() in EDIT_TOOLS or _WRITES.search(
                command_of(t)) for _, t in w.changes):
        # Done first, answered after: asked how, the agent did it with commands that write no file
        # (`terraform import`), nothing failed, and a check passed before its answer (`plan`: No changes).
        last = checks[-1]
        return Proof("checked_answer", f"t{last.result.seq}", f"question at t{asked.seq}; `{last.command[:60]}` did "
                     f"it and passed at t{last.result.seq}, before the answer at t{answer.seq}", asked.seq, last.command)
    edits = [t.seq for _, t in w.changes if t.seq > answer.seq and t.tool_name.lower() in EDIT_TOOLS]
    for run in w.runs:
        if run.call.seq > answer.seq and (not edits or run.call.seq < edits[0]) and run.passed \
                and not only_looks(run.command):
            return Proof("checked_answer", f"t{run.result.seq}", f"question at t{asked.seq}, answered at t{answer.seq}; "
                         f"`{run.command[:60]}` ran the answer and passed at t{run.result.seq}", asked.seq, run.command)
        if run.call.seq > answer.seq and run.failed:
            return None
    return None


def _wider_suite(failed: str, command: str) -> bool:
    """`npm test` after `npx vitest run test/retry.test.ts` failed: another test runner of the same language,
    over the whole suite (no target), runs the failed test too. A linter or a build is no such suite."""
    return (bool(TEST_RUNNER.search(command_key(failed))) and bool(TEST_RUNNER.search(command_key(command)))
            and bool(_languages(failed)) and _languages(failed) == _languages(command) and not target_stems(command))


def _names_check(pasted: str, command: str) -> bool:
    """Does the pasted failure name what `command` runs (`FareCalculatorTest`, `test_cart.py`), so the
    check exercises the very test that failed for the user?"""
    if same_check("", pasted, command):
        return True
    words = [w.strip("'\"") for w in command_key(command).split()[1:] if not w.startswith("-")]
    return any(len(w) >= 6 and w.replace("_", "").replace(".", "").isalnum() and w in pasted for w in words)


def self_inflicted(turns: Sequence[Turn], lp: Loop) -> bool:
    """The fix changed only files the agent changed earlier in this experience, before the failure,
    and the error is not the environment's: a slip of its own, not a lesson."""
    if lp.fix is None or not lp.failure.command:
        return False  # a failure the user pasted was met outside this experience's own edits
    if first_rule(ENVIRONMENT, lp.failure.signature + "\n" + lp.failure.output[-400:]):
        return False
    if any(first_rule(DEPENDENCY_FIX, added_text(t)[:6000]) for t in lp.fix.changes):
        return False
    w = walk(tuple(turns))
    before = {_short(p) for i, t in w.changes if i < lp.failure.at for p in changed_paths(t)}
    fixed = {_short(p) for t in lp.fix.changes for p in changed_paths(t)}
    return bool(fixed) and fixed <= before


def green_before(before: Sequence[Turn], command: str) -> int | None:
    """The result seq of the last run of `command`'s check in the session before the experience, when it
    passed: that check was green while the problem happened, so green again after the change says
    nothing of the problem (unless a test written for it ran)."""
    if not before:
        return None
    last = next((r for r in reversed(walk(tuple(before)).runs) if same_target(r.command, command)), None)
    return last.result.seq if last is not None and last.passed else None


def prove(turns: Sequence[Turn], *, confirmed_at: int | None, users_words: bool,
          before: Sequence[Turn] = ()) -> Proof:
    """The card's kind from the experience's facts.

    Args:
        turns: the experience's turns.
        confirmed_at: the seq of the user's confirmation of the answer, if any (`EvidenceView.confirming_turn`).
        users_words: the conclusion is the user's own words.
        before: the session's turns before the experience, when known (`read_past_range`): a check that
            was green there before a failure the user pasted cannot prove that failure gone.
    """
    turns = tuple(turns)
    problem = problem_in(turns)
    lp = fixed_loop(turns)
    if lp is not None and lp.fix is not None:
        check = lp.fix.check
        paths = [p for t in lp.fix.changes for p in changed_paths(t)]
        # The first error of the chain that has no card of its own (`stepped`: `draft.inner_lessons` cards them).
        sigs = [x for x in [lp.failure.signature] + [a.check.signature for a in lp.failed_attempts] if x]
        own = stepped(lp)
        sig = next((x for x in sigs if x not in own), sigs[-1] if sigs else "")
        failing = next((r.call for r in walk(turns).runs if r.result.seq == lp.failure.seq), None)
        setting = setting_change(failing, check.call) if failing is not None and not lp.fix.setting else ""
        if setting and any(t is not check.call for t in lp.fix.changes):
            return Proof("unproven", "", f"the check was re-run with {setting} as well as after edits: which of them "
                         "fixed it is unknown", lp.failure.seq, check.command, sig)
        was_green = green_before(before, check.command) if not lp.failure.command else None
        if was_green is not None and not any(_TEST_FILE.search(p) for p in paths):
            return Proof("unproven", "", f"the error pasted at t{lp.failure.seq}: `{check.command[:60]}` was already "
                         f"green at t{was_green}, before it, so passing again cannot prove it gone", lp.failure.seq,
                         check.command, sig)
        if not exercises(check.command, paths):
            return Proof("unproven", "", f"`{check.command[:60]}` cannot exercise edits to "
                         + ", ".join(sorted({p.rsplit('.', 1)[-1] for p in paths if '.' in p})) + " files",
                         lp.failure.seq, check.command, sig)
        # The turn that showed the card's own error (a chain's later step, when its first errors have cards of their own).
        shown = next((a.check.result.seq for a in lp.failed_attempts if sig != lp.failure.signature
                      and a.check.signature == sig), lp.failure.seq)
        output = next((t.text for t in turns if t.seq == shown), lp.failure.output)
        told = told_by_error(output, lp.fix.changes, lp.failure.command)
        return Proof("fix", f"t{check.result.seq}", f"failed at t{shown}, passed after the change at "
                     f"t{check.result.seq}", lp.failure.seq, check.command, sig, self_inflicted(turns, lp), tuple(paths),
                     told)
    elsewhere = None  # a check that passed, but cannot prove a problem seen on another route
    fresh = verification(turns) if problem is not None else None
    if fresh is not None and fresh.failed_seq is None and problem is not None and fresh.seq > problem[0]:
        # No check went red → green, but the problem came first and a check that was not green before the
        # change passed after it: proof, when that check can exercise the change and the problem was not
        # seen on another route (a CI failure is proven only on CI).
        w = walk(turns)
        paths = [p for i, t in w.changes if turns[i].seq > problem[0] and t.seq < fresh.command_seq
                 for p in changed_paths(t)]
        by_seq = {t.seq: t for t in turns}
        said = by_seq[problem[0]].text[:3000]
        other = first_rule(OTHER_ROUTE, said) if problem[1] == "pasted_error" and not first_rule(LOCAL_ROUTE, said) else ""
        route = f"it was seen on another route ({other})" if other else ""
        failed_cmd = next((r.command for r in w.runs if r.result.seq == problem[0]), "")
        steps = chain_steps(command_key(fresh.command))
        same_runner = bool(failed_cmd) and (runner_of(failed_cmd) in {runner_of(p) for p in steps}
                                            or any(_wider_suite(failed_cmd, p) for p in steps))
        if problem[1] == "failing_run" and not same_runner:
            # A check that failed here is proven fixed only by that check passing (the loop above); another
            # check passing says nothing of it.
            route = "the check that failed never passed again"
        elif problem[1] != "pasted_error" and not (any(_TEST_FILE.search(p) for p in paths)
                                                  or _names_check(by_seq[problem[0]].text[:3000], fresh.command)):
            # A behaviour the user saw is proven gone by the user, or by a test written for it after they told of
            # it; a suite that could not see it proves nothing.
            route = "only the user saw it, and no test was written for it"
        was_green = green_before(before, fresh.command)
        if not route and was_green is not None and not any(_TEST_FILE.search(p) for p in paths):
            route = f"`{fresh.command[:60]}` was already green at t{was_green}, before it"
        if route:
            elsewhere = Proof("unproven", "", f"the problem at t{problem[0]}: {route}; `{fresh.command[:60]}` "
                              "cannot prove it gone", problem[0])
        elif not any(_TEST_FILE.search(p) for p in paths) and not _names_check(said, fresh.command) \
                and not (first_rule(COMPILE_ERRORS, said) and is_test_or_build(fresh.command)):
            # The suite was green while the user's failure happened: green again says nothing unless a test
            # written or changed after the failure (a regression test for it) ran.
            elsewhere = Proof("unproven", "", f"the error the user pasted at t{problem[0]} was never reproduced: no "
                              f"test was written for it before `{fresh.command[:60]}` passed", problem[0])
        elif exercises(fresh.command, paths):
            return Proof("fix", f"t{fresh.seq}", f"{problem[1]} at t{problem[0]}; `{fresh.command[:60]}` had not "
                         f"passed before the change and passed after it at t{fresh.seq}", problem[0], fresh.command,
                         error_signature(said), paths=tuple(paths))
    if confirmed_at is not None and problem is not None:
        failed_at = confirmed_command_failed(turns, confirmed_at)
        if failed_at is not None:
            return Proof("unproven", "", f"the command the user confirmed at t{confirmed_at} had failed in their own "
                         f"paste at t{failed_at}: what made it work in between is not what the answer names", problem[0])
        # No signature: what the user confirmed is the outcome, not any one error pasted on the way to it.
        return Proof("confirmed_answer", f"t{confirmed_at}", f"{problem[1]} at t{problem[0]}; the user confirmed "
                     f"it worked at t{confirmed_at}", problem[0])
    decided = _agreed_decision(turns, problem)
    if decided is not None:
        return decided
    checked = _checked_answer(turns)
    if checked is not None and problem is None:
        return checked
    if users_words:
        return Proof("decision", "", "the conclusion is the user's own words", problem[0] if problem else None)
    if elsewhere is not None:
        return elsewhere
    if problem is None:
        return Proof("work_report", "", "nothing failed and nobody reported a problem before the change: a change list")
    return Proof("unproven", "", f"{problem[1]} at t{problem[0]}, but no check passed after the change and the user "
                 "did not confirm it", problem[0])


MIN_CONFIRMED_COMMAND = 12
_AFTER_COMMAND = 300  # characters after a command in a paste that hold its own output


def confirmed_command_failed(turns: Sequence[Turn], confirmed_at: int) -> int | None:
    """The seq of an earlier paste of the user's, in this experience, where the very command they now confirm
    ("this worked: X=1 app") ran and printed an error. The answer credits what the command carries (a
    setting, a flag), but the command failed with it before: something else changed in between. A paste
    where the program was not even found counts too: installing it in between may be what made it work."""
    said = next((t.text for t in turns if t.seq == confirmed_at), "")
    spans = {" ".join(part.split()) for line in said.splitlines() for part in (line, line.rsplit(":", 1)[-1])}
    spans = {s for s in spans if len(s) >= MIN_CONFIRMED_COMMAND and " " in s and any(c in s for c in "=-/.")}
    for t in turns:
        if t.seq >= confirmed_at or t.role != "user" or t.kind != "text":
            continue
        for span in spans:
            ran = re.search(r"\s+".join(map(re.escape, span.split())), t.text)
            if ran is not None and is_error_output(t.text[ran.end():ran.end() + _AFTER_COMMAND]):
                return t.seq
    return None


def _about(proof: Proof, pasted: str) -> bool:
    """Is an error the user pasted about this card: its own error, or a file its fix changed? A new error
    about something else is the next problem, not a rejection of this one."""
    if proof.signature and error_signature(pasted) == proof.signature:
        return True
    names = {p.replace("\\", "/").rsplit("/", 1)[-1] for p in proof.paths}
    return any(len(n) > 3 and n in pasted for n in names) or not proof.paths and not proof.signature


_NAMED = re.compile(r"`([^`\n]{3,80})`|\b([A-Za-z_][\w]*(?:[._/][\w]+)+)\b")


def _shares_a_name(text: str, conclusion: str) -> bool:
    """Does `text` name something the conclusion names (a quoted token, a dotted or snake_case name, a path)?"""
    names = {a or b for a, b in _NAMED.findall(conclusion)}
    return any(len(n) >= 3 and n in text for n in names)


def contradiction(proof: Proof, session: tuple[Turn, ...], after: int, conclusion: str = "") -> Contradiction | None:
    """The first turn after index `after` of `session` that takes the card back, or None.

    Args:
        proof: the card's proof (its check and the error it cleared).
        session: the whole session's turns, in order.
        after: the index in `session` of the card's last turn.
        conclusion: the card's conclusion: a later "that was not the cause" counts only when it names
            something the conclusion names (another problem's retraction is about that problem).
    """
    later = session[after + 1:]
    if not later:
        return None
    first_user = next((t for t in later if t.role == "user" and t.kind == "text" and not is_chatter(t.text)), None)
    if first_user is not None and not is_prompt_template(first_user.text) and not first_rule(UNRELATED, first_user.text[:300]):
        rule = first_rule(REJECTS, first_user.text[:600])
        if rule:
            return Contradiction(first_user.seq, first_user.line, f"the user's next words reject it ({rule})")
        if is_error_output(first_user.text) and error_signature(first_user.text) and _about(proof, first_user.text):
            return Contradiction(first_user.seq, first_user.line, "the user's next message pastes an error: "
                                 f"`{error_signature(first_user.text)[:80]}`")
    sig = proof.signature
    if sig and not sig.startswith("exit code"):
        for t in later:
            if (t.kind == "error" or (t.role == "user" and t.kind == "text")) and error_signature(t.text) == sig:
                return Contradiction(t.seq, t.line, f"the same error again: `{sig[:80]}`")
    if proof.check:
        w = walk(session)
        for run in w.runs:
            if run.at_call <= after:
                continue
            changed = any(after < i < run.at_call for i, _ in w.changes)
            if changed:
                break  # later work changed something: a later red run is about that
            if run.failed and same_check(proof.check, "", run.command):
                return Contradiction(run.result.seq, run.result.line, "the same check failed again before anything changed")
    for t in later[:RETRACTION_WINDOW]:
        if t.role == "assistant" and t.kind == "text":
            rule = first_rule(RETRACTS, t.text[:2000])
            if rule and (not conclusion or _shares_a_name(t.text[:2000], conclusion)):
                return Contradiction(t.seq, t.line, f"a later turn says it was not the cause ({rule})")
    return None


__all__ = ["ACTIVE_KINDS", "KINDS", "Contradiction", "Proof", "contradiction", "exercises", "problem_in",
           "prove", "self_inflicted", "stepped"]
