"""GEMM throughput: square matmuls over sizes x dtypes -> TFLOPS (GFLOPS on CPU) and % of peak.

FLOPs of an (m x k) @ (k x n) product = 2*m*n*k (one multiply and one add per term).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rocmkit.bench.checks import Check, check_matmul_output, matmul_reference
from rocmkit.bench.sizing import Mode, timing_for
from rocmkit.bench.suites import Suite, register_suite
from rocmkit.config import to_dict
from rocmkit.errors import UserError
from rocmkit.measure.peaks import Peak, compute_peak
from rocmkit.measure.timing import TimingConfig, measure
from rocmkit.platform import Platform
from rocmkit.report import SuiteLayout
from rocmkit.results import Measurement

if TYPE_CHECKING:
    import torch

SUITE = "gemm"
DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8")


@dataclass(kw_only=True)
class GemmConfig:
    sizes: list[int] = field(default_factory=lambda: [512, 1024])
    dtypes: list[str] = field(default_factory=lambda: ["fp32", "bf16"])
    timing: TimingConfig = field(default_factory=TimingConfig)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.dtypes) - set(DTYPES))
        if unknown:
            raise UserError(
                f"gemm dtype {unknown[0]!r} is unknown; choose from {', '.join(DTYPES)}"
            )
        if any(s < 1 for s in self.sizes):
            raise UserError("gemm sizes must be positive integers")


def gemm_flops(m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k


def unsupported_reason(dtype: str, platform: Platform) -> str | None:
    """Why a dtype cannot run here, or None when it can (fp8 is tried and may still fail)."""
    if dtype in ("tf32", "fp8") and not platform.gpu_available:
        return f"{dtype} matmul needs a GPU"
    if dtype == "tf32" and platform.devices:
        arch = platform.devices[0].arch or ""
        if arch.startswith("sm_") and arch[3:].isdigit() and int(arch[3:]) < 80:
            return "TF32 needs compute capability 8.0 or newer"
        if arch.startswith("gfx") and arch not in ("gfx942", "gfx950"):
            return "XF32 exists only on CDNA3/CDNA4 (gfx942/gfx950)"
    return None


@contextlib.contextmanager
def _tf32(enabled: bool) -> Iterator[None]:
    """Allow TF32/XF32 matmuls for fp32 inputs only while timing the tf32 row."""
    import torch

    matmul = torch.backends.cuda.matmul
    if hasattr(matmul, "fp32_precision"):
        saved = matmul.fp32_precision
        matmul.fp32_precision = "tf32" if enabled else "ieee"
        try:
            yield
        finally:
            matmul.fp32_precision = saved
    else:  # torch < 2.9
        saved_flag = matmul.allow_tf32
        matmul.allow_tf32 = enabled
        try:
            yield
        finally:
            matmul.allow_tf32 = saved_flag


def make_matmul(dtype: str, size: int, device: torch.device | str) -> Callable[[], torch.Tensor]:
    """A closure running one size x size x size product in `dtype` on `device`."""
    return matmul_problem(dtype, size, device)[0]


def matmul_problem(
    dtype: str, size: int, device: torch.device | str
) -> tuple[Callable[[], torch.Tensor], Callable[[object], Check]]:
    """The timed product (returning its output) and the check of an output it returned."""
    import torch

    if dtype == "fp8":
        return _make_fp8(size, device)
    torch_dtype = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16}.get(
        dtype, torch.bfloat16
    )
    a = torch.randn(size, size, device=device, dtype=torch_dtype)
    b = torch.randn(size, size, device=device, dtype=torch_dtype)
    out = torch.empty(size, size, device=device, dtype=torch_dtype)
    return lambda: torch.matmul(a, b, out=out), _checker(a, b, dtype)


def _checker(a: torch.Tensor, b: torch.Tensor, dtype: str) -> Callable[[object], Check]:
    import torch

    reference = matmul_reference(a, b, dtype)  # before timing: the check itself stays O(n^2)

    def check(output: object) -> Check:
        assert isinstance(output, torch.Tensor)
        return check_matmul_output(reference, output)

    return check


def _make_fp8(
    size: int, device: torch.device | str
) -> tuple[Callable[[], torch.Tensor], Callable[[object], Check]]:
    import torch

    # MI300 (gfx942) uses the "fnuz" fp8 variant; CUDA and gfx950 use OCP e4m3fn.
    fnuz = bool(torch.version.hip) and "gfx942" in torch.cuda.get_device_properties(0).gcnArchName
    fp8 = torch.float8_e4m3fnuz if fnuz else torch.float8_e4m3fn
    a = torch.randn(size, size, device=device).to(fp8)
    b = torch.randn(size, size, device=device).to(fp8).t()  # _scaled_mm wants column-major B
    scale = torch.ones((), device=device)

    def run() -> torch.Tensor:
        return torch._scaled_mm(a, b, scale_a=scale, scale_b=scale, out_dtype=torch.bfloat16)

    return run, _checker(a, b, "fp8")


def run_gemm(config: GemmConfig, platform: Platform) -> list[Measurement]:
    """Time every size x dtype; unsupported pairs give value None with the reason in extra."""
    on_gpu = platform.gpu_available
    metric, unit, scale = ("tflops", "TFLOPS", 1e12) if on_gpu else ("gflops", "GFLOPS", 1e9)
    results: list[Measurement] = []
    for dtype in config.dtypes:
        peak = compute_peak(platform, dtype)
        for size in config.sizes:
            params = {"dtype": dtype, "m": size, "n": size, "k": size}
            name = f"{dtype} {size}x{size}x{size}"
            reason = unsupported_reason(dtype, platform)
            stats = None
            if reason is None:
                try:
                    with _tf32(dtype == "tf32"):
                        fn, check = matmul_problem(dtype, size, platform.torch_device)
                        stats = measure(fn, config.timing, platform.torch_device, check)
                except (RuntimeError, TypeError, AttributeError) as exc:
                    reason = f"{dtype} matmul failed here: {str(exc).splitlines()[0][:120]}"
            if stats is None:
                results.append(_skipped(name, metric, unit, params, reason or "not run"))
                continue
            rate = gemm_flops(size, size, size) / stats.median / scale
            rows = _gemm_rows(name, metric, unit, params, rate, stats.to_dict(), peak, on_gpu)
            for row in rows:  # % of peak derives from the same timing: same flags and check
                row.extra.update(stats.noise_extra())
                if isinstance(stats.checked, Check):
                    row.extra.update(stats.checked.extra())
            results.extend(rows)
    return results


def _gemm_rows(
    name: str,
    metric: str,
    unit: str,
    params: dict[str, Any],
    rate: float,
    stats: dict[str, float],
    peak: Peak | None,
    on_gpu: bool,
) -> list[Measurement]:
    extra: dict[str, Any] = {}
    pct = None
    if peak is not None:
        peak_in_unit = peak.value if on_gpu else peak.value * 1e3
        pct = 100.0 * rate / peak_in_unit
        extra = {"peak": peak_in_unit, "peak_unit": unit, "peak_source": peak.source}
        extra["peak_is_estimate"] = peak.is_estimate
    else:
        extra = {"peak_source": "n/a (device not in the hardware-facts table)"}
    return [
        Measurement(
            suite=SUITE,
            name=name,
            metric=metric,
            value=rate,
            unit=unit,
            params=params,
            stats=stats,
            extra=extra,
        ),
        Measurement(
            suite=SUITE,
            name=name,
            metric="pct_of_peak",
            value=pct,
            unit="%",
            params=params,
            extra=extra,
        ),
    ]


def _skipped(name: str, metric: str, unit: str, params: dict[str, Any], reason: str) -> Measurement:
    return Measurement(
        suite=SUITE,
        name=name,
        metric=metric,
        value=None,
        unit=unit,
        params=params,
        extra={"skipped": reason},
    )


def gemm_defaults(platform: Platform, mode: Mode) -> dict[str, Any]:
    quick = mode == "quick"
    if platform.gpu_available:
        sizes = [2048, 4096, 8192] if quick else [1024, 2048, 4096, 8192, 16384]
        dtypes = ["fp32", "tf32", "fp16", "bf16", "fp8"]
    else:
        sizes = [256, 512] if quick else [256, 512, 1024]
        dtypes = ["fp32", "bf16"] if quick else ["fp32", "fp16", "bf16"]
    return {"sizes": sizes, "dtypes": dtypes, "timing": to_dict(timing_for(platform, mode))}


def gemm_figures(config: GemmConfig, platform: Platform) -> int:
    return len(config.sizes) * len(config.dtypes)


BENCH_SUITE = register_suite(
    Suite(
        name=SUITE,
        description="matmul TFLOPS per size and dtype, % of peak",
        run=lambda config, platform, sampler: run_gemm(config, platform),
        config_type=GemmConfig,
        defaults=gemm_defaults,
        num_figures=gemm_figures,
        layout=SuiteLayout(
            title="GEMM throughput",
            first_metrics=("tflops", "gflops", "pct_of_peak"),
            plot="rocmkit.report.plots:gemm_plot",
        ),
        quick=True,
        full=True,
    )
)
