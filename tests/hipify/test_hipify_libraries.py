"""Library names (hipRAND, hipBLAS, hipCUB...) are checked against the target release's headers
like HIP's own names (issue 29): a name the release lacks is reported at its line, never emitted."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmkit.hipify import TranslateOptions, translate
from rocmkit.hipify.mappings import table_for_version
from rocmkit.hipify.versions import (
    LIBRARIES,
    absent_libraries,
    library_names,
    library_names_in_headers,
    library_of,
)

SOURCE = (
    "#include <curand_kernel.h>\n"
    "#include <cub/cub.cuh>\n"
    "void f(curandDirectionVectorSet_t set) {\n"
    "  curandGenerator_t g;\n"
    "  curandCreateGenerator(&g, CURAND_RNG_PSEUDO_DEFAULT);\n"
    "  cub::DeviceReduce::Sum(0, bytes, in, out, n);\n"
    "  cub::DeviceMemcpy::Batched(0, bytes, in, out, sizes, n);\n"
    "}\n"
)


def _at(translation, name):
    return [d for d in translation.diagnostics if d.name == name]


def test_a_hiprand_name_the_release_lacks_is_reported_at_its_line_and_kept():
    old = translate(SOURCE, options=TranslateOptions(hip_version="5.2"))
    (finding,) = _at(old, "curandDirectionVectorSet_t")
    assert finding.kind == "unsupported" and finding.line == 3
    assert "hipRAND's headers at rocm-5.2.3" in finding.message
    assert "hiprandDirectionVectorSet_t" not in old.text
    assert "hiprandCreateGenerator(&g, HIPRAND_RNG_PSEUDO_DEFAULT)" in old.text
    new = translate(SOURCE, options=TranslateOptions(hip_version="6.2"))
    assert "hiprandDirectionVectorSet_t set" in new.text and not _at(
        new, "curandDirectionVectorSet_t"
    )


def test_a_hipcub_member_the_release_lacks_keeps_its_cub_namespace():
    old = translate(SOURCE, options=TranslateOptions(hip_version="5.2"))
    (finding,) = _at(old, "cub::DeviceMemcpy")
    assert finding.kind == "unsupported" and finding.line == 7 and finding.column == 3
    assert "cub::DeviceMemcpy::Batched" in old.text and "hipcub::DeviceReduce::Sum" in old.text
    new = translate(SOURCE, options=TranslateOptions(hip_version="6.2"))
    assert "hipcub::DeviceMemcpy::Batched" in new.text and not _at(new, "cub::DeviceMemcpy")


def test_without_a_target_version_nothing_is_checked():
    plain = translate(SOURCE)
    assert "hiprandDirectionVectorSet_t" in plain.text and "hipcub::DeviceMemcpy" in plain.text
    assert not [d for d in plain.diagnostics if d.kind == "unsupported"]


@pytest.mark.parametrize("version", ["5.2", "6.2"])
def test_every_emitted_library_name_is_in_the_release_list(version):
    table = table_for_version("auto", version)
    known = library_names(version)
    emitted = {m.hip for m in table.identifiers.values() if library_of(m.hip) is not None}
    assert len(emitted) > 500 and emitted <= known
    # Each library's list is there (a missing repository would make every name "lacking").
    for prefixes in LIBRARIES.values():
        assert any(name.startswith(prefixes) for name in known)


def test_hipblaslt_and_hip_own_names_are_not_judged_by_the_library_lists():
    assert library_of("hipblasLtMatmul") is None and library_of("hipMalloc") is None
    assert library_of("hipblasSgemm") == "hipBLAS" and library_of("HIPFFT_FORWARD") == "hipFFT"


def test_names_in_comments_and_strings_are_not_declarations():
    header = '// hiprandOld\n#define X "hiprandQuoted"\nhiprandStatus_t hiprandCreateGenerator();\n'
    assert library_names_in_headers([header]) == {"hiprandStatus_t", "hiprandCreateGenerator"}
    assert "hipcub::BlockReduce" in library_names_in_headers(
        ["namespace hipcub { class BlockReduce; }"], hipcub=True
    )


INSTALLED = Path("/usr/include/hiprand")


@pytest.mark.skipif(not INSTALLED.is_dir(), reason="no installed hipRAND headers")
def test_installed_hiprand_declares_every_hiprand_name_emitted_for_5_2():
    """Debian 12's hipRAND (5.3.3, the corpus's compiler) against the rocm-5.2.3 list."""
    amd_side = [p.read_text() for p in INSTALLED.glob("*.h") if "nvcc" not in p.name]
    installed = library_names_in_headers(amd_side)
    table = table_for_version("auto", "5.2")
    emitted = {m.hip for m in table.identifiers.values() if library_of(m.hip) == "hipRAND"}
    assert emitted and emitted <= installed


GL = (
    "#include <cuda_gl_interop.h>\n"
    "void share(GLuint vbo, cudaGraphicsResource_t* r) {\n"
    "  cudaGraphicsGLRegisterBuffer(r, vbo, cudaGraphicsMapFlagsNone);\n"
    "}\n"
)


def test_gl_interop_maps_to_the_header_that_declares_it_in_each_release():
    """HIP 6.2 has hip_gl_interop.h; HIP 5.2 declares the same calls in hip_runtime_api.h."""
    old = translate(GL, options=TranslateOptions(hip_version="5.2"))
    assert "#include <hip/hip_runtime_api.h>\n" in old.text
    assert "hipGraphicsGLRegisterBuffer(r, vbo, hipGraphicsRegisterFlagsNone)" in old.text
    assert not [d for d in old.diagnostics if d.kind == "unsupported"]
    new = translate(GL, options=TranslateOptions(hip_version="6.2"))
    assert "#include <hip/hip_gl_interop.h>" in new.text
    assert "hipGraphicsGLRegisterBuffer(r, vbo, hipGraphicsRegisterFlagsNone)" in new.text
    assert not [d for d in new.diagnostics if d.kind == "unsupported"]


def test_an_include_whose_hip_header_the_release_lacks_is_reported_and_kept():
    from rocmkit.hipify.mappings import _includes_for

    kept, lacking = _includes_for(
        {"cudaEGL.h": "hip/hip_egl.h", "cuda.h": "hip/hip_runtime.h"}, "6.2"
    )
    assert kept == {"cuda.h": "hip/hip_runtime.h"}
    assert "HIP 6.2 has no <hip/hip_egl.h>" in lacking["cudaEGL.h"]


def test_a_library_the_target_lacks_is_reported_at_its_include(tmp_path):
    (tmp_path / "hip").mkdir()
    (tmp_path / "hiprand").mkdir()
    table_folders = {"rccl", "hiprand", "thrust"}
    absent = absent_libraries(tmp_path, table_folders)
    assert absent == {"rccl", "thrust"}
    text = '#include <nccl.h>\n#include <curand.h>\n#include "thrust/local.h"\n'
    found = translate(text, options=TranslateOptions(absent_libraries=absent)).diagnostics
    (missing,) = [d for d in found if d.category == "missing-library"]
    assert missing.line == 1 and missing.name == "rccl/rccl.h" and "rccl/" in missing.message
    quiet = translate(text).diagnostics
    assert not [d for d in quiet if d.category == "missing-library"]


def test_the_table_names_the_library_folders_a_target_may_lack():
    folders = table_for_version("auto", "5.2").library_folders()
    assert {"rccl", "hipcub", "hipblas", "hiprand", "thrust"} <= folders and "hip" not in folders


@pytest.mark.slow
@pytest.mark.hipcc
def test_gl_interop_translated_for_5_2_compiles_with_hip_5_2(tmp_path):
    from hipcc_compile import compile_for_gfx90a

    text = translate(GL, options=TranslateOptions(hip_version="5.2")).text
    answer = compile_for_gfx90a(text, tmp_path)
    assert answer.returncode == 0, answer.stderr


def test_the_libraries_missing_beside_the_installed_hipcc_are_the_targets(tmp_path):
    from rocmkit.hipify.check import absent_next_to_hipcc

    hipcc = tmp_path / "rocm" / "bin" / "hipcc"
    hipcc.parent.mkdir(parents=True)
    hipcc.write_text("#!/bin/sh\n")
    for folder in ("hip", "hiprand", "hipcub"):
        (tmp_path / "rocm" / "include" / folder).mkdir(parents=True)
    absent = absent_next_to_hipcc("5.2", str(hipcc))
    assert {"rccl", "thrust"} <= absent and not {"hiprand", "hipcub"} & absent
    assert absent_next_to_hipcc("5.2", None) == frozenset()


def test_the_command_reports_a_library_the_installed_hipcc_lacks(tmp_path, monkeypatch, capsys):
    """`rocmkit hipify` targeting the installed hipcc warns at an include its tree cannot
    satisfy; with --hip-version (no installed target) it says nothing of it."""
    import json

    from rocmkit.cli.main import main
    from rocmkit.hipify import check

    root = tmp_path / "rocm"
    (root / "bin").mkdir(parents=True)
    (root / "include" / "hip").mkdir(parents=True)
    (root / "bin" / "hipcc").write_text("#!/bin/sh\n")
    monkeypatch.setattr(check, "find_hipcc", lambda: str(root / "bin" / "hipcc"))
    monkeypatch.setattr(
        check,
        "hip_version_and_source",
        lambda asked: (asked, "--hip-version") if asked else ("5.2", "installed hipcc"),
    )
    source = tmp_path / "a.cu"
    source.write_text("#include <nccl.h>\nint main() { return 0; }\n")
    assert main(["hipify", str(source), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert "missing-library" in json.dumps(document["data"])
    assert main(["hipify", str(source), "--json", "--hip-version", "5.2"]) == 0
    assert "missing-library" not in capsys.readouterr().out
