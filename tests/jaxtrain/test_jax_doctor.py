"""`rocmkit doctor`'s jax check, against fake answers of the JAX child process."""

from __future__ import annotations

import json

from rocmkit.doctor.checks_jax import ROCM_FIX, check_jax
from rocmkit.doctor.context import DoctorContext
from rocmkit.doctor.registry import all_checks
from rocmkit.platform import DeviceInfo, Platform
from rocmkit.platform.smi import CommandResult

MI300X = DeviceInfo(index=0, name="AMD Instinct MI300X", vendor="amd", arch="gfx942")


def _context(tmp_path, answer: dict | None = None, *, amd: bool = True, error: str | None = None):
    devices = (MI300X,) if amd else ()
    platform = Platform(backend="rocm", torch_version="x", devices=devices, gpu_available=amd)

    def runner(argv, timeout_s):
        stdout = "" if answer is None else json.dumps(answer) + "\n"
        return CommandResult(argv=tuple(argv), returncode=0, stdout=stdout, error=error)

    return DoctorContext(platform=platform, env={}, root=tmp_path, runner=runner)


def test_jax_is_registered_with_the_other_checks():
    assert "jax" in all_checks()


def test_missing_jax_is_a_skip_with_the_install_command(tmp_path):
    finding = check_jax(_context(tmp_path, {"plugins": [], "missing": "No module named 'jax'"}))
    assert finding.status == "skip"
    assert finding.fix == "pip install 'rocmkit[jax]'"


def test_amd_gpus_but_jax_on_cpu_names_the_rocm_plugin_and_a_version_mismatch(tmp_path):
    answer = {
        "jax": "0.10.2",
        "jaxlib": "0.10.2",
        "platform": "cpu",
        "devices": ["cpu"],
        "plugins": ["jax-rocm7-plugin==0.9.0", "jax-rocm7-pjrt==0.9.0"],
    }
    finding = check_jax(_context(tmp_path, answer))
    assert finding.status == "warn"
    assert "sees only the CPU" in finding.summary and "AMD" in finding.summary
    assert finding.fix == ROCM_FIX
    assert "jax-rocm7-plugin==0.9.0" in finding.detail and "0.10.2" in finding.detail


def test_jax_on_rocm_devices_is_ok(tmp_path):
    answer = {
        "jax": "0.10.2",
        "jaxlib": "0.10.2",
        "platform": "rocm",
        "devices": ["AMD Instinct MI300X"] * 8,
        "plugins": ["jax-rocm7-plugin==0.10.2", "jax-rocm7-pjrt==0.10.2"],
    }
    finding = check_jax(_context(tmp_path, answer))
    assert finding.status == "ok"
    assert "8 rocm device(s) (AMD Instinct MI300X)" in finding.summary


def test_cpu_only_machine_with_cpu_jax_is_ok(tmp_path):
    answer = {"jax": "0.10.2", "jaxlib": "0.10.2", "platform": "cpu", "devices": ["cpu"]}
    assert check_jax(_context(tmp_path, answer, amd=False)).status == "ok"


def test_a_backend_that_fails_to_start_or_a_hung_child_is_reported_not_raised(tmp_path):
    broken = {"jax": "0.10.2", "jaxlib": "0.10.2", "error": "RuntimeError: hipErrorNoDevice"}
    finding = check_jax(_context(tmp_path, broken))
    assert finding.status == "fail" and "hipErrorNoDevice" in finding.summary
    hung = check_jax(_context(tmp_path, None, error="timed out after 60s"))
    assert hung.status == "warn" and "timed out" in hung.summary
