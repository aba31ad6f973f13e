import tomllib
from pathlib import Path

import pytest

from memoir.cards.config import ConfigError, load_settings


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


# --- the persisted list of Aider repositories --------------------------------------------------------

from memoir.cards.config import plan_config_edit, write_config_list  # noqa: E402

COMMENTED = """# my memoir settings
max_injected = 1  # fewer cards, please

aider_repos = [
    "/old/repo",  # gone now
    "/kept/repo",
]

min_score = 0.5
"""


def test_aider_repos_read_from_file_and_env_as_absolute_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    cfg = tmp_path / "memoir.toml"
    cfg.write_text('aider_repos = ["~/src/app", "rel/repo"]\n')
    s = load_settings(env={"MEMOIR_CONFIG": str(cfg)})
    assert s.aider_repos == (str(tmp_path / "src" / "app"), str(tmp_path / "rel" / "repo"))
    s = load_settings(env={"MEMOIR_CONFIG": str(cfg), "MEMOIR_AIDER_REPOS": "/a,/b"})
    assert s.aider_repos == ("/a", "/b")


def test_config_edit_replaces_only_the_key_and_keeps_comments_and_other_keys():
    out = plan_config_edit(COMMENTED, "aider_repos", ["/kept/repo", "/new/repo"])
    assert out.splitlines()[:3] == ["# my memoir settings", "max_injected = 1  # fewer cards, please", ""]
    assert "min_score = 0.5" in out and "/old/repo" not in out
    assert tomllib.loads(out) == {"max_injected": 1, "min_score": 0.5, "aider_repos": ["/kept/repo", "/new/repo"]}


def test_config_edit_adds_a_new_key_before_the_first_table_and_escapes_paths():
    text = "max_injected = 1\n\n[tool]\nx = 1\n"
    out = plan_config_edit(text, "aider_repos", ['C:\\src\\"odd"'])
    assert tomllib.loads(out)["aider_repos"] == ['C:\\src\\"odd"']
    assert tomllib.loads(out)["tool"] == {"x": 1}
    assert out.index("aider_repos") < out.index("[tool]")


def test_a_broken_config_file_is_never_overwritten(tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text("max_injected = = 1\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        write_config_list(cfg, "aider_repos", ["/x"])
    assert cfg.read_text() == "max_injected = = 1\n"


def test_write_config_list_replaces_atomically_through_a_symlink_and_keeps_the_mode(tmp_path):
    real = tmp_path / "dotfiles" / "memoir.toml"
    real.parent.mkdir()
    real.write_text(COMMENTED)
    real.chmod(0o600)
    link = tmp_path / "config.toml"
    link.symlink_to(real)
    write_config_list(link, "aider_repos", [])
    assert link.is_symlink() and (real.stat().st_mode & 0o777) == 0o600
    assert load_settings(env={"MEMOIR_CONFIG": str(link)}).aider_repos == ()
    assert "# my memoir settings" in real.read_text()
    assert [p.name for p in real.parent.iterdir()] == ["memoir.toml"]  # no temp file left


def test_write_config_list_creates_a_missing_file(tmp_path):
    cfg = tmp_path / "new" / "config.toml"
    write_config_list(cfg, "aider_repos", ["/r"])
    assert load_settings(env={"MEMOIR_CONFIG": str(cfg)}).aider_repos == ("/r",)
