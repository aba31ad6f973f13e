"""Card titles that say what was learned, built by rule, under 80 characters.

A settled card's title is cause → fix: the error the session was about, an arrow, and the
conclusion's sentence that gives the cause or the fix (`` `ImportError` → QAction must be
imported from PySide6.QtGui``); without an error, that sentence alone (the decision). A commit
subject is the title only when the conclusion says nothing more, and then without its
`feat:`-style type. An error met along the way (named neither in the request nor in the
conclusion; a command that failed once and passed on a retry is not enough) is not what the
card teaches and stays out. Only a card that settled nothing falls back to the user's request,
with its conversational opener ("ok, next:", "new task:", "unrelated, but …"), slash commands,
template headings and host boilerplate taken off: a first prompt or a greeting is never a title
as it was typed.
"""

from __future__ import annotations

import re

from memoir.cards.conclude import work_report_lead
from memoir.cards.limits import scope_limits
from memoir.cards.phrasebook import POINTER_LEADS, POINTERS, RETRACTS, RULED_OUT, first_rule

MAX_TITLE = 110  # long enough for a cause → fix with its code span whole; a title list still reads

_OPENER = re.compile(
    r"^(?:(?:ok(?:ay)?|so|alright|right|hey|hi|hello|yo|hmm+|um+|well|great|cool|thanks|thank you|nice|"
    r"perfect|awesome|good|please|pls|plz|now|next(?: up)?|then|also|and|but|new task|another (?:task|thing)|"
    r"unrelated(?:,? but)?|one more thing|quick question|question|q|task|todo|back after [^,:.;!?]{1,40}|"
    r"back(?: again)?|ok so|moving on|on to|separately|btw|by the way|fyi|"
    r"(?:can|could|would|will) (?:you|u)(?: please)?|i (?:want|need|would like) (?:you )?to|"
    r"let'?s|help me(?: to)?|i'?d like (?:you )?to)\b[\s,:;.!?—–-]*)+",
    re.I,
)
_FLUFF = re.compile(
    r"^(?:(?:perfect|great(?: (?:list|question|point|idea|catch))?|excellent|done|all set|awesome|good (?:news|call|catch)|nice|sure|okay|ok|"
    r"you['’]?re (?:absolutely )?right|you were (?:absolutely )?right|thanks for (?:the [\w ]{1,20}|that|catching that)|got it|"
    r"now yes|yes|no|to summari[sz]e|for the record|in short|short answer|summary|tl;?dr|here'?s (?:what|the summary)[^:]{0,30})\s*[!.:,—–-]+\s*)+",
    re.I,
)
_BOILERPLATE = re.compile(
    r"\[Request interrupted by user[^\]]*\]|<((?:local-)?command-[\w-]+|system-reminder)>.*?</\1>|^Caveat:.*$|"
    r"^/[a-z][\w:-]*(?:[ \t][^\n]*)?$",
    re.I | re.M | re.S,
)
_MARKDOWN = re.compile(r"^[#>*\-\s]+|[*_]{2}")
_HEADING = re.compile(r"^\s*#{1,6}\s")
_COMMIT_TYPE = re.compile(r"^(?:feat|fix|chore|docs|refactor|tests?|perf|build|ci|style|revert)(?:\([^)]*\))?!?:\s*", re.I)
ARROW = " → "
SHORT_SIGNATURE = 24  # the error's length when the fix's code would not fit beside 36 characters of it


def strip_boilerplate(text: str) -> str:
    """The user's words without interruption markers, host tags or slash-command lines."""
    return "\n".join(ln for ln in _BOILERPLATE.sub(" ", text).splitlines() if ln.strip()).strip()


def strip_opener(text: str) -> str:
    """`text` without a conversational opener ("ok, next:", "unrelated, but"), else unchanged."""
    return _OPENER.sub("", text.strip()).strip() or text.strip()


def clean_request(text: str) -> str:
    """The user's request as one line, without openers, slash commands, template headings
    ("## User Input") or host boilerplate."""
    text = _BOILERPLATE.sub(" ", text)
    lines = text.splitlines()
    prose = [ln for ln in lines if ln.strip() and not _HEADING.match(ln)]
    for line in prose or lines:
        line = _MARKDOWN.sub("", line).strip()
        line = _OPENER.sub("", line).strip(" ,:;.-—–")
        if len(line) >= 3:
            return _capital(" ".join(line.split()))
    return ""


