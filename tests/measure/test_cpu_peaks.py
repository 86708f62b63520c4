"""CPU peaks are upper bounds: the max clock (cpufreq, else the CPU generation's highest boost),
the physical cores torch uses and the FLOP/cycle of the ISA, each with its source."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmkit.measure.peaks import cpu_peak
from rocmkit.platform.cpu import detect_cpu, max_clock, parse_cpuinfo
from rocmkit.report.tables import run_table
from rocmkit.results import Measurement, RunResult

# /proc/cpuinfo of the 2-core KVM this was measured on: "cpu MHz" is the base clock, no cpufreq.
EPYC_VM = """processor\t: {n}
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC
cpu MHz\t\t: 2445.432
physical id\t: 0
core id\t\t: {n}
flags\t\t: fpu sse sse2 fma avx avx2 {extra}
"""


def _cpuinfo(extra: str = "", cores: int = 2) -> str:
    return "\n".join(EPYC_VM.format(n=n, extra=extra) for n in range(cores))


def test_vm_base_clock_is_not_the_peak_clock_the_generation_boost_is() -> None:
    # One fp32 GEMM thread ran at 94 GFLOPS here: 121% of 1 x 2.45 GHz x 32 FLOP/cycle.
    info = parse_cpuinfo(_cpuinfo())
    assert (info.vendor, info.family, info.model_number) == ("AuthenticAMD", 25, 1)
    assert info.nominal_mhz == pytest.approx(2445.432)
    peak = cpu_peak(info, "fp32", num_threads=2)
    assert peak is not None
    assert peak.value * 1e3 == pytest.approx(2 * 4.5 * 32)
    assert peak.value * 1e3 > 94.4 * 2  # the measured single-thread rate, on both cores
    assert "2 core(s) x 4.50 GHz" in peak.source and "Zen 3" in peak.source
    assert "32 fp32 FLOP/cycle (avx2, 2 FMA pipes)" in peak.source


def test_cpufreq_max_clock_wins_over_the_table(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cpuinfo").write_text(_cpuinfo())
    freq = tmp_path / "sys/devices/system/cpu/cpu0/cpufreq"
    freq.mkdir(parents=True)
    (freq / "cpuinfo_max_freq").write_text("3500000\n")
    clock = max_clock(detect_cpu(tmp_path))
    assert clock is not None and clock.ghz == 3.5 and "cpufreq" in clock.source


def test_threads_beyond_physical_cores_add_no_flops() -> None:
    info = parse_cpuinfo(_cpuinfo(extra="avx512f avx512_bf16", cores=2))
    peak = cpu_peak(info, "bf16", num_threads=8)  # SMT threads share the FMA pipes
    assert peak is not None and peak.value * 1e3 == pytest.approx(2 * 4.5 * 128)
    assert "avx512_bf16 dot products" in peak.source


def test_unknown_generation_falls_back_to_nominal_and_says_it_is_no_bound() -> None:
    info = parse_cpuinfo(_cpuinfo().replace("family\t: 25", "family\t: 99"))
    peak = cpu_peak(info, "fp32", num_threads=1)
    assert peak is not None and peak.value * 1e3 == pytest.approx(2.445432 * 32)
    assert "nominal clock" in peak.source and "not an upper bound" in peak.source


def test_a_figure_above_its_peak_is_flagged_in_the_report() -> None:
    rows = [
        Measurement(suite="gemm", name="bf16 512", metric="pct_of_peak", value=146.0, unit="%"),
        Measurement(suite="gemm", name="fp32 512", metric="pct_of_peak", value=40.0, unit="%"),
    ]
    run = RunResult(kind="bench", environment={}, config={}, measurements=rows)
    notes = run_table(run, "gemm").notes
    assert any("above the stated peak" in n and "bf16 512" in n and "fp32" not in n for n in notes)
