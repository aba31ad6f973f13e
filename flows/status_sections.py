"""The blocks of `memoir status`, in the one order they print: cards and runs first (memoir.cards.status),
then modes wider than private, a night that failed before memoir ran, active cards that disagree, the model stage, the index, recall,
the session-start backlog, the queue and `memoir serve`.

The model stage says honestly whether it is on, and what its last run counted and alerted;
the index block reads `memoir index check` without loading the model; the recall block counts
the hook's calls (state/hook.jsonl) and the logged recalls (state/recall.jsonl) since the last run,
so misses (timeouts, cold starts) are visible; the backlog block shows the last run a session's start left
running in the background (state/backlog.jsonl).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

from memoir.cards.config import Settings
from memoir.cards.jsonl import JsonlError, read_jsonl
from memoir.cards.retention import when
from memoir.cards.sanitize import sanitize
from memoir.cards.sanitize.fields import strip_controls
from memoir.cards.status import StatusReport, StatusSection, build_status, privacy_section, read_runs
from memoir.cards.store import CardStore
from memoir.flows.hook_backlog import BACKLOG_LOG, BACKLOG_RECORDS
from memoir.flows.hook_calls import read_calls
from memoir.flows.model_runs import read_model_runs
from memoir.flows.queue import queue_report
from memoir.flows.schedule import NIGHTLY_LOG
from memoir.index.advice import contradicting_pairs
from memoir.index.pending import PendingIndex
from memoir.index.recall_log import log_path


def model_section(settings: Settings) -> StatusSection:
    """On or off (and where), the last run's counts, and its alerts: "model silent" shows here."""
    state = (f"on: {settings.model_name or 'model'} at {settings.model_base_url}" if settings.model_enabled
             else "off: rule stage only (no model endpoint configured); cards are quality: rule")
    runs = read_model_runs(settings.state_dir)
    last = runs[-1] if runs else None
    lines = [f"model      {state}"]
    if last and last.get("counts"):
        lines.append("  last run " + ", ".join(f"{v} {k}" for k, v in sorted(last["counts"].items())))
    alerts = list(last.get("alerts", [])) if last else []
    lines += [f"  ALERT    {a} (runbooks/model-alive-no-output.md)" for a in alerts]
    return StatusSection("model", {"state": state, "enabled": settings.model_enabled, "last_run": last,
                                   "alerts": alerts}, tuple(lines))


def index_section(settings: Settings) -> StatusSection:
    """healthy / stale / corrupt / cannot open, as `memoir index check` says; anything but healthy is an alarm."""
    from memoir.index.check import check_index  # deferred: start-up (apsw, sqlite-vec)
    from memoir.index.embed import Embedder  # deferred: start-up (numpy)

    spec = Embedder()  # model id and dimension only; nothing is loaded
    store = CardStore(settings.cards_dir, settings.state_dir)
    health = check_index(settings.index_dir, store, spec.model_id, spec.dim,
                         pending=PendingIndex(settings.state_dir))
    line = f"index      {health.status.replace('_', ' ')}"
    if health.status == "healthy" and not health.card_files and not Path(health.path).exists():
        line = "index      none yet (the first `memoir run` builds it)"
    elif health.status == "cannot_open":  # not damage: a rebuild would fail the same way
        line += f" — {'; '.join(health.problems[:2])} (runbooks/index-corruption.md)"
    elif health.status != "healthy":
        advice = "`memoir index rebuild`" if health.status == "corrupt" else "`memoir run` or `memoir index rebuild`"
        line += f" — {'; '.join(health.problems[:2])}; fix: {advice} (runbooks/index-corruption.md)"
    lines, figures = [line], health.to_dict()
    left = turns_waiting(settings)
    if left is not None:
        figures["turn_index_waiting"] = {"logs": left[0], "texts": left[1]}
        if any(left):
            lines.append(f"  turn index: {left[0]} logs not read and {left[1]} texts not embedded yet "
                         "(the next run or search continues; `memoir index turns` does it now; runbooks/turn-index-behind.md)")
    return StatusSection("index", figures, tuple(lines))


