"""read_pasted recognises every tool output people paste, and refuses what is none."""

from __future__ import annotations

import pytest

from rocmkit.platform.pasted import join_outputs, join_two, read_pasted
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


@pytest.mark.parametrize(
    ("name", "fmt", "count"),
    [
        ("nvidia-smi_-L_a100_80gb_x4_mig.txt", "nvidia-smi -L", 4),
        ("amd-smi_table_mi325x_rocm7.0.1.txt", "amd-smi (table)", 1),
        ("amd-smi_table_strix-halo_rocm7.1.txt", "amd-smi (table)", 1),
        ("rocminfo_strix-halo_gfx1151_rocm7.1.txt", "rocminfo", 1),
        ("nvidia-smi_-a_a100_80gb_single_minor4_excerpt.txt", "nvidia-smi -q", 1),
    ],
)
def test_new_formats_are_recognised(local_fixtures, name, fmt, count):
    report = read_pasted((local_fixtures / "smi_text" / name).read_text())
    assert report.format == fmt and len(report.gpus) == count
    assert all(g.sources == (fmt,) for g in report.gpus)


def test_pasted_kfd_properties(shared_fixtures):
    kfd = shared_fixtures / "kfd_sysfs"
    text = (kfd / "mi300x_host_cpu_node_properties.txt").read_text() + (
        kfd / "mi300x_gfx942_gpu_node_properties.txt"
    ).read_text()
    (gpu,) = read_pasted(text).gpus
    assert (gpu.arch, gpu.device_id, gpu.num_compute_units) == ("gfx942", "0x74a1", 304)
    with pytest.raises(SmiParseError, match="CPU nodes only"):
        read_pasted((kfd / "mi300x_host_cpu_node_properties.txt").read_text())


def test_a_gfx_target_no_tool_printed_is_derived_from_a_known_pci_id(local_fixtures):
    """amd-smi list prints no target; its UUID carries the device id 0x740f (MI210, gfx90a)."""
    report = read_pasted((local_fixtures / "smi_text/amd-smi_list_mi210_x2.txt").read_text())
    assert {(g.arch, g.arch_source) for g in report.gpus} == {
        ("gfx90a", "derived from PCI id 0x740f")
    }
    printed = read_pasted((local_fixtures / "smi_text/amd-smi_static_mi350x.txt").read_text())
    assert printed.gpus[0].arch == "gfx950" and printed.gpus[0].arch_source is None


def _read(local_fixtures, shared_fixtures, name):
    """A paste from tests/fixtures/smi_text, else from ../shared/fixtures."""
    folder = local_fixtures / "smi_text"
    return read_pasted(
        ((folder / name) if (folder / name).exists() else shared_fixtures / name).read_text()
    )


def test_outputs_of_one_machine_join_by_bus_id(local_fixtures):
    table = _read(local_fixtures, None, "amd-smi_table_strix-halo_rocm7.1.txt")
    rocminfo = _read(local_fixtures, None, "rocminfo_strix-halo_gfx1151_rocm7.1.txt")
    joined = join_two(table, rocminfo)
    assert joined is not None and joined.format == "amd-smi (table) + rocminfo"
    (gpu,) = joined.gpus
    assert (gpu.name, gpu.arch, gpu.num_compute_units) == ("AMD Radeon Graphics", "gfx1151", 40)
    assert gpu.pci_bus_id == "0000:c5:00.0" and gpu.device_id == "0x1586"
    assert gpu.memory_total_bytes == 120 * 2**30  # rocminfo's pool, not the 512 MiB carve-out
    assert gpu.sources == ("amd-smi (table)", "rocminfo")
    assert joined.notes[0].startswith("joined amd-smi (table) and rocminfo by PCI bus id")


def test_outputs_join_by_order_when_counts_agree_and_nothing_contradicts(
    local_fixtures, shared_fixtures
):
    """amd-smi list and rocm-smi --showproductname of one machine (ROCm/ROCm#5480): no common key."""
    listed = _read(local_fixtures, None, "amd-smi_list_mi210_x2.txt")
    named = _read(local_fixtures, None, "rocm-smi_showproductname_mi210_x2.txt")
    joined = join_two(listed, named)
    assert joined is not None
    assert [(g.index, g.name, g.arch, g.pci_bus_id) for g in joined.gpus] == [
        (0, "Instinct MI210", "gfx90a", "0000:03:00.0"),
        (1, "Instinct MI210", "gfx90a", "0000:83:00.0"),
    ]
    assert joined.gpus[0].arch_source is None  # rocm-smi printed it: no longer "derived"
    assert not any("names no product" in n for n in joined.notes)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        # the same product on two machines: NVIDIA UUIDs differ
        ("nvidia-smi_-L_a100_80gb_x4_mig.txt", "nvidia-smi/nvidia-smi_-q_a100_sxm4_80gb_x4.txt"),
        # bus ids differ
        ("amd-smi_table_strix-halo_rocm7.1.txt", "amd-smi_table_rx7900xtx_builtin-amdgpu.txt"),
        # one AMD GPU against four, no common key
        ("amd-smi_table_mi325x_rocm7.0.1.txt", "rocminfo/rocminfo_mi300x_x4_gfx942_rocm6.2.txt"),
        # vendors differ
        ("nvidia-smi_-L_quadro-rtx4000_x2.txt", "amd-smi_list_mi210_x2.txt"),
        # same count, device ids differ (0x74a1 MI300X vs 0x744c RX 7900 XTX)
        ("rocminfo/rocminfo_rx7900xtx_gfx1100_rocm6.3.txt", "kfd_sysfs/mi300x_gfx942_gpu_node_properties.txt"),
    ],
)  # fmt: skip
def test_outputs_of_different_machines_stay_apart(local_fixtures, shared_fixtures, first, second):
    a, b = (_read(local_fixtures, shared_fixtures, n) for n in (first, second))
    assert join_two(a, b) is None and join_two(b, a) is None
    assert len(join_outputs([(first, a), (second, b)])) == 2
