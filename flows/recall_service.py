"""The warm recall service and the host hook that calls it.

Loading torch and the embedding model takes seconds, a prompt hook has 300 ms. So one long-lived
process (`memoir serve-recall`) keeps the model and the index open and answers on a unix socket
in the state dir (mode 0600, never a network port). The hook is a thin client: stdlib imports,
one request, one answer. When the service is not running the hook answers lexical-only (FTS5
through apsw, no numpy, no torch) or empty, within the same budget, and a watchdog ends the hook
at the budget whatever happens: a hook must never fail or hold up the user's prompt.

Run the hook fast, without the CLI's imports: `python -m flows.recall_service claude-code`
(what `memoir hook install claude-code` writes); `memoir hook claude-code` is the same hook.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from pathlib import Path

from cards.config import Settings

SOCKET_NAME = "recall.sock"
PID_NAME = "recall.pid"
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes on Linux, 104 on macOS
MAX_MESSAGE = 2_000_000  # one prompt with a pasted log, at most
OUTPUT_MARGIN_MS = 30  # what the hook keeps back for building and printing its answer
EXIT_MARGIN_S = 0.02  # the watchdog fires this early: process exit and pipe close take a few ms too
IO_TIMEOUT_S = 2.0  # a service connection that sends nothing for this long is dropped
EVENTS = ("UserPromptSubmit", "SessionStart")


class ServiceError(Exception):
    """The recall service cannot start (already running, socket not creatable)."""


def socket_path(state_dir: Path) -> Path:
    """`<state>/recall.sock`, or a per-user path in the temp dir when that is too long for a socket."""
    path = Path(state_dir) / SOCKET_NAME
    if len(os.fsencode(str(path))) <= MAX_SOCKET_PATH:
        return path
    import hashlib  # only on this rare path: the hook's imports are its start-up time
    import tempfile

    digest = hashlib.sha256(os.fsencode(str(Path(state_dir).absolute()))).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"memoir-{os.getuid()}-{digest}.sock"


# --- client ---------------------------------------------------------------------------------------


def ask(state_dir: Path, request: dict, timeout_s: float) -> dict | None:
    """Send one request to the service; None when it is not running, slow, or answers badly."""
    path = socket_path(state_dir)
    if timeout_s <= 0 or not path.exists():
        return None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout_s)
            s.connect(str(path))
            s.sendall(json.dumps(request).encode("utf-8") + b"\n")
            s.shutdown(socket.SHUT_WR)
            chunks = []
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        answer = json.loads(b"".join(chunks))
    except (OSError, ValueError):
        return None
    return answer if isinstance(answer, dict) and answer.get("ok") else None


# --- the hook ---------------------------------------------------------------------------------------


def hook_output(event: str, context: str) -> str:
    """Claude Code's hook answer: `hookSpecificOutput.additionalContext`; '' prints nothing."""
    if not context:
        return ""
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}})


def _left_ms(started: float, budget_ms: float) -> float:
    return budget_ms - (time.perf_counter() - started) * 1000


def lexical_context(settings: Settings, event: str, payload: dict, budget_ms: float) -> str:
    """The answer without the service: FTS5 only (recall) or the index's newest cards (brief)."""
    from index.containers import immediate_context, session_brief
    from index.recall import Recaller, brief_cards

    with Recaller(settings, embedder=None) as recaller:
        if event == "SessionStart":
            cwd = str(payload.get("cwd") or "")
            return session_brief(cwd, brief_cards(recaller, cwd)) if cwd else ""
        result = recaller.recall(str(payload.get("prompt") or ""), workspace=str(payload.get("cwd") or ""),
                                 session_id=str(payload.get("session_id") or ""), budget_ms=budget_ms)
        return immediate_context(result.cards)


def run_hook(stdin_text: str, settings: Settings, started: float | None = None) -> str:
    """The hook's stdout for one Claude Code event ('' for nothing). Raises on bad input."""
    started = time.perf_counter() if started is None else started
    payload = json.loads(stdin_text)
    if not isinstance(payload, dict):
        return ""
    event = str(payload.get("hook_event_name") or "")
    if event not in EVENTS:
        return ""
    budget = float(settings.sync_timeout_ms)
    left = _left_ms(started, budget) - OUTPUT_MARGIN_MS
    if event == "UserPromptSubmit" and not str(payload.get("prompt") or "").strip():
        return ""
    request = {"op": "recall" if event == "UserPromptSubmit" else "brief",
               "query": payload.get("prompt") or "", "workspace": payload.get("cwd") or "",
               "session_id": payload.get("session_id") or "", "budget_ms": max(0.0, left - 10)}
    answer = ask(settings.state_dir, request, left / 1000)
    if answer is not None:
        return hook_output(event, str(answer.get("context") or ""))
    left = _left_ms(started, budget) - OUTPUT_MARGIN_MS
    if left <= 0:
        return ""
    return hook_output(event, lexical_context(settings, event, payload, left))


