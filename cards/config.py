"""One settings object, resolved once at the entrypoint: defaults, then TOML file, then `MEMOIR_*` env.

Lower layers receive a `Settings` (or plain values from it) and never read `os.environ` themselves.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from memoir.cards.errors import CardsError


AIDER_REPOS = "aider_repos"


class ConfigError(CardsError):
    """The configuration file or an environment override cannot be used.

    `loggable` is the message without the offending value: a person at the terminal sees the value,
    a log line (the hook's record of a call) never does, since it may be a secret typed in the wrong key.
    """

    def __init__(self, message: str, loggable: str | None = None):
        super().__init__(message)
        self.loggable = loggable or message


def _xdg(var: str, fallback: str) -> Path:
    return Path(os.environ.get(var) or Path.home() / fallback)


@dataclass(frozen=True)
class Settings:
    """Every knob memoir has. The defaults work with no config file at all."""

    home: Path = field(default_factory=lambda: _xdg("XDG_DATA_HOME", ".local/share") / "memoir")
    config_file: Path | None = None
    # Recall (the synchronous path).
    sync_timeout_ms: int = 300
    max_injected: int = 2
    min_score: float = 0.45
    # Cards.
    min_conclusion_chars: int = 40
    pause_minutes: int = 30
    blob_cap: int = 4000
    # Batch work.
    batch_size: int = 64
    rebuild_concurrency: int = 2
    # Processes that read, sanitize, segment and draft a run's logs; 0: one per core (at most 4)
    # once a run has 32 MB or more to read, else the run's own process. Cards are the same either way.
    read_workers: int = 0
    step_timeout_s: int = 1800
    run_lock_timeout_s: int = 0
    follow_symlinks: bool = False  # read log links that resolve outside the folders named
    # Use a home another user owns or may write to (refused otherwise: they could replace a card).
    allow_shared_home: bool = False
    # A host-log line longer than this is skipped unread (`bad_line_too_large`): decoding one
    # 200 MB line would take gigabytes. Pasted images stay well under it.
    max_line_bytes: int = 16 * 1024 * 1024
    # Build the deep-search turn index (its turns and windows embedded) at the end of each run, so
    # the first `memoir search` finds it ready; off, the first search builds it, a batch at a time.
    turn_index_in_run: bool = True
    # A run over more than 2,000 turns (a backlog) gives its indexing (the model's load, the card
    # vectors, reading the logs again and embedding their turns) this many times the rest of the run,
    # no more: with 1.0 indexing at most doubles a first night. What the turn index has not done by then
    # waits, counted, for the next run, a search or `memoir index turns`; the card index is always
    # done, and a smaller run embeds all it read. 0: no limit (every turn embedded in the run).
    turn_index_share: float = 1.0
    # A session's start also reads the previous session's log (the newest other log beside the new
    # transcript) in a detached `memoir run` of that one file, under the run lock, while the brief is
    # printed; the timeout ends it (the next run reads what it left). Off: only the nightly run reads it.
    session_start_backlog: bool = True
    session_start_backlog_timeout_s: int = 600
    nightly_cron: str = "30 3 * * *"
    nightly_timezone: str = ""  # IANA name for the cron; empty: this machine's local zone
    # Aider keeps one history per repository, so its logs are read only from folders registered
    # here (`memoir logs add`): a repo folder or a `.aider.chat.history.md` file, absolute.
    aider_repos: tuple[str, ...] = ()
    # Model stage: off unless an endpoint is configured.
    model_base_url: str = ""
    model_name: str = ""
    model_api_key_env: str = "MEMOIR_MODEL_API_KEY"
    model_fallback_urls: tuple[str, ...] = ()
    model_timeout_s: float = 60.0
    # Alarms.
    append_only_runs: int = 5
    # Run through `sh -c` once per new incident, the incident as JSON on stdin (runbooks/alerts.md).
    alert_command: str = ""
    alert_timeout_s: float = 30.0
    # Retention of memoir's own logs (runs.jsonl, model-runs.jsonl, alarms.jsonl, rotated hook and
    # recall logs): the newest keep_runs records, none older than keep_days; 0 lifts that limit.
    keep_runs: int = 1000
    keep_days: int = 365

    @property
    def cards_dir(self) -> Path:
        return self.home / "cards"

    @property
    def state_dir(self) -> Path:
        return self.home / "state"

    @property
    def index_dir(self) -> Path:
        return self.home / "index"

    @property
    def queue_dir(self) -> Path:
        return self.home / "queue"

    @property
    def model_enabled(self) -> bool:
        return bool(self.model_base_url)


def default_config_file(env: dict[str, str]) -> Path:
    if env.get("MEMOIR_CONFIG"):
        return Path(env["MEMOIR_CONFIG"])
    base = Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "memoir" / "config.toml"


def _coerce(name: str, kind: type, raw: object) -> object:
    try:
        if kind is Path or kind == "Path" or kind == "Path | None":
            return Path(str(raw)).expanduser()
        if kind in (int, "int"):
            return int(raw)  # type: ignore[arg-type]
        if kind in (bool, "bool"):
            return _boolean(raw)
        if kind in (float, "float"):
            return float(raw)  # type: ignore[arg-type]
        if kind in ("tuple[str, ...]",):
            if isinstance(raw, (list, tuple)):
                return tuple(str(x) for x in raw)
            return tuple(s.strip() for s in str(raw).split(",") if s.strip())
        return str(raw)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"setting {name!r} has a bad value {raw!r}: {exc}",
                          f"setting {name!r} has a bad value ({getattr(kind, '__name__', kind)} expected)") from exc


def _boolean(raw: object) -> bool:
    if isinstance(raw, bool):
        return raw
    word = str(raw).strip().lower()
    if word in ("1", "true", "yes", "on"):
        return True
    if word in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("expected true or false")


def load_settings(home: str | Path | None = None, env: dict[str, str] | None = None) -> Settings:
    """Defaults < TOML file < `MEMOIR_<NAME>` environment < explicit `home` argument."""
    env = dict(os.environ if env is None else env)
    values: dict[str, object] = {}
    types = {f.name: f.type for f in fields(Settings)}
    path = default_config_file(env)
    try:
        present = path.exists()
    except OSError as exc:  # a folder on its way the user may not enter
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}; fix its folder's "
                          "permissions, or point MEMOIR_CONFIG elsewhere") from exc
    if present:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read config file {path}: {exc}; fix or remove it") from exc
        for key, raw in data.items():
            if key not in types or key == "config_file":
                raise ConfigError(f"unknown setting {key!r} in {path}; known: {', '.join(sorted(types))}")
            values[key] = _coerce(key, types[key], raw)
        values["config_file"] = path
    for name, kind in types.items():
        raw = env.get(f"MEMOIR_{name.upper()}")
        if raw is not None and name != "config_file":
            values[name] = _coerce(name, kind, raw)
    if home is not None:
        values["home"] = Path(home).expanduser()
    if AIDER_REPOS in values:
        values[AIDER_REPOS] = tuple(str(Path(p).expanduser().absolute()) for p in values[AIDER_REPOS])  # type: ignore[attr-defined]
    settings = replace(Settings(), **values)
    return replace(settings, home=Path(settings.home).expanduser().absolute())


def config_path(settings: Settings, env: dict[str, str]) -> Path:
    """The file `memoir` writes settings to: the one it read, else where it would look first."""
    return settings.config_file or default_config_file(env)


def _toml_string(text: str) -> str:
    # JSON's escapes (\\ \" \n \uXXXX) are all valid in a TOML basic string.
    return json.dumps(text, ensure_ascii=False)


def render_list(key: str, values: list[str]) -> list[str]:
    """`key = [...]` as TOML lines, one value a line so a diff shows which one changed."""
    if not values:
        return [f"{key} = []"]
    return [f"{key} = ["] + [f"    {_toml_string(v)}," for v in values] + ["]"]


def _assignment_span(lines: list[str], key: str, data: dict) -> tuple[int, int] | None:
    """Lines [start, end) holding the top-level `key = ...`, found by what parses without it."""
    pattern = re.compile(rf"^\s*(?:{re.escape(key)}|\"{re.escape(key)}\")\s*=")
    rest = {k: v for k, v in data.items() if k != key}
    for start, line in enumerate(lines):
        if line.lstrip().startswith("["):
            return None  # past the top-level keys
        if not pattern.match(line):
            continue
        for end in range(start + 1, len(lines) + 1):
            try:
                if tomllib.loads("\n".join(lines[:start] + lines[end:])) == rest:
                    return start, end
            except tomllib.TOMLDecodeError:
                continue
    return None


def plan_config_edit(text: str, key: str, values: list[str]) -> str:
    """The config text with top-level `key` set to `values`; every other line kept as it was.

    Raises ConfigError when the text is not valid TOML (a broken file is the user's to fix,
    never overwritten) or the edit would not read back as intended.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"the config file is not valid TOML ({exc}); fix it first, memoir left it as it is") from exc
    lines = text.splitlines()
    new = render_list(key, values)
    span = _assignment_span(lines, key, data) if key in data else None
    if key in data and span is None:
        raise ConfigError(f"cannot find where {key!r} is set in the config file; edit it by hand")
    if span:
        lines[span[0]:span[1]] = new
    else:
        # New top-level keys go before the first table, where TOML still reads them as top-level.
        at = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("[")), len(lines))
        while at > 0 and not lines[at - 1].strip() and at < len(lines):
            at -= 1
        lines[at:at] = new
    out = "\n".join(lines) + "\n"
    if tomllib.loads(out) != {**data, key: list(values)}:
        raise ConfigError(f"editing {key!r} would change other settings; edit the config file by hand")
    return out


