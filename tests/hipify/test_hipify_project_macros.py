"""A project's flags that no AMD compile defines, followed across the tree's headers (issue 29,
field corpus: DeepSpeed's `cp.async` inline PTX under `#ifdef ASYNC_COPY_AVAILABLE`, a flag
another header defines only under `#if __CUDA_ARCH__ >= 800`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rocmkit.hipify.amd_branches import AmdFacts, dead_spans, evaluate
from rocmkit.hipify.check import compile_one, find_hipcc
from rocmkit.hipify.project import HipifyConfig, hipify_paths
from rocmkit.hipify.translate import TranslateOptions

_PTX = """#pragma once
#include "{config}"
#ifdef ASYNC_COPY
__device__ inline void copy(void* s, const void* g) {{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\\n" :: "r"(0), "l"(g));
}}
#endif
"""
_UNIT = '#include "{header}"\n__global__ void k(int* x) {{ x[0] = 1; }}\n'


def _flag_header(guard: str, other: str = "") -> str:
    return f"#pragma once\n{guard}\n#define ASYNC_COPY\n#endif\n{other}"


def _tree(root: Path, config: str, *, include_config: bool = True) -> Path:
    (root / "include").mkdir(parents=True)
    (root / "include" / "config.h").write_text(config)
    (root / "include" / "copy.h").write_text(
        _PTX.format(config="config.h" if include_config else "unrelated.h")
    )
    (root / "unit.cu").write_text(_UNIT.format(header="include/copy.h"))
    return root


def _ptx_kinds(root: Path) -> list[tuple[str, str]]:
    report = hipify_paths(HipifyConfig(paths=(root,), options=TranslateOptions(hip_version="5.2")))
    return [(d.kind, d.message) for d in report.diagnostics if d.category == "inline-ptx"]


@pytest.mark.parametrize(
    "guard",
    [
        "#if __CUDA_ARCH__ >= 800",
        "#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 800)",
        "#ifndef __HIP_PLATFORM_AMD__",
        "#if defined(__NVCC__)",
        "#if !defined(__HIPCC__) && !defined(USE_ROCM)",
        "#if CUDART_VERSION >= 11000 && !defined(__HIP_DEVICE_COMPILE__) && __CUDA_ARCH__",
    ],
)
def test_ptx_under_a_flag_only_cuda_code_defines_is_a_note(tmp_path, guard):
    found = _ptx_kinds(_tree(tmp_path, _flag_header(guard)))
    assert found and all(kind == "note" for kind, _ in found), found
    assert "ASYNC_COPY is defined only at include/config.h:3" in found[0][1]


def test_a_flag_defined_under_another_dead_flag_is_dead_too(tmp_path):
    chained = (
        "#pragma once\n#ifdef __HIP_PLATFORM_AMD__\n#define WIDE 64\n#else\n#define CUDA_PATH\n"
        "#endif\n#ifdef CUDA_PATH\n#define ASYNC_COPY\n#endif\n"
    )
    found = _ptx_kinds(_tree(tmp_path, chained))
    assert [kind for kind, _ in found] == ["note"]
    assert "CUDA_PATH is defined only at include/config.h:5" in found[0][1]


def test_a_third_file_that_includes_both_makes_them_meet(tmp_path):
    root = _tree(tmp_path, _flag_header("#if __CUDA_ARCH__ >= 800"), include_config=False)
    (root / "unit.cu").write_text(
        '#include "include/config.h"\n' + _UNIT.format(header="include/copy.h")
    )
    assert [kind for kind, _ in _ptx_kinds(root)] == ["note"]


@pytest.mark.parametrize(
    "config",
    [
        # live on AMD: the device pass reads __CUDA_ARCH__ as 600
        _flag_header("#if __CUDA_ARCH__ >= 530"),
        # an unknown project macro may be set on the build line
        _flag_header("#ifdef ENABLE_ASYNC"),
        _flag_header("#if __CUDA_ARCH__ >= 800 || defined(FORCE_ASYNC)"),
        # also defined where AMD compiles
        _flag_header(
            "#ifndef __HIP_PLATFORM_AMD__", "#ifdef __HIPCC__\n#define ASYNC_COPY\n#endif\n"
        ),
        # never defined in the tree: a -D flag
        "#pragma once\n",
    ],
)
def test_ptx_under_a_flag_amd_may_define_stays_a_warning(tmp_path, config):
    assert [kind for kind, _ in _ptx_kinds(_tree(tmp_path, config))] == ["hazard"]


def test_a_dead_flag_in_a_file_that_never_meets_the_use_is_not_followed(tmp_path):
    # config.h defines the flag dead on AMD, but no file brings config.h and copy.h together:
    # the flag copy.h tests is some other build's (-DASYNC_COPY), not this one.
    root = _tree(tmp_path, _flag_header("#if __CUDA_ARCH__ >= 800"), include_config=False)
    assert [kind for kind, _ in _ptx_kinds(root)] == ["hazard"]


def test_translate_alone_takes_the_flags_from_its_options():
    text = _PTX.format(config="config.h")
    why = (("ASYNC_COPY", "ASYNC_COPY is defined only at config.h:3 under `#if X`"),)
    from rocmkit.hipify import translate

    kinds = [d.kind for d in translate(text).diagnostics if d.category == "inline-ptx"]
    assert kinds == ["hazard"]
    options = TranslateOptions(amd_undefined_macros=why)
    found = [d for d in translate(text, options=options).diagnostics if d.category == "inline-ptx"]
    assert [d.kind for d in found] == ["note"] and "config.h:3" in found[0].message


@pytest.mark.parametrize(
    ("condition", "device", "host"),
    [
        ("__CUDA_ARCH__ >= 800", False, False),
        ("__CUDA_ARCH__ >= 530", True, False),
        ("defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 700", True, False),
        ("!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 600", True, True),
        ("__CUDACC_VER_MAJOR__ >= 11", False, False),
        ("defined __HIPCC__", True, True),
        ("X || defined(__HIP_PLATFORM_AMD__)", True, True),
        ("X && !defined(__HIP_PLATFORM_AMD__)", False, False),
        ("X", None, None),
        ("FOO(1) > 2", None, None),
        ("(__CUDA_ARCH__ / 100) == 6 ? 1 : 0", True, False),
        ("0x10 > 010", True, True),
        ("'a' == 97", None, None),
        # C++'s alternative tokens: and, or, not, not_eq ([lex.digraph])
        ("__CUDA_ARCH__ < 600 and defined(__CUDA_ARCH__)", False, False),
        ("X or defined __HIPCC__", True, True),
        ("not defined(__HIPCC__)", False, False),
        ("__CUDACC_VER_MAJOR__ not_eq 0", False, False),
    ],
)
def test_conditions_are_evaluated_for_both_passes(condition, device, host):
    facts = AmdFacts(frozenset({"__CUDACC_VER_MAJOR__"}))
    assert evaluate(condition, facts, device=True) is device
    assert evaluate(condition, facts, device=False) is host


def test_an_elif_after_a_dead_branch_is_read_by_the_compiler():
    text = "#if __CUDA_ARCH__ >= 800\na\n#elif X\nb\n#else\nc\n#endif\n"
    spans = dead_spans(text)
    assert [text[s:e].strip() for s, e, _ in spans] == ["a"]
    assert "`#if __CUDA_ARCH__ >= 800`" in spans[0][2]


def test_a_directive_inside_a_dead_branch_is_dead_with_it():
    text = "#ifndef __HIP_PLATFORM_AMD__\n#if __CUDA_ARCH__ >= 530\na\n#endif\n#endif\nb\n"
    (span,) = dead_spans(text)
    assert (
        "#if __CUDA_ARCH__ >= 530" in text[span[0] : span[1]] and "b" not in text[span[0] : span[1]]
    )


def test_the_translated_tree_compiles_where_the_flag_is_dead(tmp_path):
    hipcc = find_hipcc()
    if hipcc is None:
        pytest.skip("hipcc is not installed")
    root = _tree(tmp_path / "src", _flag_header("#if __CUDA_ARCH__ >= 800"))
    out = tmp_path / "out"
    hipify_paths(
        HipifyConfig(paths=(root,), output_dir=out, options=TranslateOptions(hip_version="5.2"))
    )
    answers: list[subprocess.CompletedProcess[str]] = []

    def run(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        answers.append(subprocess.run(command, env=env, capture_output=True, text=True))
        return answers[-1]

    result = compile_one(out / "unit.cu", arch="gfx90a", hipcc=hipcc, runner=run)
    assert result.ok, answers[0].stderr
    # the same tree with the flag set on the command line: the PTX is compiled, and fails
    result = compile_one(
        out / "unit.cu", arch="gfx90a", hipcc=hipcc, extra_flags=("-DASYNC_COPY",), runner=run
    )
    assert not result.ok
