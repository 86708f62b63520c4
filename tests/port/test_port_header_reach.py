"""A header is compiled only through a translation unit that includes it: a finding in a header no
source of the project reaches through #include (transitively; Python JIT sources count) is info,
saying why; a tree with no source at all (a header-only library) is left as it is."""

from __future__ import annotations

from pathlib import Path

from rocmkit.port import PortConfig, scan_project

PTX = '__device__ inline unsigned {name}() {{ unsigned x; asm volatile("mov.u32 %0, %%laneid;" : "=r"(x)); return x; }}\n'


def _header(path: Path, name: str, include: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "#pragma once\n" + (f'#include "{include}"\n' if include else "") + PTX.format(name=name)
    )


def _severities(root: Path) -> dict[str, str]:
    report = scan_project(PortConfig(path=root, show_info=True))
    return {f.path: f.severity for f in report.findings if f.rule_id == "cuda-inline-ptx"}


def test_headers_no_source_reaches_are_info_and_reached_ones_stay(tmp_path: Path) -> None:
    _header(tmp_path / "csrc" / "a.cuh", "lane_a", include="b.cuh")  # reached from the kernel
    _header(tmp_path / "csrc" / "b.cuh", "lane_b")  # reached through a.cuh
    _header(tmp_path / "common" / "unused.cuh", "lane_c")  # shipped, never included
    (tmp_path / "kernel.cu").write_text(
        '#include "csrc/a.cuh"\n__global__ void k(unsigned* o) { o[0] = lane_a(); }\n'
    )
    assert _severities(tmp_path) == {
        "csrc/a.cuh": "error",
        "csrc/b.cuh": "error",
        "common/unused.cuh": "info",
    }
    report = scan_project(PortConfig(path=tmp_path, show_info=True))
    note = next(f.note for f in report.findings if f.path == "common/unused.cuh")
    assert "no source file of the project includes this header" in note


def test_a_python_jit_source_and_an_include_path_from_above_the_scanned_folder_reach(
    tmp_path: Path,
) -> None:
    pkg = tmp_path / "pkg"
    _header(pkg / "gpu" / "jit.cuh", "lane_j")
    _header(pkg / "gpu" / "dot.cuh", "lane_d")
    (pkg / "gpu" / "als.cu").write_text('#include "pkg/gpu/dot.cuh"\n')  # the project root's path
    (pkg / "build.py").write_text('SOURCE = """\n#include "gpu/jit.cuh"\n"""\n')  # load_inline
    assert _severities(pkg) == {"gpu/jit.cuh": "error", "gpu/dot.cuh": "error"}


def test_a_header_only_library_is_left_as_it_is(tmp_path: Path) -> None:
    _header(tmp_path / "include" / "lib.cuh", "lane_l")
    assert _severities(tmp_path) == {"include/lib.cuh": "error"}


def test_a_quoted_include_takes_the_header_beside_the_including_file(tmp_path: Path) -> None:
    # "k_split.h" from gemm/task.h is gemm/k_split.h (the compiler looks beside the includer
    # first); the same-named copy in gemm/back/, included by nothing, is never compiled
    _header(tmp_path / "gemm" / "task.h", "lane_t", include="k_split.h")
    _header(tmp_path / "gemm" / "k_split.h", "lane_k")
    _header(tmp_path / "gemm" / "back" / "k_split.h", "lane_b")
    (tmp_path / "kernel.cu").write_text('#include "gemm/task.h"\n')
    assert _severities(tmp_path) == {
        "gemm/task.h": "error",
        "gemm/k_split.h": "error",
        "gemm/back/k_split.h": "info",
    }
    # an include naming the subfolder reaches the copy there instead
    _header(tmp_path / "gemm" / "task.h", "lane_t", include="back/k_split.h")
    assert _severities(tmp_path)["gemm/back/k_split.h"] == "error"
