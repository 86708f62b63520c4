"""Issue 26, fifteenth round (c): nvidia-smi started through a lookup function, ONNX Runtime
device maps, run-time installs and non-Python launchers. Each mechanism with a case where it
applies and one where it must not, on small synthetic trees written for these tests."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan
from port_helpers import shown as _shown

# -- nvidia-smi started through a function that looks it up ---------------------------------------

_SMI_LOOKUP = """import os
import subprocess

SMI = os.environ.get("BURN_SMI", "nvidia-smi")


def find_smi():
    if os.path.exists("/usr/bin/nvidia-smi"):
        return "/usr/bin/nvidia-smi"
    return SMI


def query(what):
    executable = find_smi()
    result = subprocess.run(
        [executable, f"--query-{what}", "--format=csv"], capture_output=True, text=True
    )
    return result.stdout
"""


def test_nvidia_smi_found_at_the_launch_of_a_looked_up_path(tmp_path: Path) -> None:
    shown = _shown(_scan(tmp_path, {"burn/cli.py": _SMI_LOOKUP}))
    # the launch (line 15) is where an AMD machine loses the query, not the constant
    assert ("burn/cli.py", 15, "nvidia-smi", "warn") in shown


def test_a_lookup_function_that_returns_another_program_is_not_followed(tmp_path: Path) -> None:
    text = _SMI_LOOKUP.replace('return "/usr/bin/nvidia-smi"', 'return "/usr/bin/amd-smi"')
    text = text.replace('"BURN_SMI", "nvidia-smi"', '"BURN_SMI", "amd-smi"')
    shown = _shown(_scan(tmp_path, {"burn/cli.py": text}))
    assert not [s for s in shown if s[1] == 15]
