"""JAX rows in `rocmkit bench`'s train-precision suite, beside PyTorch's, and in `rocmkit report`."""

from __future__ import annotations

import importlib.util

import pytest

pytest.importorskip("jax")
pytest.importorskip("flax")
pytest.importorskip("optax")
pytest.importorskip("orbax.checkpoint")

from rocmkit.bench.train_precision import TrainPrecisionConfig, run_train_precision
from rocmkit.jaxtrain.bench import XLA_MEMORY_SOURCE, jax_skip_reason
from rocmkit.platform import CpuInfo, Platform
from rocmkit.report import render
from rocmkit.results import RunResult

CPU = Platform(
    backend="cpu",
    torch_version="x",
    cpu=CpuInfo(model="test cpu", num_physical_cores=2, num_logical_cores=2, flags=()),
)
TINY = {
    "gpt-tiny": {
        "model.n_layer": "1",
        "model.seq_len": "32",
        "model.vocab_size": "64",
        "train.micro_batch": "4",
    }
}


@pytest.mark.slow
def test_train_precision_suite_has_jax_rows_beside_torch_and_report_shows_both(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    # JAX for both presets (resnet18 only gives its note row), torch for the GPT alone.
    common = {"dtypes": ["fp32", "bf16"], "steps": 2, "overrides": TINY}
    jax_config = TrainPrecisionConfig(models=["gpt-tiny", "resnet18"], backends=["jax"], **common)
    torch_config = TrainPrecisionConfig(models=["gpt-tiny"], backends=["torch"], **common)
    rows = run_train_precision(jax_config, CPU) + run_train_precision(torch_config, CPU)
    by = {(m.name, m.metric): m for m in rows}
    skipped = {m.name: m.extra["skipped"] for m in rows if "skipped" in m.extra}
    assert by[("gpt-tiny bf16 jax", "throughput")].value > 0
    assert by[("gpt-tiny bf16 jax", "throughput")].params["backend"] == "jax"
    assert ("gpt-tiny fp32 jax", "speedup_vs_fp32") in by, skipped  # why a run gave no figures
    assert by[("gpt-tiny fp32 jax", "speedup_vs_fp32")].value == pytest.approx(1.0)
    memory = by[("gpt-tiny bf16 jax", "peak_memory")]
    assert memory.extra["source"] == XLA_MEMORY_SOURCE and memory.value > 0
    assert by[("gpt-tiny bf16", "throughput")].value > 0  # torch, same suite
    assert "GPT presets only" in by[("resnet18 jax", "throughput")].extra["skipped"]
    page = render([RunResult(kind="bench", environment={}, config={}, measurements=rows)], "md")
    assert "gpt-tiny bf16 jax" in page and "gpt-tiny bf16 |" in page


def test_without_jax_the_suite_says_how_to_install_it(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "optax" else real(name, *a)
    )
    assert jax_skip_reason("gpt-tiny") == "optax is not installed: pip install 'rocmkit[jax]'"
