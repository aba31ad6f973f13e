"""One settings object, resolved once at the entrypoint: defaults, then TOML file, then `MEMOIR_*` env.

Lower layers receive a `Settings` (or plain values from it) and never read `os.environ` themselves.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path


class ConfigError(Exception):
    """The configuration file or an environment override cannot be used."""


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
    step_timeout_s: int = 1800
    run_lock_timeout_s: int = 0
    nightly_cron: str = "30 3 * * *"
    # Model stage: off unless an endpoint is configured.
    model_base_url: str = ""
    model_name: str = ""
    model_api_key_env: str = "MEMOIR_MODEL_API_KEY"
    model_fallback_urls: tuple[str, ...] = ()
    model_timeout_s: float = 60.0
    # Alarms.
    append_only_runs: int = 5

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
        if kind in (float, "float"):
            return float(raw)  # type: ignore[arg-type]
        if kind in ("tuple[str, ...]",):
            if isinstance(raw, (list, tuple)):
                return tuple(str(x) for x in raw)
            return tuple(s.strip() for s in str(raw).split(",") if s.strip())
        return str(raw)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"setting {name!r} has a bad value {raw!r}: {exc}") from exc


def load_settings(home: str | Path | None = None, env: dict[str, str] | None = None) -> Settings:
    """Defaults < TOML file < `MEMOIR_<NAME>` environment < explicit `home` argument."""
    env = dict(os.environ if env is None else env)
    values: dict[str, object] = {}
    types = {f.name: f.type for f in fields(Settings)}
    path = default_config_file(env)
    if path.exists():
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
    settings = replace(Settings(), **values)
    return replace(settings, home=Path(settings.home).expanduser().absolute())
