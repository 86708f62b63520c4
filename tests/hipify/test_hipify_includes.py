"""A project's own header that shares a CUDA header's name is never remapped (issue 29)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hipcc_compile import compile_for_gfx90a

from rocmkit.hipify import TranslateOptions, translate
from rocmkit.hipify.mappings import load_table
from rocmkit.hipify.project import HipifyConfig, hipify_paths, project_headers

USER = (
    '#include "cuda.h"\n#include <cuda.h>\n#include "cuda_runtime.h"\nint f() { return WRAPPED; }\n'
)


def test_a_quoted_project_header_is_kept_and_noted():
    options = TranslateOptions(project_headers=frozenset({"cuda.h"}))
    result = translate(USER, options=options)
    lines = result.text.splitlines()
    assert '#include "cuda.h"' in lines  # the project's own file
    assert "#include <hip/hip_runtime.h>" in lines  # angle brackets: CUDA's header
    assert '#include "hip/hip_runtime.h"' in lines  # not a project file
    (note,) = [d for d in result.diagnostics if d.category == "include"]
    assert (note.kind, note.line, note.name) == ("note", 1, "cuda.h")
    # Without the project's file the include is CUDA's, as before.
    assert '#include "hip/hip_runtime.h"\n#include <hip/hip_runtime.h>' in translate(USER).text


def _project(root: Path) -> Path:
    (root / "src" / "include").mkdir(parents=True)
    (root / "src" / "include" / "cuda.h").write_text("#pragma once\n#define WRAPPED 3\n")
    (root / "src" / "k.cu").write_text(
        '#include "cuda.h"\n#include "./cuda.h"\n#include "include/cuda.h"\n'
        "__global__ void k(int* x) { x[0] = WRAPPED; }\n"
        "int sync() { return cudaDeviceSynchronize() == cudaSuccess ? WRAPPED : 0; }\n"
    )
    return root / "src"


def test_project_headers_are_the_table_paths_the_tree_has(tmp_path):
    src = _project(tmp_path)
    includes = load_table().includes
    assert project_headers((src,), includes) == {"cuda.h"}
    assert project_headers((src / "k.cu",), includes) == frozenset()  # no cuda.h beside it
    assert project_headers((src / "include" / "cuda.h",), includes) == {"cuda.h"}


def test_a_tree_keeps_its_own_cuda_h(tmp_path):
    src = _project(tmp_path)
    hipify_paths(HipifyConfig(paths=(src,), output_dir=tmp_path / "out"))
    text = (tmp_path / "out" / "k.cu").read_text()
    assert '#include "cuda.h"\n#include "./cuda.h"\n#include "include/cuda.h"\n' in text
    assert "hipDeviceSynchronize" in text and text.startswith("#include <hip/hip_runtime.h>\n")


@pytest.mark.slow
@pytest.mark.hipcc
def test_the_tree_with_its_own_cuda_h_compiles(tmp_path):
    src = _project(tmp_path)
    hipify_paths(HipifyConfig(paths=(src,), output_dir=tmp_path / "out"))
    text = (tmp_path / "out" / "k.cu").read_text()
    # compile_for_gfx90a compiles from tmp_path/build: the header must be found from there.
    build = tmp_path / "build"
    (build / "include").mkdir(parents=True)
    (build / "cuda.h").write_text((tmp_path / "out" / "include" / "cuda.h").read_text())
    (build / "include" / "cuda.h").write_text((build / "cuda.h").read_text())
    done = compile_for_gfx90a(text, build)
    assert done.returncode == 0, done.stderr[-2000:]
