"""Telemetry: parsers against recorded real outputs (tests/fixtures/telemetry, ../shared/fixtures),
NVML reason bits, readers that fail softly, the bounded background sampler and its summaries."""

from __future__ import annotations

import importlib.util
import threading
import time
from pathlib import Path

import pytest

from rocmkit.measure.telemetry import (
    TelemetrySample,
    TelemetrySampler,
    active_sampler,
    sampling,
    summarize,
    telemetry_reader,
)
from rocmkit.measure.telemetry_parsers import (
    NVML_CLOCK_REASONS,
    DeviceReading,
    decode_nvml_reasons,
    parse_amd_smi_metric,
    parse_nvidia_smi_telemetry,
    parse_nvidia_smi_xml_telemetry,
    parse_rocm_smi_telemetry,
    slowdowns,
)
from rocmkit.platform.smi import CommandResult, SmiParseError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "telemetry"


def _read(name: str) -> str:
    return (FIXTURES / name).read_text()


# ---------------------------------------------------------------------------- parsers


def test_nvidia_csv_query_of_a_p100_gives_clocks_power_and_temperature():
    (gpu,) = parse_nvidia_smi_telemetry(_read("nvidia-smi_--query-gpu_csv_tesla-p100.csv"))
    assert gpu.sm_clock_mhz == 405
    assert gpu.memory_clock_mhz == 715
    assert gpu.power_w == pytest.approx(28.16)
    assert gpu.temperature_c == 37
    # this query did not ask for reasons or ECC: not reported, which is not "none active"
    assert gpu.clock_reasons is None and gpu.ecc_uncorrected is None


def test_nvidia_csv_with_our_own_query_decodes_the_reason_mask_and_ecc():
    header = "index, clocks.sm [MHz], clocks.mem [MHz], power.draw [W], temperature.gpu, "
    header += "temperature.memory, clocks_throttle_reasons.active, "
    header += "ecc.errors.corrected.volatile.total, ecc.errors.uncorrected.volatile.total"
    text = f"{header}\n0, 1755, 2619, 699.12, 71, 80, 0x0000000000000044, 3, 0\n"
    text += "1, 1980, 2619, 310.50, 50, [N/A], 0x0000000000000000, [N/A], [N/A]\n"
    hot, idle = parse_nvidia_smi_telemetry(text)
    assert hot.clock_reasons == ("sw_power_cap", "hw_thermal_slowdown")
    assert slowdowns(hot.clock_reasons) == ["hw_thermal_slowdown"]
    assert (hot.ecc_corrected, hot.ecc_uncorrected) == (3, 0)
    assert idle.clock_reasons == () and idle.memory_temperature_c is None
    assert idle.ecc_corrected is None


def test_nvidia_xml_of_an_a100_reads_reasons_block_and_ecc():
    (gpu,) = parse_nvidia_smi_xml_telemetry(_read("nvidia-smi_-q_-x_a100-sxm4-mig.xml"))
    assert gpu.sm_clock_mhz == 1410 and gpu.memory_clock_mhz == 1215
    assert gpu.temperature_c == 36 and gpu.memory_temperature_c == 44
    assert gpu.power_w == pytest.approx(66.92)
    assert gpu.clock_reasons == ()  # every reason "Not Active"
    assert gpu.ecc_corrected is None  # MIG mode: volatile counters are N/A


def test_nvidia_xml_of_a_driver_535_rtx4090_names_event_reasons(shared_fixtures: Path):
    text = (shared_fixtures / "nvidia-smi" / "nvidia-smi_-q_-x_rtx-4090-driver-535.xml").read_text()
    (gpu,) = parse_nvidia_smi_xml_telemetry(text)
    assert gpu.clock_reasons == ("gpu_idle",)  # the idle desktop card
    assert gpu.power_w is not None and gpu.sm_clock_mhz is not None


