"""A CUDA source's own `__device__` definition of an atomic HIP's runtime header already defines
(`void atomicMax(float*, float)`, written because CUDA has no float atomicMax) is a build error under
hipcc; the table of HIP's atomics is read from HIP's own header (benchmarks/port_hip_atomics.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rocmkit.port import PortConfig, hip_atomics, scan_project

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import port_hip_atomics

CAS_LOOP = """{
  int* a = (int*)address; int old = *a, assumed;
  do { assumed = old;
       old = atomicCAS(a, assumed, __float_as_int(fmaxf(val, __int_as_float(assumed))));
  } while (assumed != old);
}
"""
OWN_ATOMIC_MAX = (
    "#include <hip/hip_runtime.h>\n__device__ void atomicMax(float* address, float val) " + CAS_LOOP
)
KERNEL = "__global__ void k(float* x) { atomicMax(x, 1.0f); }\n"


def _findings(tmp_path: Path, source: str) -> list[tuple[int, str]]:
    path = tmp_path / "kernels.cu"
    path.write_text(source)
    report = scan_project(PortConfig(path=path, show_info=True))
    return [(f.line, f.severity) for f in report.findings if f.rule_id == "hip-atomic-redefinition"]


def test_the_table_is_what_hips_own_header_defines() -> None:
    if not port_hip_atomics.HEADER.is_file():
        pytest.skip("needs HIP's headers (libamdhip64-dev)")
    rows = hip_atomics.read_header(port_hip_atomics.HEADER.read_text(encoding="utf-8"))
    committed = hip_atomics.table()
    assert {
        (r["name"], tuple(r["parameters"].split(", "))): r["returns"] for r in rows
    } == committed
    assert committed[("atomicMax", ("float*", "float"))] == "float"


@pytest.mark.parametrize(
    ("params", "types"),
    [
        ("float* address, float val", ("float*", "float")),
        ("float *address, const float val", ("float*", "float")),
        (
            "unsigned long long int* p, unsigned long long int v",
            ("unsigned long long*", "unsigned long long"),
        ),
        ("double* __restrict__ out, double", ("double*", "double")),
        ("unsigned *p, unsigned v", ("unsigned int*", "unsigned int")),
    ],
)
def test_parameter_types_are_spelled_one_way(params: str, types: tuple[str, ...]) -> None:
    assert hip_atomics.parameter_types(params) == types


def test_an_own_float_atomic_max_is_an_error_at_its_definition(tmp_path: Path) -> None:
    assert _findings(tmp_path, OWN_ATOMIC_MAX + KERNEL) == [(2, "error")]


@pytest.mark.parametrize(
    "source",
    [
        # behind the project's own HIP switch: AMD uses HIP's overload
        "#ifndef __HIP_PLATFORM_AMD__\n" + OWN_ATOMIC_MAX.split("\n", 1)[1] + "#endif\n" + KERNEL,
        # another overload (a half value): HIP has none, no clash
        "__device__ void atomicAdd(float* address, c10::Half val) { atomicAdd(address, float(val)); }\n",
        # a call, not a definition
        KERNEL,
    ],
)
def test_no_error_where_hipcc_compiles_it(tmp_path: Path, source: str) -> None:
    assert [f for f in _findings(tmp_path, source) if f[1] != "info"] == []


def test_a_definition_for_old_nvidia_archs_only_is_info(tmp_path: Path) -> None:
    source = (
        "#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 600\n#else\n"
        "__device__ double atomicAdd(double* address, double val) { return 0; }\n#endif\n"
    )
    assert _findings(tmp_path, source) == [(3, "info")]


@pytest.mark.skipif(shutil.which("hipcc") is None, reason="needs hipcc")
def test_hipcc_itself_rejects_what_port_reports_and_compiles_the_guarded_form(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "HIP_PLATFORM": "amd"}

    def compiles(source: str) -> bool:
        path = tmp_path / "k.hip"
        path.write_text(source)
        command = ["hipcc", "--offload-arch=gfx90a", "-c", str(path), "-o", str(tmp_path / "k.o")]
        return subprocess.run(command, env=env, capture_output=True, timeout=300).returncode == 0

    guarded = "#ifndef __HIP_PLATFORM_AMD__\n" + OWN_ATOMIC_MAX.split("\n", 1)[1] + "#endif\n"
    assert not compiles(OWN_ATOMIC_MAX + KERNEL)
    assert compiles("#include <hip/hip_runtime.h>\n" + guarded + KERNEL)
