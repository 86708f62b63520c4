"""ONNX Runtime execution providers registered from Rust (the `ort` crate), in a Python package
with a Rust core (maturin, setuptools-rust).

The `ort` crate's `execution_providers` module names one type per ONNX Runtime provider
(`CUDAExecutionProvider`, `TensorRTExecutionProvider`, `ROCmExecutionProvider`,
`MIGraphXExecutionProvider`, ...), and a session tries the list given to
`with_execution_providers([...])` in order, falling back to the CPU when none registers (the
crate's docs, "Execution providers"). A module that registers CUDA or TensorRT and names neither
AMD provider runs on the CPU on an AMD GPU: the same verdict as Python's `ort-nvidia-provider`.
A module that names an AMD provider too chooses between them: info.

Only `.rs` files whose first bytes name a CUDA/TensorRT provider are read (a byte test in
`iter_files`).
"""

from __future__ import annotations

import re

from rocmkit.port.findings import Hit, hit
from rocmkit.port.rules import RuleSet

KIND = "rust"
SUFFIX = ".rs"
NVIDIA_BYTES = (b"CUDAExecutionProvider", b"TensorRTExecutionProvider")
_RULE = "ort-nvidia-provider"
# A use of the provider's type in code (its constructor, a path), not the `use` line that imports
# it and not a string literal's text (an `eprintln!("CUDAExecutionProvider is not available")`).
_NVIDIA = re.compile(r"\b(?:CUDA|TensorRT)ExecutionProvider\b")
_AMD = re.compile(r"\b(?:ROCm|MIGraphX)ExecutionProvider\b")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def _code(line: str) -> str:
    """A Rust line without its `//` comment and with string literals blanked."""
    line = _STRING.sub('""', line)
    return line.split("//", 1)[0]


def scan_rust(text: str, rules: RuleSet) -> list[Hit]:
    """Each line of code that constructs or registers NVIDIA's ONNX Runtime providers: warn, info
    where the module names an AMD provider too."""
    rule = rules.by_id.get(_RULE)
    if rule is None or not _NVIDIA.search(text):
        return []
    amd = _AMD.search(text) is not None
    found = []
    in_use = False  # inside a `use` declaration, which may span lines up to its `;`
    for number, line in enumerate(text.splitlines(), 1):
        code = _code(line)
        starts_use = re.match(r"\s*(?:pub(?:\([^)]*\))?\s+)?use\b", code) is not None
        if starts_use or in_use:
            in_use = ";" not in code
            continue
        if not _NVIDIA.search(code):
            continue
        if amd:
            why = "the module registers ROCm/MIGraphX too: the NVIDIA side of its choice"
            found.append(hit(number, 1, rule, f"{line.strip()}  ({why})", "info"))
        else:
            why = "no AMD provider in the module: on an AMD GPU the session runs on the CPU"
            found.append(hit(number, 1, rule, f"{line.strip()}  ({why})"))
    return found
