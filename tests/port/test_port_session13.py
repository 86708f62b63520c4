"""Issue 26, session thirteen: each change from a definition, with a case where the finding must
appear and one where it must not, on small synthetic trees."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan

from rocmkit.port.findings import PortFinding


def _by_line(root: Path, files: dict[str, str], rule: str) -> dict[int, PortFinding]:
    report = _scan(root, files)
    return {line: f for f in report.findings if f.rule_id == rule for line in f.lines}


# flash-attn's idiom (also flash-mla, quant-matmul, power-attention): a helper appends nvcc's
# --threads to the nvcc list it is given, and the build calls it in extra_compile_args.
_THREADS = """import os
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension


def append_nvcc_threads(nvcc_extra_args):
    nvcc_threads = os.getenv("NVCC_THREADS") or "4"
    return nvcc_extra_args + ["--threads", nvcc_threads]


{build}
setup(name="demo", ext_modules=ext_modules, cmdclass={{"build_ext": BuildExtension}})
"""
_PLAIN = """ext_modules = [
    CUDAExtension(
        "demo._C",
        ["demo.cu"],
        extra_compile_args={"cxx": ["-O3"], "nvcc": append_nvcc_threads(["-O3"])},
    )
]
"""
_SWITCHED = """import torch
if torch.version.hip:
    nvcc = ["-O3"]
else:
    nvcc = append_nvcc_threads(["-O3"])
ext_modules = [CUDAExtension("demo._C", ["demo.cu"], extra_compile_args={"nvcc": nvcc})]
"""


def test_an_nvcc_flag_a_helper_returns_is_reported_where_the_helper_writes_it(
    tmp_path: Path,
) -> None:
    found = _by_line(tmp_path, {"setup.py": _THREADS.format(build=_PLAIN)}, "nvcc-only-flags")
    assert found[8].severity == "warn"  # the helper's `return ... + ["--threads", n]`
    assert found[15] is found[8]  # the call that hands it to nvcc: one finding, both places
    assert "--threads" in found[8].evidence


def test_a_helper_called_only_on_the_cuda_side_of_a_switch_is_info_at_both_places(
    tmp_path: Path,
) -> None:
    found = _by_line(tmp_path, {"setup.py": _THREADS.format(build=_SWITCHED)}, "nvcc-only-flags")
    assert found[15].severity == "info"  # the call, on the CUDA side
    assert 8 not in found  # nothing raised where the helper writes it
