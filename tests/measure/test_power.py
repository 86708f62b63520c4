"""Power sampling: fake readers (steady, hanging, erroring), energy maths, smi output parsers."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest

from rocmkit.measure.power import (
    PowerSampler,
    command_reader,
    detect_power_reader,
    energy_joules,
    energy_window,
    parse_amd_smi_power,
    parse_nvidia_smi_power,
    parse_rocm_smi_power,
    per_unit,
    platform_power_reader,
    units_per_joule,
)


def test_steady_reader_gives_energy_of_power_times_time():
    with PowerSampler(lambda: 200.0, interval_s=0.01) as sampler:
        start = sampler.now()
        time.sleep(0.3)
        end = sampler.now()
    energy = sampler.energy_j(start, end)
    assert energy == pytest.approx(200.0 * (end - start), rel=0.05)
    assert len(sampler.samples()) >= 5


def test_energy_integral_is_trapezoid_over_the_window():
    samples = [(0.0, 100.0), (1.0, 200.0), (2.0, 200.0)]
    assert energy_joules(samples, 0.0, 2.0) == pytest.approx(150.0 + 200.0)
    assert energy_joules(samples[:1], 0.0, 2.0) is None  # one sample is no integral


def test_hanging_reader_neither_hangs_the_caller_nor_invents_energy():
    release = threading.Event()
    sampler = PowerSampler(lambda: release.wait(30) and None, interval_s=0.01).start()
    began = time.monotonic()
    sampler.stop(timeout_s=0.2)
    assert time.monotonic() - began < 1.0
    assert sampler.energy_j(0.0, time.monotonic()) is None  # n/a, never 0
    release.set()


def test_erroring_reader_is_counted_and_gives_no_energy():
    def broken() -> float:
        raise OSError("sensor went away")

    with PowerSampler(broken, interval_s=0.01) as sampler:
        time.sleep(0.1)
    assert sampler.num_errors >= 2
    assert sampler.samples() == []
    assert sampler.energy_j(0.0, time.monotonic()) is None


def test_per_unit_figures_are_none_without_energy():
    assert per_unit(None, 100) is None and units_per_joule(None, 100) is None
    assert per_unit(50.0, 100) == 0.5 and units_per_joule(50.0, 100) == 2.0


def test_parsers_read_real_tool_outputs(shared_fixtures):
    amd = (
        shared_fixtures / "amd-smi" / "amd-smi_metric_-p_--json_rocm6.1_changelog.json"
    ).read_text()
    assert parse_amd_smi_power(amd, 0) == 10.0
    assert parse_amd_smi_power(amd, 1) is None
    rocm = (
        shared_fixtures / "rocm-smi" / "rocm-smi_-a_--json_mi250_rocm6_gfx9010.json"
    ).read_text()
    assert parse_rocm_smi_power(rocm, 0) == 91.0  # the average, not "Max Graphics Package Power"


def test_nvidia_smi_power_lines_and_missing_sensor():
    assert parse_nvidia_smi_power("312.45\n98.10\n", 1) == pytest.approx(98.10)
    assert parse_nvidia_smi_power("[N/A]\n", 0) is None
    assert parse_rocm_smi_power("not json", 0) is None and parse_amd_smi_power("", 0) is None


def test_command_reader_survives_timeouts_and_failures():
    def timing_out(*args, **kwargs):
        raise subprocess.TimeoutExpired(args[0], kwargs["timeout"])

    assert command_reader(["amd-smi"], float, runner=timing_out)() is None
    failed = subprocess.CompletedProcess(["x"], 1, stdout="12", stderr="no device")
    assert command_reader(["x"], float, runner=lambda *a, **k: failed)() is None
    ok = subprocess.CompletedProcess(["x"], 0, stdout="12", stderr="")
    assert command_reader(["x"], float, runner=lambda *a, **k: ok)() == 12.0


def test_no_reader_without_tools():
    reader, why = detect_power_reader("amd", which=lambda name: None)
    assert reader is None and "amd-smi" in why
    reader, why = detect_power_reader("nvidia", which=lambda name: "/usr/bin/" + name)
    assert reader is not None and why in ("pynvml", "nvidia-smi")


def test_energy_window_measures_one_block_and_says_na_without_a_sampler():
    with PowerSampler(lambda: 50.0, interval_s=0.005) as sampler, energy_window(sampler) as window:
        time.sleep(0.1)
    assert window.avg_watts == pytest.approx(50.0, rel=0.01)
    assert window.energy_j == pytest.approx(50.0 * window.duration_s, rel=0.01)
    with energy_window(None) as bare:
        time.sleep(0.01)
    assert bare.duration_s > 0 and bare.energy_j is None and bare.avg_watts is None


def test_why_no_energy_names_the_cause():
    with PowerSampler(lambda: 50.0, interval_s=10.0) as sparse, energy_window(sparse) as window:
        time.sleep(0.2)  # one sample at the start, none after: no integral
    assert window.energy_j is None and "fewer than 2 power samples" in sparse.why_no_energy(window)

    def broken() -> float:
        raise OSError("gone")

    with PowerSampler(broken, interval_s=0.005) as failing, energy_window(failing) as window:
        time.sleep(0.03)
    assert "failed" in failing.why_no_energy(window)


def test_platform_reader_is_none_on_cpu_or_when_turned_off():
    from rocmkit.platform import DeviceInfo, Platform

    cpu = Platform(backend="cpu", torch_version="2.9.0")
    assert platform_power_reader(cpu) == (None, "no GPU power sensor on a CPU-only run")
    gpu = Platform(
        backend="rocm",
        torch_version="2.9.0",
        devices=(DeviceInfo(index=0, name="AMD Instinct MI300X", vendor="amd"),),
        gpu_available=True,
    )
    assert platform_power_reader(gpu, enabled=False) == (None, "power sampling turned off")