def first_sentence(text: str) -> str:
    """The conclusion's first sentence, without 'Perfect!'-style lead-ins or markdown."""
    for line in text.splitlines():
        line = _MARKDOWN.sub("", line).replace("`", "`").strip()
        line = _FLUFF.sub("", line).strip()
        if len(line) < 8:
            continue
        m = re.search(r"(?<=[a-z0-9)`'\"])[.!?](?:\s|$)|:\s*$", line)
        return _capital(line[: m.start()] if m and m.start() >= 12 else line)
    return ""


def _capital(text: str) -> str:
    first = text.split(" ", 1)[0]
    if re.search(r"[_./()`]|[a-z][A-Z]|\d", first) or text.startswith(("git ", "npm ")):
        return text  # an identifier, a path or a command keeps its case
    return text[:1].upper() + text[1:] if text[:1].islower() else text


def clip_title(text: str, limit: int = MAX_TITLE) -> str:
    """At most `limit` characters, cut at a word boundary, with an ellipsis when cut."""
    text = " ".join(text.split()).strip(" ,:;—–-")
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    cut = cut[:space] if space > limit // 2 else cut
    if cut.count("`") % 2:
        cut = cut[: cut.rfind("`")].rstrip()
    return cut.rstrip(" ,:;—–-(") + "…"


# A generic "error:" before a coded or worded message says nothing the message does not.
_GENERIC_LEAD = re.compile(r"^(?:error|Error|ERROR)(?::\s*|\s+(?=[A-Z]+\d+:))(?=\S)")


def _short_signature(signature: str, limit: int = 36, shown: str = "") -> str:
    """The error as a title names it: a specific kind alone when masks hide most of its message,
    else the line as the log showed it (`shown`, from `signatures.shown_error`), else the signature
    with its masks as ellipses."""
    kind = signature.split(":", 1)[0]
    if len(re.findall(r"<(?:str|path|id|n|hex)>", signature)) >= 2 and (
            kind.lower() not in _GENERIC_KINDS or not shown):
        signature, shown = kind, ""  # mostly masked names: the kind says more on its own
    if shown:
        sig = " ".join(_GENERIC_LEAD.sub("", shown.strip()).split()).replace("`", "'")
        if len(sig) > limit:  # too long: an aside in parentheses goes first
            sig = re.sub(r"\s+\([^)]*\)?$", "", sig)
    else:
        sig = signature.replace("<str>", "…").replace("<path>", "…").replace("<n>", "N").replace("<id>", "…")
        sig = " ".join(sig.split())
    if len(sig) > limit:
        sig = sig[: limit - 1].rsplit(" ", 1)[0] + "…"
    return f"`{sig}`"


_CAUSE = re.compile(r"(?i), so\b|\b(?:root cause|because|caused|came from|means|meant|missed|missing|was|were|wasn'?t|isn'?t|without|"
                    r"doesn'?t|didn'?t|no longer|needs?|must|instead|moved|requires?|rejects?|returns?|due to|lost|lacks?|had no)\b")
_FIXED = re.compile(r"(?i)\b(?:fix(?:es|ed)?|now|switched|changed|replaced|pinned|added|removed|imported|installed)\b")
# Where the work landed ("I pushed all fixes to `main`", "Committed as 1a2b3c4") is history, not the lesson.
_LANDED = re.compile(r"(?i)^(?:i(?:['’]ve| have)? |we(?:['’]ve| have)? |all (?:fixes|changes) (?:are|were) )?(?:pushed|committed|merged)\b")
# A result restated ("`cargo tree -i x` now matches nothing", "the build now passes") is the proof, not the lesson.
_NOW_RESULT = re.compile(r"(?i)\bnow (?:passes|pass|matches|works|finishes|builds|succeeds|runs|returns nothing|is green|takes)\b|^\d+ passed\b")
_DONE_WORDS = re.compile(r"(?i)^(?:fixed|done|works now|all (?:set|good)|committed)\b[^.:`]{0,40}[.:,]\s*")
# A narrative label the evidence conclusion puts before quoted words ("Said before the change: “…”"):
# a title states the words, never the label.
_NARRATIVE = re.compile(r"(?i)^(?:said|stated|explained|written|noted) (?:before|after) the (?:change|fix)\s*:\s*[“\"]?")
# The first clause of an evidence conclusion ("`pytest -x` fails with `X` (t4); editing `a.py` fixed it …"):
# the signature already leads the title, the change is what it adds.
_FAILED_CLAUSE = re.compile(r"^.{0,300}?\bfails\b[^;]{0,300};\s*(?=.{0,200}\bfixed it\b)")
# The check that confirmed an evidence conclusion (": the same check `x` passes at t9") is on the card, not in its title.
_SAME_CHECK = re.compile(r":\s*the same check\b.*$")
_RERUN = re.compile(r"(?i)^re-running it with (.+) fixed it$")
_CAUSE_LABEL = re.compile(r"(?i)^(?:(?:the )?(?:real |actual |root )?(?:cause|problem|issue|fix|reason)\s*(?:was|is)?|"
                          r"what (?:was|went) wrong|why)\s*:\s*")
