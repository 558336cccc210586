"""Fixtures the unit tests share."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def settings_repo(tmp_path) -> Path:
    """A copy of the settings (params.yaml, the profiles, the inventories) in a directory of its
    own, for tests that edit them."""
    (tmp_path / "repo").mkdir()
    for name in ("params.yaml", "conf", "inventory"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / "repo" / name)
    return tmp_path / "repo"
