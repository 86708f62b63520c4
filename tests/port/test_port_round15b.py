"""Issue 26, fifteenth round (b): package metadata as knowledge. An sdist's PKG-INFO Requires-Dist
read as a requirement source (each requirement reported once across the sources that repeat it),
and the table of CUDA-only PyPI packages derived from the packages' own published metadata. Each
mechanism with a case where it applies and one where it must not, on small synthetic trees."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from port_helpers import scan_files as _scan
from port_helpers import shown as _shown

# -- PKG-INFO Requires-Dist ------------------------------------------------------------------------

_PKG_INFO = """Metadata-Version: 2.4
Name: foldkit
Version: 1.0.0
Summary: a protein folding toolkit
Requires-Python: >=3.10
Provides-Extra: serve
Provides-Extra: mac
Requires-Dist: torch==2.7.1
Requires-Dist: numpy>=1.26
Requires-Dist: vllm==0.8.0; extra == "serve"
Requires-Dist: pycuda; extra == "mac" and sys_platform == "darwin"
Requires-Dist: eetq; sys_platform == "win32"

# foldkit

Requires-Dist: vllm==0.1.0
"""

_SETUP_READS_MISSING_FILE = """from setuptools import setup

with open("requirements.txt") as f:
    requirements = f.read().splitlines()

setup(name="foldkit", install_requires=requirements)
"""


def test_pkg_info_requires_dist_is_a_requirement_source(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"PKG-INFO": _PKG_INFO, "setup.py": _SETUP_READS_MISSING_FILE})
    shown = _shown(report)
    # what every install pulls: PyPI's torch 2.7.1 is the CUDA build
    assert ("PKG-INFO", 8, "torch-pypi-pin", "warn") in shown
    # an extra's requirement (`extra == "serve"`) is opt-in: vLLM from PyPI there is a warning
    assert ("PKG-INFO", 10, "vllm-pypi", "warn") in shown


def test_pkg_info_markers_and_description_are_read_as_pip_would(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"PKG-INFO": _PKG_INFO, "setup.py": _SETUP_READS_MISSING_FILE})
    rows = {(p, line): sev for p, line, _, sev in _shown(report)}
    # an extra for macOS only and a Windows-only requirement are never installed where ROCm runs
    assert rows.get(("PKG-INFO", 11), "info") == "info"
    assert rows.get(("PKG-INFO", 12), "info") == "info"
    # the description after the header is prose, not metadata
    assert ("PKG-INFO", 16) not in rows


def test_pkg_info_defers_to_the_source_a_maintainer_edits(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "PKG-INFO": _PKG_INFO,
            "pyproject.toml": '[project]\nname = "foldkit"\ndependencies = ["torch==2.7.1"]\n',
        },
    )
    rows = {(p, line, rule) for p, line, rule, _ in _shown(report)}
    assert ("pyproject.toml", 3, "torch-pypi-pin") in rows
    assert not any(p == "PKG-INFO" and rule == "torch-pypi-pin" for p, _, rule in rows)
    assert ("PKG-INFO", 10, "vllm-pypi") in rows  # pyproject names no vllm: PKG-INFO's


def test_requires_txt_comes_before_pkg_info_and_names_it(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "PKG-INFO": _PKG_INFO,
            "setup.py": _SETUP_READS_MISSING_FILE,
            "foldkit.egg-info/requires.txt": "torch==2.7.1\nnumpy>=1.26\n",
        },
    )
    found = [f for f in report.findings if f.rule_id == "torch-pypi-pin"]
    assert [(f.path, f.line) for f in found] == [("foldkit.egg-info/requires.txt", 1)]
    assert "PKG-INFO" in found[0].evidence
    # what requires.txt lacks stays PKG-INFO's
    assert ("PKG-INFO", 10, "vllm-pypi", "warn") in _shown(report)


def test_the_egg_info_copy_is_read_when_the_sdist_has_no_top_level_pkg_info(
    tmp_path: Path,
) -> None:
    report = _scan(
        tmp_path,
        {"setup.py": _SETUP_READS_MISSING_FILE, "src/foldkit.egg-info/PKG-INFO": _PKG_INFO},
    )
    assert ("src/foldkit.egg-info/PKG-INFO", 8, "torch-pypi-pin", "warn") in _shown(report)


def test_a_pkg_info_without_requirements_or_with_harmless_ones_is_quiet(tmp_path: Path) -> None:
    quiet = "Metadata-Version: 2.1\nName: foldkit\nRequires-Dist: numpy\nRequires-Dist: torch>=2\n"
    report = _scan(tmp_path, {"PKG-INFO": quiet}, show_info=False)
    assert not report.findings


def test_a_fifo_named_pkg_info_is_not_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "PKG-INFO")
    done: list[object] = []
    files = {"foldkit.egg-info/requires.txt": "torch==2.7.1\n", "setup.py": "setup()\n"}
    worker = threading.Thread(target=lambda: done.append(_scan(tmp_path, files)), daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert done, "the scan waited on a FIFO"
