"""The hook's client (Claude Code, Gemini CLI, Copilot CLI): one request to the warm recall service.

The prompt waits for it, so it starts as `memoir hook install <host>` writes it: `python -I -S -c '...; from
hook_client import main; main()' <host> [<event>]`. `-I` keeps the user's folder and PYTHON* variables out of the
import path, `-S` skips site-packages, and the fast path imports only the stdlib: with MEMOIR_HOME set it sends its
environment and the service resolves the caller's settings; without it, the slow path (flows/hook_slow_path.py)
resolves them here. A warm `memoir serve-recall` answers on its unix socket; the client never loads the model or
the index. No service: a prompt gets nothing and the service is started in the background (its output in
state/recall-service.log); a session's start answers the brief from the index in-process. Each call's outcome goes
to state/hook.jsonl, which `memoir status` counts. It always exits 0: an error means no context, never a failed prompt.
"""

from __future__ import annotations

import _socket  # the C module: `socket` (and `json`) pull in enum and re, half the client's start-up
import os
import sys
import time

SOCKET_NAME = "recall.sock"
LOCK_NAME = "recall.lock"  # held (flock) by a service from start-up to exit
SERVICE_LOG = "recall-service.log"
HOOK_LOG = "hook.jsonl"
HOOK_LOG_MAX_BYTES = 1_000_000  # ~6000 calls; then rotated once to hook.jsonl.1
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes on Linux, 104 on macOS
MAX_MESSAGE = 2_000_000  # one prompt with a pasted log, at most
OUTPUT_MARGIN_MS = 15  # what the hook keeps back for printing its answer and exiting
SERVICE_MARGIN_MS = 10  # the service's recall deadline sits this much before the client's
ENV_WAIT_CAP_MS = 1000  # the client's own stop when only the service knows the budget (a wedged service)
ENV_NAMES = ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME")  # besides MEMOIR_*, what load_settings reads
STATE_DIR = "state"  # Settings.state_dir is <home>/state
SESSION_START_BUDGET_MS = float(os.environ.get("MEMOIR_SESSION_START_BUDGET_MS") or 3000)  # off the prompt's path: seconds
SERVICE_IDLE_EXIT_S = 8 * 3600  # a service the hook started stops after a working day without prompts
# Each host's events asking for a recall (the prompt) or the brief (a session's start); Copilot's: cli/hook_settings.py.
CLAUDE_EVENTS = {"UserPromptSubmit": "recall", "SessionStart": "brief"}
COPILOT_EVENTS = {"userPromptTransformed": "recall", "sessionStart": "brief", "SessionStart": "brief"}
HOST_EVENTS = {"claude-code": CLAUDE_EVENTS, "copilot-cli": COPILOT_EVENTS, "gemini-cli": {"BeforeAgent": "recall", "SessionStart": "brief"}}
OUTCOMES = ("injected", "empty", "timeout", "cold_start", "error")


# --- JSON without the json package ---------------------------------------------------------------------