def test_amd_smi_metric_rocm7_radeon_record():
    (gpu,) = parse_amd_smi_metric(_read("amd-smi_metric_--json_rocm7_radeon-30gb.json"))
    assert gpu.sm_clock_mhz == 2774  # gfx_0; the other gfx_N are N/A on this part
    assert gpu.memory_clock_mhz == 1258
    assert gpu.power_w == 223
    assert gpu.temperature_c == 63  # hotspot, not edge (54)
    assert gpu.memory_temperature_c == 70
    assert gpu.clock_reasons == ("throttled",)  # the overall status; no per-cause violation
    assert slowdowns(gpu.clock_reasons) == []  # a cause-less status is not called thermal
    assert (gpu.ecc_corrected, gpu.ecc_uncorrected) == (0, 0)


def test_amd_smi_metric_power_only_rocm61():
    (gpu,) = parse_amd_smi_metric(_read("amd-smi_metric_-p_--json_rocm6.1_changelog.json"))
    assert gpu.power_w == 10
    assert gpu.clock_reasons == ()  # UNTHROTTLED
    assert gpu.sm_clock_mhz is None and gpu.ecc_corrected is None


def test_amd_smi_metric_per_xcd_clocks_and_violations_as_the_cli_writes_them():
    # shape from amdsmi_cli/amdsmi_commands.py metric_gpu: a clock per XCD, "ACTIVE"/"NOT ACTIVE"
    record = {
        "gpu": 3,
        "clock": {f"gfx_{i}": {"clk": {"value": 2000 + 10 * i, "unit": "MHz"}} for i in range(8)},
        "power": {"socket_power": "N/A", "throttle_status": "N/A"},
        "throttle": {"ppt_violation_status": "ACTIVE", "hbm_thermal_violation_status": "ACTIVE"}
        | {
            f"{n}_violation_status": "NOT ACTIVE"
            for n in ("prochot", "socket_thermal", "vr_thermal")
        },
        "ecc": {"total_correctable_count": 5, "total_uncorrectable_count": 1},
    }
    import json

    (gpu,) = parse_amd_smi_metric(json.dumps({"gpu_data": [record]}))
    assert gpu.index == 3
    assert gpu.sm_clock_mhz == pytest.approx(2035)
    assert gpu.power_w is None
    assert gpu.clock_reasons == ("ppt", "hbm_thermal")
    assert slowdowns(gpu.clock_reasons) == ["hbm_thermal"]
    assert gpu.ecc_uncorrected == 1


def test_rocm_smi_json_of_an_mi250():
    (gpu,) = parse_rocm_smi_telemetry(_read("rocm-smi_-a_--json_mi250_rocm6_gfx9010.json"))
    assert gpu.sm_clock_mhz == 800 and gpu.memory_clock_mhz == 1600
    assert gpu.power_w == 91
    assert gpu.temperature_c == 44  # junction
    assert gpu.memory_temperature_c == 53
    assert gpu.clock_reasons is None  # rocm-smi does not say


def test_rocm_smi_json_of_an_mi250_from_rocm5(shared_fixtures: Path):
    path = shared_fixtures / "rocm-smi" / "rocm-smi_-a_--json_mi250_rocm5_driver6.2.4.json"
    first, second = parse_rocm_smi_telemetry(path.read_text())  # the MI250's two dies
    assert (first.index, second.index) == (0, 1)
    assert second.power_w == 89 and second.temperature_c == 35


@pytest.mark.parametrize(
    ("parse", "text"),
    [
        (parse_amd_smi_metric, ""),
        (parse_amd_smi_metric, "ERROR: no GPU"),
        (parse_rocm_smi_telemetry, ""),
        (parse_nvidia_smi_telemetry, "NVIDIA-SMI has failed because it couldn't communicate"),
        (parse_nvidia_smi_xml_telemetry, "<html/>"),
    ],
)
def test_garbage_is_a_parse_error_not_a_crash(parse, text):
    with pytest.raises(SmiParseError):
        parse(text)


def test_nogpu_rocm_smi_output_is_a_parse_error(shared_fixtures: Path):
    text = (shared_fixtures / "nogpu" / "rocm-smi_showallinfo.txt").read_text()
    with pytest.raises(SmiParseError):
        parse_rocm_smi_telemetry(text)


# ---------------------------------------------------------------------------- NVML bits


def test_nvml_reason_decoding_keeps_unknown_bits_visible():
    assert decode_nvml_reasons(0) == ()
    assert decode_nvml_reasons(0x1 | 0x80) == ("gpu_idle", "hw_power_brake_slowdown")
    assert decode_nvml_reasons(0x1000) == ("bit_0x1000",)