def turns_waiting(settings: Settings) -> tuple[int, int] | None:
    """What a run left of the deep-search turn index within its share of time (`turn_index_share`)."""
    from memoir.cards.ledger import Ledger, LedgerError  # deferred: start-up
    from memoir.index.files import TURNS_FILE  # deferred: start-up (the index package)
    from memoir.index.turns import waiting  # deferred: start-up (numpy)

    if not (settings.state_dir / TURNS_FILE).is_file():
        return None  # no turn index yet: nothing to open (a status never creates the ledger)
    try:
        with Ledger.in_state_dir(settings.state_dir) as ledger:
            ledgered = ledger.as_read()
    except (LedgerError, OSError):
        return None
    return waiting(settings.state_dir, ledgered)


HOOK_OUTCOMES = ("injected", "empty", "timeout", "cold_start", "error")
RECALL_OUTCOMES = ("injected", "empty", "timeout", "error")
MISS_ALERT_SHARE = 0.2  # timeouts + cold starts above this share of the hook's calls ...
MISS_ALERT_MIN_CALLS = 10  # ... over at least this many calls is an alert, not noise


def count_recall_calls(hook_calls: list[dict], recalls: list[dict], since: str | None) -> dict:
    """Outcomes of the hook's calls and of logged recalls at or after `since` (all when None); pure."""
    start = when(since) if since else None

    def after(item: dict) -> bool:
        t = when(item.get("ts"))
        return start is None or (t is not None and t >= start)

    hook = {o: 0 for o in HOOK_OUTCOMES}
    for call in filter(after, hook_calls):
        outcome = str(call.get("outcome"))
        hook[outcome if outcome in hook else "error"] += 1
    logged = {o: 0 for o in RECALL_OUTCOMES}
    for rec in filter(after, recalls):
        outcome = str(rec.get("outcome"))
        logged[outcome if outcome in logged else "error"] += 1
    calls = sum(hook.values())
    misses = hook["timeout"] + hook["cold_start"]
    alert = (f"recall_misses: {misses} of {calls} hook calls got no answer in time "
             f"({hook['timeout']} timeouts, {hook['cold_start']} cold starts)"
             if calls >= MISS_ALERT_MIN_CALLS and misses > MISS_ALERT_SHARE * calls else "")
    return {"since": since, "hook_calls": calls, "hook": hook, "recalls": sum(logged.values()),
            "recall_outcomes": logged, "alert": alert}


def _read_log(path: Path) -> list[dict]:
    """A log's well-formed lines; an unreadable log counts as empty in a status view."""
    try:
        return read_jsonl(path)
    except JsonlError:
        return []


def recall_section(settings: Settings) -> StatusSection:
    """Hook calls by outcome (injected, empty, timeouts, cold starts, errors) and logged recalls, since the last run."""
    runs = read_runs(settings.state_dir)
    since = runs[-1].finished if runs else None
    recalls = [r for p in (log_path(settings.state_dir).with_name(log_path(settings.state_dir).name + ".1"),
                           log_path(settings.state_dir)) for r in _read_log(p)]
    data = count_recall_calls(read_calls(str(settings.state_dir)), recalls, since)
    hook = data["hook"]
    when = f"since the last run ({since})" if since else "since the logs began"
    lines = [f"recall     {when}: {data['hook_calls']} hook calls: {hook['injected']} injected, "
             f"{hook['empty']} empty, {hook['timeout']} timeouts, {hook['cold_start']} cold starts, "
             f"{hook['error']} errors; {data['recalls']} recalls logged "
             f"({data['recall_outcomes']['timeout']} timed out)"]
    if data["alert"]:
        lines.append(f"  ALERT    {data['alert']} (runbooks/recall-misses.md)")
    return StatusSection("recall", data, tuple(lines))


