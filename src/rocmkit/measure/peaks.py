"""Peak figures to compare measurements with: the hardware-facts table on GPU, an estimate on CPU.

GPU peaks come from rocmkit.platform.specs (dense, with their published source); an unknown GPU
gives None ("n/a"). A CPU has no data sheet row here, so its peak is *estimated* from the ISA flags,
the clock and the number of threads torch uses, and every result says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocmkit.platform import Platform
from rocmkit.platform.specs import ArchSpec, lookup_spec


@dataclass(frozen=True, kw_only=True)
class Peak:
    """A peak figure and where it comes from ("spec: <source>" or "estimate: <how>")."""

    value: float
    source: str
    is_estimate: bool


def device_spec(platform: Platform) -> ArchSpec | None:
    """The hardware-facts row of the first GPU, or None (CPU run or unknown GPU)."""
    if not platform.gpu_available or not platform.devices:
        return None
    device = platform.devices[0]
    return lookup_spec(device.arch, device.name)


def cpu_flops_per_cycle(flags: tuple[str, ...], dtype: str) -> int | None:
    """FLOPs per cycle per core for dense matmul, assuming two FMA pipes (an upper bound).

    FMA = 2 FLOPs per lane; lanes = vector bits / element bits. AMX tiles do 1024 bf16/fp16
    FLOPs per cycle per core (Intel optimization manual); None when the ISA has no path.
    """
    wide = 512 if "avx512f" in flags else 256 if "avx2" in flags else 128
    fp32 = 2 * 2 * wide // 32
    if dtype == "fp32":
        return fp32
    if dtype == "bf16":
        if "amx_bf16" in flags:
            return 1024
        return 2 * fp32 if "avx512_bf16" in flags else None
    if dtype == "fp16":
        if "amx_fp16" in flags:
            return 1024
        return 2 * fp32 if "avx512_fp16" in flags else None
    return None


def cpu_clock_ghz() -> float | None:
    """The CPU's maximum (else current) clock in GHz, from psutil; None when unknown."""
    try:
        import psutil

        freq = psutil.cpu_freq()
    except Exception:  # psutil raises on some containers without cpufreq
        return None
    if freq is None:
        return None
    mhz = freq.max or freq.current
    return mhz / 1e3 if mhz else None


def estimate_cpu_peak_gflops(
    flags: tuple[str, ...], dtype: str, num_threads: int, ghz: float | None
) -> float | None:
    """threads x clock x FLOPs/cycle, in GFLOPS; None when any factor is unknown."""
    per_cycle = cpu_flops_per_cycle(flags, dtype)
    if per_cycle is None or ghz is None or num_threads < 1:
        return None
    return num_threads * ghz * per_cycle


def compute_peak(platform: Platform, dtype: str) -> Peak | None:
    """Peak TFLOPS of the device the run uses (GPU spec, or CPU estimate), or None."""
    spec = device_spec(platform)
    if spec is not None:
        value = spec.peak_for(dtype)
        return None if value is None else Peak(value=value, source=spec.source, is_estimate=False)
    if platform.gpu_available or platform.cpu is None:
        return None
    import torch

    threads = torch.get_num_threads()
    ghz = cpu_clock_ghz()
    gflops = estimate_cpu_peak_gflops(platform.cpu.flags, dtype, threads, ghz)
    if gflops is None:
        return None
    per_cycle = cpu_flops_per_cycle(platform.cpu.flags, dtype)
    how = (
        f"estimate: {threads} thread(s) x {ghz:.2f} GHz x {per_cycle} {dtype} FLOP/cycle"
        " (over 100% means the cores boost above this clock)"
    )
    return Peak(value=gflops / 1e3, source=how, is_estimate=True)


def memory_bandwidth_peak(platform: Platform) -> Peak | None:
    """Peak memory bandwidth in GB/s from the spec table; None on CPU or unknown GPU."""
    spec = device_spec(platform)
    if spec is None or spec.memory_bandwidth_gbps is None:
        return None
    return Peak(value=spec.memory_bandwidth_gbps, source=spec.source, is_estimate=False)
