"""hsa-override, visible-devices and allocator-comm checks."""

from __future__ import annotations

import pytest
from doctor_fakes import H100, IGPU, MI300X, RX6700, platform

from rocmkit.doctor.checks_env import (
    check_allocator_comm,
    check_hsa_override,
    check_visible_devices,
    override_target,
    parse_alloc_conf,
)


@pytest.mark.parametrize(
    ("value", "target"),
    [
        ("10.3.0", "gfx1030"),
        ("11.0.0", "gfx1100"),
        ("9.0.10", "gfx90a"),
        ("9.4.2", "gfx942"),
        ('"10.3.0"', None),
        ("10.3", None),
        ("gfx1030", None),
        ("9.16.0", None),
        ("", None),
    ],
)
def test_override_mapping(value, target):
    assert override_target(value) == target


def test_hsa_override_states(make_ctx):
    rdna2 = platform("rocm", [RX6700])
    assert check_hsa_override(make_ctx(rdna2)).status == "ok"
    same_family = check_hsa_override(make_ctx(rdna2, {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"}))
    assert same_family.status == "ok" and "run as gfx1030" in same_family.summary
    no_gpu = check_hsa_override(make_ctx(platform("cuda"), {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"}))
    assert no_gpu.status == "warn" and "no effect" in no_gpu.summary


def test_hsa_override_quoted_value_fails_with_the_unquoted_fix(make_ctx):
    finding = check_hsa_override(
        make_ctx(platform("rocm", [RX6700]), {"HSA_OVERRIDE_GFX_VERSION": '"10.3.0"'})
    )
    assert finding.status == "fail" and finding.fix == "export HSA_OVERRIDE_GFX_VERSION=10.3.0"


def test_hsa_override_across_families_fails(make_ctx):
    finding = check_hsa_override(
        make_ctx(platform("rocm", [RX6700]), {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"})
    )
    assert finding.status == "fail" and "RDNA2" in finding.summary and "RDNA3" in finding.summary


def test_visible_devices_ok(make_ctx):
    two = platform("rocm", [MI300X, MI300X.__class__(**{**vars(MI300X), "index": 1})])
    assert check_visible_devices(make_ctx(two)).status == "ok"
    assert check_visible_devices(make_ctx(two, {"HIP_VISIBLE_DEVICES": "1"})).status == "ok"
    assert check_visible_devices(make_ctx(platform("cpu"))).summary.endswith("no GPU to select")


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"HIP_VISIBLE_DEVICES": ""}, "hides every GPU"),
        ({"CUDA_VISIBLE_DEVICES": "gpu0"}, "malformed"),
        ({"ROCR_VISIBLE_DEVICES": "3"}, "only 1 GPU"),
    ],
)
def test_visible_devices_failures(make_ctx, env, words):
    finding = check_visible_devices(make_ctx(platform("rocm", [MI300X]), env))
    assert finding.status == "fail" and words in finding.summary


def test_device_index_counts_gpus_torch_already_hides(make_ctx, tmp_path):
    # CUDA_VISIBLE_DEVICES=1 leaves torch one GPU; the second is still on the PCI bus.
    for bus in ("0000:18:00.0", "0000:2a:00.0"):
        gpu = tmp_path / "sys/bus/pci/devices" / bus
        gpu.mkdir(parents=True)
        (gpu / "vendor").write_text("0x10de\n")
        (gpu / "class").write_text("0x030200\n")
    ctx = make_ctx(platform("cuda", [H100]), {"CUDA_VISIBLE_DEVICES": "1"})
    assert check_visible_devices(ctx).status == "ok"


def test_conflicting_lists_warn(make_ctx):
    env = {"HIP_VISIBLE_DEVICES": "0", "CUDA_VISIBLE_DEVICES": "1"}
    two = platform("rocm", [MI300X, MI300X.__class__(**{**vars(MI300X), "index": 1})])
    assert check_visible_devices(make_ctx(two, env)).status == "warn"


def test_igpu_next_to_discrete_warns_with_the_discrete_index(make_ctx):
    finding = check_visible_devices(make_ctx(platform("rocm", [RX6700, IGPU])))
    assert finding.status == "warn" and "integrated" in finding.summary
    assert finding.fix == "export HIP_VISIBLE_DEVICES=0"
    # Once the user selected devices, the trap is handled.
    assert (
        check_visible_devices(
            make_ctx(platform("rocm", [RX6700, IGPU]), {"HIP_VISIBLE_DEVICES": "0"})
        ).status
        == "ok"
    )


@pytest.mark.parametrize(
    ("value", "problems"),
    [
        ("expandable_segments:True", []),
        ("max_split_size_mb:512,garbage_collection_threshold:0.8", []),
        ("roundup_power2_divisions:[256:1,512:2,>:8],expandable_segments:False", []),
        ("expandable_segment:True", ["unknown option 'expandable_segment'"]),
        ("max_split_size_mb=512", ["'max_split_size_mb=512' is not key:value"]),
        ("expandable_segments:yes", ["expandable_segments:yes has a bad value"]),
    ],
)
def test_alloc_conf_parser(value, problems):
    assert parse_alloc_conf(value) == problems


def test_allocator_comm_states(make_ctx, tmp_path):
    assert check_allocator_comm(make_ctx()).status == "ok"
    assert (
        check_allocator_comm(
            make_ctx(env={"PYTORCH_HIP_ALLOC_CONF": "expandable_segments:True"})
        ).status
        == "ok"
    )
    bad = check_allocator_comm(make_ctx(env={"PYTORCH_CUDA_ALLOC_CONF": "expandable:True"}))
    assert bad.status == "fail" and "unknown option" in bad.summary
    p2p = check_allocator_comm(make_ctx(env={"NCCL_P2P_DISABLE": "1"}))
    assert p2p.status == "warn" and "peer-to-peer" in p2p.summary
    assert check_allocator_comm(make_ctx(env={"HSA_ENABLE_SDMA": "0"})).status == "ok"


def test_socket_ifname_naming_no_interface_fails(make_ctx, tmp_path):
    for name in ("eth0", "lo"):
        (tmp_path / "sys/class/net" / name).mkdir(parents=True)
    assert check_allocator_comm(make_ctx(env={"NCCL_SOCKET_IFNAME": "eth"})).status == "ok"
    assert check_allocator_comm(make_ctx(env={"NCCL_SOCKET_IFNAME": "^docker"})).status == "ok"
    finding = check_allocator_comm(make_ctx(env={"NCCL_SOCKET_IFNAME": "ib0"}))
    assert finding.status == "fail" and "eth0" in finding.fix
