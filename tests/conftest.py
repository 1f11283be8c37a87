"""Shared fixtures. Every test gets its own operator key directory, never ~/.config."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_key_dir(tmp_path_factory, monkeypatch):
    key_dir = tmp_path_factory.mktemp("keys")
    monkeypatch.setenv("RSI_MASTER_KEY_DIR", str(key_dir))
    return key_dir


@pytest.fixture
def key_dir(_isolated_key_dir):
    return _isolated_key_dir
