"""GPU paths (events, cache flush, tf32/fp8, host<->device copies); skipped without a GPU."""

from __future__ import annotations

import pytest

from rocmkit.bench.bandwidth import BandwidthConfig, run_bandwidth
from rocmkit.bench.gemm import GemmConfig, run_gemm
from rocmkit.measure.timing import Flusher, TimingConfig, measure

pytestmark = pytest.mark.gpu
FAST = TimingConfig(warmup=1, min_samples=3, max_samples=10, budget_s=0.05)


def test_event_timing_with_cache_flush():
    import torch

    a = torch.randn(1024, 1024, device="cuda")
    stats = measure(
        lambda: a @ a,
        TimingConfig(warmup=1, min_samples=4, max_samples=4, flush_cache=True),
        "cuda",
    )
    assert stats.num_samples == 4 and stats.median > 0
    props = torch.cuda.get_device_properties(0)
    assert Flusher("cuda").num_bytes >= 2 * props.L2_cache_size


def test_gemm_and_bandwidth_on_gpu():
    from rocmkit.platform import detect

    platform = detect()
    rows = run_gemm(
        GemmConfig(sizes=[1024], dtypes=["fp32", "tf32", "bf16", "fp8"], timing=FAST), platform
    )
    for m in (m for m in rows if m.metric == "tflops"):
        assert (
            m.value > 0 if m.value is not None else m.extra["skipped"]
        )  # measured, or says why not
    assert any(m.metric == "tflops" and m.value for m in rows)
    copies = run_bandwidth(BandwidthConfig(sizes_mib=[16], timing=FAST), platform)
    assert all(m.value and m.value > 0 for m in copies if m.metric == "gbps")
