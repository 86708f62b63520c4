"""The pure translator: whole tokens only, comments/literals untouched, includes, reports, launches."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import rocmkit
from rocmkit.errors import UserError
from rocmkit.hipify import TranslateOptions, load_table, translate
from rocmkit.hipify.lexer import LineIndex, mask_protected, tokenize


def test_identifiers_are_translated_only_as_whole_tokens():
    source = "cudaMalloc(&p, n); my_cudaMalloc(); cudaMallocX(); x.cudaFree_(); cudaFree(p);"
    out = translate(source, options=TranslateOptions(add_runtime_include=False)).text
    assert out == "hipMalloc(&p, n); my_cudaMalloc(); cudaMallocX(); x.cudaFree_(); hipFree(p);"


def test_comments_and_literals_are_never_changed():
    source = (
        "// cudaMalloc here\n"
        "/* cudaFree\n cudaMemcpy */\n"
        'const char* s = "cudaMalloc failed: \\"cudaFree\\"";\n'
        'char c = \'c\'; auto raw = R"x(cudaMalloc " )" cudaFree)x";\n'
        "// continued comment \\\ncudaMalloc on a spliced line\n"
        "cudaDeviceSynchronize();\n"
    )
    out = translate(source, options=TranslateOptions(add_runtime_include=False)).text
    assert out == source.replace("cudaDeviceSynchronize", "hipDeviceSynchronize")


def test_translate_strings_option_rewrites_names_inside_strings_only_when_asked():
    source = 'printf("cudaMalloc failed"); // cudaMalloc\n'
    options = TranslateOptions(translate_strings=True, add_runtime_include=False)
    assert translate(source, options=options).text == 'printf("hipMalloc failed"); // cudaMalloc\n'


def test_include_paths_are_rewritten_inside_directives_only():
    source = (
        "#include <cublas_v2.h>\n"
        '#  include "cufft.h"\n'
        "#include <cub/cub.cuh>\n"
        "#include <nccl.h>\n"
        "#include <my/cuda_runtime.h>\n"
        'const char* h = "cuda_runtime.h";\n'
    )
    out = translate(source, options=TranslateOptions(add_runtime_include=False)).text
    assert out.splitlines() == [
        "#include <hipblas/hipblas.h>",
        '#  include "hipfft/hipfft.h"',
        "#include <hipcub/hipcub.hpp>",
        "#include <rccl/rccl.h>",
        "#include <my/cuda_runtime.h>",
        'const char* h = "cuda_runtime.h";',
    ]


def test_runtime_include_is_added_once_after_leading_comments_and_pragma_once():
    source = "// Copyright\n/* licence\n text */\n#pragma once\n\n#include <cstdio>\n__global__ void k() {}\n"
    first = translate(source)
    assert first.stats.runtime_include_added
    assert first.text.startswith(
        "// Copyright\n/* licence\n text */\n#pragma once\n\n#include <hip/hip_runtime.h>\n#include <cstdio>"
    )
    assert translate(first.text).text == first.text


def test_no_runtime_include_for_plain_host_code_or_when_one_is_present():
    assert translate("int main() { return 0; }\n").text == "int main() { return 0; }\n"
    source = "#include <cuda_runtime.h>\nint main() { cudaDeviceReset(); }\n"
    assert (
        translate(source).text == "#include <hip/hip_runtime.h>\nint main() { hipDeviceReset(); }\n"
    )


def test_runtime_header_goes_before_other_hip_headers():
    """HIP 5.2's cooperative groups header fails unless hip_runtime.h came first."""
    source = "#include <cooperative_groups.h>\n#include <cuda_runtime.h>\n__global__ void k() {}\n"
    out = translate(source).text
    assert out.index("hip/hip_runtime.h") < out.index("hip/hip_cooperative_groups.h")


def test_unconverted_names_are_reported_with_position_and_category():
    source = "int main() {\n  cudaFrobnicate(1);\n  cublasFoo_v9(h);\n  CU_MADE_UP;\n}\n"
    result = translate(source, options=TranslateOptions(add_runtime_include=False))
    found = [(d.kind, d.name, d.line, d.column, d.category) for d in result.diagnostics]
    assert found == [
        ("unconverted", "cudaFrobnicate", 2, 3, "runtime"),
        ("unconverted", "cublasFoo_v9", 3, 3, "cuBLAS"),
        ("unconverted", "CU_MADE_UP", 4, 3, "driver"),
    ]
    assert result.stats.unconverted == {"runtime": 1, "cuBLAS": 1, "driver": 1}