@pytest.mark.skipif(importlib.util.find_spec("pynvml") is None, reason="pynvml not installed")
def test_reason_table_matches_the_installed_nvml_bindings():
    import pynvml

    for prefix in ("nvmlClocksEventReason", "nvmlClocksThrottleReason"):
        bits = {
            value
            for name, value in vars(pynvml).items()
            if name.startswith(prefix)
            and name[len(prefix) :] not in ("None", "All", "UserDefinedClocks")
            and isinstance(value, int)
        }
        assert bits <= set(NVML_CLOCK_REASONS), (
            f"{prefix}: unlisted bits {bits - set(NVML_CLOCK_REASONS)}"
        )


# ---------------------------------------------------------------------------- readers


def _runner_for(outputs: dict[str, CommandResult]):
    calls = []

    def run(argv, timeout_s):
        calls.append(argv[0])
        return outputs.get(argv[0], CommandResult(argv=tuple(argv), error="not found"))

    return run, calls


def _no_module(name):
    raise ModuleNotFoundError(f"No module named {name!r}")


def test_no_library_no_tool_gives_no_reader_and_says_why():
    runner, _ = _runner_for({})
    reader, why = telemetry_reader("amd", runner=runner, import_module=_no_module)
    assert reader is None
    assert "amdsmi" in why and "amd-smi: not found" in why and "rocm-smi: not found" in why
    assert telemetry_reader("cpu")[0] is None


def test_amd_falls_back_to_rocm_smi_when_amd_smi_prints_nothing():
    rocm_smi = _read("rocm-smi_-a_--json_mi250_rocm6_gfx9010.json")
    runner, calls = _runner_for(
        {
            "amd-smi": CommandResult(argv=("amd-smi",), returncode=0, stdout=""),
            "rocm-smi": CommandResult(argv=("rocm-smi",), returncode=0, stdout=rocm_smi),
        }
    )
    reader, name = telemetry_reader("amd", runner=runner, import_module=_no_module)
    assert name == "rocm-smi" and reader is not None
    assert reader()[0].power_w == 91
    assert calls[:2] == ["amd-smi", "rocm-smi"]


def test_nvidia_smi_reader_falls_back_to_the_pre_535_reason_field():
    seen = []

    def runner(argv, timeout_s):  # an old driver: the new field name is refused
        seen.append(argv)
        if "clocks_event_reasons.active" in argv[1]:
            text = 'Field "clocks_event_reasons.active" is not a valid field to query.\n'
            return CommandResult(argv=tuple(argv), returncode=2, stdout=text)
        text = (
            "index, clocks.sm [MHz], clocks_throttle_reasons.active\n0, 1500, 0x0000000000000004\n"
        )
        return CommandResult(argv=tuple(argv), returncode=0, stdout=text)

    reader, name = telemetry_reader("nvidia", runner=runner, import_module=_no_module)
    assert name == "nvidia-smi" and reader is not None
    (gpu,) = reader()
    assert gpu.sm_clock_mhz == 1500 and gpu.clock_reasons == ("sw_power_cap",)
    assert "clocks_event_reasons.active" in seen[0][1]
    assert "clocks_throttle_reasons.active" in seen[-1][1]


class _FakeNvml:
    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU, NVML_VOLATILE_ECC = 1, 2, 0, 0
    NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 0, 1

    def nvmlInit(self):
        pass

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetClockInfo(self, h, kind):
        return 1980 if kind == 1 else 2619

    def nvmlDeviceGetPowerUsage(self, h):
        return 650_000

    def nvmlDeviceGetTemperature(self, h, sensor):
        return 70 + h

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return 0x4 if h == 0 else 0x40

    def nvmlDeviceGetTotalEccErrors(self, h, kind, counter):
        raise RuntimeError("NVMLError_NotSupported")  # a board without ECC


