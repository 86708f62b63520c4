"""A target HIP version: only names that release declares are emitted (issue 13)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hipcc_compile import compile_for_gfx90a

from rocmkit.cli.main import main
from rocmkit.errors import UserError
from rocmkit.hipify import TranslateOptions, translate
from rocmkit.hipify.check import find_hipcc
from rocmkit.hipify.versions import available_versions, hip_names, installed_version

SOURCE = (
    "__global__ void k(float* x) {\n"
    "  float v = __shfl_xor_sync(0xffffffff, x[0], 16, 32);\n"
    "  if (__any_sync(0xffffffff, v > 0)) x[0] = v;\n"
    "}\n"
    "void h() { cudaArrayGetInfo(0, 0, 0, a); cudaDeviceSynchronize(); }\n"
)


def test_name_lists_ship_for_5_2_and_6_2_with_their_source():
    assert {"5.2", "6.2"} <= set(available_versions())
    assert "hipDeviceSynchronize" in hip_names("5.2")
    assert "__shfl_xor_sync" in hip_names("6.2") and "__shfl_xor_sync" not in hip_names("5.2")


def test_a_target_missing_from_the_version_is_reported_never_emitted():
    """hipArrayGetInfo is declared by HIP 6.2's headers, not by 5.2's."""
    old = translate(SOURCE, options=TranslateOptions(hip_version="5.2"))
    assert "hipArrayGetInfo" not in old.text and "cudaArrayGetInfo" in old.text
    assert "hipDeviceSynchronize" in old.text
    (finding,) = [d for d in old.diagnostics if d.name == "cudaArrayGetInfo"]
    assert finding.kind == "unsupported" and "HIP 5.2" in finding.message
    new = translate(SOURCE, options=TranslateOptions(hip_version="6.2"))
    assert "hipArrayGetInfo(0, 0, 0, a)" in new.text


def test_warp_sync_intrinsics_are_lowered_with_a_wavefront_warning_for_5_2_only():
    old = translate(SOURCE, options=TranslateOptions(hip_version="5.2"))
    assert "__shfl_xor(x[0], 16, 32)" in old.text and "__any(v > 0)" in old.text
    warned = [d for d in old.diagnostics if d.category == "warp-sync-lowered"]
    assert len(warned) == 2 and all("64-lane" in d.message for d in warned)
    assert translate(old.text, options=TranslateOptions(hip_version="5.2")).text == old.text
    new = translate(SOURCE, options=TranslateOptions(hip_version="6.2"))
    assert "__shfl_xor_sync(0xffffffff, x[0], 16, 32)" in new.text


def test_a_newer_release_uses_the_newest_list_not_newer_than_it_and_bad_ones_are_user_errors():
    later = translate(SOURCE, options=TranslateOptions(hip_version="6.4")).text
    assert later == translate(SOURCE, options=TranslateOptions(hip_version="6.2")).text
    for bad in ("six", "4.0"):
        with pytest.raises(UserError):
            TranslateOptions(hip_version=bad)


def test_installed_version_reads_hip_version_h_next_to_hipcc(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "include" / "hip").mkdir(parents=True)
    (tmp_path / "include" / "hip" / "hip_version.h").write_text(
        "#define HIP_VERSION_MAJOR 6\n#define HIP_VERSION_MINOR 1\n"
    )
    assert installed_version(tmp_path / "bin" / "hipcc") == "6.1"
    assert installed_version(None) is None


def test_cli_strict_fails_on_a_name_the_target_lacks(tmp_path, capsys):
    source = tmp_path / "a.cu"
    source.write_text("void h() { cudaArrayGetInfo(0, 0, 0, a); }\n")
    assert main(["hipify", "--hip-version", "5.2", "--strict", str(source)]) == 1
    assert "hipArrayGetInfo is not declared by HIP 5.2" in capsys.readouterr().err
    assert main(["hipify", "--hip-version", "6.2", "--strict", str(source)]) == 0
    assert main(["hipify", "--hip-version", "x", str(source)]) == 2


@pytest.mark.slow
@pytest.mark.hipcc
def test_the_warp_corpus_program_compiles_for_hip_5_2_once_lowered(tmp_path):
    """Without lowering it fails with "undeclared identifier '__shfl_down_sync'" (see
    corpus/expected_failures.toml)."""
    hipcc = find_hipcc()
    if hipcc is None or installed_version(hipcc) != "5.2":
        pytest.skip("needs the HIP 5.2 hipcc")
    program = Path(__file__).parent / "corpus" / "warp_shuffle.cu"
    lowered = translate(program.read_text(), options=TranslateOptions(hip_version="5.2"))
    done = compile_for_gfx90a(lowered.text, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
