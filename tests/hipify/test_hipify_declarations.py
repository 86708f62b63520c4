"""Names a project declares itself that look like CUDA's are not reported as unconverted (issue
29: variables such as `cudaArray* cuArray`, namespaces such as pycuda's `curandom`, functions such
as `std::string cuFileGetErrorString(T)`); uses of CUDA's own names still are."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmkit.hipify import translate
from rocmkit.hipify.project import HipifyConfig, hipify_paths


def _unconverted(source: str) -> list[str]:
    return [d.name for d in translate(source).diagnostics if d.kind == "unconverted"]


@pytest.mark.parametrize(
    "source",
    [
        "void f() { cudaArray* cuArray = 0; use(cuArray); }\n",
        "void f(cudaArray *cuArray, int n) { use(cuArray); }\n",
        "namespace pycuda { namespace curandom { int x; } }\nusing namespace pycuda::curandom;\n",
        'template <class T> std::string cuFileGetErrorString(T s) { return ""; }\n'
        "void g() { cuFileGetErrorString(3); }\n",
        "dlib::tensor_descriptor cudnn_descriptor;\nvoid g() { cudnn_descriptor.x = 1; }\n",
        "static void cuda_transpose(int n);\nvoid g() { cuda_transpose(1); }\n",
        "int cuda_compile_only = 0, other;\n",
        "py::tuple cuda_version()\n{\n  return py::make_tuple(cuda_version());\n}\n",
        "CUdevice cuDevice{};\nvoid g() { cuDeviceGet(&cuDevice, 0); }\n",
        "template <typename CURAND_TYPE>\nstruct s { CURAND_TYPE state; };\n",
        "template <typename T, typename... CURAND_ARGS> void f(CURAND_ARGS... a);\n",
        "enum generator {\n  CURAND_XOR_WOW,\n  CURAND_MRG32k3a = 2,\n  CURAND_LAST\n};\n"
        "int g(int i) { switch (i) { case CURAND_XOR_WOW: return 1; } return 0; }\n",
        "enum class Mode : int { CUDA_FAST, CUDA_SAFE };\n",
    ],
)
def test_a_name_the_file_declares_is_the_projects(source):
    assert [n for n in _unconverted(source) if n != "cuDeviceGet"] == []


@pytest.mark.parametrize(
    ("source", "name"),
    [
        ("void f() { CUresult r = cuFooBar(0); }\n", "cuFooBar"),
        ("CUresult f() { return cuFooBar(0); }\n", "cuFooBar"),
        ("void f() { x = (const cudnnFooDescriptor_t)p; }\n", "cudnnFooDescriptor_t"),
        ("struct peer : public CUDA_FOO_PEER { int x; };\n", "CUDA_FOO_PEER"),
        ("#define CALL cuFooBar(0)\n", "cuFooBar"),
        ("void f(int v) { switch (v) { case CU_FOO_BAR: break; } }\n", "CU_FOO_BAR"),
        ("void f() { if (a == cuFooBar) g(); else cuFooBar(); }\n", "cuFooBar"),
        ("int f() { return a * cuFooBar(1); }\n", "cuFooBar"),
        ("typename CUDA_FOO_T::value_type x;\n", "CUDA_FOO_T"),
        ("void f() { g({CU_FOO_BAR, 1}); }\n", "CU_FOO_BAR"),
        ("int a[] = {CU_FOO_BAR, 2};\n", "CU_FOO_BAR"),
    ],
)
def test_a_use_of_a_cuda_looking_name_is_still_reported(source, name):
    assert name in _unconverted(source)


def test_a_name_declared_in_another_file_of_the_tree_is_the_projects(tmp_path: Path):
    (tmp_path / "helpers.h").write_text("struct grid; grid* cuGrid(int n);\n")
    (tmp_path / "main.cu").write_text('#include "helpers.h"\nvoid f() { cuGrid(4); cuFooBar(); }\n')
    report = hipify_paths(HipifyConfig(paths=(tmp_path,)))
    names = [d.name for d in report.diagnostics if d.kind == "unconverted"]
    assert names == ["cuFooBar"]


def test_a_macro_the_projects_cmake_defines_is_the_projects(tmp_path: Path):
    (tmp_path / "k.cu").write_text(
        "#if CUDA_ARCH < 60\n#error old\n#endif\nint arch = CUDA_ARCH + CUDA_OTHER;\n"
    )
    report = hipify_paths(HipifyConfig(paths=(tmp_path,)))
    assert {d.name for d in report.diagnostics if d.kind == "unconverted"} == {
        "CUDA_ARCH",
        "CUDA_OTHER",
    }
    (tmp_path / "CMakeLists.txt").write_text(
        'set(CMAKE_CXX_FLAGS "${CMAKE_CXX_FLAGS} -DCUDA_ARCH=${CUDA_ARCH} -std=c++11")\n'
    )
    report = hipify_paths(HipifyConfig(paths=(tmp_path,)))
    assert [d.name for d in report.diagnostics if d.kind == "unconverted"] == ["CUDA_OTHER"]


def test_cmake_definitions_reads_flags_and_definition_commands():
    from rocmkit.hipify.cmake import cmake_definitions

    text = (
        "add_compile_definitions(CUDA_FAST=1 USE_X)\n"
        'target_compile_definitions(cuda_lib PRIVATE CUDA_SAFE PUBLIC "CU_MODE=2")\n'
        'set(FLAGS "-O2 -DCUDA_ARCH=61 -D CU_TRACE")\n'
    )
    assert cmake_definitions(text) == {
        "CUDA_FAST",
        "USE_X",
        "CUDA_SAFE",
        "CU_MODE",
        "CUDA_ARCH",
        "CU_TRACE",
    }
