"""kernel-driver and container checks on fake /sys, /dev and /proc trees."""

from __future__ import annotations

from doctor_fakes import H100, MI300X, amd_tree, platform

from rocmkit.doctor.checks_system import check_container, check_kernel_driver

ROCM = platform("rocm", [MI300X])


def test_kernel_driver_skips_without_any_gpu(make_ctx):
    finding = check_kernel_driver(make_ctx(platform("cuda")))
    assert finding.status == "skip" and "no GPU" in finding.summary


def test_kernel_driver_ok_on_a_healthy_amd_box(make_ctx, tmp_path):
    finding = check_kernel_driver(
        make_ctx(ROCM, root=amd_tree(tmp_path), groups=frozenset({"render", "video"}))
    )
    assert finding.status == "ok" and "/dev/kfd and 1 render node(s) openable" in finding.summary


def test_module_not_loaded_fails(make_ctx, tmp_path):
    finding = check_kernel_driver(
        make_ctx(platform("rocm"), root=amd_tree(tmp_path, loaded=False, kfd=False))
    )
    assert (
        finding.status == "fail"
        and "not loaded" in finding.summary
        and "modprobe amdgpu" in finding.fix
    )


def test_container_without_passed_devices_fails_with_docker_flags(make_ctx, tmp_path):
    amd_tree(tmp_path, kfd=False, render=False)
    (tmp_path / ".dockerenv").write_text("")
    finding = check_kernel_driver(make_ctx(ROCM, root=tmp_path))
    assert finding.status == "fail" and "docker container" in finding.summary
    assert "--device=/dev/kfd" in finding.fix


def test_permission_denied_on_kfd_fails_with_group_fix(make_ctx, tmp_path):
    ctx = make_ctx(
        ROCM,
        root=amd_tree(tmp_path),
        groups=frozenset({"users"}),
        cannot_open={"kfd": "Permission denied"},
    )
    finding = check_kernel_driver(ctx)
    assert finding.status == "fail" and finding.summary == "cannot open /dev/kfd: Permission denied"
    assert "usermod -aG render,video" in finding.fix


def test_openable_but_not_in_groups_warns(make_ctx, tmp_path):
    finding = check_kernel_driver(
        make_ctx(ROCM, root=amd_tree(tmp_path), groups=frozenset({"video"}))
    )
    assert finding.status == "warn" and "render" in finding.summary


def test_nvidia_driver_states(make_ctx, tmp_path):
    gpu = tmp_path / "sys/bus/pci/devices/0000:18:00.0"
    gpu.mkdir(parents=True)
    (gpu / "vendor").write_text("0x10de\n")
    (gpu / "class").write_text("0x030200\n")
    assert check_kernel_driver(make_ctx(platform("cuda"))).status == "fail"
    (tmp_path / "proc/driver/nvidia").mkdir(parents=True)
    (tmp_path / "proc/driver/nvidia/version").write_text(
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
    )
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev/nvidiactl").write_text("")
    finding = check_kernel_driver(make_ctx(platform("cuda", [H100])))
    assert finding.status == "ok" and "550.54.15" in finding.summary


def test_container_shm_sizes(make_ctx, tmp_path):
    assert check_container(make_ctx()).status == "ok"
    (tmp_path / ".dockerenv").write_text("")
    big = check_container(make_ctx(shm_bytes=16 * 2**30))
    assert big.status == "ok" and "docker container" in big.summary
    small = check_container(make_ctx(shm_bytes=1 * 2**30))
    assert small.status == "warn" and "--shm-size" in small.fix
    default = check_container(make_ctx(shm_bytes=64 * 2**20))
    assert default.status == "fail" and "Bus error" in default.detail


def test_container_detected_from_cgroup_and_kubernetes_env(make_ctx, tmp_path):
    (tmp_path / "proc/1").mkdir(parents=True)
    (tmp_path / "proc/1/cgroup").write_text("0::/system.slice/containerd.service\n")
    assert "containerd container" in check_container(make_ctx(shm_bytes=2**26)).summary
    k8s = check_container(make_ctx(env={"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, shm_bytes=2**26))
    assert k8s.status == "fail" and "kubernetes" in k8s.summary


def test_wsl(make_ctx, tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/version").write_text("Linux version 5.15.167.4-microsoft-standard-WSL2\n")
    assert check_container(make_ctx()).status == "warn"
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev/dxg").write_text("")
    finding = check_container(make_ctx())
    assert finding.status == "ok" and "WSL2" in finding.summary
