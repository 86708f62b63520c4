"""`rocmkit port .` in a git checkout skips what git ignores (a virtual environment under any name,
build/ copies of the package, downloaded caches), as git decides it; `--no-gitignore` scans them."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from rocmkit.cli.main import main
from rocmkit.port import PortConfig, scan_project
from rocmkit.port.git_ignored import ignored_paths

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

HAZARD = "import pynvml\n"  # NVML sees no AMD GPU: a warn finding


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def _checkout(root: Path) -> Path:
    """A checkout whose hazards sit in tracked, untracked, ignored and force-added files."""
    repo = root / "repo"
    for rel in (
        "src/pkg/gpu.py",  # untracked, not ignored: scanned
        "build/lib/pkg/gpu.py",  # ignored folder: skipped
        "env311/lib/site/gpu.py",  # a virtual environment under its own name: skipped
        "out/run.log.py",  # ignored by a glob
        "out/keep.py",  # ... but un-ignored by a negation: scanned
        "vendor/forced.py",  # ignored, yet tracked (git add -f): scanned
        "src/generated/gen.py",  # ignored by the repository's root file from a subfolder scan
    ):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(HAZARD)
    (repo / ".gitignore").write_text(
        "build/\nenv311/\nout/*\n!out/keep.py\nvendor/\nsrc/generated/\n"
    )
    _git(repo, "init", "-q")
    _git(repo, "add", "-f", "vendor/forced.py")
    return repo


def _paths(root: Path, **options: object) -> set[str]:
    report = scan_project(PortConfig(path=root, **options))  # type: ignore[arg-type]
    return {f.path for f in report.findings}


def test_git_ignored_files_are_skipped_as_git_decides(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    assert _paths(repo) == {"src/pkg/gpu.py", "out/keep.py", "vendor/forced.py"}
    everything = _paths(repo, gitignore=False)
    assert {"build/lib/pkg/gpu.py", "env311/lib/site/gpu.py", "out/run.log.py"} <= everything
    # a subfolder: git's rules from the repository root, paths relative to the folder scanned
    assert _paths(repo / "src") == {"pkg/gpu.py"}


def test_a_folder_named_on_purpose_is_scanned_whole_even_if_ignored(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    assert _paths(repo / "build") == {"lib/pkg/gpu.py"}
    assert _paths(repo / "build" / "lib") == {"pkg/gpu.py"}  # deeper inside an ignored folder


def test_outside_a_checkout_or_without_git_nothing_is_skipped(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    (plain / "build").mkdir(parents=True)
    (plain / "build" / "gpu.py").write_text(HAZARD)
    (plain / ".gitignore").write_text("build/\n")  # a .gitignore alone is not a checkout
    assert ignored_paths(plain) is None and _paths(plain) == {"build/gpu.py"}

    def no_git(*args: object, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
        raise FileNotFoundError("git")

    assert ignored_paths(_checkout(tmp_path), run=no_git) is None


def test_the_report_says_what_was_skipped_and_how_to_scan_it(tmp_path: Path, capsys) -> None:
    repo = _checkout(tmp_path)
    assert main(["port", str(repo), "--fail-on", "never"]) == 0
    out = capsys.readouterr().out
    assert "git-ignored paths skipped (--no-gitignore)" in out
    main(["port", str(repo), "--json", "--fail-on", "never"])
    data = json.loads(capsys.readouterr().out)["data"]
    assert set(data["git_ignored"]) >= {"build/", "env311/", "out/run.log.py"}
    main(["port", str(repo), "--json", "--no-gitignore", "--fail-on", "never"])
    data = json.loads(capsys.readouterr().out)["data"]
    assert data["git_ignored"] == [] and any(
        f["path"] == "build/lib/pkg/gpu.py" for f in data["findings"]
    )
