"""Tree work and the command line: in place, output dirs, pass-through, links, failures, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import rocmkit
from rocmkit.cli.main import main
from rocmkit.errors import UserError
from rocmkit.hipify import project
from rocmkit.hipify.project import HipifyConfig, hipify_paths

KERNEL = (
    "#include <cuda_runtime.h>\n__global__ void k() {}\nint main() { cudaDeviceSynchronize(); }\n"
)
HIP_KERNEL = KERNEL.replace("cuda_runtime.h", "hip/hip_runtime.h").replace(
    "cudaDevice", "hipDevice"
)


def _tree(root: Path) -> Path:
    (root / "src" / "sub").mkdir(parents=True)
    (root / "src" / "a.cu").write_text(KERNEL)
    (root / "src" / "sub" / "b.cuh").write_text("#include <cuda_fp16.h>\n__half h;\n")
    (root / "src" / "notes.txt").write_text("cudaMalloc\n")
    (root / "src" / "CMakeLists.txt").write_text(
        "project(x LANGUAGES CXX CUDA)\nfind_package(CUDA)\n"
    )
    return root / "src"


def test_inplace_keeps_backups_and_is_idempotent(tmp_path):
    src = _tree(tmp_path)
    first = hipify_paths(HipifyConfig(paths=(src,), inplace=True))
    assert (src / "a.cu").read_text() == HIP_KERNEL
    assert (src / "a.cu.prehip").read_text() == KERNEL
    assert (src / "notes.txt").read_text() == "cudaMalloc\n"
    assert first.count("converted") == 2
    second = hipify_paths(HipifyConfig(paths=(src,), inplace=True))
    assert {f.status for f in second.files if f.source.suffix != ".txt"} <= {"skipped", "unchanged"}
    assert (src / "a.cu").read_text() == HIP_KERNEL
    assert (src / "a.cu.prehip").read_text() == KERNEL
    assert not (src / "a.cu.prehip.prehip").exists()


def test_inplace_rename_to_hip(tmp_path):
    src = _tree(tmp_path)
    hipify_paths(HipifyConfig(paths=(src,), inplace=True, rename="hip"))
    assert (src / "a.hip").read_text() == HIP_KERNEL
    assert not (src / "a.cu").exists()
    assert (src / "a.cu.prehip").read_text() == KERNEL
    assert (src / "sub" / "b.cuh").exists()  # only .cu files are renamed
    assert main(["hipify", "--inplace", "--extension", "hip", str(src)]) == 0  # a rerun is a no-op
    assert (src / "a.hip").read_text() == HIP_KERNEL
    assert not (src / "a.hip.prehip").exists()


def test_output_dir_mirrors_the_tree_and_leaves_sources_alone(tmp_path):
    src = _tree(tmp_path)
    out = tmp_path / "out"
    report = hipify_paths(HipifyConfig(paths=(src,), output_dir=out, rename="hip.cpp"))
    assert (out / "a.hip.cpp").read_text() == HIP_KERNEL
    assert "hip/hip_fp16.h" in (out / "sub" / "b.cuh").read_text()
    assert (src / "a.cu").read_text() == KERNEL
    notes = [d for d in report.diagnostics if d.category == "cmake"]
    assert {d.line for d in notes} == {1, 2}


def test_binary_files_pass_through_byte_exact(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    binary = b"\x7fELF\x00\x01cudaMalloc\x00"
    (src / "blob.cu").write_bytes(binary)
    out = tmp_path / "out"
    report = hipify_paths(HipifyConfig(paths=(src,), output_dir=out))
    assert {f.status for f in report.files} == {"passthrough"}
    assert (out / "blob.cu").read_bytes() == binary
    hipify_paths(HipifyConfig(paths=(src,), inplace=True))
    assert (src / "blob.cu").read_bytes() == binary
    assert not (src / "blob.cu.prehip").exists()


def test_crlf_and_bom_survive(tmp_path):
    source = tmp_path / "w.cu"
    source.write_bytes("\ufeff#include <cuda.h>\r\ncuInit(0);\r\n".encode())
    hipify_paths(HipifyConfig(paths=(source,), inplace=True))
    assert source.read_bytes() == "\ufeff#include <hip/hip_runtime.h>\r\nhipInit(0);\r\n".encode()


def test_symlinks_out_of_the_tree_are_not_followed(tmp_path):
    outside = tmp_path / "outside.cu"
    outside.write_text(KERNEL)
    src = tmp_path / "src"
    (src / "inner").mkdir(parents=True)
    (src / "inner" / "real.cu").write_text(KERNEL)
    (src / "escape.cu").symlink_to(outside)
    (src / "inside.cu").symlink_to(src / "inner" / "real.cu")
    (src / "linked_dir").symlink_to(tmp_path)
    report = hipify_paths(HipifyConfig(paths=(src,), inplace=True))
    assert outside.read_text() == KERNEL
    assert [f.source.name for f in report.files] == ["real.cu"]
    assert (src / "inside.cu").is_symlink() and (src / "inside.cu").read_text() == HIP_KERNEL
    assert (src / "escape.cu").is_symlink()


def test_a_failed_write_leaves_the_original_intact(tmp_path, monkeypatch):
    source = tmp_path / "a.cu"
    source.write_text(KERNEL)

    def broken_write(path, data, mode=None):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(project, "atomic_write_bytes", broken_write)
    report = hipify_paths(HipifyConfig(paths=(source,), inplace=True))
    assert report.files[0].status == "error"
    assert source.read_text() == KERNEL


def test_parallel_run_matches_serial(tmp_path):
    src = tmp_path / "many"
    src.mkdir()
    for i in range(40):
        (src / f"f{i}.cu").write_text(KERNEL.replace("k()", f"k{i}()"))
    serial = hipify_paths(HipifyConfig(paths=(src,), output_dir=tmp_path / "s", jobs=1))
    parallel = hipify_paths(HipifyConfig(paths=(src,), output_dir=tmp_path / "p", jobs=2))
    assert [f.source for f in serial.files] == [f.source for f in parallel.files]
    for i in range(40):
        assert (tmp_path / "s" / f"f{i}.cu").read_text() == (
            tmp_path / "p" / f"f{i}.cu"
        ).read_text()


def test_include_and_exclude_globs(tmp_path):
    src = _tree(tmp_path)
    report = hipify_paths(HipifyConfig(paths=(src,), include=("sub/*",)))
    assert [f.source.name for f in report.files] == ["b.cuh"]
    report = hipify_paths(HipifyConfig(paths=(src,), exclude=("*.cuh", "CMakeLists.txt")))
    assert [f.source.name for f in report.files] == ["a.cu"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"paths": ()},
        {"paths": (Path("/no/such/dir"),)},
        {"paths": (Path("."),), "inplace": True, "output_dir": Path("x")},
        {"paths": (Path("."),), "output": Path("x.hip")},
        {"paths": (Path("."),), "rename": "cpp"},
    ],
)
def test_bad_configs_are_user_errors(kwargs):
    with pytest.raises(UserError):
        HipifyConfig(**kwargs)


def test_cli_single_file_to_stdout(tmp_path, capsys):
    source = tmp_path / "a.cu"
    source.write_text(KERNEL + "cudaBogus();\n")
    assert main(["hipify", str(source)]) == 0
    captured = capsys.readouterr()
    assert captured.out == HIP_KERNEL + "cudaBogus();\n"
    assert f"{source}:4:1: unconverted [runtime] cudaBogus" in captured.err
    assert main(["hipify", "--strict", str(source)]) == 1


def test_cli_json_diff_and_output_file(tmp_path, capsys):
    source = tmp_path / "a.cu"
    source.write_text(KERNEL)
    assert main(["hipify", "--json", str(source)]) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    assert data["totals"]["converted_by_category"] == {"runtime": 1, "include": 1}
    assert main(["hipify", "--diff", str(source)]) == 0
    assert "+#include <hip/hip_runtime.h>" in capsys.readouterr().out
    target = tmp_path / "a.hip"
    assert main(["hipify", str(source), "-o", str(target)]) == 0
    assert target.read_text() == HIP_KERNEL


def test_cli_stats_table_and_cmake_only(tmp_path, capsys):
    src = _tree(tmp_path)
    assert main(["hipify", "--stats", str(src)]) == 0
    out = capsys.readouterr().err  # the report, tables included, goes to stderr; stdout is code
    assert "conversions by category" in out and "runtime" in out and "include" in out
    assert main(["hipify", "--cmake", str(src)]) == 0
    err = capsys.readouterr().err
    assert "find_package(CUDA)" in err and "enable_language(HIP)" in err


def test_cli_bad_input_is_one_line_exit_2(tmp_path):
    src = Path(rocmkit.__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(src))
    for args in (
        ["hipify", str(tmp_path / "missing.cu")],
        ["hipify", "--launch", "x", "a.cu"],
        ["hipify"],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "rocmkit", *args],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        assert done.returncode == 2, args
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_cli_no_matching_file_is_a_user_error(tmp_path):
    (tmp_path / "readme.md").write_text("x")
    assert main(["hipify", str(tmp_path)]) == 2


def test_huge_files_pass_through_and_unwritable_outputs_are_errors(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "big.cu").write_text("cudaMalloc(p);\n" * 100)
    (src / "a.cu").write_text(KERNEL)
    out = tmp_path / "out"
    (out / "a.cu").mkdir(parents=True)  # a directory where the output file should go
    report = hipify_paths(HipifyConfig(paths=(src,), output_dir=out, max_bytes=1000))
    by_name = {f.source.name: f for f in report.files}
    assert by_name["big.cu"].status == "passthrough"
    assert (out / "big.cu").read_text() == "cudaMalloc(p);\n" * 100
    assert by_name["a.cu"].status == "error"
    assert (src / "a.cu").read_text() == KERNEL
    assert main(["hipify", str(src), "--output-dir", str(out)]) == 1


def test_a_macro_defined_in_one_header_is_not_reported_in_the_files_using_it(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "check.cuh").write_text("#define CUDA_CHECK(x) do { x; } while (0)\n")
    (src / "a.cu").write_text(
        '#include "check.cuh"\nvoid f() { CUDA_CHECK(cudaDeviceReset()); cudaOops(); }\n'
    )
    report = hipify_paths(HipifyConfig(paths=(src,)))
    assert [d.name for d in report.diagnostics if d.kind == "unconverted"] == ["cudaOops"]
    assert report.unconverted_by_category() == {"runtime": 1}


def test_hu_headers_are_translated_in_a_tree(tmp_path):
    """LightGBM names its CUDA headers `.hu`: a tree run must not skip them."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "kernels.hu").write_text(
        "inline void sync() { cudaDeviceSynchronize(); }\n"
    )
    hipify_paths(HipifyConfig(paths=(tmp_path / "src",), inplace=True))
    assert "hipDeviceSynchronize()" in (tmp_path / "src" / "kernels.hu").read_text()
    assert (tmp_path / "src" / "kernels.hu.prehip").exists()