BACKLOG_TROUBLE = ("timeout", "error")  # outcomes a person should look at; busy, unchanged, no_previous are normal
BACKLOG_RUNBOOK = "runbooks/session-backlog.md"


def plan_backlog(records: list[dict], enabled: bool) -> StatusSection:
    """The SessionStart backlog's block from its records (state/backlog.jsonl, oldest first): the last child's
    run (when, the logs it read, its outcome, its cards) and every recorded child's outcome, counted. Pure."""
    last = records[-1] if records else None
    outcomes = Counter(str(rec.get("outcome") or "error") for rec in records)
    state = "on" if enabled else "off (session_start_backlog = false: the nightly run reads every log)"
    if last is None:
        lines = [f"backlog    {state}; no session start has run one yet"]
    else:
        outcome = str(last.get("outcome") or "error")
        logs = last.get("logs", 1 if outcome == "done" else 0)  # records from before `logs` was kept: done read one
        made = last.get("cards") if isinstance(last.get("cards"), dict) else {}
        cards = ", ".join(f"{n} {kind}" for kind, n in sorted(made.items())) or "no cards"
        seen = ", ".join(f"{n} {o}" for o, n in sorted(outcomes.items()))
        lines = [f"backlog    {state}; last {last.get('ts', '?')}: {outcome}, {logs} log{'s' if logs != 1 else ''} "
                 f"read, {cards}, {last.get('elapsed_s', 0)} s ({last.get('host', '?')}); {len(records)} recorded: "
                 f"{seen}"]
        if outcome in BACKLOG_TROUBLE:
            lines.append(f"  ALERT    backlog {outcome}: {last.get('detail') or 'see state/' + BACKLOG_LOG} "
                         f"({BACKLOG_RUNBOOK})")
    data = {"enabled": enabled, "last": last, "recorded": len(records), "outcomes": dict(sorted(outcomes.items()))}
    return StatusSection("backlog", data, tuple(lines))


def backlog_section(settings: Settings) -> StatusSection:
    """The SessionStart backlog child's last run, from the records each child leaves (flows/session_backlog.py)."""
    path = settings.state_dir / BACKLOG_RECORDS
    records = _read_log(path.with_name(path.name + ".1")) + _read_log(path)
    return plan_backlog(records, settings.session_start_backlog)


def queue_section(settings: Settings) -> StatusSection:
    """Queue depth by kind, the oldest pending item and items that keep failing."""
    data = queue_report(settings.queue_dir, pending_index_ids=len(PendingIndex(settings.state_dir)))
    depth = ", ".join(f"{n} {kind}" for kind, n in data["pending"].items())
    lines = [f"queue      {data['pending_total']} pending ({depth})"
             + (" — run `memoir replay`" if data["pending_total"] else "")]
    if oldest := data["oldest_pending"]:
        lines.append(f"  oldest   {oldest['kind']}:{oldest['key']}, {oldest['age_s']} s old, "
                     f"{oldest['attempts']} failed attempts")
    lines += [f"  failing  {f}" for f in data["failing"][:5]]
    if data["claimed"]:
        lines.append(f"  claimed  {data['claimed']} (a replay is running, or its worker died: "
                     "`memoir replay --reclaim-after 0`)")
    return StatusSection("queue", data, tuple(lines))


def serve_section(settings: Settings) -> StatusSection | None:
    """Whether `memoir serve` runs for this home, its next run and last result (once one has run)."""
    from memoir.flows import serve as sv  # deferred: start-up (subprocess, urllib)

    status = sv.read_status(settings.state_dir)
    if status is None:
        return None
    running = sv.serving(settings.state_dir)
    return StatusSection("serve", {"running": running, **status.to_dict()},
                         tuple(sv.status_lines(status, running, datetime.now().astimezone())))


