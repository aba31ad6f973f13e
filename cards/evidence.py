"""What the evidence alone supports: how an experience ended, and a conclusion no sentence gave.

- `ending`: the turns end unresolved when the last check failed, the last message is cut
  mid-sentence, or the work stopped mid-step; a card of such turns is `incomplete` and states
  only what is open (`open_statement`), never an earlier sentence;
- `evidence_statement`: for a loop whose check turned green (`cards.loop`) when no sentence of
  the session explains the fix: what failed, what was changed, what passed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memoir.cards.commands import added_text, changed_names, command_of, describe_change, list_key, one_line
from memoir.cards.cues import is_commit_output
from memoir.cards.loop import LOOKS_AHEAD, Loop, changed_between, last_sentence, loops, walk
from memoir.cards.outcomes import Verification
from memoir.cards.signals import is_notable_result
from memoir.cards.signatures import error_signature, explained, shown_error
from memoir.cards.values import Experience, Turn

MAX_EVIDENCE_ITEMS = 12

# --- how the turns end ----------------------------------------------------------------------------------

CUT_END = re.compile(
    r"(?i)(?:\b(?:therefore|so|thus|hence|because|and|or|but|then|the|a|an|to|of|with|by|for|in|is|are|"
    r"which|that|since|as|if|when)|[:,;(\[{–-]|\.\.\.|…)\s*$"
)
CUT_END_LONGEST = 9  # "therefore": no match of CUT_END starts further than this before the last non-space


def ends_cut(text: str) -> bool:
    """`CUT_END.search(text)`, started where a match can start: a match ends at the last non-space
    character, so only the last few characters are tried (from the start, the regex tries each one)."""
    last = len(text.rstrip())  # `\s` and `str.rstrip` agree on what is whitespace
    return CUT_END.search(text, max(0, last - CUT_END_LONGEST)) is not None  # `\b` still sees what precedes


@dataclass(frozen=True, slots=True)
class Ending:
    """Why the turns end unresolved, the turn that shows it, and the open question in a line."""

    reason: str  # last_check_failed | ended_mid_sentence | ended_mid_work
    seq: int
    question: str  # for Follow-up: the open question, with the words it stopped on
    what: str = ""  # for the conclusion: what the evidence shows, quoting no sentence


def ending(turns: Sequence[Turn], ends_session: bool = True) -> Ending | None:
    """How `turns` end when they end unresolved, or None when they end settled.

    - `last_check_failed`: the last run with a verdict failed (nothing after it passed);
    - `ended_mid_sentence`: the last turn is the assistant's text and it stops mid-sentence;
    - `ended_mid_work`: the last turn is a call that got no result, or (when the turns end the
      session: a next experience may well do the step announced) the assistant's last words say
      what it is about to do and nothing after them passed.
    """
    turns = tuple(turns)
    if not turns:
        return None
    w = walk(turns)
    last_run = w.runs[-1] if w.runs else None
    if last_run is not None and last_run.failed and not any(
            is_commit_output(t.text) for t in turns[last_run.at_result + 1:] if t.kind == "tool_result"):
        what = f"`{one_line(last_run.command, 120)}`"
        sig = f" with `{one_line(shown_error(last_run.result.text, last_run.signature), 120)}`" if last_run.signature else ""
        return Ending("last_check_failed", last_run.result.seq, f"{what} still fails{sig} (t{last_run.result.seq}): what fixes it?")
    talk = [(i, t) for i, t in enumerate(turns) if t.role == "assistant" and t.kind == "text" and t.text.strip()]
    last = turns[-1]
    if last.kind == "tool_call" and last.role == "assistant" and not _publishes_committed_work(turns, last):
        what = f"the session stopped while running `{_quotable(command_of(last) or last.tool_name)}` (t{last.seq})"
        return Ending("ended_mid_work", last.seq, f"{what}; it never reported back", what)
    if not talk:
        return None
    at, said = talk[-1]
    text = said.text.strip()
    # A piece cut out of a longer stretch (`ends_session=False`) may end on "Now let me run the suite:": the
    # step it announces is the next piece's first turn, not a message cut off.
    announces = not ends_session and text.endswith(":")
    if at == len(turns) - 1 and ends_cut(text) and not text.endswith("```") and not announces:
        tail = " ".join(text.split()[-12:])
        what = f"the last message stops mid-sentence (t{said.seq})"
        return Ending("ended_mid_sentence", said.seq, f"{what}: “…{tail}”", what)
    sentence = last_sentence(text)
    passed_after = any(r.passed and r.at_result > at for r in w.runs)
    if ends_session and sentence and LOOKS_AHEAD.match(sentence) and not passed_after:
        what = f"the work stopped at t{said.seq}, with a step announced and never reported"
        return Ending("ended_mid_work", said.seq, f"the work stopped at t{said.seq}: “{one_line(sentence, 160)}”", what)
    return None


_PUBLISH = re.compile(r"^\s*(?:git push\b|gh pr (?:create|merge)\b)")


def _publishes_committed_work(turns: tuple[Turn, ...], last: Turn) -> bool:
    """A push or pull request left without an answer after a commit that succeeded: the work was
    settled at the commit; only its publication is unconfirmed (and no card may say it happened)."""
    return bool(_PUBLISH.match(command_of(last) or "")) and any(
        t.kind == "tool_result" and is_commit_output(t.text) for t in turns)


# --- conclusions from the evidence itself -------------------------------------------------------------


def _quotable(command: str) -> str:
    """A command as a card may quote it: one line, cut before quotes or escapes a log stores escaped."""
    line = one_line(command, 120)
    cut = min((i for i in (line.find('"'), line.find("\\")) if i >= 0), default=-1)
    if cut >= 0:
        line = line[:cut].rstrip()
    return line or one_line(command, 40).split(" ", 1)[0]


_CD = re.compile(r"""^\s*cd\s+(?:"[^"]*"|'[^']*'|\S+)\s*(?:&&|;)\s*""")


