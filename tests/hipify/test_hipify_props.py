"""Device properties HIP 5.2's hipDeviceProp_t lacks, and CUDA's arity overloads (issue 13)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hipcc_compile import compile_for_gfx90a

from rocmkit.hipify import TranslateOptions, translate
from rocmkit.hipify.props import object_start
from rocmkit.hipify.versions import device_prop_fields, installed_version, struct_fields

PROGRAM = """\
#include <cstdio>
int main() {
  cudaDeviceProp prop, props[2];
  cudaDeviceProp *pp = &prop;
  cudaGetDeviceProperties(&prop, 0);
  if (!prop.unifiedAddressing) printf("no UVA\\n");  // prop.asyncEngineCount stays here
  printf("%d %d\\n", props[cudaCpuDeviceId + 1].asyncEngineCount, pp->persistingL2CacheMaxSize);
  printf("prop.unifiedAddressing\\n");
  return (int)prop.sharedMemPerBlockOptin;
}
"""


def hip52(text: str) -> str:
    return translate(text, options=TranslateOptions(hip_version="5.2")).text


def test_reads_of_members_hip_5_2_lacks_get_a_substitute_and_a_finding():
    result = translate(PROGRAM, options=TranslateOptions(hip_version="5.2"))
    assert "if (!0 /* HIP 5.2: no hipDeviceProp_t::unifiedAddressing */)" in result.text
    # The object expression goes with the read, its own names included.
    assert 'printf("%d %d\\n", 0 /* HIP 5.2: no hipDeviceProp_t::asyncEngineCount */, 0 /*' in (
        result.text
    )
    assert "return (int)prop.sharedMemPerBlock;" in result.text
    # Comments and literals are never touched.
    assert "// prop.asyncEngineCount stays here" in result.text
    assert 'printf("prop.unifiedAddressing\\n");' in result.text
    found = {d.name: d for d in result.diagnostics if d.category == "device-prop"}
    assert set(found) == {
        "unifiedAddressing",
        "asyncEngineCount",
        "persistingL2CacheMaxSize",
        "sharedMemPerBlockOptin",
    }
    assert all(d.kind == "hazard" for d in found.values())
    assert (found["unifiedAddressing"].line, found["unifiedAddressing"].column) == (6, 8)
    assert "check the code it selects" in found["unifiedAddressing"].message
    assert "sharedMemPerBlock" in found["sharedMemPerBlockOptin"].message


def test_a_target_that_has_the_members_or_no_target_keeps_them():
    for version in ("6.2", None):
        text = translate(PROGRAM, options=TranslateOptions(hip_version=version)).text
        assert "prop.unifiedAddressing)" in text and "pp->persistingL2CacheMaxSize" in text


def test_the_substitution_is_idempotent():
    once = hip52(PROGRAM)
    assert hip52(once) == once


def test_a_read_inside_another_reads_object_goes_with_the_outer_one():
    source = (
        "cudaDeviceProp props[2], *pp;\nint a = props[pp->asyncEngineCount].unifiedAddressing;\n"
    )
    result = translate(source, options=TranslateOptions(hip_version="5.2"))
    assert "int a = 0 /* HIP 5.2: no hipDeviceProp_t::unifiedAddressing */;\n" in result.text
    assert sorted(d.name for d in result.diagnostics if d.category == "device-prop") == [
        "asyncEngineCount",
        "unifiedAddressing",
    ]


def test_a_file_without_device_properties_is_left_alone():
    text = "struct S { int asyncEngineCount; };\nint f(S s) { return s.asyncEngineCount; }\n"
    assert hip52(text) == text


@pytest.mark.slow
def test_the_substituted_program_compiles_with_hip_5_2(tmp_path: Path):
    if installed_version("/usr/bin/hipcc") != "5.2":
        pytest.skip("needs Debian's hipcc 5.2, the release whose members are substituted")
    done = compile_for_gfx90a(hip52(PROGRAM), tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("x = prop", "prop"),
        ("x = props[i + 1]", "props[i + 1]"),
        ("x = state->inner", "state->inner"),
        ("x = get(i)", "get(i)"),
        ("x = (*p)", "(*p)"),
        ("x = ns::prop", "ns::prop"),
        ("x = grid[a][b]", "grid[a][b]"),
    ],
)
def test_object_start_finds_the_whole_object_expression(code: str, expected: str):
    start = object_start(code, len(code))
    assert start is not None and code[start:] == expected


def test_object_start_gives_up_on_unbalanced_brackets():
    assert object_start("x = a]", len("x = a]")) is None


def test_cuda_event_create_with_flags_overload_gets_hips_function():
    source = (
        "void f(cudaEvent_t a, cudaEvent_t b) { cudaEventCreate(&a); cudaEventCreate(&b, 1u); }"
    )
    result = translate(source)
    assert "hipEventCreate(&a);" in result.text
    assert "hipEventCreateWithFlags(&b, 1u);" in result.text
    assert result.stats.converted["signature"] == 1


def test_member_lists_come_from_the_headers():
    header = """
    typedef struct hipDeviceProp_t {
        char name[256];   ///< comment; with a semicolon
        int maxThreadsDim[3];
        /* int commented; */
        unsigned int flag : 1;
    } hipDeviceProp_t;
    """
    assert struct_fields(header, "hipDeviceProp_t") == ["name", "maxThreadsDim", "flag"]
    assert "asyncEngineCount" not in device_prop_fields("5.2")
    assert "asyncEngineCount" in device_prop_fields("6.2")


def test_the_shipped_5_2_list_matches_the_installed_5_2_header():
    header = Path("/usr/include/hip/hip_runtime_api.h")
    if installed_version("/usr/bin/hipcc") != "5.2" or not header.exists():
        pytest.skip("needs Debian's HIP 5.2 headers")
    fields = struct_fields(header.read_text(), "hipDeviceProp_t")
    assert frozenset(fields) == device_prop_fields("5.2")


SYMBOL_COPIES = """\
__constant__ float table[4];
void upload(float *host, cudaStream_t stream) {
  cudaMemcpyToSymbolAsync(table, host, 16);
  cudaMemcpyToSymbolAsync(table, host, 8, 8);
  cudaMemcpyToSymbolAsync(table, host, 16, 0, cudaMemcpyHostToDevice, stream);
  cudaMemcpyFromSymbolAsync(host, table, 16 /* bytes */);
}
"""


@pytest.mark.slow
def test_async_symbol_copies_get_the_defaults_hip_does_not_declare(tmp_path: Path):
    """libKMCUDA: HIP's hipMemcpyToSymbolAsync has no defaults for offset and kind."""
    text = translate(SYMBOL_COPIES).text
    assert "hipMemcpyToSymbolAsync(table, host, 16, 0, hipMemcpyHostToDevice);" in text
    assert "hipMemcpyToSymbolAsync(table, host, 8, 8, hipMemcpyHostToDevice);" in text
    assert "hipMemcpyToSymbolAsync(table, host, 16, 0, hipMemcpyHostToDevice, stream);" in text
    assert "(host, table, 16 /* bytes */, 0, hipMemcpyDeviceToHost);" in text
    assert translate(text).text == text
    done = compile_for_gfx90a(text, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]