def test_names_the_file_defines_itself_are_not_reported():
    source = (
        "#define CUDA_CHECK(x) x\n"
        "struct cudaHelper {};\n"
        "static void cudaCheckLast(int line) {}\n"
        "void f() { CUDA_CHECK(cudaCheckLast(1)); cudaHelper h; }\n"
    )
    result = translate(source, options=TranslateOptions(add_runtime_include=False))
    assert [d for d in result.diagnostics if d.kind == "unconverted"] == []


def test_nccl_names_are_kept_since_rccl_exports_them():
    result = translate("ncclAllReduce(a, b, n, ncclFloat, ncclSum, comm, s);")
    assert "ncclAllReduce" in result.text
    assert [d for d in result.diagnostics if d.kind == "unconverted"] == []


def test_namespaces_cub_and_thrust_cuda():
    source = "cub::DeviceReduce::Sum(); thrust::cuda::par; cuda::std::atomic<int> a; int cub = 1;"
    result = translate(source, options=TranslateOptions(add_runtime_include=False))
    assert (
        result.text
        == "hipcub::DeviceReduce::Sum(); thrust::hip::par; cuda::std::atomic<int> a; int cub = 1;"
    )
    assert [d.name for d in result.diagnostics] == ["cuda::"]


def test_statistics_are_kept_by_category():
    source = "cudaMalloc(p); cudaFree(p); cuInit(0); cublasSgemm(h); curand_init(1, 2, 3, s);"
    stats = translate(source, options=TranslateOptions(add_runtime_include=False)).stats
    assert stats.converted == {"runtime": 2, "driver": 1, "cuBLAS": 1, "cuRAND": 1}
    assert stats.num_converted == 5


@pytest.mark.parametrize(
    ("code", "rule"),
    [
        ("v = __shfl_xor_sync(0xffffffff, v, 1);", "warp-full-mask"),
        ("unsigned m = __ballot_sync(mask, p);", "warp-ballot-width"),
        ("unsigned m = __activemask();", "warp-ballot-width"),
        ("int lane = threadIdx.x & 31;", "warp-lane-arithmetic"),
        ("int warp = threadIdx.x / 32;", "warp-lane-arithmetic"),
        ("#define WARP_SIZE 32", "warp-size-literal"),
        ("constexpr int kWarpSize = 32;", "warp-size-literal"),
        ('asm volatile("mov.u32 %0, %%laneid;" : "=r"(id));', "inline-ptx"),
    ],
)
def test_warp_size_hazards_are_flagged(code, rule):
    result = translate(code + "\n", options=TranslateOptions(add_runtime_include=False))
    assert rule in {d.category for d in result.diagnostics if d.kind == "hazard"}


def test_hazards_ignore_comments_and_warpsize_code():
    code = "// lane = threadIdx.x & 31\nint lane = threadIdx.x % warpSize; /* 0xffffffff */\n"
    result = translate(code, options=TranslateOptions(add_runtime_include=False))
    assert [d for d in result.diagnostics if d.kind == "hazard"] == []


@pytest.mark.parametrize(
    ("launch", "expected"),
    [
        ("k<<<g, b>>>(x);", "hipLaunchKernelGGL(k, dim3(g), dim3(b), 0, 0, x);"),
        ("k<<<g, b, s>>>();", "hipLaunchKernelGGL(k, dim3(g), dim3(b), s, 0);"),
        (
            "ns::k<T, Foo<int, 2>><<<dim3(a, b), f(c, d), 0, st>>>(g(x, y), z[1, 2]);",
            "hipLaunchKernelGGL((ns::k<T, Foo<int, 2>>), dim3(a, b), dim3(f(c, d)), 0, st, g(x, y), z[1, 2]);",
        ),
        (
            'k<<<1, 2>>>(")", /* ) */ x);',
            'hipLaunchKernelGGL(k, dim3(1), dim3(2), 0, 0, ")", /* ) */ x);',
        ),
    ],
)
def test_launch_rewriting(launch, expected):
    options = TranslateOptions(launch="hip", add_runtime_include=False)
    result = translate(launch, options=options)
    assert result.text == expected
    assert result.stats.num_launches_rewritten == 1
    assert translate(result.text, options=options).text == result.text


def test_launch_kept_by_default_and_chevrons_in_comments_ignored():
    source = "// k<<<1, 1>>>(x);\nk<<<1, 1>>>(x);\n"
    assert translate(source, options=TranslateOptions(add_runtime_include=False)).text == source
    out = translate(source, options=TranslateOptions(launch="hip", add_runtime_include=False)).text
    assert out == "// k<<<1, 1>>>(x);\nhipLaunchKernelGGL(k, dim3(1), dim3(1), 0, 0, x);\n"


def test_bad_options_are_user_errors():
    with pytest.raises(UserError, match="launch"):
        TranslateOptions(launch="chevrons")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="mappings"):
        TranslateOptions(mappings="torch")  # type: ignore[arg-type]


