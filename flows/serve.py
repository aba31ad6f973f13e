"""`memoir serve`: the flows as scheduled deployments, with a Prefect server of its own if needed.

Prefect will not schedule on its ephemeral API, so unless `PREFECT_API_URL` points at a server,
`serve` starts `prefect server start` on 127.0.0.1 and a free port, waits for its health
endpoint, serves, and stops the server again on exit (Ctrl-C, SIGTERM or an error).

A scheduled flow run happens in a child process whose log level is WARNING, so serve watches the
home itself: the run lock says when a run starts, `runs.jsonl` what it did. Each shows as one
line in serve's terminal and lands in `state/serve.json`, which `memoir serve --status` reads
without any Prefect server. `state/serve.lock` is held while serving, so a crashed serve is
never mistaken for a live one and two serves never schedule the same home twice.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from memoir.cards.config import environment
from memoir.cards.private import PRIVATE_UMASK, make_private_dir, open_private
from memoir.cards.store import write_atomic
from memoir.flows.errors import Busy, FlowError
from memoir.flows.lock import held_by_a_live_process
from memoir.flows.prefect_env import prefect_environment

SERVER_START_TIMEOUT_S = 120  # first start migrates a fresh database: ~10-20 s here
SERVER_STOP_S = 8  # uvicorn drains in ~1 s; past this the server is killed
RUNNER_STOP_S = 5  # the runner cancels in-flight flow runs; past this its children are killed
WATCH_POLL_S = 2.0  # how often serve looks at the run lock and the run history
STATUS_FILE = "serve.json"
SERVE_LOCK = "serve.lock"
RUN_LOCK = "run.lock"  # flows.lock.LOCK_FILE; its holder's JSON says who is running
RUNS_FILE = "runs.jsonl"  # cards.status.RUNS_FILE
DEPLOYMENTS = ("nightly/memoir-nightly", "replay-backlog/memoir-replay", "rebuild-index/memoir-rebuild-index")


class ServerFailed(FlowError):
    """The Prefect server did not come up; the message holds the tail of its log."""


class ServeBusy(Busy):
    """Another `memoir serve` already serves this home."""


class BadTimezone(FlowError):
    """The time zone given for the cron is not an IANA name this machine knows."""


class BadSchedule(FlowError):
    """A cron expression memoir was given does not parse."""


# --- time zone and schedule -----------------------------------------------------------------------


def check_timezone(name: str) -> str:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise BadTimezone(f"unknown time zone {name!r}; use an IANA name such as Europe/Berlin "
                          "(timedatectl list-timezones)") from exc
    return name


def _zone_name(candidate: str) -> str | None:
    candidate = candidate.strip().lstrip(":")
    if "zoneinfo/" in candidate:
        candidate = candidate.split("zoneinfo/", 1)[1]
    try:
        return check_timezone(candidate) if candidate else None
    except BadTimezone:
        return None


def local_timezone(env: dict[str, str], etc: Path = Path("/etc")) -> str:
    """This machine's IANA zone: $TZ, else /etc/timezone, else where /etc/localtime points; UTC last."""
    tries: list[Callable[[], str]] = [
        lambda: env.get("TZ", ""),
        lambda: (etc / "timezone").read_text(encoding="utf-8"),
        lambda: os.readlink(etc / "localtime"),
    ]
    for get in tries:
        try:
            if name := _zone_name(get()):
                return name
        except OSError:
            continue
    return "UTC"


def next_run(cron: str, timezone: str, now: datetime) -> datetime:
    """The next time `cron` fires after `now`, read in `timezone` (as Prefect reads it)."""
    from cronsim import CronSim, CronSimError  # deferred: start-up

    try:
        return next(CronSim(cron, now.astimezone(ZoneInfo(timezone))))
    except CronSimError as exc:
        raise BadSchedule(f"bad cron expression {cron!r}: {exc}; five fields, e.g. '30 3 * * *'") from exc


# --- what serve says about runs -------------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    """What serve can see of runs in the home: who holds the run lock, how many runs are recorded."""

    holder: dict | None
    runs: int
    last_run: dict | None


