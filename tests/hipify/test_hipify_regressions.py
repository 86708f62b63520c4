"""Bugs found by running hipify on real-world CUDA (issue 13), each checked as a user meets it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import rocmkit
from rocmkit.hipify import TranslateOptions, project, translate
from rocmkit.hipify.project import HipifyConfig, hipify_paths

HIP_LAUNCH = TranslateOptions(launch="hip")
# "é" and "°" in Latin-1: bytes that are not valid UTF-8.
LATIN1 = (
    "// Fonction écrite par Rémi, 20 °C\n"
    "#include <cuda_runtime.h>\n"
    'const char* s = "température";\n'
    "int main() { cudaMalloc(0, 4); cudaMystery(); }\n"
).encode("latin-1")


def _hipify(*args: str | Path) -> subprocess.CompletedProcess[bytes]:
    src = Path(rocmkit.__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(src))
    command = [sys.executable, "-m", "rocmkit", "hipify", *map(str, args)]
    return subprocess.run(command, capture_output=True, env=env, check=False)


def test_a_line_comment_before_the_closing_paren_keeps_the_paren():
    source = "void f() {\n  k<<<1, 2>>>(a, // first\n    b // last\n  );\n  g();\n}\n"
    text = translate(source, options=HIP_LAUNCH).text
    assert "hipLaunchKernelGGL(k, dim3(1), dim3(2), 0, 0, a, // first\n    b // last\n);" in text
    assert "\n  g();" in text
    assert translate(text, options=HIP_LAUNCH).text == text  # still idempotent


def test_a_comment_marker_inside_a_string_argument_is_not_a_comment():
    text = translate('void f() { k<<<1, 2>>>("a//b"); }\n', options=HIP_LAUNCH).text
    assert 'hipLaunchKernelGGL(k, dim3(1), dim3(2), 0, 0, "a//b");' in text


@pytest.mark.slow
def test_latin1_file_to_stdout_is_translated_with_its_bytes_kept(tmp_path):
    source = tmp_path / "k.cu"
    source.write_bytes(LATIN1)
    done = _hipify(source)
    assert done.returncode == 0, done.stderr
    expected = LATIN1.replace(b"cuda_runtime.h", b"hip/hip_runtime.h").replace(
        b"cudaMalloc", b"hipMalloc"
    )
    assert done.stdout == expected
    assert b"not UTF-8" in done.stderr and b"cudaMystery" in done.stderr
    assert _hipify(source, "--strict").returncode == 1


def test_latin1_file_in_a_tree_is_written_byte_exact_except_the_names(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "k.cu").write_bytes(LATIN1)
    report = hipify_paths(HipifyConfig(paths=(src,), output_dir=tmp_path / "out"))
    assert report.files[0].status == "converted"
    written = (tmp_path / "out" / "k.cu").read_bytes()
    assert "écrite".encode("latin-1") in written and b"hipMalloc" in written
    hipify_paths(HipifyConfig(paths=(src,), inplace=True))
    assert (src / "k.cu").read_bytes() == written
    assert (src / "k.cu.prehip").read_bytes() == LATIN1


@pytest.mark.slow
def test_a_binary_file_to_stdout_is_never_empty_and_fails_strict(tmp_path):
    source = tmp_path / "blob.cu"
    source.write_bytes(b"cudaMalloc\0\xff\x00rest")
    done = _hipify(source)
    assert done.returncode == 0
    assert done.stdout == source.read_bytes()
    assert _hipify(source, "--strict").returncode == 1


def test_a_file_defining_thousands_of_cuda_looking_names_reports_only_the_others():
    """The definition check is one pass over the findings (the 50 MB timing: benchmarks/)."""
    body = "".join(
        f"#define CUDA_USER{i} 1\nint x{i} = CUDA_USER{i} + cudaGone{i}();\n" for i in range(3000)
    )
    result = translate(body)
    names = {d.name for d in result.diagnostics if d.kind == "unconverted"}
    assert names == {f"cudaGone{i}" for i in range(3000)}
    assert "CUDA_USER7" in result.defined_names


@pytest.mark.parametrize(("cores", "load", "expected"), [(2, 0.0, 1), (16, 1.0, 8), (4, 0.5, 3)])
def test_a_pool_only_when_more_than_two_cores_are_idle(monkeypatch, cores, load, expected):
    monkeypatch.setattr(project, "_num_cores", lambda: cores)
    monkeypatch.setattr(project, "_load_average", lambda: load)
    assert project._num_workers(HipifyConfig(paths=(Path("."),))) == expected
    assert project._num_workers(HipifyConfig(paths=(Path("."),), jobs=2)) == 2


def test_kernels_after_the_runtime_api_header_still_get_hip_runtime_h():
    """hip_runtime_api.h declares no threadIdx: a kernel file needs hip_runtime.h itself."""
    kernel = "#include <cuda_runtime_api.h>\n__global__ void k(int* x) { x[threadIdx.x] = 0; }\n"
    assert translate(kernel).text.startswith("#include <hip/hip_runtime.h>\n")
    host_only = "#include <cuda_runtime_api.h>\nvoid f() { cudaDeviceSynchronize(); }\n"
    assert translate(host_only).text.startswith("#include <hip/hip_runtime_api.h>\n")


def test_vector_functions_header_maps_to_hip_vector_types():
    text = translate("#include <vector_functions.h>\n").text
    assert text == "#include <hip/hip_vector_types.h>\n"


def test_spaced_launch_chevrons_are_joined_for_hip_clang():
    """nvcc accepts `k << <g, b >> >(a)`; hip-clang reports "expected expression"."""
    source = "void f(int* a) { k << <g, b >> >(a); int x = 1 << 2; /* << < */ }\n"
    text = translate(source, options=TranslateOptions(add_runtime_include=False)).text
    assert text == "void f(int* a) { k <<<g, b >>>(a); int x = 1 << 2; /* << < */ }\n"