def test_lexer_token_kinds():
    source = 'a // c\n"s" \'x\' 1\'000 R"d(q"uote)d" #include <x.h>\n#include "y.h"\nb'
    kinds = [(t.kind, t.text) for t in tokenize(source)]
    assert kinds == [
        ("ident", "a"),
        ("comment", "// c"),
        ("string", '"s"'),
        ("char", "'x'"),
        ("raw", 'R"d(q"uote)d"'),
        ("include", "#include <x.h>"),
        ("include", '#include "y.h"'),
        ("ident", "b"),
    ]


def test_mask_keeps_offsets_and_line_index_is_one_based():
    source = 'x = "a(b";\n// (\ny'
    masked = mask_protected(source)
    assert len(masked) == len(source) and masked.count("\n") == 2 and "(" not in masked
    assert LineIndex(source).position(source.index("y")) == (3, 1)


def test_mapping_table_has_no_chains_and_reads_torch_without_importing_it():
    table = load_table()
    chained = [n for n, m in table.identifiers.items() if m.hip != n and m.hip in table.identifiers]
    assert chained == []
    assert len(load_table("builtin").identifiers) > 700


def test_no_mapping_maps_a_name_to_itself():
    # The scan turns every mapped name into an edit: a self-mapping would mark unchanged files
    # changed and count conversions that did not happen.
    for source in ("auto", "builtin"):
        table = load_table(source)
        assert [n for n, m in table.identifiers.items() if m.hip == n] == [], source
    assert not translate("hipMalloc(&p, 4);\n").changed


def test_hipify_never_imports_torch():
    src = Path(rocmkit.__file__).resolve().parent.parent
    code = (
        "import sys; from rocmkit.hipify import translate, load_table; "
        "translate('cudaMalloc(p);'); print(len(load_table().sources)); "
        "import rocmkit.hipify.project, rocmkit.hipify.check, rocmkit.cli.hipify; "
        "print('torch' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(src)},
        check=True,
    )
    assert done.stdout.split()[-1] == "False"


def test_known_gaps_are_reported_with_the_reason():
    source = "cudaArrayGetInfo(0, 0, 0, a); cudaNoSuchThing(&p);\n"
    options = TranslateOptions(add_runtime_include=False, hip_version="5.2")
    result = translate(source, options=options)
    assert result.text == source
    found = {d.name: (d.kind, d.message) for d in result.diagnostics}
    assert found["cudaArrayGetInfo"] == (
        "unsupported",
        "hipArrayGetInfo is not declared by HIP 5.2's headers",
    )
    assert found["cudaNoSuchThing"][0] == "unconverted"


@pytest.mark.parametrize(
    ("code", "rule", "column", "snippet"),
    [
        ("static const int kWarpSize = 32;", "warp-size-literal", 18, "kWarpSize = 32"),
        ("int my_warp_size{32};", "warp-size-literal", 5, "my_warp_size{32"),
        ("  #define HALF_WARP 32", "warp-size-literal", 3, "#define HALF_WARP 32"),
        ('__asm__ __volatile__("bar.sync 0;");', "inline-ptx", 1, "__asm__ __volatile__("),
        ('x = 1; asm("exit;");', "inline-ptx", 8, "asm("),
        ('__device__ void f() { asm("s_nop 0"); }', "inline-ptx", 23, "asm("),
    ],
)
def test_hazards_are_reported_from_where_the_code_starts(code, rule, column, snippet):
    # The patterns start with a literal for speed; the report still starts at the identifier.
    hazards = [d for d in translate(code + "\n").diagnostics if d.kind == "hazard"]
    assert [(d.category, d.column, d.name) for d in hazards] == [(rule, column, snippet)]


@pytest.mark.parametrize(
    "code",
    ["int myasm(int);\nint v = myasm(1);\n", "int kWarpSizeHint = 320;\n", '// asm("x")\n'],
)
def test_hazard_look_alikes_are_not_reported(code):
    assert not [d for d in translate(code).diagnostics if d.kind == "hazard"]


def test_call_arguments_skip_brackets_in_comments_and_literals():
    from rocmkit.hipify.lexer import call_arguments

    text = "f(a, \")\", /* , ) */ g(b, c), '(' // ,)\n , d); e;"
    spans = call_arguments(text, 2)
    assert [text[s:e].strip() for s, e in spans] == [
        "a",
        '")"',
        "/* , ) */ g(b, c)",
        "'(' // ,)",
        "d",
    ]
    assert call_arguments("f(a; b)", 2) is None  # a `;` first: not a call's arguments
    assert call_arguments("f(a, b", 2) is None  # never closed
