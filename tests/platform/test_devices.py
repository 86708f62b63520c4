"""Merging torch, KFD and smi facts into DeviceInfo; detect() on fake trees and runners."""

from __future__ import annotations

import pytest

from rocmkit.platform import DeviceInfo, detect
from rocmkit.platform.backend import TorchSide
from rocmkit.platform.devices import discover_devices, merge_devices
from rocmkit.platform.kfd import parse_node
from rocmkit.platform.smi import CommandResult
from rocmkit.platform.versions import (
    parse_dpkg_versions,
    parse_nvidia_driver_version,
    read_driver_version,
    rocm_version_with_source,
)

MI250X_NODE = (
    "simd_count 440\nsimd_per_cu 4\nwave_front_size 64\ngfx_target_version 90010\n"
    "location_id 49408\ndomain 0\ndrm_render_minor 128\n"
)
IGPU_NODE = "simd_count 32\nsimd_per_cu 2\nwave_front_size 32\ngfx_target_version 110501\ndrm_render_minor 129\n"


def fake_runner(outputs, calls=None):
    def run(argv, timeout_s):
        if calls is not None:
            calls.append(list(argv))
        stdout = outputs.get(argv[0])
        if stdout is None:
            return CommandResult(argv=tuple(argv), error="not found")
        return CommandResult(argv=tuple(argv), returncode=0, stdout=stdout)

    return run


def test_torch_device_is_enriched_by_its_kfd_node():
    torch_dev = DeviceInfo(
        index=0,
        name="AMD Instinct MI250X",
        vendor="amd",
        arch="gfx90a",
        pci_bus_id="0000:c1:00.0",
        sources=("torch",),
    )
    (merged,) = merge_devices([torch_dev], [parse_node(3, MI250X_NODE)])
    assert merged.kfd_node == 3 and merged.render_minor == 128
    assert merged.num_compute_units == 110 and merged.visible_to_torch
    assert merged.sources == ("torch", "kfd") and merged.is_integrated is False


def test_gpus_torch_cannot_use_are_listed_as_hidden():
    # A CUDA wheel on an AMD box: torch sees nothing, KFD sees an MI250X and an APU iGPU.
    nodes = [parse_node(1, MI250X_NODE), parse_node(2, IGPU_NODE)]
    devices = merge_devices([], nodes, amd_names={1: "AMD Instinct MI250X"})
    assert [(d.name, d.arch, d.visible_to_torch) for d in devices] == [
        ("AMD Instinct MI250X", "gfx90a", False),
        ("AMD GPU (gfx1151)", "gfx1151", False),
    ]
    assert [d.is_integrated for d in devices] == [False, True]


def test_nvidia_smi_rows_not_seen_by_torch_are_added():
    rows = [
        {
            "index": "0",
            "name": "NVIDIA H100 80GB HBM3",
            "uuid": "GPU-1",
            "pci.bus_id": "00000000:18:00.0",
            "memory.total": "81559",
            "compute_cap": "9.0",
        }
    ]
    (device,) = merge_devices([], (), None, rows)
    assert (device.vendor, device.arch, device.visible_to_torch) == ("nvidia", "sm_90", False)
    seen = DeviceInfo(index=0, name="NVIDIA H100 80GB HBM3", vendor="nvidia", uuid="GPU-1")
    assert merge_devices([seen], (), None, rows) == [seen]


def make_tree(root):
    for node_id, text in ((0, "cpu_cores_count 8\nsimd_count 0\n"), (1, MI250X_NODE)):
        node = root / f"sys/class/kfd/kfd/topology/nodes/{node_id}"
        node.mkdir(parents=True)
        (node / "properties").write_text(text)


def test_discover_runs_rocminfo_only_for_hardware_torch_does_not_cover(tmp_path, local_fixtures):
    make_tree(tmp_path)
    calls: list[list[str]] = []
    rocminfo = (local_fixtures / "platform/rocminfo_mi250x_x1.txt").read_text()
    devices = discover_devices(root=tmp_path, runner=fake_runner({"rocminfo": rocminfo}, calls))
    assert calls == [["rocminfo"]]
    assert [(d.name, d.visible_to_torch) for d in devices] == [("AMD Instinct MI250X", False)]
    calls.clear()
    assert discover_devices(root=tmp_path / "empty", runner=fake_runner({}, calls)) == []
    assert calls == []  # no hardware, no tool calls


