"""read_pasted recognises every tool output people paste, and refuses what is none."""

from __future__ import annotations

import pytest

from rocmkit.platform.pasted import read_pasted
from rocmkit.platform.smi import SmiParseError


@pytest.mark.parametrize(
    ("name", "fmt", "first_gpu"),
    [
        ("amd-smi_static_mi350x.txt", "amd-smi", "AMD Instinct MI350X"),
        ("amd-smi_metric_excerpt.txt", "amd-smi", None),
        ("nvidia-smi_-q_gtx1080_excerpt.txt", "nvidia-smi -q", "GeForce GTX 1080"),
        ("rocm-smi_showproductname_r9-fury.txt", "rocm-smi", "Fiji [Radeon R9 FURY / NANO Series]"),
        ("rocm-smi_showproductname_csv_mi100_x2.txt", "rocm-smi", "Arcturus GL-XL [AMD Instinct MI100]"),
    ],
)  # fmt: skip
def test_local_pastes_are_recognised(local_fixtures, name, fmt, first_gpu):
    report = read_pasted((local_fixtures / "smi_text" / name).read_text())
    assert report.format == fmt and report.gpus[0].name == first_gpu


@pytest.mark.parametrize(
    "text",
    ["", "Traceback (most recent call last):\nRuntimeError: boom\n", "ROCk module is NOT loaded, possibly no GPU devices\n"],
)  # fmt: skip
def test_no_tool_output_or_no_gpus_is_an_error(text):
    with pytest.raises(SmiParseError):
        read_pasted(text)


def test_nvidia_csv_with_units_gives_memory():
    (gpu,) = read_pasted(
        "index, name, memory.total [MiB]\n0, NVIDIA GeForce RTX 4080, 16311 MiB\n"
    ).gpus
    assert gpu.name == "NVIDIA GeForce RTX 4080" and gpu.memory_total_bytes == 16311 * 2**20


@pytest.mark.parametrize(
    ("path", "fmt", "count"),
    [
        ("rocminfo/rocminfo_mi300x_x4_gfx942_rocm6.2.txt", "rocminfo", 4),
        ("rocminfo/rocminfo_rx7900xtx_gfx1100_rocm6.3.txt", "rocminfo", 1),
        ("rocm-smi/rocm-smi_-a_showallinfo_mi300x_x4.txt", "rocm-smi", 4),
        ("rocm-smi/rocm-smi_-a_--json_mi250_rocm6_gfx9010.json", "rocm-smi --json", 1),
        ("amd-smi/amd-smi_static_--asic_mi308x_changelog.txt", "amd-smi", 1),
        ("nvidia-smi/nvidia-smi_-q_h100_sxm_x8.txt", "nvidia-smi -q", 8),
        ("nvidia-smi/nvidia-smi_-q_a100_sxm4_80gb_x4.txt", "nvidia-smi -q", 4),
        ("nvidia-smi/nvidia-smi_-q_-x_rtx-4090-driver-535.xml", "nvidia-smi -q -x", 1),
        ("nvidia-smi/nvidia-smi_--query-gpu_csv_tesla-p100.csv", "nvidia-smi --query-gpu csv", 1),
    ],
)
def test_shared_real_outputs_are_recognised(shared_fixtures, path, fmt, count):
    report = read_pasted((shared_fixtures / path).read_text())
    assert report.format == fmt and len(report.gpus) == count