class _DecoderContext:
    """What `_json`'s scanner reads from a decoder: plain JSON, constants (NaN, Infinity) as floats."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float


def _no_default(obj):
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def _codec():
    """(loads, dumps) on the C accelerator `json` itself uses, without importing `json`
    (its decoder imports `re`: ~7 ms of a ~20 ms client); the `json` package where `_json` differs."""
    try:
        import _json  # deferred: start-up

        scan = _json.make_scanner(_DecoderContext())
        plain = _json.make_encoder(None, _no_default, _json.encode_basestring_ascii, None, ": ", ", ",
                                   False, False, True)
        ordered = _json.make_encoder(None, _no_default, _json.encode_basestring_ascii, None, ": ", ", ",
                                     True, False, True)

        def loads(text: str | bytes):
            text = (text.decode("utf-8") if isinstance(text, bytes) else text).strip(" \t\n\r")
            try:
                obj, end = scan(text, 0)
            except StopIteration:
                raise ValueError("no JSON value") from None
            if end != len(text):
                raise ValueError("extra data after the JSON value")
            return obj

        def dumps(obj, sort_keys: bool = False) -> str:
            return "".join((ordered if sort_keys else plain)(obj, 0))

        sample = {"b": [1.5, None, True, "é\n"], "a": 1}
        if loads(dumps(sample, True)) != sample or dumps(sample, True) != '{"a": 1, "b": [1.5, null, true, "\\u00e9\\n"]}':
            raise ValueError("_json behaves differently here")
        return loads, dumps
    except Exception:  # noqa: BLE001 - another Python's `_json`: the public package, slower to import
        import json  # deferred: start-up

        return json.loads, lambda obj, sort_keys=False: json.dumps(obj, sort_keys=sort_keys)


loads, dumps = _codec()


# --- paths and the wire ------------------------------------------------------------------------------


def socket_path(state_dir: str, *, env=None, temp_dir: str | None = None, create: bool = False) -> str:
    """`<state>/recall.sock`, or when too long a socket in a folder only this user can reach
    (`private_socket_dir`; `create` makes it: the service binds, a client only looks). Raises UnsafeSocket."""
    path = os.path.join(str(state_dir), SOCKET_NAME)
    if len(os.fsencode(path)) <= MAX_SOCKET_PATH:
        return path
    import hashlib  # deferred: start-up (only on this rare path)

    digest = hashlib.sha256(os.fsencode(os.path.abspath(str(state_dir)))).hexdigest()[:16]
    folder = private_socket_dir(os.environ if env is None else env, temp_dir, create=create)
    return os.path.join(folder, f"recall-{digest}.sock")


class UnsafeSocket(OSError):
    """The socket's folder or the process answering on it is not this user's own: nothing is sent
    to it and nothing it says is trusted (another local user could put text into the prompt)."""


def private_dir_problem(path: str, uid: int) -> str:
    """Why `path` is not a private folder of `uid` (a real directory, its own, mode 0700); '' if it is.
    lstat: a symlink is refused even to a good folder, as its folder's owner can repoint it later."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"
    kind = st.st_mode & 0o170000
    if kind == 0o120000:
        return f"{path} is a symlink"
    if kind != 0o040000:
        return f"{path} is not a directory"
    if st.st_uid != uid:
        return f"{path} belongs to uid {st.st_uid}, not {uid}"
    if st.st_mode & 0o777 != 0o700:
        return f"{path} has mode {st.st_mode & 0o777:04o}, not 0700"
    return ""


def private_socket_dir(env, temp_dir: str | None = None, *, create: bool = False) -> str:
    """`$XDG_RUNTIME_DIR/memoir` when the runtime dir is this user's and 0700, else `<cache>/memoir-sockets` in
    the user's own cache folder (no other user can make it first), else `<temp dir>/memoir-<uid>`, each trusted only
    once checked. A missing folder is returned as is when `create` is off. Raises UnsafeSocket naming each refusal."""
    uid = os.getuid()
    refused, candidates = [], []
    runtime = env.get("XDG_RUNTIME_DIR") or ""
    if runtime:
        why = private_dir_problem(runtime, uid)
        refused += [f"XDG_RUNTIME_DIR {why}"] if why else []
        candidates += [] if why else [os.path.join(runtime, "memoir")]
    cache = env.get("XDG_CACHE_HOME") or (os.path.join(env["HOME"], ".cache") if env.get("HOME") else "")
    if cache and os.path.isdir(cache) and not os.path.islink(cache) and os.stat(cache).st_uid == uid \
            and not os.stat(cache).st_mode & 0o022:  # the user's own, writable by no one else
        candidates.append(os.path.join(cache, "memoir-sockets"))
    if temp_dir is None:
        import tempfile  # deferred: start-up

        temp_dir = tempfile.gettempdir()
    candidates.append(os.path.join(temp_dir, f"memoir-{uid}"))
    for folder in candidates:
        if create:
            try:
                os.mkdir(folder, 0o700)
                os.chmod(folder, 0o700)  # ours, just made: the umask may have taken more than group/other
            except FileExistsError:
                pass
            except OSError as exc:
                refused.append(f"{folder}: {exc.strerror or exc}")
                continue
        elif not os.path.lexists(folder):
            return folder  # no service made it: connecting finds nothing, and the service checks on creating it
        why = private_dir_problem(folder, uid)
        if not why:
            return folder
        refused.append(why)
    raise UnsafeSocket("no private folder for the recall socket (" + "; ".join(refused) + "); remove it, "
                       "set XDG_RUNTIME_DIR to a folder of yours with mode 0700, or use a shorter MEMOIR_HOME")