def process_age_s() -> float:
    """Seconds since this process started (interpreter start-up and imports included); 0 if unknown.

    The host waits from the moment it starts the hook, so the budget is counted from there too.
    """
    try:
        with open("/proc/self/stat", "rb") as fh:
            start_ticks = int(fh.read().rsplit(b")", 1)[1].split()[19])
        with open("/proc/uptime", "rb") as fh:
            uptime = float(fh.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0


def hook_main(host: str = "claude-code", stdin=None, stdout=None, settings: Settings | None = None,
              count_startup: bool = True) -> int:
    """Entry point of the hook process: always exits 0, prints an answer or nothing at all.

    Args:
        count_startup: charge the process's start-up (interpreter, imports) to the budget; off
            when the hook runs inside a longer-lived process (tests).
    """
    started = time.perf_counter() - (process_age_s() if count_startup else 0.0)
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    try:
        if settings is None:
            from cards.config import load_settings

            settings = load_settings()
        budget_s = settings.sync_timeout_ms / 1000
    except Exception:  # noqa: BLE001 - a broken config must not block the user's prompt
        return 0
    # The last line of defence against a hang (a lock, a stuck disk): leave silently at the budget.
    left_s = budget_s - EXIT_MARGIN_S - (time.perf_counter() - started)
    watchdog = threading.Timer(max(0.01, left_s), lambda: os._exit(0))
    watchdog.daemon = True
    watchdog.start()
    try:
        if host != "claude-code":
            return 0
        out = run_hook(stdin.read(MAX_MESSAGE), settings, started)
        if out:
            stdout.write(out + "\n")
            stdout.flush()
    except BaseException:  # noqa: BLE001 - any failure means "no context", never a failed prompt
        return 0
    finally:
        watchdog.cancel()
    return 0


# --- the service --------------------------------------------------------------------------------------


class RecallService:
    """Answers recall and brief requests with a warm model and an open index."""

    def __init__(self, settings: Settings, embedder):
        from index.recall import Recaller

        self.settings = settings
        self.recaller = Recaller(settings, embedder)

    def warm(self) -> None:
        """Load the model and open the index now, so the first prompt is not the one that pays."""
        self.recaller.embedder.encode_one("warm up")
        try:
            self.recaller.index()
        except FileNotFoundError:
            pass  # no index yet: each request looks again

    def handle(self, request: dict) -> dict:
        from index.containers import immediate_context, session_brief
        from index.recall import brief_cards

        op = request.get("op")
        if op == "ping":
            return {"ok": True, "pid": os.getpid()}
        if op == "brief":
            workspace = str(request.get("workspace") or "")
            cards = brief_cards(self.recaller, workspace) if workspace else []
            return {"ok": True, "context": session_brief(workspace, cards) if cards else ""}
        if op == "recall":
            budget = request.get("budget_ms")
            result = self.recaller.recall(
                str(request.get("query") or ""), workspace=str(request.get("workspace") or ""),
                session_id=str(request.get("session_id") or ""),
                budget_ms=None if budget is None else float(budget))
            return {"ok": True, "context": immediate_context(result.cards), "result": result.to_json(),
                    "record": result.record}
        return {"ok": False, "error": f"unknown op {op!r}"}

    def close(self) -> None:
        self.recaller.close()


def _read_request(conn: socket.socket) -> dict:
    conn.settimeout(IO_TIMEOUT_S)
    data = b""
    while b"\n" not in data and len(data) < MAX_MESSAGE:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    request = json.loads(data.split(b"\n", 1)[0] or b"{}")
    return request if isinstance(request, dict) else {}


def bind_socket(state_dir: Path) -> tuple[socket.socket, Path]:
    """A listening unix socket only this user can connect to; a stale socket file is replaced."""
    path = socket_path(state_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        if ask(state_dir, {"op": "ping"}, 0.5) is not None:
            raise ServiceError(f"a recall service already answers on {path}; stop it first")
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    except OSError as exc:
        sock.close()
        raise ServiceError(f"cannot create the socket {path}: {exc}") from exc
    finally:
        os.umask(old)
    sock.listen(16)
    return sock, path


def serve(settings: Settings, embedder, *, idle_exit_s: float | None = None, on_ready=None) -> int:
    """Warm up, then answer requests one at a time until SIGTERM/SIGINT or `idle_exit_s` of quiet.

    The socket appears only once the model is warm, so "the socket answers" means "warm".
    """
    import signal

    service = RecallService(settings, embedder)
    service.warm()
    sock, path = bind_socket(settings.state_dir)
    pid_file = Path(settings.state_dir) / PID_NAME
    pid_file.write_text(f"{os.getpid()}\n", encoding="utf-8")
    stop = threading.Event()

    def on_signal(signum, frame) -> None:
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    if on_ready:
        on_ready(path)
    served = 0
    last = time.monotonic()
    sock.settimeout(0.5)
    try:
        while not stop.is_set():
            if idle_exit_s is not None and time.monotonic() - last > idle_exit_s:
                break
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            except OSError:
                if stop.is_set():
                    break
                raise
            last = time.monotonic()
            with conn:
                try:
                    answer = service.handle(_read_request(conn))
                except Exception as exc:  # noqa: BLE001 - one bad request must not stop the service
                    answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
                try:
                    conn.sendall(json.dumps(answer, default=str).encode("utf-8") + b"\n")
                except OSError:
                    pass  # the hook gave up at its deadline; nothing to do
            served += 1
    finally:
        sock.close()
        for p in (path, pid_file):
            try:
                p.unlink()
            except OSError:
                pass
        service.close()
    return served


if __name__ == "__main__":
    # `python -m flows.recall_service claude-code`: the hook without the CLI's import cost.
    sys.exit(hook_main(sys.argv[1] if len(sys.argv) > 1 else "claude-code"))