def read_config_list(path: Path, key: str) -> list[str]:
    """`key`'s list as the file itself holds it (no environment override), [] when unset or no file."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}; fix or remove it") from exc
    return list(_coerce(key, "tuple[str, ...]", data.get(key, ())))  # type: ignore[call-overload]


def write_config_list(path: Path, key: str, values: list[str]) -> None:
    """Set `key` in the TOML file at `path` (created if missing), replaced atomically.

    A symlinked config (dotfiles) is written through to its target, and the file keeps its mode.
    """
    from memoir.cards.store import write_atomic  # deferred: start-up (the hook client loads this module)

    target = Path(os.path.realpath(path))
    try:
        text = target.read_text(encoding="utf-8")
        mode = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        text, mode = "", 0o644
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc
    out = plan_config_edit(text, key, values)
    try:
        write_atomic(target, out)
        os.chmod(target, mode)
    except OSError as exc:
        raise ConfigError(f"cannot write config file {path}: {exc}; nothing was changed") from exc


# --- the process environment ------------------------------------------------------------------------
# Read and written here only. Libraries that read their own variables when they load (Prefect,
# Hugging Face) get them set first; a child process gets this environment with its overrides.


def environment(*names: str) -> dict[str, str]:
    """This process's environment: the variables among `names` that it sets, or all of it without names."""
    if not names:
        return dict(os.environ)
    return {name: os.environ[name] for name in names if name in os.environ}


@contextmanager
def process_environment_set(name: str, value: str) -> Iterator[None]:
    """`name` set to `value` in this process's environment for the block, then as it was: for a library
    that reads a variable once, at import (onnxruntime's cache folder)."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def apply_process_environment(values: dict[str, str]) -> dict[str, str]:
    """Set each of `values` this process's environment does not set yet (an operator's own value wins).

    Returns what the environment now holds for those names.
    """
    for name, value in values.items():
        os.environ.setdefault(name, value)
    return {name: os.environ[name] for name in values}