def peer_uid(sock) -> int | None:
    """The uid at the other end of a connected unix socket; None without SO_PEERCRED (the private folder guards)."""
    option = getattr(_socket, "SO_PEERCRED", None)
    if option is None:
        return None
    raw = sock.getsockopt(_socket.SOL_SOCKET, option, 12)  # struct ucred: pid, uid, gid as C ints
    return int.from_bytes(raw[4:8], sys.byteorder)


class NoService(Exception):
    """Nothing listens on the socket (no file, or a stale one)."""


def ask(state_dir: str, request: dict, timeout_s: float) -> dict:
    """One JSON answer, only from this user's server. Raises NoService, UnsafeSocket, TimeoutError, OSError/ValueError."""
    path = socket_path(state_dir)
    if timeout_s <= 0:
        raise TimeoutError("no time left to ask")
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.settimeout(timeout_s)
        try:
            s.connect(path)
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            raise NoService(str(exc)) from exc
        # Checked before the prompt leaves this process: a stranger gets neither the prompt nor a say.
        uid = peer_uid(s)
        if uid is not None and uid != os.getuid():
            raise UnsafeSocket(f"refused the recall service on {path}: it runs as uid {uid}, not as you "
                               f"(uid {os.getuid()})")
        s.sendall(dumps(request).encode("utf-8") + b"\n")
        s.shutdown(_socket.SHUT_WR)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    finally:
        s.close()
    answer = loads(b"".join(chunks))
    if not isinstance(answer, dict):
        raise ValueError("the service's answer is not a JSON object")
    return answer


def hook_output(event: str, context: str, host: str = "claude-code", payload: dict | None = None) -> str:
    """The answer each host reads ('' for none): Claude Code's and Gemini CLI's `hookSpecificOutput.additionalContext`;
    Copilot CLI's top-level `additionalContext` (sessionStart) or `modifiedTransformedPrompt`, the model-facing
    prompt then the `<memoir-context>` block (userPromptTransformed; memoir's readers strip the block)."""
    prompt, brief = str((payload or {}).get("transformedPrompt") or ""), COPILOT_EVENTS.get(event) == "brief"
    if not context or (host == "copilot-cli" and not brief and not prompt):
        return ""
    if host == "copilot-cli":
        return dumps({"additionalContext": context} if brief else {"modifiedTransformedPrompt": f"{prompt}\n\n{context}"})
    return dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}})