def test_discover_survives_garbage_and_missing_tools(tmp_path):
    make_tree(tmp_path)
    (tmp_path / "proc/driver/nvidia").mkdir(parents=True)
    (tmp_path / "proc/driver/nvidia/version").write_text(
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15\n"
    )
    runner = fake_runner({"rocminfo": "\x00garbage", "nvidia-smi": "No devices were found"})
    devices = discover_devices(root=tmp_path, runner=runner)
    assert [(d.name, d.arch) for d in devices] == [("AMD GPU (gfx90a)", "gfx90a")]
    assert read_driver_version(tmp_path) == "nvidia 550.54.15"


def test_detect_with_fake_root_reads_versions_and_devices(tmp_path, local_fixtures):
    make_tree(tmp_path)
    (tmp_path / "opt/rocm/.info").mkdir(parents=True)
    (tmp_path / "opt/rocm/.info/version").write_text("6.4.1-120\n")
    (tmp_path / "sys/module/amdgpu").mkdir(parents=True)
    (tmp_path / "sys/module/amdgpu/version").write_text("6.12.12\n")
    rocminfo = (local_fixtures / "platform/rocminfo_mi250x_x1.txt").read_text()
    platform = detect(root=tmp_path, runner=fake_runner({"rocminfo": rocminfo}))
    assert platform.rocm_version == "6.4.1" and platform.driver_version == "amdgpu 6.12.12"
    assert [d.name for d in platform.devices if not d.visible_to_torch] == ["AMD Instinct MI250X"]
    assert platform.record()["devices"][0]["arch"] == "gfx90a"
    assert platform.backend == "cpu" and not platform.gpu_available  # this process's torch left out


def test_detect_takes_the_torch_side_injected(tmp_path):
    h100 = DeviceInfo(index=0, name="NVIDIA H100 80GB HBM3", vendor="nvidia", arch="sm_90")
    side = TorchSide(backend="cuda", torch_version="2.11.0+cu130", cuda_version="13.0",
                     devices=(h100,), gpu_available=True)  # fmt: skip
    platform = detect(root=tmp_path, runner=fake_runner({}), torch_side=side)
    assert [d.arch for d in platform.devices] == ["sm_90"] and platform.torch_device == "cuda"


def test_a_hip_package_on_an_nvidia_box_is_not_a_rocm_stack(tmp_path):
    """Issue 11 item 7: a libamdhip64-5 package made the environment line say `ROCM 5.7.1`."""
    (tmp_path / "var/lib/dpkg").mkdir(parents=True)
    (tmp_path / "var/lib/dpkg/status").write_text(
        "Package: libamdhip64-5\nStatus: install ok installed\nVersion: 5.7.1-3\n"
    )
    h100 = DeviceInfo(index=0, name="NVIDIA H100", vendor="nvidia", arch="sm_90")
    cuda = TorchSide(backend="cuda", devices=(h100,), gpu_available=True)
    assert detect(root=tmp_path, runner=fake_runner({}), torch_side=cuda).rocm_version is None
    rocm = TorchSide(backend="rocm", hip_version="6.4")
    assert detect(root=tmp_path, runner=fake_runner({}), torch_side=rocm).rocm_version == "5.7.1"


def test_rocm_version_falls_back_to_distribution_packages(tmp_path):
    (tmp_path / "var/lib/dpkg").mkdir(parents=True)
    (tmp_path / "var/lib/dpkg/status").write_text(
        "Package: rocminfo\nStatus: install ok installed\nVersion: 5.2.3-2\n\n"
        "Package: rocm-core\nStatus: deinstall ok config-files\nVersion: 6.0.0\n"
    )
    assert rocm_version_with_source(tmp_path) == ("5.2.3", "dpkg package rocminfo")
    assert parse_dpkg_versions(
        "Package: x\nStatus: install ok installed\nVersion: 1:2.0\n", ("x",)
    ) == {"x": "2.0"}
    assert rocm_version_with_source(tmp_path / "nothing") == (None, None)


@pytest.mark.gpu
def test_detect_on_a_gpu_machine_names_every_device():
    import torch

    platform = detect()
    visible = [d for d in platform.devices if d.visible_to_torch]
    assert len(visible) == torch.cuda.device_count()
    assert all(d.arch and d.total_memory_bytes for d in visible)


@pytest.mark.parametrize(
    "text, version",
    [
        ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024", "550.54.15"),
        ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs-builder@U22)", "580.95.05"),
        ("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.124.06  Release Build", "570.124.06"),
        ("GCC version:  gcc version 12.3.0", None),
    ],
)  # fmt: skip
def test_nvidia_driver_version_of_both_module_flavours(text, version):
    assert parse_nvidia_driver_version(text) == version