# "The failure was because …" once the quoted error is gone: the clause after it is the cause.
_FAILURE_WAS = re.compile(r"(?i)^(?:the )?(?:failure|error|problem|issue|crash|panic)\s+(?:was|is)\s+(?=because|due to|that)")
# An aside or a note beside the lesson: "Not affected: …", "Separately: …", "Note: …".
_ASIDE = re.compile(r"(?i)^(?:not affected|unaffected|unchanged|separately|aside|note|also|side note|unrelated|fyi)\b[^.:]{0,30}:")
# Work still ahead is no lesson: "Next, I'll add …", "To implement X, we need to …".
_AHEAD = re.compile(r"(?i)^(?:(?:next|now|then|first|so)\b[,:]?\s*)?(?:i['’]ll|i will|let me|let['’]s|we need to|we['’]ll|"
                    r"i['’]m going to|i need to)\b|^to \w+\b[^,]{0,60},\s*(?:we|i|you)\s+(?:need|will|['’]ll|should|must)\b")
# A failed attempt is no lesson: "WAL did not help", "that wasn't it".
_FAILED_TRY = re.compile(r"(?i)\b(?:did ?n[o']t (?:help|work|fix)|didn't (?:help|work|fix)|was ?n[o']t it|no luck|still fail\w*)\b")


def _sentences(line: str) -> list[str]:
    """The sentences of a line; a code span stays whole ("`ALTER TABLE ... modify`" ends no sentence)."""
    out: list[str] = []
    for part in re.split(r"(?<=[.!?])\s+", line):
        if out and out[-1].count("`") % 2:
            out[-1] += " " + part
        else:
            out.append(part)
    return out


def _gist(conclusion: str, signature: str) -> str:
    """The sentence of a conclusion that says what caused or fixed the failure, without restating it."""
    kind = signature.split(":", 1)[0].strip()
    best = fixed = ""
    for line in conclusion.splitlines():
        for sentence in _sentences(_MARKDOWN.sub("", line).strip()):
            sentence = _CAUSE_LABEL.sub("", _DONE_WORDS.sub("", _FLUFF.sub("", sentence)).strip()).strip()
            sentence = _FAILED_CLAUSE.sub("", sentence)  # an evidence conclusion: the change that fixed it
            sentence = _SAME_CHECK.sub("", sentence)  # ... and not how it was checked
            if rerun := _RERUN.match(sentence):
                return f"Re-run with {rerun[1]}"  # the same command with another setting was the fix
            if _NARRATIVE.match(sentence):
                sentence = _NARRATIVE.sub("", sentence).rstrip("”\"").strip()
            if first_rule(POINTERS, sentence) or first_rule(RULED_OUT, sentence) or first_rule(RETRACTS, sentence):
                continue  # "That confirms it …" points back, a cleared suspect is context: neither is the lesson
            if lead := next((r.pattern.match(sentence) for r in POINTER_LEADS if r.pattern.match(sentence)), None):
                sentence = _capital(sentence[lead.end():])
            if _FAILED_TRY.search(sentence) or _ASIDE.match(sentence) or _AHEAD.match(sentence) or scope_limits(sentence) \
                    or _LANDED.match(sentence):
                continue  # a failed attempt, an aside or a limit is not what was learned
            if kind and kind in sentence:  # the failure restated: drop its quoted form
                sentence = re.sub(r"`[^`]*" + re.escape(kind) + r"[^`]*`", "", sentence)
                sentence = " ".join(re.sub(r"^\W*(?:this time|it|here)\b\W*", "", sentence.strip(), flags=re.I).split())
            sentence = _FAILURE_WAS.sub("", sentence)
            if len(sentence) < 15 or len(sentence.split()) < 4:
                continue
            if _NOW_RESULT.search(sentence) and not _CAUSE.search(sentence):
                best = best or _capital(sentence.rstrip("."))
                continue
            if _CAUSE.search(sentence):
                return _capital(sentence.rstrip("."))
            if _FIXED.search(sentence):
                fixed = fixed or _capital(sentence.rstrip("."))
            best = best or _capital(sentence.rstrip("."))
    return fixed or best


# Error kinds that name no failure of their own: the message must say what the error was about.
_GENERIC_KINDS = frozenset({"error", "fatal", "fail", "failed", "failure", "exception", "panic", "warning", "err"})
_WORDS = re.compile(r"[A-Za-z][A-Za-z0-9_]{3,}")