def _without_cd(command: str) -> str:
    """The check without the folder change before it (`cd "C:\\x"; npm run compile` is `npm run compile`)."""
    return _CD.sub("", command, count=1) or command


MAX_SHOWN_LINES, MAX_SHOWN_LINE = 3, 80  # an edit this small is shown whole, not named by its file


def _what_changed(fix) -> str:
    """The change in a few words: a small edit by the lines it added ("adding `"DOM"` to `tsconfig.json`"),
    anything else as the attempt names it ("editing `app.py`", "`pip install x`")."""
    tried = fix.tried()
    paths = changed_names(fix.changes)
    added = [line.strip() for t in fix.changes for line in added_text(t).splitlines() if line.strip().strip("{}[](),;")]
    if (not tried.startswith("editing `") or len(paths) != 1 or not 0 < len(added) <= MAX_SHOWN_LINES
            or any(len(line) > MAX_SHOWN_LINE or "`" in line for line in added)):
        return tried
    # A bare item joins a list: the list's key says what it set (`"DOM"` to `lib` in `tsconfig.json`).
    keys = {next((k for t in fix.changes if (k := list_key(t, line))), "") for line in added}
    key = f"`{keys.pop()}` in " if len(keys) == 1 and "" not in keys else ""
    return "adding " + ", ".join(f"`{line.rstrip(',')}`" for line in added) + f" to {key}`{next(iter(paths))}`"


def evidence_statement(lp: Loop) -> str:
    """What failed, what was changed, what passed: a conclusion that cannot be wrong, for a loop
    whose fix no sentence of the session explains."""
    fix = lp.fix
    if fix is None:
        return ""
    output = lp.failure.output or lp.failure.pasted_text
    shown = shown_error(output, lp.failure.signature)
    sig = f" with `{one_line(shown, 120)}`" if lp.failure.signature else ""
    why = explained(output, lp.failure.signature) if lp.failure.signature else ""
    why = f", which it explains: “{why}”" if why else ""
    # The folder change is noise before a check, unless how the steps are chained was what changed.
    quoted = (lambda c: one_line(c, 160)) if " instead of " in fix.setting else (lambda c: _quotable(_without_cd(c)))
    check = f"`{quoted(fix.check.command)}` passes at t{fix.check.result.seq}"
    tried = _what_changed(fix)
    if lp.failure.command:
        return (f"`{quoted(lp.failure.command)}` fails{sig} (t{lp.failure.seq}){why}; "
                f"{tried} fixed it: the same check {check}.")
    return f"The failure the user pasted (t{lp.failure.seq}) fails{sig}{why}; {tried} fixed it: {check}."


