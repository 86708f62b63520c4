"""torch-build, gfx-arch-list and rocm-userspace checks on fake machines."""

from __future__ import annotations

from dataclasses import replace

from doctor_fakes import H100, MI300X, RX6700, FakeRunner, amd_tree, platform

from rocmkit.doctor.checks_build import check_gfx_arch_list, check_rocm_userspace, check_torch_build
from rocmkit.doctor.context import TorchFacts
from rocmkit.platform.smi import CommandResult

HIDDEN_MI300X = replace(MI300X, visible_to_torch=False)


def test_torch_build_ok_without_gpu_names_the_build(make_ctx):
    finding = check_torch_build(make_ctx(platform("cuda")))
    assert finding.status == "ok"
    assert "CUDA 13.0 build" in finding.summary and "no GPU" in finding.summary


def test_torch_build_ok_on_matching_hardware(make_ctx):
    finding = check_torch_build(make_ctx(platform("rocm", [MI300X])))
    assert finding.status == "ok" and "uses 1 GPU" in finding.summary


def test_torch_build_warns_when_matching_build_cannot_use_the_gpu(make_ctx):
    finding = check_torch_build(make_ctx(platform("rocm", [HIDDEN_MI300X])))
    assert finding.status == "warn" and "is_available() is False" in finding.summary


def test_cuda_wheel_on_amd_box_fails_with_rocm_install_command(make_ctx):
    finding = check_torch_build(make_ctx(platform("cuda", [HIDDEN_MI300X], rocm_version="6.3.2")))
    assert finding.status == "fail" and "AMD GPUs" in finding.summary
    assert "download.pytorch.org/whl/rocm6.3" in finding.fix


def test_rocm_wheel_on_nvidia_box_and_cpu_wheel_with_gpu_fail(make_ctx):
    rocm_on_nvidia = check_torch_build(
        make_ctx(platform("rocm", [replace(H100, visible_to_torch=False)]))
    )
    assert rocm_on_nvidia.status == "fail" and "whl/cu" in rocm_on_nvidia.fix
    cpu_wheel = check_torch_build(make_ctx(platform("cpu", [HIDDEN_MI300X])))
    assert cpu_wheel.status == "fail" and "CPU-only build" in cpu_wheel.summary


def test_amd_gpu_seen_only_on_the_pci_bus_still_counts(make_ctx, tmp_path):
    amd_tree(tmp_path, loaded=False, kfd=False, render=False)  # driver not loaded: no KFD, no torch
    finding = check_torch_build(make_ctx(platform("cuda"), root=tmp_path))
    assert finding.status == "fail"


def test_torch_not_importable_fails(make_ctx):
    facts = TorchFacts(importable=False, import_error="ImportError: libamdhip64.so.6: cannot open")
    finding = check_torch_build(make_ctx(platform("cpu"), facts=facts))
    assert (
        finding.status == "fail"
        and "libamdhip64" in finding.detail
        and "pip install" in finding.fix
    )


def test_gfx_arch_list_ok_skip_and_unknown(make_ctx):
    assert check_gfx_arch_list(make_ctx(platform("rocm", [MI300X]))).status == "ok"
    assert check_gfx_arch_list(make_ctx(platform("cuda"))).status == "skip"
    assert check_gfx_arch_list(make_ctx(platform("cuda", [HIDDEN_MI300X]))).status == "skip"
    unknown = replace(MI300X, arch=None)
    assert check_gfx_arch_list(make_ctx(platform("rocm", [unknown]))).status == "warn"


