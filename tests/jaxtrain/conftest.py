"""JAX tests share one persistent XLA compilation cache: runs of the same shapes compile once."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(autouse=True, scope="session")
def _xla_cache(tmp_path_factory):
    try:
        import jax
    except ImportError:
        yield
        return
    jax.config.update("jax_compilation_cache_dir", str(tmp_path_factory.mktemp("xla-cache")))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    yield


@pytest.fixture(autouse=True)
def _fresh_warn_once():
    """warn_once remembers messages per process; each test starts from a clean slate."""
    from rocmkit import errors

    seen = getattr(errors, "_WARNED", None)
    if isinstance(seen, set):
        seen.clear()
    yield