def test_device_overlap_gets_the_same_cautious_substitute_as_its_successor():
    # Older samples test `prop.deviceOverlap` (CUDA's predecessor of asyncEngineCount).
    source = "cudaDeviceProp prop;\nint overlap(void) { return prop.deviceOverlap ? 2 : 1; }\n"
    result = translate(source, options=TranslateOptions(hip_version="5.2"))
    assert "return 0 /* HIP 5.2: no hipDeviceProp_t::deviceOverlap */ ? 2 : 1;" in result.text
    (found,) = [d for d in result.diagnostics if d.category == "device-prop"]
    assert (found.name, found.kind, found.line) == ("deviceOverlap", "hazard", 2)
    assert "asyncEngineCount" in found.message
    assert hip52(result.text) == result.text
    # HIP 6.2's hipDeviceProp_t has the member: nothing to substitute.
    assert (
        "prop.deviceOverlap" in translate(source, options=TranslateOptions(hip_version="6.2")).text
    )


@pytest.mark.slow
def test_the_device_overlap_substitute_compiles_with_hip_5_2(tmp_path: Path):
    if installed_version("/usr/bin/hipcc") != "5.2":
        pytest.skip("needs Debian's hipcc 5.2, the release whose members are substituted")
    source = (
        "#include <cuda_runtime.h>\nint main() {\n  cudaDeviceProp prop;\n"
        "  cudaGetDeviceProperties(&prop, 0);\n  return prop.deviceOverlap ? 0 : 1;\n}\n"
    )
    done = compile_for_gfx90a(hip52(source), tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
