"""Data safety, run as a user would: `python -m rocmkit hipify ...` on real files in a temp tree."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import rocmkit

KERNEL = "#include <cuda_runtime.h>\nint main() { cudaDeviceSynchronize(); }\n"


def _hipify(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    src = Path(rocmkit.__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(src))
    return subprocess.run(
        [sys.executable, "-m", "rocmkit", "hipify", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        check=False,
    )


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "repro" / "a" / "sub").mkdir(parents=True)
    (tmp_path / "repro" / "a" / "k.cu").write_text(KERNEL)
    (tmp_path / "repro" / "a" / "sub" / "h.cuh").write_text("cudaError_t e;\n")
    return tmp_path / "repro" / "a"


@pytest.mark.parametrize("where", ["same", "inside", "parent"])
def test_output_dir_overlapping_the_input_is_refused_and_nothing_written(tree, where):
    """The reported data loss: `hipify repro/a --output-dir repro/a` overwrote the sources."""
    out = {"same": tree, "inside": tree / "hip", "parent": tree.parent}[where]
    before = _snapshot(tree.parent)
    done = _hipify(tree, "--output-dir", out)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "--inplace" in done.stderr
    assert _snapshot(tree.parent) == before
    assert not (tree / "hip").exists()


@pytest.mark.slow
def test_a_file_into_its_own_directory_or_onto_itself_is_refused(tree):
    source = tree / "k.cu"
    for args in (["--output-dir", tree], ["-o", source]):
        done = _hipify(source, *args)
        assert done.returncode == 2, args
        assert source.read_text() == KERNEL


def test_inplace_still_works_and_keeps_backups(tree):
    done = _hipify(tree, "--inplace")
    assert done.returncode == 0, done.stderr
    assert "hipDeviceSynchronize" in (tree / "k.cu").read_text()
    assert (tree / "k.cu.prehip").read_text() == KERNEL


def test_a_directory_without_output_option_prints_a_plan_and_writes_nothing(tree):
    before = _snapshot(tree)
    done = _hipify(tree)
    assert done.returncode == 0, done.stderr
    assert _snapshot(tree) == before
    assert f"plan: {tree / 'k.cu'}: would change" in done.stderr
    assert "2 would change" in done.stderr and "nothing was written" in done.stderr
    assert " changed" not in done.stderr


def test_a_looping_symlink_on_the_command_line_is_one_line(tmp_path):
    loop = tmp_path / "loop.cu"
    loop.symlink_to(loop)
    done = _hipify(loop)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "loop" in done.stderr
    assert "internal error" not in done.stderr
