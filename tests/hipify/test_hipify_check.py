"""`--check`: hipcc command line, first error line, headers skipped; one real compile when present."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import rocmkit.hipify
from rocmkit.cli.main import main
from rocmkit.errors import UserError
from rocmkit.hipify.check import check_compiles, find_hipcc, first_error_line


def test_public_api_is_pinned() -> None:
    assert rocmkit.hipify.__all__ == [
        "LATEST_HIP_VERSION",
        "CompileResult",
        "Diagnostic",
        "Edit",
        "FileResult",
        "HipifyConfig",
        "HipifyReport",
        "MappingTable",
        "TranslateOptions",
        "Translation",
        "TranslationStats",
        "amd_dead_branches",
        "arch_table",
        "check_compiles",
        "find_hazards",
        "hazard_diagnostics",
        "header_verdicts",
        "hipify_paths",
        "load_table",
        "translate",
    ]


def test_check_runs_hipcc_for_amd_on_translation_units_only(tmp_path):
    calls = []

    def fake_hipcc(command, env):
        calls.append((command, env["HIP_PLATFORM"]))
        failed = "bad" in command[5]
        stderr = "In file included from x.h:1:\nbad.hip:3:5: error: use of undeclared identifier 'cudaFoo'\n"
        return subprocess.CompletedProcess(
            command, 1 if failed else 0, "", stderr if failed else ""
        )

    files = [tmp_path / "good.hip", tmp_path / "bad.hip", tmp_path / "kernels.cuh"]
    results = check_compiles(files, arch="gfx942", hipcc="/x/hipcc", runner=fake_hipcc, jobs=2)
    assert [(r.path.name, r.ok) for r in results] == [("good.hip", True), ("bad.hip", False)]
    assert results[1].first_error == "bad.hip:3:5: error: use of undeclared identifier 'cudaFoo'"
    assert len(calls) == 2
    command, platform = next(c for c in calls if "good" in c[0][5])
    assert platform == "amd"
    assert command[:6] == ["/x/hipcc", "--offload-arch=gfx942", "-x", "hip", "-c", str(files[0])]
    assert f"-I{tmp_path}" in command


def test_first_error_line_falls_back_to_first_line():
    assert first_error_line("\n  linker said no\nmore\n") == "linker said no"
    assert first_error_line("") == ""


def test_check_without_hipcc_names_the_install(monkeypatch, tmp_path):
    monkeypatch.setattr("rocmkit.hipify.check.find_hipcc", lambda: None)
    with pytest.raises(UserError, match="apt-get install hipcc"):
        check_compiles([tmp_path / "a.hip"])


@pytest.mark.slow
@pytest.mark.hipcc
def test_cli_check_compiles_a_translated_file(tmp_path, capsys):
    if find_hipcc() is None:
        pytest.skip("hipcc is not installed")
    src = tmp_path / "src"
    src.mkdir()
    good = src / "good.cu"
    good.write_text(
        "__global__ void k(float* x) { x[threadIdx.x] = 1; }\nint main() { cudaDeviceSynchronize(); }\n"
    )
    bad = src / "bad.cu"
    bad.write_text("__global__ void k() { undefined_thing(); }\n")
    out = tmp_path / "out"
    assert main(["hipify", str(src), "--output-dir", str(out), "--check"]) == 1
    err = capsys.readouterr().err
    assert f"check {out / 'good.cu'}: ok" in err
    assert f"check {out / 'bad.cu'}: FAIL:" in err and "undefined_thing" in err
    assert Path(out / "good.cu").read_text().startswith("#include <hip/hip_runtime.h>")