def test_missing_rdna2_target_suggests_a_same_family_override(make_ctx):
    finding = check_gfx_arch_list(make_ctx(platform("rocm", [RX6700])))
    assert finding.status == "fail" and "gfx1031" in finding.summary
    assert "invalid device function" in finding.detail
    assert finding.fix.startswith("export HSA_OVERRIDE_GFX_VERSION=10.3.0")
    # With that override the GPU loads gfx1030 kernels, which torch has.
    fixed = make_ctx(platform("rocm", [RX6700]), {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"})
    assert check_gfx_arch_list(fixed).status == "ok"


def test_missing_cdna_target_asks_for_a_wheel_not_an_override(make_ctx):
    mi355 = replace(MI300X, name="AMD Instinct MI355X", arch="gfx950")
    finding = check_gfx_arch_list(make_ctx(platform("rocm", [mi355])))
    assert (
        finding.status == "fail" and "HSA_OVERRIDE" not in finding.fix and "whl/rocm" in finding.fix
    )


def rocm_root(tmp_path, version="6.4.1"):
    amd_tree(tmp_path)
    (tmp_path / "opt/rocm/.info").mkdir(parents=True)
    (tmp_path / "opt/rocm/.info/version").write_text(version + "-100\n")
    return tmp_path


def test_rocm_userspace_ok(make_ctx, tmp_path, local_fixtures):
    runner = FakeRunner(
        {
            "rocminfo": (local_fixtures / "platform/rocminfo_mi250x_x1.txt").read_text(),
            "rocm-smi": '{"card0": {"Card Series": "MI250X"}}',
            "amd-smi": "AMDSMI Tool: 24.7.1 | AMDSMI Library version: 24.7.1.0 | ROCm version: 6.4.1",
        }
    )
    finding = check_rocm_userspace(
        make_ctx(platform("rocm", [MI300X]), root=rocm_root(tmp_path), runner=runner)
    )
    assert finding.status == "ok" and "6.4.1" in finding.summary
    assert "1 GPU agent(s) gfx90a" in finding.detail and "1 card(s) MI250X" in finding.detail
    assert "amd-smi: ROCm 6.4.1" in finding.detail


def test_rocm_smi_garbage_is_reported_not_trusted(make_ctx, tmp_path, local_fixtures):
    runner = FakeRunner(
        {
            "rocminfo": (local_fixtures / "platform/rocminfo_mi250x_x1.txt").read_text(),
            "rocm-smi": "Traceback (most recent call last):\n  File rsmiBindings.py\n",
        }
    )
    ctx = make_ctx(platform("rocm", [MI300X]), root=rocm_root(tmp_path), runner=runner)
    assert "rocm-smi: unreadable output" in check_rocm_userspace(ctx).detail


def test_rocm_userspace_major_mismatch_warns(make_ctx, tmp_path, local_fixtures):
    runner = FakeRunner(
        {"rocminfo": (local_fixtures / "platform/rocminfo_mi250x_x1.txt").read_text()}
    )
    ctx = make_ctx(platform("rocm", [MI300X]), root=rocm_root(tmp_path, "5.7.1"), runner=runner)
    finding = check_rocm_userspace(ctx)
    assert finding.status == "warn" and "HIP 6.4" in finding.summary


def test_rocm_userspace_driver_missing_fails_despite_rocm_smi_exit_0(
    make_ctx, tmp_path, shared_fixtures
):
    nogpu = (shared_fixtures / "nogpu/rocminfo.txt").read_text()
    runner = FakeRunner(
        {
            "rocminfo": CommandResult(argv=("rocminfo",), returncode=1, stdout=nogpu),
            "rocm-smi": CommandResult(
                argv=("rocm-smi",),
                returncode=0,
                stdout="",
                stderr="ERROR:root:Driver not initialized (amdgpu not found in modules)",
            ),
        }
    )
    ctx = make_ctx(platform("rocm", [HIDDEN_MI300X]), root=rocm_root(tmp_path), runner=runner)
    finding = check_rocm_userspace(ctx)
    assert finding.status == "fail" and "not loaded" in finding.summary
    assert "printed nothing (exit 0)" in finding.detail and "modprobe amdgpu" in finding.fix


def test_rocm_userspace_hung_tool_fails(make_ctx, tmp_path):
    runner = FakeRunner(
        {"rocminfo": CommandResult(argv=("rocminfo",), error="timed out after 10s")}
    )
    finding = check_rocm_userspace(
        make_ctx(platform("rocm", [MI300X]), root=rocm_root(tmp_path), runner=runner)
    )
    assert finding.status == "fail" and "hung" in finding.summary


def test_rocm_userspace_skipped_without_amd_but_still_reports_what_is_installed(make_ctx, tmp_path):
    (tmp_path / "var/lib/dpkg").mkdir(parents=True)
    (tmp_path / "var/lib/dpkg/status").write_text(
        "Package: rocminfo\nStatus: install ok installed\nVersion: 5.2.3-2\n"
    )
    finding = check_rocm_userspace(make_ctx(platform("cuda"), root=tmp_path))
    assert finding.status == "skip" and "5.2.3" in finding.summary
