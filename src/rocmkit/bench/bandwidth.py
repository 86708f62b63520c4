"""Memory bandwidth: device copy and STREAM-style triad, host<->device (pageable and pinned).

Bytes moved (STREAM's convention, McCalpin): copy reads and writes each element once (2 x size);
triad a = b + s*c reads two arrays and writes one (3 x size). GB/s uses 1e9 bytes, like data sheets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rocmkit.bench.checks import Check, check_exact_output, exact_reference
from rocmkit.bench.sizing import Mode, timing_for
from rocmkit.bench.suites import Suite, register_suite
from rocmkit.config import to_dict
from rocmkit.errors import UserError
from rocmkit.measure.peaks import Peak, memory_bandwidth_peak
from rocmkit.measure.timing import TimingConfig, measure
from rocmkit.platform import Platform
from rocmkit.report import SuiteLayout
from rocmkit.results import Measurement

if TYPE_CHECKING:
    import torch

SUITE = "bandwidth"
OPS = ("copy", "triad", "h2d_pageable", "h2d_pinned", "d2h_pageable", "d2h_pinned")
BYTES_MOVED_PER_ELEMENT_BYTE = {"copy": 2, "triad": 3}


@dataclass(kw_only=True)
class BandwidthConfig:
    sizes_mib: list[int] = field(default_factory=lambda: [4, 16, 64])  # size of one array
    ops: list[str] = field(default_factory=lambda: list(OPS))
    timing: TimingConfig = field(default_factory=TimingConfig)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.ops) - set(OPS))
        if unknown:
            raise UserError(f"bandwidth op {unknown[0]!r} is unknown; choose from {', '.join(OPS)}")
        if any(s < 1 for s in self.sizes_mib):
            raise UserError("bandwidth sizes_mib must be positive integers")


def bytes_moved(op: str, array_bytes: int) -> int:
    """Bytes that cross the memory interface for one run of `op` on arrays of `array_bytes`."""
    return BYTES_MOVED_PER_ELEMENT_BYTE.get(op, 1) * array_bytes


def make_op(op: str, array_bytes: int, device: torch.device | str) -> Callable[[], torch.Tensor]:
    """A closure running `op` once on freshly allocated float32 arrays."""
    return op_problem(op, array_bytes, device)[0]


def _pattern(n: int, device: torch.device | str, offset: int) -> torch.Tensor:
    """Small integers (exact in float32, also after triad's b + 3c): a copy that moved the wrong
    bytes, or nothing, cannot look right."""
    import torch

    return ((torch.arange(n, device=device) + offset) % 251).to(torch.float32)


def op_problem(
    op: str, array_bytes: int, device: torch.device | str
) -> tuple[Callable[[], torch.Tensor], Callable[[object], Check]]:
    """The timed op (returning its destination) and the check of that destination: it must equal
    the expected pattern exactly."""
    import torch

    n = array_bytes // 4
    if op in ("copy", "triad"):
        a = torch.full((n,), -1.0, device=device)
        b, c = _pattern(n, device, 0), _pattern(n, device, 7)
        if op == "copy":
            return lambda: a.copy_(b), _expect(b, "destination == source")
        expected = b + 3.0 * c
        return lambda: torch.add(b, c, alpha=3.0, out=a), _expect(expected, "a == b + 3c")
    source = _pattern(n, "cpu" if op.startswith("h2d") else device, 0)
    if op.startswith("h2d"):
        host = source.pin_memory() if op.endswith("pinned") else source
        dev = torch.full((n,), -1.0, device=device)
        return lambda: dev.copy_(host), _expect(host, "device copy == host source")
    host = torch.full((n,), -1.0)
    if op.endswith("pinned"):
        host = host.pin_memory()
    return lambda: host.copy_(source), _expect(source, "host copy == device source")


def _expect(expected: torch.Tensor, what: str) -> Callable[[object], Check]:
    """The check of a timed destination: bit for bit against `expected`, summarised now."""
    import torch

    reference = exact_reference(expected, what)

    def check(output: object) -> Check:
        assert isinstance(output, torch.Tensor)
        return check_exact_output(reference, output)

    return check


def run_bandwidth(config: BandwidthConfig, platform: Platform) -> list[Measurement]:
    """GB/s (and % of the spec bandwidth for on-device ops) for every op x size."""
    peak = memory_bandwidth_peak(platform)
    results: list[Measurement] = []
    for op in config.ops:
        if op not in ("copy", "triad") and not platform.gpu_available:
            results.append(_skipped(op, {"op": op}, "host<->device copies need a GPU"))
            continue
        for size in config.sizes_mib:
            params = {"op": op, "size_mib": size}
            name = f"{op} {size} MiB"
            array_bytes = size * 2**20
            fn, check = op_problem(op, array_bytes, platform.torch_device)
            stats = measure(fn, config.timing, platform.torch_device, check)
            checked = stats.checked.extra() if isinstance(stats.checked, Check) else {}
            gbps = bytes_moved(op, array_bytes) / stats.median / 1e9
            results.append(
                Measurement(
                    suite=SUITE,
                    name=name,
                    metric="gbps",
                    value=gbps,
                    unit="GB/s",
                    params=params,
                    stats=stats.to_dict(),
                    extra={**stats.noise_extra(), **checked},
                )
            )
            if op in ("copy", "triad"):
                results.append(_pct_row(name, params, gbps, peak))
                results[-1].extra.update({**stats.noise_extra(), **checked})
    return results


def _pct_row(name: str, params: dict[str, Any], gbps: float, peak: Peak | None) -> Measurement:
    if peak is None:
        extra: dict[str, Any] = {"peak_source": "n/a (no memory-bandwidth figure for this device)"}
        return Measurement(
            suite=SUITE,
            name=name,
            metric="pct_of_peak",
            value=None,
            unit="%",
            params=params,
            extra=extra,
        )
    extra = {"peak": peak.value, "peak_unit": "GB/s", "peak_source": peak.source}
    return Measurement(
        suite=SUITE,
        name=name,
        metric="pct_of_peak",
        value=100.0 * gbps / peak.value,
        unit="%",
        params=params,
        extra=extra,
    )


def _skipped(name: str, params: dict[str, Any], reason: str) -> Measurement:
    return Measurement(
        suite=SUITE,
        name=name,
        metric="gbps",
        value=None,
        unit="GB/s",
        params=params,
        extra={"skipped": reason},
    )


def bandwidth_defaults(platform: Platform, mode: Mode) -> dict[str, Any]:
    quick = mode == "quick"
    if platform.gpu_available:
        memory = platform.devices[0].total_memory_bytes if platform.devices else None
        big_mib = 1024 if memory is None or memory >= 16 * 2**30 else 256
        sizes = [16, 256, big_mib] if quick else [1, 4, 16, 64, 256, big_mib]
    else:
        sizes = [4, 16] if quick else [1, 4, 16, 64]
    return {"sizes_mib": sizes, "timing": to_dict(timing_for(platform, mode))}


def bandwidth_figures(config: BandwidthConfig, platform: Platform) -> int:
    # Host<->device copies need a device: on the CPU only copy and triad run.
    ops = [o for o in config.ops if platform.gpu_available or o in ("copy", "triad")]
    return len(ops) * len(config.sizes_mib)


BENCH_SUITE = register_suite(
    Suite(
        name=SUITE,
        description="device copy/triad and host<->device GB/s",
        run=lambda config, platform, sampler: run_bandwidth(config, platform),
        config_type=BandwidthConfig,
        defaults=bandwidth_defaults,
        num_figures=bandwidth_figures,
        layout=SuiteLayout(
            title="Memory bandwidth",
            first_metrics=("gbps", "pct_of_peak"),
            plot="rocmkit.report.plots:bandwidth_plot",
        ),
        quick=True,
        full=True,
    )
)
