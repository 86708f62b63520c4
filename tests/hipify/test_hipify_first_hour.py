"""What a newcomer meets first: the summary names the HIP release targeted and where it came
from, a --diff of an absolute path applies with git, a bad output is refused before any work,
and --quiet (or the cap) keeps a real tree's diagnostics off the terminal."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from rocmkit.cli.main import main
from rocmkit.report import view_hipify

KERNEL = """#include <cuda_runtime.h>
__global__ void k(float* x) { x[threadIdx.x] = __shfl_down_sync(0xffffffff, x[0], 1); }
void f(float* p) { cudaMalloc(&p, 4); cudaDeviceSynchronize(); }
"""


def _source(directory: Path, name: str = "a.cu", text: str = KERNEL) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text)
    return path


def test_summary_names_the_hip_version_and_its_origin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = tmp_path / "src"
    _source(tree)
    assert main(["hipify", str(tree), "--hip-version", "6.0"]) == 0
    err = capsys.readouterr().err
    assert "HIP 6.0 names (--hip-version)" in err.splitlines()[-2]  # the summary line
    assert main(["hipify", str(tree), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["config"]["hip_version_source"]  # installed hipcc or the default list
    assert document["environment"]["hip_names_version_source"]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_diff_of_an_absolute_path_applies_with_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    source = _source(repo / "src")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.chdir(repo)
    assert main(["hipify", str(source.resolve()), "--diff"]) == 0
    diff = capsys.readouterr().out
    assert "--- a/src/a.cu" in diff and "a//" not in diff
    patch = tmp_path / "change.patch"
    patch.write_text(diff)
    check = subprocess.run(
        ["git", "apply", "--check", str(patch)], cwd=repo, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr


@pytest.mark.parametrize("flag", ["-o", "--output-dir"])
def test_an_output_that_cannot_be_written_is_refused_before_any_work(
    tmp_path: Path, flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _source(tmp_path / "src")
    taken = tmp_path / "taken"
    taken.mkdir()
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    # -o an existing directory; --output-dir under a file (unwritable even for root)
    target = taken if flag == "-o" else blocker / "out"
    assert main(["hipify", str(source), flag, str(target)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(target) in err
    assert "Errno" not in err and list(taken.iterdir()) == []


def test_quiet_prints_only_the_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = tmp_path / "src"
    _source(tree)
    assert main(["hipify", str(tree)]) == 0
    loud = capsys.readouterr().err
    assert main(["hipify", str(tree), "--quiet"]) == 0
    quiet = capsys.readouterr().err.splitlines()
    assert any("a.cu:" in line for line in loud.splitlines())
    assert len(quiet) == 2 and quiet[0].startswith("hipify: 1 files") and "dry run" in quiet[1]


def test_a_flood_of_diagnostics_is_capped_with_a_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(view_hipify, "MAX_DIAGNOSTIC_LINES", 1)
    tree = tmp_path / "src"
    _source(tree, text=KERNEL + "void g() { __shfl_up_sync(0xffffffff, 1, 1); cudaFoo(); }\n")
    assert main(["hipify", str(tree)]) == 0
    lines = capsys.readouterr().err.splitlines()
    more = [line for line in lines if line.startswith("... ")]
    assert len(more) == 1 and "more diagnostics (all of them: --json" in more[0]
    assert sum("a.cu:" in line and "plan:" not in line for line in lines) == 1
