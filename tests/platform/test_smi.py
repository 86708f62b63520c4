"""Parsers of rocminfo / rocm-smi / amd-smi / nvidia-smi output, and the command runner."""

from __future__ import annotations

import sys

import pytest

from rocmkit.platform.smi import (
    SmiParseError,
    normalize_rocm_smi_gfx,
    parse_amd_smi_json,
    parse_amd_smi_static,
    parse_amd_smi_version,
    parse_nvidia_smi_csv,
    parse_nvidia_smi_xml,
    parse_rocm_smi_json,
    parse_rocminfo,
    run_command,
)

GARBAGE = ["", "   \n", "\x00\x01\x02binary", "Segmentation fault (core dumped)", "{not json"]


def test_rocminfo_own_fixture(local_fixtures):
    report = parse_rocminfo((local_fixtures / "platform/rocminfo_mi250x_x1.txt").read_text())
    assert report.kfd_module_loaded and len(report.agents) == 2
    (gpu,) = report.gpus
    assert (gpu.marketing_name, gpu.gfx_target, gpu.compute_units) == (
        "AMD Instinct MI250X",
        "gfx90a",
        110,
    )
    assert (gpu.wavefront_size, gpu.node) == (64, 1)


@pytest.mark.parametrize(
    ("file", "num_gpus", "target", "name"),
    [
        ("rocminfo_mi300x_x4_gfx942_rocm6.2.txt", 4, "gfx942", "AMD Instinct MI300X"),
        ("rocminfo_mi300x_gfx941_rocm-docs.txt", 1, "gfx941", "AMD Instinct MI300X"),
        ("rocminfo_rx7900xtx_gfx1100_rocm6.3.txt", 1, "gfx1100", "Radeon RX 7900 XTX"),
    ],
)
def test_rocminfo_real_outputs(shared_fixtures, file, num_gpus, target, name):
    report = parse_rocminfo((shared_fixtures / "rocminfo" / file).read_text())
    assert len(report.gpus) == num_gpus
    assert {(g.gfx_target, g.marketing_name) for g in report.gpus} == {(target, name)}
    assert all(a.device_type == "CPU" for a in report.agents if a not in report.gpus)


def test_rocminfo_without_driver_is_a_clear_state_not_an_error(shared_fixtures):
    for file in ("rocminfo.txt", "rocminfo_stdout_only.txt", "rocminfo_bad_override.txt"):
        report = parse_rocminfo((shared_fixtures / "nogpu" / file).read_text())
        assert not report.kfd_module_loaded and report.gpus == ()


@pytest.mark.parametrize("text", GARBAGE)
def test_rocminfo_garbage_raises_parse_error(text):
    with pytest.raises(SmiParseError):
        parse_rocminfo(text)


def test_rocm_smi_key_spellings_of_both_releases(local_fixtures):
    new = parse_rocm_smi_json(
        (local_fixtures / "platform/rocm-smi_productname_rocm6.json").read_text()
    )
    assert [c.name for c in new.cards] == ["AMD Instinct MI250X"] * 2
    assert new.cards[0].gfx_target == "gfx90a" and new.cards[0].vram_total_bytes == 68702699520
    old = parse_rocm_smi_json(
        (local_fixtures / "platform/rocm-smi_productname_rocm5.json").read_text()
    )
    assert old.cards[0].name == "Radeon RX 7900 XTX" and old.driver_version == "6.2.4"


def test_rocm_smi_real_mi250_outputs(shared_fixtures):
    folder = shared_fixtures / "rocm-smi"
    rocm6 = parse_rocm_smi_json(
        (folder / "rocm-smi_-a_--json_mi250_rocm6_gfx9010.json").read_text()
    )
    (card,) = rocm6.cards
    assert card.gfx_target == "gfx90a" and "MI250" in card.name
    assert card.pci_bus_id == "0000:29:00.0" and rocm6.driver_version == "6.2.4"
    rocm5 = parse_rocm_smi_json(
        (folder / "rocm-smi_-a_--json_mi250_rocm5_driver6.2.4.json").read_text()
    )
    assert len(rocm5.cards) == 2 and all("MI250" in c.name for c in rocm5.cards)


def test_rocm_smi_empty_stdout_of_the_no_driver_case_is_an_error(shared_fixtures):
    # The real tool exits 0 and prints nothing on stdout: the parser must not call that "no GPUs".
    with pytest.raises(SmiParseError, match="printed nothing"):
        parse_rocm_smi_json("")


@pytest.mark.parametrize("text", [*GARBAGE, "[1, 2]", '"card0"'])
def test_rocm_smi_garbage(text):
    with pytest.raises(SmiParseError):
        parse_rocm_smi_json(text)