NIGHTLY_SLACK_S = 120  # the summary is printed after its run is recorded: a log this much newer is still that run's
NIGHTLY_TAIL_BYTES = 8192  # the log's last line is all the section reads, however long the log grew
NIGHTLY_LINE_CHARS = 200
# The lines a run summary ends with (flows/cli/runs.py print_summary: `next`, or `took` without a home;
# `}` closes `--json`'s object): any other last line is a night that ended before memoir finished a run.
SUMMARY_ENDS = ("next ", "took ", "}")


def nightly_failure(last_line: str, modified: datetime, last_run: datetime | None) -> bool:
    """Did the nightly line write after the last recorded run, something other than a run summary's end? Pure."""
    after = last_run is None or modified > last_run + timedelta(seconds=NIGHTLY_SLACK_S)
    return after and bool(last_line) and not last_line.startswith(SUMMARY_ENDS)


def _last_line(path: Path) -> str:
    """The log's last non-empty line, read from its tail only."""
    with open(path, "rb") as fh:
        fh.seek(max(0, fh.seek(0, 2) - NIGHTLY_TAIL_BYTES))
        tail = fh.read().decode("utf-8", errors="replace")
    return next((line.strip() for line in reversed(tail.splitlines()) if line.strip()), "")


def nightly_section(settings: Settings) -> StatusSection | None:
    """A night that failed before memoir could record a run (memoir not found, the home unwritable, a crash):
    what the cron line's log says last. Nothing to show when the last night ended in a run summary."""
    path = settings.state_dir / NIGHTLY_LOG
    try:
        modified = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
        last_line = _last_line(path)
    except OSError:
        return None  # no cron line installed, or a log memoir cannot read: nothing a night said
    runs = read_runs(settings.state_dir)
    if not nightly_failure(last_line, modified, when(runs[-1].finished) if runs else None):
        return None
    said = sanitize(strip_controls(last_line), settings.blob_cap)[:NIGHTLY_LINE_CHARS]
    at = modified.strftime("%Y-%m-%dT%H:%M:%SZ")
    line = (f"nightly    the nightly line wrote to state/{NIGHTLY_LOG} at {at} but no run was recorded "
            f"after it: {said}")
    return StatusSection("nightly", {"log": str(path), "modified": at, "last_line": said, "message": line},
                         (line, "  fix      runbooks/scheduling.md#when-a-night-fails-before-memoir-runs"))


def home_section(settings: Settings) -> StatusSection:
    """Modes under the home wider than 0700/0600 (cards/private.py): named here, tightened by the next run."""
    return privacy_section(settings.home)


# The blocks after the card counts, alarms and runs, in the order they print (None: nothing to show).
def disagreements_section(settings: Settings) -> StatusSection | None:
    """Active cards of one workspace whose advice disagrees (index.advice.contradicting_pairs): recall never
    injects both together, and a person settles them (edit one, or reject the older in `memoir review`)."""
    cards, _ = CardStore(settings.cards_dir, settings.state_dir).load_all()
    pairs = contradicting_pairs(cards)
    if not pairs:
        return None
    data = [{"cards": [a, b], "why": why} for a, b, why in pairs]
    lines = tuple(f"disagree   {a} ↔ {b}: {why} (both active; never injected together; settle with `memoir review CARD`)"
                  for a, b, why in pairs)
    return StatusSection("disagreements", data, lines)


SECTIONS: tuple[Callable[[Settings], StatusSection | None], ...] = (
    home_section, nightly_section, disagreements_section, model_section, index_section, recall_section, backlog_section,
    queue_section, serve_section,
)


def status_report(settings: Settings, workspace: str = "") -> StatusReport:
    """Everything `memoir status` shows, read from the files now; `workspace` keeps the card counts to its project's."""
    report = build_status(settings.cards_dir, settings.state_dir, settings.append_only_runs, workspace)
    return report.with_sections(*(s for s in (section(settings) for section in SECTIONS) if s is not None))
