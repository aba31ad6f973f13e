"""Shared fixtures: every test gets its own memoir home and offline, quiet third-party libraries."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(autouse=True)
def memoir_home(tmp_path, monkeypatch):
    """Point MEMOIR_HOME (and XDG config) at a temp dir so no test touches the real home."""
    home = tmp_path / "memoir-home"
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.delenv("MEMOIR_CONFIG", raising=False)
    return home