@pytest.mark.parametrize(
    ("raw", "target"),
    [
        ("gfx9010", "gfx90a"),
        ("gfx942", "gfx942"),
        ("gfx1100", "gfx1100"),
        ("gfx90a", "gfx90a"),
        ("gfx1151", "gfx1151"),
        ("gfx9016", None),
        ("N/A", None),
        ("gfx", None),
        (None, None),
    ],
)
def test_rocm_smi_gfx_spellings(raw, target):
    assert normalize_rocm_smi_gfx(raw) == target


def test_amd_smi_rocm6_list_and_rocm7_wrapper_give_the_same_shape(local_fixtures):
    rocm7 = parse_amd_smi_static(
        (local_fixtures / "platform/amd-smi_static_rocm7.json").read_text()
    )
    rocm6 = parse_amd_smi_static(
        (local_fixtures / "platform/amd-smi_static_rocm6.json").read_text()
    )
    assert [(g.index, g.gfx_target, g.num_compute_units) for g in rocm7] == [
        (0, "gfx942", 304),
        (1, "gfx942", 304),
    ]
    assert [(g.name, g.gfx_target) for g in rocm6] == [("AMD Instinct MI210", "gfx90a")]


def test_amd_smi_real_changelog_samples(shared_fixtures):
    folder = shared_fixtures / "amd-smi"
    metric = parse_amd_smi_json(
        (folder / "amd-smi_metric_-p_--json_rocm6.1_changelog.json").read_text()
    )
    assert metric[0]["gpu"] == 0 and metric[0]["power"]["socket_power"]["unit"] == "W"
    topology = parse_amd_smi_json((folder / "amd-smi_topology_--json_changelog.json").read_text())
    assert [g["gpu"] for g in topology] == [0, 1]
    version = parse_amd_smi_version((folder / "amd-smi_version_rocm6.1_changelog.txt").read_text())
    assert version["ROCm version"] == "6.1.0"


@pytest.mark.parametrize("text", [*GARBAGE, '{"gpu_data": 3}', "[1, 2]"])
def test_amd_smi_garbage(text):
    with pytest.raises(SmiParseError):
        parse_amd_smi_json(text)


def test_nvidia_csv_own_and_real(local_fixtures, shared_fixtures):
    rows = parse_nvidia_smi_csv(
        (local_fixtures / "platform/nvidia-smi_query_h100_x2.csv").read_text()
    )
    assert [(r["index"], r["compute_cap"], r["memory.total"]) for r in rows] == [
        ("0", "9.0", "81559"),
        ("1", "9.0", "81559"),
    ]
    real = parse_nvidia_smi_csv(
        (shared_fixtures / "nvidia-smi/nvidia-smi_--query-gpu_csv_tesla-p100.csv").read_text()
    )
    assert real[0]["name"] == "Tesla P100-PCIE-16GB" and real[0]["fan.speed"] is None  # "[N/A]"


@pytest.mark.parametrize("text", ["", "No devices were found", "name, uuid\nA100, GPU-1, extra"])
def test_nvidia_csv_garbage(text):
    with pytest.raises(SmiParseError):
        parse_nvidia_smi_csv(text)


def test_nvidia_xml_own_and_real(local_fixtures, shared_fixtures):
    own = parse_nvidia_smi_xml((local_fixtures / "platform/nvidia-smi_q_x_h200.xml").read_text())
    assert own.gpus[0].name == "NVIDIA H200" and own.gpus[0].memory_total_mib == 143771
    mig = parse_nvidia_smi_xml(
        (shared_fixtures / "nvidia-smi/nvidia-smi_-q_-x_a100-sxm4-mig.xml").read_text()
    )
    assert mig.driver_version == "510.47.03" and mig.gpus[0].mig_enabled
    assert mig.gpus[0].memory_total_mib == 40960 and mig.gpus[0].architecture == "Ampere"
    rtx = parse_nvidia_smi_xml(
        (shared_fixtures / "nvidia-smi/nvidia-smi_-q_-x_rtx-4090-driver-535.xml").read_text()
    )
    assert rtx.cuda_version == "12.2" and not rtx.gpus[0].mig_enabled


@pytest.mark.parametrize("text", [*GARBAGE, "<html></html>", "<nvidia_smi_log><gpu>"])
def test_nvidia_xml_garbage(text):
    with pytest.raises(SmiParseError):
        parse_nvidia_smi_xml(text)


def test_runner_reports_missing_tool_and_timeout_without_raising():
    assert run_command(["rocmkit-no-such-tool-xyz"]).error == "not found"
    hung = run_command([sys.executable, "-c", "import time; time.sleep(30)"], timeout_s=0.5)
    assert hung.error == "timed out after 0.5s" and not hung.ran
    ok = run_command([sys.executable, "-c", "print('hi')"])
    assert ok.ran and ok.returncode == 0 and ok.stdout.strip() == "hi"
