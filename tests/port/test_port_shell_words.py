"""A command line a Python string holds is read as the shell reads a simple command: leading
NAME=value words (and `env` before them) are assignments, so `"GENV_BYPASS=1 nvidia-smi ..."`
run with shell=True is the nvidia-smi call it is (found on a fresh part: genv)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmkit.port import PortConfig, scan_project


@pytest.mark.parametrize(
    ("command", "found"),
    [
        ("GENV_BYPASS=1 nvidia-smi --query-gpu=memory.total --format=csv", True),
        ("env CUDA_VISIBLE_DEVICES=0 nvidia-smi -L", True),
        ("A=1 B=two /usr/bin/nvidia-smi", True),
        ("nvidia-smi -L", True),
        ("A=1 run nvidia-smi -L", False),  # the command is `run`
        ("LEVEL=3 nvidia-smi is what reports it", False),  # prose: no option follows
    ],
)
def test_leading_assignments_do_not_hide_the_command(
    tmp_path: Path, command: str, found: bool
) -> None:
    source = tmp_path / "gpus.py"
    source.write_text(f"import subprocess\nsubprocess.check_output({command!r}, shell=True)\n")
    findings = scan_project(PortConfig(path=source)).findings
    assert any(f.rule_id == "nvidia-smi" and f.line == 2 for f in findings) == found
