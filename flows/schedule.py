"""`memoir schedule`: the nightly `memoir run` as a crontab line or a systemd user service + timer.

Pure planning here (the command a scheduler runs, the crontab text with memoir's line put in or
taken out, the unit files, the cron expression as systemd's OnCalendar); the CLI reads and writes
the crontab and the unit folder. memoir's crontab line ends with a mark naming its home, so install
replaces it and remove takes out exactly that line, whatever else the crontab holds.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

from memoir.cards.config import Settings
from memoir.flows.errors import FlowError

MARK = "# memoir-nightly home="
NIGHTLY_LOG = "nightly.log"  # under the state folder: what the cron line's run printed (`memoir status` reads it)
FALLBACK_MKDIR = "/bin/mkdir"  # where POSIX systems keep it, when the installer's PATH has none
LOCK_WAIT_S = 600  # a run still working when the next one starts: wait this long, then exit 3
DAYS = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
NAMED = {"@daily": "*-*-* 00:00:00", "@midnight": "*-*-* 00:00:00", "@hourly": "*-*-* *:00:00",
         "@weekly": "Sun *-*-* 00:00:00", "@monthly": "*-*-01 00:00:00", "@yearly": "*-01-01 00:00:00",
         "@annually": "*-01-01 00:00:00"}


class ScheduleError(FlowError):
    """A schedule memoir cannot write: a cron expression systemd cannot say, a crontab it cannot read."""


def memoir_command(settings: Settings, python: str = sys.executable) -> list[str]:
    """The nightly run as an argv with absolute paths (a scheduler's PATH is short)."""
    script = Path(python).parent / "memoir"
    head = [str(script)] if script.exists() else [python, "-m", "memoir.flows.cli.main"]
    return head + ["--home", str(settings.home), "run", "--wait", str(LOCK_WAIT_S)]


# --- cron -----------------------------------------------------------------------------------------


def find_mkdir(search_path: str | None) -> str:
    """`mkdir`'s absolute path, found once at install time in `search_path` (the installer's PATH)."""
    found = shutil.which("mkdir", path=search_path)
    return str(Path(found).absolute()) if found else FALLBACK_MKDIR  # a relative PATH entry means nothing to cron


def cron_line(settings: Settings, argv: list[str], mkdir: str = FALLBACK_MKDIR) -> str:
    """One crontab line: the cron, the run appending to `<home>/state/nightly.log`, and memoir's mark.

    The shell opens the log before memoir starts, so the line first makes the state folder itself
    (by mkdir's absolute path: cron's PATH is short, `env -i` has none), private (umask 077, as
    every folder memoir makes); otherwise a home that does not exist yet fails every night, silently.
    The config file found at install is pinned, as the systemd unit pins it: cron's environment
    has no MEMOIR_CONFIG or XDG_CONFIG_HOME.
    """
    state = Path(settings.state_dir)
    config = f"MEMOIR_CONFIG={shlex.quote(str(settings.config_file))} " if settings.config_file else ""
    command = (f"umask 077 && {shlex.quote(mkdir)} -p {shlex.quote(str(state))} && "
               f"{config}{shlex.join(argv)} >> {shlex.quote(str(state / NIGHTLY_LOG))} 2>&1")
    return f"{settings.nightly_cron} {command.replace('%', chr(92) + '%')} {MARK}{settings.home}"


def without_memoir(crontab: str, home: Path) -> str:
    """The crontab with this home's memoir line taken out, every other line as it was."""
    mark = f"{MARK}{home}"
    return "".join(line for line in crontab.splitlines(keepends=True) if not line.rstrip("\n").endswith(mark))


def with_memoir(crontab: str, line: str, home: Path) -> str:
    """The crontab with this home's memoir line in (replacing an older one)."""
    rest = without_memoir(crontab, home)
    if rest and not rest.endswith("\n"):
        rest += "\n"
    return rest + line + "\n"


# --- systemd --------------------------------------------------------------------------------------


def _values(field: str, what: str, pad: int = 2) -> str:
    """One cron field (minute, hour, day, month) in OnCalendar's words: `*`, `1,15`, `9..17`, `0/15`."""
    parts = []
    for part in field.split(","):
        base, _, step = part.partition("/")
        if base == "*":
            text = "*" if not step else f"{0 if what in ('minute', 'hour') else 1:0{pad}d}/{int(step)}"
        elif "-" in base and not step:
            lo, hi = base.split("-", 1)
            text = f"{int(lo):0{pad}d}..{int(hi):0{pad}d}"
        elif base.isdigit():
            text = f"{int(base):0{pad}d}" + (f"/{int(step)}" if step else "")
        else:
            raise ScheduleError(f"the {what} field {field!r} of the cron has no systemd OnCalendar equivalent; "
                                "use numbers, lists, ranges or */N, or install with cron")
        parts.append(text)
    return ",".join(parts)


def _weekdays(field: str) -> str:
    names = []
    for part in field.split(","):
        lo, _, hi = part.partition("-")
        try:
            first, last = int(lo), int(hi or lo)
        except ValueError:
            low = [d.lower() for d in DAYS]
            if lo.lower()[:3] in low and (not hi or hi.lower()[:3] in low):
                first, last = low.index(lo.lower()[:3]), low.index((hi or lo).lower()[:3])
            else:
                raise ScheduleError(f"the weekday field {field!r} of the cron is not understood") from None
        if not (0 <= first <= 7 and 0 <= last <= 7):
            raise ScheduleError(f"the weekday field {field!r} of the cron is out of range (0-7)")
        names.append(DAYS[first] if first == last else f"{DAYS[first]}..{DAYS[last]}")
    return ",".join(names)


def on_calendar(cron: str, timezone: str = "") -> str:
    """A five-field cron (or @daily, @hourly, ...) as systemd's `OnCalendar=`, in `timezone` when given."""
    cron = cron.strip()
    if cron in NAMED:
        spec = NAMED[cron]
    else:
        fields = cron.split()
        if len(fields) != 5:
            raise ScheduleError(f"nightly_cron {cron!r} is not a five-field cron expression")
        minute, hour, dom, month, dow = fields
        if dom != "*" and dow != "*":
            raise ScheduleError("a cron restricting both day of month and weekday means either one to cron "
                                "but both to systemd; choose one, or install with cron")
        days = "" if dow == "*" else _weekdays(dow) + " "
        spec = (f"{days}*-{_values(month, 'month')}-{_values(dom, 'day')} "
                f"{_values(hour, 'hour')}:{_values(minute, 'minute')}:00")
    return f"{spec} {timezone}" if timezone else spec


def _exec_quote(arg: str) -> str:
    """One ExecStart argument: `%` doubled (a specifier otherwise), quoted when it holds a space."""
    arg = arg.replace("%", "%%")
    if any(c in arg for c in " \t\"'\\;$"):
        return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return arg


def unit_files(settings: Settings, argv: list[str], name: str = "memoir") -> dict[str, str]:
    """`<name>.service` (one run, oneshot) and `<name>.timer` (nightly_cron; a missed night runs at boot)."""
    env = f"Environment={_exec_quote('MEMOIR_CONFIG=' + str(settings.config_file))}\n" if settings.config_file else ""
    service = (
        "[Unit]\n"
        f"Description=memoir: cards from new agent session lines ({settings.home})\n\n"
        "[Service]\n"
        "Type=oneshot\n"
        f"{env}"
        f"ExecStart={' '.join(_exec_quote(a) for a in argv)}\n"
        "Nice=10\n"
    )
    timer = (
        "[Unit]\n"
        f"Description=Nightly run of memoir ({settings.home})\n\n"
        "[Timer]\n"
        f"OnCalendar={on_calendar(settings.nightly_cron, settings.nightly_timezone)}\n"
        "Persistent=true\n\n"
        "[Install]\n"
        "WantedBy=timers.target\n"
    )
    return {f"{name}.service": service, f"{name}.timer": timer}