def about_signature(signature: str, *texts: str) -> bool:
    """Whether `texts` (the request, the conclusion) are about the error: its kind (a specific one,
    `ImportError`, not `Error`) or two words of its message appear in them."""
    said = " ".join(texts).lower()
    kind, _, message = signature.partition(":")
    kind = kind.strip()
    if kind and kind.lower() not in _GENERIC_KINDS and " " not in kind and kind.lower() in said:
        return True
    words = {w.lower() for w in _WORDS.findall(message if message else kind)} - _GENERIC_KINDS - {"with", "from", "that", "this"}
    return sum(w in said for w in words) >= min(2, len(words)) if words else False


# A how-to answered as steps: "To add a migration:" then "1. Create …". Its lead and first step are
# what was learned; a cause clause inside a step is a side note.
_PROCEDURE = re.compile(r"(?m)^([^\n]{8,120}?):[ \t]*\n+[ \t]*1[.)][ \t]+([^\n]+)")


# ... or answered as a lead sentence and the commands in a fenced block ("The way to adopt a bucket is
# `terraform import` into the module's address:" then ```): the lead says what was learned.
_LEAD_THEN_CODE = re.compile(r"(?m)\A\s*([^\n]{30,200}?):[ \t]*\n+[ \t]*```")


def _procedure(conclusion: str) -> str:
    found = _PROCEDURE.search(conclusion)
    if found is None:
        lead = _LEAD_THEN_CODE.match(conclusion)
        sentence = re.split(r"(?<=[.!?])\s+", lead.group(1).strip())[-1] if lead else ""
        return sentence if len(sentence.split()) >= 6 and "?" not in sentence else ""
    lead = re.split(r"(?<=[.!?])\s+", found.group(1).strip())[-1]
    first = re.split(r"(?<=[.!?])\s+", found.group(2).strip())[0].rstrip(".")
    if len(lead.split()) < 3 or "`" not in first or "?" in found.group(0):
        return ""  # a step names what to run or edit; a list of questions back is no procedure
    return f"{lead}: {first[:1].lower()}{first[1:]}"


def make_title(*, commit_subject: str = "", signature: str = "", conclusion: str = "",
               request: str = "", settled: bool = True, shown: str = "") -> str:
    """One line naming what the card teaches; see the module docstring for the order. `shown` is the
    signature's line as the log showed it (`signatures.shown_error`), named in its place."""
    subject = _COMMIT_TYPE.sub("", commit_subject.strip())
    if re.fullmatch(r"exit code -?\d+", signature.strip()):
        signature = ""  # a bare exit status names no failure
    if settled and signature and not about_signature(signature, request, conclusion):
        signature = ""  # an error met along the way is not what the card teaches
    # A report of the work done is named by what was built, never by a sentence picked from its body.
    built = work_report_lead(conclusion) if settled else ""
    gist = _COMMIT_TYPE.sub("", (_capital(built.rstrip(".")) if built else _gist(conclusion, signature)) if settled else "")
    if settled and not signature and not built:
        gist = _procedure(conclusion) or gist
    if not signature:
        shown = ""
    if signature:
        if settled:
            tail = gist or subject
            if not tail:
                return clip_title(_short_signature(signature, MAX_TITLE - 2, shown))
            title = clip_title(f"{_short_signature(signature, shown=shown)}{ARROW}{tail}")
            shorter = f"{_short_signature(signature, SHORT_SIGNATURE, shown)}{ARROW}{tail}"
            if title.count("`") < 2 + tail.count("`") and len(shorter) <= MAX_TITLE:
                return shorter  # the cut took a code span of the fix; a shorter error leaves it whole
            if title.count("`") < 2 + tail.count("`") and len(tail) <= MAX_TITLE:
                return _capital(tail)  # the fix whole matters more than the error's name
            return title
        asked = clean_request(request)
        if asked and signature.split(":", 1)[0] not in asked:
            return clip_title(f"{_short_signature(signature, shown=shown)}: {asked}")
        return clip_title(_short_signature(signature, MAX_TITLE - 2, shown))
    if len(gist) >= 12:
        return clip_title(_capital(gist))
    if len(subject) >= 12:
        return clip_title(_capital(subject))
    return clip_title(clean_request(request) or subject or gist)


def display_title(card) -> str:
    """The card's title, or for a file written before titles existed, its cleaned goal."""
    if card.title.strip():
        return card.title.strip()
    for text, clean in ((card.goal, clean_request), (card.conclusion, first_sentence), (card.background, first_sentence)):
        line = clean(text)
        if line:
            return clip_title(line)
    return card.id
