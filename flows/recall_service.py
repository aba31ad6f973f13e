"""The warm recall service: one long-lived process that answers the hook's requests.

Loading torch and the embedding model takes seconds, a prompt hook has 300 ms. So one long-lived
process (`memoir serve-recall`) keeps the model and the index open and answers on a unix socket
in the state dir (a 0700 dir, a 0600 socket, never a network port; when that path is too long for a
socket, in a private folder `hook_client.private_socket_dir` checks). Both ends check the other's
uid (SO_PEERCRED): the client trusts no answer, and the service serves no request, from another user. The hook's client is
`hook_client.py` (stdlib only, started with `python -I -S`); this module is the service and the
helpers the CLI uses to reach it.

Each connection gets its own thread, so four agent sessions asking at once wait for one another
only where they must: the model's forward pass, serialized (its tokenizer is not thread-safe).
Each request carries the caller's settings (max_injected, min_score, budget), and the answer is
computed with them; a request for another memoir home is refused with the reason.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

from memoir.cards.config import ConfigError, Settings, default_config_file, load_settings
from memoir.cards.private import DIR_MODE, foreign_folders, make_private_dir, private_umask
from memoir.flows import hook_client
from memoir.flows.errors import FlowError
from memoir.index.errors import IndexFailure

PID_NAME = "recall.pid"
IO_TIMEOUT_S = 2.0  # a service connection that sends nothing for this long is dropped
MAX_CONNECTIONS = 32  # requests answered at once; more wait in the listen backlog
# The settings a request may carry: the ones that change an answer. Directories never travel:
# a request for another home is refused (see `settings_for`).
REQUEST_SETTINGS = ("max_injected", "min_score", "min_conclusion_chars", "sync_timeout_ms")
# torch threads for the service's query embeddings: on 2 busy cores a second thread waits for a
# core and a one-query pass can take 200+ ms instead of ~15 (the same finding as `memoir search`'s
# QUERY_THREADS); concurrent requests are serialized on the model anyway (SerialEmbedder).
SERVICE_THREADS = 1
MAX_RECALLERS = 8  # distinct caller settings kept open at once (each holds an index connection)
FOREIGN_RECHECK_S = 5.0  # how long a verdict on who may write the home stands (a walk of its folders)


class ServiceError(FlowError):
    """The recall service cannot start (already running, socket not creatable)."""


def socket_path(state_dir: Path, *, create: bool = False) -> Path:
    """`<state>/recall.sock`, or a socket in a private folder when that is too long for a socket.

    Raises hook_client.UnsafeSocket when no private folder can be had.
    """
    return Path(hook_client.socket_path(str(state_dir), create=create))


def ask(state_dir: Path, request: dict, timeout_s: float) -> dict | None:
    """Send one request to the service; None when it is not running, slow, or answers badly."""
    try:
        answer = hook_client.ask(str(state_dir), request, timeout_s)
    except (hook_client.NoService, OSError, ValueError):
        return None
    return answer if answer.get("ok") else None


MAX_EMBED_TEXTS = 64  # one `embed` request: a search query, a small batch of a caller's texts
EMBED_TIMEOUT_S = 30.0


class ServiceEmbedder:
    """Vectors from the warm `memoir serve-recall` when it answers, else from `fallback` in this process.

    `memoir search`, `memoir mcp` and any other caller that needs a vector then asks the service
    that already holds the model (a few ms) instead of loading its own (seconds, hundreds of MB).
    The vectors are the service's model's, the same as the index's; `model_id`, `dim` and the rest
    come from `fallback`, which loads nothing until it is asked to encode.
    """

    def __init__(self, state_dir: Path, fallback) -> None:
        self.state_dir = Path(state_dir)
        self.fallback = fallback
        self.asked_service = 0  # encodes the service answered: a test and `--explain` can tell

    def _from_service(self, texts: list[str]):
        import numpy as np  # deferred: start-up

        if not texts or len(texts) > MAX_EMBED_TEXTS:
            return None
        answer = ask(self.state_dir, {"op": "embed", "texts": texts}, EMBED_TIMEOUT_S)
        vectors = answer.get("vectors") if answer else None
        if not (isinstance(vectors, list) and len(vectors) == len(texts)):
            return None
        self.asked_service += 1
        return np.asarray(vectors, dtype=np.float32)

    def encode(self, texts):
        texts = list(texts)
        found = self._from_service(texts)
        return found if found is not None else self.fallback.encode(texts)

    def encode_one(self, text):
        found = self._from_service([text])
        return found[0] if found is not None else self.fallback.encode_one(text)

    def thread_safe_one(self) -> bool:
        return self.fallback.thread_safe_one()

    def __getattr__(self, name):
        return getattr(self.fallback, name)


# --- the service --------------------------------------------------------------------------------------


class SerialEmbedder:
    """The shared embedder with one batch at a time: HF fast tokenizers fail when two threads use
    one at once ("Already borrowed"). A single query on the direct path (`Embedder.encode_one`)
    locks only its tokenizer call, so two prompts' forward passes share the cores: with four agent
    sessions beside a busy process that took the warm hook's p95 from ~151 to ~140 ms (3 runs each).
    """

    def __init__(self, embedder):
        self._embedder = embedder
        self._lock = threading.Lock()

    def encode(self, texts):
        with self._lock:
            return self._embedder.encode(texts)

    def encode_one(self, text):
        if self._embedder.thread_safe_one():
            return self._embedder.encode_one(text)
        with self._lock:
            return self._embedder.encode_one(text)

    def __getattr__(self, name):
        return getattr(self._embedder, name)


class RecallService:
    """Answers recall and brief requests with a warm model and an open index, for any caller's settings."""

    def __init__(self, settings: Settings, embedder, allow_shared_home: bool = False):
        from memoir.index.recall import Recaller  # deferred: start-up (apsw)

        self.settings = settings
        # Checked again on each request (a folder can change hands while the service runs), at most every few seconds.
        self.allow_shared_home = allow_shared_home or settings.allow_shared_home
        self._foreign: dict[str, tuple[float, list[str]]] = {}
        self.embedder = SerialEmbedder(embedder)
        self.recaller = Recaller(settings, self.embedder)
        self._recallers: dict[tuple, object] = {}
        self._callers: dict[tuple, Settings] = {}  # resolved per (environment, config file version)
        self._lock = threading.Lock()

    def warm(self) -> None:
        """Load the model and open the index now, so the first prompt is not the one that pays."""
        self.embedder.encode_one("warm up")
        try:
            index = self.recaller.index()
        except FileNotFoundError:
            return  # no index yet: each request looks again
        try:
            if hasattr(index, "warm"):  # the semantic index: its binary codes into memory
                index.warm()
        except IndexFailure:
            pass  # the first request meets it again and says why in its answer

    def _foreign_folders(self, settings: Settings) -> list[str]:
        if self.allow_shared_home or settings.allow_shared_home:
            return []
        home = str(settings.home)
        now = time.monotonic()
        seen = self._foreign.get(home)
        if seen is None or now - seen[0] > FOREIGN_RECHECK_S:
            seen = self._foreign[home] = (now, foreign_folders(home))
        return seen[1]

    def settings_for(self, request: dict) -> Settings:
        """The caller's settings for this request; ValueError when it asks about another home."""
        if "env" in request:
            return self._settings_from_env(request["env"])
        sent = request.get("settings") or {}
        if not isinstance(sent, dict):
            raise ValueError("settings must be a JSON object")
        home = sent.get("home")
        if home and Path(str(home)) != Path(self.settings.home):
            raise ValueError(f"this recall service serves {self.settings.home}, the caller's home is {home}; "
                             f"start one for it with `memoir --home {home} serve-recall`")
        changes = {}
        for name in REQUEST_SETTINGS:
            if name in sent:
                kind = type(getattr(self.settings, name))
                changes[name] = kind(sent[name])
        return replace(self.settings, **changes) if changes else self.settings

    def _settings_from_env(self, env: object) -> Settings:
        """The hook's fast path: resolve the caller's environment exactly as its own process would."""
        if not isinstance(env, dict):
            raise ValueError("env must be a JSON object")
        env = {str(k): str(v) for k, v in env.items()}
        key = (tuple(sorted(env.items())), _file_version(default_config_file(env)))
        caller = self._callers.get(key)
        if caller is None:
            try:
                caller = load_settings(env=env)
            except ConfigError as exc:
                raise ValueError(exc.loggable) from exc  # the answer ends up in hook.jsonl
            with self._lock:
                if len(self._callers) >= MAX_RECALLERS:
                    self._callers.pop(next(iter(self._callers)))
                self._callers[key] = caller
        return self.settings_for({"settings": {"home": str(caller.home),
                                               **{n: getattr(caller, n) for n in REQUEST_SETTINGS}}})

    def recaller_for(self, settings: Settings):
        """One open Recaller per distinct caller settings, sharing the warm model."""
        from memoir.index.recall import Recaller  # deferred: start-up (apsw)

        if settings == self.settings:
            return self.recaller
        key = tuple(getattr(settings, n) for n in REQUEST_SETTINGS)
        with self._lock:
            found = self._recallers.get(key)
            if found is None:
                if len(self._recallers) >= MAX_RECALLERS:
                    # Evict the oldest: settings that change per request are a misuse, not a workload.
                    self._recallers.pop(next(iter(self._recallers))).close()
                found = self._recallers[key] = Recaller(settings, self.embedder)
            return found

    def handle(self, request: dict) -> dict:
        from memoir.index.containers import immediate_context, session_brief  # deferred: start-up (jinja2)
        from memoir.index.recall import brief_cards  # deferred: start-up (apsw)

        op = request.get("op")
        if op == "ping":
            return {"ok": True, "pid": os.getpid(), "home": str(self.settings.home)}
        if op == "embed":
            texts = request.get("texts")
            if not (isinstance(texts, list) and 0 < len(texts) <= MAX_EMBED_TEXTS and all(isinstance(t, str) for t in texts)):
                return {"ok": False, "error": f"embed takes 1 to {MAX_EMBED_TEXTS} texts"}
            return {"ok": True, "vectors": self.embedder.encode(texts).tolist()}
        try:
            settings = self.settings_for(request)
        except (ValueError, TypeError) as exc:
            return {"ok": False, "error": str(exc)}
        foreign = self._foreign_folders(settings)
        if foreign and op in ("brief", "recall"):
            # Another user could have replaced a card: inject nothing from this home (`memoir status` says why).
            return {"ok": True, "context": "", "outcome": "empty",
                    "reason": f"the home is not its owner's alone ({foreign[0]}): nothing injected"}
        recaller = self.recaller_for(settings)
        if op == "brief":
            workspace = str(request.get("workspace") or "")
            cards = brief_cards(recaller, workspace) if workspace else []
            context = session_brief(workspace, cards) if cards else ""
            return {"ok": True, "context": context, "outcome": "injected" if context else "empty"}
        if op == "recall":
            budget = request_budget(request, settings)
            result = recaller.recall(
                str(request.get("query") or ""), workspace=str(request.get("workspace") or ""),
                session_id=str(request.get("session_id") or ""),
                budget_ms=None if budget is None else float(budget))
            return {"ok": True, "context": immediate_context(result.cards), "outcome": result.outcome,
                    "reason": result.reason, "result": result.to_json(), "record": result.record}
        return {"ok": False, "error": f"unknown op {op!r}"}

    def answer(self, conn: socket.socket) -> None:
        """Read one request from `conn`, answer it, close it; never raises.

        A connection from another user is refused unread: the socket's folder keeps others out,
        and this holds even where someone loosened the folder's mode.
        """
        with conn:
            try:
                stranger = stranger_uid(conn)
                if stranger is not None:
                    print(f"memoir recall service: refused a connection from uid {stranger}", file=sys.stderr)
                    _drain(conn)  # unread bytes at close would reset the connection before the refusal arrives
                    answer = {"ok": False, "error": f"refused: this recall service answers uid {os.getuid()} only"}
                else:
                    answer = self.handle(_read_request(conn))
            except Exception as exc:  # noqa: BLE001 - one bad request must not stop the service
                answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            try:
                conn.sendall(json.dumps(answer, default=str).encode("utf-8") + b"\n")
            except OSError:
                pass  # the hook gave up at its deadline; nothing to do

    def close(self) -> None:
        self.recaller.close()
        for r in self._recallers.values():
            r.close()


