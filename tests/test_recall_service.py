"""The recall service resolves each caller's settings from its environment, and sees config edits."""

from __future__ import annotations

import os

from memoir.cards.config import load_settings
from memoir.flows.recall_service import RecallService


def test_an_edited_config_file_changes_the_callers_settings(tmp_path):
    home, config = tmp_path / "home", tmp_path / "config.toml"
    config.write_text("max_injected = 1\n", encoding="utf-8")
    env = {"MEMOIR_HOME": str(home), "MEMOIR_CONFIG": str(config)}
    service = RecallService(load_settings(env=env), embedder=None)
    assert service.settings_for({"env": env}).max_injected == 1
    assert service.settings_for({"env": env}).max_injected == 1  # the second one comes from memory
    config.write_text("max_injected = 2\n# edited\n", encoding="utf-8")
    os.utime(config, ns=(1, 1))  # a different version even within one clock tick
    assert service.settings_for({"env": env}).max_injected == 2
    assert service.settings_for({"env": {**env, "MEMOIR_MAX_INJECTED": "1"}}).max_injected == 1


def test_a_bad_setting_value_is_named_but_never_echoed_to_the_hook(tmp_path):
    home = tmp_path / "home"
    env = {"MEMOIR_HOME": str(home), "MEMOIR_CONFIG": str(tmp_path / "none.toml")}
    service = RecallService(load_settings(env=env), embedder=None)
    answer = service.handle({"op": "recall", "query": "x", "env": {**env, "MEMOIR_MAX_INJECTED": "hunter2-pw"}})
    assert answer["ok"] is False and "max_injected" in answer["error"]
    assert "hunter2" not in answer["error"]
