"""Scaled dot-product attention, forward and forward+backward, per SDPA backend and dtype.

FLOPs (FlashAttention paper's convention): forward = 4 * B * H * S^2 * D (two matmuls), halved for a
causal mask; backward = 2.5 x forward (five matmuls instead of two), so fwd+bwd = 3.5 x forward.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rocmkit.bench.checks import Check, attention_reference, check_attention_output
from rocmkit.bench.sizing import Mode, timing_for
from rocmkit.bench.suites import Suite, register_suite
from rocmkit.config import to_dict
from rocmkit.errors import UserError
from rocmkit.measure.timing import TimingConfig, measure
from rocmkit.platform import Platform
from rocmkit.report import SuiteLayout
from rocmkit.results import Measurement

SUITE = "attention"
BACKENDS = ("flash", "efficient", "math")
DTYPES = ("fp32", "fp16", "bf16")


@dataclass(kw_only=True)
class AttentionConfig:
    batch: int = 2
    num_heads: int = 4
    seq_len: int = 256
    head_dim: int = 64
    causal: bool = True
    backends: list[str] = field(default_factory=lambda: list(BACKENDS))
    dtypes: list[str] = field(default_factory=lambda: ["fp32", "bf16"])
    timing: TimingConfig = field(default_factory=TimingConfig)

    def __post_init__(self) -> None:
        for value, known, what in (
            (self.backends, BACKENDS, "backend"),
            (self.dtypes, DTYPES, "dtype"),
        ):
            unknown = sorted(set(value) - set(known))
            if unknown:
                raise UserError(
                    f"attention {what} {unknown[0]!r} is unknown; choose from {', '.join(known)}"
                )


def attention_flops(config: AttentionConfig, *, backward: bool) -> float:
    forward = 4.0 * config.batch * config.num_heads * config.seq_len**2 * config.head_dim
    if config.causal:
        forward /= 2
    return forward * (3.5 if backward else 1.0)


def _make(
    config: AttentionConfig, backend: str, dtype: str, backward: bool, device: Any
) -> Callable[[], Any]:
    return attention_problem(config, backend, dtype, backward, device)[0]


def attention_problem(
    config: AttentionConfig, backend: str, dtype: str, backward: bool, device: Any
) -> tuple[Callable[[], Any], Callable[[object], Check]]:
    """The timed step (returning the forward output) and the check of that output against the
    math in float64. With backward, the forward output of the timed step is what is checked (the
    gradients add up over iterations)."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    sdp = {
        "flash": SDPBackend.FLASH_ATTENTION,
        "efficient": SDPBackend.EFFICIENT_ATTENTION,
        "math": SDPBackend.MATH,
    }[backend]
    torch_dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    shape = (config.batch, config.num_heads, config.seq_len, config.head_dim)
    q, k, v = (
        torch.randn(shape, device=device, dtype=torch_dtype, requires_grad=backward)
        for _ in range(3)
    )
    grad = torch.randn(shape, device=device, dtype=torch_dtype)

    def step() -> torch.Tensor:
        with sdpa_kernel(sdp):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=config.causal)
            if backward:
                out.backward(grad)
        return out

    step()  # raises here, not inside the timing loop, when the backend cannot take these inputs
    reference = attention_reference(q, k, v, dtype, config.causal)  # once, before timing

    def check(output: object) -> Check:
        assert isinstance(output, torch.Tensor)
        return check_attention_output(reference, output)

    return step, check


def run_attention(config: AttentionConfig, platform: Platform) -> list[Measurement]:
    """Time each backend x dtype x (fwd, fwd+bwd); unavailable combinations give None + reason."""
    results: list[Measurement] = []
    device = platform.torch_device
    # a CPU does GFLOPS, not TFLOPS: "0.004 TFLOPS" reads as nothing
    metric, unit, scale = (
        ("tflops", "TFLOPS", 1e12) if platform.gpu_available else ("gflops", "GFLOPS", 1e9)
    )
    for backend in config.backends:
        for dtype in config.dtypes:
            for backward in (False, True):
                direction = "fwd+bwd" if backward else "fwd"
                params = {
                    "backend": backend,
                    "dtype": dtype,
                    "direction": direction,
                    "batch": config.batch,
                    "heads": config.num_heads,
                    "seq_len": config.seq_len,
                    "head_dim": config.head_dim,
                    "causal": config.causal,
                }
                name = f"{backend} {dtype} {direction}"
                try:
                    fn, check = attention_problem(config, backend, dtype, backward, device)
                    stats = measure(fn, config.timing, device, check)
                except RuntimeError as exc:
                    reason = str(exc).splitlines()[0][:160]
                    results.append(
                        Measurement(
                            suite=SUITE,
                            name=name,
                            metric=metric,
                            value=None,
                            unit=unit,
                            params=params,
                            extra={"skipped": f"{backend} unavailable: {reason}"},
                        )
                    )
                    continue
                rate = attention_flops(config, backward=backward) / stats.median / scale
                checked = stats.checked.extra() if isinstance(stats.checked, Check) else {}
                results.append(
                    Measurement(
                        suite=SUITE,
                        name=name,
                        metric="time_ms",
                        value=stats.median * 1e3,
                        unit="ms",
                        params=params,
                        stats=stats.to_dict(),
                        extra={**stats.noise_extra(), **checked},
                    )
                )
                results.append(
                    Measurement(
                        suite=SUITE,
                        name=name,
                        metric=metric,
                        value=rate,
                        unit=unit,
                        params=params,
                        extra={**stats.noise_extra(), **checked},
                    )
                )
    return results


def attention_defaults(platform: Platform, mode: Mode) -> dict[str, Any]:
    if platform.gpu_available:
        shape = {"batch": 4, "num_heads": 16, "seq_len": 2048, "head_dim": 128}
        dtypes = ["fp16", "bf16"]
    else:
        shape = {"batch": 1, "num_heads": 4, "seq_len": 256, "head_dim": 64}
        dtypes = ["fp32", "bf16"]
    return {**shape, "dtypes": dtypes, "timing": to_dict(timing_for(platform, mode))}


def attention_figures(config: AttentionConfig, platform: Platform) -> int:
    return 2 * len(config.backends) * len(config.dtypes)  # forward and backward


BENCH_SUITE = register_suite(
    Suite(
        name=SUITE,
        description="SDPA fwd/bwd per backend and dtype",
        run=lambda config, platform, sampler: run_attention(config, platform),
        config_type=AttentionConfig,
        defaults=attention_defaults,
        num_figures=attention_figures,
        layout=SuiteLayout(title="Attention (SDPA)", first_metrics=("time_ms", "tflops", "gflops")),
        full=True,
    )
)
