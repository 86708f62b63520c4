"""Compile a translated text with the installed hipcc for gfx90a, as the compile tests all do."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from rocmkit.hipify.check import find_hipcc


def compile_for_gfx90a(text: str, directory: Path) -> subprocess.CompletedProcess[str]:
    """`hipcc --offload-arch=gfx90a -x hip -c` on `text`; the test skips when hipcc is missing.

    HIP_PLATFORM=amd: with CUDA installed too, hipcc would otherwise hand the job to nvcc.
    """
    hipcc = find_hipcc()
    if hipcc is None:
        pytest.skip("hipcc is not installed")
    source = directory / "translated.hip"
    source.write_text(text)
    command = [str(hipcc), "--offload-arch=gfx90a", "-x", "hip", "-c", str(source)]
    command += ["-o", str(directory / "translated.o")]
    env = dict(os.environ, HIP_PLATFORM="amd")
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False)
