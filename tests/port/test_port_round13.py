"""Round thirteen (a): what test22/test23 missed or over-reported, each mechanism from its
emitter's definition, with a case that applies and one that must not."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan
from port_helpers import shown as _shown

# -- nvidia-smi: a module-level command string launched from a function ----------------------------

_SMI_WRAPPER = """import shlex
import subprocess

GET_GPUS = "nvidia-smi --query-gpu=index,name --format=csv,noheader"
GET_PROCS = "nvidia-smi --query-compute-apps=pid --format=csv,noheader"


def gpus():
    return subprocess.check_output(shlex.split(GET_GPUS))


def processes():
    out = subprocess.check_output(GET_PROCS.split())
    return out.decode()
"""


def test_a_command_string_launched_from_functions_is_reported_at_each_launch(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path, {"smi.py": _SMI_WRAPPER})
    lines = {line for _, line, rule, _ in _shown(report) if rule == "nvidia-smi"}
    assert lines == {9, 13}  # the launches, not the constants (lines 4, 5)


def test_a_command_string_no_function_launches_stays_at_the_string(tmp_path: Path) -> None:
    text = (
        'import subprocess\n\nGET = "nvidia-smi -L"\n\n\ndef other():\n    subprocess.run(["ls"])\n'
    )
    report = _scan(tmp_path, {"smi.py": text})
    assert {line for _, line, rule, _ in _shown(report) if rule == "nvidia-smi"} == {3}


# -- an assert that refuses ROCm -------------------------------------------------------------------

_HIP_REFUSED = """import torch


def attention_with_lse(q, k, v):
    assert q.device.type == "cuda", "Must be CUDA tensors"
    assert torch.version.hip is None, "HIP is not supported"
    return torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, None, True)
"""


def test_an_assert_that_torch_version_hip_is_none_rejects_rocm(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"ops.py": _HIP_REFUSED})
    assert ("ops.py", 6, "torch-version-cuda", "warn") in _shown(report)


def test_an_assert_that_requires_hip_is_no_finding(tmp_path: Path) -> None:
    text = "import torch\n\nassert torch.version.hip is not None, 'build the ROCm wheel here'\n"
    text += "assert torch.version.hip == '6.4'\n"
    report = _scan(tmp_path, {"check_rocm_wheel.py": text})
    assert _shown(report) == set()


# -- Numba's CUDA target reached through names imported from it ------------------------------------

_NUMBA_FROM_TARGET = """import numpy as np
from numba.cuda import jit, grid


@jit
def scale(x):
    x[grid(1)] *= 2
"""


def test_kernels_written_with_a_jit_imported_from_numba_cuda_are_an_error(tmp_path: Path) -> None:
    aliased = "from numba import cuda as nc\n\n\n@nc.jit\ndef k(x):\n    x[0] = 1\n"
    report = _scan(tmp_path, {"kern.py": _NUMBA_FROM_TARGET, "alias.py": aliased})
    shown = _shown(report)
    assert ("kern.py", 2, "numba-cuda", "error") in shown
    assert ("alias.py", 1, "numba-cuda", "error") in shown


def test_a_name_from_numba_cuda_that_only_probes_or_the_cpu_jit_is_no_warning(
    tmp_path: Path,
) -> None:
    probe = "from numba.cuda import is_available, jit\n\nUSE_GPU = is_available()\n\n\n@jit\ndef f(x):\n    x[0] = 1\n"
    cpu = "from numba import jit\n\n\n@jit(nopython=True)\ndef f(x):\n    return x + 1\n"
    report = _scan(tmp_path, {"probe.py": probe, "cpu.py": cpu})
    assert _shown(report) == set()
    assert [f.severity for f in report.findings if f.rule_id == "numba-cuda"] == ["info"]