def test_pynvml_reader_reads_every_gpu_and_survives_an_unsupported_field():
    reader, name = telemetry_reader("nvidia", import_module=lambda n: _FakeNvml())
    assert name == "pynvml" and reader is not None
    first, second = reader()
    assert first.power_w == 650 and first.sm_clock_mhz == 1980 and first.ecc_corrected is None
    assert first.clock_reasons == ("sw_power_cap",)
    assert second.clock_reasons == ("hw_thermal_slowdown",) and second.temperature_c == 71


# ---------------------------------------------------------------------------- sampler


def _reading(clock, reasons=(), ecc=0, index=0):
    return DeviceReading(
        index=index,
        sm_clock_mhz=clock,
        power_w=500.0,
        temperature_c=60.0,
        clock_reasons=reasons,
        ecc_corrected=ecc,
        ecc_uncorrected=0,
    )


def test_sampler_stops_cleanly_and_a_failing_reader_counts_errors():
    calls = {"n": 0}

    def flaky():
        calls["n"] += 1
        if calls["n"] % 2:
            raise OSError("nvidia-smi: timed out after 5s")
        return (_reading(1500.0),)

    sampler = TelemetrySampler(flaky, interval_s=0.01).start()
    time.sleep(0.2)
    sampler.stop()
    assert not sampler._thread.is_alive()
    assert sampler.num_errors >= 1 and "timed out" in (sampler.last_error or "")
    assert sampler.samples()


def test_sampler_memory_is_bounded_and_spans_the_whole_run():
    ticks = iter(range(10_000))
    sampler = TelemetrySampler(lambda: (_reading(1.0),), max_samples=16, clock=lambda: next(ticks))
    for _ in range(1000):
        sampler.read_once()
    kept = sampler.samples()
    assert len(kept) < 16
    # the start kept, and the end to within one stride (1000 reads / 8 kept = 128)
    assert kept[0].time_s == 0 and kept[-1].time_s >= 1000 - 2 * 1000 // len(kept)


def test_a_hanging_reader_does_not_hang_stop():
    release = threading.Event()
    sampler = TelemetrySampler(lambda: release.wait(10) and (), interval_s=0.01).start()
    started = time.monotonic()
    sampler.stop(timeout_s=0.2)
    assert time.monotonic() - started < 1.0
    release.set()


def test_summary_burst_vs_sustained_reasons_and_ecc_growth():
    samples = [
        TelemetrySample(time_s=t, devices=(_reading(clock, reasons, ecc),))
        for t, clock, reasons, ecc in [
            (0.0, 1980.0, (), 0),
            (1.0, 1980.0, (), 0),
            (3.0, 1700.0, ("sw_power_cap",), 0),
            (4.0, 1650.0, ("sw_power_cap", "hw_thermal_slowdown"), 2),
            (5.0, 1650.0, ("sw_power_cap",), 2),
        ]
    ]
    (gpu,) = summarize(samples, burst_s=2.0)
    assert gpu.num_samples == 5
    assert gpu.burst_sm_clock_mhz == 1980 and gpu.sustained_sm_clock_mhz == 1650
    assert gpu.sm_clock_mhz == {"min": 1650.0, "median": 1700.0, "max": 1980.0}
    assert gpu.reasons_seen == {"sw_power_cap": 0.6, "hw_thermal_slowdown": 0.2}
    assert gpu.slowdowns == ["hw_thermal_slowdown"] and gpu.slowdown_fraction == 0.2
    assert gpu.ecc_corrected_delta == 2 and gpu.ecc_uncorrected_delta == 0


def test_summary_without_reasons_reported_says_unknown_not_zero():
    samples = [
        TelemetrySample(time_s=0.0, devices=(DeviceReading(index=0, power_w=90.0),)),
        TelemetrySample(time_s=1.0, devices=(DeviceReading(index=0, power_w=95.0),)),
    ]
    (gpu,) = summarize(samples)
    assert gpu.slowdown_fraction is None and gpu.ecc_uncorrected_delta is None
    assert summarize([]) == []


def test_sampling_context_publishes_the_active_sampler():
    sampler = TelemetrySampler(lambda: (), interval_s=0.01)
    assert active_sampler() is None
    with sampling(sampler) as running:
        assert active_sampler() is running is sampler
    assert active_sampler() is None
    with sampling(None) as nothing:
        assert nothing is None and active_sampler() is None