def process_age_s() -> float:
    """Seconds since this process started (interpreter and imports included; 0 if unknown): the
    host waits from the moment it starts the hook, so the budget is counted from there too."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            start_ticks = int(fh.read().rsplit(b")", 1)[1].split()[19])
        with open("/proc/uptime", "rb") as fh:
            uptime = float(fh.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0


def record_call(state_dir: str, event: str, outcome: str, elapsed_ms: float, detail: str = "") -> None:
    """Append one line to state/hook.jsonl (one write, O_APPEND); a failure here is ignored.
    An error's text goes through memoir's sanitizer first (tens of ms: only the error path pays)."""
    if outcome == "error" and detail:
        detail = _scrubbed(detail)
    line = dumps({"ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "event": event,
                       "outcome": outcome, "ms": round(elapsed_ms, 1), "detail": detail}, sort_keys=True)
    path = os.path.join(str(state_dir), HOOK_LOG)
    try:
        os.makedirs(str(state_dir), mode=0o700, exist_ok=True)
        try:
            if os.stat(path).st_size > HOOK_LOG_MAX_BYTES:
                os.replace(path, path + ".1")
        except OSError:
            pass
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (line + "\n").encode("utf-8"))
        finally:
            os.close(fd)
    except OSError:
        pass


def _memoir_importable() -> None:
    """Let the slow path import the rest of memoir, the way the interpreter would without -S:
    `site.main()` adds site-packages (and an editable install's finder) after the standard library,
    never at sys.path[0], and this file's folder, which the hook command appended, is dropped again
    so none of its other modules can stand in for a library's."""
    try:
        import memoir.cards  # noqa: F401  # deferred: start-up (importable already in the service, CLI, tests)
        return
    except ImportError:
        pass
    here = os.path.dirname(os.path.abspath(__file__))
    if here in sys.path:
        sys.path.remove(here)
    import site  # deferred: start-up

    site.main()


def _slow_path():
    """memoir.flows.hook_slow_path: settings, the sanitizer and the index, off the fast path."""
    _memoir_importable()
    from memoir.flows import hook_slow_path  # deferred: start-up

    return hook_slow_path


def _scrubbed(text: str) -> str:
    try:
        return _slow_path().scrubbed(text)
    except Exception:  # noqa: BLE001 - no sanitizer, no text: the outcome alone is still recorded
        return "(detail withheld: the sanitizer could not be loaded)"


def start_service(home: str, state_dir: str) -> int | None:
    """Start `memoir serve-recall` detached; its pid, or None when one is already running or starting.
    The client takes the service's lock and hands it to the child, so hooks that find no service at
    the same moment start one, not one each. Raises OSError."""
    import fcntl  # deferred: start-up

    os.makedirs(str(state_dir), mode=0o700, exist_ok=True)
    fd = os.open(os.path.join(str(state_dir), LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return None  # a service holds it: loading the model, or answering on a socket we missed
        import subprocess  # deferred: start-up (~10 ms, paid by the one hook that starts the service)

        log = os.open(os.path.join(str(state_dir), SERVICE_LOG), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            # -I: like the hook, the service must not import the user's folder. `-m flows.cli` would
            # load the CLI module twice (as __main__ and as flows.cli), so its entry point is called.
            cmd = [sys.executable, "-I", "-c", "from memoir.flows.cli.main import main; main()", "--home", str(home),
                   "serve-recall", "--idle-exit-s", str(SERVICE_IDLE_EXIT_S), "--lock-fd", str(fd)]
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=str(state_dir),
                                    start_new_session=True, pass_fds=(fd,))
        finally:
            os.close(log)
        os.ftruncate(fd, 0)
        # pwrite at 0: the child shares this descriptor's offset and rewrites the same bytes.
        os.pwrite(fd, f"{proc.pid}\n".encode(), 0)  # who holds the lock, readable at once
        return proc.pid
    finally:
        os.close(fd)  # the child's copy keeps the lock


# --- the hook ----------------------------------------------------------------------------------------------


class Caller:
    """What the client knows of its own settings, and what it sends so the service answers with them:
    resolved settings (`from_settings`: the CLI, or no MEMOIR_HOME), or on the fast path only the home
    and the environment, which the service resolves (the config module is a third of the client's start-up)."""

    def __init__(self, home: str, state_dir: str, budget_ms: float, wire: dict, settings=None):
        self.home, self.state_dir, self.budget_ms, self.wire, self.settings = home, state_dir, budget_ms, wire, settings

    @classmethod
    def from_settings(cls, settings) -> Caller:
        return cls(str(settings.home), str(settings.state_dir), float(settings.sync_timeout_ms),
                   {"settings": _slow_path().request_settings(settings)}, settings)

    @classmethod
    def from_env(cls, env: dict) -> Caller | None:
        """The fast path, when MEMOIR_HOME names the home (the installed hook command sets it)."""
        home = env.get("MEMOIR_HOME")
        if not home:
            return None
        home = os.path.abspath(os.path.expanduser(home))
        try:
            # The service holds the answer to the resolved budget (started_at travels with the
            # request); without the variable the client only needs a stop for a wedged service.
            budget = float(env.get("MEMOIR_SYNC_TIMEOUT_MS") or ENV_WAIT_CAP_MS)
        except ValueError:
            return None
        wire = {"env": {k: v for k, v in env.items() if k.startswith("MEMOIR_") or k in ENV_NAMES}}
        return cls(home, os.path.join(home, STATE_DIR), budget, wire)

    def resolved(self):
        return self.settings if self.settings is not None else _slow_path().resolve_settings()


def run_hook(payload: object, caller: Caller, started: float, host: str = "claude-code") -> tuple[str, str, str, str]:
    """(stdout, event, outcome, detail) for one host event; outcome '' when nothing was asked."""
    if not isinstance(payload, dict):
        return "", "", "", ""
    event = str(payload.get("hook_event_name") or "")
    op, prompt = HOST_EVENTS[host].get(event, ""), str(payload.get("prompt") or "")
    if not op or (op == "recall" and not prompt.strip()):
        return "", event, "", ""
    workspace = str(payload.get("cwd") or "")
    budget = caller.budget_ms if op == "recall" else float(SESSION_START_BUDGET_MS)
    left_ms = budget - (time.perf_counter() - started) * 1000 - OUTPUT_MARGIN_MS
    request = {"op": op, "query": prompt, "workspace": workspace, "session_id": str(payload.get("session_id") or ""),
               "budget_ms": max(0.0, left_ms - SERVICE_MARGIN_MS),
               "started_at": time.time() - (time.perf_counter() - started), **caller.wire}
    try:
        answer = ask(caller.state_dir, request, left_ms / 1000)
    except NoService:
        try:
            pid = start_service(caller.home, caller.state_dir)
            detail = ("the recall service is still loading the model" if pid is None else
                      f"started the recall service in the background (pid {pid}; its log: {STATE_DIR}/{SERVICE_LOG})")
        except OSError as exc:
            detail = _scrubbed(f"cannot start the recall service: {exc}; run `memoir serve-recall` to see why")
        shared = os.environ.get("MEMOIR_ALLOW_SHARED_HOME", "") not in ("", "0")  # a home another user may change:
        if op == "brief" and workspace and (shared or not _slow_path().foreign_folders(caller.home)):  # no brief
            return hook_output(event, _slow_path().lexical_brief(caller.resolved(), workspace), host), event, "cold_start", detail
        return "", event, "cold_start", detail
    except UnsafeSocket as exc:
        return "", event, "error", f"refused: {exc}"  # never a cold start: the service could not bind there either
    except TimeoutError:
        return "", event, "timeout", f"no answer within {budget:.0f} ms"
    except (OSError, ValueError) as exc:
        return "", event, "error", f"{type(exc).__name__}: {exc}"
    if not answer.get("ok"):
        return "", event, "error", str(answer.get("error") or "the service refused the request")
    context = str(answer.get("context") or "")
    outcome = str(answer.get("outcome") or ("injected" if context else "empty"))
    return (hook_output(event, context, host, payload), event, outcome if outcome in OUTCOMES else "error",
            str(answer.get("reason") or ""))


def hook_main(host: str = "claude-code", stdin=None, stdout=None, settings=None, count_startup: bool = True,
              event: str = "") -> int:
    """Entry point of the hook process: always exits 0, prints an answer or nothing at all.
    `settings` are loaded here when None; `count_startup` charges the process's start-up to the
    budget (off when the hook runs inside a longer-lived process); `event`: the event the command names."""
    started = time.perf_counter() - (process_age_s() if count_startup else 0.0)
    stdin = sys.stdin.buffer if stdin is None else stdin
    stdout = sys.stdout.buffer if stdout is None else stdout
    try:
        caller = (Caller.from_settings(settings) if settings is not None
                  else Caller.from_env(dict(os.environ)) or Caller.from_settings(_slow_path().resolve_settings()))
    except Exception as exc:  # noqa: BLE001 - a broken config must not block the user's prompt
        record_config_error(exc, started)
        return 0
    if host not in HOST_EVENTS:
        return 0
    # The last defence against a hang (a host that never closes stdin, a stuck disk): leave silently at the budget, logged.
    # A command naming a session's start gets its seconds from the start; else the prompt's, until the event is read.
    brief_named, state = HOST_EVENTS[host].get(event) == "brief", caller.state_dir
    armed = _arm_watchdog(started, SESSION_START_BUDGET_MS if brief_named else caller.budget_ms, state)
    named, event, outcome, detail = event, "", "", ""
    try:
        raw = stdin.read(MAX_MESSAGE)
        payload = loads(raw)
        if named and isinstance(payload, dict) and not payload.get("hook_event_name"):  # Copilot's camelCase payload
            payload = {**payload, "hook_event_name": named, "session_id": payload.get("sessionId") or ""}
        if armed and isinstance(payload, dict) and HOST_EVENTS[host].get(payload.get("hook_event_name")) == "brief":
            _arm_watchdog(started, SESSION_START_BUDGET_MS, state)
        out, event, outcome, detail = run_hook(payload, caller, started, host)
        if out:
            data = (out + "\n").encode("utf-8")
            stdout.write(data if not hasattr(stdout, "encoding") else data.decode("utf-8"))
            stdout.flush()
        if HOST_EVENTS[host].get(event) == "brief":  # once the brief is out, so it never waits: flows/hook_backlog.py
            _slow_path().start_backlog(payload, caller.settings, host)
    except BaseException as exc:  # noqa: BLE001 - any failure means "no context", never a failed prompt
        outcome, detail = ("error", f"{type(exc).__name__}: {exc}") if event else ("", "")
    finally:
        if armed:
            _disarm_watchdog()
    if outcome:
        record_call(state, event, outcome, (time.perf_counter() - started) * 1000, detail)
    return 0


def record_config_error(exc: BaseException, started: float) -> None:
    """Leave a line in the default home's hook.jsonl, so a broken config is not silent (best effort)."""
    try:
        state, detail = _slow_path().config_error(exc, dict(os.environ))
    except Exception:  # noqa: BLE001 - nowhere to write: stay silent, the prompt goes on
        return
    record_call(state, "config", "error", (time.perf_counter() - started) * 1000, detail)


def _arm_watchdog(started: float, budget_ms: float, state_dir: str) -> bool:
    """SIGALRM at the budget ends the process; False where no timer can be set."""
    import _signal as signal  # deferred: start-up (`signal` itself builds enums: 3 ms)

    if not hasattr(signal, "setitimer"):
        return False

    def leave(signum, frame) -> None:
        record_call(state_dir, "", "timeout", (time.perf_counter() - started) * 1000, "the hook's watchdog fired")
        os._exit(0)

    try:
        signal.signal(signal.SIGALRM, leave)
    except ValueError:
        return False  # not the main thread (the hook called inside another program): no watchdog
    left_s = budget_ms / 1000 - (time.perf_counter() - started)
    signal.setitimer(signal.ITIMER_REAL, max(0.01, left_s))
    return True


def _disarm_watchdog() -> None:
    import _signal as signal  # deferred: start-up

    if hasattr(signal, "setitimer"):
        signal.setitimer(signal.ITIMER_REAL, 0)


def main() -> None:
    """`memoir-hook claude-code`, or the installed hook command (memoir.flows.cli.hook_settings.hook_command)."""
    os.umask(0o077)  # it writes only under the home: all private (memoir.cards.private), parents os.makedirs makes too
    sys.exit(hook_main(sys.argv[1] if len(sys.argv) > 1 else "claude-code", event=(sys.argv[2:] or [""])[0]))


if __name__ == "__main__":
    main()
