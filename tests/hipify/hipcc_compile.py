"""Compile a translated text with the installed hipcc for gfx90a, as the compile tests all do."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rocmkit.hipify.check import compile_one, find_hipcc


def compile_for_gfx90a(text: str, directory: Path) -> subprocess.CompletedProcess[str]:
    """`text` compiled by check.compile_one (the command `rocmkit hipify --check` runs); the
    test skips when hipcc is missing. Returns hipcc's whole answer, for the failure message."""
    hipcc = find_hipcc()
    if hipcc is None:
        pytest.skip("hipcc is not installed")
    source = directory / "translated.hip"
    source.write_text(text)
    answers: list[subprocess.CompletedProcess[str]] = []

    def run(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        answers.append(subprocess.run(command, env=env, capture_output=True, text=True))
        return answers[-1]

    compile_one(source, arch="gfx90a", hipcc=hipcc, runner=run)
    return answers[0]