def stranger_uid(conn: socket.socket) -> int | None:
    """The peer's uid when it is not this process's user; None for our own user (or no way to tell)."""
    uid = hook_client.peer_uid(conn)
    return uid if uid is not None and uid != os.getuid() else None


def _file_version(path: Path) -> tuple[int, int] | None:
    """What changes when a config file is edited; None when there is none (the defaults apply)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def request_budget(request: dict, settings: Settings, now: float | None = None) -> float | None:
    """The recall's deadline: the caller's, and never past its settings' budget counted from its start.

    Args:
        now: the service's clock (`time.time()`), a parameter so the arithmetic can be pinned.
    """
    budget = request.get("budget_ms")
    budget = None if budget is None else float(budget)
    started_at = request.get("started_at")
    if started_at is None or "env" not in request:
        return budget  # the caller resolved its settings and computed its own deadline
    # Only the service knows this caller's sync_timeout_ms (resolved from its environment).
    now = time.time() if now is None else now
    left = (settings.sync_timeout_ms - (now - float(started_at)) * 1000
            - hook_client.OUTPUT_MARGIN_MS - hook_client.SERVICE_MARGIN_MS)
    return max(0.0, left if budget is None else min(budget, left))


def _drain(conn: socket.socket, cap: int = 65536) -> None:
    """Read (and drop) what the peer sends, up to its first newline, its end, or `cap` bytes."""
    conn.settimeout(IO_TIMEOUT_S)
    seen = 0
    while seen < cap:
        chunk = conn.recv(cap)
        if not chunk or b"\n" in chunk:
            return
        seen += len(chunk)


def _read_request(conn: socket.socket) -> dict:
    conn.settimeout(IO_TIMEOUT_S)
    data = b""
    while b"\n" not in data and len(data) < hook_client.MAX_MESSAGE:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    request = json.loads(data.split(b"\n", 1)[0] or b"{}")
    return request if isinstance(request, dict) else {}


def take_lock(state_dir: Path, inherited_fd: int | None = None) -> int:
    """Hold `recall.lock` for the service's life: the hook's client reads it as "starting, don't start
    another", and a second service stops here instead of loading the model twice.

    Args:
        inherited_fd: the lock as the hook's client took it and handed it down (`--lock-fd`).
    """
    import fcntl  # deferred: start-up

    make_private_dir(state_dir)
    path = state_dir / hook_client.LOCK_NAME
    if inherited_fd is not None:
        st = os.fstat(inherited_fd)
        if (st.st_dev, st.st_ino) == (os.stat(path).st_dev, os.stat(path).st_ino):
            return inherited_fd  # locked by the client, which also wrote this process's pid in it
        os.close(inherited_fd)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise ServiceError(f"a recall service is already running or starting for {state_dir} "
                           f"(it holds {state_dir / hook_client.LOCK_NAME}); stop it first") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def bind_socket(state_dir: Path) -> tuple[socket.socket, Path]:
    """A listening unix socket only this user can connect to; a stale socket file is replaced."""
    try:
        path = socket_path(state_dir, create=True)
    except hook_client.UnsafeSocket as exc:
        raise ServiceError(str(exc)) from exc
    make_private_dir(path.parent)
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
    sock.listen(64)
    return sock, path


def serve(settings: Settings, embedder, *, idle_exit_s: float | None = None, on_ready=None,
          lock_fd: int | None = None, allow_shared_home: bool = False) -> int:
    """Warm up, then answer requests concurrently until SIGTERM/SIGINT or `idle_exit_s` of quiet.

    The socket appears only once the model is warm, so "the socket answers" means "warm"; the lock
    is held from the start, so "the lock is held" means "warm or warming". While it serves, the
    umask is 0o077: the service writes only under the home, so every file any of its writers makes
    (the recall log, session files, the pid file) is private, whoever wrote the writer.
    """
    with private_umask():
        return _serve(settings, embedder, idle_exit_s, on_ready, lock_fd, allow_shared_home)


def _serve(settings: Settings, embedder, idle_exit_s: float | None, on_ready, lock_fd: int | None,
           allow_shared_home: bool = False) -> int:
    import signal  # deferred: start-up

    state_dir = Path(settings.state_dir)
    make_private_dir(state_dir)
    os.chmod(state_dir, DIR_MODE)  # the socket's folder: only this user reaches the socket
    lock_fd = take_lock(state_dir, lock_fd)
    stop = threading.Event()

    def on_signal(signum, frame) -> None:
        stop.set()

    service = None
    sock = path = None
    pid_file = state_dir / PID_NAME
    served = 0
    slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
    workers: list[threading.Thread] = []
    try:
        service = RecallService(settings, embedder, allow_shared_home)
        service.warm()
        # Handlers only now: a SIGTERM during the model load ends the process at once (the kernel
        # drops the lock; there is no socket yet), instead of after seconds of loading.
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, on_signal)
        sock, path = bind_socket(state_dir)
        pid_file.write_text(f"{os.getpid()}\n", encoding="utf-8")
        if on_ready:
            on_ready(path)
        last = time.monotonic()
        sock.settimeout(0.5)

        def work(conn: socket.socket) -> None:
            try:
                service.answer(conn)
            finally:
                slots.release()

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
            slots.acquire()
            worker = threading.Thread(target=work, args=(conn,), name="memoir-recall-conn", daemon=True)
            worker.start()
            workers = [w for w in workers if w.is_alive()] + [worker]
            served += 1
    finally:
        for w in workers:
            w.join(timeout=IO_TIMEOUT_S)
        if sock is not None:
            sock.close()
        for p in (path, pid_file):
            try:
                if p is not None:
                    p.unlink()
            except OSError:
                pass
        if service is not None:
            service.close()
        os.close(lock_fd)
    return served


if __name__ == "__main__":
    # Hooks installed before the hook client existed ran `python -m flows.recall_service claude-code`; they
    # keep working (reinstall with `memoir hook install claude-code` for the unshadowable command).
    sys.exit(hook_client.hook_main(sys.argv[1] if len(sys.argv) > 1 else "claude-code"))
