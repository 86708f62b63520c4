"""The reconciliation rule: a lower-level check cannot fail what a higher-level check proved works
(issue 11: a healthy H100 VM failed kernel-driver because of an unread version file)."""

from __future__ import annotations

import pytest
from doctor_fakes import H100, FakeRunner, platform, probe_report

from rocmkit.doctor import Finding, run_checks
from rocmkit.doctor.checks_system import check_kernel_driver
from rocmkit.doctor.reconcile import reconcile

OPEN_MODULE = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  "
    "(dvs-builder@U22-I3-AF03-09-1)  Tue Sep 23 09:51:07 UTC 2025\n"
    "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04.2)\n"
)


def nvidia_pci(root):
    gpu = root / "sys/bus/pci/devices/0000:18:00.0"
    gpu.mkdir(parents=True)
    (gpu / "vendor").write_text("0x10de\n")
    (gpu / "class").write_text("0x030200\n")


def nvidia_device_node(root):
    """The /dev/nvidiactl node a loaded NVIDIA kernel module creates."""
    (root / "dev").mkdir()
    (root / "dev/nvidiactl").write_text("")


def test_open_kernel_module_version_is_read(make_ctx, tmp_path):
    nvidia_pci(tmp_path)
    (tmp_path / "proc/driver/nvidia").mkdir(parents=True)
    (tmp_path / "proc/driver/nvidia/version").write_text(OPEN_MODULE)
    nvidia_device_node(tmp_path)
    # torch not usable here: the file alone must be enough
    finding = check_kernel_driver(make_ctx(platform("cuda", gpu_available=False)))
    assert finding.status == "ok" and "580.95.05" in finding.summary


def test_no_proc_driver_nvidia_in_a_vm_but_torch_uses_the_gpu(make_ctx, tmp_path):
    nvidia_pci(tmp_path)
    runner = FakeRunner({"nvidia-smi": "580.159.04\n"})
    finding = check_kernel_driver(make_ctx(platform("cuda", [H100]), runner=runner))
    assert finding.status == "ok"
    assert "580.159.04" in finding.summary and "torch uses 1 NVIDIA GPU" in finding.summary


def test_no_proc_driver_nvidia_reads_the_module_version_from_sysfs(make_ctx, tmp_path):
    nvidia_pci(tmp_path)
    (tmp_path / "sys/module/nvidia").mkdir(parents=True)
    (tmp_path / "sys/module/nvidia/version").write_text("580.159.04\n")
    nvidia_device_node(tmp_path)
    finding = check_kernel_driver(make_ctx(platform("cuda", gpu_available=False)))
    assert finding.status == "ok" and "580.159.04" in finding.summary


def test_no_driver_evidence_anywhere_still_fails(make_ctx, tmp_path):
    nvidia_pci(tmp_path)
    finding = check_kernel_driver(make_ctx(platform("cuda", gpu_available=False)))
    assert finding.status == "fail" and "install the NVIDIA driver" in finding.fix


def test_a_smoke_test_on_the_gpu_overrules_a_driver_fail(make_ctx, tmp_path):
    nvidia_pci(tmp_path)  # no /proc/driver/nvidia, no sysfs entry, no nvidia-smi
    # torch facts say "no GPU" to the driver check, but the probe ran on cuda:0
    ctx = make_ctx(platform("cuda", [H100], gpu_available=False), probe=probe_report("cuda:0"))
    report = run_checks(ctx, ["kernel-driver", "smoke"])
    driver = next(f for f in report.findings if f.id == "kernel-driver")
    assert driver.status == "note" and driver.fix == ""
    assert "check smoke" in driver.summary and "kernels ran" in driver.summary
    assert driver.overruled.startswith("fail: NVIDIA GPU present")
    assert report.exit_code == 0 and report.counts()["note"] == 1


def test_without_gpu_evidence_the_fail_stands(make_ctx, tmp_path):
    nvidia_pci(tmp_path)
    ctx = make_ctx(platform("cuda", [H100], gpu_available=False), probe=probe_report("cpu"))
    report = run_checks(ctx, ["kernel-driver", "smoke"])
    driver = next(f for f in report.findings if f.id == "kernel-driver")
    assert driver.status == "fail" and report.exit_code == 1


@pytest.mark.parametrize("status", ["warn", "ok", "skip"])
def test_only_fails_are_reconciled(status):
    proof = Finding(id="smoke", status="ok", summary="ran", evidence=("gpu-kernels-ran",))
    low = Finding(id="kernel-driver", status=status, summary="x", fix="y")
    assert reconcile([low, proof]) == (low, proof)


def test_evidence_overrules_only_the_checks_it_contradicts():
    proof = Finding(id="smoke", status="ok", summary="ran", evidence=("gpu-kernels-ran",))
    shm = Finding(id="container", status="fail", summary="64 MiB /dev/shm", fix="--shm-size")
    assert reconcile([shm, proof])[0] == shm
