"""Each hint rule fires on its evidence, names the number, and stays silent without it."""

from __future__ import annotations

import pytest

from rocmkit.profile.estimator import EstimateConfig, ModelShape, estimate
from rocmkit.profile.hints import HintInputs, hints
from rocmkit.profile.summary import TraceSummary

GIB = 2**30
GPT2 = ModelShape(n_layer=12, d_model=768, n_head=12, seq_len=1024, vocab_size=50304)


def _trace(*, kernels_per_step=None, busy_us=900.0, sdpa=None):
    return TraceSummary(
        timeline="device" if kernels_per_step is not None else "host",
        num_steps=3,
        step_time_us=1000.0,
        category_time_us={"gemm": busy_us, "idle": 1000.0 - busy_us},
        kernels_per_step=kernels_per_step,
        sdpa_backends=sdpa or {},
    )


def _rules(inputs):
    return {h.rule: h for h in hints(inputs)}


def test_no_evidence_no_hints():
    assert hints(HintInputs()) == []


@pytest.mark.parametrize(
    ("fires", "quiet", "rule", "number"),
    [
        (
            HintInputs(trace=_trace(sdpa={"math": 12})),
            HintInputs(trace=_trace(sdpa={"flash": 12})),
            "attention-math-fallback",
            "12",
        ),
        (
            HintInputs(trace=_trace(kernels_per_step=2000, busy_us=4000.0)),
            HintInputs(trace=_trace(kernels_per_step=200, busy_us=4000.0)),
            "many-tiny-kernels",
            "2000 kernels",
        ),
        (
            HintInputs(data_time_s=6.0, step_time_s=10.0),
            HintInputs(data_time_s=0.5, step_time_s=10.0),
            "data-loading",
            "60%",
        ),
        (
            HintInputs(precision="fp16", num_steps=20, num_skipped_steps=5),
            HintInputs(precision="bf16", num_steps=20, num_skipped_steps=5),
            "fp16-skipped-steps",
            "5 of 20",
        ),
        (
            HintInputs(peak_memory_bytes=int(75 * GIB), device_memory_bytes=80 * GIB),
            HintInputs(peak_memory_bytes=int(40 * GIB), device_memory_bytes=80 * GIB),
            "memory-near-limit",
            "94%",
        ),
        (
            HintInputs(mfu=0.08, micro_batch=2, tokens_per_sample=1024),
            HintInputs(mfu=0.45, micro_batch=2, tokens_per_sample=1024),
            "low-mfu-small-batch",
            "MFU 8%",
        ),
    ],
)
def test_rule_fires_with_evidence_and_is_silent_without(fires, quiet, rule, number):
    fired = _rules(fires)
    assert rule in fired
    assert number in fired[rule].evidence
    assert rule not in _rules(quiet)


def test_tiny_kernels_need_them_to_be_short_too():
    long_kernels = HintInputs(trace=_trace(kernels_per_step=2000, busy_us=2000 * 50.0))
    assert "many-tiny-kernels" not in _rules(long_kernels)


def test_low_mfu_with_no_memory_headroom_does_not_suggest_a_bigger_batch():
    full = HintInputs(
        mfu=0.08,
        micro_batch=2,
        tokens_per_sample=1024,
        peak_memory_bytes=70 * GIB,
        device_memory_bytes=80 * GIB,
    )
    assert "low-mfu-small-batch" not in _rules(full)


def test_memory_hint_names_the_lever_that_frees_most():
    near = {"peak_memory_bytes": 79 * GIB, "device_memory_bytes": 80 * GIB}
    states_heavy = estimate(EstimateConfig(shape=GPT2, micro_batch=1, sharding="ddp", world_size=8))
    big_acts = estimate(EstimateConfig(shape=GPT2, micro_batch=16))
    ddp = _rules(HintInputs(**near, estimate=states_heavy, parallel="ddp", world_size=8))
    assert "FSDP" in ddp["memory-near-limit"].change
    single = _rules(HintInputs(**near, estimate=big_acts, activation_checkpointing=False))
    assert "activation checkpointing" in single["memory-near-limit"].change
    ckpt = _rules(HintInputs(**near, estimate=big_acts, activation_checkpointing=True))
    assert "grad_accum" in ckpt["memory-near-limit"].change


def test_public_api_of_rocmkit_profile_is_pinned():
    import rocmkit.profile

    assert rocmkit.profile.__all__ == sorted(rocmkit.profile.__all__)
    assert {"estimate", "summarize_trace", "MemoryMonitor", "hints", "StepProfiler"} <= set(
        rocmkit.profile.__all__
    )