def take_snapshot(state_dir: Path) -> Snapshot:
    state_dir = Path(state_dir)
    try:
        holder = json.loads((state_dir / RUN_LOCK).read_text(encoding="utf-8") or "null")
    except (OSError, ValueError):
        holder = None
    lines: list[str] = []
    try:
        lines = [ln for ln in (state_dir / RUNS_FILE).read_text(encoding="utf-8").splitlines() if ln.strip()]
    except OSError:
        pass
    last = None
    if lines:
        try:
            last = json.loads(lines[-1])
        except ValueError:
            last = None
    return Snapshot(holder if isinstance(holder, dict) else None, len(lines), last)


def describe_run(record: dict) -> str:
    """One run record as serve prints it: cards added and superseded, skipped by reason, alarms."""
    skipped = record.get("skipped") or {}
    parts = [f"{record.get('added', 0)} new cards", f"{record.get('superseded', 0)} superseded"]
    if skipped:
        total = sum(int(n) for n in skipped.values())
        top = ", ".join(f"{n} {reason}" for reason, n in sorted(skipped.items(), key=lambda kv: -int(kv[1]))[:3])
        parts.append(f"skipped {total} ({top})")
    else:
        parts.append("skipped 0")
    if record.get("alarms"):
        parts.append("ALARM " + ", ".join(record["alarms"]) + " (memoir status)")
    return ", ".join(parts)


def recorded_by(holder: dict, record: dict | None) -> bool:
    """Whether `record` is the result of the run `holder` started: it finished at or after that start.
    The record is written while the lock is held, so a poll can see the record and the next one the
    lock's release: that release is the same finished run, not a failed one."""
    try:
        return datetime.fromisoformat(str((record or {})["finished"])) >= datetime.fromisoformat(str(holder["started"]))
    except (KeyError, TypeError, ValueError):  # a stamp missing or unreadable, or naive against aware
        return False


def run_events(before: Snapshot, after: Snapshot, at: str) -> tuple[list[str], dict | None]:
    """The lines to print between two snapshots, and the last run's result if one ended."""
    lines: list[str] = []
    result = None
    started = after.holder and (not before.holder or before.holder.get("pid") != after.holder.get("pid")
                                or before.holder.get("started") != after.holder.get("started"))
    # A new last record, not only a longer log: retention (keep_runs) keeps runs.jsonl's length flat.
    if after.last_run is not None and (after.runs > before.runs or after.last_run != before.last_run):
        result = {"result": "finished", **after.last_run}
        lines.append(f"{at} run finished: {describe_run(after.last_run)}")
    elif before.holder and not after.holder and not recorded_by(before.holder, after.last_run):
        result = {"result": "failed", "finished": at, "pid": before.holder.get("pid"), "what": before.holder.get("what")}
        lines.append(f"{at} run by pid {before.holder.get('pid')} ({before.holder.get('what', 'run')}) ended "
                     "without recording a result: it failed or was stopped (its error is above; memoir status)")
    if started and after.holder is not None:
        lines.append(f"{at} run started: {after.holder.get('what', 'run')}, pid {after.holder.get('pid')}")
    return lines, result


