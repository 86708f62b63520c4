"""CUDA device functions the target HIP lacks are reported at their use (issue 29: the field
corpus's `__frcp_rd` and `__fsqrt_rd` failed to compile with no diagnostic). The list per release
is hip_names/<X.Y>.device_absent.txt (benchmarks/hipify_device_functions.py) merged with
hip_names/<X.Y>.cuda_device_absent.txt into one list (toolkit.absent_device_api)."""

from __future__ import annotations

import pytest
from hipcc_compile import compile_for_gfx90a

from rocmkit.hipify import translate
from rocmkit.hipify.project import HipifyConfig, hipify_paths
from rocmkit.hipify.toolkit import HIPIFY_TABLE, absent_device_api
from rocmkit.hipify.translate import TranslateOptions


def _reported(source: str, version: str = "5.2") -> list[tuple[int, str]]:
    result = translate(source, options=TranslateOptions(hip_version=version))
    # one list from two definitions (HIPIFY's device table, CUDA's headers against HIP's)
    return [
        (d.line, d.name)
        for d in result.diagnostics
        if d.kind == "unsupported" and d.category == "device"
    ]


@pytest.mark.parametrize("name", ["__frcp_rd", "__fsqrt_rd", "__fmaf_rd", "__dadd_ru", "__vadd4"])
def test_a_device_function_hip_lacks_is_reported_at_its_line(name):
    source = f"__global__ void k(float* x) {{\n  x[0] = 1;\n  x[1] = {name}(x[2], x[3]);\n}}\n"
    assert _reported(source) == [(3, name)]


@pytest.mark.parametrize(
    "source",
    [
        # what HIP has: the round-to-nearest forms, plain intrinsics
        "__global__ void k(float* x) { x[0] = __frcp_rn(x[1]) + __fsqrt_rn(x[2]); }\n",
        "__global__ void k(float* x) { x[0] = __fmaf_rn(x[1], x[2], x[3]) + __saturatef(x[0]); }\n",
        # the project's own function of the same name
        "__device__ unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }\n"
        "__global__ void k(unsigned* y) { y[0] = umin(y[1], y[2]); }\n",
        # a comment, a string, a member of the project's struct
        '// __frcp_rd is slower\n__global__ void k(const char* s = "__frcp_rd") {}\n',
        # *_sync warp calls are lowered and reported as such, not as absent functions
        "__global__ void k(int* v) { v[0] = __shfl_down_sync(0xffffffff, v[1], 1); }\n",
    ],
)
def test_what_hip_declares_or_the_project_defines_is_quiet(source):
    assert _reported(source) == []


def test_a_release_without_hipifys_list_still_gets_the_header_derived_report():
    assert absent_device_api("6.2").sources == ("6.2.cuda_device_absent.txt",)
    # 6.2's cuda_device_absent list (CUDA's headers against HIP 6.2's) still names __frcp_rd
    source = "__global__ void k(float* x) { x[0] = __frcp_rd(x[1]); }\n"
    assert _reported(source, "6.2") == [(1, "__frcp_rd")]


def test_listed_names_are_undeclared_for_hipcc_and_the_rn_forms_compile(tmp_path):
    listed = absent_device_api("5.2").entries
    assert {"__frcp_rd", "__fsqrt_rd", "umin"} <= listed.keys()
    assert "__frcp_rn" not in listed
    body = "x[0] = __frcp_rd(x[1]) + __fsqrt_rd(x[2]);"
    failing = compile_for_gfx90a(
        translate(f"__global__ void k(float* x) {{ {body} }}\n").text, tmp_path
    )
    assert failing.returncode != 0
    for name in ("__frcp_rd", "__fsqrt_rd"):
        assert f"undeclared identifier '{name}'" in failing.stderr
    fine = body.replace("_rd", "_rn")
    passing = compile_for_gfx90a(
        translate(f"__global__ void k(float* x) {{ {fine} }}\n").text, tmp_path
    )
    assert passing.returncode == 0, passing.stderr[-400:]


def test_one_list_names_each_absent_function_with_its_source():
    absent = absent_device_api("5.2")
    assert absent.sources == ("5.2.device_absent.txt", "5.2.cuda_device_absent.txt")
    # in both lists: CUDA's header wins; only in HIPIFY's table: said so
    assert absent.entries["__frcp_rd"][0].endswith(".h")
    assert absent.entries["umin"][0] == HIPIFY_TABLE
    source = "__global__ void k(unsigned* y) { y[0] = umin(y[1], y[2]) + __frcp_rd(1.f); }\n"
    found = translate(source, options=TranslateOptions(hip_version="5.2")).diagnostics
    messages = {d.name: d.message for d in found if d.category == "device"}
    assert "in HIPIFY's device API table" in messages["umin"]
    assert "CUDA's " in messages["__frcp_rd"]


def test_a_device_function_another_file_of_the_tree_defines_is_the_projects(tmp_path):
    (tmp_path / "mine.h").write_text(
        "__device__ inline unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }\n"
    )
    (tmp_path / "k.cu").write_text(
        '#include "mine.h"\n__global__ void k(unsigned* y) { y[0] = umin(y[1], y[2]); }\n'
    )
    options = TranslateOptions(hip_version="5.2")
    report = hipify_paths(HipifyConfig(paths=(tmp_path,), options=options))
    assert [d for d in report.diagnostics if d.category == "device"] == []
    (tmp_path / "mine.h").write_text("// nothing of the name\n")
    report = hipify_paths(HipifyConfig(paths=(tmp_path,), options=options))
    assert [d.name for d in report.diagnostics if d.category == "device"] == ["umin"]
