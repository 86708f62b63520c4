"""Fixtures of the trainloop tests (helpers live in loop_helpers.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return tmp_path / "run"


@pytest.fixture(autouse=True)
def _fresh_warn_once():
    """warn_once remembers messages per process; each test starts from a clean slate."""
    from rocmkit import errors

    saved = set(errors._warned)
    errors._warned.clear()
    yield
    errors._warned.clear()
    errors._warned.update(saved)