def open_statement(turns: Sequence[Turn], end: Ending) -> str:
    """What an unresolved experience shows, from the evidence alone: never an earlier sentence."""
    if end.reason != "last_check_failed":
        return f"Unresolved: {end.what}."
    w = walk(tuple(turns))
    last = w.runs[-1]
    tried = [describe_change(t) for t in changed_between(w, -1, last.at_call)]
    after = f" after {', '.join(list(dict.fromkeys(tried))[:3])}" if tried else ""
    sig = f" with `{one_line(shown_error(last.result.text, last.signature), 120)}`" if last.signature else ""
    return f"Unresolved: `{_quotable(last.command)}` still fails{sig} at t{last.result.seq}{after}."


# --- the Evidence section --------------------------------------------------------------------------------


def _flat(text: str, limit: int) -> str:
    """Every line of `text` as one, at most `limit` chars."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def shown_in(turns: Sequence[Turn], signature: str) -> str:
    """The signature's line as the first turn holding that error shows it (`signatures.shown_error`)."""
    if not signature:
        return signature
    for t in turns:
        if t.kind in ("error", "tool_result", "text") and error_signature(t.text) == signature:
            return shown_error(t.text, signature)
    return signature


MIN_SHOWN_ERROR = 30  # characters an error line needs to stand for its output in Evidence


def proof_span(turns: Sequence[Turn], fix: Verification | None) -> tuple[int, int] | None:
    """The turns (first seq, last seq) from the failure a fix cleared to the check that proved it:
    what a fix card's Evidence shows. Steps before belong to the task around it, steps after to the
    next work; both would bury the three that matter. None when there is no such failure."""
    if fix is None or fix.failed_seq is None:
        return None
    turns = tuple(turns)
    lp = next((lp for lp in loops(turns) if lp.fix is not None and lp.fix.check.result.seq == fix.seq), None)
    first = lp.failure.seq if lp is not None else fix.failed_seq
    call = next((r.call.seq for r in walk(turns).runs if r.result.seq == first), None)
    if call is None:
        call = max((t.seq for t in turns if t.kind == "tool_call" and t.seq < first), default=first)
    return min(call, fix.failed_seq), fix.seq


def evidence_list(exp: Experience, fix: Verification | None = None) -> str:
    """The Evidence section: the calls, errors and notable results in order, a fix card's cut to its
    `proof_span`, then the run that proved the fix."""
    span = proof_span(exp.turns, fix)
    items: list[str] = []
    before = [t.seq for t in exp.turns if span is not None and t.seq < span[0] and t.kind == "tool_call"]
    if before:
        items.append(f"- [t{before[0]}–t{before[-1]}] {len(before)} steps of the task before the failure (not shown)")
    # A failing check's output shows its error line, when that line says more than its tail ("Reason: Error" does not).
    failed = {r.result.seq for r in walk(exp.turns).runs if r.failed}
    for t in exp.turns:
        if span is not None and not span[0] <= t.seq <= span[1]:
            continue
        if t.kind == "tool_call":
            items.append(f"- [t{t.seq}] ran `{_flat(t.text, 160)}`")
        elif t.kind == "error" or (t.seq in failed and len(shown_error(t.text, error_signature(t.text))) >= MIN_SHOWN_ERROR):
            sig = error_signature(t.text)
            items.append(f"- [t{t.seq}] error: {_flat(shown_error(t.text, sig) if sig else t.text[:120], 240)}")
        elif t.kind == "tool_result" and is_notable_result(t.text):
            items.append(f"- [t{t.seq}] result: {_flat(t.text[-400:], 240)}")
    if len(items) > MAX_EVIDENCE_ITEMS:
        half = MAX_EVIDENCE_ITEMS // 2
        items = items[:half] + [f"- … {len(items) - 2 * half} more steps …"] + items[-half:]
    if fix is not None:
        if fix.failed_seq is None:  # green after the change, never red before it: it proves no fix
            items.append(f"- [t{fix.seq}] ran after the change: `{_flat(fix.command, 160)}` passes (it had not failed)")
            return "\n".join(items)
        again = "passes again" if fix.same_command else "passes after the change"
        cleared = (f" (it failed at t{fix.failed_seq} with `{_flat(shown_in(exp.turns, fix.signature), 120)}`)"
                   if fix.signature else "")
        items.append(f"- [t{fix.seq}] confirmed: `{_flat(fix.command, 160)}` {again}{cleared}")
    return "\n".join(items)
