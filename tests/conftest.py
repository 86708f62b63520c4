"""Test defaults: CPU, one thread, restored environment, no leaked process groups."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")
# Tables are laid out for a pipe (rocmkit.console.PIPE_WIDTH) whatever terminal started the suite;
# a test about widths sets COLUMNS itself. (A shell that exports COLUMNS=80 failed layout tests.)
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)
# On a GPU machine pytest-xdist's workers share one GPU and live for the whole session: JAX's
# default takes 75% of the GPU's memory in every process that starts it and keeps it, which left
# other workers' torch, torchrun and JAX runs out of memory (the 2026-11-27 H200 slow tier). JAX's
# own setting for sharing a GPU: allocate as needed. Inherited by subprocesses (torchrun, the CLI).
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

REPO_ROOT = Path(__file__).resolve().parent.parent
# Tests start `python -m rocmkit` and `python -c "import rocmkit"` as child processes: they must get
# this checkout's rocmkit, also where it is not installed (pytest's own `pythonpath = ["src"]`
# reaches only the test process). Without it both JAX CLI tests failed on the 2026-11-27 H200 run
# with "No module named rocmkit".
_SRC = str(REPO_ROOT / "src")
if os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] != _SRC:
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (_SRC, os.environ.get("PYTHONPATH", "")) if p
    )
SHARED_FIXTURES = REPO_ROOT.parent / "shared" / "fixtures"
LOCAL_FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def shared_fixtures() -> Path:
    """The real tool outputs in ../shared/fixtures; the test is skipped when they are absent,
    except under CI (CI=true), where a missing fixture folder is a failure: the parser tests
    must run there."""
    if not SHARED_FIXTURES.is_dir():
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"CI: the real tool outputs are missing ({SHARED_FIXTURES})")
        pytest.skip("../shared/fixtures is not present beside this checkout")
    return SHARED_FIXTURES


@pytest.fixture
def local_fixtures() -> Path:
    return LOCAL_FIXTURES


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """A 2-layer, hidden-32 Qwen3 with a 64-token vocabulary and random weights, saved as a local
    model directory (no hub access); the infer and GPU tests load it by path."""
    transformers = pytest.importorskip("transformers")
    import torch

    config = transformers.Qwen3Config(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=128,
    )  # fmt: skip
    torch.manual_seed(0)
    directory = tmp_path_factory.mktemp("tiny-qwen3")
    transformers.Qwen3ForCausalLM(config).save_pretrained(directory)
    return directory


@pytest.fixture(autouse=True)
def _hygiene():
    """Restore env vars and torch's default dtype; destroy any process group a test left."""
    saved_env = dict(os.environ)
    torch = _torch_or_none()
    saved_dtype = torch.get_default_dtype() if torch else None
    yield
    os.environ.clear()
    os.environ.update(saved_env)
    if torch is not None:
        torch.set_default_dtype(saved_dtype)
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()


def _torch_or_none():
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a hard dependency
        return None
    return torch


def pytest_collection_modifyitems(config, items):
    """Skip `gpu` tests cleanly when no GPU is usable."""
    from rocmkit.platform.backend import gpu_available

    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a ROCm or CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
