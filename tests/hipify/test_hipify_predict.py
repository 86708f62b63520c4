"""The prediction benchmark's scoring (benchmarks/hipify_predict.py): a compile error is charged to
the right original line, and the split is fixed by project."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import hipify_predict


def test_an_error_line_maps_back_over_an_added_include_and_rewritten_lines() -> None:
    original = "// c\n#include <cuda.h>\n#include <nccl.h>\nint x;\nbad;\n"
    translated = (
        "// c\n#include <hip/hip_runtime.h>\n#include <hip/hip_runtime.h>\n"
        "#include <rccl/rccl.h>\nint x;\nbad;\n"
    )
    assert hipify_predict.original_line(original, translated, 6) == 5  # `bad;`
    assert hipify_predict.original_line(original, translated, 4) == 3  # the rccl include


def test_an_error_in_a_system_header_is_charged_to_the_project_line_that_included_it(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "tree"
    output = (
        f"In file included from {tree}/src/a.cu:3:\n"
        f"In file included from {tree}/include/b.h:12:\n"
        "/usr/include/hip/amd_detail/x.h:40:5: error: redefinition of 'min'\n"
        f"{tree}/src/a.cu:9:1: error: later\n"
    )
    message, where = hipify_predict.error_site(output, tree)
    assert message == "redefinition of 'min'" and where == (tree / "include" / "b.h", 12)
    assert hipify_predict.error_site("clang: error: no input\n", tree)[1] is None


def test_the_split_holds_out_whole_projects_and_at_least_30_percent_of_units() -> None:
    import hipify_corpus

    split = hipify_predict.load_split()
    projects = hipify_corpus.load_manifest(hipify_predict.MANIFEST)
    assert {p.name for p in projects} == set(split)
    units = {
        side: sum(len(p.compile) for p in projects if split[p.name] == side)
        for side in ("dev", "held_out")
    }
    assert units["held_out"] / (units["dev"] + units["held_out"]) >= 0.30
    assert sum(units.values()) >= 40 and len(projects) >= 3


def test_an_error_in_a_macro_expansion_names_the_macro_definition(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    output = (
        f"{tree}/inc/utils.h:63:3: error: use of undeclared identifier 'cuGetErrorName'\n"
        f"{tree}/inc/utils.h:20:5: note: expanded from macro 'CUDA_SAFE_CALL'\n"
        "/usr/include/x.h:5:1: note: expanded from macro 'OUTSIDE'\n"
        f"{tree}/inc/utils.h:70:3: error: later\n"
        f"{tree}/inc/utils.h:30:5: note: expanded from macro 'OTHER'\n"
    )
    assert hipify_predict.macro_sites(output, tree) == [(tree / "inc" / "utils.h", 20)]
    assert hipify_predict.macro_sites("no errors\n", tree) == []
