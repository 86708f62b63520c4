"""scripts/install's torch choice, decided offline: the probes are fakes, no network is used."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _torch_choice() -> ModuleType:
    spec = importlib.util.spec_from_file_location("torch_choice", ROOT / "scripts/torch_choice.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tc = _torch_choice()


def _unused() -> bool:
    raise AssertionError("this probe must not run")


def test_no_gpu_and_the_cpu_index_answers_gives_the_cpu_wheels() -> None:
    spec, why = tc.choose({}, gpu_seen=lambda: None, cpu_index_ok=lambda: True)
    assert (
        spec == "torch==2.14.1 torchvision==0.29.1 --index-url https://download.pytorch.org/whl/cpu"
    )
    assert "CPU-only" in why


def test_no_gpu_and_no_cpu_index_falls_back_to_pypi_in_one_line() -> None:
    spec, why = tc.choose({}, gpu_seen=lambda: None, cpu_index_ok=lambda: False)
    assert spec == "torch==2.14.1 torchvision==0.29.1"
    assert "\n" not in why and "CPU index is unreachable" in why and "default" in why


def test_a_gpu_driver_keeps_the_default_build_without_probing_the_index() -> None:
    spec, why = tc.choose({}, gpu_seen=lambda: "/dev/kfd", cpu_index_ok=_unused)
    assert "--index-url" not in spec and "/dev/kfd" in why


def test_rocmkit_torch_spec_wins() -> None:
    env = {"ROCMKIT_TORCH_SPEC": "torch --index-url https://download.pytorch.org/whl/rocm6.4"}
    spec, _ = tc.choose(env, gpu_seen=_unused, cpu_index_ok=_unused)
    assert spec == env["ROCMKIT_TORCH_SPEC"]


def test_gpu_driver_seen_from_device_files_or_a_tool_that_answers() -> None:
    nothing = tc.gpu_driver_seen(find=lambda pattern: [], answers=lambda command: False)
    assert nothing is None
    kfd = tc.gpu_driver_seen(
        find=lambda pattern: ["/dev/kfd"] if pattern == "/dev/kfd" else [],
        answers=lambda command: False,
    )
    assert kfd == "/dev/kfd"
    smi = tc.gpu_driver_seen(find=lambda pattern: [], answers=lambda c: c[0] == "nvidia-smi")
    assert smi == "nvidia-smi"


def test_a_hanging_index_probe_gives_up_in_time() -> None:
    def hang(url: str, timeout: float) -> bool:
        time.sleep(30)  # a DNS lookup that never answers ignores socket timeouts
        return True

    start = time.monotonic()
    assert tc.index_reachable(timeout=0.2, fetch=hang) is False
    assert time.monotonic() - start < 2
    assert tc.PROBE_TIMEOUT_S <= 5


def test_a_failing_index_probe_is_unreachable() -> None:
    def refuse(url: str, timeout: float) -> bool:
        raise OSError("Name or service not known")

    assert tc.index_reachable(fetch=refuse) is False


def test_the_script_prints_the_spec_on_stdout_and_why_on_stderr() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts/torch_choice.py")],
        env={"ROCMKIT_TORCH_SPEC": "torch==2.14.1", "PATH": ""},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == "torch==2.14.1\n" and done.stderr.count("\n") == 1


def test_install_refuses_an_unknown_option_before_doing_anything() -> None:
    done = subprocess.run(
        ["bash", str(ROOT / "scripts/install"), "--reinstal-torch"], capture_output=True, text=True
    )
    assert done.returncode == 2 and "--reinstall-torch" in done.stderr


@pytest.mark.parametrize("extra", ["jax"])
def test_all_holds_every_extra_the_default_bench_reports_on(extra: str) -> None:
    text = (ROOT / "pyproject.toml").read_text()
    all_line = next(line for line in text.splitlines() if line.startswith("all = "))
    assert extra in all_line
