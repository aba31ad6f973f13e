from pathlib import Path

import pytest

from cards.config import ConfigError, load_settings


def test_defaults_work_with_no_file_and_follow_xdg(tmp_path):
    s = load_settings(env={"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg")})
    assert s.max_injected == 2 and s.sync_timeout_ms == 300
    assert s.config_file is None
    assert not s.model_enabled


def test_file_then_env_then_argument(tmp_path):
    cfg = tmp_path / "cfg" / "memoir"
    cfg.mkdir(parents=True)
    (cfg / "config.toml").write_text('max_injected = 1\nmin_score = 0.6\nhome = "/srv/memoir"\n')
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "MEMOIR_MIN_SCORE": "0.7"}
    s = load_settings(env=env)
    assert s.max_injected == 1 and s.min_score == 0.7 and s.home == Path("/srv/memoir")
    assert load_settings(home=tmp_path / "h", env=env).home == tmp_path / "h"


def test_unknown_key_is_a_clear_error(tmp_path):
    cfg = tmp_path / "memoir.toml"
    cfg.write_text("max_injectd = 3\n")
    with pytest.raises(ConfigError, match="unknown setting 'max_injectd'"):
        load_settings(env={"MEMOIR_CONFIG": str(cfg)})


def test_bad_env_value_is_a_clear_error():
    with pytest.raises(ConfigError, match="max_injected"):
        load_settings(env={"MEMOIR_MAX_INJECTED": "two"})
