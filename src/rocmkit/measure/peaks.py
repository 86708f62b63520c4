"""Peak figures to compare measurements with: the hardware-facts table on GPU, an estimate on CPU.

GPU peaks come from rocmkit.platform.specs (dense, with their published source); an unknown GPU
gives None ("n/a"). A CPU has no data sheet row here, so its peak is *estimated* from the ISA flags,
its maximum clock and the cores torch uses, and every result says so. The estimate is meant as an
upper bound: a VM's "cpu MHz" is its base clock, and a 2-core EPYC VM ran one fp32 GEMM thread at
121% of a peak built on it (94 GFLOPS vs 2.45 GHz x 32 FLOP/cycle), so the clock is the highest
boost known for the CPU (platform.cpu.max_clock).
"""

from __future__ import annotations

from dataclasses import dataclass

from rocmkit.platform import Platform
from rocmkit.platform.backend import CpuInfo
from rocmkit.platform.cpu import CpuClock, max_clock
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


def _isa_path(flags: tuple[str, ...], dtype: str) -> str:
    """The instructions `cpu_flops_per_cycle` counted, for the peak's source line."""
    if dtype in ("bf16", "fp16") and f"amx_{dtype}" in flags:
        return f"amx_{dtype} tiles"
    wide = "avx512f" if "avx512f" in flags else "avx2" if "avx2" in flags else "128-bit SIMD"
    dot = f" + avx512_{dtype} dot products" if dtype in ("bf16", "fp16") else ""
    return f"{wide}{dot}, 2 FMA pipes"


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
    """cores x clock x FLOPs/cycle, in GFLOPS; None when any factor is unknown."""
    per_cycle = cpu_flops_per_cycle(flags, dtype)
    if per_cycle is None or ghz is None or num_threads < 1:
        return None
    return num_threads * ghz * per_cycle


def cpu_peak(cpu: CpuInfo, dtype: str, num_threads: int) -> Peak | None:
    """The CPU's matmul peak for `num_threads` torch threads, an upper bound where a max clock is
    known: cores used x max clock x FLOP/cycle of the best instructions the flags allow.

    SMT siblings share one core's FMA pipes, so threads beyond the physical cores add nothing.
    """
    clock = max_clock(cpu)
    if clock is None:
        ghz = cpu_clock_ghz()
        clock = None if ghz is None else CpuClock(ghz, "clock from psutil", False)
    per_cycle = cpu_flops_per_cycle(cpu.flags, dtype)
    cores = min(num_threads, cpu.num_physical_cores or num_threads)
    if clock is None or per_cycle is None or cores < 1:
        return None
    how = (
        f"estimate: {cores} core(s) x {clock.ghz:.2f} GHz ({clock.source}) x {per_cycle} {dtype} "
        f"FLOP/cycle ({_isa_path(cpu.flags, dtype)})"
    )
    if not clock.is_upper_bound:
        how += "; not an upper bound: a figure above 100% means the clock is higher"
    return Peak(value=cores * clock.ghz * per_cycle / 1e3, source=how, is_estimate=True)


def compute_peak(platform: Platform, dtype: str) -> Peak | None:
    """Peak TFLOPS of the device the run uses (GPU spec, or CPU estimate), or None."""
    spec = device_spec(platform)
    if spec is not None:
        value = spec.peak_for(dtype)
        return None if value is None else Peak(value=value, source=spec.source, is_estimate=False)
    if platform.gpu_available or platform.cpu is None:
        return None
    import torch

    return cpu_peak(platform.cpu, dtype, torch.get_num_threads())


def memory_bandwidth_peak(platform: Platform) -> Peak | None:
    """Peak memory bandwidth in GB/s from the spec table; None on CPU or unknown GPU."""
    spec = device_spec(platform)
    if spec is None or spec.memory_bandwidth_gbps is None:
        return None
    return Peak(value=spec.memory_bandwidth_gbps, source=spec.source, is_estimate=False)