class Watch:
    """Polls the home every `poll_s` seconds on a daemon thread; prints run lines, keeps the status file."""

    def __init__(self, state_dir: Path, status: ServeStatus, say: Callable[[str], None], poll_s: float = WATCH_POLL_S):
        self.state_dir, self.status, self.say, self.poll_s = Path(state_dir), status, say, poll_s
        self.stopped = threading.Event()
        self.snapshot = take_snapshot(self.state_dir)
        self.thread = threading.Thread(target=self._loop, name="memoir-serve-watch", daemon=True)

    def start(self) -> Watch:
        write_status(self.state_dir, self.status)
        self.thread.start()
        return self

    def poll(self) -> None:
        now = take_snapshot(self.state_dir)
        lines, result = run_events(self.snapshot, now, datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S"))
        self.snapshot = now
        for line in lines:
            self.say(line)
        if result is not None:
            self.status = replace(self.status, last_run=result)
            write_status(self.state_dir, self.status)

    def _loop(self) -> None:
        while not self.stopped.wait(self.poll_s):
            try:
                self.poll()
            except Exception as exc:  # noqa: BLE001 - watching must never stop serving
                self.say(f"(could not read the run history: {exc})")

    def stop(self) -> None:
        self.stopped.set()
        if self.thread.is_alive():
            self.thread.join(self.poll_s + 1)


# --- the status file and the serve lock -----------------------------------------------------------


@dataclass(frozen=True)
class ServeStatus:
    """`state/serve.json`: who serves this home, where, on which schedule, and the last run's result."""

    pid: int
    started: str
    api_url: str
    cron: str
    timezone: str
    replay_cron: str | None = None
    last_run: dict | None = None
    stopped: str | None = None

    def to_dict(self) -> dict:
        return {"pid": self.pid, "started": self.started, "api_url": self.api_url, "cron": self.cron,
                "timezone": self.timezone, "replay_cron": self.replay_cron, "last_run": self.last_run,
                "stopped": self.stopped, "deployments": list(DEPLOYMENTS)}

    @classmethod
    def from_dict(cls, d: dict) -> ServeStatus:
        return cls(pid=int(d.get("pid", 0)), started=str(d.get("started", "")), api_url=str(d.get("api_url", "")),
                   cron=str(d.get("cron", "")), timezone=str(d.get("timezone", "UTC")),
                   replay_cron=d.get("replay_cron"), last_run=d.get("last_run"), stopped=d.get("stopped"))


def write_status(state_dir: Path, status: ServeStatus) -> None:
    write_atomic(Path(state_dir) / STATUS_FILE, json.dumps(status.to_dict(), indent=2, sort_keys=True) + "\n")


def read_status(state_dir: Path) -> ServeStatus | None:
    try:
        return ServeStatus.from_dict(json.loads((Path(state_dir) / STATUS_FILE).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def serving(state_dir: Path) -> bool:
    """Whether a live process holds this home's serve lock (the kernel drops it when serve dies)."""
    return held_by_a_live_process(Path(state_dir) / SERVE_LOCK)


@contextmanager
def serve_lock(state_dir: Path) -> Iterator[None]:
    """Hold `state/serve.lock` for the block; `ServeBusy` when another serve holds it."""
    path = Path(state_dir) / SERVE_LOCK
    make_private_dir(path.parent)
    fd = open_private(path, os.O_RDWR)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = read_status(state_dir)
            who = f"pid {other.pid}, since {other.started}" if other else "another process"
            raise ServeBusy(f"a memoir serve ({who}) already serves this home; "
                            "`memoir serve --status` shows it, stop it before starting another") from None
        yield
    finally:
        os.close(fd)


def status_lines(status: ServeStatus | None, running: bool, now: datetime) -> list[str]:
    """What `memoir serve --status` prints."""
    if status is None:
        return ["serve      not running (no memoir serve has run for this home)"]
    lines = []
    if running:
        lines.append(f"serve      running, pid {status.pid}, since {status.started}")
        lines.append(f"  api      {status.api_url}")
        when = next_run(status.cron, status.timezone, now)
        lines.append(f"  nightly  {status.cron} ({status.timezone}); next run {when.isoformat(sep=' ', timespec='minutes')}")
        if status.replay_cron:
            lines.append(f"  replay   {status.replay_cron} ({status.timezone})")
    else:
        ended = f"stopped {status.stopped}" if status.stopped else "ended without stopping cleanly"
        lines.append(f"serve      not running (last: pid {status.pid}, started {status.started}, {ended})")
    last = status.last_run
    if last is None:
        lines.append("  last run none since serve started")
    elif last.get("result") == "failed":
        lines.append(f"  last run FAILED at {last.get('finished')} (pid {last.get('pid')}); see serve's terminal, memoir status")
    else:
        lines.append(f"  last run {last.get('finished')}: {describe_run(last)}")
    return lines


# --- the Prefect server ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(api_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{api_url}/health", timeout=2) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError):
        return False


@contextmanager
def prefect_server(home: Path, port: int | None = None, timeout_s: float = SERVER_START_TIMEOUT_S,
                   stopping: threading.Event | None = None) -> Iterator[str]:
    """Run `prefect server start` for the block; yields its API URL and stops it afterwards.

    With `stopping`, a signal that arrives while the server starts ends the wait at once.
    """
    port = port or free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    log_path = Path(home) / "prefect" / "server.log"
    make_private_dir(log_path.parent)
    with os.fdopen(open_private(log_path, os.O_WRONLY | os.O_APPEND), "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            # The dashboard asks its API at PREFECT_UI_API_URL, which Prefect derives from its settings, not
            # from --port: unset, the page served here would call port 4200 and find nothing.
            env={**environment(), **prefect_environment(home), "PREFECT_LOGGING_LEVEL": "INFO",
                 "PREFECT_UI_API_URL": api_url, "PREFECT_SERVER_API_HOST": "127.0.0.1",
                 "PREFECT_SERVER_API_PORT": str(port)},
            umask=PRIVATE_UMASK,  # the server writes prefect.db, its logs and storage under the home
            start_new_session=True,  # its own process group: stopping it stops uvicorn and services too
        )
    try:
        deadline = time.monotonic() + timeout_s
        while not healthy(api_url):
            if stopping is not None and stopping.is_set():
                raise KeyboardInterrupt
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log_path.read_text(errors="replace")[-2000:]
                raise ServerFailed(f"prefect server on port {port} did not become healthy "
                                   f"(exit {proc.poll()}); log {log_path}:\n{tail}")
            time.sleep(0.5)
        yield api_url
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=SERVER_STOP_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
    except ProcessLookupError:
        pass


def stop_children(grace_s: float = 3.0, pid: int | None = None) -> int:
    """Terminate every process `pid` (default: this one) started, theirs too; kill what stays.

    Returns how many there were. The last step of a stop, so no flow run outlives serve.
    """
    import psutil  # deferred: start-up

    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return 0
    for child in children:
        try:
            child.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(children, timeout=grace_s)
    for child in alive:
        try:
            child.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=2)
    return len(children)


@contextmanager
def stop_on_signals() -> Iterator[threading.Event]:
    """SIGINT and SIGTERM set the yielded event (serve then stops in order); a second one exits at once."""
    stopping = threading.Event()

    def handle(signum, frame):
        if stopping.is_set():
            stop_children(grace_s=0.5)
            os._exit(128 + signum)
        stopping.set()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stopping
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# --- serving ----------------------------------------------------------------------------------------


def deployments(home: str, nightly_cron: str, replay_cron: str | None = None, timezone: str = "UTC"):
    """The three flows as deployments: nightly on its cron, the others on demand (or their cron)."""
    from prefect.schedules import Cron  # deferred: start-up

    from memoir.flows.nightly import nightly, rebuild_index, replay_backlog  # deferred: start-up (prefect)

    params = {"home": home}
    replay = [Cron(replay_cron, timezone=timezone)] if replay_cron else None
    return [
        nightly.to_deployment(name="memoir-nightly", schedules=[Cron(nightly_cron, timezone=timezone)],
                              parameters=params),
        replay_backlog.to_deployment(name="memoir-replay", schedules=replay, parameters=params),
        rebuild_index.to_deployment(name="memoir-rebuild-index", parameters=params),
    ]


def serve_deployments(home: str, nightly_cron: str, replay_cron: str | None, timezone: str,
                      stopping: threading.Event, on_ready: Callable[[], None] = lambda: None) -> None:
    """Register the deployments and run their scheduled flow runs until `stopping` is set.

    Prefect's runner runs on a thread of its own, so the main thread keeps the signals: a stop
    asks the runner to cancel its flow runs, waits RUNNER_STOP_S, then ends what is left.
    """
    import asyncio  # deferred: start-up

    from prefect.runner import Runner  # deferred: start-up

    runner = Runner(pause_on_shutdown=False)
    failure: list[BaseException] = []
    ready = threading.Event()

    planned = deployments(home, nightly_cron, replay_cron, timezone)  # sync here: in a loop it is a coroutine

    async def main() -> None:
        for deployment in planned:
            await runner.aadd_deployment(deployment)
        ready.set()
        await runner.start()

    def run() -> None:
        try:
            asyncio.run(main())
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            failure.append(exc)

    thread = threading.Thread(target=run, name="memoir-serve-runner", daemon=True)
    thread.start()
    announced = False
    while thread.is_alive() and not stopping.wait(0.5):
        if ready.is_set() and not announced:
            announced = True
            on_ready()
    if thread.is_alive():
        if runner.started:
            try:
                runner.execute_in_background(runner.astop)
            except RuntimeError:
                pass  # its loop is already closing
        thread.join(RUNNER_STOP_S)
        # What the runner logs after this is its connections closing under it, not news.
        logging.getLogger("prefect").setLevel(logging.CRITICAL)
    if failure and not stopping.is_set():
        raise ServerFailed(f"the Prefect runner stopped: {failure[0]!r}") from failure[0]
