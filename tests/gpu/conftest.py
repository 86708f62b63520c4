"""Fixtures of the GPU tests: every test module here sets `pytestmark = pytest.mark.gpu`, so
the root conftest skips it cleanly without a GPU.

The tests drive rocmkit only through its public API and its command line, so that a rewrite of a
package's internals keeps them meaningful. Helpers live in gpu_helpers.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return tmp_path / "run"


def pytest_collection_modifyitems(config, items):
    """A test in this folder without the `gpu` marker would run (and fail) on CPU-only machines."""
    here = Path(__file__).resolve().parent
    unmarked = [
        item.nodeid
        for item in items
        if Path(str(item.fspath)).resolve().parent == here
        and item.get_closest_marker("gpu") is None
    ]
    if unmarked:
        raise pytest.UsageError(f"tests/gpu tests need pytestmark = pytest.mark.gpu: {unmarked}")
